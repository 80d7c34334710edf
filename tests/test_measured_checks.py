"""A check line under a kept timing checks the timing the page shows.

A cell tagged ``measured`` keeps its committed output when the chapter is run again
(transformer_course_tools/authoring/measured.py). A check cell that reads the same numbers but is not
measured prints this run's value: the stored page then shows one timing and, folded under it, a check
of another (chapter 13 once showed a ratio of 1.9 above a check that had measured 2.36). So a check
cell that reads what a measured cell computes, or what only a measured cell shows, is measured too:
both outputs are kept, or stored, together."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from transformer_course_tools.authoring.measured import MEASURED

ROOT = Path(__file__).resolve().parent.parent
CHECK = re.compile(r"^\s*expect\w*\(", re.M)  # transformer_course_tools/notebook/claims.py's functions


def _code_cells(notebook: Path) -> list[tuple[set[str], str, bool]]:
    """(tags, source, has an output) of each code cell."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [
        (set(c["metadata"].get("tags", [])), "".join(c["source"]), bool(c.get("outputs")))
        for c in cells
        if c["cell_type"] == "code"
    ]


def _names(source: str) -> tuple[set[str], set[str]]:
    """(names the source assigns or defines, names it reads); a cell that is not Python reads nothing."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    stored, loaded = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (stored if isinstance(node.ctx, ast.Store) else loaded).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            stored.add(node.name)
    return stored, loaded


def unmeasured_checks_of_measurements(notebook: Path) -> list[str]:
    """The first line of each check cell that reads a measured cell's numbers without being measured."""
    cells = _code_cells(notebook)
    found = []
    for k, (tags, source, _) in enumerate(cells):
        if MEASURED in tags or not CHECK.search(source):
            continue
        _, reads = _names(source)
        measurements = set()
        for i, (tags_i, source_i, _) in enumerate(cells[:k]):
            if MEASURED not in tags_i:
                continue
            stored_i, loaded_i = _names(source_i)
            measurements |= stored_i  # computed in the measured cell
            for j in range(i):  # or computed silently before it and shown only by the measured cell
                stored_j, _ = _names(cells[j][1])
                if not cells[j][2] and MEASURED not in cells[j][0]:
                    measurements |= stored_j & loaded_i
        if reads & measurements:
            found.append(f"{source.strip().splitlines()[0][:80]} (reads {sorted(reads & measurements)})")
    return found


@pytest.mark.parametrize("notebook", sorted((ROOT / "chapters").glob("*.ipynb")), ids=lambda p: p.stem)
def test_a_check_of_a_kept_measurement_is_kept_with_it(notebook: Path) -> None:
    assert not unmeasured_checks_of_measurements(notebook), (
        f"{notebook.name}: tag these check cells `measured` too, so that their lines come from the run the "
        f"page shows: {unmeasured_checks_of_measurements(notebook)}"
    )


def test_the_rule_finds_the_defect_it_was_written_for(tmp_path: Path) -> None:
    """Chapter 13's old layout: the times computed silently, shown by a measured cell, checked afresh."""

    def cell(source: str, tags: list[str], output: bool) -> dict:
        outputs = [{"output_type": "stream", "name": "stdout", "text": ["x\n"]}] if output else []
        return {"cell_type": "code", "metadata": {"tags": tags}, "source": source, "outputs": outputs}

    old = [
        cell("step_times = {1: measure(1), 16: measure(16)}", [], False),
        cell("print(step_times[16] / step_times[1])", [MEASURED], True),
        cell('expect_at_most("ratio", step_times[16] / step_times[1], 10)', ["hide-cell"], True),
    ]
    path = tmp_path / "old.ipynb"
    path.write_text(json.dumps({"cells": old}), encoding="utf-8")
    assert unmeasured_checks_of_measurements(path) == [
        "expect_at_most(\"ratio\", step_times[16] / step_times[1], 10) (reads ['step_times'])"
    ]
    old[2]["metadata"]["tags"].append(MEASURED)
    path.write_text(json.dumps({"cells": old}), encoding="utf-8")
    assert unmeasured_checks_of_measurements(path) == []
    shown = [cell("x = 1\nprint(x)", [], True), cell("print(x, time.time())", [MEASURED], True),
             cell('expect("x", x == 1, "")', [], True)]  # fmt: skip
    path.write_text(json.dumps({"cells": shown}), encoding="utf-8")
    assert unmeasured_checks_of_measurements(path) == [], "a number the page shows elsewhere is not a measurement"
