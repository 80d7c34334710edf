"""What learners (and we, and testers) wrote for each exercise: ``tests/attempts/exNN_k.py``, one file
per exercise, found by its id. Left out of the student edition: the wrong answers are close to the
solutions.

Each entry is a function written as the learner would write it, marked with where it comes from::

    @wrong("mutant", "the scores are not scaled", says="not scaled")
    def unscaled(q, k):
        return q @ k.transpose(-2, -1)

    @right("own")
    def with_einsum(q, k): ...

``wrong(origin, what, says=…, by=…)``: a wrong answer, which the check must fail (``says``: words its
message must hold). ``right(origin, by=…)``: a correct answer written another way, which must pass.
The origin is one of :data:`ORIGINS`: ``mutant`` (a typical wrong answer), ``own`` (a mistake the
course's authors saw learners make), ``tester`` (written by someone who had not read the check;
``by`` names the tester's set). ``tests/test_attempts.py`` runs them all.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ORIGINS = ("mutant", "own", "tester")
FOLDER = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Attempt:
    exercise: str  # "ex03_1"
    name: str  # the function's name in its file
    impl: Callable
    origin: str  # one of ORIGINS
    right: bool  # a correct answer written another way (else a wrong answer)
    what: str = ""  # what is wrong (a wrong answer's description)
    says: str = ""  # words the check's message must hold ("": any failure)
    by: str = ""  # the tester's set (origin "tester")


def wrong(origin: str, what: str = "", *, says: str = "", by: str = "") -> Callable[[Callable], Callable]:
    """Mark a wrong answer: its check must fail it (and its message hold ``says``)."""
    return _mark(origin, False, what or says, says, by)


def right(origin: str, *, by: str = "") -> Callable[[Callable], Callable]:
    """Mark a correct answer written another way: its check must pass it."""
    return _mark(origin, True, "", "", by)


def _mark(origin: str, is_right: bool, what: str, says: str, by: str) -> Callable[[Callable], Callable]:
    if origin not in ORIGINS:
        raise ValueError(f"origin {origin!r} must be one of {', '.join(ORIGINS)}")
    if (origin == "tester") != bool(by):
        raise ValueError("by= names the tester's set, for origin 'tester' only")
    if not is_right and not what:
        raise ValueError("a wrong answer says what is wrong: wrong(origin, what) or wrong(origin, says=...)")

    def mark(impl: Callable) -> Callable:
        impl.__attempt__ = (origin, is_right, what, says, by)
        return impl

    return mark


def attempts(exercise_id: str) -> list[Attempt]:
    """The entries of ``tests/attempts/<exercise_id>.py`` in the order of the file ([] without one)."""
    if not (FOLDER / f"{exercise_id}.py").is_file():
        return []
    module = importlib.import_module(f"{__name__}.{exercise_id}")
    found = {}
    for name, value in vars(module).items():
        mark = getattr(value, "__attempt__", None)
        if mark is not None and getattr(value, "__module__", None) == module.__name__ and id(value) not in found:
            found[id(value)] = Attempt(exercise_id, name, value, *mark)
    return list(found.values())


def source_of(attempt: Attempt) -> str:
    """The whole file of ``attempt``, importable as a module on its own (its marks made no-ops): what a
    test hands in as a learner's file."""
    text = (FOLDER / f"{attempt.exercise}.py").read_text(encoding="utf-8")
    return re.sub(r"^from \. import .*$", "right = wrong = lambda *a, **k: lambda impl: impl", text, flags=re.M)
