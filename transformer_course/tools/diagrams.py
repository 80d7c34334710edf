"""Drawn diagrams of the book: shapes and steps a plot cannot show (what flows where, in which shape).

Each function draws one diagram with matplotlib and returns its figure; the chapter shows it and
gives its alt text. The diagrams are drawn, not computed: they take no model and train nothing.
"""

from __future__ import annotations

# -- chapters 01–05 ------------------------------------------------------------------------------

# The colours of the architecture map (tools/figures.py), so that the diagrams read as its close-ups.
_FILL, _EDGE = "#eef2f6", "#8796a8"
_HI_FILL, _HI_EDGE = "#ffd591", "#c46a00"
_TEXT, _SHAPE = "#222222", "#4a4a4a"
_STREAM = "#2f6db5"  # the residual stream
_LABEL = {"boxstyle": "round,pad=0.2", "facecolor": "white", "alpha": 0.85, "edgecolor": "none"}  # text on colour
_HEAD_COLOURS = ("#8ecae6", "#ffb703", "#90be6d", "#f28482", "#b8a1e3", "#f6bd60", "#84a59d", "#e5989b")


def _closed(fig):
    """``fig`` closed: as a cell's last value a notebook shows it once (as the architecture map)."""
    import matplotlib.pyplot as plt

    plt.close(fig)
    return fig


def _box(ax, x: float, y: float, w: float, h: float, text: str, note: str = "", highlight: bool = False,
         fontsize: float = 10) -> None:  # fmt: skip
    """A rounded box centred at (x, y), its text and, below it in small type, a note."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02,rounding_size=0.12",
                                facecolor=_HI_FILL if highlight else _FILL, edgecolor=_HI_EDGE if highlight else _EDGE,
                                linewidth=1.6 if highlight else 1.1, zorder=2))  # fmt: skip
    if note:
        ax.text(x, y + h * 0.17, text, ha="center", va="center", fontsize=fontsize, color=_TEXT, zorder=3)
        ax.text(x, y - h * 0.24, note, ha="center", va="center", fontsize=fontsize - 1.5, color=_SHAPE, zorder=3)
    else:
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, color=_TEXT, zorder=3)


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], label: str = "", color: str = "#333333",
           lw: float = 1.3, side: str = "right", connection: str = "arc3") -> None:  # fmt: skip
    """An arrow from ``start`` to ``end``, with a label (a shape, an operation) beside its middle."""
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color=color, lw=lw,
                                 connectionstyle=connection, shrinkA=0, shrinkB=0, zorder=1))  # fmt: skip
    if label:
        x, y = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2
        offset = 0.12 if side == "right" else -0.12
        ax.text(x + offset, y, label, ha="left" if side == "right" else "right", va="center", fontsize=8.5,
                color=_SHAPE, family="monospace", zorder=3)  # fmt: skip


def _feature_bar(ax, x: float, y: float, w: float, h: float, n_heads: int, label: str) -> None:
    """A (…, H·Dk) tensor seen from its feature axis: H coloured blocks side by side, one per head."""
    from matplotlib.patches import Rectangle

    for i in range(n_heads):
        ax.add_patch(Rectangle((x - w / 2 + i * w / n_heads, y - h / 2), w / n_heads, h, zorder=2,
                               facecolor=_HEAD_COLOURS[i % len(_HEAD_COLOURS)], edgecolor="white", linewidth=1.2))  # fmt: skip
    ax.text(x, y, label, ha="center", va="center", fontsize=9, family="monospace", color=_TEXT, zorder=3, bbox=_LABEL)


def _head_cards(ax, x: float, y: float, w: float, h: float, n_heads: int, label: str) -> None:
    """A (B, H, …) tensor as H cards stacked back to front, head 1 in front, in the bars' colours."""
    from matplotlib.patches import Rectangle

    step = 0.16
    for i in reversed(range(n_heads)):
        ax.add_patch(Rectangle((x - w / 2 + i * step, y - h / 2 + i * step), w, h, zorder=2 + (n_heads - i) * 0.01,
                               facecolor=_HEAD_COLOURS[i % len(_HEAD_COLOURS)], edgecolor="white", linewidth=1.2))  # fmt: skip
    ax.text(x, y, label, ha="center", va="center", fontsize=9, family="monospace", color=_TEXT, zorder=3, bbox=_LABEL)


def multihead_shapes(n_heads: int = 4):
    """Multi-head attention (§3.2.2) drawn with the shape of every tensor, bottom to top (chapter 04).

    The queries come from a (B, T, D) input, the keys and values from a (B, S, D) one (the same tensor
    in self-attention, the encoder's output in cross-attention). Each of W^Q, W^K, W^V is one linear
    layer for all heads; ``split_heads`` cuts its H·Dk output features into ``n_heads`` blocks (the
    colours) and moves the head axis forward; attention runs on every head at once; ``merge_heads``
    puts the blocks side by side again, and W^O mixes them back to D features.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10.5, 9.6))
    ax.set_xlim(0, 12)
    ax.set_ylim(-0.2, 13.6)
    ax.set_axis_off()
    columns = {"Q": 2.0, "K": 6.0, "V": 10.0}
    length = {"Q": "T", "K": "S", "V": "S"}
    size = {"Q": "Dk", "K": "Dk", "V": "Dv"}

    # the inputs
    _box(ax, 2.0, 0.45, 3.4, 0.8, "input of the queries", "(B, T, D)")
    _box(ax, 8.0, 0.45, 5.6, 0.8, "input of the keys and values", "(B, S, D): x itself, or the encoder's output")
    for name, x in columns.items():
        start = (2.0, 0.85) if name == "Q" else (x, 0.85)
        _arrow(ax, start, (x, 1.85))
        # one linear layer for all heads
        _box(ax, x, 2.25, 2.6, 0.8, f"$W^{name}$  (one nn.Linear)", f"D → H·{size[name]}", highlight=True)
        _arrow(ax, (x, 2.65), (x, 3.35), f"(B, {length[name]}, H·{size[name]})")
        _feature_bar(ax, x, 3.75, 3.0, 0.6, n_heads, f"{name}: H blocks of {size[name]}")
        _arrow(ax, (x, 4.05), (x, 5.0), "split_heads")
        _head_cards(ax, x - 0.25, 5.45, 2.6, 0.7, n_heads, f"(B, H, {length[name]}, {size[name]})")
    ax.text(0.25, 4.55, "view (B, ·, H, Dk)\nthen transpose(1, 2)", fontsize=8, color=_SHAPE, va="center")

    # attention, every head at once
    top = 5.45 + 0.35 + (n_heads - 1) * 0.16  # the top of the back card
    for name, end in (("Q", 4.6), ("K", 6.0), ("V", 7.4)):
        _arrow(ax, (columns[name], top + 0.05), (end, 6.95))
    _box(ax, 6.0, 7.45, 6.4, 1.0, "scaled dot-product attention (chapter 03), every head at once",
         "softmax(Q Kᵀ / √Dk) V        weights (B, H, T, S)", highlight=True)  # fmt: skip
    _arrow(ax, (6.0, 7.95), (6.0, 8.55), "(B, H, T, Dv): one result per head")
    _head_cards(ax, 5.75, 8.95, 3.2, 0.7, n_heads, "heads (B, H, T, Dv)")
    _arrow(ax, (6.0, 8.95 + 0.35 + (n_heads - 1) * 0.16 + 0.05), (6.0, 10.2))
    ax.text(8.3, 9.95, "merge_heads:\ntranspose(1, 2), reshape", fontsize=8.5, color=_SHAPE, family="monospace",
            va="center")  # fmt: skip
    _feature_bar(ax, 6.0, 10.5, 4.4, 0.6, n_heads, "(B, T, H·Dv) = Concat(head_1, …, head_H)")
    _arrow(ax, (6.0, 10.8), (6.0, 11.4))
    _box(ax, 6.0, 11.8, 3.6, 0.8, "$W^O$  (one nn.Linear)", "H·Dv → D: mixes the heads", highlight=True)
    _arrow(ax, (6.0, 12.2), (6.0, 12.95), "(B, T, D): the shape that came in")
    ax.set_title(f"Multi-head attention (§3.2.2), H = {n_heads} heads: the shape of every tensor, bottom to top",
                 fontsize=11)  # fmt: skip
    fig.tight_layout()
    return _closed(fig)


def post_ln_pre_ln():
    """One sub-layer (attention or feed-forward) of an encoder layer, post-LN (the paper) next to pre-LN
    (chapter 05). The blue line is the residual stream: in post-LN it passes through every LayerNorm;
    in pre-LN it never does (only the copy handed to the sub-layer is normalised), and one final
    LayerNorm follows the last layer."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10.5, 6.4))
    for ax, pre in zip(axes, (False, True), strict=True):
        ax.set_xlim(0, 6)
        ax.set_ylim(-0.3, 9.6)
        ax.set_axis_off()
        x, side = 2.4, 4.6  # the sub-layer's column; the shortcut's
        ax.text(x, 0.0, "$x_l$", ha="center", va="center", fontsize=12)
        if pre:
            _arrow(ax, (x, 0.3), (x, 1.2))
            _box(ax, x, 1.65, 2.4, 0.8, "LayerNorm", "a normalised copy", highlight=True)
            _arrow(ax, (x, 2.05), (x, 2.9))
        else:
            _arrow(ax, (x, 0.3), (x, 2.9))
        _box(ax, x, 3.4, 2.8, 1.0, "sub-layer", "attention or feed-forward")
        _arrow(ax, (x, 3.9), (x, 4.6))
        _box(ax, x, 5.0, 2.0, 0.7, "dropout")
        _arrow(ax, (x, 5.35), (x, 6.05))
        ax.plot(x, 6.35, marker="o", markersize=22, markerfacecolor="white", markeredgecolor=_STREAM, markeredgewidth=2,
                zorder=2)  # fmt: skip
        ax.text(x, 6.35, "+", ha="center", va="center", fontsize=15, color=_STREAM, zorder=3)
        # the shortcut: x_l itself, added to the sub-layer's output
        ax.plot([x, side, side], [0.55, 0.55, 6.35], color=_STREAM, lw=2.6, zorder=1, solid_capstyle="round")
        _arrow(ax, (side, 6.35), (x + 0.3, 6.35), color=_STREAM, lw=2.6)
        ax.text(side + 0.15, 3.4, "residual\nstream", color=_STREAM, fontsize=9.5, va="center")
        if pre:
            _arrow(ax, (x, 6.65), (x, 8.85), color=_STREAM, lw=2.6)
            ax.text(x + 0.15, 7.75, "never normalised: the sum\ngoes straight on (one final\nLayerNorm after the last layer)",
                    fontsize=8.5, color=_STREAM, va="center")  # fmt: skip
            formula = r"$x_{l+1} = x_l + \mathrm{Dropout}(\mathrm{Sublayer}(\mathrm{LN}(x_l)))$"
            title = "pre-LN (most models since):\nthe norm sits on the branch, before the sub-layer"
        else:
            _arrow(ax, (x, 6.65), (x, 7.25), color=_STREAM, lw=2.6)
            _box(ax, x, 7.65, 2.4, 0.8, "LayerNorm", "normalises the sum", highlight=True)
            _arrow(ax, (x, 8.05), (x, 8.85), color=_STREAM, lw=2.6)
            ax.text(x + 0.15, 8.45, "the stream, normalised", fontsize=8.5, color=_STREAM, va="center")
            formula = r"$x_{l+1} = \mathrm{LN}(x_l + \mathrm{Dropout}(\mathrm{Sublayer}(x_l)))$"
            title = "post-LN (the paper, §3.1):\nthe norm sits on the stream, after the sum"
        ax.text(x, 9.15, "$x_{l+1}$", ha="center", va="center", fontsize=12)
        ax.set_title(f"{title}\n{formula}", fontsize=10.5)
    fig.suptitle("Where the LayerNorm sits relative to the residual sum (one sub-layer; each layer has two)",
                 fontsize=11)  # fmt: skip
    fig.tight_layout()
    return _closed(fig)


# -- chapters 06, 07, 09 -------------------------------------------------------------------------


# -- chapters 08, 10, 11 -------------------------------------------------------------------------
