"""``grade``: every submission of a folder, each exercise in its sandbox, the verdicts and the reports' data."""

from __future__ import annotations

import importlib.util
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from transformer_course_tools.course import PACKAGE
from transformer_course_tools.exercises.answers import SolutionText
from transformer_course_tools.exercises.checks.registry import (
    Exercise,
    exercise_order,
    expand_exercise_ids,
    get_exercise,
    load_checks,
)
from transformer_course_tools.exercises.checks.status import ERROR
from transformer_course_tools.exercises.probe.worker import HEAD_BYTES

from . import sandbox
from .collect import (
    Refused,
    copy_package,
    find_package,
    fingerprint,
    is_archive,
    list_submissions,
    provenance_flags,
    student_name,
    unpack_archive,
)
from .config import GradingConfig
from .results import ExerciseResult, GradingReport, StudentReport
from .state import GradingState, Progress
from .workers import Jobs


def sandbox_support(mechanism: sandbox.Mechanism | None = None, require_sandbox: bool = False):
    """What will protect the jobs; a SandboxError (one line) when a sandbox is required and missing."""
    support = sandbox.probe(mechanism)
    if require_sandbox and not support.isolated:
        raise sandbox.SandboxError(f"--require-sandbox: no sandbox works here: {support.description}")
    return support


def grade(
    submissions_dir: Path,
    config: GradingConfig | None = None,
    exercises: Iterable[str] | None = None,
    progress: bool = True,
    mechanism: sandbox.Mechanism | None = None,
    require_sandbox: bool = False,
    state_file: Path | None = None,
    resume: bool = False,
    due: datetime | None = None,
    only: str | None = None,
) -> GradingReport:
    """Grade every sub-folder of ``submissions_dir`` on ``exercises`` (default: the config's).

    ``progress`` prints a line on stderr as students finish (students done / total, exercises per
    second, time left). ``state_file``: each student's results are added to it as soon as the
    student is done; with ``resume`` the students it holds (same submission, same exercises and
    settings) are not graded again. The caller removes it once the reports are written. ``due``:
    each student is flagged late when the newest file of their package is newer. ``only``: grade
    that student alone (FileNotFoundError when there is no such submission)."""

    start = time.perf_counter()
    config = (config or GradingConfig()).validate()
    ids = exercise_ids(config, exercises)
    wanted = [get_exercise(i) for i in ids]
    folders, skipped = list_submissions(Path(submissions_dir))
    if only is not None:
        folders, skipped = [f for f in folders if student_name(f) == only], []
        if not folders:
            raise FileNotFoundError(f"--only: there is no submission {only!r} in {submissions_dir}")
    if importlib.util.find_spec("jupytext") is None:
        raise ValueError(
            "grade scrubs the worked solutions out of the feedback and needs jupytext: pip install jupytext"
        )
    support = sandbox_support(mechanism, require_sandbox)
    background = ThreadPoolExecutor(max_workers=1)
    scrubber = background.submit(SolutionText.for_course)  # reading the solutions takes seconds: meanwhile, grade
    try:
        with tempfile.TemporaryDirectory(prefix="transformer-course-grading-") as temporary:
            jobs = Jobs(Path(temporary), support, config, Path(submissions_dir), wanted)
            reports, todo = _copy_all(folders, Path(submissions_dir), Path(temporary) / "copies", wanted, config)
            for report in reports:
                if due is not None and report.newest_file is not None:
                    report.late = report.newest_file > due.timestamp()
            state = GradingState(state_file, ids, config) if state_file is not None else None
            todo = state.restore(reports, todo, resume) if state is not None else todo
            meter = Progress(len(todo), len(todo) * len(wanted), enabled=progress, sandbox=support.description)
            for index, ex, outcome in jobs.run(todo):
                reports[index].results[ex.id] = jobs.judged(ex, outcome)
                done = len(reports[index].results) == len(wanted)
                if done and state is not None:
                    state.record(reports[index], dict(todo)[index])
                meter.advance(student_done=done)
            meter.finish()
            jobs.count_refused(reports)
        scrub = scrubber.result()
    finally:
        background.shutdown(wait=False, cancel_futures=True)
    for report in reports:
        report.results = {i: _scrubbed(report.results[i], scrub) for i in ids}
    return GradingReport(ids, reports, config, round(time.perf_counter() - start, 2), support.description, skipped)


def exercise_ids(config: GradingConfig, exercises: Iterable[str] | None = None) -> list[str]:
    """The exercises a run grades: those asked for, else the config's, else every one. A chapter's
    prefix (``ex03``) stands for every exercise of that chapter (:func:`expand_exercise_ids`)."""
    asked = list(exercises or config.exercises or [])
    return expand_exercise_ids(asked) if asked else sorted(load_checks(), key=exercise_order)


def _copy_all(folders: list[Path], submissions_dir: Path, copies: Path, wanted: list[Exercise],
              config: GradingConfig) -> tuple[list[StudentReport], list[tuple[int, Path]]]:  # fmt: skip
    """Copy every submission; return the reports (refused ones already filled in) and the students
    to grade: (index in the reports, the copy's folder)."""
    reports, todo = [], []
    for index, folder in enumerate(folders):
        reports.append(StudentReport(student_name(folder), None, {}))
        copy = copies / str(index)
        try:
            if is_archive(folder):
                unpacked = unpack_archive(folder, copies.parent / "archives" / str(index), config)
                package, reports[-1].newest_file = _copy_submission(unpacked, unpacked.parent, copy, config)
                reports[-1].package = f"{folder.name}: {package.partition('/')[2] or '.'}"
            else:
                reports[-1].package, reports[-1].newest_file = _copy_submission(folder, submissions_dir, copy, config)
            reports[-1].fingerprint = fingerprint(copy)
            reports[-1].flags = provenance_flags(copy / PACKAGE, wanted)
        except Refused as refused:
            message = f"not graded: {refused}"
            reports[-1].results = {
                ex.id: ExerciseResult(ERROR, message, 0.0, config.points_for(ex.id)) for ex in wanted
            }
            continue
        todo.append((index, copy))
    return reports, todo


def _copy_submission(
    folder: Path, submissions_dir: Path, copy: Path, config: GradingConfig
) -> tuple[str, float | None]:
    """Copy one submission's package to ``copy``; return the package's path as the report shows it,
    and the time of its newest file."""
    if folder.is_symlink():
        raise Refused(f"{folder.name} is a symbolic link (to {os.readlink(folder)}); hand in a folder")
    package = find_package(folder)
    if package is None:
        raise Refused(f"no {PACKAGE}/ package found in the submission {folder.name}/")
    copy.mkdir(parents=True, mode=0o755)
    copy.chmod(0o755)
    newest = copy_package(folder, package, copy / PACKAGE, config)
    return str(package.relative_to(submissions_dir)), newest


def _scrubbed(result: ExerciseResult, scrub: Callable[..., str]) -> ExerciseResult:
    result.message = scrub(result.message)
    result.output_head = scrub(result.output_head, HEAD_BYTES)
    return result
