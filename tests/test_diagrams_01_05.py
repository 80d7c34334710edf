"""The drawn diagrams of chapters 01–05 (transformer_course_tools/notebook/diagrams.py) draw without error and label what they show, and
every figure of every chapter is described in words (the web edition's alt text)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display in the tests

import pytest
from matplotlib._pylab_helpers import Gcf

from transformer_course_tools.notebook.diagrams import multihead_shapes, post_ln_pre_ln


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


CHAPTERS = sorted((Path(__file__).resolve().parent.parent / "chapters").glob("[0-9][0-9]_*.ipynb"))


def _book_conf():
    """book/conf.py, loaded alone: its ``_alt_text`` is what the web edition uses as a figure's alt text."""
    path = Path(__file__).resolve().parent.parent / "book" / "conf.py"
    spec = importlib.util.spec_from_file_location("_book_conf", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_every_figure_is_described_in_words(notebook: Path) -> None:
    """A figure's code cell follows a markdown cell that ends with a folded "The figure in words" (or
    "The diagram in words") block: the reader who cannot see the figure reads it, and the web edition makes
    it the image's alt text (book/conf.py)."""
    alt_text = _book_conf()._alt_text
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    missing = []
    for i, cell in enumerate(cells):
        images = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        if cell["cell_type"] != "code" or not images:
            continue
        before = cells[i - 1]
        if before["cell_type"] != "markdown" or not alt_text("".join(before["source"])):
            missing.append("".join(cell["source"]).splitlines()[0])
    assert not missing, f"figures without a paragraph in words right before them: {missing}"
