"""The grader's hidden cases (``hidden = true``): every exercise's builder drawn again with seed 1 and,
where the exercise has sizes, ``larger=True``; the solutions pass them, and the local cases (what the
notebooks print) are those the lock records (``make exercises`` writes it)."""

from __future__ import annotations

import inspect
import re

import pytest

from transformer_course_tools.exercises import lock
from transformer_course_tools.exercises.checks import EXERCISES
from transformer_course_tools.exercises.checks.registry import load_checks
from transformer_course_tools.exercises.checks.runner import _probed, build_cases, isolation, verdict
from transformer_course_tools.exercises.lock import case_fingerprint

load_checks()

NO_SIZES = {"ex15_3"}  # its input is a flag (encoder or decoder) and its answer a table of names
LOCKED = lock.read(lock.LOCK)["cases"]  # (count, digest of the labels) of each exercise's local cases


def _sizes(label: str) -> tuple[str, ...] | str:
    """The numbers a label names (its shapes, lengths, counts); the label itself where it names none."""
    return tuple(re.findall(r"\d+", label)) or label


def _new_sizes(local: list[str], hidden: list[str]) -> list[str]:
    """The hidden labels whose sizes no local label has."""
    seen = {_sizes(label) for label in local}
    return [label for label in hidden if _sizes(label) not in seen]


def _marked(ids):
    return [pytest.param(i, marks=getattr(pytest.mark, i), id=i) for i in sorted(ids)]


@pytest.mark.complete_edition  # a learner's code may reach a builder: the course's own is compared
@pytest.mark.parametrize("exercise_id", _marked(EXERCISES))
def test_the_local_cases_are_the_locked_ones(exercise_id: str) -> None:
    """The chapters print these cases' counts and messages: a change is a change to what learners see."""
    locked = {"cases": {exercise_id: LOCKED[exercise_id]} if exercise_id in LOCKED else {}, "chapters": {}}
    changed = lock.differences(
        locked, {"cases": {exercise_id: case_fingerprint(EXERCISES[exercise_id])}, "chapters": {}}
    )
    assert not changed, changed[0]


@pytest.mark.complete_edition
@pytest.mark.parametrize("exercise_id", _marked(EXERCISES))
def test_hidden_cases_are_larger_and_the_solution_passes_them(exercise_id: str) -> None:
    ex = EXERCISES[exercise_id]
    hidden = build_cases(ex, hidden=True)
    assert hidden, f"{exercise_id} has no hidden cases"
    if exercise_id not in NO_SIZES:
        assert "larger" in inspect.signature(ex.cases).parameters, f"{exercise_id}'s builder takes no `larger`"
        local = [case.label for case in build_cases(ex)]
        assert _new_sizes(local, [case.label for case in hidden]), f"no hidden case of {exercise_id} is larger"
    result = verdict(ex, _probed(build_cases(ex, hidden=True), isolation(ex).wrap(ex.resolve())))
    assert result.passed, result.line()
    assert result.cases_total == len(hidden)


def test_the_size_comparison_fails_a_builder_that_ignores_larger() -> None:
    local = ["causal_mask(5)", "causal_mask(1)", "causal_mask(3, device='meta')", "encode(['the'])"]
    assert _new_sizes(local, list(local)) == []
    assert _new_sizes(local, ["causal_mask(1)", "causal_mask(3, device='meta')"]) == []
    assert _new_sizes(local, ["causal_mask(12)", "causal_mask(1)"]) == ["causal_mask(12)"]
    assert _new_sizes(local, ["encode(['the', 'the'])"]) == ["encode(['the', 'the'])"]
