"""Notebook pairs: the reviewed ``.py`` (jupytext's percent format) and the ``.ipynb`` beside it,
written as JupyterLab with jupytext saves them."""

from __future__ import annotations

from pathlib import Path


def write_pair(notebook, py: Path, keep_outputs: bool = True) -> None:  # noqa: ANN001 - an nbformat notebook
    """Write ``notebook`` to ``py`` and its ``.ipynb``. Where the ``.ipynb`` exists, its cells keep
    their ids and metadata, and (``keep_outputs``) their outputs, matched by content as jupytext
    matches them: rewriting an unchanged pair changes nothing."""
    import jupytext
    from jupytext.combine import combine_inputs_with_outputs

    ipynb = py.with_suffix(".ipynb")
    if ipynb.exists():
        notebook = combine_inputs_with_outputs(notebook, jupytext.read(ipynb), "py:percent")
    if not keep_outputs:
        for cell in notebook.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
    from .folds import fold

    fold(notebook)  # JupyterLab folds what the web edition folds (the .ipynb only)
    jupytext.write(notebook, py, fmt="py:percent")
    jupytext.write(notebook, ipynb)


def apply_carriage_returns(text: str) -> str:
    """Keep what a terminal (and JupyterLab) shows: text after a carriage return overwrites the
    start of its line. A text progress bar then keeps its last state only."""
    lines = []
    for line in text.replace("\r\n", "\n").split("\n"):
        shown = ""
        for piece in line.split("\r"):
            shown = piece + shown[len(piece) :]
        lines.append(shown)
    return "\n".join(lines)
