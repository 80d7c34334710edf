"""The course's lock: what the build derived from the exercises and a change must not alter unnoticed.

``transformer_course_tools/exercises/lock.json`` holds each exercise's cases, as a count and a digest of their
labels (the chapters and notebooks print these counts and messages: a change is a change to what
learners see), each chapter's exercises (what it runs, found by :mod:`.needs`; a chapter that
stops at an unwritten exercise names those still to write) and the exercise of its own it stops at
first in the student edition (:func:`.needs.first_stops`). ``make exercises`` (``python -m
transformer_course build-exercises``) writes it; the tests compare it with the exercises as they are.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

RELATIVE = Path("transformer_course_tools", "exercises", "lock.json")  # in the course's repository
LOCK = Path(__file__).resolve().with_name("lock.json")  # the running package's


def case_fingerprint(ex) -> list:  # noqa: ANN001 - an Exercise
    """[how many local cases, the first 12 digits of the sha256 of their labels joined by newlines]."""
    from .checks.runner import build_cases

    labels = [case.label for case in build_cases(ex)]
    return [len(labels), hashlib.sha256("\n".join(labels).encode()).hexdigest()[:12]]


def derive(root: Path, exercises: Mapping) -> dict:  # noqa: ANN001 - id → Exercise
    """The lock as the exercises and the chapters of the course at ``root`` make it now."""
    from .needs import chapter_needs, first_stops

    cases = {i: case_fingerprint(ex) for i, ex in sorted(exercises.items())}
    return {"cases": cases, "chapters": chapter_needs(root, exercises), "first_stops": first_stops(root, exercises)}


def read(path: Path = LOCK) -> dict:
    """The lock as written ({} when there is none)."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def text(lock: dict) -> str:
    """The lock as its file holds it: one exercise, one chapter per line."""
    lines = ["{", '  "cases": {']
    lines += [f"    {json.dumps(i)}: {json.dumps(v)}," for i, v in lock["cases"].items()]
    lines[-1] = lines[-1].rstrip(",")
    for section in ("chapters", "first_stops"):
        lines += ["  },", f'  "{section}": {{']
        lines += [f"    {json.dumps(c)}: {json.dumps(v)}," for c, v in lock[section].items()]
        lines[-1] = lines[-1].rstrip(",")
    return "\n".join([*lines, "  }", "}"]) + "\n"


def chapter_exercises(chapter: str) -> list[str]:
    """The exercises chapter ``chapter`` ("04") runs, as the lock records them ([] when unknown)."""
    return read().get("chapters", {}).get(chapter, [])


def differences(old: dict, new: dict) -> list[str]:
    """What changed from lock ``old`` to ``new``, one line each, saying what it means and what to run."""
    lines = []
    old_cases, new_cases = old.get("cases", {}), new["cases"]
    for i, (count, digest) in new_cases.items():
        if i not in old_cases:
            lines.append(f"{i} is not in the lock yet: run `make exercises`")
        elif old_cases[i] != [count, digest]:
            was = f"{old_cases[i][0]} cases" + (", other labels" if old_cases[i][0] == count else "")
            lines.append(f"the cases of {i} changed ({count} cases, was {was}): the chapters print them; if that "
                         "is meant, run `make exercises`")  # fmt: skip
    lines += [
        f"{i} is in the lock but no longer an exercise: run `make exercises`" for i in old_cases if i not in new_cases
    ]
    for chapter, ids in new["chapters"].items():
        if old.get("chapters", {}).get(chapter) != ids:
            lines.append(f"chapter {chapter} runs other exercises than the lock says: run `make exercises`")
    stops, locked = new.get("first_stops", {}), old.get("first_stops", {})
    for chapter in sorted(stops.keys() | locked.keys() if "first_stops" in new else ()):
        if stops.get(chapter) != locked.get(chapter):
            lines.append(f"chapter {chapter} stops first at {stops.get(chapter) or 'none of its exercises'}, the lock "
                         f"says {locked.get(chapter) or 'none'}: run `make exercises`")  # fmt: skip
    return lines
