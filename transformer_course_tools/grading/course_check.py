"""The course's check of one exercise, as nbgrader's and Otter's test cells run it.

An assignment made for those tools (``python -m transformer_course assignment``) ships this file
next to its notebooks as ``transformer_course_check.py``, with its settings in
``transformer_course_check.json``: the files of the package the course handed out, the files the
student writes (their rooms), the hint level and, per exercise, its title and time limit. A test
cell runs this file by its path (``runpy.run_path``: a module or package of that name that a student
adds is not it) and calls ``run_course_check("ex03_1")``, which:

1. makes a clean copy of the package in a temporary folder: the course's files, each from the copy
   the tool keeps (nbgrader's autograde has just restored them; Otter's autograder has its own in
   ``../source/files``), never a file the student added (a shadowing module, a stale ``.pyc``), then
   the student's room files over them (``transformer_course/attention.py``, or ``attention.py`` next
   to the notebook, as a Gradescope upload of loose files leaves it);
2. runs the course's own ``run_check`` there in a fresh Python (``-I``: the notebook's ``sys.path``,
   its imports and the set-up cell count for nothing) within the exercise's time limit;
3. returns what the check said, for the test cell to print and assert.

It runs inside the tool's kernel with the standard library only: nothing of the course is imported
here. What it does not stop is the tool's to stop (its isolation): code the student writes in their
own room or notebook runs in that Python too, and code written to defeat a test can. The course's
own ``grade`` decides outside the student's code.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

SETTINGS = "transformer_course_check.json"  # next to this file, as the release ships it
MARK = "@@transformer-course-check@@"  # starts the line with the verdict in the checking Python's output
SYMBOLS = {"passed": "✓", "failed": "✗", "not implemented": "○", "error": "!", "timed out": "◷"}  # checks/status.py

# What the fresh Python runs: the clean copy first on its path, the course's check, one line back.
_CHECK = """
import json, os, sys
folder, package, exercise_id, hints, mark = sys.argv[1:6]
sys.path.insert(0, folder)
for name in (package, "transformer_course_tools"):  # the learner's package and the course's side: both the copy's
    module = __import__(name)
    if not os.path.realpath(module.__file__).startswith(os.path.realpath(folder) + os.sep):
        raise SystemExit(f"the package imported is {module.__file__}, not the clean copy in {folder}")
from transformer_course_tools.exercises.checks import run_check
r = run_check(exercise_id, hints=hints)
fields = ("id", "title", "status", "message", "cases_passed", "cases_total")
print(mark + json.dumps({name: getattr(r, name) for name in fields}), flush=True)
"""


@dataclass(frozen=True)
class CourseCheck:
    """What the course's check said about one exercise (the fields of ``CheckResult``)."""

    id: str
    title: str
    status: str
    message: str
    cases_passed: int = 0
    cases_total: int = 0

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def line(self) -> str:
        """One line, as the course's ``check`` prints it."""
        return f"{SYMBOLS.get(self.status, '?')} {self.id} {self.title}: {self.status} — {self.message}"


def run_course_check(exercise_id: str, folder: str | os.PathLike | None = None) -> CourseCheck:
    """The course's check of ``exercise_id`` on the student's files next to this file (or in
    ``folder``): a clean copy of the package, a fresh Python; never raises."""
    here = Path(folder) if folder is not None else Path(__file__).resolve().parent
    try:
        settings = json.loads((here / SETTINGS).read_text(encoding="utf-8"))
        exercise = settings["exercises"][exercise_id]
    except (OSError, ValueError, KeyError) as error:
        return CourseCheck(exercise_id, "", "error", f"no settings for {exercise_id} in {here / SETTINGS}: {error}")
    with tempfile.TemporaryDirectory(prefix="course-check-") as scratch:
        missing = clean_copy(here, settings, Path(scratch))
        if missing:
            message = f"{missing} is not in the submission: hand it in with the notebook"
            return CourseCheck(exercise_id, exercise["title"], "error", message)
        return _checked(Path(scratch), settings, exercise_id, exercise)


def clean_copy(here: Path, settings: dict, folder: Path) -> str | None:
    """Copy the course's files (from the tool's own copy where there is one) and then the student's
    rooms from ``here`` into ``folder``; return the first room the student did not hand in."""
    trusted = here / settings["trusted"] if settings.get("trusted") else here
    base = trusted if trusted.is_dir() else here  # no tool's copy: the student's own run of the cell
    for rel in settings["files"]:
        if (base / rel).is_file():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(base / rel, folder / rel)
    for rel in settings["rooms"]:
        found = [p for p in (here / rel, here / Path(rel).name) if p.is_file()]
        if not found:
            return rel
        shutil.copyfile(found[0], folder / rel)
    return None


def _checked(folder: Path, settings: dict, exercise_id: str, exercise: dict) -> CourseCheck:
    """Run the check in a fresh Python on ``folder``; its verdict, or why there is none."""
    title, limit = exercise["title"], float(exercise["timeout_s"])
    command = [sys.executable, "-I", "-X", "utf8", "-c", _CHECK, str(folder), settings["package"], exercise_id,
               settings["hints"], MARK]  # fmt: skip
    try:
        done = subprocess.run(command, cwd=folder, stdin=subprocess.DEVNULL, capture_output=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return CourseCheck(exercise_id, title, "timed out", f"still running after {limit:g} s (an infinite loop?)")
    output = done.stdout.decode("utf-8", "replace")
    for line in reversed(output.splitlines()):
        if line.startswith(MARK):
            return CourseCheck(**json.loads(line[len(MARK) :]))
    said = (done.stderr.decode("utf-8", "replace") or output).strip().splitlines()[-3:]
    return CourseCheck(exercise_id, title, "error", f"the check ended without a verdict (exit status "
                       f"{done.returncode}): {' / '.join(said) or 'no output'}")  # fmt: skip
