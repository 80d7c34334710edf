"""Shared test set-up: one pytest marker per exercise (``pytest -m ex03_1``), seeded torch.

In the student edition (``.student-edition.json`` at the root), the tests of grading and authoring are not
collected (the edition leaves that code out), tests marked ``complete_edition``
(they need the solutions or the wrong answers of tests/attempts) are skipped, and a test that stops at an exercise the
student has not written yet is reported as skipped, naming the exercise, instead of failing.

``pytest -m ex03_1`` (exercise ids only, joined by ``or``) collects only the files that hold exercise items
(``tests/test_exercises.py``: one per exercise, :mod:`.exercise_items`), so it takes seconds. A file of the
package that does not compile is one line: the items of its exercises say it, and any other run stops at
the start saying it.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest
import torch

from transformer_course_tools.exercises.checks.registry import EXERCISES, load_checks, parse_stub_message
from transformer_course_tools.exercises.edition import is_student_edition
from transformer_course_tools.exercises.saved import AGAIN, broken_files

from .exercise_items import ExerciseChecks, exercise_items

STUDENT_EDITION = is_student_edition(Path(__file__).resolve().parent.parent)
# The student edition holds no grading or authoring code: the tests that import it are not collected there.


def pytest_configure(config: pytest.Config) -> None:
    # where a student edition made by a test is remembered (restore's record): a folder of this run, not the home's
    state = tempfile.TemporaryDirectory(prefix="transformer-course-state-")  # removed when pytest ends
    config.add_cleanup(state.cleanup)
    os.environ["XDG_STATE_HOME"] = state.name
    load_checks()
    for exercise_id, ex in sorted(EXERCISES.items()):
        config.addinivalue_line("markers", f"{exercise_id}: exercise {exercise_id} — {ex.title}")
    config.addinivalue_line("markers", "complete_edition: needs the solutions (skipped in the student edition)")


_EXERCISES_ONLY = re.compile(r"\s*ex\d\d_\d+(\s+or\s+ex\d\d_\d+)*\s*")


def _chosen_exercises(config: pytest.Config) -> set[str] | None:
    """The exercises ``-m`` names when it names exercises only (``-m "ex03_1 or ex03_2"``), else None."""
    expression = config.getoption("markexpr", default="") or ""
    return set(re.findall(r"ex\d\d_\d+", expression)) if _EXERCISES_ONLY.fullmatch(expression) else None


def pytest_sessionstart(session: pytest.Session) -> None:
    if _chosen_exercises(session.config) is None:
        broken = broken_files()
        if broken:
            raise pytest.UsageError(f"{broken[0]}: {AGAIN['pytest']}.")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """In the student edition, the tests of the grading and authoring code it leaves out are not collected.
    With ``-m`` naming exercises only, a test file that marks no exercise is not even imported (a file
    given on the command line always is): a learner's ``pytest -m exNN_k`` runs the exercise's checks, and
    the course's deeper tests of it (``per_exercise(…)``: its isolation, the engine) run where they are named,
    as ``make exercises`` names them."""
    if _instructors_test(collection_path):
        return True
    chosen = _chosen_exercises(config)
    if chosen is None or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    if any(Path(arg.split("::")[0]).resolve() == collection_path.resolve() for arg in config.args):
        return None
    text = collection_path.read_text(encoding="utf-8", errors="replace")
    marks = ("ExerciseChecks()", "getattr(pytest.mark, ", *(f"mark.{i}" for i in chosen))
    return None if any(mark in text for mark in marks) else True


def _instructors_test(path: Path) -> bool:
    if not (STUDENT_EDITION and path.suffix == ".py" and path.is_file()):
        return False
    text = path.read_text(encoding="utf-8", errors="replace")
    top_level = r"^(from|import) transformer_course_tools\.(grading|authoring)\b|^from transformer_course_tools import .*\b(grading|authoring)\b"
    return bool(re.search(top_level, text, flags=re.MULTILINE))  # what importing the file would import


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> list | None:
    return exercise_items(collector) if isinstance(obj, ExerciseChecks) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if STUDENT_EDITION:
        skip = pytest.mark.skip(reason="needs the complete edition (solutions, wrong answers)")
        for item in items:
            if "complete_edition" in item.keywords:
                item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if STUDENT_EDITION and report.failed and call.excinfo and call.excinfo.errisinstance(NotImplementedError):
        stub = parse_stub_message(str(call.excinfo.value))
        if stub:
            report.outcome = "skipped"
            report.longrepr = (str(item.path), item.location[1] or 0, f"waits for {stub[0]}: write it in {stub[2]}")


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)
