"""Notebook hygiene: every .py/.ipynb pair is in sync, exercises/ is generated from solutions/,
and every chapter has the parts a learner relies on."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import jupytext
import nbformat
import pytest

from transformer_course_tools.exercises.edition import BEGIN, clear_notebook, write_exercises

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("chapters", "solutions", "exercises")
SOURCES = sorted(p for folder in FOLDERS for p in (ROOT / folder).glob("*.py"))
CHAPTERS = sorted((ROOT / "chapters").glob("*.py"))


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("source", SOURCES, ids=_rel)
def test_pair_is_in_sync(source: Path) -> None:
    paired = source.with_suffix(".ipynb")
    assert paired.exists(), f"{_rel(source)} has no paired .ipynb: run `make notebooks`"
    regenerated = jupytext.writes(jupytext.read(paired), "py:percent")
    assert regenerated == source.read_text(encoding="utf-8"), (
        f"{_rel(source)} and its .ipynb differ: edit the .py, then run `make notebooks NB={_rel(source)}`"
    )


def test_a_notebooks_kernel_imports_this_clones_course() -> None:
    """nbval's kernels inherit pytest's environment, and the root conftest puts this clone on PYTHONPATH: in a
    second clone that shares a virtual environment, a notebook runs that clone's course, not the installed one."""
    assert str(ROOT) in os.environ.get("PYTHONPATH", "").split(os.pathsep)


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_unpaired_ipynb(folder: str) -> None:
    for notebook in (ROOT / folder).glob("*.ipynb"):
        assert notebook.with_suffix(".py").exists(), f"{_rel(notebook)} has no .py source"


@pytest.mark.parametrize("source", sorted((ROOT / "solutions").glob("*.py")), ids=_rel)
def test_exercises_are_generated_from_solutions(source: Path) -> None:
    expected = clear_notebook(jupytext.read(source))
    target = ROOT / "exercises" / source.name
    assert target.exists(), f"{_rel(target)} is missing: run `make exercises`"
    assert target.read_text(encoding="utf-8") == jupytext.writes(expected, "py:percent"), (
        f"{_rel(target)} is out of date: run `make exercises` (never edit exercises/ by hand)"
    )
    assert BEGIN not in target.read_text(encoding="utf-8")


def test_regenerating_the_exercises_changes_nothing(tmp_path: Path) -> None:
    """`make exercises` on unchanged solutions is a no-op: cells keep their ids (no churn in git)."""
    shutil.copytree(ROOT / "exercises", tmp_path / "exercises")
    assert write_exercises(ROOT / "solutions", tmp_path / "exercises") == [], "it lists the files it changed"
    for path in sorted((ROOT / "exercises").iterdir()):
        assert (tmp_path / "exercises" / path.name).read_bytes() == path.read_bytes(), f"{_rel(path)} changed"


@pytest.mark.parametrize("source", sorted((ROOT / "solutions").glob("*.py")) + CHAPTERS, ids=_rel)
def test_notebook_has_committed_outputs(source: Path) -> None:
    notebook = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code and all(c.execution_count is not None for c in code), (
        f"{_rel(source)}: run `make notebooks NB={_rel(source)}` to store its outputs"
    )


@pytest.mark.parametrize("source", CHAPTERS, ids=_rel)
def test_chapter_has_the_parts_a_learner_relies_on(source: Path) -> None:
    text = source.read_text(encoding="utf-8")
    assert "colab.research.google.com" in text, "an 'Open in Colab' badge"
    assert '"google.colab" in sys.modules' in text, "a first cell that installs the package on Colab only"
    assert "Learning goals" in text
    assert "Common mistake" in text, "a 'common mistakes' box that runs a typical bug"
    number = source.name[:2]
    if any((ROOT / "solutions").glob(f"ex{number}_*.py")):
        assert f"exercises/ex{number}_" in text, "a pointer to the chapter's exercises"
    else:
        assert "has no exercises of its own" in text, "a chapter without exercises says so"
    assert "kernelspec" in text
    assert "\narchitecture_map(" in text, "the map of the model near the top, with the chapter's part highlighted"
    assert "## Check yourself" in text and "<details>" in text, "self-check questions with folded answers"
    assert "## Further reading" in text and "§" in text.split("## Further reading")[1], "further reading (the paper)"


@pytest.mark.parametrize(
    "notebook",
    sorted(p for folder in ("chapters", "exercises", "solutions") for p in (ROOT / folder).glob("*.ipynb")),
    ids=lambda p: f"{p.parent.name}/{p.stem}",
)
def test_jupyterlab_folds_what_the_web_edition_folds(notebook: Path) -> None:
    """The Colab cell, the set-up and the check lines are folded in JupyterLab too (cell metadata
    ``jupyter`` written from the tags by transformer_course_tools/authoring/folds.py)."""
    import nbformat

    fold = pytest.importorskip("transformer_course_tools.authoring.folds", reason="authoring code").fold
    assert not fold(nbformat.read(notebook, as_version=4)), (
        f"{notebook.name}: its folds do not match its tags: python -m transformer_course_tools.authoring.folds {notebook}"
    )
