"""Running checks: one exercise (notebook check cells, pytest) or all of them (the CLI table)."""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch

from ._tools import CheckFailure
from .isolation import Isolation
from .registry import EXERCISES, Exercise
from .status import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, SYMBOLS, TIMED_OUT


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
    if exercise_id not in EXERCISES:
        _load_chapter(exercise_id)
    if exercise_id not in EXERCISES:
        _load_all()
    if exercise_id not in EXERCISES:
        known = ", ".join(sorted(EXERCISES))
        raise KeyError(f"unknown exercise {exercise_id!r}; known exercises: {known}")
    return EXERCISES[exercise_id]


def run_check(exercise_id: str, impl: Callable | None = None, timeout: float | None = None) -> CheckResult:
    """Check ``impl`` (default: the function now in the package) and never raise.

    Only ``impl`` is tested: where it calls another exercise, the course's stand-in runs instead
    (see :mod:`.isolation`), so a mistake in one exercise fails that exercise's check alone.

    With ``timeout`` (seconds) the check runs in a background thread; if it has not finished
    in time the result is "timed out" (the thread is left behind: run checks that may hang
    in a process you can stop, as the CLI's ``check`` and the grader do).
    """
    if timeout is None:
        return _run_check(exercise_id, impl)
    ex = get_exercise(exercise_id)
    box: list[CheckResult] = []
    thread = threading.Thread(target=lambda: box.append(_run_check(exercise_id, impl)), daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive() or not box:
        return CheckResult(ex.id, ex.title, TIMED_OUT, f"still running after {timeout:g} s (an infinite loop?)")
    return box[0]


def _run_check(exercise_id: str, impl: Callable | None) -> CheckResult:
    ex = get_exercise(exercise_id)
    try:
        impl = ex.resolve() if impl is None else impl
        torch.manual_seed(0)
        n_cases = ex.check(Isolation(ex.id).wrap(impl))  # other exercises run as the course's stand-ins
    except NotImplementedError as error:
        message = str(error) or f"{ex.qualname} raises NotImplementedError: edit {ex.file}"
        return CheckResult(ex.id, ex.title, NOT_IMPLEMENTED, message)
    except CheckFailure as error:
        return CheckResult(ex.id, ex.title, FAILED, str(error))
    except SystemExit as error:  # sys.exit() in the code under test must not end the notebook or the table
        return CheckResult(ex.id, ex.title, ERROR, f"the code called sys.exit({error.code!r})")
    except Exception as error:  # a bug in the check itself or in code the exercise relies on
        return CheckResult(ex.id, ex.title, ERROR, f"{type(error).__name__}: {error}")
    return CheckResult(ex.id, ex.title, PASSED, f"{n_cases} cases")


def check(exercise_id: str) -> None:
    """For a notebook's check cell: run the check and print one line saying what is wrong.

    Returns nothing (so a notebook shows the line once); use :func:`run_check` for the result.
    """
    _warn_if_checking_another_copy()
    print(run_check(exercise_id).line())


def run_checks(ids: Iterable[str] | None = None, timeout: float | None = None) -> list[CheckResult]:
    _load_all()
    return [run_check(i, timeout=timeout) for i in (sorted(EXERCISES) if ids is None else ids)]


def _load_chapter(exercise_id: str) -> None:
    """Import only the check module of the exercise's chapter (``ex03_2`` → ``ch03``), so that a
    broken module of another chapter cannot stop this check."""
    match = re.fullmatch(r"ex(\d\d)_\d+", exercise_id)
    if match:
        try:
            importlib.import_module(f"{__package__}.ch{match.group(1)}")
        except ModuleNotFoundError as error:
            if error.name != f"{__package__}.ch{match.group(1)}":
                raise


def _load_all() -> None:
    """Import every chapter's check module so that its exercises are registered."""
    from . import chapters  # noqa: F401


_warned = False


def _warn_if_checking_another_copy() -> None:
    """A notebook opened in one copy of the course (say the student edition) while Python imports
    the package of another (the complete edition, installed with ``pip install -e``) would check
    the wrong code: say so once."""
    global _warned
    here = Path(__file__).resolve().parents[2]  # the package being checked
    for folder in (Path.cwd(), *Path.cwd().parents):
        candidate = folder / "transformer_course" / "__init__.py"
        if candidate.is_file():
            if candidate.resolve().parent != here and not _warned:
                _warned = True
                print(
                    f"warning: this notebook lives in {folder}, but Python imports transformer_course from {here.parent}: "
                    f"your edits in {folder} are not what runs. Run `pip install -e {folder}` and restart the kernel."
                )
            return
