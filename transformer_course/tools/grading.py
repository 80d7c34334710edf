"""Grade a class: ``python -m transformer_course grade SUBMISSIONS_DIR --out report.csv``.

Each sub-folder of ``SUBMISSIONS_DIR`` is one student's submission: their edited student edition,
or just their ``transformer_course/`` package folder (found up to three levels down). Every
(student, exercise) pair runs in its own process, forked from a worker that never imports the
course package (see :mod:`transformer_course.grading_worker`): with a time limit, a memory cap
and an output cap, the *course's* checks (never the submission's copy), and the reference answers
out of reach. A crash, a hang, ``sys.exit``, a flood of output, NaN, an input changed in place or
an attempt to read the reference answers costs that exercise only.

Points per exercise, time and memory limits live in one file, ``grading.toml`` at the root of
the course (:func:`load_config`). The report is a CSV (points per exercise, one row per student),
a JSON file with every status and message, and one feedback markdown file per student.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import course
from .checks import status
from .checks.runner import get_exercise
from .checks.status import PASSED, STATUSES, SYMBOLS
from .course import PACKAGE

WORKER = Path(__file__).resolve().parent / "grading_worker.py"


@dataclass
class GradingConfig:
    """What ``grading.toml`` holds (see the file for the meaning of each entry)."""

    exercises: list[str] | None = None  # None: every registered exercise
    default_points: float = 1.0
    points: dict[str, float] = field(default_factory=dict)
    timeout_s: float = 60.0
    timeouts: dict[str, float] = field(default_factory=dict)
    memory_mb: int = 4096
    max_output_kb: int = 1024
    jobs: int = 1

    def points_for(self, exercise_id: str) -> float:
        return float(self.points.get(exercise_id, self.default_points))

    def timeout_for(self, exercise_id: str) -> float:
        return float(self.timeouts.get(exercise_id, self.timeout_s))


def load_config(path: Path | None) -> GradingConfig:
    """Read ``grading.toml``; a missing file gives the defaults (1 point per exercise)."""
    if path is None or not Path(path).exists():
        if path is not None:
            raise FileNotFoundError(f"grading configuration {path} does not exist")
        return GradingConfig()
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    unknown = set(data) - {"grading", "points", "timeout_s"}
    if unknown:
        raise ValueError(f"{path}: unknown section(s) {sorted(unknown)}; expected [grading], [points], [timeout_s]")
    settings = dict(data.get("grading", {}))
    exercises = settings.pop("exercises", "all")
    config = GradingConfig(
        exercises=None if exercises == "all" else list(exercises),
        points={k: float(v) for k, v in data.get("points", {}).items()},
        timeouts={k: float(v) for k, v in data.get("timeout_s", {}).items()},
    )
    for key, value in settings.items():
        if key not in {"default_points", "timeout_s", "memory_mb", "max_output_kb", "jobs"}:
            raise ValueError(f"{path}: unknown setting [grading] {key}")
        setattr(config, key, type(getattr(config, key))(value))
    for exercise_id in [*config.points, *config.timeouts, *(config.exercises or [])]:
        get_exercise(exercise_id)  # a typo in the file is an error, not a silent default
    return config


def find_package(submission: Path) -> Path | None:
    """The submission's ``transformer_course`` package folder, or None.

    Accepts a whole edition (``alice/transformer_course/``), the package folder itself
    (``alice/`` holding ``__init__.py`` and the modules), or either one nested up to three
    levels down (an unpacked archive: ``alice/course-main/transformer_course/``).
    """
    if (submission / PACKAGE).is_dir():
        return submission / PACKAGE
    if (submission / "__init__.py").is_file():
        return submission
    found = [
        p.parent
        for depth in ("*/", "*/*/", "*/*/*/")
        for p in submission.glob(f"{depth}{PACKAGE}/__init__.py")
        if not {".venv", "site-packages", "__MACOSX"} & set(p.parts)
    ]
    return min(found, key=lambda p: len(p.parts)) if found else None


@dataclass
class ExerciseResult:
    status: str
    message: str
    points: float
    max_points: float
    seconds: float = 0.0
    output_bytes: int = 0
    output_head: str = ""


@dataclass
class StudentReport:
    student: str
    package: str | None  # the package folder that was graded, relative to the submissions folder
    results: dict[str, ExerciseResult]

    @property
    def total(self) -> float:
        return sum(r.points for r in self.results.values())

    @property
    def max_points(self) -> float:
        return sum(r.max_points for r in self.results.values())


@dataclass
class GradingReport:
    exercises: list[str]
    students: list[StudentReport]
    config: GradingConfig
    seconds: float


def list_submissions(submissions_dir: Path) -> list[Path]:
    if not submissions_dir.is_dir():
        raise FileNotFoundError(f"{submissions_dir} is not a folder of submissions")
    return sorted(p for p in submissions_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def grade(
    submissions_dir: Path,
    config: GradingConfig | None = None,
    exercises: Iterable[str] | None = None,
    progress: bool = True,
) -> GradingReport:
    """Grade every sub-folder of ``submissions_dir`` on ``exercises`` (default: the config's)."""
    from tqdm.auto import tqdm

    from .checks.registry import EXERCISES
    from .checks.runner import _load_all

    start = time.perf_counter()
    config = config or GradingConfig()
    _load_all()
    ids = list(exercises or config.exercises or sorted(EXERCISES))
    for exercise_id in ids:
        get_exercise(exercise_id)
    students = list_submissions(Path(submissions_dir))
    reports = [StudentReport(s.name, None, {}) for s in students]
    jobs = []
    for index, (folder, report) in enumerate(zip(students, reports, strict=True)):
        package = find_package(folder)
        if package is None:
            for exercise_id in ids:
                message = f"no {PACKAGE}/ package found in the submission {folder.name}/"
                report.results[exercise_id] = ExerciseResult("error", message, 0.0, config.points_for(exercise_id))
            continue
        report.package = str(package.relative_to(submissions_dir))
        for exercise_id in ids:
            jobs.append({
                "key": f"{index}-{exercise_id}",
                "exercise": exercise_id,
                "package_dir": str(package.resolve()),
                "timeout_s": config.timeout_for(exercise_id),
                "memory_mb": config.memory_mb,
                "max_output_bytes": config.max_output_kb * 1024,
            })  # fmt: skip
    remaining = {i: sum(j["key"].startswith(f"{i}-") for j in jobs) for i in range(len(students))}
    bar = tqdm(total=len(students), desc="grading", unit="student", disable=not progress)
    bar.update(sum(n == 0 for n in remaining.values()))
    for line in _run_worker(jobs, config.jobs):
        index_text, exercise_id = line["key"].split("-", 1)
        index = int(index_text)
        status = line["status"] if line["status"] in STATUSES else "error"
        max_points = config.points_for(exercise_id)
        reports[index].results[exercise_id] = ExerciseResult(
            status, line["message"], max_points if status == PASSED else 0.0, max_points,
            line.get("seconds", 0.0), line.get("output_bytes", 0), line.get("output_head", ""),
        )  # fmt: skip
        remaining[index] -= 1
        if remaining[index] == 0:
            bar.update(1)
    bar.close()
    for report in reports:
        report.results = {i: report.results[i] for i in ids}
    return GradingReport(ids, reports, config, round(time.perf_counter() - start, 2))


def _worker_setup() -> dict:
    """Where the trusted tools are, and which files hold the reference answers."""
    tools_dir = Path(__file__).resolve().parent
    package_dir = course.package_dir()
    reference = [str((package_dir.parent / extra).resolve()) for extra in ("solutions", "tests/mutants")]
    return {
        "tools_dir": str(tools_dir),
        "status_module": status.__file__,
        "course_module": course.__file__,
        "reference_code_paths": [str(package_dir)],  # its code; its data files are no answers
        "reference_paths": [p for p in reference if Path(p).is_dir()],
        "course_root": str(package_dir.parent),
    }


def _run_worker(jobs: list[dict], jobs_at_once: int) -> Iterable[dict]:
    """Start the worker on ``jobs`` and yield one result per job as they finish."""
    if not jobs:
        return
    if not hasattr(os, "fork"):
        raise RuntimeError("grading needs os.fork (Linux or macOS; on Windows use WSL)")
    workdir = Path(tempfile.mkdtemp(prefix="transformer-course-grading-"))
    try:
        spec = {"setup": _worker_setup(), "jobs": jobs, "jobs_at_once": jobs_at_once, "workdir": str(workdir)}
        (workdir / "jobs.json").write_text(json.dumps(spec), encoding="utf-8")
        with open(workdir / "worker.log", "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-I", str(WORKER), str(workdir / "jobs.json")],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, cwd=workdir,
            )  # fmt: skip
            done = set()
            try:
                for raw in process.stdout:
                    line = json.loads(raw)
                    if "key" in line:
                        done.add(line["key"])
                        yield line
                process.wait()
            finally:  # interrupted (Ctrl-C): the worker stops the submissions still running
                if process.poll() is None:
                    process.terminate()
                    try:
                        process.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        process.kill()
        if len(done) < len(jobs):  # the worker itself failed: report it on what is left
            tail = (workdir / "worker.log").read_text(errors="replace")[-2000:]
            for job in jobs:
                if job["key"] not in done:
                    yield {"key": job["key"], "status": "error", "message": f"the grading worker failed: {tail}"}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------- reports


def write_csv(report: GradingReport, path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *report.exercises, "total", "max_points", "percent"])
        for s in report.students:
            points = [_number(s.results[i].points) for i in report.exercises]
            percent = round(100 * s.total / s.max_points, 1) if s.max_points else 0.0
            writer.writerow([s.student, *points, _number(s.total), _number(s.max_points), percent])


def write_json(report: GradingReport, path: Path) -> None:
    data = {
        "exercises": {i: {"title": get_exercise(i).title, "points": report.config.points_for(i)} for i in report.exercises},
        "settings": asdict(report.config),
        "seconds": report.seconds,
        "students": [
            {"student": s.student, "package": s.package, "total": s.total, "max_points": s.max_points,
             "results": {i: asdict(r) for i, r in s.results.items()}}
            for s in report.students
        ],
    }  # fmt: skip
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def feedback_markdown(student: StudentReport, report: GradingReport) -> str:
    lines = [
        f"# Feedback for {student.student}",
        "",
        f"**{_number(student.total)} / {_number(student.max_points)} points.** "
        f"Graded: `{student.package or 'no package found'}`.",
        "",
        "| exercise | status | points | what the check says |",
        "| --- | --- | --- | --- |",
    ]
    for exercise_id, r in student.results.items():
        title = get_exercise(exercise_id).title
        message = " ".join(r.message.split()).replace("|", "\\|")
        status = f"{SYMBOLS.get(r.status, '')} {r.status}"
        lines.append(
            f"| {exercise_id} {title} | {status} | {_number(r.points)} / {_number(r.max_points)} | {message} |"
        )
    noisy = [(i, r) for i, r in student.results.items() if r.output_bytes]
    if noisy:
        lines += ["", "## Output printed during the checks", ""]
        for exercise_id, r in noisy:
            head = r.output_head[:500].rstrip()
            lines += [f"{exercise_id}: {r.output_bytes} bytes; it began with:", "", "```text", head, "```", ""]
    lines += [
        "",
        "Run the same checks yourself: `python -m transformer_course check` (or `pytest -m ex03_1` for one).",
        "",
    ]
    return "\n".join(lines)


def write_feedback(report: GradingReport, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for student in report.students:
        path = folder / f"{student.student}.md"
        path.write_text(feedback_markdown(student, report), encoding="utf-8")
        written.append(path)
    return written


def summary_table(report: GradingReport) -> str:
    """The terminal summary: one row per student, one column per exercise (status symbols)."""
    width = max([len(s.student) for s in report.students] + [7])
    header = f"{'student':{width}}  " + " ".join(f"{i:>7}" for i in report.exercises) + "   points"
    rows = [header]
    for s in report.students:
        cells = " ".join(f"{_short_status(s.results[i].status):>7}" for i in report.exercises)
        rows.append(f"{s.student:{width}}  {cells}   {_number(s.total)}/{_number(s.max_points)}")
    return "\n".join(rows)


def _short_status(status: str) -> str:
    return {"passed": "ok", "failed": "FAIL", "not implemented": "todo", "error": "ERROR",
            "timed out": "TIMEOUT", "reference import": "REF"}.get(status, status)  # fmt: skip


def _number(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 2)
