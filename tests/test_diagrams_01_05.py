"""The drawn diagrams of chapters 01–05 (tools/diagrams.py) draw without error and label what they show."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # no display in the tests

import pytest
from matplotlib._pylab_helpers import Gcf

from transformer_course.tools.diagrams import multihead_shapes, post_ln_pre_ln


def _texts(fig) -> str:
    return " | ".join([t.get_text() for ax in fig.axes for t in ax.texts] + [ax.get_title() for ax in fig.axes])


@pytest.mark.parametrize("n_heads", [1, 4, 8])
def test_multihead_shapes_names_every_shape_on_the_way(n_heads: int) -> None:
    fig = multihead_shapes(n_heads)
    texts = _texts(fig)
    for shape in ("(B, T, D)", "(B, S, D)", "(B, T, H·Dk)", "(B, H, T, Dk)", "(B, H, S, Dv)", "weights (B, H, T, S)",
                  "(B, H, T, Dv)", "(B, T, H·Dv)", "split_heads", "merge_heads", "$W^O$"):  # fmt: skip
        assert shape in texts, f"no {shape!r} in the multi-head diagram"
    assert f"H = {n_heads} heads" in texts
    fig.canvas.draw()  # renders: the mathtext and the layout work
    assert fig not in [m.canvas.figure for m in Gcf.get_all_fig_managers()], "returned closed (shown once)"


def test_post_ln_pre_ln_puts_the_norm_on_each_side_of_the_sum() -> None:
    fig = post_ln_pre_ln()
    post, pre = fig.axes
    assert "post-LN" in post.get_title() and r"\mathrm{LN}(x_l +" in post.get_title()
    assert "pre-LN" in pre.get_title() and r"\mathrm{Sublayer}(\mathrm{LN}(x_l))" in pre.get_title()
    for ax in (post, pre):
        texts = [t.get_text() for t in ax.texts]
        assert "LayerNorm" in texts and "residual\nstream" in texts
    fig.canvas.draw()
    assert fig not in [m.canvas.figure for m in Gcf.get_all_fig_managers()]
