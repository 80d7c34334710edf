"""Drawn diagrams of the book: shapes and steps a plot cannot show (what flows where, in which shape).

Each function draws one diagram with matplotlib and returns its figure; the chapter shows it and
gives its alt text. The diagrams are drawn, not computed: they take no model and train nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

# -- chapters 01–05 ------------------------------------------------------------------------------

# The colours of the architecture map (transformer_course_tools/notebook/figures.py), so that the diagrams read as its close-ups.
_FILL, _EDGE = "#eef2f6", "#8796a8"
_HI_FILL, _HI_EDGE = "#ffd591", "#c46a00"
_TEXT, _SHAPE = "#222222", "#4a4a4a"
_STREAM = "#2f6db5"  # the residual stream
_LABEL = {"boxstyle": "round,pad=0.2", "facecolor": "white", "alpha": 0.85, "edgecolor": "none"}  # text on colour
_Q, _K, _V = "#4c9a5b", "#d9822b", "#8e63b5"  # a query, a key, a value: the same colours in every diagram
_OLD, _MEMORY, _INK = "#f3d9bf", "#c9dcef", "#333333"
_HEAD_COLOURS = ("#8ecae6", "#ffb703", "#90be6d", "#f28482", "#b8a1e3", "#f6bd60", "#84a59d", "#e5989b")


def _closed(fig):
    """``fig`` closed: as a cell's last value a notebook shows it once (as the architecture map)."""
    import matplotlib.pyplot as plt

    plt.close(fig)
    return fig


def _cell(ax, x: float, y: float, w: float, h: float, text: str = "", face: str = "white", edge: str = _INK,
          lw: float = 1.0, size: float = 9, corners: str = "round,pad=0.02,rounding_size=0.1", **text_kwargs) -> None:  # fmt: skip
    """A box with its lower left corner at (x, y), and a text at its centre."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle=corners, facecolor=face, edgecolor=edge, lw=lw, zorder=2))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, zorder=3, **text_kwargs)


def _box(ax, x: float, y: float, w: float, h: float, text: str, note: str = "", highlight: bool = False,
         fontsize: float = 10) -> None:  # fmt: skip
    """A box of the map's colours centred at (x, y), its text and, below it in small type, a note."""
    _cell(ax, x - w / 2, y - h / 2, w, h, face=_HI_FILL if highlight else _FILL, edge=_HI_EDGE if highlight else _EDGE,
          lw=1.6 if highlight else 1.1, corners="round,pad=0.02,rounding_size=0.12")  # fmt: skip
    if note:
        ax.text(x, y + h * 0.17, text, ha="center", va="center", fontsize=fontsize, color=_TEXT, zorder=3)
        ax.text(x, y - h * 0.24, note, ha="center", va="center", fontsize=fontsize - 1.5, color=_SHAPE, zorder=3)
    else:
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, color=_TEXT, zorder=3)


def _arrow(ax, start: tuple[float, float], end: tuple[float, float], label: str = "", color: str = _INK,
           lw: float = 1.3, side: str = "right", style: str = "-|>", size: float = 12, **arrow_kwargs) -> None:  # fmt: skip
    """An arrow (or, with ``style="-"``, a line) from ``start`` to ``end``, with a label (a shape, an
    operation) beside its middle; ``arrow_kwargs`` go to matplotlib (``connectionstyle``, ``ls`` …)."""
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=size, color=color, lw=lw,
                                 **{"shrinkA": 0, "shrinkB": 0, "zorder": 1, **arrow_kwargs}))  # fmt: skip
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
    _feature_bar(ax, 6.0, 10.5, 4.4, 0.6, n_heads, "(B, T, H·Dv) = Concat(head_0, …, head_H−1)")
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


# -- chapters 06, 08, 12 -------------------------------------------------------------------------


def teacher_forcing_diagram(pieces: Sequence[str] = ("ein", "und", "zwanzig"), bos: str = "<bos>", eos: str = "<eos>"):
    """Chapter 08: teacher forcing. The target ``<bos> y1 … yn <eos>`` cut into the decoder input
    (``<bos> y1 … yn``, bottom) and the labels (``y1 … yn <eos>``, top), one column per position:
    each label is the next column's input. On the right, the causal mask over the input positions
    (chapter 06): the row of position t is open for positions 0 … t only."""
    import matplotlib.pyplot as plt

    inputs, labels = [bos, *pieces], [*pieces, eos]
    n = len(inputs)
    fig, (ax, ax_mask) = plt.subplots(1, 2, figsize=(12, 3.9), gridspec_kw={"width_ratios": [2.6, 1]})
    ax.set(xlim=(-2.1, n - 0.45), ylim=(-0.5, 3.5), aspect="equal")
    ax.axis("off")

    def token(x: float, y: float, text: str, fill: str, edge: str) -> None:
        _cell(ax, x - 0.45, y - 0.25, 0.9, 0.5, text, face=fill, edge=edge, lw=1.2, size=9.5, corners="square,pad=0")

    _cell(ax, -0.5, 1.1, n, 1.0, face=_FILL, edge=_EDGE, lw=1.2, corners="square,pad=0")
    ax.text((n - 1) / 2, 1.72, "decoder", ha="center", va="center", fontsize=11, zorder=4)
    ax.text((n - 1) / 2, 1.38, "masked self-attention · cross-attention · FFN", ha="center", va="center",
            fontsize=8.5, color="#5a5a5a", zorder=4)  # fmt: skip
    for t in range(n):
        token(t, 0.3, inputs[t], "#dbe9f6", "#3a78b5")
        token(t, 2.9, labels[t], "#ffe7c2", "#c46a00")
        for y0, y1 in ((0.55, 1.1), (2.1, 2.65)):
            _arrow(ax, (t, y0), (t, y1), color="#5a5a5a", lw=1.0, size=10)
        ax.text(t, -0.15, f"position {t}", ha="center", va="top", fontsize=8, color="#5a5a5a")
        if t + 1 < n:  # the label of position t is the input of position t + 1 (drawn behind the decoder)
            _arrow(ax, (t + 0.2, 2.65), (t + 0.8, 0.55), color=_HI_EDGE, lw=1.0, size=9, ls=(0, (3, 2)))
    ax.text(-0.6, 0.3, "decoder input", ha="right", va="center", fontsize=10, color="#3a78b5")
    ax.text(-0.6, 2.9, "labels", ha="right", va="center", fontsize=10, color="#c46a00")
    ax.text((n - 1) / 2, 3.4, "dashed: the same token, one position later", ha="center", va="center", fontsize=8.5,
            color="#c46a00")  # fmt: skip
    ax.set_title("The target shifted by one: each position is asked for the next token", fontsize=11)

    mask = [[1.0 if s <= t else 0.0 for s in range(n)] for t in range(n)]
    ax_mask.imshow(mask, cmap="Blues", vmin=-0.2, vmax=1.0)
    ax_mask.set_xticks(range(n), inputs, rotation=45, fontsize=9)
    ax_mask.set_yticks(range(n), inputs, fontsize=9)
    ax_mask.set(xlabel="input position it may read", ylabel="input position reading")
    ax_mask.set_title("Causal mask: position t reads\ninputs 0 … t, never its own label", fontsize=11)
    fig.tight_layout()
    plt.close(fig)
    return fig


# -- chapters 09, 13, 15 -------------------------------------------------------------------------


def kv_cache_step(t: int = 5, source_length: int = 6):
    """One decoding step of one decoder layer with a key/value cache (chapter 09, section 5).

    Top, the masked self-attention: the newest token, the ``t``-th, at position ``t - 1`` (positions
    count from 0), is projected into q, k and v; k and v are appended to the layer's cache, which
    then holds ``t`` keys and values; q scores every cached key, and the weights average the cached
    values. Bottom, the cross-attention: the keys and values of the encoder's memory
    (``source_length`` positions) were projected at the first step, and every later step only reads
    them. Returns the figure (closed: a notebook shows it once).
    """
    import matplotlib.pyplot as plt

    if t < 2 or source_length < 1:
        raise ValueError(f"t must be at least 2 and source_length at least 1, got t={t}, source_length={source_length}")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 10.5), gridspec_kw={"height_ratios": [1.1, 1]})
    cell, label, box = 0.9, 10, 11  # the width of one cached position; font sizes
    x0 = 7.6  # where the cache's first position is drawn
    x_end = x0 + t * cell
    width = x_end + 3.6

    # the masked self-attention: project the new token, append k and v, attend over every cached key
    new = t - 1  # the newest token's position (positions count from 0)
    _cell(top, 0.1, 4.2, 2.7, 1.6, f"newest token\nembedded at\nposition {new}\n(B, 1, D)", face="#eef2f6", size=label)
    rows = {"q": (8.2, _Q), "k": (5.0, _K), "v": (1.8, _V)}
    for name, (y, color) in rows.items():
        _arrow(top, (2.8, 5.0), (3.6, y + 0.4))
        _cell(top, 3.6, y, 1.3, 0.8, f"$W^{name.upper()}$", size=box)
        _arrow(top, (4.9, y + 0.4), (5.6, y + 0.4))
        _cell(top, 5.6, y, 0.8, 0.8, f"${name}_{{{new}}}$", face=color, edge=color, size=box, color="white")
    x_new = x0 + new * cell  # the position appended at this step
    for name, y, face, letter in (("keys", 5.0, _K, "k"), ("values", 1.8, _V, "v")):
        for j in range(t):
            now = j == new
            _cell(top, x0 + j * cell, y, cell - 0.1, 0.8, f"${letter}_{{{j}}}$", face=face if now else _OLD,
                 edge=face, lw=2.0 if now else 0.8, size=label, color="white" if now else _INK)  # fmt: skip
        _arrow(top, (6.0, y), (x_new + 0.4, y), color=face, lw=1.6, connectionstyle="arc3,rad=0.22")
        top.text(x0 - 0.2, y - 0.75, f"cached {name} (B, H, {t}, $d_k$):\n{t - 1} from earlier steps, 1 appended",
                 fontsize=label, va="top")  # fmt: skip
    for j in range(t):  # the new query scores every key, its own included
        _arrow(top, (6.4, 8.6), (x0 + j * cell + 0.4, 5.85), color=_Q, lw=0.9)
    top.text(6.6, 9.15, f"$q_{{{new}}}$ scores all {t} cached keys:\nnothing later exists for the mask to hide",
             fontsize=label, va="bottom", color=_Q)  # fmt: skip
    _arrow(top, (x_end + 0.3, 5.4), (x_end + 0.3, 2.65), color=_INK)
    top.text(x_end + 0.45, 4.0, f"softmax:\n{t} weights\naverage\nthe values", fontsize=label, va="center")
    _arrow(top, (x_end, 2.2), (x_end + 1.7, 2.2))
    _cell(top, x_end + 1.7, 1.6, 1.8, 1.2, "output\n(B, 1, D)", face="#eef2f6", size=label)
    top.set_title(f"Masked self-attention: the cache grows by one position per step (here to {t} positions)",
                  fontsize=11)  # fmt: skip
    top.set_xlim(0, width)
    top.set_ylim(-0.4, 10.6)

    # the cross-attention: the memory's keys and values, projected once
    ox = 2.0  # the panel's drawing starts here
    x_last = ox + 0.4 + source_length * cell
    pipe = x_last + 0.9  # the line from W^K, W^V down to the two rows
    _cell(bottom, ox, 8.6, 3.4, 1.2, f"encoder memory\n(B, S, D), S = {source_length}", face=_MEMORY, size=label)
    _cell(bottom, ox + 4.0, 8.75, 3.8, 0.9, "$W^K$, $W^V$: at step 1 only", size=label)
    _arrow(bottom, (ox + 3.4, 9.2), (ox + 4.0, 9.2))
    bottom.plot([pipe, pipe], [8.75, 2.2], color="#6f93b8", lw=1.4, zorder=1)
    for name, y, letter in (("keys", 5.0, "k"), ("values", 1.8, "v")):
        for j in range(source_length):
            _cell(bottom, ox + 0.4 + j * cell, y, cell - 0.1, 0.8, f"${letter}^{{mem}}_{{{j}}}$", face=_MEMORY,
                 edge="#6f93b8", size=label)  # fmt: skip
        _arrow(bottom, (pipe, y + 0.4), (x_last - 0.05, y + 0.4), color="#6f93b8", lw=1.4)
        bottom.text(ox + 0.4, y - 0.15, f"memory {name} (B, H, S, $d_k$): read, never changed", fontsize=label,
                    va="top")  # fmt: skip
    _cell(bottom, ox, 7.0, 1.2, 0.8, f"$q'_{{{new}}}$", face=_Q, edge=_Q, size=box, color="white")
    bottom.text(ox + 1.4, 7.4, "the new position's query (from\nthe self-attention's output)", fontsize=label,
                va="center")  # fmt: skip
    for j in range(source_length):
        _arrow(bottom, (ox + 0.6, 7.0), (ox + 0.4 + j * cell + 0.4, 5.85), color=_Q, lw=0.9)
    _arrow(bottom, (x_last - 0.9, 4.3), (x_last - 0.9, 2.65), color=_INK)
    bottom.text(x_last - 0.75, 3.45, "softmax weights average the values", fontsize=label, va="center")
    bottom.set_title("Cross-attention: the memory's keys and values, projected once", fontsize=11)
    bottom.set_xlim(0, width)
    bottom.set_ylim(0.4, 10.2)
    for ax in (top, bottom):
        ax.set_axis_off()
    fig.suptitle("One decoding step with a KV cache, in one decoder layer\n(every layer keeps its own cache)",
                 fontsize=12)  # fmt: skip
    fig.tight_layout()
    plt.close(fig)
    return fig


def grouped_query_heads(n_heads: int = 8, kv_heads: tuple[int, ...] = (8, 2, 1)):
    """Which key/value head each query head reads (chapter 13, section 4): one panel per number of
    key/value heads H_kv, from multi-head attention (H_kv = H) through grouped-query attention to
    multi-query attention (H_kv = 1). Each group of H / H_kv query heads reads one key/value head,
    and the KV cache holds H_kv heads instead of H. Returns the figure (closed)."""
    import matplotlib.pyplot as plt

    if any(n_heads % h for h in kv_heads) or not kv_heads:
        raise ValueError(f"every number of key/value heads must divide n_heads={n_heads}, got {kv_heads}")
    fig, axes = plt.subplots(1, len(kv_heads), figsize=(3.5 * len(kv_heads), 3.9))
    axes = [axes] if len(kv_heads) == 1 else list(axes)
    colours = plt.get_cmap("tab10")
    for ax, h_kv in zip(axes, kv_heads, strict=True):
        group = n_heads // h_kv
        for i in range(n_heads):  # query heads, coloured by the key/value head they read
            _cell(ax, i * 1.0, 3.0, 0.8, 0.8, f"$q_{{{i + 1}}}$", face=colours(i // group), edge=colours(i // group),
                 size=10, color="white")  # fmt: skip
        for j in range(h_kv):  # each key/value head under the middle of its group
            centre = (j * group + (group - 1) / 2) * 1.0 + 0.4
            _cell(ax, centre - 0.4, 0.2, 0.8, 1.1, f"$k_{{{j + 1}}}$\n$v_{{{j + 1}}}$", face="white",
                 edge=colours(j), lw=2.0, size=10)  # fmt: skip
            for i in range(j * group, (j + 1) * group):
                _arrow(ax, (i * 1.0 + 0.4, 3.0), (centre, 1.3), color=colours(j), lw=1.0, style="-")
        kind = {n_heads: "multi-head", 1: "multi-query"}.get(h_kv, "grouped-query")
        ax.set_title(f"{kind}: $H$ = {n_heads}, $H_{{kv}}$ = {h_kv}", fontsize=11)
        share = "one per query head" if h_kv == n_heads else f"each read by {group} query heads"
        ax.text(n_heads / 2 - 0.1, -0.2, f"cache: {h_kv} key/value head{'s' if h_kv > 1 else ''}\n({share})",
                ha="center", va="top", fontsize=10)  # fmt: skip
        ax.text(-0.3, 3.4, "query\nheads", ha="right", va="center", fontsize=10)
        ax.text(-0.3, 0.75, "key/value\nheads", ha="right", va="center", fontsize=10)
        ax.set_xlim(-2.0, n_heads)
        ax.set_ylim(-1.5, 4.1)
        ax.set_axis_off()
    fig.suptitle("Grouped-query attention: each group of $H / H_{kv}$ query heads reads one key/value head")
    fig.tight_layout()
    plt.close(fig)
    return fig


def beam_candidates(scores, log_probs, finished, carried_id: int, floor: float = -20.0) -> list[tuple]:
    """Every extension one step of beam search scores for one sentence, as :func:`beam_tree` draws it:
    (parent slot, token id, log P of the whole hypothesis). A finished hypothesis is carried over as
    one candidate with the token ``carried_id``; an empty slot (score ``-inf``) has none; tokens whose
    log-probability is below ``floor`` are left out (nothing the tree could show).

    Shape:
        scores (k,), log_probs (k, V), finished (k,) → a list of (int, int, float)
    """
    candidates = []
    for slot in range(len(scores)):
        if finished[slot]:
            candidates.append((slot, carried_id, scores[slot].item()))
        elif scores[slot] > float("-inf"):
            candidates += [(slot, v, (scores[slot] + log_probs[slot, v]).item())
                           for v in range(log_probs.shape[-1]) if log_probs[slot, v] > floor]  # fmt: skip
    return candidates


def beam_tree(history: list[dict], tokens: list[str], carried: str = "<pad>", ax=None):
    """A beam search drawn as a tree (chapter 09, section 3).

    ``history`` has one record per step: ``"candidates"``, a list of (parent slot, token id, log P)
    for every extension the search scored, and ``"survivors"``, the (parent slot, token id) pairs
    kept in the beam, best first. Each column is a step; the candidates of one parent sit together,
    best first, so that few lines cross; a filled dot is kept in the beam, a hollow one pruned.
    Labels give the token and the summed log-probability; a finished hypothesis carried into the
    next step unchanged (its token is ``carried``) is labelled "finished". Returns the figure
    (closed when the function made it).
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(11, 5.2))
    fig = ax.figure
    kept_colour, pruned_colour = "tab:blue", "0.6"
    slot_y = {0: 0.0}  # beam slot → the height at which its hypothesis is drawn
    tallest = max(len(record["candidates"]) for record in history)
    ax.scatter([0], [0], s=60, color="black", zorder=3)
    ax.annotate("<bos>", (0, 0), textcoords="offset points", xytext=(-8, 9), fontsize=9, ha="center")
    label_box = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.9}
    for step, record in enumerate(history, start=1):
        parents = sorted({c[0] for c in record["candidates"]}, key=lambda s: -slot_y[s])  # top parent first
        ordered = [c for s in parents for c in sorted((c for c in record["candidates"] if c[0] == s),
                                                      key=lambda c: -c[2])]  # fmt: skip
        new_slot_y = {}
        for i, (slot, token, logp) in enumerate(ordered):
            x, y = step, (len(ordered) - 1) / 2 - i
            kept = (slot, token) in record["survivors"]
            colour = kept_colour if kept else pruned_colour
            ax.plot([step - 1, x], [slot_y[slot], y], color=colour, lw=2.0 if kept else 0.8, ls="-" if kept else "--",
                    zorder=1 if not kept else 2)  # fmt: skip
            ax.scatter([x], [y], s=50, zorder=3, color=colour if kept else "white", edgecolors=colour)
            label = "finished" if tokens[token] == carried else tokens[token]
            ax.annotate(f"{label}  {logp:.2f}", (x, y), textcoords="offset points", xytext=(7, 0),
                        va="center", fontsize=8.5 if kept else 7.5, color="black" if kept else "0.45",
                        weight="bold" if kept else "normal", bbox=label_box, zorder=4)  # fmt: skip
            if kept:
                new_slot_y[record["survivors"].index((slot, token))] = y
        slot_y = new_slot_y
    ax.legend(handles=[Line2D([], [], color=kept_colour, marker="o", lw=2, label="kept in the beam"),
                       Line2D([], [], color=pruned_colour, marker="o", markerfacecolor="white", ls="--",
                              lw=0.8, label="pruned")],
              loc="lower left", fontsize=8)  # fmt: skip
    ax.set_xlabel("step (label: the piece and log P of the whole hypothesis)")
    ax.set_yticks([])
    ax.set_xticks(range(len(history) + 1))
    ax.set_xlim(-0.3, len(history) + 0.95)
    ax.set_ylim(-(tallest - 1) / 2 - 0.7, (tallest - 1) / 2 + 0.5)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    if own:
        fig.tight_layout()
        plt.close(fig)
    return fig


# -- chapter 15 ----------------------------------------------------------------------------------


def rope_pair_permutation(order: Sequence[int]):
    """Chapter 15, section 3: the reordering of one head's rows of W^Q (and W^K) that turns the
    rotary "halves" layout (pairs (i, i + d/2), transformers' Llama) into ours (pairs (2i, 2i+1)).
    ``order[j]`` is the halves row that becomes our row ``j`` (``rope_halves_to_interleaved`` of the
    row numbers). Left: the permutation as a grid; right: the pair each feature belongs to, in both
    layouts. Returns the figure (closed)."""
    import matplotlib.pyplot as plt

    d_head = len(order)
    if d_head % 2 or sorted(order) != list(range(d_head)):
        raise ValueError(f"order must be a permutation of an even number of rows, got {list(order)}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.4), gridspec_kw={"width_ratios": [1, 1.6]})
    moves = [[1.0 if order[j] == i else 0.0 for i in range(d_head)] for j in range(d_head)]
    left.imshow(moves, cmap="Greys")
    left.set(xlabel="row of W^Q in the halves layout", ylabel="row of ours (pairs 2i, 2i+1)",
             xticks=range(d_head), yticks=range(d_head), title=f"the permutation, one head (d = {d_head})")  # fmt: skip
    pair_halves = [i % (d_head // 2) for i in range(d_head)]  # feature i and i + d/2 form pair i
    pair_ours = [j // 2 for j in range(d_head)]  # features 2i and 2i+1 form pair i
    colours = plt.get_cmap("tab10")
    for y, (label, pairs) in enumerate((("ours: (2i, 2i+1)", pair_ours), ("halves: (i, i + d/2)", pair_halves))):
        for j, p in enumerate(pairs):
            right.add_patch(plt.Rectangle((j, y), 0.9, 0.8, color=colours(p)))
            right.text(j + 0.45, y + 0.4, f"{p}", ha="center", va="center", color="white")
        right.text(-0.2, y + 0.4, label, ha="right", va="center")
    right.set(xlim=(-4.2, d_head), ylim=(-0.2, 2), xlabel="feature of one head", yticks=[],
              title="which pair (angle θ_i) each feature belongs to")  # fmt: skip
    right.set_xticks([j + 0.45 for j in range(d_head)], labels=range(d_head))
    fig.suptitle("Moving row i to 2i and row i + d/2 to 2i + 1 turns the halves layout's pairs into ours")
    fig.tight_layout()
    return _closed(fig)
