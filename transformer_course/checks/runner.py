"""Running checks: one exercise (notebook check cells, pytest) or all of them (the CLI table)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from ._tools import CheckFailure
from .registry import EXERCISES, Exercise

PASSED, FAILED, NOT_IMPLEMENTED, ERROR = "passed", "failed", "not implemented", "error"
SYMBOLS = {PASSED: "✅", FAILED: "❌", NOT_IMPLEMENTED: "⏳", ERROR: "💥"}


@dataclass
class CheckResult:
    id: str
    title: str
    status: str
    message: str

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def line(self) -> str:
        return f"{SYMBOLS.get(self.status, '?')} {self.id} {self.title}: {self.status} — {self.message}"


def get_exercise(exercise_id: str) -> Exercise:
    _load_all()
    if exercise_id not in EXERCISES:
        known = ", ".join(sorted(EXERCISES))
        raise KeyError(f"unknown exercise {exercise_id!r}; known exercises: {known}")
    return EXERCISES[exercise_id]


def run_check(exercise_id: str, impl: Callable | None = None) -> CheckResult:
    """Check ``impl`` (default: the function now in the package) and never raise."""
    ex = get_exercise(exercise_id)
    try:
        impl = ex.resolve() if impl is None else impl
        torch.manual_seed(0)
        n_cases = ex.check(impl)
    except NotImplementedError as error:
        message = str(error) or f"{ex.qualname} raises NotImplementedError: edit {ex.file}"
        return CheckResult(ex.id, ex.title, NOT_IMPLEMENTED, message)
    except CheckFailure as error:
        return CheckResult(ex.id, ex.title, FAILED, str(error))
    except Exception as error:  # a bug in the check itself or in code the exercise relies on
        return CheckResult(ex.id, ex.title, ERROR, f"{type(error).__name__}: {error}")
    return CheckResult(ex.id, ex.title, PASSED, f"{n_cases} cases")


def check(exercise_id: str) -> CheckResult:
    """For a notebook's check cell: run the check and print one line saying what is wrong."""
    result = run_check(exercise_id)
    print(result.line())
    return result


def run_checks(ids: Iterable[str] | None = None) -> list[CheckResult]:
    _load_all()
    return [run_check(i) for i in (sorted(EXERCISES) if ids is None else ids)]


def _load_all() -> None:
    """Import every chapter's check module so that its exercises are registered."""
    from . import chapters  # noqa: F401
