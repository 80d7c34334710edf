"""The markers are nbgrader's: nbgrader's own solution-clearing (``ClearSolutions``) turns our
solution notebooks into exactly the exercise notebooks we generate (cell sources compared)."""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest

from transformer_course_tools.exercises.edition import CODE_STUB, TEXT_STUB, clear_notebook

ROOT = Path(__file__).resolve().parent.parent
preprocessors = pytest.importorskip(
    "nbgrader.preprocessors",
    reason="nbgrader is not installed: pip install -e '.[nbgrader]' to compare with nbgrader's clearing",
)


def _synthetic() -> nbformat.NotebookNode:
    """A notebook with every kind of region: indented code, a whole cell, markdown, two in one cell."""
    cells = [
        nbformat.v4.new_markdown_cell("# Exercise\nWrite `f`."),
        nbformat.v4.new_code_cell(
            "def f(x):\n    y = x + 1\n    ### BEGIN SOLUTION\n    z = y * 2\n    return z\n    ### END SOLUTION"
        ),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\nprint(f(1))\n### END SOLUTION\n"),
        nbformat.v4.new_markdown_cell("Why?\n\n### BEGIN SOLUTION\nBecause *z* doubles.\n### END SOLUTION"),
        nbformat.v4.new_code_cell(
            "a = 1\n### BEGIN SOLUTION\nb = 2\n### END SOLUTION\nc = 3\n### BEGIN SOLUTION\nd = 4\n### END SOLUTION"
        ),
        nbformat.v4.new_code_cell('check("ex03_1")'),
    ]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return notebook


def _nbgrader_clear(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    import copy

    clear = preprocessors.ClearSolutions(code_stub={"python": CODE_STUB}, text_stub=TEXT_STUB, enforce_metadata=False)
    cleared, _ = clear.preprocess(copy.deepcopy(notebook), {})
    return cleared


NOTEBOOKS = {"synthetic": None, **{p.name: p for p in sorted((ROOT / "solutions").glob("*.py"))}}


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_nbgrader_clears_our_solutions_exactly_as_we_do(name: str) -> None:
    notebook = _synthetic() if NOTEBOOKS[name] is None else jupytext.read(NOTEBOOKS[name])
    ours, theirs = clear_notebook(notebook), _nbgrader_clear(notebook)
    assert [c.cell_type for c in ours.cells] == [c.cell_type for c in theirs.cells]
    for i, (a, b) in enumerate(zip(ours.cells, theirs.cells, strict=True)):
        assert a.source == b.source, f"{name} cell {i}: ours\n{a.source}\n--- nbgrader's\n{b.source}"
    assert any("BEGIN SOLUTION" in c.source for c in notebook.cells), f"{name} has no solution region"
    assert not any("BEGIN SOLUTION" in c.source for c in ours.cells)
