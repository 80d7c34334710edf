"""Stand-ins: the course's own versions of the exercises that other exercises' code calls.

A check tests one exercise. Yet ``scaled_dot_product_attention`` (ex03_3) calls
``attention_scores`` and ``apply_mask`` (ex03_1, ex03_2), multi-head attention (ex04_3) calls
``split_heads`` and ``merge_heads``, an encoder layer (ex05_3) runs ``residual``, multi-head
attention and the feed-forward network… If the check ran the learner's versions of those, one
wrong answer would fail every check downstream of it. So while exercise X is checked, every call
from X's code to another exercise goes to that exercise's stand-in instead (the probe's isolation
does the switching; the learner's files are never touched).

A stand-in is written beside its exercise's check, in ``chNN.py``, and registered with it:
``@exercise(..., standin=function)``. It is written independently of the worked solution, with other
PyTorch functions and other formulas; the course's tests hold it to its exercise's check. A grading
job gets the stand-ins it needs as one module of their source (:func:`job_source`), so a stand-in
uses only the names of :data:`HEADER` and other stand-ins (by their function names), nothing else of
its check module.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable

from .registry import EXERCISES, load_checks

# What a stand-in may use besides other stand-ins: the imports of a grading job's module of stand-ins.
HEADER = """from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
"""


def standins() -> dict[str, Callable]:
    """Exercise id → its stand-in, for every exercise that has one (every chapter's checks loaded)."""
    load_checks()
    return {exercise_id: ex.standin for exercise_id, ex in sorted(EXERCISES.items()) if ex.standin is not None}


def job_source(uses: Iterable[str]) -> str:
    """A module's source holding the stand-ins of the exercises ``uses`` (and those they call), as
    ``STANDINS``: what a grading job gets for an exercise whose code calls them (and nothing else)."""
    table = standins()
    functions = _functions()
    needed = standin_closure(uses)
    sources = [inspect.getsource(fn) for name, fn in functions.items() if name in needed]
    entries = ", ".join(f"{i!r}: {table[i].__name__}" for i in sorted(uses))
    return "\n".join([HEADER, *sources, f"STANDINS = {{{entries}}}", ""])


def standin_closure(uses: Iterable[str]) -> set[str]:
    """The names of the stand-in functions that the stand-ins of ``uses`` need, themselves included."""
    table, functions = standins(), _functions()
    todo, needed = [table[i].__name__ for i in uses], set()
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo += [other for other in functions[name].__code__.co_names if other in functions]
    return needed


def _functions() -> dict[str, Callable]:
    """Function name → stand-in, in the order of the exercises; a name given to two stand-ins is refused
    (a grading job's module holds them side by side)."""
    functions: dict[str, Callable] = {}
    for exercise_id, fn in standins().items():
        if functions.setdefault(fn.__name__, fn) is not fn:
            raise ValueError(f"two stand-ins are named {fn.__name__} ({exercise_id}'s is one): rename one")
    return functions
