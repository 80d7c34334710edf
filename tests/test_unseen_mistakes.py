"""Issue 30's measure, kept: the learners' mistakes written by three testers who had not seen the checks'
tables (tests/unseen), each caught with a message that says more than which values differ, and the
correct answers written differently, each passing. Left out of the student edition with the mistakes."""

from __future__ import annotations

import re

import pytest

from transformer_course.tools.checks import run_check

from .unseen import first, second, third

# a message that only says which values differ: "output has 3 wrong value(s) out of 8; at index …",
# "expected 0.25, got 0.5", "labels differs at 5 position(s)"
_VALUES_ONLY = re.compile(
    r"(has \d+ wrong value\(s\) out of \d+; at index .*|: expected [^:]*, got [^:]*|differs at \d+ position\(s\).*)$"
)
_SETS = {"first": first, "second": second, "third": third}


def _mistakes(exercise_id: str) -> list[tuple[str, object, str]]:
    found = []
    for name, module in _SETS.items():
        for table in (module.MISTAKES, getattr(module, "EXTRA_MISTAKES", {})):
            found += [(name, impl, what) for impl, what in table.get(exercise_id, [])]
    return found


_EXERCISES = sorted({ex for module in _SETS.values() for ex in module.MISTAKES})


@pytest.mark.complete_edition
@pytest.mark.filterwarnings("ignore::UserWarning")  # a learner's mistake may make PyTorch warn
@pytest.mark.parametrize("exercise_id", _EXERCISES)
def test_an_unseen_mistake_is_caught_and_explained(exercise_id: str) -> None:
    for name, impl, what in _mistakes(exercise_id):
        result = run_check(exercise_id, impl, timeout=120)
        message = re.sub(r" \(\d+ of \d+ cases? passed\)$", "", result.message)
        assert result.status != "passed", f"{name} set, {impl.__name__} ({what}): not caught"
        assert not _VALUES_ONLY.search(message), f"{name} set, {impl.__name__} ({what}): {result.line()}"


@pytest.mark.complete_edition
@pytest.mark.parametrize("exercise_id", sorted({ex for module in _SETS.values() for ex in module.ALTERNATIVES}))
def test_a_correct_answer_written_differently_passes(exercise_id: str) -> None:
    for module in _SETS.values():
        for impl in module.ALTERNATIVES.get(exercise_id, []):
            result = run_check(exercise_id, impl, timeout=120)
            assert result.passed, f"{impl.__name__}: {result.line()}"


def test_every_exercise_has_six_unseen_mistakes() -> None:
    from transformer_course.tools.checks.registry import EXERCISES
    from transformer_course.tools.checks.runner import _load_all

    _load_all()
    assert all(set(module.MISTAKES) == set(EXERCISES) for module in _SETS.values())
    assert all(len(_mistakes(exercise_id)) >= 6 for exercise_id in EXERCISES)
