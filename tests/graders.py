"""What the tests of nbgrader and Otter-Grader share: the tools' Python, and three students.

The tools live in ``.venv/graders`` (``make graders``; ``make test`` makes it): they pull ipywidgets,
which must stay out of ``.venv``. Where that Python is missing a test skips naming it, unless
``COURSE_REQUIRE_GRADERS`` is set (``.ci/run`` sets it): there it fails, so CI cannot pass by skipping.

The students of ex03 (attention): ``right`` hands in the worked ``attention.py``; ``wrong`` divides the
scores by d_k instead of its square root, and also tries to pass anyway: he edits the course's check
of ex03_1 to accept anything, rewrites his copy of the graded test (nbgrader's cell, Otter's copy in the
notebook) and the set-up cell, and hands in a ``transformer_course_check.py`` of his own and a package
of that name; ``stub`` hands in the file as the course gave it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROOM = "transformer_course/attention.py"
MESSAGE = "the scores are divided by d_k; divide by sqrt(d_k) instead"  # what the course's check says to him
FAKE_CHECK = "class R:\n    passed = True\n    def line(self):\n        return 'ok'\n\ndef run_course_check(i):\n    return R()\n"


def right() -> str:
    """The worked ``attention.py`` (the complete edition's: these tests are skipped in the student edition)."""
    return (ROOT / ROOM).read_text(encoding="utf-8")


def wrong() -> str:
    """``attention.py`` with the scores divided by d_k instead of its square root."""
    text = right().replace("/ math.sqrt(d_k)  # (..., T, S)", "/ d_k  # (..., T, S)")
    assert text != right(), "attention.py no longer holds the line the wrong student changes"
    return text


def graders_python() -> Path:
    """The Python of ``.venv/graders`` (or ``COURSE_GRADERS_PYTHON``); skip (fail in CI) without it."""
    venv = ROOT / ".venv" / "graders"
    given = os.environ.get("COURSE_GRADERS_PYTHON")
    python = Path(given) if given else venv / "bin" / "python"
    if python.is_file() and (given or (venv / ".installed").is_file()):  # make graders finished there
        return python
    reason = f"nbgrader and otter-grader are not installed ({venv} is not complete): make graders"
    if os.environ.get("COURSE_REQUIRE_GRADERS"):
        pytest.fail(f"{reason} (COURSE_REQUIRE_GRADERS is set)")
    pytest.skip(reason)


def run(python: Path, args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m ARGS`` in ``cwd`` with the tools' scripts first on the PATH; fails the test on an error."""
    env = {**os.environ, "PATH": os.pathsep.join([str(python.parent), os.environ.get("PATH", "")])}
    done = subprocess.run([str(python), "-m", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    assert done.returncode == 0, f"{' '.join(args[:3])} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def write_config(path: Path) -> Path:
    """An assignment of ex03_1 (2 points) and ex03_2 (1 point), with one written question (1 point)."""
    path.write_text('[grading]\nexercises = ["ex03_1", "ex03_2"]\n\n[points]\nex03_1 = 2\n\n'
                    '[written]\nquestions = ["ex03_q1"]\n', encoding="utf-8")  # fmt: skip
    return path


def hand_in(folder: Path, student: str) -> None:
    """Make ``folder`` (a copy of the release) ``student``'s work."""
    if student == "right":
        (folder / ROOM).write_text(right(), encoding="utf-8")
    if student != "wrong":
        return
    (folder / ROOM).write_text(wrong(), encoding="utf-8")
    checks = folder / "transformer_course_tools/exercises/checks/ch03.py"
    judge = "def _judge_scores(case: Case, got: Outcome) -> None:\n"
    assert judge in checks.read_text(encoding="utf-8")
    checks.write_text(checks.read_text(encoding="utf-8").replace(judge, judge + "    return\n"), encoding="utf-8")
    (folder / "transformer_course_check.py").write_text(FAKE_CHECK, encoding="utf-8")
    (folder / "transformer_course_check").mkdir()  # a package of that name is imported before the module
    (folder / "transformer_course_check" / "__init__.py").write_text(FAKE_CHECK, encoding="utf-8")
    for notebook in folder.glob("*.ipynb"):
        cells = json.loads(notebook.read_text(encoding="utf-8"))
        for cell in cells["cells"]:
            source = "".join(cell["source"])
            if 'run_course_check("ex03_1")' in source:  # his copy of the graded cell
                cell["source"] = "print('ex03_1 passed')\n"
            elif "from transformer_course import" in source:  # the set-up cell: a helper of his own
                cell["source"] = (
                    source + "\nimport sys, types\nsys.modules['transformer_course_check'] = types.ModuleType('x')\n"
                )
        for test in cells["metadata"].get("otter", {}).get("tests", {}).values():  # Otter's copy of its tests
            for suite in test["suites"]:
                for case in suite["cases"]:
                    case["code"] = ">>> assert True\n"
        notebook.write_text(json.dumps(cells), encoding="utf-8")
