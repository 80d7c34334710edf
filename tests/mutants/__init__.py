"""Typical wrong answers, one or more per exercise: each check must reject each of them.

This folder is left out of the student edition (the mutants are close to the solutions).
Each chapter module defines ``MUTANTS: dict[str, list[tuple[str, Callable]]]``:
exercise id → (what is wrong, the wrong implementation).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable


def all_mutants() -> dict[str, list[tuple[str, Callable]]]:
    found: dict[str, list[tuple[str, Callable]]] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for exercise_id, mutants in module.MUTANTS.items():
            found.setdefault(exercise_id, []).extend(mutants)
    return found
