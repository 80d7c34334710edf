"""Every diagram of the book draws: each public function of transformer_course_tools/notebook/diagrams.py, called with its
defaults, returns a closed matplotlib figure with something on it."""

from __future__ import annotations

import inspect

import matplotlib
import pytest

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

from transformer_course_tools.notebook import diagrams  # noqa: E402

# Each diagram that draws from its defaults (beam_tree draws a search it is given: tested with one in
# tests/test_diagrams_09_13_15.py).
DIAGRAMS = [
    function
    for name, function in inspect.getmembers(diagrams, inspect.isfunction)
    if not name.startswith("_")
    and function.__module__ == diagrams.__name__
    and all(p.default is not p.empty for p in inspect.signature(function).parameters.values())
]


def test_there_are_diagrams() -> None:
    assert DIAGRAMS, "transformer_course_tools/notebook/diagrams.py draws nothing"


@pytest.mark.parametrize("draw", DIAGRAMS, ids=lambda f: f.__name__)
def test_each_diagram_draws(draw) -> None:
    import matplotlib.pyplot as plt

    fig = draw()
    assert isinstance(fig, Figure)
    assert fig.number not in plt.get_fignums(), "a diagram returns its figure closed (shown once, as the cell's value)"
    fig.canvas.draw()  # lays out every text and patch: raises if anything cannot be drawn
    assert any(ax.patches or ax.images or ax.lines or ax.texts for ax in fig.axes), "an empty figure"
    assert inspect.getdoc(draw), f"{draw.__name__} says what it draws (the chapter's alt text starts there)"
