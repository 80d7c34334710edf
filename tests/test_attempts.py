"""Every exercise's attempts (``tests/attempts/exNN_k.py``) through its check: each wrong answer fails,
named where it says which words; each tester's mistake (issue 30's measure: written by people who had
not read the checks) is caught with more than which values differ; each right answer written another
way passes. Left out of the student edition with the attempts (they are close to the solutions)."""

from __future__ import annotations

import re

import pytest

from transformer_course_tools.exercises.checks import run_check
from transformer_course_tools.exercises.checks._tools import Met, mistakes_met
from transformer_course_tools.exercises.checks.registry import load_checks

from .attempts import Attempt, attempts

EXERCISES = load_checks()

# a message that only says which values differ: "output has 3 wrong value(s) out of 8; at index …",
# "expected 0.25, got 0.5", "labels differs at 5 position(s)"
_VALUES_ONLY = re.compile(
    r"(has \d+ wrong value\(s\) out of \d+; at index .*|: expected [^:]*, got [^:]*|differs at \d+ position\(s\).*)$"
)
# the first word of a fix ("use …", "return …"): at hint level "none" a message says what is wrong only
_INSTRUCTION = re.compile(
    r"(?:^|: |; )(use|return|apply|keep|call|put|fill|divide|multiply|take|scatter|compare|run|convert|add|"
    r"swap|move|pass|make|set|do|compute)\b",
    re.IGNORECASE,
)
_COUNT = re.compile(r" \(\d+ of \d+ cases? passed\)$")
pytestmark = [
    pytest.mark.complete_edition,
    pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before"),  # a learner's mistake
    pytest.mark.filterwarnings("ignore::UserWarning"),  # a learner's mistake may make PyTorch warn
]


def _marked(ids):
    return [pytest.param(i, marks=getattr(pytest.mark, i), id=i) for i in sorted(ids)]


def _of(exercise_id: str, *origins: str, right: bool = False) -> list[Attempt]:
    return [a for a in attempts(exercise_id) if a.origin in origins and a.right == right]


def _named(attempt: Attempt) -> str:
    return f"{attempt.origin} {attempt.name} ({attempt.what})"


@pytest.mark.parametrize("exercise_id", _marked(EXERCISES))
def test_the_check_fails_every_wrong_answer_and_names_it(exercise_id: str) -> None:
    for attempt in _of(exercise_id, "mutant", "own"):
        result = run_check(exercise_id, attempt.impl)
        assert result.status == "failed", f"{_named(attempt)} was not caught: {result.line()}"
        assert attempt.says in result.message, f"{_named(attempt)}: {result.line()}"


@pytest.mark.parametrize("exercise_id", _marked(EXERCISES))
def test_a_testers_mistake_is_caught_and_explained(exercise_id: str) -> None:
    for attempt in _of(exercise_id, "tester"):
        result = run_check(exercise_id, attempt.impl, timeout=120)
        assert result.status != "passed", f"{attempt.by} set, {_named(attempt)}: not caught"
        message = _COUNT.sub("", result.message)
        assert not _VALUES_ONLY.search(message), f"{attempt.by} set, {_named(attempt)}: {result.line()}"


@pytest.mark.parametrize("exercise_id", _marked(EXERCISES))
def test_a_right_answer_written_another_way_passes(exercise_id: str) -> None:
    for attempt in _of(exercise_id, "mutant", "own", "tester", right=True):
        result = run_check(exercise_id, attempt.impl, timeout=120)
        assert result.passed, f"{_named(attempt)}: {result.line()}"


@pytest.mark.parametrize("exercise_id", _marked(EXERCISES))
def test_each_hint_level_says_what_the_one_below_says_and_more(exercise_id: str) -> None:
    """ "none" says what is wrong (no fix), "nudge" that and the idea, "full" that and the fix: the named
    mistake's, or where none is named, the idea and the way to the code, so that nudge's "More help" line
    leads to more help, never to less (issue 49: at full, ex01_1 and ex02_3 once said less than at nudge)."""
    for attempt in _of(exercise_id, "mutant", "own"):
        full, nudge, none = (_COUNT.sub("", run_check(exercise_id, attempt.impl, hints=level).message)
                             for level in ("full", "nudge", "none"))  # fmt: skip
        if " raised " not in none:  # what the learner's code raised is shown whole
            assert not _INSTRUCTION.search(none), (attempt.name, none)
        assert nudge.startswith(none + "; the idea: "), (attempt.name, nudge)
        # full says each thing none says is wrong (several known mistakes: each with its fix), and more
        assert all(what in full for what in none.split("; or ")) and len(full) > len(none), (attempt.name, full)
        fix = full[len(none) :] if full.startswith(none) else "; several named, each with its fix"
        assert nudge in full or fix.startswith((": ", "; ")), (attempt.name, full)


def _mistake(text: str) -> str:
    """A known mistake's text, its numbers aside: a case writes its own values into it ("eos_id=2")."""
    return re.sub(r"\d+(?:\.\d+)?(?:e-?\d+)?", "#", text)


@pytest.mark.parametrize("exercise_id", _marked(EXERCISES))
def test_every_known_mistake_is_named_for_a_wrong_answer(exercise_id: str) -> None:
    """Each mistake a judge knows (a replay in ``mistakes=``) is named for one wrong answer at least: a
    replay that nothing runs may not be what the mistake gives, and then it names nothing (study 53F's
    was such). And its replay differs from the right answer on some case, else no case can name it."""
    with mistakes_met() as known:
        assert run_check(exercise_id).passed, f"{exercise_id}: the worked answer fails its check"
    named = set()
    for attempt in _of(exercise_id, "mutant", "own", "tester"):
        with mistakes_met() as met:
            run_check(exercise_id, attempt.impl, timeout=120)
        named |= {_mistake(m.what) for m in met if m.named}
    kinds: dict[str, Met] = {}  # each kind's first case, one that can name it where one can
    for m in sorted(known, key=lambda m: not m.differs):
        kinds.setdefault(_mistake(m.what), m)
    problems = [f"{exercise_id}: no case tells the replay of a known mistake from the right answer: {m.what!r}"
                for m in kinds.values() if not m.differs]  # fmt: skip
    problems += [f"{exercise_id}: no wrong answer gets the known mistake {m.what!r} (the case {m.case!r} tells it)"
                 for k, m in kinds.items() if m.differs and k not in named]  # fmt: skip
    advice = (f"{exercise_id}: write each wrong answer in tests/attempts/{exercise_id}.py as a learner would; if it "
              "does not get the message, the replay is not that mistake's")  # fmt: skip
    assert not problems, " | ".join([*problems, advice])  # make exercises prints a line for each
