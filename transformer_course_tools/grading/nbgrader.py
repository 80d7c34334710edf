"""An nbgrader course folder for one assignment: ``assignment --for nbgrader OUT``.

What nbgrader needs, and how the course fills it:

* ``OUT/nbgrader_config.py``: the stubs our exercise notebooks show (``ClearSolutions``), the files the
  students write (``Autograde.exclude_overwriting``: autograde keeps those and restores every other
  file of the source over the student's copy, the checks included), graded cells put back when a
  student deleted one, and a cell time limit long enough for a check.
* ``OUT/source/<name>/``: the worked notebooks as nbgrader cells (the set-up, statements and ungraded
  check cells locked; each "try it" cell a solution cell; each written question a manually graded
  answer; each graded exercise's check cell an autograded test worth its points), and the student
  edition's package, which students edit: their rooms are the package's files, as in the student
  edition, so the chapters and check cells run on their code.
* The test cells do not trust the student's kernel: each runs the course's check in a fresh Python on a
  clean copy of the package (:mod:`.course_check`).

:func:`write_course` writes the folder; nbgrader's ``generate_assignment`` then writes ``release/``,
which :func:`generate` searches for solution text before it is kept.
"""

from __future__ import annotations

from pathlib import Path

from transformer_course_tools.exercises.regions import CODE_STUB, TEXT_STUB, clear_text

from .assignment import (
    Handout,
    Part,
    check_cell,
    longest_check_s,
    notebook_parts,
    refuse_leaks,
    run_tool,
    write_package,
)

COURSE_ID = "transformer-course"
NOTEBOOK_S = 600  # beyond the longest check, what a cell of an exercise notebook may take


def write_course(root: Path, out: Path, handout: Handout) -> Path:
    """Write the nbgrader course folder for ``handout`` into ``out``; return the assignment's source folder."""
    import nbformat

    source = out / "source" / handout.name
    source.mkdir(parents=True)
    write_package(root, source, handout)
    for stem in handout.notebooks:
        notebook = assignment_notebook(root / "solutions" / f"{stem}.py", handout)
        nbformat.write(notebook, source / f"{stem}.ipynb")
    (out / "nbgrader_config.py").write_text(config_text(handout), encoding="utf-8")
    return source


def assignment_notebook(path: Path, handout: Handout):  # noqa: ANN201 - an nbformat notebook
    """The worked notebook ``path`` as nbgrader's source notebook of ``handout``."""
    import jupytext
    import nbformat

    worked = jupytext.read(path)
    cells = [_cell(part, n, path.stem, handout) for n, part in enumerate(notebook_parts(path)) if part.kind != "colab"]
    cells.insert(1, _locked(nbformat.v4.new_markdown_cell(_NOTE.format(name=handout.name)), f"{path.stem}_note"))
    metadata = {k: v for k, v in worked.metadata.items() if k != "jupytext"}
    return nbformat.v4.new_notebook(cells=cells, metadata=metadata)


_NOTE = """\
> **Assignment {name}, graded with nbgrader.** Write each exercise in the package file its section
> names (`transformer_course/…` in this folder: yours to edit, and what runs here), and answer the
> written questions in this notebook. The cells marked *Graded* run the course's check on your file,
> as the autograder will; every other file of the folder is put back as handed out when it grades."""


def _cell(part: Part, n: int, stem: str, handout: Handout):  # noqa: ANN202 - an nbformat cell
    """One part as an nbgrader cell: graded, an answer, or locked."""
    import nbformat

    new = nbformat.v4.new_markdown_cell if part.kind in ("text", "question") else nbformat.v4.new_code_cell
    if part.kind == "check" and part.exercise in handout.exercises:
        cell = new(check_cell(part.exercise))
        return _meta(cell, part.exercise, grade=True, locked=True, points=handout.exercises[part.exercise])
    if part.kind == "question" and part.question in handout.questions:
        return _meta(
            new(part.source), part.question, grade=True, solution=True, points=handout.questions[part.question]
        )
    if part.kind == "question":  # not graded here: cleared as in the exercise notebooks, the student's to fill
        return new(clear_text(part.source, TEXT_STUB))
    if part.kind == "try":
        return _meta(new(part.source), f"{stem}_try_{n}", solution=True)
    return _locked(new(part.source), f"{stem}_{part.kind}_{n}")


def _locked(cell, grade_id: str):  # noqa: ANN001, ANN202 - an nbformat cell
    return _meta(cell, grade_id, locked=True)


def _meta(
    cell, grade_id: str, grade: bool = False, solution: bool = False, locked: bool = False, points: float | None = None
):  # noqa: ANN001, ANN202 - an nbformat cell
    """nbgrader's metadata (schema 3) on ``cell``; a locked cell can be neither edited nor deleted."""
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
            "task": False}  # fmt: skip
    if grade:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    if locked:
        cell.metadata.update(editable=False, deletable=False)
    return cell


def config_text(handout: Handout) -> str:
    """``nbgrader_config.py`` for ``handout``."""
    rooms = ", ".join(f'"{r}"' for r in handout.rooms)
    return f'''"""nbgrader's settings for the Transformer course's assignment {handout.name}
(written by `python -m transformer_course assignment --for nbgrader`)."""

c = get_config()  # noqa: F821 - nbgrader's loader defines it
c.CourseDirectory.course_id = "{COURSE_ID}"
# The solution regions become what the course's own exercise notebooks show.
c.ClearSolutions.code_stub = {{"python": "{CODE_STUB}"}}
c.ClearSolutions.text_stub = "{TEXT_STUB}"
# Autograde keeps the files the students write and restores every other file of source/{handout.name}/
# (the course's checks among them) over the student's copy.
c.Autograde.exclude_overwriting = {{"{handout.name}": [{rooms}]}}
# A graded cell that a student deleted is put back, and run, instead of missing from the grade.
c.OverwriteCells.add_missing_cells = True
# Seconds a cell may run: the longest check (its limit and Python's start-up), and then some.
c.Execute.timeout = {round(longest_check_s(handout) + NOTEBOOK_S)}
'''


def generate(out: Path, handout: Handout, root: Path) -> Path:
    """Run nbgrader's ``generate_assignment`` in ``out`` (nbgrader in this Python) and refuse a release
    that holds solution text; return the release folder."""
    run_tool(["nbgrader", "generate_assignment", handout.name], out, f"nbgrader generate_assignment {handout.name}")
    release = out / "release" / handout.name
    if not release.is_dir():
        raise RuntimeError(f"nbgrader generate_assignment {handout.name} wrote no {release}")
    refuse_leaks(root, {release: f"nbgrader's release {release}"})
    return release
