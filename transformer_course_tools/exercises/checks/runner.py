"""Running checks: one exercise (notebook check cells, pytest) or all of them (the CLI table).

Locally a check's three parts run in this process: its cases are built, each is probed on the
learner's function (with every *other* exercise replaced by its stand-in) and judged; every case
runs, whatever the others did, and the first wrong answer is the message (with the count of cases
passed, which partial credit reads). The grader serves the same :func:`verdict` with what a
sandboxed child sent back instead (``transformer_course_tools/grading.pyworkers.py``).
"""

from __future__ import annotations

import contextvars
import inspect
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch

from transformer_course_tools.course import PACKAGE, package_dir
from transformer_course_tools.exercises.hints import hint_level, is_student_edition
from transformer_course_tools.exercises.probe.calls import run_case
from transformer_course_tools.exercises.probe.isolation import Isolation
from transformer_course_tools.exercises.probe.wire import MalformedResult, checked_case
from transformer_course_tools.exercises.saved import AGAIN, problem, said

from ._tools import CheckFailure, split_fix
from .case import Case, Outcome
from .registry import EXERCISES, Exercise, get_exercise, load_checks, parse_stub_message
from .status import ERROR, FAILED, NOT_IMPLEMENTED, PASSED, SYMBOLS, TIMED_OUT


@dataclass
class CheckResult:
    id: str
    title: str
    status: str
    message: str
    cases_passed: int = 0
    cases_total: int = 0

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def line(self) -> str:
        return f"{SYMBOLS.get(self.status, '?')} {self.id} {self.title}: {self.status} — {self.message}"


def run_check(exercise_id: str, impl: Callable | None = None, timeout: float | None = None,
              hints: str | None = None) -> CheckResult:  # fmt: skip
    """Check ``impl`` (default: the function now in the package) and never raise; ``hints``: how much
    of the fix a failure says (one of ``HINT_LEVELS``, see :func:`verdict`; default: :func:`hint_level`).

    Only ``impl`` is tested: where it calls another exercise, the course's stand-in runs instead
    (see :mod:`.isolation`), so a mistake in one exercise fails that exercise's check alone.

    With ``timeout`` (seconds) the check runs in a background thread; if it has not finished
    in time the result is "timed out" (the thread is left behind: run checks that may hang
    in a process you can stop, as the CLI's ``check`` and the grader do).
    """
    hints = hint_level(hints)
    if timeout is None:
        return _run_check(exercise_id, impl, hints)
    ex = get_exercise(exercise_id)
    box: list[CheckResult] = []
    context = contextvars.copy_context()  # the thread sees what the caller's context holds (mistakes_met)
    thread = threading.Thread(target=lambda: box.append(context.run(_run_check, exercise_id, impl, hints)))
    thread.daemon = True
    thread.start()
    thread.join(timeout)
    if thread.is_alive() or not box:
        return CheckResult(ex.id, ex.title, TIMED_OUT, f"still running after {timeout:g} s (an infinite loop?)")
    return box[0]


def _run_check(exercise_id: str, impl: Callable | None, hints: str = "full") -> CheckResult:
    ex = get_exercise(exercise_id)
    line = problem(package_dir().parent / ex.file) if impl is None else None
    if line is not None:  # what is saved does not compile: whatever is loaded is not what the learner wrote
        return CheckResult(ex.id, ex.title, ERROR, f"{line}: {AGAIN['check']}")
    try:
        impl = ex.resolve() if impl is None else impl
        isolated = isolation(ex).wrap(impl)  # other exercises run as the course's stand-ins
        torch.manual_seed(0)  # the course's inputs: the same random numbers whoever checks, locally or grading
        return verdict(ex, _probed(ex.cases(), isolated), hints=hints)
    except NotImplementedError as error:  # the target itself is missing (a room being written)
        return CheckResult(ex.id, ex.title, NOT_IMPLEMENTED, _stub_message(ex, error, hints))
    except SystemExit as error:  # sys.exit() in the code under test must not end the notebook or the table
        return CheckResult(ex.id, ex.title, ERROR, f"the code called sys.exit({error.code!r})")
    except SyntaxError as error:  # a room it imports does not compile
        if (line := said(error, "check")) is None:
            return CheckResult(ex.id, ex.title, ERROR, f"{type(error).__name__}: {error}")
        return CheckResult(ex.id, ex.title, ERROR, line.rstrip("."))
    except Exception as error:  # a room that does not import, a bug in the check itself
        return CheckResult(ex.id, ex.title, ERROR, f"{type(error).__name__}: {error}")


def _probed(cases: Iterable[Case], isolated: Callable) -> Iterator[tuple[Case, dict]]:
    """Each case with what its probe returned, one at a time; the probe's own random numbers leave
    the stream the course's inputs come from alone."""
    for case in cases:
        with torch.random.fork_rng(devices=[]):
            yield case, checked_case(run_case(isolated, case.probe))


HIDDEN_SEED = 1  # the seed of the grader's hidden cases (a local check draws with 0)


def build_cases(ex: Exercise, hidden: bool = False) -> list[Case]:
    """All the exercise's cases, as a local check draws them (the course's random inputs are seeded);
    ``hidden``: the same builder drawn again with another seed, with larger inputs where it takes
    ``larger`` (the grader's hidden cases)."""
    torch.manual_seed(HIDDEN_SEED if hidden else 0)
    if hidden and "larger" in inspect.signature(ex.cases).parameters:
        return list(ex.cases(larger=True))
    return list(ex.cases())


def isolation(ex: Exercise) -> Isolation:
    """Every other exercise's function is replaced by its stand-in while ``ex`` is checked (every
    chapter's exercises are known first: the learner may not have written those of other chapters)."""
    from .standins import standins

    load_checks()
    return Isolation(ex.id, {e.id: e.target for e in EXERCISES.values()}, standins())


def verdict(ex: Exercise, judged: Iterable[tuple[Case, dict]], expected: int | None = None,
            hints: str = "full") -> CheckResult:  # fmt: skip
    """Judge every case's result; the first wrong answer is the message, followed by how many cases
    passed. Where that case cannot tell two known mistakes apart, the first later case that names one
    alone says it instead. ``expected``: how many cases there are, when the results come from elsewhere
    and may stop short (a missing result is a failed case). ``hints``: "full" says the fix too, "nudge"
    what is wrong and the exercise's idea, "none" only what is wrong (and a stub its level's hint)."""
    passed = total = 0
    first: Failure | None = None
    try:
        for case, result in judged:
            total += 1
            failure = judge_case(ex, case, result, hints)
            passed += failure is None
            if first is None or (failure is not None and first.named > 1 and failure.named == 1):
                first = failure
    except NotImplementedError as error:  # building the cases reached a stub
        return CheckResult(ex.id, ex.title, NOT_IMPLEMENTED, _stub_message(ex, error, hints), passed, total)
    except MalformedResult as error:
        return CheckResult(ex.id, ex.title, ERROR, f"the probe's result is malformed: {error}", passed, total)
    if expected is not None and total < expected:
        first = first or Failure(ERROR, f"the probe's result is malformed: results for {total} of {expected} cases")
        total = expected
    if first is None:
        return CheckResult(ex.id, ex.title, PASSED, f"{total} cases", passed, total)
    status, message, _ = first
    if status != NOT_IMPLEMENTED:  # a stub's message is read back by the notebooks: left as it is
        message = f"{message} ({passed} of {total} cases passed)"
    return CheckResult(ex.id, ex.title, status, message, passed, total)


class Failure(NamedTuple):
    """A case's failed verdict: its status, its message, and how many known mistakes it names."""

    status: str
    message: str
    named: int = 0


def judge_case(ex: Exercise, case: Case, result: dict, hints: str = "full") -> Failure | None:
    """One case's verdict: None when it passed, else its :class:`Failure`."""
    try:
        case.judge(case, Outcome(case, result))
    except NotImplementedError as error:
        return Failure(NOT_IMPLEMENTED, _stub_message(ex, error, hints))
    except CheckFailure as error:
        return Failure(FAILED, _failure_text(ex, case.label, error, hints), error.named)
    except MalformedResult as error:
        return Failure(ERROR, f"the probe's result is malformed: {error}")
    except Exception as error:  # noqa: BLE001 - a judge meeting data it cannot read, or a bug in a check
        return Failure(ERROR, f"the check failed on the result: {type(error).__name__}: {error}")
    return None


def _stub_message(ex: Exercise, error: NotImplementedError, hints: str = "full") -> str:
    """What a stub says, its hint at level ``hints`` (whatever level the edition's stub was written at)."""
    stub = parse_stub_message(str(error))
    if stub and stub[0] == ex.id:
        return ex.stub_message(f"{ex.module}:{stub[1]}", hints)
    return str(error) or f"{ex.qualname} raises NotImplementedError: edit {ex.file}"


def _failure_text(ex: Exercise, label: str, error: CheckFailure, hints: str) -> str:
    """A failure at level ``hints``, each level saying what the one below says and more: "none" what is
    wrong (the failure's brief, else its message cut before the fix, "label: what: fix"); "nudge" that
    and the exercise's idea; "full" what is wrong and its fix: the named mistake's, or, where no mistake
    is named (only which values differ, an exception), the idea and the way to the code (the full hint)."""
    message = str(error)
    brief = error.brief
    if brief is None and message.startswith(label):  # "label[, more of the case]: what: fix"
        more, body = split_fix(message[len(label) :])
        brief = f"{label}{more}: {split_fix(body)[0]}" if body else message
    brief = message if brief is None else brief
    idea = f"the idea: {ex.hint_at('nudge').rstrip('.')}"
    if hints == "full":
        return message if brief != message else f"{message}; {idea}; the way to the code: {ex.hint.rstrip('.')}"
    return brief if hints == "none" else f"{brief}; {idea}"


def check(exercise_id: str, hints: str | None = None) -> None:
    """For a notebook's check cell: run the check and print one line saying what is wrong.

    ``hints`` ("full", "nudge" or "none"; default: the level the student edition was made with,
    "full" in the complete course) says how much of the fix a failure shows; below "full", a second
    line says how to ask for all of it. The first check of a kernel says which code it checks.
    Returns nothing (so a notebook shows the line once); use :func:`run_check` for the result.
    A written question (``exNN_qK``) shows, once answered, the points a good answer makes.
    """
    level = hint_level(hints)
    _say_which_code_is_checked()
    if QUESTION.fullmatch(exercise_id):
        from transformer_course_tools.exercises.written_answers import review

        print(review(exercise_id)[1])
        return
    result = run_check(exercise_id, hints=level)
    if result.status == ERROR and _said_above(result.message):
        return  # the set-up's guard said before this cell that the file does not compile: said once
    print(result.line())
    if level != "full" and not result.passed:
        print(f'More help: check("{exercise_id}", hints="full") shows the whole hint and the fix.')


QUESTION = re.compile(r"ex\d\d_q[1-9]\d*")  # a written question's id (see exercises/questions.py)


def _said_above(message: str) -> bool:
    setup = sys.modules.get("transformer_course_tools.notebook.setup")  # only where a set-up cell ran
    return setup is not None and setup.said_in_this_cell(message.rsplit(": fix that line", 1)[0])


def run_checks(
    ids: Iterable[str] | None = None, timeout: float | None = None, hints: str | None = None
) -> list[CheckResult]:
    return [run_check(i, timeout=timeout, hints=hints) for i in (sorted(load_checks()) if ids is None else ids)]


_said_which = False


def _say_which_code_is_checked() -> None:
    """Once per kernel, where it is not plain: which package the checks run. A notebook outside any copy
    of the course (copied out, or opened with a plain install) says the package's folder; one in another
    copy than Python imports warns that the edits there do not run; one in the complete course (whose
    every exercise is written, so every check passes) says so, except the worked solutions' own."""
    global _said_which
    if _said_which:
        return
    _said_which = True
    here = package_dir()  # the package being checked
    course = here.parent
    home = next((f for f in (Path.cwd(), *Path.cwd().parents) if (f / PACKAGE / "__init__.py").is_file()), None)
    complete = (
        "the complete course, where every exercise is already written, so its checks pass whatever you write "
        f"elsewhere. To write the exercises yourself, make your own copy: python -m {PACKAGE} student-edition "
        '~/my-transformer (README, "For self-learners")'
    )
    if home is None:
        print(f"Checking {here}: " + ("your student edition." if is_student_edition(course) else f"{complete}."))
    elif home.resolve() != course:
        print(
            f"warning: this notebook lives in {home}, but Python imports {PACKAGE} from {course}: "
            f"your edits in {home} are not what runs. Run `pip install -e {home}` and restart the kernel."
        )
    elif not is_student_edition(course) and Path.cwd().name != "solutions":
        print(f"Checking this folder's {PACKAGE}/: {complete}.")
