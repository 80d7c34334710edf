"""Shared test set-up: one pytest marker per exercise (``pytest -m ex03_1``), seeded torch."""

from __future__ import annotations

import pytest
import torch

from transformer_course.checks.registry import EXERCISES
from transformer_course.checks.runner import _load_all


def pytest_configure(config: pytest.Config) -> None:
    _load_all()
    for exercise_id, ex in sorted(EXERCISES.items()):
        config.addinivalue_line("markers", f"{exercise_id}: exercise {exercise_id} — {ex.title}")


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)
