"""The exercise system: every check passes on the solutions and reports "not implemented" on the
generated stubs; with the wrong answers each must fail (tests/test_attempts.py), no check is vacuous."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer_course_tools.exercises.checks import EXERCISES
from transformer_course_tools.exercises.checks.registry import load_checks
from transformer_course_tools.exercises.edition import stub_package

from .exercise_items import ExerciseChecks

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "transformer_course"
load_checks()

# One item per exercise, ``tests/test_exercises.py::ex03_1`` (tests/exercise_items.py): each check passes on
# the package's code (the solutions here; in a student edition, the learner's code), ``pytest -m ex03_1``.
CHECKS = ExerciseChecks()


def test_each_chapter_has_three_exercises_from_easy_to_hard() -> None:
    chapters: dict[str, list[str]] = {}
    for ex in EXERCISES.values():
        chapters.setdefault(ex.chapter, []).append(ex.difficulty)
    for chapter, levels in chapters.items():
        assert len(levels) >= 3, f"chapter {chapter} has {len(levels)} exercises"
        assert levels[0] == "easy", f"chapter {chapter} should open with an easy exercise"


@pytest.mark.complete_edition
def test_checks_report_not_implemented_on_the_stubs(tmp_path: Path) -> None:
    """Generate the stubbed package and run every check against it in a fresh interpreter."""
    import shutil

    shutil.copytree(PACKAGE, tmp_path / "transformer_course", ignore=shutil.ignore_patterns("__pycache__"))
    stub_package(tmp_path / "transformer_course")
    code = (
        "import json; from transformer_course_tools.exercises.checks import run_checks; "
        "print(json.dumps({r.id: [r.status, r.message] for r in run_checks()}))"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    results = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(results) == set(EXERCISES)
    for exercise_id, (status, message) in results.items():
        assert status == "not implemented", f"{exercise_id} on the stub: {status}: {message}"
        assert exercise_id in message or "not implemented yet" in message, message


@pytest.mark.complete_edition
def test_the_top_p_boundary_case_is_exact_in_float32() -> None:
    """ex09_2's boundary case: float32's softmax of the logs gives the probabilities back exactly, so the
    mass before token 0 is exactly top_p and the rule (kept while the mass before is < top_p) decides."""
    from transformer_course.decoding import top_p_filter  # (a room: imported by the test, never at collection)

    probs = torch.tensor([0.125, 0.5, 0.0625, 0.25, 0.0625])
    assert torch.equal(probs.log().softmax(-1), probs)
    kept = top_p_filter(probs.log(), 0.75) > float("-inf")
    assert kept.tolist() == [False, True, False, True, False]


def test_the_rule_for_masked_logits_is_said_once_and_followed() -> None:
    """One rule for "masked" (probability 0 after the softmax), said in ex03_2's statement only; the
    sampling filter's statement points to it, and its check takes either fill (tests/attempts/ex09_2.py)."""
    rule = "The course's one rule for masked scores and logits"
    said = [path.name for path in sorted((ROOT / "solutions").glob("*.py")) if rule in path.read_text()]
    assert said == ["ex03_attention.py"]
    assert "by the course's rule of ex03_2" in (ROOT / "solutions" / "ex09_decoding.py").read_text()


def test_self_learners_are_told_the_hint_levels() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## For self-learners") : readme.index("## For instructors")]
    assert "--hints nudge" in section and all(f"`{level}`" in section for level in ("full", "nudge", "none"))
    assert "recommended for studying on your own" in section
