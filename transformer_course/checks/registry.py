"""The list of exercises: which package function each one is, its hint, and its check.

An exercise is a region between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` inside one
package function (nbgrader's markers). The student edition replaces that region by a
``raise NotImplementedError`` that names the exercise, the file to edit and the hint.
Each chapter's check module registers its exercises with :func:`exercise`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Exercise:
    id: str  # "ex03_1": chapter 03, exercise 1 (also the pytest marker)
    target: str  # "transformer_course.attention:attention_scores" (module:qualname)
    title: str  # one line shown in tables
    difficulty: str  # "easy", "medium" or "hard"
    hint: str  # shown by the stub's NotImplementedError
    check: Callable[[Callable], int]  # check(impl) raises CheckFailure, returns the number of cases
    also: tuple[str, ...] = ()  # other functions of the same module that are part of this exercise
    # (stubbed with it in the student edition because they would show its answer), e.g. a GPU variant

    @property
    def targets(self) -> tuple[str, ...]:
        return (self.target, *self.also)

    @property
    def module(self) -> str:
        return self.target.split(":")[0]

    @property
    def qualname(self) -> str:
        return self.target.split(":")[1]

    @property
    def chapter(self) -> str:
        return self.id[2:4]

    @property
    def file(self) -> str:
        """The file a student edits, relative to the repository root."""
        return self.module.replace(".", "/") + ".py"

    def resolve(self) -> Callable:
        """The function (or unbound method) currently in the package."""
        obj = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            obj = getattr(obj, part)
        return obj

    def stub_message(self, target: str | None = None) -> str:
        qualname = (target or self.target).split(":")[1]
        return f"{self.id} ({qualname}) is not implemented yet: edit {self.file}. Hint: {self.hint}"


EXERCISES: dict[str, Exercise] = {}

DIFFICULTIES = ("easy", "medium", "hard")


def exercise(id: str, target: str, title: str, difficulty: str, hint: str, also: tuple[str, ...] = ()) -> Callable:
    """Decorator that registers ``check(impl) -> n_cases`` as the check of exercise ``id``.

    ``also`` names further functions (``module:qualname``, same module as ``target``) whose
    solution regions belong to this exercise; the check tests ``target``.
    """
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {DIFFICULTIES}, got {difficulty!r}")
    if any(t.split(":")[0] != target.split(":")[0] for t in also):
        raise ValueError(f"{id}: the functions in `also` must be in the module of {target}")

    def register(check: Callable) -> Callable:
        if id in EXERCISES:
            raise ValueError(f"exercise {id} is registered twice")
        EXERCISES[id] = Exercise(id, target, title, difficulty, hint, check, tuple(also))
        return check

    return register


PACKAGE_ROOT = Path(__file__).resolve().parent.parent
