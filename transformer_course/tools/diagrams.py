"""Drawn diagrams of the book: shapes and steps a plot cannot show (what flows where, in which shape).

Each function draws one diagram with matplotlib and returns its figure; the chapter shows it and
gives its alt text. The diagrams are drawn, not computed: they take no model and train nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

# -- chapters 01–05 ------------------------------------------------------------------------------


# -- chapters 06, 07, 09 -------------------------------------------------------------------------


def teacher_forcing_diagram(pieces: Sequence[str] = ("ein", "und", "zwanzig"), bos: str = "<bos>", eos: str = "<eos>"):
    """Chapter 07: teacher forcing. The target ``<bos> y1 … yn <eos>`` cut into the decoder input
    (``<bos> y1 … yn``, bottom) and the labels (``y1 … yn <eos>``, top), one column per position:
    each label is the next column's input. On the right, the causal mask over the input positions
    (chapter 06): the row of position t is open for positions 0 … t only."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Rectangle

    inputs, labels = [bos, *pieces], [*pieces, eos]
    n = len(inputs)
    fig, (ax, ax_mask) = plt.subplots(1, 2, figsize=(12, 3.9), gridspec_kw={"width_ratios": [2.6, 1]})
    ax.set(xlim=(-2.1, n - 0.45), ylim=(-0.5, 3.5), aspect="equal")
    ax.axis("off")

    def token(x: float, y: float, text: str, fill: str, edge: str) -> None:
        ax.add_patch(Rectangle((x - 0.45, y - 0.25), 0.9, 0.5, facecolor=fill, edgecolor=edge, lw=1.2, zorder=3))
        ax.text(x, y, text, ha="center", va="center", fontsize=9.5, zorder=4)

    ax.add_patch(Rectangle((-0.5, 1.1), n, 1.0, facecolor="#eef2f6", edgecolor="#8796a8", lw=1.2, zorder=2))
    ax.text((n - 1) / 2, 1.72, "decoder", ha="center", va="center", fontsize=11, zorder=4)
    ax.text((n - 1) / 2, 1.38, "masked self-attention · cross-attention · FFN", ha="center", va="center",
            fontsize=8.5, color="#5a5a5a", zorder=4)  # fmt: skip
    for t in range(n):
        token(t, 0.3, inputs[t], "#dbe9f6", "#3a78b5")
        token(t, 2.9, labels[t], "#ffe7c2", "#c46a00")
        for y0, y1 in ((0.55, 1.1), (2.1, 2.65)):
            ax.add_artist(FancyArrowPatch((t, y0), (t, y1), arrowstyle="-|>", mutation_scale=10, color="#5a5a5a"))
        ax.text(t, -0.15, f"position {t}", ha="center", va="top", fontsize=8, color="#5a5a5a")
        if t + 1 < n:  # the label of position t is the input of position t + 1 (drawn behind the decoder)
            ax.add_artist(FancyArrowPatch((t + 0.2, 2.65), (t + 0.8, 0.55), arrowstyle="-|>", mutation_scale=9,
                                          color="#c46a00", ls=(0, (3, 2)), lw=1, zorder=1))  # fmt: skip
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


# -- chapters 08, 10, 11 -------------------------------------------------------------------------
