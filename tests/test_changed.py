"""``make check-changed``: from the files changed, the lint and the tests that cover them, each with its
reason, read from the imports and the registrations (never from a table kept by hand)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_course_tools.authoring import changed
from transformer_course_tools.authoring.changed import Imports, changed_files, select
from transformer_course_tools.exercises.checks import EXERCISES
from transformer_course_tools.exercises.checks.registry import load_checks

ROOT = Path(__file__).resolve().parent.parent
load_checks()
ATTENTION = sorted(ex.id for ex in EXERCISES.values() if ex.module == "transformer_course.attention")  # ex03_…


@pytest.fixture(scope="module")
def imports() -> Imports:
    return Imports(ROOT)


def _chosen(files: list[str], imports: Imports, deep: bool = False) -> dict[tuple[str, str], str]:
    return {(c.kind, c.target): c.reason for c in select(ROOT, files, deep=deep, imports=imports)}


def test_a_room_selects_its_tests_the_notebooks_that_import_it_and_its_exercises(imports: Imports) -> None:
    chosen = _chosen(["transformer_course/attention.py"], imports)
    assert chosen[("test", "tests/test_attention.py")] == (
        "imports transformer_course.attention (transformer_course/attention.py changed)"
    )
    # chapter 03 imports attention_scores from the package: the name counts for the room that defines it
    assert ("nbval", "chapters/03_attention.ipynb") in chosen and ("nbval", "solutions/ex03_attention.ipynb") in chosen
    marked = sorted(t for k, t in chosen if k == "marked")
    assert marked == ATTENTION and len(marked) >= 4, marked  # every exercise whose answer is there
    assert chosen[("marked", "ex03_2")] == "its answer is in transformer_course/attention.py (changed)"
    assert ("nbval", "chapters/08_training.ipynb") not in chosen, "a chapter that does not import it directly"
    assert ("test", "tests/test_model.py") not in chosen
    deep = _chosen(["transformer_course/attention.py"], imports, deep=True)
    assert ("test", "tests/test_model.py") in deep and ("nbval", "chapters/08_training.ipynb") in deep
    assert deep[("test", "tests/test_model.py")].startswith("imports transformer_course.")  # through the model
    assert ("marked", "ex04_3") in deep  # multihead.py, which imports attention, holds its answer


def test_a_check_an_attempt_and_a_chapter(imports: Imports) -> None:
    check = _chosen(["transformer_course_tools/exercises/checks/ch13.py"], imports)
    chapter_13 = sorted(ex.id for ex in EXERCISES.values() if ex.chapter == "13")  # every check in ch13.py
    assert len(chapter_13) >= 5 and sorted(t for k, t in check if k == "marked") == chapter_13
    assert ("nbval", "solutions/ex13_modern_language_models.ipynb") in check  # its check cells
    attempt = _chosen(["tests/attempts/ex09_3.py"], imports)
    attempt.pop(("test", "tests/test_changed.py"), None)  # this file names it
    assert list(attempt) == [("marked", "ex09_3")], attempt  # the notebooks run the answer, not the attempts
    chapter = _chosen(["chapters/05_encoder.py"], imports)
    assert chapter[("nbval", "chapters/05_encoder.ipynb")] == "chapters/05_encoder.py changed"
    assert ("test", "tests/test_notebooks.py") in chapter  # it reads every chapter
    assert not [t for k, t in chapter if k == "nbval" and t != "chapters/05_encoder.ipynb"]


def _write(root: Path, files: dict[str, str]) -> None:
    """A tiny course: each file (a path relative to ``root``) with its text."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_a_module_no_test_imports_selects_the_tests_of_its_importers(tmp_path: Path) -> None:
    """A tiny course: the package's name leads to its room, a test that imports nothing of a module gets
    it through the module that imports it, and a new test file is chosen once it imports the room."""
    files = {
        "transformer_course/__init__.py": '_EXPORTS: dict[str, str] = {"scores": "attention"}\n',
        "transformer_course/_validate.py": "def check(x):\n    return x\n",
        "transformer_course/attention.py": "from ._validate import check\n\ndef scores(q):\n    return check(q)\n",
        "tests/test_scores.py": "from transformer_course import scores\n",
        "tests/test_other.py": "import math\n",
        "chapters/01_a.py": "# %%\nfrom transformer_course import scores\n",
        "chapters/01_a.ipynb": "{}",
    }
    _write(tmp_path, files)
    chosen = {(c.kind, c.target): c.reason for c in select(tmp_path, ["transformer_course/_validate.py"])}
    assert chosen == {
        ("test", "tests/test_scores.py"): "imports transformer_course.attention, which imports "
        "transformer_course._validate (transformer_course/_validate.py changed)",
        ("nbval", "chapters/01_a.ipynb"): "imports transformer_course.attention, which imports "
        "transformer_course._validate (transformer_course/_validate.py changed)",
    }
    (tmp_path / "tests" / "test_other.py").write_text("from transformer_course.attention import scores\n")
    again = select(tmp_path, ["transformer_course/attention.py"])
    assert [c.target for c in again] == ["tests/test_other.py", "tests/test_scores.py", "chapters/01_a.ipynb"]


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    run = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=True)
    return run.stdout


def test_the_changed_files_are_the_commits_the_edits_and_the_new_files(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q", "-b", "main")
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text("x = 1\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    _git(tmp_path, "checkout", "-qb", "work")
    (tmp_path / "a.py").write_text("x = 2\n")
    _git(tmp_path, "commit", "-qam", "a commit on the branch")
    (tmp_path / "b.py").write_text("x = 3\n")  # an edit not committed
    (tmp_path / "d.py").write_text("y = 1\n")  # a file git does not know
    _git(tmp_path, "mv", "c.py", "e.py")  # a rename: both names
    assert changed.default_base(tmp_path) == "main"
    assert changed_files(tmp_path, "main") == ["a.py", "b.py", "c.py", "d.py", "e.py"]
    assert changed_files(tmp_path, "HEAD") == ["b.py", "c.py", "d.py", "e.py"]
    with pytest.raises(ValueError, match="--base 'nowhere' is not a revision"):
        changed_files(tmp_path, "nowhere")


def test_the_command_lists_its_choices_and_refuses_a_bad_base() -> None:
    command = [sys.executable, "-m", "transformer_course_tools.authoring.changed"]
    bad = subprocess.run([*command, "--base", "no-such-revision"], cwd=ROOT, capture_output=True, text=True)
    assert (
        bad.returncode == 2
        and bad.stderr == "changed: --base 'no-such-revision' is not a revision of this repository\n"
    )
    assert "Traceback" not in bad.stderr
    listed = subprocess.run([*command, "--list", "--base", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert "file(s) changed against HEAD" in listed.stdout.splitlines()[0]


def test_the_commands_lint_the_python_files_and_run_the_choices(imports: Imports) -> None:
    files = ["transformer_course/attention.py", "tests/attempts/ex03_1.py", "README.md"]
    lint = changed.lint_commands(ROOT, files, "ruff")
    assert lint == [["ruff", "check", "--force-exclude", *files[1::-1]],
                    ["ruff", "format", "--check", "--force-exclude", *files[1::-1]]]  # fmt: skip
    choices = select(ROOT, files, imports=imports)
    run, marked = changed.pytest_commands(ROOT, choices, "python", ["-x"])
    assert run[:4] == ["python", "-m", "pytest", "-x"] and "tests/test_attention.py" in run
    assert run[-len(changed.NBVAL) :] == changed.NBVAL and "chapters/03_attention.ipynb" in run
    assert marked[-2:] == ["-m", " or ".join(ATTENTION)]
    assert "tests/test_attempts.py" in marked and "tests/test_exercises.py" in marked


def test_exports_written_by_make_exercises_select_test_build_not_every_importer(
    tmp_path: Path, imports: Imports
) -> None:
    init = tmp_path / "transformer_course" / "__init__.py"
    init.parent.mkdir()
    head = '"""The package."""\nfrom typing import TYPE_CHECKING\n\n'
    table = (
        '_EXPORTS: dict[str, str] = {"scores": "attention"}\n\nif TYPE_CHECKING:\n    from .attention import scores\n'
    )
    init.write_text(head + table + "\nX = 1\n")
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    grown = table.replace('"attention"}', '"attention", "rms": "rmsnorm"}') + "    from .rmsnorm import rms\n"
    init.write_text(head + grown + "\nX = 1\n")  # what make exercises writes for a new exercise
    assert changed.exports_only(tmp_path, "main", ["transformer_course/__init__.py"]) == {
        "transformer_course/__init__.py"
    }
    init.write_text(head + grown + "\nX = 2\n")  # and a hand-written change besides
    assert changed.exports_only(tmp_path, "main", ["transformer_course/__init__.py"]) == set()
    files = ["transformer_course/__init__.py"]
    made = {(c.kind, c.target) for c in select(ROOT, files, imports=imports, made=files)}
    assert made == {("test", "tests/test_build.py")}
    assert len(select(ROOT, files, imports=imports)) > 10  # otherwise every importer of the package


def test_make_exercises_runs_the_attempts_of_an_exercise_edited_since_the_last_commit(tmp_path: Path) -> None:
    """``make exercises`` runs an exercise's wrong and right answers when its attempts file, its check
    module or its answer's room was edited or is new: a wrong attempt is found by that command."""
    from transformer_course_tools.authoring.build import edited_exercise_files, edited_exercises

    files = {
        "transformer_course_tools/exercises/checks/ch07.py": (
            '@exercise("ex07_1", "transformer_course.counting:a", "easy")\n'
            '@exercise("ex07_2", "transformer_course.counting:b", "easy")\n'
        ),
        "transformer_course_tools/exercises/checks/ch08.py": '@exercise("ex08_1", "transformer_course.schedule:c", "easy")\n',
        "transformer_course/counting.py": "def a(): ...\n",
        "transformer_course/schedule.py": "def c(): ...\n",
        "tests/attempts/ex07_1.py": "",
        "tests/attempts/ex08_1.py": "",
    }
    _write(tmp_path, files)
    exercises = dict.fromkeys(("ex07_1", "ex07_2", "ex08_1"))
    assert edited_exercises(tmp_path, exercises) == {}  # not a git clone: nothing to compare with
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    assert edited_exercises(tmp_path, exercises) == {}  # all committed
    (tmp_path / "tests/attempts/ex07_1.py").write_text("x = 1\n")  # an edit
    (tmp_path / "tests/attempts/ex07_2.py").write_text("")  # a new file
    assert edited_exercises(tmp_path, exercises) == {
        "ex07_1": "tests/attempts/ex07_1.py", "ex07_2": "tests/attempts/ex07_2.py"
    }  # fmt: skip
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "attempts")
    (tmp_path / "transformer_course/schedule.py").write_text("def c(): return 1\n")  # the room of ex08_1's answer
    assert edited_exercises(tmp_path, exercises) == {"ex08_1": "transformer_course/schedule.py"}
    (tmp_path / "transformer_course_tools/exercises/checks/ch07.py").write_text(files[
        "transformer_course_tools/exercises/checks/ch07.py"] + "# edited\n")  # fmt: skip
    assert set(edited_exercises(tmp_path, exercises)) == {"ex07_1", "ex07_2", "ex08_1"}
    (tmp_path / "tests/attempts/ex07_1.py").write_text("x = 2\n")
    assert edited_exercise_files(tmp_path, exercises)["ex07_1"] == [  # every one is linted, not only the first
        "tests/attempts/ex07_1.py", "transformer_course_tools/exercises/checks/ch07.py"
    ]  # fmt: skip
    shutil.rmtree(tmp_path / "tests" / "attempts")  # the student edition: no attempts to run
    assert edited_exercises(tmp_path, exercises) == {}


def test_make_exercises_runs_the_prose_tests_of_an_edited_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once nothing is missing, ``make exercises`` runs the prose tests (a number the prose states that no
    output holds, study 53G) of each chapter and solutions notebook edited since the last commit."""
    from transformer_course_tools.cli import exercises as command

    _write(tmp_path, {"chapters/03_attention.py": "", "solutions/ex03_attention.py": "",
                      "tests/test_prose_numbers.py": "", "book/index.md": ""})  # fmt: skip
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    runs = []
    monkeypatch.setattr(command, "_pytest_failed", lambda root, selection, counted: runs.append(selection) or True)
    assert not command._prose_failed(tmp_path) and not runs  # nothing edited
    (tmp_path / "solutions/ex03_attention.py").write_text("# 10000 steps\n")
    (tmp_path / "book/index.md").write_text("edited\n")  # not a notebook
    assert command._prose_failed(tmp_path)
    assert runs == [["-k", "ex03_attention", *command._PROSE_TESTS]]
