"""nbgrader grades the course's exercises with the course's checks, end to end (nbgrader 0.9.6 from PyPI).

``assignment --for nbgrader`` → nbgrader's release → three students (tests/graders.py) → ``nbgrader
autograde`` → ``generate_feedback`` → ``export``: the right student above the wrong one above the stub,
the course's message in the wrong one's feedback, and nothing gained by editing the checks, the
graded cell or the set-up cell.
"""

from __future__ import annotations

import csv
import html
import re
import shutil
from pathlib import Path

import pytest

from tests.graders import MESSAGE, ROOM, graders_python, hand_in, right, run, write_config
from transformer_course_tools.exercises.edition import solution_leaks

pytestmark = pytest.mark.complete_edition
ROOT = Path(__file__).resolve().parent.parent
NAME = "attention"


def _text(page: Path) -> str:
    """A feedback page's text, as a browser shows it."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def test_nbgrader_scores_right_above_wrong_above_stub_with_the_courses_message(tmp_path: Path) -> None:
    python = graders_python()
    course = tmp_path / "course"
    config = write_config(tmp_path / "grading.toml")
    run(python, ["transformer_course", "assignment", "--for", "nbgrader", str(course), "--config", str(config),
                 "--name", NAME], cwd=ROOT)  # fmt: skip
    release, source = course / "release" / NAME, course / "source" / NAME
    assert solution_leaks(ROOT, release) == []
    assert "### BEGIN SOLUTION" in (source / "ex03_attention.ipynb").read_text(encoding="utf-8")  # the source has them
    assert "exclude_overwriting" in (course / "nbgrader_config.py").read_text(encoding="utf-8")
    assert "torch==2.13.0+cpu" in (release / "requirements.txt").read_text(encoding="utf-8")  # for the hub's kernels

    for student in ("right", "wrong", "stub"):
        folder = course / "submitted" / student / NAME
        shutil.copytree(release, folder)
        hand_in(folder, student)
    run(python, ["nbgrader", "autograde", NAME], cwd=course)
    run(python, ["nbgrader", "generate_feedback", NAME], cwd=course)
    run(python, ["nbgrader", "export"], cwd=course)

    with (course / "grades.csv").open(encoding="utf-8") as sheet:
        rows = {row["student_id"]: row for row in csv.DictReader(sheet)}
    scores = {student: float(row["score"]) for student, row in rows.items()}
    # ex03_1 is worth 2 and ex03_2 1 (autograded); the written answer (1 point) waits for a person
    assert scores == {"right": 3.0, "wrong": 1.0, "stub": 0.0}
    assert {float(row["max_score"]) for row in rows.values()} == {4.0}

    autograded = course / "autograded"
    assert (autograded / "right" / NAME / ROOM).read_text(encoding="utf-8") == right()  # the student's file is kept
    restored = autograded / "wrong" / NAME / "transformer_course_tools/exercises/checks/ch03.py"
    assert restored.read_text(encoding="utf-8") == (
        source / "transformer_course_tools/exercises/checks/ch03.py"
    ).read_text(encoding="utf-8")  # the checks as handed out
    feedback = {s: _text(course / "feedback" / s / NAME / "ex03_attention.html") for s in scores}
    assert MESSAGE in feedback["wrong"]
    assert "✓ ex03_1" in feedback["right"] and "✓ ex03_2" in feedback["right"]
    assert "ex03_1 (attention_scores) is not implemented yet: edit transformer_course/attention.py" in feedback["stub"]
