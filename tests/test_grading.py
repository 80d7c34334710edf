"""Grading a class safely: a folder of adversarial submissions, written here at test time
(tests/adversarial), is scored through the command line within its limits, each problem costing
only the exercise it is in; plus the weights file and the reports."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import pytest

from transformer_course.tools.cli import main
from transformer_course.tools.grading import (
    ExerciseResult,
    GradingConfig,
    GradingReport,
    StudentReport,
    find_package,
    load_config,
    write_csv,
)

from .adversarial import EXERCISES, write_submissions

pytestmark = pytest.mark.complete_edition
ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 10  # the infinite loop costs this much; everything else finishes in well under a second


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path, float]:
    base = tmp_path_factory.mktemp("grading")
    expected = write_submissions(base / "submissions", ROOT)
    start = time.perf_counter()
    status = main([
        "grade", str(base / "submissions"), "--out", str(base / "report.csv"), "--exercises", *EXERCISES,
        "--timeout", str(TIMEOUT_S), "--memory-mb", "3072", "--jobs", "2", "--no-progress",
        "--config", str(ROOT / "grading.toml"),
    ])  # fmt: skip
    seconds = time.perf_counter() - start
    assert status == 0
    return expected, base, seconds


def test_every_adversarial_submission_is_scored_as_expected(graded: tuple[dict, Path, float]) -> None:
    expected, base, seconds = graded
    report = json.loads((base / "report.json").read_text())
    got = {s["student"]: s["results"] for s in report["students"]}
    assert set(got) == set(expected)
    rows, wrong = [], []
    for student, wanted in sorted(expected.items()):
        for exercise_id, (status, part) in wanted.items():
            result = got[student][exercise_id]
            ok = result["status"] == status and part in result["message"]
            rows.append(
                f"{student:18} {exercise_id}  expected {status:16} got {result['status']:16} {'' if ok else 'WRONG'}"
            )
            if not ok:
                wrong.append(
                    f"{student} {exercise_id}: expected {status} ({part!r}), got {result['status']}: {result['message']}"
                )
    print("\n".join(rows) + f"\ngraded in {seconds:.1f} s")
    assert not wrong, "\n".join(wrong)
    # the limits hold: the hang was stopped at its deadline, the 10 MB of printing was cut at the cap
    loop = got["infinite_loop"]["ex03_3"]
    assert TIMEOUT_S <= loop["seconds"] < TIMEOUT_S + 5
    assert got["huge_output"]["ex03_3"]["output_bytes"] <= 1024 * 1024
    assert seconds < 120, f"grading took {seconds:.0f} s"


def test_reports_csv_json_and_feedback(graded: tuple[dict, Path, float]) -> None:
    expected, base, _ = graded
    with open(base / "report.csv", newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert set(rows) == set(expected)
    assert rows["correct"]["total"] == "2" and rows["correct"]["percent"] == "100.0"
    assert rows["infinite_loop"]["ex03_1"] == "1" and rows["infinite_loop"]["ex03_3"] == "0"
    assert rows["imports_reference"]["total"] == "0"
    feedback = (base / "feedback" / "infinite_loop.md").read_text()
    assert "# Feedback for infinite_loop" in feedback and "timed out" in feedback and "1 / 2 points" in feedback
    assert "printed more than" in (base / "feedback" / "huge_output.md").read_text()
    submissions = base / "submissions"
    assert not list(submissions.rglob("__pycache__")), "grading must leave the submissions as they were"
    assert (submissions / "correct" / "transformer_course" / "attention.py").exists()


def test_the_weights_file_sets_points_and_limits(tmp_path: Path) -> None:
    default = load_config(ROOT / "grading.toml")
    assert default.points_for("ex03_1") == 1.0 and default.exercises is None
    config_file = tmp_path / "grading.toml"
    config_file.write_text(
        '[grading]\nexercises = ["ex03_1", "ex03_3"]\ndefault_points = 2\ntimeout_s = 5\n'
        "[points]\nex03_3 = 3.5\n[timeout_s]\nex03_3 = 20\n"
    )
    config = load_config(config_file)
    assert config.exercises == ["ex03_1", "ex03_3"]
    assert (config.points_for("ex03_1"), config.points_for("ex03_3")) == (2.0, 3.5)
    assert (config.timeout_for("ex03_1"), config.timeout_for("ex03_3")) == (5.0, 20.0)
    config_file.write_text("[points]\nex99_9 = 1\n")
    with pytest.raises(KeyError, match="ex99_9"):
        load_config(config_file)
    config_file.write_text("[grading]\ntimeout = 5\n")
    with pytest.raises(ValueError, match="unknown setting"):
        load_config(config_file)
    # the CSV carries the weighted points
    results = {"ex03_1": ExerciseResult("passed", "4 cases", 2.0, 2.0), "ex03_3": ExerciseResult("failed", "x", 0, 3.5)}
    report = GradingReport(["ex03_1", "ex03_3"], [StudentReport("ada", "ada/transformer_course", results)], config, 1.0)
    write_csv(report, tmp_path / "r.csv")
    assert (tmp_path / "r.csv").read_text().splitlines()[1] == "ada,2,0,2,5.5,36.4"


def test_the_package_is_found_in_every_usual_layout(tmp_path: Path) -> None:
    (tmp_path / "edition" / "transformer_course").mkdir(parents=True)
    (tmp_path / "edition" / "transformer_course" / "__init__.py").touch()
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "__init__.py").touch()
    nested = tmp_path / "zip" / "course-main" / "transformer_course"
    nested.mkdir(parents=True)
    (nested / "__init__.py").touch()
    (tmp_path / "zip" / "course-main" / ".venv" / "lib" / "transformer_course").mkdir(parents=True)
    (tmp_path / "nothing").mkdir()
    assert find_package(tmp_path / "edition") == tmp_path / "edition" / "transformer_course"
    assert find_package(tmp_path / "bare") == tmp_path / "bare"
    assert find_package(tmp_path / "zip") == nested
    assert find_package(tmp_path / "nothing") is None
    assert GradingConfig().points_for("ex03_1") == 1.0
