"""``pytest -m ex05_1``: one test item per exercise, titled by the exercise, whose failure is the check's line.

``tests/test_exercises.py`` holds ``CHECKS = ExerciseChecks()``; the conftest's collection hook turns it
into one :class:`ExerciseCheck` per exercise (``tests/test_exercises.py::ex05_1``), marked with the
exercise's id. Collecting them imports no room: a room that does not compile fails its own exercises'
items with one line, and the rest still run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from transformer_course_tools.exercises.checks.registry import EXERCISES, load_checks


class ExerciseChecks:
    """Stands where the items go (see the module)."""


class NotPassed(Exception):
    """An exercise's check did not pass; its line is the failure."""


class ExerciseCheck(pytest.Item):
    """The check of one exercise, as ``python -m transformer_course check`` runs it."""

    def __init__(self, *, exercise_id: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.exercise_id = exercise_id
        self.add_marker(exercise_id)

    def runtest(self) -> None:
        from transformer_course_tools.exercises.checks import run_check

        result = run_check(self.exercise_id)
        if not result.passed:
            raise NotPassed(result.line())

    def repr_failure(self, excinfo: pytest.ExceptionInfo, style=None) -> str:  # noqa: ANN001 - pytest's signature
        if isinstance(excinfo.value, NotPassed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.exercise_id} {EXERCISES[self.exercise_id].title}"


def exercise_items(collector: pytest.Collector) -> list[ExerciseCheck]:
    load_checks()
    return [ExerciseCheck.from_parent(collector, name=i, exercise_id=i) for i in sorted(EXERCISES)]
