"""Figures the chapters draw with one call: the architecture map, attention heads, path lengths.

* :func:`architecture_map` draws the encoder-decoder of the paper's Figure 1 in our own layout,
  with the shape of the tensor on every arrow, and highlights the part a chapter builds;
* :func:`plot_attention_heads` draws attention weights as a grid of heatmaps, one per layer and
  head, with the tokens on both axes and one colour bar;
* :func:`plot_path_lengths` draws the path-length argument of the paper's §4 (Table 1).

A function that makes its own figure returns it *closed* (removed from pyplot's list of open
figures): as the last line of a notebook cell it is shown once, as the cell's value.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from torch import Tensor

# -- the architecture map ------------------------------------------------------------------------

# The parts a chapter can highlight, and what the title says about each.
PARTS: dict[str, str] = {
    "tokens": "tokens and vocabularies: text in, ids out",
    "embeddings": "the embeddings (× √D) and the output layer that shares their matrix",
    "positional": "the positional encoding added to the embeddings",
    "attention": "scaled dot-product attention, inside every attention block",
    "multihead": "multi-head attention: the three attention blocks",
    "encoder": "the encoder layer: self-attention, feed-forward, Add & Norm, N times",
    "decoder": "the decoder layer, its masks and the full model",
    "training": "training: teacher forcing, the loss, the optimiser",
    "decoding": "decoding: choose a token, feed it back, repeat",
}
_ALIASES = {"data": "tokens", "masks": "decoder", "model": "decoder", "loss": "training"}

_FILL, _EDGE = "#eef2f6", "#8796a8"  # parts not highlighted
_HI_FILL, _HI_EDGE = "#ffd591", "#c46a00"  # the chapter's part
_SHAPE = "#5a5a5a"


@dataclass
class _Box:
    x: float  # centre
    y: float  # bottom
    w: float
    h: float
    text: str
    parts: tuple[str, ...]
    note: str = ""  # a smaller second line (the weights' shape, the mask)

    @property
    def top(self) -> float:
        return self.y + self.h


# The parts of chapter 13's decoder-only map (``architecture_map(..., model="decoder-only")``).
DECODER_ONLY_PARTS: dict[str, str] = {
    "tokens": "text in, ids out",
    "embeddings": "the embedding and the output layer that shares its matrix",
    "norm": "RMSNorm, before each sub-layer (pre-LN)",
    "rope": "rotary positions, inside attention",
    "gqa": "grouped key/value heads and the KV cache",
    "swiglu": "the SwiGLU feed-forward network",
    "training": "AdamW, warm-up and cosine decay",
    "decoding": "generation, one token at a time",
}


def _parts(highlight: str | Iterable[str] | None, known: dict[str, str] = PARTS) -> set[str]:
    if highlight is None:
        return set()
    names = {highlight} if isinstance(highlight, str) else set(highlight)
    names = {_ALIASES.get(n, n) for n in names} if known is PARTS else names
    unknown = names - set(known)
    if unknown:
        raise ValueError(f"unknown part(s) {sorted(unknown)}; choose among {', '.join(known)}")
    return names


def _layout() -> tuple[list[_Box], list[tuple]]:
    """The boxes and the arrows (x0, y0, x1, y1, shape label, parts) of the map."""
    enc, dec, w = 2.5, 7.5, 3.3
    boxes: list[_Box] = []
    arrows: list[tuple] = []

    def box(x, y, text, parts, h=0.55, note="") -> _Box:
        boxes.append(_Box(x, y, w, h, text, parts, note))
        return boxes[-1]

    def arrow(a: _Box | tuple, b: _Box, shape: str, parts: tuple[str, ...] = ()) -> None:
        x0, y0 = (a.x, a.top) if isinstance(a, _Box) else a
        arrows.append((x0, y0, b.x, b.y, shape, parts))

    # inputs
    src_ids = box(enc, 0.0, "source token ids", ("tokens",), note="'twenty one'")
    tgt_ids = box(dec, 0.0, "target ids, shifted right", ("tokens", "training"), note="<bos> ein und")
    # embeddings and positions
    src_emb = box(enc, 1.05, "token embedding × √D", ("embeddings",))
    tgt_emb = box(dec, 1.05, "token embedding × √D", ("embeddings",))
    src_pe = box(enc, 2.1, "+ positional encoding", ("positional",))
    tgt_pe = box(dec, 2.1, "+ positional encoding", ("positional",))
    arrow(src_ids, src_emb, "(B, S)")
    arrow(tgt_ids, tgt_emb, "(B, T)")
    arrow(src_emb, src_pe, "(B, S, D)")
    arrow(tgt_emb, tgt_pe, "(B, T, D)")

    def stack(x: float, below: _Box, shape: str, layers: list[tuple]) -> list[_Box]:
        """Sub-layer boxes from bottom to top, 0.5 apart, each joined to the one below by an arrow
        labelled ``shape`` (or the box's own arrow label)."""
        made, y = [], 3.5
        for text, parts, h, note, label in layers:
            made.append(box(x, y, text, parts, h=h, note=note))
            arrow(below, made[-1], label or shape)
            below, y = made[-1], made[-1].top + 0.5
        return made

    attention = ("attention", "multihead")
    e_att, e_an1, e_ffn, e_an2 = stack(enc, src_pe, "(B, S, D)", [
        ("multi-head self-attention", (*attention, "encoder"), 0.75, "weights (B, H, S, S); mask: source padding", ""),
        ("Add & Norm", ("encoder",), 0.45, "", ""),
        ("feed-forward", ("encoder",), 0.55, "(B, S, d_ff) inside", ""),
        ("Add & Norm", ("encoder",), 0.45, "", ""),
    ])  # fmt: skip
    d_att, d_an1, d_crs, d_an2, d_ffn, d_an3 = stack(dec, tgt_pe, "(B, T, D)", [
        ("masked multi-head self-attention", (*attention, "decoder"), 0.75,
         "weights (B, H, T, T); mask: causal & padding", ""),
        ("Add & Norm", ("decoder",), 0.45, "", ""),
        ("multi-head cross-attention", (*attention, "decoder"), 0.75, "weights (B, H, T, S); K, V from memory",
         "(B, T, D) queries"),
        ("Add & Norm", ("decoder",), 0.45, "", ""),
        ("feed-forward", ("decoder",), 0.55, "(B, T, d_ff) inside", ""),
        ("Add & Norm", ("decoder",), 0.45, "", ""),
    ])  # fmt: skip
    # memory: from the top of the encoder into the cross-attention (drawn as a bent arrow)
    arrows.append(("memory", e_an2, d_crs))
    # the output end
    linear = box(dec, 10.2, "linear, tied to the embedding", ("embeddings", "decoder"))
    softmax = box(dec, 11.25, "softmax", ("decoder", "training", "decoding"), h=0.45)
    arrow(d_an3, linear, "(B, T, D)")
    arrow(linear, softmax, "logits (B, T, V_tgt)")
    loss = _Box(dec - 0.95, 12.3, 1.55, 0.55, "loss vs labels", ("training",), "label smoothing")
    nxt = _Box(dec + 0.95, 12.3, 1.55, 0.55, "next token", ("decoding",), "greedy / beam / sample")
    boxes += [loss, nxt]
    arrows.append((loss.x, softmax.top, loss.x, loss.y, "(B, T, V_tgt)", ()))
    arrows.append((nxt.x, softmax.top, nxt.x, nxt.y, "(B, V_tgt)", ()))
    arrows.append(("feedback", nxt, tgt_ids))
    stacks = [("N× encoder layer", enc, 3.25, 7.45, "encoder"), ("N× decoder layer", dec, 3.25, 9.65, "decoder")]
    arrows.append(("stacks", stacks))
    arrows.append(("residuals", [(e_att, e_an1), (e_ffn, e_an2), (d_att, d_an1), (d_crs, d_an2), (d_ffn, d_an3)]))
    return boxes, arrows


def _decoder_only_layout() -> tuple[list[_Box], list[tuple]]:
    """Chapter 13's map: one stack of pre-LN blocks with a causal mask, no encoder, no cross-attention."""
    x, w = 5.0, 3.9
    boxes: list[_Box] = []
    arrows: list[tuple] = []

    def box(y, text, parts, h=0.55, note="") -> _Box:
        boxes.append(_Box(x, y, w, h, text, parts, note))
        return boxes[-1]

    def arrow(a: _Box, b: _Box, shape: str) -> None:
        arrows.append((a.x, a.top, b.x, b.y, shape, ()))

    ids = box(0.0, "token ids", ("tokens",), note="<bos> To be")  # the plays, as chapters 13 and 14 read them
    emb = box(1.05, "token embedding", ("embeddings",), note="no positions added; × √D only if scale_embedding")
    arrow(ids, emb, "(B, T)")
    below, y, made = emb, 2.6, []
    for text, parts, h, note in [
        ("RMSNorm", ("norm",), 0.45, ""),
        ("causal self-attention", ("rope", "gqa"), 0.95, "RoPE rotates q and k; H query heads share\n"
         "Hkv key/value heads; KV cache when generating"),
        ("Add", (), 0.4, ""),
        ("RMSNorm", ("norm",), 0.45, ""),
        ("SwiGLU feed-forward", ("swiglu",), 0.55, "W₂(silu(W₁x) ⊙ W₃x), d_ff ≈ ⅔·4·D"),
        ("Add", (), 0.4, ""),
    ]:  # fmt: skip
        made.append(box(y, text, parts, h=h, note=note))
        arrow(below, made[-1], "(B, T, D)")
        below, y = made[-1], made[-1].top + 0.45
    final = box(y + 0.25, "final RMSNorm", ("norm",), h=0.45)
    arrow(below, final, "(B, T, D)")
    linear = box(final.top + 0.5, "linear, tied to the embedding", ("embeddings",))
    softmax = box(linear.top + 0.5, "softmax", ("training", "decoding"), h=0.45)
    arrow(final, linear, "(B, T, D)")
    arrow(linear, softmax, "logits (B, T, V)")
    loss = _Box(x - 1.1, softmax.top + 0.55, 1.8, 0.55, "loss vs next tokens", ("training",), "AdamW, cosine")
    nxt = _Box(x + 1.1, softmax.top + 0.55, 1.8, 0.55, "next token", ("decoding",), "greedy / top-p")
    boxes += [loss, nxt]
    arrows.append((loss.x, softmax.top, loss.x, loss.y, "(B, T, V)", ()))
    arrows.append((nxt.x, softmax.top, nxt.x, nxt.y, "(B, V)", ()))
    arrows.append(("feedback", nxt, ids))
    arrows.append(("stacks", [("N× block (pre-LN)", x, 2.4, made[-1].top + 0.2, "norm")]))
    arrows.append(("residuals", [(made[0], made[2]), (made[3], made[5])]))
    return boxes, arrows


_LEGENDS = {
    "transformer": (
        "B batch      S source length   T target length\n"
        "D = d_model  H heads           d_ff FFN width\n"
        "V_tgt target vocabulary        N layers per stack\n\n"
        "left: the encoder reads the whole source\n"
        "right: the decoder writes the target"
    ),
    "decoder-only": (
        "B batch   T text length\n"
        "D = d_model   H heads\n"
        "Hkv key/value heads\n"
        "V vocabulary  N blocks\n\n"
        "one stack: no encoder,\n"
        "no cross-attention"
    ),
}


def architecture_map(
    highlight: str | Iterable[str] | None = None, title: str | None = None, ax=None, model: str = "transformer"
):
    """The encoder-decoder Transformer with the shape of the tensor on every arrow.

    ``highlight`` names the part(s) to colour, among :data:`PARTS` ("tokens", "embeddings",
    "positional", "attention", "multihead", "encoder", "decoder", "training", "decoding").
    Letters: B batch, S source length, T target length, D = d_model, H heads, V_tgt the target
    vocabulary, N layers (the notation page, book/notation.md).

    ``model="decoder-only"`` draws chapter 13's language model instead (one stack of pre-LN
    blocks, a causal mask, no encoder); its parts are :data:`DECODER_ONLY_PARTS` ("norm",
    "rope", "gqa", "swiglu", …).

    Returns the figure (closed, so that a notebook shows it once, as the cell's value).
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    if model not in _LEGENDS:
        raise ValueError(f"model must be one of {', '.join(map(repr, _LEGENDS))}, got {model!r}")
    known = PARTS if model == "transformer" else DECODER_ONLY_PARTS
    chosen = _parts(highlight, known)
    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(9.6, 9.4))
    fig = ax.figure
    boxes, arrows = _layout() if model == "transformer" else _decoder_only_layout()

    def lit(parts: Iterable[str]) -> bool:
        return bool(chosen & set(parts))

    def line_arrow(x0, y0, x1, y1, color="#333333", style="-|>", lw=1.3, **kwargs) -> None:
        ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle=style, mutation_scale=11, color=color,
                                     lw=lw, shrinkA=0, shrinkB=0, **kwargs))  # fmt: skip

    for item in arrows:
        if item[0] == "stacks":
            for label, x, y0, y1, part in item[1]:
                hi = lit((part,))
                ax.add_patch(FancyBboxPatch((x - 2.0, y0), 4.0, y1 - y0, boxstyle="round,pad=0.02,rounding_size=0.15",
                                            fill=False, ls="--", lw=1.6 if hi else 1.0,
                                            edgecolor=_HI_EDGE if hi else "#9aa5b1"))  # fmt: skip
                ax.text(x - 1.92, y1 - 0.05, label, ha="left", va="top", fontsize=8.5, style="italic",
                        color=_HI_EDGE if hi else "#6b7785")  # fmt: skip
        elif item[0] == "residuals":
            for sub, norm in item[1]:
                x = sub.x - sub.w / 2 - 0.22
                hi = lit(norm.parts)
                color = _HI_EDGE if hi else "#9aa5b1"
                ax.plot([sub.x, x, x], [sub.y - 0.18, sub.y - 0.18, norm.y + norm.h / 2], color=color, lw=1.0)
                line_arrow(x, norm.y + norm.h / 2, norm.x - norm.w / 2, norm.y + norm.h / 2, color=color, lw=1.0)
        elif item[0] == "memory":
            _, top, cross = item
            y = top.top + 0.35
            x_mid = (top.x + cross.x) / 2
            line_arrow(top.x, top.top, top.x, y, style="-")
            ax.plot([top.x, x_mid], [y, y], color="#333333", lw=1.3)
            ax.plot([x_mid, x_mid], [y, cross.y + 0.2], color="#333333", lw=1.3)
            line_arrow(x_mid, cross.y + 0.2, cross.x - cross.w / 2, cross.y + 0.2)
            ax.text(top.x + 0.08, y + 0.08, "memory (B, S, D): keys and values", fontsize=8, color=_SHAPE)
        elif item[0] == "feedback":
            _, nxt, tgt = item
            hi = lit(("decoding",))
            color = _HI_EDGE if hi else "#9aa5b1"
            x = nxt.x + nxt.w / 2 + 0.25
            ax.plot([nxt.x + nxt.w / 2, x, x], [nxt.y + nxt.h / 2, nxt.y + nxt.h / 2, tgt.y + tgt.h / 2],
                    color=color, lw=1.0, ls=":")  # fmt: skip
            line_arrow(x, tgt.y + tgt.h / 2, tgt.x + tgt.w / 2, tgt.y + tgt.h / 2, color=color, lw=1.0)
            ax.text(x + 0.06, 6.0, "decoding: append the\nchosen token and\nrun the decoder again",
                    rotation=90, ha="left", va="center", fontsize=7.5, color=color)  # fmt: skip
        else:
            x0, y0, x1, y1, shape, _ = item
            line_arrow(x0, y0, x1, y1)
            ax.text(x0 + 0.08, (y0 + y1) / 2, shape, fontsize=7.5, color=_SHAPE, va="center", family="monospace")

    for b in boxes:
        hi = lit(b.parts)
        ax.add_patch(FancyBboxPatch((b.x - b.w / 2, b.y), b.w, b.h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                    facecolor=_HI_FILL if hi else _FILL, edgecolor=_HI_EDGE if hi else _EDGE,
                                    lw=2.0 if hi else 0.9, zorder=2))  # fmt: skip
        if b.note:
            ax.text(b.x, b.y + b.h * 0.64, b.text, ha="center", va="center", fontsize=9, zorder=3,
                    weight="bold" if hi else "normal")  # fmt: skip
            ax.text(b.x, b.y + b.h * 0.25, b.note, ha="center", va="center", fontsize=7, color="#4a4a4a", zorder=3)
        else:
            ax.text(b.x, b.y + b.h / 2, b.text, ha="center", va="center", fontsize=9, zorder=3,
                    weight="bold" if hi else "normal")  # fmt: skip

    ax.text(0.75, 12.85, _LEGENDS[model], ha="left", va="top", fontsize=8, family="monospace", color="#333333",
            bbox={"boxstyle": "round,pad=0.4", "facecolor": "white", "edgecolor": "#c5ccd4"})  # fmt: skip
    if chosen:
        ax.add_patch(FancyBboxPatch((0.8, 10.75), 0.5, 0.3, boxstyle="round,pad=0.02", facecolor=_HI_FILL,
                                    edgecolor=_HI_EDGE, lw=2.0))  # fmt: skip
        ax.text(1.45, 10.9, "this chapter", va="center", fontsize=8.5)
    ax.set_xlim(0.4, 10.0)
    ax.set_ylim(-0.2, 13.1)
    ax.set_axis_off()
    if title is None:
        name = "The Transformer (paper §3, Figure 1)" if model == "transformer" else "A decoder-only language model"
        parts = "; ".join(known[p] for p in known if p in chosen)
        title = f"{name}: {parts}" if parts else name
        if model == "decoder-only" and len(parts) > 60:  # several parts: on lines of their own
            title = f"{name}:\n{textwrap.fill(parts, 80)}"
    ax.set_title(title, fontsize=10.5)
    if own:
        fig.tight_layout()
        plt.close(fig)
    return fig


# -- attention weights, head by head -------------------------------------------------------------


def plot_attention_heads(
    maps: Tensor,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    title: str,
    query_axis: str = "query",
    key_axis: str = "key",
    layer_names: Sequence[str] | None = None,
    cell: float = 0.26,
):
    """One heatmap per layer and head (rows: layers, columns: heads), with one colour bar.

    ``maps`` is (layers, H, T_query, T_key) for one sentence (or (H, T_query, T_key): one layer);
    it is cut to ``len(query_tokens)`` × ``len(key_tokens)`` (the padding beyond is not shown).
    Token labels go on the left column and the bottom row, axis titles on the outer panels.
    Returns the figure (closed: shown once as a notebook cell's value).
    """
    import matplotlib.pyplot as plt
    import seaborn as sns

    if maps.dim() == 3:
        maps = maps[None]
    if maps.dim() != 4:
        raise ValueError(f"maps must be (layers, H, T_query, T_key) or (H, T_query, T_key), got {tuple(maps.shape)}")
    n_layers, n_heads = maps.shape[:2]
    n_q, n_k = len(query_tokens), len(key_tokens)
    if n_q > maps.shape[2] or n_k > maps.shape[3]:
        raise ValueError(f"{n_q} × {n_k} labels for maps of {maps.shape[2]} × {maps.shape[3]} positions")
    layer_names = layer_names or [f"layer {i + 1}" for i in range(n_layers)]
    width = max(2.0, cell * n_k + 0.9)
    height = max(1.6, cell * n_q + 0.7)
    fig, axes = plt.subplots(n_layers, n_heads, figsize=(width * n_heads + 1.4, height * n_layers + 1.1),
                             squeeze=False, constrained_layout=True)  # fmt: skip
    for layer in range(n_layers):
        for head in range(n_heads):
            ax = axes[layer, head]
            sns.heatmap(maps[layer, head, :n_q, :n_k].detach().float().cpu().numpy(), ax=ax, vmin=0.0, vmax=1.0,
                        cmap="Blues", cbar=False, square=False, linewidths=0.2, linecolor="#f0f0f0",
                        xticklabels=list(key_tokens) if layer == n_layers - 1 else False,
                        yticklabels=list(query_tokens) if head == 0 else False)  # fmt: skip
            ax.set_title(f"{layer_names[layer]}, head {head + 1}", fontsize=8.5)
            ax.tick_params(labelsize=7.5, length=0)
            if layer == n_layers - 1:
                ax.set_xlabel(key_axis, fontsize=8.5)
                ax.set_xticklabels(ax.get_xticklabels(), rotation=70)
            if head == 0:
                ax.set_ylabel(query_axis, fontsize=8.5)
                ax.set_yticklabels(ax.get_yticklabels(), rotation=0)
    mappable = axes[0, 0].collections[0]
    fig.colorbar(mappable, ax=axes, shrink=0.8, label="attention weight")
    fig.suptitle(title, fontsize=10)
    plt.close(fig)
    return fig


# -- §4: path lengths --------------------------------------------------------------------------------


def path_lengths(n: int, kernel: int = 3) -> dict[str, int]:
    """Layers (or steps) a signal needs from the first to the last of ``n`` positions (Table 1).

    Self-attention: 1 (every position sees every position). Recurrent: n − 1 steps. A stack of
    convolutions of width ``kernel``: ⌈(n − 1)/(kernel − 1)⌉ plain layers, or ⌈log_kernel n⌉
    dilated ones.
    """
    if n < 2 or kernel < 2:
        raise ValueError(f"need n >= 2 and kernel >= 2, got n={n}, kernel={kernel}")
    return {
        "self-attention": 1,
        "recurrent": n - 1,
        f"convolution, width {kernel}": math.ceil((n - 1) / (kernel - 1)),
        f"dilated convolution, width {kernel}": max(1, math.ceil(math.log(n) / math.log(kernel) - 1e-9)),
    }


def plot_path_lengths(n_drawn: int = 8, lengths: Sequence[int] = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)):
    """Left: how a signal travels from the first to the last of ``n_drawn`` tokens in a recurrent
    layer (a chain of steps) and in a self-attention layer (one hop). Right: the longest path
    against the sequence length, for the layers of Table 1. Returns the figure (closed)."""
    import matplotlib.pyplot as plt

    fig, (ax_draw, ax_plot) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1.15, 1]})
    xs = list(range(n_drawn))
    for y, label in ((1.0, "recurrent"), (0.0, "self-attention")):
        ax_draw.scatter(xs, [y] * n_drawn, s=160, color="white", edgecolor="#333333", zorder=3)
        for x in xs:
            ax_draw.text(x, y, f"{x + 1}", ha="center", va="center", fontsize=8, zorder=4)
        ax_draw.text(-0.6, y, label, ha="right", va="center", fontsize=9)
    for x in xs[:-1]:  # the recurrent chain: n − 1 steps
        ax_draw.annotate("", xy=(x + 0.82, 1.0), xytext=(x + 0.18, 1.0),
                         arrowprops={"arrowstyle": "-|>", "color": "tab:red", "lw": 1.5})  # fmt: skip
    for x in xs[:-1]:  # self-attention: every earlier token reaches the last one in one hop
        ax_draw.annotate("", xy=(xs[-1], -0.12), xytext=(x, -0.12),
                         arrowprops={"arrowstyle": "-|>", "color": "tab:blue", "lw": 1.0, "alpha": 0.8,
                                     "connectionstyle": f"arc3,rad={0.08 + 0.5 / (xs[-1] - x + 1)}"})  # fmt: skip
    ax_draw.text(xs[-1] / 2, 1.3, f"token 1 → token {n_drawn}: {n_drawn - 1} steps, one after the other",
                 ha="center", fontsize=9, color="tab:red")  # fmt: skip
    ax_draw.text(xs[-1] / 2, -1.0, f"token 1 → token {n_drawn}: one hop, all pairs at once",
                 ha="center", fontsize=9, color="tab:blue")  # fmt: skip
    ax_draw.set_xlim(-3.2, n_drawn)
    ax_draw.set_ylim(-1.2, 1.55)
    ax_draw.set_axis_off()
    ax_draw.set_title("How far a signal travels between two tokens")
    rows = [path_lengths(n) for n in lengths]
    for name, color in zip(rows[0], ("tab:blue", "tab:red", "tab:green", "tab:purple"), strict=True):
        ax_plot.plot(lengths, [row[name] for row in rows], "o-", markersize=4, label=name, color=color)
    ax_plot.set(yscale="log", xlabel="sequence length n", ylabel="longest path (layers or steps)",
                title="Maximum path length (Table 1)")  # fmt: skip
    ax_plot.set_xscale("log", base=2)
    ax_plot.legend(fontsize=8)
    ax_plot.grid(alpha=0.3)
    fig.suptitle("Self-attention connects any two positions in one step; a recurrent layer needs n − 1", y=1.0)
    fig.tight_layout()
    plt.close(fig)
    return fig
