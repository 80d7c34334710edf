"""Otter-Grader master notebooks for one assignment: ``assignment --for otter OUT``.

Otter grades one notebook per assignment, so each exercise notebook of the assignment gets a folder
``OUT/<notebook>/`` holding what ``otter assign`` reads:

* ``<notebook>.ipynb``: the master notebook in Otter's format. Its first cell is the assignment's
  configuration (the files to hand out and to collect, the requirements, no PDF); each graded
  exercise is a question worth its points (its statement, its "try it" cell as Otter's solution with
  ``# BEGIN SOLUTION``/``# END SOLUTION`` lines, its test), each written question a manually graded
  question whose answer is Otter's solution cell.
* the student edition's package (``transformer_course/``), which students edit and hand in
  (``grader.export()`` puts their room files in the zip), and the course's check with its settings.
* ``requirements.txt``: the course's dependencies, with the CPU build of the PyTorch the course pins
  from PyTorch's own index, for the Gradescope image.

A test does not trust the notebook the student hands in (every cell of it is theirs under Otter):
it runs the course's check in a fresh Python on the course's files as the autograder keeps them
(``../source/files``) with the student's room files over them (:mod:`.course_check`). :func:`assign`
then runs ``otter assign`` (``dist/``: the student's notebook and the Gradescope autograder zip), and
:func:`check_outputs` searches what students get, and what their code runs beside on Gradescope, for
solution text.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import zipfile
from pathlib import Path

from transformer_course_tools.course import PACKAGE, TOOLS
from transformer_course_tools.exercises.hints import STUDENT_MARK
from transformer_course_tools.exercises.regions import CODE_STUB, TEXT_STUB, clear_text, solution_regions

from .assignment import (
    CHECK_MODULE,
    REQUIREMENTS,
    SETTINGS,
    Handout,
    Part,
    check_cell,
    notebook_parts,
    refuse_leaks,
    run_tool,
    split_question,
    write_package,
)

TRUSTED = "../source/files"  # where Otter's autograder keeps the files of its zip, from the submission's folder


def write_masters(root: Path, out: Path, handout: Handout) -> list[Path]:
    """Write one master folder per notebook of ``handout`` into ``out``; return the master notebooks."""
    import nbformat

    masters = []
    for stem in handout.notebooks:
        part = handout.only(stem)
        folder = out / stem
        folder.mkdir(parents=True)
        write_package(root, folder, part, trusted=TRUSTED)
        masters.append(folder / f"{stem}.ipynb")
        nbformat.write(master_notebook(root / "solutions" / f"{stem}.py", part), masters[-1])
    return masters


def master_notebook(path: Path, handout: Handout):  # noqa: ANN201 - an nbformat notebook
    """The worked notebook ``path`` in Otter's master format, for ``handout`` (one notebook's part)."""
    import jupytext
    import nbformat

    worked = jupytext.read(path)
    parts = [p for p in notebook_parts(path) if p.kind != "colab"]
    cells = [nbformat.v4.new_raw_cell(config_cell(handout)), *_cells(parts, handout)]
    metadata = {k: v for k, v in worked.metadata.items() if k != "jupytext"}
    return nbformat.v4.new_notebook(cells=cells, metadata=metadata)


def config_cell(handout: Handout) -> str:
    """The master's ``# ASSIGNMENT CONFIG`` cell (YAML; its strings quoted as JSON, which YAML reads)."""
    files = [PACKAGE, TOOLS, f"{CHECK_MODULE}.py", SETTINGS, STUDENT_MARK, REQUIREMENTS]
    instructions = f"Hand in the zip this cell makes: this notebook and {', '.join(handout.rooms)}."
    return "\n".join([
        "# ASSIGNMENT CONFIG",
        f"name: {json.dumps(handout.name)}",
        f"requirements: {REQUIREMENTS}",
        f'python_version: "{sys.version_info.major}.{sys.version_info.minor}"',
        "# Otter's own run of the tests on the solutions would need the worked room files in the autograder",
        "# zip, where students' code could read them: the course's tests grade a right answer with otter run.",
        "run_tests: false",
        "export_cell:",
        "  pdf: false",
        f"  files: {json.dumps(handout.rooms)}",
        f"  instructions: {json.dumps(instructions)}",
        "generate:",
        "  pdf: false",
        f"files: {json.dumps(files)}",
    ])  # fmt: skip


def _cells(parts: list[Part], handout: Handout) -> list:
    """The master's cells: a graded exercise's section as an Otter question (its statement and "try it"
    cell, then its test), each written question as a manual one, the rest as it is."""
    import nbformat

    raw, cells, done = nbformat.v4.new_raw_cell, [], set()
    for n, part in enumerate(parts):
        if part.kind == "text" and part.exercise in handout.exercises:
            end = _try_cell(parts, n)
            cells += [raw(f"# BEGIN QUESTION\nname: {part.exercise}\npoints: {handout.exercises[part.exercise]:g}"),
                      nbformat.v4.new_markdown_cell(part.source)]  # fmt: skip
            for inner in parts[n + 1 : end + 1]:
                cells += _solution(inner) if inner.kind == "try" else [_plain(inner)]
            cells += [raw("# BEGIN TESTS"), nbformat.v4.new_code_cell(check_cell(part.exercise, show=False)),
                      raw("# END TESTS"), raw("# END QUESTION")]  # fmt: skip
            done |= set(range(n, end + 1))
        elif n in done or part.kind == "check" and part.exercise in handout.exercises:
            continue
        elif part.kind == "question" and part.question in handout.questions:
            text, answer = split_question(part.source)
            cells += [raw(f"# BEGIN QUESTION\nname: {part.question}\nmanual: true\n"
                          f"points: {handout.questions[part.question]:g}"),
                      nbformat.v4.new_markdown_cell(text), raw("# BEGIN SOLUTION"),
                      nbformat.v4.new_markdown_cell(answer), raw("# END SOLUTION"), raw("# END QUESTION")]  # fmt: skip
        else:
            cells.append(_plain(part))
    return cells


def _try_cell(parts: list[Part], heading: int) -> int:
    """The index of the "try it" cell of the section that starts at ``heading`` (``heading`` if none)."""
    for m in range(heading + 1, len(parts)):
        if parts[m].kind in ("question", "check") or parts[m].kind == "text" and parts[m].exercise:
            break
        if parts[m].kind == "try":
            return m
    return heading


def _solution(part: Part) -> list:
    """A "try it" cell as Otter's solution: its region between Otter's own markers."""
    import nbformat

    lines = part.source.split("\n")
    for begin, end in solution_regions(part.source):
        lines[begin] = re.sub(r"###", "#", lines[begin], count=1)
        lines[end] = re.sub(r"###", "#", lines[end], count=1)
    raw = nbformat.v4.new_raw_cell
    return [raw("# BEGIN SOLUTION"), nbformat.v4.new_code_cell("\n".join(lines)), raw("# END SOLUTION")]


def _plain(part: Part):  # noqa: ANN202 - an nbformat cell
    """A part outside any question: as it is (a region of an exercise not graded here: cleared by us)."""
    import nbformat

    if part.kind in ("text", "question"):
        return nbformat.v4.new_markdown_cell(clear_text(part.source, TEXT_STUB))
    return nbformat.v4.new_code_cell(clear_text(part.source, CODE_STUB))


def assign(master: Path) -> tuple[Path, Path]:
    """Run ``otter assign`` on ``master`` (Otter in this Python) into ``dist/`` beside it; return the
    students' folder and the Gradescope autograder zip (:func:`check_outputs` searches both)."""
    folder = master.parent
    run_tool(["otter", "assign", master.name, "dist"], folder, f"otter assign {master.name}")
    student, zips = folder / "dist" / "student", sorted((folder / "dist" / "autograder").glob("*.zip"))
    if not student.is_dir() or len(zips) != 1:
        raise RuntimeError(f"otter assign {master.name} wrote no {student} or not one autograder zip")
    return student, zips[0]


def check_outputs(root: Path, outputs: list[tuple[Path, Path]]) -> None:
    """ValueError if solution text is in what students get or in what their code runs beside on
    Gradescope: each students' folder and autograder zip of ``outputs``."""
    with tempfile.TemporaryDirectory() as unpacked:
        trees = {}
        for n, (student, archive) in enumerate(outputs):
            with zipfile.ZipFile(archive) as opened:
                opened.extractall(Path(unpacked) / str(n))
            trees |= {student: f"Otter's students' folder {student}",
                      Path(unpacked) / str(n): f"Otter's autograder zip {archive}"}  # fmt: skip
        refuse_leaks(root, trees)
