"""The grader's hidden cases (``hidden = true``): every exercise's builder drawn again with seed 1 and,
where the exercise has sizes, ``larger=True``; the solutions pass them, and the local cases (what the
notebooks print) are exactly the ones they were."""

from __future__ import annotations

import hashlib
import inspect
import re

import pytest

from transformer_course.tools.checks import EXERCISES
from transformer_course.tools.checks.registry import load_checks
from transformer_course.tools.checks.runner import _probed, build_cases, isolation, verdict

load_checks()

NO_SIZES = {"ex11_3"}  # its input is a flag (encoder or decoder) and its answer a table of names

# (count, sha256 of the labels joined by newlines, first 12 digits) of each exercise's local cases: the
# chapters' committed outputs print these counts and messages. A change here is a change to what
# learners see; if it is meant, print the new values with _local_fingerprint and update the table.
LOCAL = {
    "ex01_1": (11, "a95f01f67f47"),
    "ex01_2": (4, "decdadf98a9c"),
    "ex01_3": (5, "354cf560aa60"),
    "ex02_1": (6, "ba7d55c68e86"),
    "ex02_2": (9, "46d74d093195"),
    "ex02_3": (7, "f30b3719c40b"),
    "ex03_1": (4, "9e169137c075"),
    "ex03_2": (3, "edfdcd0b6399"),
    "ex03_3": (14, "5842584ec99f"),
    "ex04_1": (5, "8ab5ccd801cb"),
    "ex04_2": (11, "1ae768691baf"),
    "ex04_3": (41, "af109a9def70"),
    "ex05_1": (7, "c79fa28553f1"),
    "ex05_2": (6, "6a7024166985"),
    "ex05_3": (27, "f4b104435422"),
    "ex06_1": (5, "557f8f265540"),
    "ex06_2": (4, "a2e56f773ff4"),
    "ex06_3": (45, "af74e0b991ac"),
    "ex07_1": (28, "7a5c4101f1bc"),
    "ex07_2": (4, "99fa04d4da75"),
    "ex07_3": (5, "497761821149"),
    "ex07_4": (12, "8ff976bd4fdf"),
    "ex08_1": (4, "3699904988fa"),
    "ex08_2": (16, "a90d3b904798"),
    "ex08_3": (5, "16308f65cd53"),
    "ex09_1": (9, "eaae61b5c4fe"),
    "ex09_2": (7, "12b448f90f94"),
    "ex09_3": (11, "4bb0b5f51a21"),
    "ex10_1": (6, "c402096e6323"),
    "ex10_2": (7, "f15745dffa63"),
    "ex10_3": (5, "a085f4305212"),
    "ex10_4": (6, "2b05f16186ff"),
    "ex10_5": (7, "79e46dd48008"),
    "ex11_1": (7, "e1ba0f483055"),
    "ex11_2": (5, "9a3c2d314aaa"),
    "ex11_3": (2, "4f5c8b7df44a"),
}


def _local_fingerprint(exercise_id: str) -> tuple[int, str]:
    labels = [case.label for case in build_cases(EXERCISES[exercise_id])]
    return len(labels), hashlib.sha256("\n".join(labels).encode()).hexdigest()[:12]


def _sizes(label: str) -> tuple[str, ...] | str:
    """The numbers a label names (its shapes, lengths, counts); the label itself where it names none."""
    return tuple(re.findall(r"\d+", label)) or label


def _new_sizes(local: list[str], hidden: list[str]) -> list[str]:
    """The hidden labels whose sizes no local label has."""
    seen = {_sizes(label) for label in local}
    return [label for label in hidden if _sizes(label) not in seen]


def _marked(ids):
    return [pytest.param(i, marks=getattr(pytest.mark, i), id=i) for i in sorted(ids)]


def test_every_exercise_is_in_the_table() -> None:
    assert set(LOCAL) == set(EXERCISES)


@pytest.mark.complete_edition  # a learner's code may reach a builder: the course's own is compared
@pytest.mark.parametrize("exercise_id", _marked(EXERCISES))
def test_the_local_cases_are_unchanged(exercise_id: str) -> None:
    assert _local_fingerprint(exercise_id) == LOCAL[exercise_id]


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
