"""The list of exercises: which package function each one is, its hint, and its cases.

An exercise is a region between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` inside one
package function (nbgrader's markers). The student edition replaces that region by a
``raise NotImplementedError`` that names the exercise, the file to edit and the hint.
Each chapter's check module registers its exercises with :func:`exercise`, with the other
exercises its function calls (``needs``): a chapter that stops at an exercise names those of them
that are not written yet, in the order to write them (:func:`writing_order`).
:func:`load_checks` imports every chapter's check module, :func:`get_exercise` finds one exercise
(importing its chapter's module only).
"""

from __future__ import annotations

import importlib
import inspect
import re
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from transformer_course_tools.exercises.hints import HINT_LEVELS, check_level
from transformer_course_tools.exercises.probe.isolation import resolve


@dataclass(frozen=True)
class Exercise:
    id: str  # "ex03_1": chapter 03, exercise 1 (also the pytest marker)
    target: str  # "transformer_course.attention:attention_scores" (module:qualname)
    title: str  # one line shown in tables
    difficulty: str  # "easy", "medium" or "hard"
    hint: str  # shown by the stub's NotImplementedError
    cases: Callable[..., Iterable]  # cases() -> Iterable[Case]: what to run, how to judge it (see .case); a
    # generator draws each case's random inputs only when it comes. A builder with a ``larger`` keyword
    # gives, with larger=True, larger inputs for the grader's hidden cases (``hidden = true``)
    also: tuple[str, ...] = ()  # other functions of the same module that are part of this exercise
    # (stubbed with it in the student edition because they would show its answer), e.g. a GPU variant
    needs: tuple[str, ...] = ()  # the exercises its code calls: written first; their stand-ins run
    # when it is checked (see transformer_course_tools/exercises/probe/isolation.py; tests/test_isolation.py compares with the solutions)
    nudge: str = ""  # the idea and the paper's section, no code: the hint at level "nudge" (see HINT_LEVELS)
    standin: Callable | None = None  # the course's own version, run in its place while an exercise that calls it
    # is checked (written beside the check; see .standins)

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

    def resolve(self) -> Any:
        """The function (or unbound method) currently in the package."""
        return resolve(self.target)

    def is_stub(self) -> bool:
        """The function now loaded still raises this exercise's stub: it is not written yet.
        (Read from the code that runs, not from the file: an edit that did not load yet does not count.)"""
        code = getattr(self.resolve(), "__code__", None)
        stubs = {self.stub_message(hints=level) for level in HINT_LEVELS}
        return code is not None and any(stubs & set(c.co_consts) for c in code_objects(code))

    def hint_at(self, level: str) -> str:
        """The hint at one of :data:`HINT_LEVELS`: "full" the way to the code, "nudge" the idea and
        the paper's section, "none" only what to write."""
        texts = {"full": self.hint, "nudge": self.nudge or self.hint_at("none")}
        return texts.get(check_level(level), f"write {self.title} (its docstring says what it takes and returns).")

    def stub_message(self, target: str | None = None, hints: str = "full") -> str:
        """What the student edition's stub raises (:func:`parse_stub_message` reads it back)."""
        qualname = (target or self.target).split(":")[1]
        return f"{self.id} ({qualname}) is not implemented yet: edit {self.file}. Hint: {self.hint_at(hints)}"


_STUB = re.compile(r"(ex\d\d_\d+) \((\S+)\) is not implemented yet: edit (\S+?)\. Hint: (.*)", re.S)


def parse_stub_message(message: str) -> tuple[str, str, str, str] | None:
    """(exercise id, function, file, hint) if ``message`` is one of the stubs' messages."""
    match = _STUB.match(str(message))
    return match.groups() if match else None


def code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and the code of the functions, lambdas and comprehensions nested in it."""
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from code_objects(constant)


EXERCISES: dict[str, Exercise] = {}

DIFFICULTIES = ("easy", "medium", "hard")


def exercise(
    id: str,
    target: str,
    difficulty: str,
    also: tuple[str, ...] = (),
    needs: tuple[str, ...] = (),
    standin: Callable | None = None,
) -> Callable:
    """Decorator that registers ``cases() -> Iterable[Case]`` as the check of exercise ``id``.

    ``target`` is the function the learner writes (``module:qualname``). The docstring of
    ``cases`` gives the rest: its first line is the exercise's title, and the text after ``Hint:``
    is the hint the stub shows; an optional ``Nudge:`` paragraph before it is the hint at level
    "nudge" (the idea and the paper's section, no code). ``also`` names further functions of the
    same module (qualnames) whose solution regions belong to this exercise (stubbed with it, e.g. a
    GPU variant); the check tests ``target``. ``needs`` names the exercises the target's code calls:
    a learner writes them first, and while this one is checked their stand-ins run (a grading job
    gets those stand-ins). ``standin`` is this exercise's own stand-in, written beside its check: the
    course's version of the function, which runs in its place while an exercise that calls it is
    checked (:mod:`.standins` says what it may use).
    """
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {DIFFICULTIES}, got {difficulty!r}")
    module = target.split(":")[0]

    def register(cases: Callable) -> Callable:
        if id in EXERCISES:
            raise ValueError(f"exercise {id} is registered twice")
        doc = inspect.cleandoc(cases.__doc__ or "")
        title, _, rest = doc.partition("\n")
        if not title or "Hint:" not in rest:
            raise ValueError(f"the check of {id} needs a docstring: a title line, then 'Hint: …'")
        before, hint = rest.split("Hint:", 1)
        nudge = " ".join(before.partition("Nudge:")[2].split())
        also_targets = tuple(f"{module}:{q}" for q in also)
        EXERCISES[id] = Exercise(id, target, title, difficulty, " ".join(hint.split()), cases, also_targets,
                                 tuple(needs), nudge, standin)  # fmt: skip
        return cases

    return register


def hidden(exercise_id: str) -> Callable:
    """Decorator for an instructor's file of hidden cases (named by ``hidden_cases`` in
    ``grading.toml``, kept out of the student edition): ``cases() -> Iterable[Case]`` are graded
    with exercise ``exercise_id``'s own, and the feedback says how many passed, never which."""

    def mark(cases: Callable) -> Callable:
        cases.hidden_for = exercise_id  # read by the grader when it loads the file; nothing global
        return cases

    return mark


def writing_order(exercise_id: str) -> list[str]:
    """Every exercise that ``exercise_id`` needs, directly or through others, each after the ones it
    needs, and ``exercise_id`` last: an order in which to write them (ties in id order)."""
    order: list[str] = []

    def visit(current: str, path: tuple[str, ...]) -> None:
        if current in path:
            raise ValueError(f"exercises that need each other: {' → '.join((*path, current))}")
        if current in order:
            return
        for needed in sorted(EXERCISES[current].needs):
            visit(needed, (*path, current))
        order.append(current)

    visit(exercise_id, ())
    return order


def get_exercise(exercise_id: str) -> Exercise:
    """The exercise ``exercise_id``; KeyError (one line listing the known ones) for an unknown id."""
    if exercise_id not in EXERCISES:
        _load_chapter(exercise_id)
    if exercise_id not in EXERCISES:
        load_checks()
    if exercise_id not in EXERCISES:
        raise KeyError(f"unknown exercise {exercise_id!r}; known exercises: {', '.join(sorted(EXERCISES))}")
    return EXERCISES[exercise_id]


def exercise_order(exercise_id: str) -> tuple[int, ...]:
    """A sort key: ex03_10 after ex03_9 (the numbers, not the characters)."""
    return tuple(int(n) for n in re.findall(r"\d+", exercise_id))


def expand_exercise_ids(items: Iterable[str]) -> list[str]:
    """Exercise ids, with a chapter's prefix (``ex03``) standing for every exercise of that chapter
    in order, so that a list written for a chapter still holds when it gains an exercise. Each id
    once; KeyError (one line) for an unknown id or a chapter with no exercise."""
    ids = []
    for item in items:
        if re.fullmatch(r"ex\d\d", item):
            found = sorted((i for i, ex in load_checks().items() if ex.chapter == item[2:]), key=exercise_order)
            if not found:
                chapters = sorted({f"ex{ex.chapter}" for ex in load_checks().values()})
                raise KeyError(f"no exercises in chapter {item[2:]} ({item!r}); chapters with exercises: "
                               f"{', '.join(chapters)}")  # fmt: skip
            ids.extend(found)
        else:
            ids.append(get_exercise(item).id)
    return list(dict.fromkeys(ids))  # a chapter and one of its exercises: graded once


def load_checks() -> dict[str, Exercise]:
    """Import every chapter's check module (each registers its exercises); return the exercises."""
    importlib.import_module(f"{__package__}.chapters")
    return EXERCISES


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
