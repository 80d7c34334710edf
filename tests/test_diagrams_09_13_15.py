"""The drawn diagrams of chapters 09, 13 and 15 (transformer_course_tools/notebook/diagrams.py) draw, say what they show, and
refuse what they cannot draw."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # no display in the tests

import pytest
from matplotlib._pylab_helpers import Gcf

from transformer_course.convert import rope_halves_to_interleaved
from transformer_course_tools.notebook.diagrams import (
    beam_candidates,
    beam_tree,
    grouped_query_heads,
    kv_cache_step,
    rope_pair_permutation,
)
from transformer_course_tools.notebook.plots import fastest_seconds, plot_cache_speedup


def _texts(fig) -> str:
    return " | ".join([t.get_text() for ax in fig.axes for t in ax.texts] + [ax.get_title() for ax in fig.axes])


def _closed(fig) -> bool:
    return fig not in [manager.canvas.figure for manager in Gcf.get_all_fig_managers()]


def test_the_kv_cache_step_shows_q_k_v_the_append_and_the_memory_projected_once() -> None:
    fig = kv_cache_step(t=5, source_length=6)
    texts = _texts(fig)
    for shown in ("$q_{4}$", "$k_{4}$", "$v_{4}$", "$k_{0}$", "1 appended", "(B, H, 5, $d_k$)",
                  "scores all 5 cached keys", "at step 1 only", "read, never changed", "$k^{mem}_{5}$"):  # fmt: skip
        assert shown in texts, f"the diagram does not show {shown!r}"
    assert "$k_{5}$" not in texts, "positions count from 0: five positions are 0 … 4"
    assert _closed(fig), "returned closed (a notebook shows it once)"
    fig.canvas.draw()  # it renders


@pytest.mark.parametrize(("t", "source_length"), [(1, 4), (3, 0)])
def test_the_kv_cache_step_refuses_what_it_cannot_draw(t: int, source_length: int) -> None:
    with pytest.raises(ValueError, match="t must be at least 2"):
        kv_cache_step(t, source_length)


def test_grouped_query_heads_draws_one_panel_per_number_of_key_value_heads() -> None:
    fig = grouped_query_heads(8, (8, 2, 1))
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["multi-head: $H$ = 8, $H_{kv}$ = 8", "grouped-query: $H$ = 8, $H_{kv}$ = 2",
                      "multi-query: $H$ = 8, $H_{kv}$ = 1"]  # fmt: skip
    grouped = fig.axes[1]
    kv_boxes = [t.get_text() for t in grouped.texts if t.get_text().startswith("$k_")]
    assert kv_boxes == ["$k_{1}$\n$v_{1}$", "$k_{2}$\n$v_{2}$"]
    assert "each read by 4 query heads" in _texts(fig)
    assert _closed(fig)
    fig.canvas.draw()


def test_grouped_query_heads_refuses_groups_of_unequal_size() -> None:
    with pytest.raises(ValueError, match="must divide n_heads=8"):
        grouped_query_heads(8, (3,))


def test_the_beam_tree_marks_what_was_kept_and_labels_finished_hypotheses() -> None:
    tokens = ["<pad>", "<bos>", "<eos>", "a", "b"]
    history = [  # k = 2: <bos> → a, b; then a <eos> finishes, b a is kept; then the finished one is carried
        {"candidates": [(0, 3, -0.5), (0, 4, -0.9), (0, 2, -2.0)], "survivors": [(0, 3), (0, 4)]},
        {"candidates": [(0, 2, -0.7), (0, 4, -3.0), (1, 3, -1.1), (1, 2, -2.5)], "survivors": [(0, 2), (1, 3)]},
        {"candidates": [(0, 0, -0.7), (1, 2, -1.3)], "survivors": [(0, 0), (1, 2)]},
    ]
    fig = beam_tree(history, tokens)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.texts]
    assert "a  -0.50" in labels and "finished  -0.70" in labels and "<eos>  -1.30" in labels
    bold = {t.get_text() for t in ax.texts if t.get_fontweight() == "bold"}
    assert bold == {"a  -0.50", "b  -0.90", "<eos>  -0.70", "a  -1.10", "finished  -0.70", "<eos>  -1.30"}
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["kept in the beam", "pruned"]
    assert _closed(fig)


def test_beam_candidates_are_every_extension_the_step_scores() -> None:
    import torch

    scores = torch.tensor([-1.0, -2.0, float("-inf")])  # (k=3): a live hypothesis, a finished one, an empty slot
    log_probs = torch.tensor([[-0.5, -30.0, -1.5]] * 3)  # (k, V=3): token 1 is below the floor
    finished = torch.tensor([False, True, False])
    got = beam_candidates(scores, log_probs, finished, carried_id=0)
    assert got == [(0, 0, -1.5), (0, 2, -2.5), (1, 0, -2.0)], "slot 0 extended, slot 1 carried, slot 2 empty"


def test_the_rope_permutation_puts_one_mark_per_row_where_the_converter_takes_it() -> None:
    import torch

    order = rope_halves_to_interleaved(torch.arange(8).view(8, 1), n_heads=1).flatten().tolist()
    fig = rope_pair_permutation(order)
    grid = fig.axes[0].images[0].get_array()
    assert [list(row).index(1.0) for row in grid] == [0, 4, 1, 5, 2, 6, 3, 7], "our row j reads halves row order[j]"
    labels = [t.get_text() for t in fig.axes[1].texts if t.get_text().isdigit()]
    assert labels == ["0", "0", "1", "1", "2", "2", "3", "3", "0", "1", "2", "3", "0", "1", "2", "3"], labels
    assert _closed(fig), "returned closed (a notebook shows it once)"
    with pytest.raises(ValueError, match="permutation"):
        rope_pair_permutation([0, 0, 1, 2])


def test_the_cache_speedup_plot_divides_the_two_timings_and_fastest_seconds_keeps_the_threads() -> None:
    import torch

    fig = plot_cache_speedup([16, 32], {"no cache": [0.4, 0.9], "KV cache": [0.2, 0.3]})
    assert list(fig.axes[1].lines[0].get_ydata()) == pytest.approx([2.0, 3.0])
    assert _closed(fig)
    with pytest.raises(ValueError, match="one time per length"):
        plot_cache_speedup([16], {"no cache": [0.4, 0.9], "KV cache": [0.2, 0.3]})
    threads, seen = torch.get_num_threads(), []
    assert fastest_seconds(lambda: seen.append(torch.get_num_threads()), repeats=2) >= 0.0
    assert seen == [1, 1] and torch.get_num_threads() == threads
