"""The course's figures draw without error and label what they should (transformer_course_tools/notebook/figures.py)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # no display in the tests

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib._pylab_helpers import Gcf

from transformer_course_tools.notebook.figures import (
    DECODER_ONLY_PARTS,
    PARTS,
    architecture_map,
    path_lengths,
    plot_attention_heads,
    plot_path_lengths,
)


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [ax.get_title() for ax in fig.axes]


def test_the_architecture_map_puts_a_shape_on_every_arrow() -> None:
    fig = architecture_map()
    texts = " | ".join(_texts(fig))
    for shape in ("(B, S)", "(B, T)", "(B, S, D)", "(B, T, D)", "logits (B, T, V_tgt)", "memory (B, S, D)"):
        assert shape in texts, f"no arrow labelled {shape}"
    for block in ("multi-head self-attention", "masked multi-head self-attention", "multi-head cross-attention",
                  "feed-forward", "Add & Norm", "+ positional encoding", "token embedding × √D", "softmax"):  # fmt: skip
        assert block in texts, f"no box {block!r}"
    assert "(B, H, S, S)" in texts and "(B, H, T, S)" in texts and "(B, H, T, T)" in texts, "attention weights"
    open_figures = [manager.canvas.figure for manager in Gcf.get_all_fig_managers()]
    assert fig not in open_figures, "the map is returned closed (a notebook shows it once)"


@pytest.mark.parametrize("part", [*PARTS, "masks", "data"])
def test_every_part_can_be_highlighted_and_the_title_says_which(part: str) -> None:
    fig = architecture_map(part)
    title = fig.axes[0].get_title()
    assert "Figure 1" in title and ":" in title, title
    highlighted = [p for p in fig.axes[0].patches if getattr(p, "get_linewidth", lambda: 0)() >= 2.0]
    assert highlighted, f"nothing highlighted for {part!r}"


def test_an_unknown_part_is_refused_with_the_list_of_parts() -> None:
    with pytest.raises(ValueError, match="choose among tokens, embeddings"):
        architecture_map("flux capacitor")


@pytest.mark.parametrize("part", DECODER_ONLY_PARTS)
def test_the_decoder_only_map_has_one_stack_and_highlights_each_part(part: str) -> None:
    fig = architecture_map(part, model="decoder-only")
    texts = " | ".join(_texts(fig))
    for block in (
        "causal self-attention",
        "RMSNorm",
        "SwiGLU feed-forward",
        "final RMSNorm",
        "(B, T, D)",
        "logits (B, T, V)",
    ):
        assert block in texts, f"no {block!r} on the decoder-only map"
    assert "cross-attention" not in texts.replace("no cross-attention", ""), (
        "a decoder-only model has no cross-attention"
    )
    assert DECODER_ONLY_PARTS[part] in fig.axes[0].get_title()
    assert [p for p in fig.axes[0].patches if getattr(p, "get_linewidth", lambda: 0)() >= 2.0], (
        f"{part!r} not highlighted"
    )


def test_the_decoder_only_map_refuses_the_parts_of_the_other_map_and_unknown_models() -> None:
    with pytest.raises(ValueError, match="choose among tokens, embeddings, norm"):
        architecture_map("encoder", model="decoder-only")
    with pytest.raises(ValueError, match="model must be one of"):
        architecture_map(model="mamba")


def test_the_map_draws_into_a_given_axes() -> None:
    fig, ax = plt.subplots()
    assert architecture_map("attention", ax=ax) is fig
    plt.close(fig)


def test_attention_heads_get_token_labels_axis_titles_and_one_colour_bar() -> None:
    maps = torch.softmax(torch.randn(2, 3, 4, 5), dim=-1)  # (layers, H, T_query, T_key)
    fig = plot_attention_heads(maps, list("wxyz"), list("abcde"), "a finding", "query words", "key words")
    panels = [ax for ax in fig.axes if ax.get_title().startswith("layer")]
    assert len(panels) == 6 and panels[0].get_title() == "layer 1, head 1"
    assert [t.get_text() for t in panels[0].get_yticklabels()] == list("wxyz")
    assert [t.get_text() for t in panels[-1].get_xticklabels()] == list("abcde")
    assert panels[0].get_ylabel() == "query words" and panels[-1].get_xlabel() == "key words"
    colour_bars = [ax for ax in fig.axes if ax.get_ylabel() == "attention weight"]
    assert len(colour_bars) == 1
    assert fig._suptitle.get_text() == "a finding"


def test_attention_heads_are_cut_to_the_labels_and_checked() -> None:
    maps = torch.softmax(torch.randn(3, 6, 6), dim=-1)  # one layer: (H, T, S), two padded positions
    fig = plot_attention_heads(maps, list("abcd"), list("abcd"), "cut")
    panel = fig.axes[0]
    assert panel.collections[0].get_array().size == 16, "4 × 4 cells shown, the padding left out"
    with pytest.raises(ValueError, match="labels for maps"):
        plot_attention_heads(maps, list("abcdefgh"), list("ab"), "too many labels")


def test_path_lengths_follow_table_1() -> None:
    lengths = path_lengths(16, kernel=3)
    assert lengths == {
        "self-attention": 1,
        "recurrent": 15,
        "convolution, width 3": 8,
        "dilated convolution, width 3": 3,
    }
    fig = plot_path_lengths()
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert legend[:2] == ["self-attention", "recurrent"]
    assert fig.axes[1].get_xlabel() == "sequence length n"
