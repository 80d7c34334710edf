"""Grading a class: a folder of awkward submissions (tests/adversarial) is scored through the command
line within its limits, each problem costing only the exercise it is in; wrong answers graded as
packages get the very messages the local check gives; bad input is refused in one line; results,
copies, messages and reports are checked on their own. The attacks are in tests/test_adversarial.py."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import site
import struct
import sys
import time
from pathlib import Path

import pytest
import torch

from transformer_course_tools import course, grading
from transformer_course_tools.cli import main
from transformer_course_tools.exercises.checks import get_exercise, run_check
from transformer_course_tools.exercises.probe.wire import MAGIC, MalformedResult, Opaque, frame, plain, read_payload
from transformer_course_tools.grading import (
    ExerciseResult,
    GradingConfig,
    GradingReport,
    Refused,
    Scrubber,
    StudentReport,
    WorkerLost,
    copy_package,
    feedback_markdown,
    find_package,
    grade,
    load_config,
    sandbox,
    summary_table,
    write_atomically,
    write_csv,
)
from transformer_course_tools.grading.workers import Worker, hidden_course_packages

from . import sandboxes
from .adversarial import EXERCISES, PACKAGE, write_submissions

pytestmark = pytest.mark.complete_edition
ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 20  # the infinite loop costs this much; a job starts Python and torch in a few seconds
SUPPORT = sandbox.probe()


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path, float]:
    base = tmp_path_factory.mktemp("grading")
    expected = write_submissions(base / "submissions", ROOT, SUPPORT.isolated)
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
    print("\n".join(rows) + f"\ngraded in {seconds:.1f} s ({report['sandbox']})")
    assert not wrong, "\n".join(wrong)
    # the limits hold: the hang was stopped at its deadline, the 10 MB of printing was cut at the cap
    loop = got["infinite_loop"]["ex03_3"]
    assert TIMEOUT_S <= loop["seconds"] < TIMEOUT_S + 10
    assert got["huge_output"]["ex03_3"]["output_bytes"] > 1024 * 1024
    assert seconds < 600, f"grading took {seconds:.0f} s"


def test_reports_csv_json_and_feedback(graded: tuple[dict, Path, float]) -> None:
    expected, base, _ = graded
    with open(base / "report.csv", newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert set(rows) == set(expected)
    # ex03's 5 written questions (1 point each) count in max_points, blank until grade-written merges their points
    assert (rows["correct"]["total"], rows["correct"]["max_points"], rows["correct"]["percent"]) == ("2", "7", "28.6")
    assert rows["correct"]["ex03_q1"] == "" and (base / "written.csv").is_file()
    assert rows["infinite_loop"]["ex03_1"] == "1" and rows["infinite_loop"]["ex03_3"] == "0"
    assert rows["imports_reference"]["total"] == "0"
    feedback = (base / "feedback" / "infinite_loop.md").read_text()
    assert "# Feedback for infinite_loop" in feedback and "timed out" in feedback and "1 / 7 points" in feedback
    assert "printed more than" in (base / "feedback" / "huge_output.md").read_text()
    assert json.loads((base / "report.json").read_text())["sandbox"] == SUPPORT.description
    submissions = base / "submissions"
    assert not list(submissions.rglob("__pycache__")), "grading must leave the submissions as they were"
    assert (submissions / "correct" / "transformer_course" / "attention.py").exists()
    assert not [p for p in base.iterdir() if p.name.startswith(".")], "no temporary report file is left behind"


# -- wrong answers handed in as packages get the local check's message --------------------------------

_GRAFTED = {"ex02_2": ("_in_place", "_batch_size_as_length"), "ex04_3": ("_forgets_w_o", "_reversed_polarity"),
            "ex08_4": ("_no_zero_grad", "_stays_in_eval_mode"), "ex12_2": ("_first_two_only", "_accepts_other_keys"),
            "ex13_2": ("_half_split_pairs", "_positions_ignored")}  # fmt: skip


def _graft(package: Path, attempt) -> None:  # noqa: ANN001 - an Attempt (tests/attempts)
    """Make ``package``'s exercise the wrong answer: its module ends by rebinding the target to it."""
    from .attempts import source_of

    target = get_exercise(attempt.exercise)
    (package / "_mutant.py").write_text(f"{source_of(attempt)}\nMUTANT = {attempt.name}\n")
    owner, _, name = target.qualname.rpartition(".")
    binding = f"{owner}.{name} = _mutant" if owner else f"{name} = _mutant"
    with open(ROOT / target.file) as original, open(package.parent / target.file, "w") as grafted:
        grafted.write(original.read() + f"\n\nfrom ._mutant import MUTANT as _mutant  # noqa: E402\n{binding}\n")


@pytest.mark.parametrize("exercise_id", sorted(_GRAFTED))
def test_mutant_packages_get_the_local_checks_verdict(exercise_id: str, tmp_path: Path) -> None:
    from .attempts import attempts

    mutants = {attempt.name: attempt for attempt in attempts(exercise_id)}
    shutil.copytree(ROOT / PACKAGE, tmp_path / "correct" / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    for name in _GRAFTED[exercise_id]:
        package = tmp_path / name.strip("_") / PACKAGE  # a folder named _x would be skipped, as __MACOSX is
        shutil.copytree(ROOT / PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__", "tools"))
        _graft(package, mutants[name])
    report = grade(tmp_path, GradingConfig(timeout_s=120, memory_mb=3072, jobs=2), [exercise_id], progress=False)
    results = {s.student: s.results[exercise_id] for s in report.students}
    assert results["correct"].status == "passed", results["correct"].message
    for name in _GRAFTED[exercise_id]:
        local = run_check(exercise_id, mutants[name].impl)
        assert local.status == "failed"
        got = results[name.strip("_")]
        assert (got.status, got.message) == (local.status, local.message), mutants[name].what


# -- bad input: one line, exit status 2 ----------------------------------------------------------


def _refused(capsys: pytest.CaptureFixture, args: list[str], part: str) -> None:
    status = main(["grade", *args, "--no-progress"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.count("\n") == 1 and err.startswith("error: ") and part in err, err


def test_grade_refuses_bad_input_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    subs = tmp_path / "subs"
    (subs / "ada").mkdir(parents=True)
    out = str(tmp_path / "r.csv")
    _refused(capsys, [str(tmp_path / "missing"), "--out", out], "is not a folder of submissions")
    (tmp_path / "file.zip").write_bytes(b"PK")
    _refused(capsys, [str(tmp_path / "file.zip"), "--out", out], "is not a folder of submissions")
    _refused(capsys, [str(subs), "--out", str(tmp_path / "r.txt")], "--out must name a .csv file")
    _refused(capsys, [str(subs), "--out", out, "--exercises", "ex99_9"], "unknown exercise 'ex99_9'")
    _refused(capsys, [str(subs), "--out", out, "--jobs", "0"], "--jobs must be ≥ 1")
    _refused(capsys, [str(subs), "--out", out, "--timeout", "nan"], "--timeout a number > 0")
    _refused(capsys, [str(subs), "--out", out, "--sandbox", "none", "--require-sandbox"], "--require-sandbox")
    _refused(capsys, [str(subs), "--out", out, "--resume"], "--resume: there is no interrupted run to resume")
    _refused(capsys, [str(tmp_path / "subs" / "ada"), "--out", out, "--exercises", "ex03_1"], "no submission folders")
    config = tmp_path / "grading.toml"
    for text, part in [("[grading\n", "not valid TOML"), ("[grading]\njobs = 0\n", "jobs = 0 must be at least 1"),
                       ("[grading]\ntimeout_s = nan\n", "finite number"), ("[grading]\nexercises = 5\n", "exercises must"),
                       ("[grading]\nmemory_mb = 'a lot'\n", "whole number"), ("[points]\nex99_9 = 1\n", "ex99_9")]:  # fmt: skip
        config.write_text(text)
        _refused(capsys, [str(subs), "--out", out, "--config", str(config)], part)
    _refused(capsys, [str(subs), "--out", out, "--config", str(tmp_path / "none.toml")], "does not exist")


def test_require_sandbox_refuses_where_none_works(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox, "probe", lambda mechanism=None: sandbox.SandboxSupport("none", False, "no bwrap"))
    (tmp_path / "ada").mkdir()
    with pytest.raises(sandbox.SandboxError, match="no sandbox works here: no bwrap"):
        grade(tmp_path, GradingConfig(), ["ex03_1"], progress=False, require_sandbox=True)


# -- the pieces: the result channel, the copies, the messages, the reports ------------------------------


def _payload(cases: list) -> dict:
    return {"cases": cases, "fatal": None, "package_error": None, "guard": None}


def _call(output: object) -> dict:
    return {"output": output, "requires_grad": None, "error": None, "changed": [], "grad": None}


class AlwaysEqual(list):
    def __eq__(self, other: object) -> bool:
        return True


class Liar(torch.Tensor):
    pass


def test_the_result_channel_accepts_plain_data_only() -> None:
    good = _payload([{"calls": [_call(plain(torch.ones(2, 3)))], "report": {"n": 5}}])
    assert torch.equal(read_payload(frame(good), 1)["cases"][0]["calls"][0]["output"], torch.ones(2, 3))
    decoded = read_payload(frame(_payload([{"calls": [_call(plain(AlwaysEqual([1])))], "report": {}}])), 1)
    assert isinstance(decoded["cases"][0]["calls"][0]["output"], Opaque)  # the child sends its type's name only
    assert type(plain(torch.zeros(2).as_subclass(Liar))) is torch.Tensor
    forged = [
        b"passed\n",  # a line of text
        frame(good) + b"passed\n",  # something written after the result
        frame(good)[:-10],  # cut short
        MAGIC + struct.pack(">Q", 2**40) + b"x",  # a length that does not match
        frame(_payload([{"calls": [_call(AlwaysEqual([1]))], "report": {}}])),  # a class of the child's choosing
        frame(_payload([{"calls": [_call(torch.zeros(2).as_subclass(Liar))], "report": {}}])),
        frame(_payload([{"calls": [_call(torch.zeros(2, dtype=torch.complex64))], "report": {}}])),
        frame(_payload([{"calls": [_call("x" * 5000)], "report": {}}])),  # an oversized message
        frame(_payload([{"calls": [_call(None)], "report": {}}] * 2)),  # more cases than were sent
        frame({**good, "status": "passed"}),  # a field the probe never writes
        frame(_payload([{"calls": [{"output": 1, "status": "passed"}], "report": {}}])),
        frame(_payload([{"calls": [_call(torch.zeros(2**23))], "report": {}}])),  # too large
    ]
    for data in forged:
        with pytest.raises(MalformedResult):
            read_payload(data, 1)


def test_a_submission_is_copied_without_links_or_tools_within_caps(tmp_path: Path) -> None:
    ada = tmp_path / "ada"
    shutil.copytree(ROOT / PACKAGE, ada / PACKAGE, ignore=shutil.ignore_patterns("__pycache__", "assets"))
    config = GradingConfig(max_files=sum(p.is_file() for p in (ada / PACKAGE).rglob("*")) + 10)  # room for 10 more
    copy_package(ada, ada / PACKAGE, tmp_path / "copy", config)
    assert (tmp_path / "copy" / "attention.py").read_bytes() == (ROOT / PACKAGE / "attention.py").read_bytes()
    assert not (tmp_path / "copy" / "tools").exists()  # the course's machinery is not the student's to hand in
    assert not (tmp_path / "copy" / "engine").exists()  # nor its inference engine
    assert oct((tmp_path / "copy" / "attention.py").stat().st_mode & 0o777) == "0o644"
    (ada / PACKAGE / "secret.py").symlink_to(ROOT / PACKAGE / "attention.py")
    with pytest.raises(Refused, match=r"ada/transformer_course/secret.py is a symbolic link"):
        copy_package(ada, ada / PACKAGE, tmp_path / "copy2", config)
    (ada / PACKAGE / "secret.py").unlink()
    os.mkfifo(ada / PACKAGE / "pipe")
    with pytest.raises(Refused, match="not a regular file or folder"):
        copy_package(ada, ada / PACKAGE, tmp_path / "copy3", config)
    (ada / PACKAGE / "pipe").unlink()
    for i in range(60):
        (ada / PACKAGE / f"note{i}.txt").write_text("x")
    with pytest.raises(Refused, match="larger than the caps"):
        copy_package(ada, ada / PACKAGE, tmp_path / "copy4", config)
    bob = tmp_path / "bob"
    bob.mkdir()
    (bob / PACKAGE).symlink_to(ada / PACKAGE)
    with pytest.raises(Refused, match="bob/transformer_course is a symbolic link"):
        copy_package(bob, find_package(bob), tmp_path / "copy5", config)


def test_messages_are_capped_and_scrubbed_of_solution_text() -> None:
    scrub = Scrubber.for_course()
    line = next(s for s, origin in scrub_origins().items() if origin.startswith(f"{PACKAGE}/multihead.py"))
    message = f"case 3: raised ValueError: {'   '.join(line.split())} and more\nsecond line"
    scrubbed = scrub(message)
    assert line not in " ".join(scrubbed.split()) and Scrubber.REMOVED in scrubbed and "second line" in scrubbed
    assert scrub("nothing to hide here") == "nothing to hide here"
    assert len(scrub("x" * 10_000)) <= 2000


def scrub_origins() -> dict[str, str]:
    from transformer_course_tools.exercises.edition import solution_snippets

    return solution_snippets(ROOT)


def test_reports_are_replaced_atomically(tmp_path: Path) -> None:
    path = tmp_path / "report.csv"
    write_atomically(path, "old\n")
    write_atomically(path, "new\n")
    assert path.read_text() == "new\n" and [p.name for p in tmp_path.iterdir()] == ["report.csv"]


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
    results = {"ex03_1": ExerciseResult("passed", "4 cases", 2.0, 2.0, cases_passed=4, cases_total=4),
               "ex03_3": ExerciseResult("failed", "x", 0, 3.5, cases_passed=1, cases_total=3)}  # fmt: skip
    report = GradingReport(["ex03_1", "ex03_3"], [StudentReport("ada", "ada/transformer_course", results)], config, 1.0)
    write_csv(report, tmp_path / "r.csv")
    assert (tmp_path / "r.csv").read_text().splitlines()[1] == "ada,2,0,2,5.5,36.4,4 of 4,1 of 3,,,,"
    assert list(csv.reader(io.StringIO((tmp_path / "r.csv").read_text())))[0][0] == "student"


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


@pytest.mark.parametrize("mechanism", ["bwrap", "unshare"])
def test_grading_runs_in_either_sandbox(mechanism: str, tmp_path: Path) -> None:
    support = sandboxes.needs(mechanism)
    expected = write_submissions(tmp_path / "all", ROOT, sandboxed=True)
    for name in ("correct", "wrong_shape"):
        shutil.move(tmp_path / "all" / name, tmp_path / "subs" / name)
    report = grade(tmp_path / "subs", GradingConfig(timeout_s=120, memory_mb=3072), ["ex03_3"], False, mechanism)
    assert report.sandbox == support.description
    for student in report.students:
        status, part = expected[student.student]["ex03_3"]
        assert student.results["ex03_3"].status == status and part in student.results["ex03_3"].message


def test_the_instructors_package_in_site_packages_is_hidden_from_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A non-editable install puts the course (answers included) in site-packages, which every job
    sees: the job is shown an empty folder there instead."""
    sandboxes.needs()
    installed = min(p for p in Path(site.getsitepackages()[0]).iterdir() if p.name.endswith(".dist-info"))
    monkeypatch.setattr(course, "package_dir", lambda: installed)
    hidden = hidden_course_packages(tmp_path)
    code = f"import os; print(len(os.listdir({str(installed)!r})))"
    job = sandbox.run([sys.executable, "-I", "-c", code], visible=hidden, mechanism=SUPPORT.mechanism)
    assert job.stdout == b"0\n" and any(installed.iterdir()), job.stderr
    monkeypatch.setattr(course, "package_dir", lambda: Path("/usr/lib/python3/dist-packages/transformer_course"))
    monkeypatch.setattr(sandbox, "python_paths", lambda: ["/usr/lib/python3/dist-packages"])
    with pytest.raises(ValueError, match="cannot be hidden"):
        hidden_course_packages(tmp_path)


# -- the warm worker's channel, a long run's state and progress, reports safe to open -------------------


def _fake_worker(answer: str) -> Worker:
    """A worker that says it is ready, reads one request and sends ``answer`` (a JSON header, NONCE
    replaced by the request's nonce) back."""
    code = ("import json, sys; out = sys.stdout.buffer; out.write(b'{\"ready\": true}\\n'); out.flush(); "
            "nonce = json.loads(sys.stdin.buffer.readline())['nonce'].encode(); "
            f"out.write({answer.encode()!r}.replace(b'NONCE', nonce) + b'\\n'); out.flush(); sys.stdin.read()")  # fmt: skip
    return Worker(sandbox.start([sys.executable, "-I", "-S", "-c", code], mechanism=SUPPORT.mechanism))


def test_the_grader_takes_only_the_answer_for_the_exercise_it_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    answer = {"nonce": "NONCE", "returncode": 0, "timed_out": False, "seconds": 0.1, "result_bytes": 0,
              "printed_bytes": 0, "head_bytes": 0, "where_bytes": 0}  # fmt: skip
    for sent, part in [({**answer, "nonce": "0" * 32}, "answered for another exercise"), ("passed", "malformed"),
                       ({**answer, "result_bytes": 2**40}, "larger than any result"),
                       ({**answer, "timed_out": 0}, "malformed")]:  # fmt: skip
        worker = _fake_worker(sent if isinstance(sent, str) else json.dumps(sent))
        try:
            with pytest.raises(WorkerLost, match=part):
                worker.run(timeout_s=30)
        finally:
            worker.close()
    honest = _fake_worker(json.dumps(answer))
    try:
        assert honest.run(timeout_s=30).returncode == 0  # the same answer with the right nonce is taken
    finally:
        honest.close()
    monkeypatch.setattr(grading.workers, "GRACE_S", 0.2)
    silent = Worker(sandbox.start([sys.executable, "-I", "-S", "-c", "import sys, time; sys.stdout.write("
                                    "'{\"ready\": true}\\n'); sys.stdout.flush(); time.sleep(60)"],
                                   mechanism=SUPPORT.mechanism))  # fmt: skip
    try:
        with pytest.raises(WorkerLost, match="stopped answering"):
            silent.run(timeout_s=0.3)
    finally:
        silent.close()


def test_an_interrupted_run_resumes_without_regrading_finished_students(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    for name in ("ada", "bob"):
        shutil.copytree(
            ROOT / PACKAGE, tmp_path / "subs" / name / PACKAGE, ignore=shutil.ignore_patterns("__pycache__")
        )
    state, config = tmp_path / "report.progress.jsonl", GradingConfig(timeout_s=120, memory_mb=3072)
    first = grade(tmp_path / "subs", config, ["ex03_1"], progress=True, state_file=state)
    assert [s.results["ex03_1"].status for s in first.students] == ["passed", "passed"]
    err = capsys.readouterr().err
    assert "grading: 2/2 students, 2/2 exercises" in err and "exercises/s, about" in err and "left" in err
    assert len(state.read_text().splitlines()) == 3  # the run's name, then one line per student done
    with open(tmp_path / "subs" / "bob" / PACKAGE / "attention.py", "a") as handle:
        handle.write("\n\nattention_scores = None  # handed in again, broken\n")
    started, original = [], grading.workers.Jobs._student

    def counted(self: grading.workers.Jobs, index: int, *rest: object) -> None:
        started.append(index)
        original(self, index, *rest)

    monkeypatch.setattr(grading.workers.Jobs, "_student", counted)
    second = grade(tmp_path / "subs", config, ["ex03_1"], progress=True, state_file=state, resume=True)
    assert started == [1], "only bob, whose submission changed, is graded again"
    assert second.students[0].results["ex03_1"].status == "passed"
    assert second.students[1].results["ex03_1"].status != "passed"
    assert "resumed 1 student(s)" in capsys.readouterr().err
    third = grade(tmp_path / "subs", GradingConfig(timeout_s=99, memory_mb=3072), ["ex03_1"], False, state_file=state,
                  resume=True)  # fmt: skip
    assert started == [1, 0, 1], "other settings: a new run, nothing taken from the old one"
    assert third.students[0].results["ex03_1"].status == "passed"


def test_report_cells_that_a_spreadsheet_would_run_are_neutralised(tmp_path: Path) -> None:
    names = ['=HYPERLINK("evil","a")', "+1+1", "-2", "@SUM(A1)", "\tx", "\rx", "ada, the 2nd"]
    results = {"ex03_1": ExerciseResult("passed", "4 cases", 1.0, 1.0)}
    students = [StudentReport(name, f"{name}/transformer_course", dict(results)) for name in names]
    write_csv(GradingReport(["ex03_1"], students, GradingConfig(), 1.0), tmp_path / "r.csv")
    with open(tmp_path / "r.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert [row[0] for row in rows[1:]] == [f"'{name}" for name in names[:-1]] + ["ada, the 2nd"]
    assert all(row[1:5] == ["1", "1", "1", "100.0"] for row in rows[1:])  # numbers stay numbers


def test_names_and_messages_are_escaped_in_the_markdown_feedback() -> None:
    name = "<img src=x onerror=alert(1)>[click](javascript:alert(1))`|#"
    message = "<script>alert(1)</script> | [x](http://evil)"
    student = StudentReport(name, f"{name}/transformer_course", {"ex03_1": ExerciseResult("failed", message, 0, 1)})
    text = feedback_markdown(student, GradingReport(["ex03_1"], [student], GradingConfig(), 1.0))
    assert "<img" not in text and "<script" not in text
    assert not re.search(r"(?<!\\)\]\(", text), "a link survived: ]( not escaped"
    assert "&lt;img src=x onerror=alert(1)&gt;\\[click\\](javascript:alert(1))\\`\\|\\#" in text
    assert text.count("\n| ex03_1") == 1 and "\\| \\[x\\]" in text  # the message stays in its cell
    assert summary_table(GradingReport(["ex03_1"], [StudentReport("a\x1b[2Jb", None, student.results)],
                                       GradingConfig(), 1.0)).splitlines()[1].startswith("a?[2Jb")  # fmt: skip


# -- partial credit: every case runs, and grading.toml decides what a partly right answer earns ----------

_WRONG_AT_7 = (
    "\n\ndef causal_mask(size, device=None):  # right except for size 7\n    import torch\n"
    "    mask = torch.ones(size, size, dtype=torch.bool, device=device).tril()\n"
    "    if size == 7:\n        mask[6, 0] = False\n    return mask\n"
)
_RAISES_AT_1 = (
    "\n\ndef causal_mask(size, device=None):  # raises for size 1, right otherwise\n    import torch\n"
    "    if size == 1:\n        raise ValueError('size 1')\n"
    "    return torch.ones(size, size, dtype=torch.bool, device=device).tril()\n"
)


def _submission(folder: Path, appended: str = "", room: str = "masks.py") -> Path:
    """A copy of the course's package whose ``room`` ends with ``appended`` (a redefinition)."""
    shutil.copytree(ROOT / PACKAGE, folder / PACKAGE, ignore=shutil.ignore_patterns("__pycache__", "tools"))
    with open(folder / PACKAGE / room, "a") as handle:
        handle.write(appended)
    return folder


def test_every_case_of_a_local_check_runs_and_the_first_failure_is_the_message() -> None:
    namespace: dict = {}
    exec(_WRONG_AT_7 + _RAISES_AT_1.replace("def causal_mask", "def raising"), namespace)  # noqa: S102
    wrong = run_check("ex06_1", namespace["causal_mask"])
    assert (wrong.status, wrong.cases_passed, wrong.cases_total) == ("failed", 4, 5)
    assert wrong.message.startswith("causal_mask(7): mask differs") and wrong.message.endswith("(4 of 5 cases passed)")
    raising = run_check("ex06_1", namespace["raising"])  # an exception in one case does not stop the others
    assert (raising.cases_passed, raising.cases_total) == (4, 5)
    said = "causal_mask(1): raised ValueError: size 1 in your function raising, line 14"
    assert raising.message.startswith(f"{said}; the idea: ") and raising.message.endswith("(4 of 5 cases passed)")
    assert run_check("ex06_1", namespace["raising"], hints="none").message == f"{said} (4 of 5 cases passed)"
    right = run_check("ex06_1")
    assert (right.status, right.message, right.cases_passed) == ("passed", "5 cases", 5)


def test_scoring_by_cases_gives_partial_credit_in_every_report(tmp_path: Path) -> None:
    _submission(tmp_path / "subs" / "ada", _WRONG_AT_7)
    _submission(tmp_path / "subs" / "bob", _RAISES_AT_1)  # the child goes on after the exception
    config_file = tmp_path / "grading.toml"
    config_file.write_text('[grading]\nscoring = "cases"\ndefault_points = 2\ntimeout_s = 120\nmemory_mb = 3072\n')
    out = tmp_path / "grades" / "report.csv"
    status = main(["grade", str(tmp_path / "subs"), "--out", str(out), "--exercises", "ex06_1", "ex06_2",
                   "--config", str(config_file), "--no-progress"])  # fmt: skip
    assert status == 0
    with open(out, newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    for name in ("ada", "bob"):
        assert (rows[name]["ex06_1"], rows[name]["ex06_1 cases"], rows[name]["ex06_2 cases"]) == (
            "1.6",
            "4 of 5",
            "4 of 4",
        )
        assert rows[name]["total"] == "3.6"
    report = json.loads(out.with_suffix(".json").read_text())
    result = report["students"][1]["results"]["ex06_1"]
    assert (result["cases_passed"], result["cases_total"], result["points"], result["status"]) == (4, 5, 1.6, "failed")
    assert "raised ValueError: size 1 at masks.py:" in result["message"]  # the learner's line, read in the child
    assert "(raise ValueError('size 1')); the idea: " in result["message"]  # full: no named fix, so the idea and
    assert result["message"].endswith(
        "True on and below the diagonal (see torch.tril) (4 of 5 cases passed)"
    )  # the way
    assert "| 4 of 5 | 1.6 / 2 |" in (out.parent / "feedback" / "bob.md").read_text()
    config_file.write_text('[grading]\nscoring = "some"\n')
    with pytest.raises(ValueError, match="scoring = 'some' must be one of all_or_nothing, cases"):
        load_config(config_file)
    strict = GradingConfig()  # the default: all or nothing
    assert (strict.score("ex06_1", "failed", 4, 5), strict.score("ex06_1", "passed", 5, 5)) == (0.0, 1.0)
    assert GradingConfig(scoring="cases").score("ex06_1", "reference import", 4, 5) == 0.0


# -- hidden cases: the same builders drawn again with larger inputs, and the instructor's own -----------

_RIGHT_FOR_THE_VISIBLE_SIZES = (
    "\n\ndef causal_mask(size, device=None):  # right for the sizes the visible cases use, wrong otherwise\n"
    "    import torch\n"
    "    mask = torch.ones(size, size, dtype=torch.bool, device=device).tril()\n"
    "    if size not in (1, 2, 3, 5, 7):\n        mask[-1, 0] = False\n    return mask\n"
)
_INSTRUCTOR_CASES = """
from transformer_course_tools.exercises.checks import Case, hidden
from transformer_course_tools.exercises.checks.ch06 import _judge_causal
from transformer_course_tools.exercises.probe.calls import call, calls_case


@hidden("ex06_1")
def nine():
    return [Case("causal_mask(9), the instructor's", calls_case(call(9)), _judge_causal)]
"""


def test_hidden_cases_catch_an_answer_fitted_to_the_visible_ones(tmp_path: Path) -> None:
    namespace: dict = {}
    exec(_RIGHT_FOR_THE_VISIBLE_SIZES, namespace)  # noqa: S102
    assert run_check("ex06_1", namespace["causal_mask"]).passed  # what the student sees locally
    _submission(tmp_path / "subs" / "ada", _RIGHT_FOR_THE_VISIBLE_SIZES)
    _submission(tmp_path / "subs" / "bob")
    (tmp_path / "instructor").mkdir()
    (tmp_path / "instructor" / "hidden_cases.py").write_text(_INSTRUCTOR_CASES)
    config_file = tmp_path / "grading.toml"
    config_file.write_text('[grading]\nhidden = true\nhidden_cases = "instructor/hidden_cases.py"\ntimeout_s = 120\n')
    config = load_config(config_file)
    assert config.hidden_cases == str(tmp_path / "instructor" / "hidden_cases.py")
    out = tmp_path / "grades" / "report.csv"
    args = ["grade", str(tmp_path / "subs"), "--out", str(out), "--exercises", "ex06_1", "--no-progress"]
    assert main([*args, "--config", str(config_file)]) == 0
    ada, bob = json.loads(out.with_suffix(".json").read_text())["students"]
    # the visible 5 + the builder again with larger sizes (12, 4, 6, 33, and the device case) + the instructor's 1
    assert (bob["results"]["ex06_1"]["status"], bob["results"]["ex06_1"]["cases_passed"]) == ("passed", 11)
    result = ada["results"]["ex06_1"]
    assert (result["status"], result["points"], result["cases_passed"], result["cases_total"]) == ("failed", 0, 6, 11)
    assert (result["hidden_passed"], result["hidden_total"]) == (1, 6)
    assert "the 5 cases you can run pass, but only 1 of 6 hidden cases passed" in result["message"]
    feedback = (out.parent / "feedback" / "ada.md").read_text()
    assert "| 5 of 5; hidden: 1 of 6 |" in feedback
    for secret in ("(12)", "(33)", "(9)", "instructor's", "differs"):  # how many, never which
        assert secret not in feedback and secret not in result["message"], secret
    for text, part in [('[grading]\nhidden_cases = "instructor/hidden_cases.py"\n', "needs hidden = true"),
                       ('[grading]\nhidden = true\nhidden_cases = "none.py"\n', "does not exist"),
                       ("[grading]\nhidden = 1\n", "hidden must be true or false")]:  # fmt: skip
        config_file.write_text(text)
        with pytest.raises((ValueError, FileNotFoundError), match=part):
            load_config(config_file)
    (tmp_path / "instructor" / "hidden_cases.py").write_text(_INSTRUCTOR_CASES.replace("ex06_1", "ex99_9"))
    config_file.write_text('[grading]\nhidden = true\nhidden_cases = "instructor/hidden_cases.py"\n')
    with pytest.raises(ValueError, match="names an unknown exercise 'ex99_9'"):
        load_config(config_file)


def test_a_chapter_stands_for_all_its_exercises(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """--exercises ex03 (and grading.toml's ["ex03"]) is every exercise the registry holds for chapter 03,
    in number order, each once: a list written for a chapter does not go stale when it gains one."""
    from transformer_course_tools.exercises.checks.registry import exercise_order, expand_exercise_ids, load_checks

    chapter_03 = [i for i in load_checks() if i.split("_")[0] == "ex03"]
    assert len(chapter_03) >= 4
    assert expand_exercise_ids(["ex03"]) == sorted(chapter_03, key=lambda i: int(i.split("_")[1]))
    assert expand_exercise_ids(["ex04_1", "ex03", "ex03_2"]) == ["ex04_1", *expand_exercise_ids(["ex03"])]
    assert sorted(["ex03_10", "ex03_9", "ex10_1"], key=exercise_order) == ["ex03_9", "ex03_10", "ex10_1"]
    config_file = tmp_path / "grading.toml"
    config_file.write_text('[grading]\nexercises = ["ex03", "ex01_2"]\n')
    config = load_config(config_file)
    assert grading.exercise_ids(config) == [*expand_exercise_ids(["ex03"]), "ex01_2"]
    assert grading.exercise_ids(config, ["ex02"]) == ["ex02_1", "ex02_2", "ex02_3"]
    for asked in (["ex10"], ["ex99"]):  # a chapter without exercises, one that does not exist
        with pytest.raises(KeyError, match=f"no exercises in chapter {asked[0][2:]}"):
            expand_exercise_ids(asked)
    config_file.write_text('[grading]\nexercises = ["ex10"]\n')
    with pytest.raises(KeyError, match="no exercises in chapter 10 .*chapters with exercises: ex01, ex02"):
        load_config(config_file)
    subs = tmp_path / "subs"
    (subs / "ada").mkdir(parents=True)
    _refused(capsys, [str(subs), "--out", str(tmp_path / "r.csv"), "--exercises", "ex11"], "no exercises in chapter 11")


def test_the_student_edition_leaves_the_instructors_folder_out(tmp_path: Path) -> None:
    from transformer_course_tools.course import course_files

    for name in ("grading.toml", "instructor/hidden_cases.py", "transformer_course/masks.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert sorted(p.as_posix() for p in course_files(tmp_path)) == ["grading.toml", "transformer_course/masks.py"]


# -- collection: archives, what is left out, two copies ------------------------------------------------


def _zip(path: Path, entries: dict[str, bytes], links: tuple[str, ...] = ()) -> Path:
    import stat
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, data in entries.items():
            zipped.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.create_system, info.external_attr = 3, (stat.S_IFLNK | 0o777) << 16
            zipped.writestr(info, "/etc/passwd")
    return path


def test_archives_are_unpacked_within_the_caps_and_nothing_outside(tmp_path: Path) -> None:
    import warnings

    from transformer_course_tools.grading import unpack_archive

    config = GradingConfig(max_submission_mb=1, max_files=3)
    good = _zip(tmp_path / "ada.zip", {"course-main/transformer_course/__init__.py": b"", "course-main/"
                                       "transformer_course/masks.py": b"x = 1\n", "__MACOSX/._masks.py": b"junk",
                                       "course-main/.venv/lib/big.bin": b"0" * 2**21})  # fmt: skip
    folder = unpack_archive(good, tmp_path / "out" / "0", config)
    assert folder == tmp_path / "out" / "0" / "ada" and find_package(folder).name == PACKAGE
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        "course-main/transformer_course/__init__.py", "course-main/transformer_course/masks.py"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name it is told to write
        bad = {"traversal": ({"../../escaped.py": b""}, (), "leads outside the archive"),
               "absolute": ({"/tmp/escaped.py": b""}, (), "leads outside the archive"),
               "link": ({"transformer_course/__init__.py": b""}, ("transformer_course/masks.py",), "symbolic link"),
               "bomb": ({"transformer_course/big.py": b"0" * (2**20 + 1)}, (), "more than the caps (1 MB"),
               "many": ({f"transformer_course/m{i}.py": b"" for i in range(4)}, (), "more than 3 files")}  # fmt: skip
        for name, (entries, links, part) in bad.items():
            _zip(tmp_path / f"{name}.zip", entries, links)
            with pytest.raises(Refused, match=re.escape(part)):
                unpack_archive(tmp_path / f"{name}.zip", tmp_path / "bad" / name, config)
        with __import__("zipfile").ZipFile(tmp_path / "twice.zip", "w") as zipped:
            zipped.writestr("a.py", b"1")
            zipped.writestr("a.py", b"2")
    with pytest.raises(Refused, match="twice.zip: a.py is in the archive twice"):
        unpack_archive(tmp_path / "twice.zip", tmp_path / "bad" / "twice", config)
    assert not (tmp_path / "escaped.py").exists() and not Path("/tmp/escaped.py").exists()
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(Refused, match="broken.zip could not be unpacked"):
        unpack_archive(tmp_path / "broken.zip", tmp_path / "bad" / "broken", config)
    two = tmp_path / "two"
    for where in ("transformer_course", "backup/transformer_course"):
        (two / where).mkdir(parents=True)
        (two / where / "__init__.py").touch()
    with pytest.raises(Refused, match=r"2 copies of the package \(two/transformer_course and two/backup/transf"):
        find_package(two)


def test_every_entry_of_the_submissions_folder_is_graded_or_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    subs = tmp_path / "subs"
    _submission(subs / "bob")
    edition = tmp_path / "ada-edition" / "course-main"
    _submission(edition)
    with __import__("zipfile").ZipFile(subs / "ada.zip", "w") as zipped:
        for path in sorted(edition.rglob("*")):
            zipped.write(path, path.relative_to(edition.parent).as_posix())
    _zip(subs / "bob.zip", {"transformer_course/__init__.py": b""})
    for where in ("transformer_course", "old/transformer_course"):
        (subs / "two" / where).mkdir(parents=True)
        (subs / "two" / where / "__init__.py").touch()
    (subs / "_late").mkdir()
    (subs / ".DS_Store").write_bytes(b"")
    (subs / "notes.txt").write_text("")
    out = tmp_path / "report.csv"
    assert main(["grade", str(subs), "--out", str(out), "--exercises", "ex06_1", "--timeout", "120",
                 "--no-progress"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    report = json.loads(out.with_suffix(".json").read_text())
    skipped = {entry["entry"]: entry["why"] for entry in report["skipped"]}
    assert set(skipped) == {".DS_Store", "_late", "notes.txt", "bob.zip"}
    assert skipped["bob.zip"] == "the folder bob/ is graded instead" and "neither a folder" in skipped["notes.txt"]
    for name in skipped:
        assert f"skipped {name}: " in printed
    students = {s["student"]: s for s in report["students"]}
    assert set(students) == {"ada", "bob", "two"}
    assert students["ada"]["package"] == "ada.zip: course-main/transformer_course"
    assert students["ada"]["results"]["ex06_1"]["status"] == students["bob"]["results"]["ex06_1"]["status"] == "passed"
    message = students["two"]["results"]["ex06_1"]["message"]
    assert "2 copies of the package (two/transformer_course and two/old/transformer_course)" in message


# -- a term's work: gradebooks, due times, one student graded again ---------------------------------------


def test_a_gradebook_for_canvas_late_flags_and_one_student_graded_again(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    subs = tmp_path / "subs"
    for name in ("ada", "bob"):
        _submission(subs / name)
    old = time.mktime((2026, 1, 1, 12, 0, 0, 0, 0, -1))
    for path in (subs / "ada").rglob("*"):
        os.utime(path, (old, old))  # ada's newest file: 1 January; bob's: now, after the due time
    roster = tmp_path / "roster.csv"
    roster.write_text("folder,name,id,sis_user_id,sis_login_id,section,email\n"
                      "ada,Ada Lovelace,101,S1,ada1,A,ada@uni.edu\nbob,Bob Kahn,102,S2,bob2,B,bob@uni.edu\n")  # fmt: skip
    out = tmp_path / "grades" / "homework6.csv"
    common = ["--out", str(out), "--exercises", "ex06_1", "--timeout", "120", "--no-progress", "--roster", str(roster),
              "--assignment", "Homework 6", "--due", "2026-06-01T23:59"]  # fmt: skip
    assert main(["grade", str(subs), *common, "--format", "canvas"]) == 0
    with open(out, newline="") as handle:
        assert list(csv.reader(handle)) == [
            ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Homework 6"],
            ["Points Possible", "", "", "", "", "4"],  # ex06_1 and ex06's 3 written questions
            ["Ada Lovelace", "101", "S1", "ada1", "A", "1"],
            ["Bob Kahn", "102", "S2", "bob2", "B", "1"],
        ]
    report = json.loads(out.with_suffix(".json").read_text())
    assert [(s["student"], s["late"]) for s in report["students"]] == [("ada", False), ("bob", True)]
    assert report["students"][0]["newest_file"].startswith("2026-01-01T12:00:00")
    feedback = out.parent / "feedback" / "Homework 6"
    assert "after the due time: late" in (feedback / "bob.md").read_text()
    assert "late" not in (feedback / "ada.md").read_text().split("|")[0]
    ada_before = (feedback / "ada.md").stat().st_mtime_ns
    with open(subs / "bob" / PACKAGE / "masks.py", "a") as handle:
        handle.write(_WRONG_AT_7)  # bob hands in again, wrong
    capsys.readouterr()
    assert main(["grade", str(subs), *common, "--format", "moodle", "--only", "bob"]) == 0
    with open(out, newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["Full name", "ID number", "Email address", "Homework 6", "Feedback"]
    assert rows[1] == ["Ada Lovelace", "101", "ada@uni.edu", "1", "all exercises passed"]
    assert rows[2] == ["Bob Kahn", "102", "bob@uni.edu", "0", "not passed: ex06_1 failed"]
    again = json.loads(out.with_suffix(".json").read_text())
    assert again["students"][0] == report["students"][0], "ada's row is kept as it was"
    assert again["students"][1]["results"]["ex06_1"]["status"] == "failed"
    assert (feedback / "ada.md").stat().st_mtime_ns == ada_before, "only bob's feedback is written again"
    roster.write_text("folder,name\nada,Ada Lovelace\n")
    assert main(["grade", str(subs), *common, "--format", "moodle", "--only", "bob"]) == 0
    assert "not in the roster, so not in" in capsys.readouterr().out


def test_gradebook_due_and_only_refuse_bad_input_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    subs = tmp_path / "subs"
    (subs / "ada").mkdir(parents=True)
    out = str(tmp_path / "r.csv")
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name\nada,Ada\n")
    _refused(capsys, [str(subs), "--out", out, "--due", "next friday"], "--due must be a date and time")
    _refused(capsys, [str(subs), "--out", out, "--format", "canvas"], "--format canvas needs --roster")
    _refused(capsys, [str(subs), "--out", out, "--format", "moodle", "--roster", str(roster), "--assignment", "hw"],
             "needs a header with 'folder'")  # fmt: skip
    _refused(capsys, [str(subs), "--out", out, "--format", "moodle", "--roster", str(tmp_path / "none.csv"),
                      "--assignment", "hw"], "does not exist")  # fmt: skip
    _refused(capsys, [str(subs), "--out", out, "--assignment", "../up"], "--assignment: ")
    _refused(capsys, [str(subs), "--out", out, "--only", "ada"], "--only: there is no report to update")


# -- defects: escaping, debug prints, a room whose import hangs, report modes, the settings recorded -------


def test_quotes_stay_readable_in_the_feedback_and_reports_are_readable_by_all(tmp_path: Path) -> None:
    message = "ex03_1 (attention_scores) is not implemented yet: edit x.py. Hint: q's last dimension is d_k"
    student = StudentReport('O\'Neil "Ned"', None, {"ex03_1": ExerciseResult("not implemented", message, 0, 1)})
    text = feedback_markdown(student, GradingReport(["ex03_1"], [student], GradingConfig(), 1.0))
    assert '# Feedback for O\'Neil "Ned"' in text and "q's last dimension" in text and "&#x27;" not in text
    write_atomically(tmp_path / "report.csv", "x\n")
    assert (tmp_path / "report.csv").stat().st_mode & 0o777 == 0o644


def test_debug_prints_reach_the_feedback_and_a_hanging_import_costs_one_timeout(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    _submission(
        subs / "O'Neil",
        _RAISES_AT_1.replace("    import torch\n", "    import torch\n    print('debug: size', size)\n"),
    )
    _submission(subs / "loops", "\n\nwhile True: pass  # at import (one line: the stack names it wherever it stops)\n")
    text = (subs / "loops" / PACKAGE / "masks.py").read_text()
    line = next(n for n, code in enumerate(text.splitlines(), start=1) if code.startswith("while True: pass"))
    out = tmp_path / "r.csv"
    assert main(["grade", str(subs), "--out", str(out), "--exercises", "ex06_1", "ex06_2", "--timeout", "10",
                 "--jobs", "2", "--no-progress"]) == 0  # fmt: skip
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["settings"]["exercises"] == ["ex06_1", "ex06_2"]
    oneil, loops = report["students"]  # sorted by name: capitals first
    first, second = loops["results"]["ex06_1"], loops["results"]["ex06_2"]
    assert first["status"] == "timed out" and f"at masks.py line {line} (while importing masks.py)" in first["message"]
    assert second["status"] == "timed out" and second["seconds"] == 0  # not run: no second wait of 10 s
    assert f"not run: importing masks.py did not finish in ex06_1 (stopped at line {line})" in second["message"]
    feedback = (tmp_path / "feedback" / "O'Neil.md").read_text()
    assert "# Feedback for O'Neil" in feedback and "debug: size 5" in feedback
    assert oneil["results"]["ex06_1"]["output_head"].count("debug: size") == 5  # every case ran and printed
    for path in (out, out.with_suffix(".json"), tmp_path / "feedback" / "O'Neil.md"):
        assert path.stat().st_mode & 0o777 == 0o644


# -- provenance: a fingerprint, and flags that are not penalties ----------------------------------------


def test_provenance_flags_and_fingerprints(tmp_path: Path) -> None:
    from transformer_course_tools.grading import provenance_flags
    from transformer_course_tools.grading.run import _copy_all

    wanted = [get_exercise(i) for i in ("ex06_1", "ex06_2", "ex03_1")]
    copied = _submission(tmp_path / "subs" / "ada")  # the complete edition's answers, markers and all
    (copied / PACKAGE / "masks.py.ex06_1.bak").write_text("# my old version\n")
    flags = provenance_flags(copied / PACKAGE, wanted)
    assert flags[0].startswith("solution markers (### BEGIN SOLUTION) in ") and "masks.py" in flags[0]
    assert flags[1] == "backups left by restore: masks.py.ex06_1.bak"
    assert flags[2:] == [f"{i}: the same code as the worked solution" for i in ("ex06_1", "ex06_2", "ex03_1")]
    own = _submission(tmp_path / "subs" / "bob", _WRONG_AT_7)  # bob's own causal_mask, no markers left
    for path in (own / PACKAGE).rglob("*.py"):
        path.write_text("\n".join(line for line in path.read_text().splitlines() if "SOLUTION" not in line))
    assert provenance_flags(own / PACKAGE, wanted) == [
        "ex06_2: the same code as the worked solution", "ex03_1: the same code as the worked solution"]  # fmt: skip
    reports, _ = _copy_all([tmp_path / "subs" / "ada", own], tmp_path / "subs", tmp_path / "copies", wanted,
                           GradingConfig())  # fmt: skip
    assert reports[0].fingerprint != reports[1].fingerprint and len(reports[0].fingerprint) == 64
    assert reports[1].flags == provenance_flags(own / PACKAGE, wanted)
    write_csv(GradingReport([], reports, GradingConfig(), 1.0), tmp_path / "r.csv")
    with open(tmp_path / "r.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["fingerprint"] == reports[0].fingerprint and "backups left by restore" in rows[0]["flags"]


def test_the_handout_records_no_path_of_the_machine() -> None:
    from transformer_course_tools.exercises import edition

    mark = edition.edition_mark()
    assert str(ROOT) not in mark and str(Path.home()) not in mark and "built_from" not in mark
    assert json.loads(mark)["exercises"]["ex06_1"] == "transformer_course.masks:causal_mask"
    source = Path(edition.__file__).read_text()
    assert "write_text(edition_mark(" in source and "built_from" not in source


def test_restore_finds_the_complete_course_around_the_edition_without_a_recorded_path(tmp_path: Path) -> None:
    from transformer_course_tools.exercises.edition import STUDENT_MARK, edition_mark, restore_exercise

    clone = tmp_path / "clone"
    (clone / PACKAGE).mkdir(parents=True)
    shutil.copy(ROOT / PACKAGE / "masks.py", clone / PACKAGE / "masks.py")  # the worked answers
    edition = clone / "student-edition"
    (edition / PACKAGE).mkdir(parents=True)
    (edition / STUDENT_MARK).write_text(edition_mark())
    mine = (ROOT / PACKAGE / "masks.py").read_text().replace("### BEGIN SOLUTION", "### BEGIN SOLUTION\n    x = 1")
    (edition / PACKAGE / "masks.py").write_text(mine)
    edited, backup = restore_exercise(edition, "ex06_1")
    assert backup.read_text() == mine and "x = 1" in edited.read_text()  # ex06_2's region is still mine
    assert edited.read_text().count("x = 1") == mine.count("x = 1") - 1
