"""Otter-Grader grades the course's exercises with the course's checks, end to end (otter-grader 7.0.0).

``assignment --for otter`` → ``otter assign`` (the students' folder, the Gradescope autograder zip) →
three students' zips (tests/graders.py), as ``grader.export()`` makes them → ``otter run``: the right
student above the wrong one above the stub, the course's message in the wrong one's results, and
nothing gained by editing the checks, Otter's tests in the notebook or the set-up cell.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.graders import MESSAGE, ROOM, graders_python, hand_in, run, write_config
from transformer_course_tools.exercises.edition import solution_leaks

pytestmark = pytest.mark.complete_edition
ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "ex03_attention"


def test_otter_scores_right_above_wrong_above_stub_with_the_courses_message(tmp_path: Path) -> None:
    python = graders_python()
    out = tmp_path / "otter"
    config = write_config(tmp_path / "grading.toml")
    run(python, ["transformer_course", "assignment", "--for", "otter", str(out), "--config", str(config)], cwd=ROOT)
    folder = out / NOTEBOOK
    student, (autograder,) = folder / "dist" / "student", sorted((folder / "dist" / "autograder").glob("*.zip"))
    assert "# BEGIN SOLUTION" in (folder / f"{NOTEBOOK}.ipynb").read_text(encoding="utf-8")  # the master has them
    assert solution_leaks(ROOT, student) == []
    with zipfile.ZipFile(autograder) as archive:
        names = set(archive.namelist())
        environment = archive.read("environment.yml").decode()
    assert {"tests/ex03_1.py", "tests/ex03_2.py", f"files/{ROOM}", "files/transformer_course_check.py"} <= names
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in environment
    assert "torch==2.13.0+cpu" in environment

    results = {}
    for name in ("right", "wrong", "stub"):
        work = tmp_path / name
        work.mkdir()
        for path in student.rglob("*"):  # the student's copy of what they were given
            if path.is_file():
                (work / path.relative_to(student)).parent.mkdir(parents=True, exist_ok=True)
                (work / path.relative_to(student)).write_bytes(path.read_bytes())
        hand_in(work, name)
        submission = tmp_path / f"{name}.zip"
        with zipfile.ZipFile(submission, "w") as archive:  # what grader.export() zips: the notebook, the room
            archive.write(work / f"{NOTEBOOK}.ipynb", f"{NOTEBOOK}.ipynb")
            archive.write(work / ROOM, ROOM)
            if name == "wrong":  # he hands in his edited checks and helper too
                for extra in ("transformer_course_tools/exercises/checks/ch03.py", "transformer_course_check.py",
                              "transformer_course_check/__init__.py"):  # fmt: skip
                    archive.write(work / extra, extra)
        (tmp_path / f"out-{name}").mkdir()
        run(python, ["otter", "run", "-a", str(autograder), "-o", str(tmp_path / f"out-{name}"), str(submission)],
            cwd=tmp_path)  # fmt: skip
        results[name] = json.loads((tmp_path / f"out-{name}" / "results.json").read_text(encoding="utf-8"))

    scores = {name: {t["name"]: t["score"] for t in r["tests"] if "score" in t} for name, r in results.items()}
    assert scores == {"right": {"ex03_1": 2, "ex03_2": 1}, "wrong": {"ex03_1": 0, "ex03_2": 1},
                      "stub": {"ex03_1": 0, "ex03_2": 0}}  # fmt: skip
    said = {name: "\n".join(t.get("output", "") for t in r["tests"]) for name, r in results.items()}
    assert MESSAGE in said["wrong"]
    assert "ex03_1 (attention_scores) is not implemented yet: edit transformer_course/attention.py" in said["stub"]
