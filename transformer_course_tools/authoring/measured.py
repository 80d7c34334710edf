"""Measured cells: the outputs a re-run of a notebook keeps unless asked.

A code cell tagged ``measured`` prints a measurement of the machine it ran on (a time, a speed, a
ratio of two times): another run, on a machine that is busy with something else, prints other
numbers, and nbval does not compare them (the cell starts with ``# NBVAL_IGNORE_OUTPUT``). So
``make notebooks`` (``scripts/execute_notebooks.py``) keeps the committed output of a measured cell
whose source did not change, and says which of them this run measured differently; ``--remeasure``
stores this run's outputs instead (and says which changed). A measured cell whose source changed
always gets this run's output.
"""

from __future__ import annotations

import json

MEASURED = "measured"  # the cell tag


def measured_outputs(notebook) -> dict[str, tuple[str, list]]:  # noqa: ANN001 - an nbformat notebook
    """Cell id → (source, outputs) of the notebook's measured cells that hold an output."""
    return {
        cell.id: (cell.source, cell.outputs)
        for cell in notebook.cells
        if cell.cell_type == "code" and MEASURED in cell.metadata.get("tags", []) and "id" in cell and cell.outputs
    }


def keep_measured(notebook, committed: dict[str, tuple[str, list]], remeasure: bool = False) -> list[str]:  # noqa: ANN001
    """Put back into ``notebook`` (just run) the ``committed`` outputs of its measured cells whose source is
    unchanged (``remeasure``: keep this run's); one line per measured cell whose output this run changed
    or would have changed."""
    lines = []
    for number, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type != "code" or MEASURED not in cell.metadata.get("tags", []):
            continue
        source, outputs = committed.get(cell.get("id"), (None, None))
        if source is None or source != cell.source:
            lines.append(f"cell {number}: this run's output stored (a new or changed measured cell)")
        elif _shown(outputs) == _shown(cell.outputs):
            continue
        elif remeasure:
            lines.append(f"cell {number}: this run's measurement stored (it differs from the committed one)")
        else:
            cell.outputs = outputs
            lines.append(f"cell {number}: the committed measurement kept (this run's differs; --remeasure stores it)")
    return lines


def _shown(outputs: list) -> str:
    """What an output list shows, without execution counts."""
    return json.dumps([{k: v for k, v in dict(o).items() if k != "execution_count"} for o in outputs], sort_keys=True)
