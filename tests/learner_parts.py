"""Put another version of an exercise's function wherever the course finds it, as a learner's package
would hold it: the tests run the checks with every other exercise poisoned, and the engine with a
learner's right answers."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

import pytest

from transformer_course_tools.exercises.checks.registry import Exercise

ROOMS = ("transformer_course.",)  # the learner's package
ENGINE_TOO = (*ROOMS, "transformer_course_tools.engine")  # and the engine, which calls into it


def per_exercise(ids) -> list:  # noqa: ANN001 - exercise ids
    """One parameter per exercise, marked with its id, for the course's deeper tests of an exercise (its
    isolation, the engine with its right answers). ``make exercises`` names their files, so they run with
    ``-m exNN_k`` there; a learner's ``pytest -m exNN_k`` alone leaves them out, as it leaves out every file
    that does not mark with ``getattr(pytest.mark, …)`` itself (tests/conftest.py)."""
    return [pytest.param(i, marks=getattr(pytest.mark, i), id=i) for i in sorted(ids)]


def replace_everywhere(
    exercise: Exercise, replacement: Callable, monkeypatch: pytest.MonkeyPatch, modules: tuple[str, ...] = ROOMS
) -> None:
    """``replacement`` on the class, for a method; else in every loaded module whose name starts with one
    of ``modules`` and that holds the exercise's function (import every room first, so that each binding
    is replaced). ``monkeypatch`` undoes it all."""
    original = exercise.resolve()
    module = importlib.import_module(exercise.module)
    *owner_path, attribute = exercise.qualname.split(".")
    owner = module
    for part in owner_path:
        owner = getattr(owner, part)
    if owner is not module:  # a method: one class attribute
        monkeypatch.setattr(owner, attribute, replacement)
        return
    for name, loaded in list(sys.modules.items()):
        if name.startswith(modules) and loaded is not None:
            for key, value in list(vars(loaded).items()):
                if value is original:
                    monkeypatch.setattr(loaded, key, replacement)
