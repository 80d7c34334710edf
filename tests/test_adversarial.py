"""Grading a student cannot forge: every attack of tests/adversarial/attacks.py, graded through
the command line, gains no point, changes no file of a classmate or of the instructor, and is named
in the report, with a sandbox (bubblewrap or unshare, whichever works here) and without one.

Without a sandbox, the attacks it does not protect against (another copy of the course on the
machine, filling the disk) are not run: the README's instructor section says so.

The attacks on the warm worker (tests/adversarial/attacks.py, ``worker_attacks``) are graded on two
exercises per student, so that one exercise's child can try to reach the worker that runs the next
one: trace it, write its memory, descriptors or files, outlive its exercise, forge the next answer,
kill or stop it. None gains a point, and the next exercise is judged as if alone.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import site
import time
import uuid
from pathlib import Path

import pytest

from transformer_course_tools.cli import main
from transformer_course_tools.exercises.edition import solution_snippets
from transformer_course_tools.grading import sandbox

from . import sandboxes
from .adversarial import PACKAGE
from .adversarial.attacks import WORKER_EXERCISES, write_attacks, write_worker_attacks

pytestmark = pytest.mark.complete_edition
ROOT = Path(__file__).resolve().parent.parent
REPORT_DELAY_S = 6  # the fork attack's child waits 4 s before it rewrites the report


def _hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}  # fmt: skip


def _instructor_files() -> dict[str, str]:
    return _hashes(ROOT / "transformer_course_tools")


@pytest.fixture(scope="module", params=["sandbox", "none"])
def graded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    support = sandboxes.needs() if request.param == "sandbox" else sandbox.probe("none")
    base = tmp_path_factory.mktemp(f"attacks-{request.param}")
    (base / "other_course" / PACKAGE).mkdir(parents=True)
    shutil.copy(ROOT / PACKAGE / "attention.py", base / "other_course" / PACKAGE / "attention.py")
    line = next(s for s, origin in solution_snippets(ROOT).items() if origin.startswith(f"{PACKAGE}/attention.py"))
    paths = {
        "root": str(ROOT), "submissions": str(base / "ex03_1"), "report": str(base / "ex03_1.csv"),
        "other_copy": str(base / "other_course"), "checks": str(ROOT / "transformer_course_tools" / "exercises" / "checks" / "ch03.py"),
        "pth": str(Path(site.getsitepackages()[0]) / f"zz_attack_{uuid.uuid4().hex}.pth"),
        "filler": f"filler-{uuid.uuid4().hex}", "solution_line": line,
    }  # fmt: skip
    attacks = write_attacks(base / "ex03_1", ROOT, paths)
    if request.param == "none":  # what the audit hook does not stop is not run (the README says so)
        for name in [n for n, attack in attacks.items() if attack.none is None]:
            shutil.rmtree(base / "ex03_1" / name)
            del attacks[name]
    shutil.move(base / "ex03_1" / "always_equal_list", base / "ex01_1" / "always_equal_list")
    shutil.copytree(base / "ex03_1" / "bystander", base / "ex01_1" / "bystander", symlinks=True)
    before = {"submissions": _hashes(base / "ex03_1"), "instructor": _instructor_files()}
    checks = Path(paths["checks"]).read_bytes()
    start = time.perf_counter()
    try:
        for exercise in ("ex03_1", "ex01_1"):
            status = main([
                "grade", str(base / exercise), "--out", str(base / f"{exercise}.csv"), "--exercises", exercise,
                "--sandbox", support.mechanism, "--timeout", "60", "--memory-mb", "3072", "--jobs", "2",
                "--no-progress",
            ])  # fmt: skip
            assert status == 0
        seconds = time.perf_counter() - start
        finished = time.monotonic()
        report_bytes = (base / "ex03_1.csv").read_bytes()
        after = {"submissions": _hashes(base / "ex03_1"), "instructor": _instructor_files()}
    finally:  # should an attack have got through, undo its harm to this checkout (the test fails all the same)
        Path(paths["pth"]).unlink(missing_ok=True)
        if Path(paths["checks"]).read_bytes() != checks:
            Path(paths["checks"]).write_bytes(checks)
    results = {}
    for exercise in ("ex03_1", "ex01_1"):
        report = json.loads((base / f"{exercise}.json").read_text())
        results |= {s["student"]: s["results"][exercise] for s in report["students"] if s["student"] != "bystander"}
        results[f"bystander ({exercise})"] = next(s for s in report["students"] if s["student"] == "bystander")[
            "results"][exercise]  # fmt: skip
    return {"mode": request.param, "mechanism": support.mechanism, "attacks": attacks, "results": results,
            "base": base, "paths": paths, "before": before, "after": after, "seconds": seconds,
            "finished": finished, "report_bytes": report_bytes}  # fmt: skip


def test_no_attack_gains_a_point_and_each_is_named_in_the_report(graded: dict) -> None:
    rows, wrong = [], []
    for name, attack in sorted(graded["attacks"].items()):
        result = graded["results"][name]
        status, part = attack.sandbox if graded["mode"] == "sandbox" else attack.none
        ok = result["status"] == status and part in result["message"] and result["points"] == 0
        rows.append(f"{name:22} {result['status']:17} {result['points']:g}  {result['message'][:110]}")
        if not ok:
            wrong.append(f"{name}: expected {status} ({part!r}), got {result['status']}: {result['message']}")
    print(f"\n{graded['mode']} ({graded['mechanism']}), graded in {graded['seconds']:.1f} s\n" + "\n".join(rows))
    assert not wrong, "\n".join(wrong)


def test_the_classmate_is_graded_as_if_alone(graded: dict) -> None:
    for exercise in ("ex03_1", "ex01_1"):
        result = graded["results"][f"bystander ({exercise})"]
        assert result["status"] == "passed" and result["points"] == 1, result


def test_no_file_of_a_classmate_or_of_the_instructor_changed(graded: dict) -> None:
    assert graded["after"]["submissions"] == graded["before"]["submissions"]
    assert graded["after"]["instructor"] == graded["before"]["instructor"]
    assert not Path(graded["paths"]["pth"]).exists()
    assert not (Path("/tmp") / graded["paths"]["filler"]).exists()


def test_no_leftover_process_changes_the_report(graded: dict) -> None:
    time.sleep(max(0.0, REPORT_DELAY_S - (time.monotonic() - graded["finished"])))
    assert (graded["base"] / "ex03_1.csv").read_bytes() == graded["report_bytes"]
    rows = (graded["base"] / "ex03_1.csv").read_text().splitlines()
    assert rows[0].startswith("student,ex03_1") and any(r.startswith("bystander,1,") for r in rows)


def test_the_feedback_carries_no_solution_text(graded: dict) -> None:
    line = graded["paths"]["solution_line"]
    written = [graded["base"] / f"ex03_1.{suffix}" for suffix in ("csv", "json")]
    written += list((graded["base"] / "feedback").glob("*.md"))
    for path in written:
        assert line not in " ".join(path.read_text().split()), path
    assert "removed: course solution text" in graded["results"]["exception_leak"]["message"]


# -- attacks on the warm worker: each student's exercises share one worker, each runs in a fresh child ----

WORKER_TIMEOUT_S = 20  # the child that never exits costs this much; stopping the worker this + the grace


@pytest.fixture(scope="module", params=["sandbox", "none"])
def worker_graded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    support = sandboxes.needs() if request.param == "sandbox" else sandbox.probe("none")
    base = tmp_path_factory.mktemp(f"worker-attacks-{request.param}")
    attacks = write_worker_attacks(base / "class", ROOT)
    before = _hashes(base / "class")
    status = main([
        "grade", str(base / "class"), "--out", str(base / "report.csv"), "--exercises", *WORKER_EXERCISES,
        "--sandbox", support.mechanism, "--timeout", str(WORKER_TIMEOUT_S), "--memory-mb", "3072", "--jobs", "2",
        "--no-progress",
    ])  # fmt: skip
    assert status == 0
    report = json.loads((base / "report.json").read_text())
    results = {s["student"]: s["results"] for s in report["students"]}
    return {
        "mode": request.param,
        "attacks": attacks,
        "results": results,
        "unchanged": _hashes(base / "class") == before,
    }


def test_no_attack_on_the_worker_gains_a_point_or_reaches_the_next_exercise(worker_graded: dict) -> None:
    rows, wrong = [], []
    for name, attack in sorted(worker_graded["attacks"].items()):
        expected = attack.sandbox if worker_graded["mode"] == "sandbox" else attack.none
        for exercise in WORKER_EXERCISES:
            result = worker_graded["results"][name][exercise]
            status, part = expected[exercise]
            ok = result["status"] == status and part in result["message"]
            ok = ok and result["points"] == (1 if status == "passed" else 0)
            rows.append(f"{name:14} {exercise} {result['status']:10} {result['points']:g}  {result['message'][:100]}")
            if not ok:
                wrong.append(f"{name} {exercise}: expected {status} ({part!r}), got {result['status']}: "
                             f"{result['message']}")  # fmt: skip
    print(f"\nworker attacks, {worker_graded['mode']}\n" + "\n".join(rows))
    assert not wrong, "\n".join(wrong)
    assert all(r["status"] == "passed" for r in worker_graded["results"]["bystander"].values())
    assert worker_graded["unchanged"], "grading must leave the submissions as they were"
