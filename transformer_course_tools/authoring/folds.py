"""What JupyterLab folds: a notebook's machinery, folded by the tags that already fold it on the web.

The web edition folds a cell by its tags (``hide-input``, ``hide-output``, ``hide-cell``; the Colab cell,
tagged ``colab``, it drops). JupyterLab reads another key, the cell's ``jupyter`` metadata
(``source_hidden``, ``outputs_hidden``): :func:`fold` writes it from the tags, so that a learner in
JupyterLab sees the same page: the Colab cell, the set-up imports and the check lines folded, one click
away. The metadata lives in the ``.ipynb`` only (jupytext's filter keeps the ``.py`` to its tags).

    python -m transformer_course_tools.authoring.folds chapters/*.ipynb exercises/*.ipynb solutions/*.ipynb
"""

from __future__ import annotations

import sys
from pathlib import Path

FOLDS = {
    "colab": {"source_hidden": True},
    "hide-input": {"source_hidden": True},
    "hide-output": {"outputs_hidden": True},
    "hide-cell": {"source_hidden": True, "outputs_hidden": True},
}


def folds_of(tags: list[str]) -> dict[str, bool]:
    """The ``jupyter`` metadata that cell tags ``tags`` ask for ({} for none)."""
    found: dict[str, bool] = {}
    for tag in tags:
        found |= FOLDS.get(tag, {})
    return found


def fold(notebook) -> bool:  # noqa: ANN001 - an nbformat notebook
    """Set every cell's folds from its tags (in place); whether anything changed."""
    changed = False
    for cell in notebook.cells:
        wanted = folds_of(cell.metadata.get("tags", []))
        if cell.metadata.get("jupyter", {}) != wanted:
            changed = True
            if wanted:
                cell.metadata["jupyter"] = wanted
            else:
                cell.metadata.pop("jupyter", None)
    return changed


def main(paths: list[str]) -> int:
    import nbformat

    for path in map(Path, paths):
        notebook = nbformat.read(path, as_version=4)
        if fold(notebook):
            nbformat.write(notebook, path)
            print(f"folded {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
