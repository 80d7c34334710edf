"""Grade a class: ``python -m transformer_course grade SUBMISSIONS_DIR --out report.csv``.

Each sub-folder of ``SUBMISSIONS_DIR`` is one student's submission: their edited student edition,
or just their ``transformer_course/`` package folder (found up to three levels down). How a grade
is reached, and what a submission can and cannot do about it:

1. **A private copy.** The package is copied into a folder of the grader's (regular files and
   folders only, within size caps; the course's ``tools/`` and caches left out). A symbolic link,
   a device or a file outside the student's own folder refuses the submission, named in the report.
2. **One sandbox per student** (:mod:`.sandbox`: bubblewrap, else util-linux ``unshare``): it sees
   the student's copy, the probe package, the worker's inbox and the Python installation, nothing
   else of the machine (no solutions, no ``.git``, no classmates, no other copies of the course,
   not the instructor's package even where it is installed in site-packages); read-only except a
   small private ``/tmp``; no network; limits on memory, processes and file size; every process it
   started is killed when it ends.
3. **A warm worker, a fresh child per exercise** (:mod:`.probe.worker`). In the sandbox one Python
   imports PyTorch and the probes once, never the student's code, and cannot be traced or read
   through ``/proc`` by the processes it starts. For each exercise the grader puts that exercise's
   files (and only those) in the worker's inbox and asks, with a fresh nonce; the worker forks a
   child from its clean state, which imports the student's package, runs the probes and writes
   plain data to a descriptor of its own (:mod:`.probe.wire`). At the exercise's time limit the
   child is killed; then every process it left is killed and ``/tmp`` emptied, and only then does
   the worker answer. An answer without the nonce sent for that exercise, or none in time, costs
   that exercise and the worker: the student's next exercise gets a fresh one.
4. **The verdict outside.** This process, which never imports the submission, judges that data
   with the course's references (the very judges ``check`` uses). A malformed or forged result
   costs that exercise only.
5. **The report at the end**, written atomically (CSV, JSON, a feedback file per student), its
   messages and output excerpts capped and scrubbed of solution text, its cells safe to open in a
   spreadsheet and its names escaped in Markdown. Each student done is also added to a state file
   (:class:`GradingState`), so that an interrupted run can go on without grading them again.

Without a sandbox (macOS, no user namespaces) the same workers run with the limits that ``setrlimit``
gives and an audit hook in each child refusing what the sandbox would hide; :func:`grade` says what
that does not protect, and ``require_sandbox=True`` (``--require-sandbox``) refuses to run.

Points per exercise, time and memory limits live in ``grading.toml`` at the root of the course.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import html
import importlib.util
import io
import json
import math
import os
import queue
import re
import secrets
import select
import shutil
import stat
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

import torch

from . import course, sandbox
from .checks.case import Case
from .checks.registry import Exercise
from .checks.runner import build_cases, get_exercise, verdict
from .checks.standins import job_source
from .checks.status import ERROR, FAILED, PASSED, REFERENCE, STATUSES, SYMBOLS, TIMED_OUT
from .course import PACKAGE
from .edition import check_level
from .probe import child, worker
from .probe.wire import MAGIC, MAX_RESULT_BYTES, MalformedResult, cut, read_payload
from .probe.worker import HEAD_BYTES, WHERE_BYTES

MAX_MESSAGE = 2000  # characters of a message in the report
_SAFE_NAME = re.compile(r"[\w -][\w .-]{0,99}")  # an assignment's name, used as a folder's
SCORINGS = ("all_or_nothing", "cases")  # grading.toml's scoring: full points for a pass, or per case passed
SKIPPED = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


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
    max_submission_mb: int = 50
    max_files: int = 2000
    jobs: int = 1
    scoring: str = "all_or_nothing"  # or "cases": points × cases passed / cases
    hidden: bool = False  # also grade cases students never see (see load_hidden_cases)
    hidden_cases: str | None = None  # the instructor's file of hidden cases (a path), with hidden = true
    assignment: str | None = None  # its name: the feedback's folder, the LMS gradebook's column
    hints: str = "full"  # how much of the fix the feedback says: "full", "nudge" or "none" (edition.HINT_LEVELS)
    written_questions: list[str] | None = None  # [written] questions; None: those of the graded exercises' notebooks
    written_default_points: float = 1.0  # [written] default_points
    written_points: dict[str, float] = field(default_factory=dict)  # [written] exNN_qK = points

    def points_for(self, exercise_id: str) -> float:
        return float(self.points.get(exercise_id, self.default_points))

    def score(self, exercise_id: str, status: str, passed: int, total: int) -> float:
        """The points earned: all of them for a pass; with ``scoring = "cases"`` the share of the
        cases passed otherwise (none for an attempt on the reference answers)."""
        points = self.points_for(exercise_id)
        if status == PASSED:
            return points
        if self.scoring == "cases" and total and status != REFERENCE:
            return points * min(passed, total) / total
        return 0.0

    def written_points_for(self, question_id: str) -> float:
        return float(self.written_points.get(question_id, self.written_default_points))

    def timeout_for(self, exercise_id: str) -> float:
        return float(self.timeouts.get(exercise_id, self.timeout_s))

    def validate(self) -> GradingConfig:
        """Raise ValueError (one line) for a value no grading can use; return self."""
        numbers = {"default_points": self.default_points, "timeout_s": self.timeout_s, **self.points,
                   **{f"timeout_s.{k}": v for k, v in self.timeouts.items()},
                   "written.default_points": self.written_default_points,
                   **{f"written.{k}": v for k, v in self.written_points.items()}}  # fmt: skip
        for name, value in numbers.items():
            if not math.isfinite(value) or value < 0 or (name.startswith("timeout_s") and value == 0):
                raise ValueError(f"grading setting {name} = {value} must be a finite number above 0")
        limits = {"jobs": (self.jobs, 1), "memory_mb": (self.memory_mb, 256), "max_output_kb": (self.max_output_kb, 1),
                  "max_submission_mb": (self.max_submission_mb, 1), "max_files": (self.max_files, 1)}  # fmt: skip
        for name, (value, lowest) in limits.items():
            if value < lowest:
                raise ValueError(f"grading setting {name} = {value} must be at least {lowest}")
        if self.assignment is not None and not _SAFE_NAME.fullmatch(self.assignment):
            raise ValueError(f"grading setting assignment = {self.assignment!r} must be a name (letters, digits, "
                             "spaces, . _ -, not starting with . ), the feedback's folder")  # fmt: skip
        if self.scoring not in SCORINGS:
            raise ValueError(f"grading setting scoring = {self.scoring!r} must be one of {', '.join(SCORINGS)}")
        check_level(self.hints, "grading setting hints")
        for exercise_id in [*self.points, *self.timeouts, *(self.exercises or [])]:
            get_exercise(exercise_id)  # a typo is an error, not a silent default
        if self.hidden_cases is not None:
            if not self.hidden:
                raise ValueError("grading setting hidden_cases needs hidden = true")
            load_hidden_cases(Path(self.hidden_cases))
        if self.written_questions or self.written_points:
            from .written import check_question_ids

            check_question_ids([*(self.written_questions or []), *self.written_points])
        return self


def load_config(path: Path | None) -> GradingConfig:
    """Read ``grading.toml``; no file gives the defaults (1 point per exercise). Raises ValueError,
    FileNotFoundError or KeyError (an unknown exercise) with one line."""
    if path is None:
        return GradingConfig()
    if not Path(path).is_file():
        raise FileNotFoundError(f"grading configuration {path} does not exist")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not valid TOML: {error}") from None
    unknown = set(data) - {"grading", "points", "timeout_s", "written"}
    if unknown:
        raise ValueError(f"{path}: unknown section(s) {sorted(unknown)}; expected [grading], [points], [timeout_s], "
                         "[written]")  # fmt: skip
    settings = dict(data.get("grading", {}))
    exercises = settings.pop("exercises", "all")
    if exercises != "all" and not (isinstance(exercises, list) and all(isinstance(e, str) for e in exercises)):
        raise ValueError(f'{path}: [grading] exercises must be "all" or a list of exercise ids')
    try:
        config = GradingConfig(
            exercises=None if exercises == "all" else list(exercises),
            points={k: _number(v, k) for k, v in data.get("points", {}).items()},
            timeouts={k: _number(v, k) for k, v in data.get("timeout_s", {}).items()},
        )
        for key, value in settings.items():
            if key not in {"default_points", "timeout_s", "memory_mb", "max_output_kb", "max_submission_mb",
                           "max_files", "jobs", "scoring", "hidden", "hidden_cases", "assignment", "hints"}:  # fmt: skip
                raise ValueError(f"unknown setting [grading] {key}")
            if key == "hidden_cases":  # a path, relative to the grading.toml that names it
                value = str((Path(path).parent / _text(value, key)).resolve())
            kind = str if key == "assignment" else type(getattr(config, key))
            convert = {float: _number, int: _integer, str: _text, bool: _flag, type(None): _text}[kind]
            setattr(config, key, convert(value, key))
        _written_settings(dict(data.get("written", {})), config)
        return config.validate()
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def _written_settings(table: dict, config: GradingConfig) -> None:
    """``[written]``: questions = "auto" or a list of ids, default_points, and exNN_qK = points."""
    questions = table.pop("questions", "auto")
    if questions != "auto" and not (isinstance(questions, list) and all(isinstance(q, str) for q in questions)):
        raise ValueError('[written] questions must be "auto" or a list of question ids such as "ex03_q1"')
    config.written_questions = None if questions == "auto" else list(questions)
    if "default_points" in table:
        config.written_default_points = _number(table.pop("default_points"), "[written] default_points")
    config.written_points = {k: _number(v, f"[written] {k}") for k, v in table.items()}  # ids: checked by validate


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


def _text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {value!r}")
    return value


def _integer(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return value


def load_hidden_cases(path: Path) -> dict[str, list[Callable[[], Iterable[Case]]]]:
    """The instructor's hidden cases: exercise id → the case builders of the Python file ``path``
    marked ``@hidden("exNN_k")`` (:func:`.checks.registry.hidden`). Raises FileNotFoundError, or
    ValueError (one line) for a file that does not run or names an unknown exercise."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"the hidden cases file {path} does not exist")
    spec = importlib.util.spec_from_file_location("_instructor_hidden_cases", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # noqa: BLE001 - the instructor's file: say what is wrong in one line
        raise ValueError(f"the hidden cases file {path} failed to run: {type(error).__name__}: {error}") from None
    found: dict[str, list[Callable[[], Iterable[Case]]]] = {}
    for builder in vars(module).values():
        exercise_id = getattr(builder, "hidden_for", None)
        if callable(builder) and isinstance(exercise_id, str):
            try:
                get_exercise(exercise_id)
            except KeyError:
                raise ValueError(f"the hidden cases file {path} names an unknown exercise {exercise_id!r}") from None
            found.setdefault(exercise_id, []).append(builder)
    return found


NOT_SUBMITTED = {".venv", "site-packages", "__MACOSX"}  # folders of a submission that hold no answer of its


def find_package(submission: Path) -> Path | None:
    """The submission's ``transformer_course`` package folder, or None.

    Accepts a whole edition (``alice/transformer_course/``), the package folder itself
    (``alice/`` holding ``__init__.py`` and the modules), or an edition nested up to three levels
    down (an unpacked archive: ``alice/course-main/transformer_course/``). Raises
    :class:`Refused` naming both where the submission holds two copies of the package.
    """
    top = [submission / PACKAGE] if (submission / PACKAGE).is_dir() else []
    nested = [
        p.parent
        for depth in ("*/", "*/*/", "*/*/*/")
        for p in submission.glob(f"{depth}{PACKAGE}/__init__.py")
        if not NOT_SUBMITTED & set(p.relative_to(submission).parts)
    ]
    found = sorted(set(top + nested), key=lambda p: (len(p.parts), str(p)))
    if len(found) > 1:
        where = [str(p.relative_to(submission.parent)) for p in found]
        raise Refused(f"the submission holds {len(found)} copies of the package ({' and '.join(where)}): hand in one")
    if found:
        return found[0]
    return submission if (submission / "__init__.py").is_file() else None


def unpack_archive(archive: Path, dest: Path, config: GradingConfig) -> Path:
    """Unpack a student's ``.zip`` into ``dest/<its name>/`` and return that folder. Only regular files
    and folders, within the same caps as a folder's package (``max_submission_mb``, ``max_files``, the
    bytes counted as they are inflated); what holds no answer (a ``.venv``, ``__MACOSX``, caches) is
    left out. Raises :class:`Refused` naming a link, a special file, a path leading outside the
    archive, an entry given twice, a cap, or an archive that cannot be read."""
    folder = dest / archive.stem
    folder.mkdir(parents=True, mode=0o755)
    budget = {"bytes": config.max_submission_mb * 2**20, "files": config.max_files}
    name = archive.name
    try:
        with zipfile.ZipFile(archive) as zipped:
            for info in zipped.infolist():
                name = f"{archive.name}: {info.filename}"
                parts = _archive_parts(info.filename, name)
                if not parts or (NOT_SUBMITTED | SKIPPED) & set(parts):
                    continue
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise Refused(f"{name} is a symbolic link; hand in plain files")
                if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    raise Refused(f"{name} is not a regular file or folder")
                target = folder.joinpath(*parts)
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                budget["files"] -= 1
                target.parent.mkdir(parents=True, exist_ok=True)
                with zipped.open(info) as reader, open(target, "xb") as writer:
                    while chunk := reader.read(1 << 20):
                        budget["bytes"] -= len(chunk)
                        if budget["bytes"] < 0 or budget["files"] < 0:
                            raise Refused(f"{archive.name} unpacks to more than the caps ({config.max_submission_mb} "
                                          f"MB, {config.max_files} files; at {info.filename})")  # fmt: skip
                        writer.write(chunk)
                    if budget["files"] < 0:
                        raise Refused(f"{archive.name} holds more than {config.max_files} files (the cap)")
                stamp = time.mktime((*info.date_time, 0, 0, -1))  # the archive's time of the file, not now
                os.utime(target, (stamp, stamp))
    except FileExistsError:
        raise Refused(f"{name} is in the archive twice") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError, OSError,
            ValueError) as error:  # fmt: skip
        raise Refused(f"{name} could not be unpacked: {error}") from None
    _readable(folder)
    return folder


def _archive_parts(filename: str, name: str) -> list[str]:
    """An archive entry's path as folder names, or Refused where it would lead outside the archive."""
    path = filename.replace("\\", "/")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if path.startswith("/") or (len(path) > 1 and path[1] == ":") or ".." in parts:
        raise Refused(f"{name} leads outside the archive: refused")
    return parts


class Refused(Exception):
    """A submission that is not graded at all; the message names what was wrong."""


def copy_package(student: Path, package: Path, dest: Path, config: GradingConfig) -> float | None:
    """Copy ``package`` (inside the folder ``student``) to ``dest``, readable by every user (a job
    may run as another uid). Only regular files and folders, within the size caps; the package's
    ``tools/`` (the course's machinery, which no room imports) and caches are left out. Returns the
    newest file's modification time (None for an empty package). Raises :class:`Refused` naming a
    link, a special file, a path leading outside ``student`` or a cap."""
    if student.is_symlink():
        raise Refused(f"{student.name}/ is a symbolic link; hand in a folder")
    for parent in [package, *package.parents]:
        if parent == student:
            break
        if parent.is_symlink():
            raise Refused(f"{parent.relative_to(student.parent)} is a symbolic link (to {os.readlink(parent)})")
    if not package.resolve().is_relative_to(student.resolve()):
        raise Refused(f"the package resolves to {package.resolve()}, outside {student.name}/")
    budget = {"bytes": config.max_submission_mb * 2**20, "files": config.max_files}
    _copy_folder(package, dest, student.parent, budget, top=True)
    if budget["bytes"] < 0 or budget["files"] < 0:
        raise Refused(f"the package is larger than the caps ({config.max_submission_mb} MB, {config.max_files} files)")
    return budget.get("newest")


def _copy_folder(source: Path, dest: Path, base: Path, budget: dict, top: bool = False) -> None:
    dest.mkdir(mode=0o755)
    dest.chmod(0o755)
    with os.scandir(source) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            where = Path(entry.path).relative_to(base)
            if entry.name in SKIPPED or (top and entry.name == "tools"):
                continue
            if entry.is_symlink():
                raise Refused(f"{where} is a symbolic link (to {os.readlink(entry.path)}); hand in plain files")
            if entry.is_dir(follow_symlinks=False):
                _copy_folder(Path(entry.path), dest / entry.name, base, budget)
            elif entry.is_file(follow_symlinks=False):
                _copy_file(Path(entry.path), dest / entry.name, where, budget)
            else:
                raise Refused(f"{where} is not a regular file or folder (a device, socket or pipe)")


def _copy_file(source: Path, dest: Path, where: Path, budget: dict) -> None:
    fd = os.open(source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as reader:
        info = os.fstat(reader.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{where} is not a regular file")
        budget["files"] -= 1
        budget["bytes"] -= info.st_size
        budget["newest"] = max(budget.get("newest", 0.0), info.st_mtime)
        if budget["bytes"] < 0 or budget["files"] < 0:
            raise Refused(f"the package is larger than the caps (at {where})")
        with open(dest, "xb") as writer:
            shutil.copyfileobj(reader, writer)
    dest.chmod(0o644)


@dataclass
class ExerciseResult:
    status: str
    message: str
    points: float
    max_points: float
    seconds: float = 0.0
    output_bytes: int = 0
    output_head: str = ""
    cases_passed: int = 0  # every case, the hidden ones included
    cases_total: int = 0
    hidden_passed: int = 0  # of them, the hidden cases (grading.toml's hidden = true)
    hidden_total: int = 0

    def cases_text(self) -> str:
        """Like "3 of 5": text a spreadsheet keeps as it is (not a date, as 3/5 would become)."""
        return f"{self.cases_passed} of {self.cases_total}"

    def feedback_cases(self) -> str:
        """The cases passed as a student may see them: the visible ones, then the hidden count."""
        visible = f"{self.cases_passed - self.hidden_passed} of {self.cases_total - self.hidden_total}"
        return f"{visible}; hidden: {self.hidden_passed} of {self.hidden_total}" if self.hidden_total else visible


@dataclass
class WrittenResult:
    """A written answer (:mod:`.written`): its points once the instructor's sheet is merged in."""

    max_points: float
    answered: bool
    points: float | None = None  # None: not graded yet (``grade-written`` not run)
    comment: str = ""


@dataclass
class StudentReport:
    student: str
    package: str | None  # the package folder that was graded, relative to the submissions folder
    results: dict[str, ExerciseResult]
    newest_file: float | None = None  # the modification time of the package's newest file (seconds)
    late: bool | None = None  # newest_file after the due time (None: no due time given, or no file)
    fingerprint: str | None = None  # sha256 of the package's files as graded (names and contents)
    flags: list[str] = field(default_factory=list)  # for the instructor to look at (see provenance_flags)
    written: dict[str, WrittenResult] = field(default_factory=dict)  # question id → its points (see .written)

    def newest_text(self) -> str:
        """The newest file's time, ISO 8601 in this machine's time zone ("" when unknown)."""
        if self.newest_file is None:
            return ""
        return datetime.fromtimestamp(self.newest_file).astimezone().isoformat(timespec="seconds")

    @property
    def total(self) -> float:
        return sum(r.points for r in self.results.values()) + sum(w.points or 0.0 for w in self.written.values())

    @property
    def max_points(self) -> float:
        return sum(r.max_points for r in self.results.values()) + sum(w.max_points for w in self.written.values())


@dataclass
class GradingReport:
    exercises: list[str]
    students: list[StudentReport]
    config: GradingConfig
    seconds: float
    sandbox: str = ""  # what protected the jobs (the sandbox's one-line description)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # entries of the submissions folder left out, why
    written: dict[str, str] = field(default_factory=dict)  # written question id → its text (see .written)


def list_submissions(submissions_dir: Path) -> tuple[list[Path], list[tuple[str, str]]]:
    """The submissions (folders, ``.zip`` archives, and links, to be refused by name) and every other
    entry of ``submissions_dir``, with why it is left out."""
    if not submissions_dir.is_dir():
        raise FileNotFoundError(f"{submissions_dir} is not a folder of submissions")
    entries = sorted(submissions_dir.iterdir())
    folders = {p.name for p in entries if p.is_dir() and not p.is_symlink()}
    found, skipped = [], []
    for entry in entries:
        if entry.name.startswith((".", "_")):
            skipped.append((entry.name, "its name starts with '.' or '_' (hidden, or made by the system)"))
        elif entry.is_symlink() or entry.is_dir():
            found.append(entry)
        elif not _is_archive(entry):
            skipped.append((entry.name, "neither a folder nor a .zip archive"))
        elif entry.stem in folders:
            skipped.append((entry.name, f"the folder {entry.stem}/ is graded instead"))
        else:
            found.append(entry)
    if not found:
        raise FileNotFoundError(f"{submissions_dir} holds no submission folders (one sub-folder or .zip per student)")
    return found, skipped


def _is_archive(entry: Path) -> bool:
    return entry.suffix.lower() == ".zip" and not entry.is_symlink() and entry.is_file()


def student_name(entry: Path) -> str:
    """The student a submission belongs to: the folder's name, or the archive's without ``.zip``."""
    return entry.stem if _is_archive(entry) else entry.name


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
    scrubber = background.submit(Scrubber.for_course)  # reading the solutions takes seconds: meanwhile, grade
    try:
        with tempfile.TemporaryDirectory(prefix="transformer-course-grading-") as temporary:
            jobs = _Jobs(Path(temporary), support, config, Path(submissions_dir), wanted)
            reports, todo = _copy_all(folders, Path(submissions_dir), Path(temporary) / "copies", wanted, config)
            for report in reports:
                if due is not None and report.newest_file is not None:
                    report.late = report.newest_file > due.timestamp()
            state = GradingState(state_file, ids, config) if state_file is not None else None
            todo = state.restore(reports, todo, resume) if state is not None else todo
            meter = Progress(len(todo), len(todo) * len(wanted), enabled=progress)
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
    """The exercises a run grades: those asked for, else the config's, else every one."""
    from .checks.registry import EXERCISES
    from .checks.runner import _load_all

    _load_all()
    return list(exercises or config.exercises or sorted(EXERCISES))


def _copy_all(folders: list[Path], submissions_dir: Path, copies: Path, wanted: list[Exercise],
              config: GradingConfig) -> tuple[list[StudentReport], list[tuple[int, Path]]]:  # fmt: skip
    """Copy every submission; return the reports (refused ones already filled in) and the students
    to grade: (index in the reports, the copy's folder)."""
    reports, todo = [], []
    for index, folder in enumerate(folders):
        reports.append(StudentReport(student_name(folder), None, {}))
        copy = copies / str(index)
        try:
            if _is_archive(folder):
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


def provenance_flags(package: Path, wanted: list[Exercise]) -> list[str]:
    """What an instructor may want to look at in a copied package (flags, never a penalty): the
    solution markers of the complete edition, the backups ``restore`` leaves (``*.bak``), and the
    exercises whose function is, line for line, the complete edition's worked solution."""
    from .edition import BEGIN

    flags = []
    files = sorted(p for p in package.rglob("*") if p.is_file())
    marked = [p for p in files if p.suffix == ".py" and BEGIN in p.read_text(encoding="utf-8", errors="replace")]
    if marked:
        flags.append(f"solution markers ({BEGIN}) in {', '.join(p.relative_to(package).as_posix() for p in marked)}")
    backups = [p.relative_to(package).as_posix() for p in files if p.name.endswith(".bak")]
    if backups:
        flags.append(f"backups left by restore: {', '.join(backups)}")

    course_package = course.package_dir()
    for ex in wanted:
        theirs, ours = package / ex.file.split("/", 1)[1], course_package / ex.file.split("/", 1)[1]
        answer = _worked_solution(str(ours), ex.qualname)
        if answer is not None and _function_lines(str(theirs), ex.qualname) == answer:
            flags.append(f"{ex.id}: the same code as the worked solution")
    return flags


@functools.lru_cache(maxsize=256)  # the course's own answers: read once per run, not once per student
def _worked_solution(path: str, qualname: str) -> tuple[str, ...] | None:
    """Function ``qualname`` of a file of the complete edition (None where the file holds no worked
    solution: grading from a student edition), as :func:`_function_lines` gives it."""
    from .edition import BEGIN

    return _function_lines(path, qualname) if BEGIN in _source(path) else None


def _function_lines(path: str, qualname: str) -> tuple[str, ...] | None:
    """Function ``qualname`` of the file ``path`` line by line (stripped; blank lines and the
    solution markers left out), or None where there is no such function."""
    from .edition import BEGIN, END, _function_span

    source = _source(path)
    try:
        first, last = _function_span(source, qualname)
    except (SyntaxError, ValueError):
        return None
    lines = (line.strip() for line in source.splitlines()[first : last + 1])
    return tuple(line for line in lines if line and line not in (BEGIN, END))


def _source(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def fingerprint(folder: Path) -> str:
    """A digest of every file below ``folder`` (names and contents): the same copy, the same digest."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class WorkerLost(Exception):
    """A student's worker is not to be trusted with another exercise: it died, stopped answering,
    or answered out of turn. The message says so, for the report."""


@dataclass(frozen=True)
class JobOutcome:
    """How one exercise's child ended, as its worker saw it: what a verdict is reached from."""

    returncode: int  # 128 + N when signal N ended it
    timed_out: bool
    seconds: float
    result: bytes  # the child's frame, as it wrote it: checked by read_payload
    printed_bytes: int
    printed_head: bytes
    stopped_at: bytes = b""  # a child stopped at its time limit: its stack then (faulthandler's text)

    def hanging_imports(self) -> list[tuple[str, int]]:
        """The submission's files (relative to the package, with the line) whose import was under
        way when the child was stopped: innermost first."""
        return [(f, n) for f, n, function in self.stack() if function == "<module>"]

    def stack(self) -> list[tuple[str, int, str]]:
        """The frames of the stopped child in the submission's package: (file relative to the
        package, line, function), innermost first."""
        text = self.stopped_at.decode("utf-8", "replace")
        return [(m[1], int(m[2]), m[3]) for m in _FRAME.finditer(text)]


_FRAME = re.compile(rf'File "[^"\n]*/{PACKAGE}/([^"\n]+\.py)", line (\d+) in (\S+)')  # faulthandler's lines


class NotRun(Exception):
    """An exercise not run, for a reason the message gives (its room's import hangs)."""


class _Worker:
    """The grader's end of one student's warm worker (:mod:`.probe.worker`), in the student's sandbox."""

    ANSWER_FIELDS = {"nonce": str, "returncode": int, "timed_out": bool, "seconds": float | int,
                     "result_bytes": int, "printed_bytes": int, "head_bytes": int, "where_bytes": int}  # fmt: skip

    def __init__(self, session: sandbox.Session) -> None:
        self.session = session
        self.buffer = bytearray()
        try:
            ready = self._line(time.monotonic() + STARTUP_S)
        except WorkerLost as lost:
            raise WorkerLost(f"the grading worker could not start: {self.close_and_say(str(lost))}") from None
        if ready != worker.READY:
            raise WorkerLost(f"the grading worker could not start: {self.close_and_say('it said something else')}")

    def run(self, timeout_s: float) -> JobOutcome:
        """One exercise (its files are in the worker's inbox) in a fresh child; its outcome."""
        nonce = secrets.token_hex(16)
        try:
            self.session.stdin.write(json.dumps({"nonce": nonce, "timeout_s": timeout_s}).encode() + b"\n")
            self.session.stdin.flush()
        except OSError:
            raise WorkerLost("the grading worker was gone before this exercise (the previous one ended it)") from None
        deadline = time.monotonic() + timeout_s + GRACE_S
        header = self._header(self._line(deadline), nonce)
        result = self._bytes(header["result_bytes"], deadline)
        head = self._bytes(header["head_bytes"], deadline)
        where = self._bytes(header["where_bytes"], deadline)
        return JobOutcome(header["returncode"], header["timed_out"], float(header["seconds"]), result,
                          header["printed_bytes"], head, where)  # fmt: skip

    def close_and_say(self, why: str) -> str:
        """End the worker; ``why`` with the last line it printed, if any."""
        printed = self.session.close().decode("utf-8", "replace").strip().splitlines()
        return f"{why} ({printed[-1][:300]})" if printed else why

    def close(self) -> None:
        self.session.close()

    def _header(self, line: bytes, nonce: str) -> dict:
        try:
            header = json.loads(line)
        except ValueError:
            header = None
        fields = self.ANSWER_FIELDS
        if not (isinstance(header, dict) and set(header) == set(fields)
                and all(type(header[k]) is not bool or fields[k] is bool for k in fields)
                and all(isinstance(header[k], fields[k]) for k in fields)):  # fmt: skip
            raise WorkerLost("the grading worker's answer was malformed")
        if header["nonce"] != nonce:
            raise WorkerLost("the grading worker answered for another exercise: refused")
        limits = {"result_bytes": RESULT_LIMIT, "head_bytes": HEAD_BYTES, "where_bytes": WHERE_BYTES,
                  "printed_bytes": 2**62}  # fmt: skip
        if any(not 0 <= header[k] <= limit for k, limit in limits.items()):
            raise WorkerLost("the grading worker's answer was larger than any result")
        return header

    def _line(self, deadline: float) -> bytes:
        while b"\n" not in self.buffer:
            if len(self.buffer) > 4096:
                raise WorkerLost("the grading worker's answer was malformed")
            self._fill(deadline)
        line, _, rest = bytes(self.buffer).partition(b"\n")
        self.buffer[:] = rest
        return line + b"\n"

    def _bytes(self, count: int, deadline: float) -> bytes:
        while len(self.buffer) < count:
            self._fill(deadline)
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    def _fill(self, deadline: float) -> None:
        """Read what the worker sent, waiting at most until ``deadline``."""
        fd = self.session.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise WorkerLost(f"the grading worker stopped answering (no answer {GRACE_S:g} s after the time limit)")
        try:
            chunk = os.read(fd, 1 << 20)
        except OSError as error:
            raise WorkerLost(f"the grading worker's channel failed ({error.strerror})") from None
        if not chunk:
            raise WorkerLost("the grading worker ended while this exercise ran (did the code kill its parent?)")
        self.buffer += chunk


RESULT_LIMIT = len(MAGIC) + 8 + MAX_RESULT_BYTES + 1  # a byte more than any frame: a longer one arrives cut, malformed
STARTUP_S = 180.0  # seconds a worker may take to start Python and import PyTorch (a busy machine)
GRACE_S = 15.0  # beyond an exercise's time limit, how long its answer may take to come back
JOB_FILES = ("job.json", "cases.pt", "standins.py")  # one exercise's files, put in a worker's inbox


class _Jobs:
    """The grading of one run: the exercises' files, one warm worker per student, what came back."""

    def __init__(self, work: Path, support: sandbox.SandboxSupport, config: GradingConfig, submissions: Path,
                 wanted: list[Exercise]) -> None:  # fmt: skip
        self.work, self.support, self.config, self.submissions = work, support, config, submissions
        self.wanted = wanted
        self.hidden = _hidden_course_packages(work) if support.isolated else []
        self.probe_dir = work / "probe"  # the probe package, which every worker imports
        probe = Path(child.__file__).parent
        shutil.copytree(probe, self.probe_dir / child.NAME, ignore=lambda _, names: [n for n in names
                        if not n.endswith(".py")])  # fmt: skip
        _readable(self.probe_dir)
        self.cases: dict[str, list[Case]] = {}  # the visible cases, then the hidden ones
        self.visible: dict[str, int] = {}  # how many of them are visible
        self.extra = load_hidden_cases(Path(config.hidden_cases)) if config.hidden_cases else {}
        self.verdicts: dict[tuple, tuple] = {}  # judged outcomes (see _verdict); main thread only
        # Built in the background, in the order the workers ask for them, while the first workers start.
        self.preparing = ThreadPoolExecutor(max_workers=1)
        self.exercise_dirs = {ex.id: self.preparing.submit(self._prepare, ex) for ex in wanted}

    def _prepare(self, ex: Exercise) -> Path:
        """The exercise's files: its stand-ins, its cases, job.json (never shown to a job but its own)."""
        from .checks.registry import EXERCISES

        folder = self.work / "jobs" / ex.id
        folder.mkdir(parents=True)
        (folder / "standins.py").write_text(job_source(ex.needs), encoding="utf-8")
        self._draw(ex)
        torch.save([case.probe for case in self.cases[ex.id]], folder / "cases.pt")
        targets = {i: EXERCISES[i].target for i in (ex.id, *ex.needs)}  # the rooms the job must look at, no more
        job = {"exercise": ex.id, "target": ex.target, "targets": targets}
        (folder / "job.json").write_text(json.dumps(job), encoding="utf-8")
        _readable(folder)
        return folder

    def _draw(self, ex: Exercise) -> None:
        """The exercise's cases: those a local check runs, then (``hidden = true``) the same builder
        drawn again (another seed, larger inputs) and the instructor's own."""
        visible = build_cases(ex)
        hidden = []
        if self.config.hidden:
            hidden = build_cases(ex, hidden=True) + [case for more in self.extra.get(ex.id, []) for case in more()]
        self.cases[ex.id], self.visible[ex.id] = visible + hidden, len(visible)

    def _guard(self, allowed: list[str]) -> dict:
        """Without a sandbox: what the child's audit hook refuses to read (the course, every
        submission, the other jobs) and what it still allows (Python's own folders, its worker's)."""
        root = course.find_course_root() or course.package_dir()
        forbidden = {str(root), str(course.package_dir()), str(self.submissions.resolve()), str(self.work)}
        return {"forbidden": sorted(forbidden), "allowed": sandbox.python_paths() + allowed}

    def run(self, todo: list[tuple[int, Path]]) -> Iterator[tuple[int, Exercise, JobOutcome | Exception]]:
        """Grade ``config.jobs`` students at a time, each with its own worker; yield each exercise's
        outcome as it comes (every exercise of every student in ``todo``)."""
        uids: queue.Queue[int] = queue.Queue()
        for slot in range(self.config.jobs):  # as root, workers at the same time get different uids
            uids.put(sandbox.NOBODY - slot)
        outcomes: queue.Queue[tuple[int, Exercise, JobOutcome | Exception]] = queue.Queue()
        stop = threading.Event()

        def one(index: int, copy: Path) -> None:
            uid = uids.get()
            try:
                self._student(index, copy, uid, stop, outcomes.put)
            finally:
                uids.put(uid)

        pool = ThreadPoolExecutor(max_workers=self.config.jobs)
        try:
            for index, copy in todo:
                pool.submit(one, index, copy)
            for _ in range(len(todo) * len(self.wanted)):
                yield outcomes.get()
        finally:  # interrupted (Ctrl-C): no new exercise starts; what runs ends within its time limit
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            self.preparing.shutdown(wait=True, cancel_futures=True)

    def _student(self, index: int, copy: Path, uid: int, stop: threading.Event, deliver: Callable) -> None:
        """Every exercise of one student, in one warm worker; a fresh one after a worker is lost.
        Delivers one outcome per exercise, whatever happens."""
        folder = self.work / "students" / str(index)
        worker_ = None
        hanging: dict[str, tuple[str, str, int]] = {}  # a file whose import never ended → (exercise, file, line)
        try:
            for ex in self.wanted:
                if stop.is_set():
                    return
                try:
                    worker_ = worker_ or self._start_worker(folder, copy, uid)
                    outcome: JobOutcome | Exception = self._exercise(worker_, folder / "inbox", ex, hanging)
                    if isinstance(outcome, JobOutcome) and outcome.timed_out:
                        for file, line in outcome.hanging_imports():
                            hanging.setdefault(file, (ex.id, file, line))
                except NotRun as not_run:
                    outcome = not_run
                except WorkerLost as lost:
                    outcome, worker_ = lost, worker_ and worker_.close()
                except Exception as error:  # noqa: BLE001 - costs this exercise, never the run
                    outcome = error
                deliver((index, ex, outcome))
        finally:
            if worker_ is not None:
                worker_.close()

    def _start_worker(self, folder: Path, copy: Path, uid: int) -> _Worker:
        inside = self.support.isolated  # without a sandbox the folders are where they are
        course_at, submission_at, job_at = ("/course", "/submission", "/job") if inside else (
            str(self.probe_dir), str(copy), str(folder))  # fmt: skip
        if not folder.exists():
            (folder / "inbox").mkdir(parents=True)
            guard = None if inside else self._guard([course_at, job_at])
            settings = {"package": PACKAGE, "site_packages": _site_packages(), "guard": guard, "isolated": inside,
                        "max_result_bytes": RESULT_LIMIT}  # fmt: skip
            (folder / "worker.json").write_text(json.dumps(settings), encoding="utf-8")
            _readable(folder)
        argv = [sys.executable, "-I", "-S", "-c", child.BOOT, course_at, submission_at, job_at]
        views = [sandbox.Visible(self.probe_dir, course_at), sandbox.Visible(copy, submission_at),
                 sandbox.Visible(folder, job_at), *self.hidden]  # fmt: skip
        threads = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
        session = sandbox.start(
            argv, visible=views, env=threads, memory_mb=self.config.memory_mb, max_processes=64,
            max_file_mb=2 * MAX_RESULT_BYTES // 2**20, tmp_mb=64, output_limit_bytes=64 * 1024,
            mechanism=self.support.mechanism, uid_if_root=uid,
        )  # fmt: skip
        return _Worker(session)

    def _exercise(self, worker_: _Worker, inbox: Path, ex: Exercise, hanging: dict) -> JobOutcome:
        """Show the worker this exercise's files, for the time of this exercise only; NotRun where
        the import of its room (or of the package) already ran out of time for an earlier one."""
        for room in (ex.file.split("/", 1)[1], "__init__.py"):
            if room in hanging:
                first, file, line = hanging[room]
                raise NotRun(f"not run: importing {file} did not finish in {first} (stopped at line {line}); "
                             "code at the top level of a room runs on import: fix that first")  # fmt: skip
        for name in JOB_FILES:
            os.link(self.exercise_dirs[ex.id].result() / name, inbox / name)
        try:
            return worker_.run(self.config.timeout_for(ex.id))
        finally:
            for name in JOB_FILES:
                (inbox / name).unlink(missing_ok=True)

    def judged(self, ex: Exercise, outcome: JobOutcome | Exception) -> ExerciseResult:
        points = self.config.points_for(ex.id)
        if isinstance(outcome, Exception):
            status = TIMED_OUT if isinstance(outcome, NotRun) else ERROR
            message = f"the grading job could not run: {outcome}"
            message = str(outcome) if isinstance(outcome, WorkerLost | NotRun) else message
            total = self._count(ex)
            return ExerciseResult(status, message, 0.0, points, cases_total=total,
                                  hidden_total=total - self.visible.get(ex.id, total))  # fmt: skip
        status, message, passed, total, hidden_passed = self._verdict(ex, outcome)
        return ExerciseResult(status, message, self.config.score(ex.id, status, passed, total), points,
                              round(outcome.seconds, 3), outcome.printed_bytes,
                              outcome.printed_head.decode("utf-8", "replace"), passed, total, hidden_passed,
                              total - self.visible[ex.id])  # fmt: skip

    def _count(self, ex: Exercise) -> int:
        """How many cases the exercise has (0 if they could not be built)."""
        future = self.exercise_dirs[ex.id]
        try:
            if not future.cancelled():
                future.result()
            elif ex.id not in self.cases:  # a run with nothing to grade: its preparations were cancelled
                self._draw(ex)
        except Exception:  # noqa: BLE001 - reported by the exercise's own result
            return 0
        return len(self.cases.get(ex.id, []))

    def count_refused(self, reports: list[StudentReport]) -> None:
        """A submission not graded at all passed none of the cases: say of how many."""
        for report in reports:
            for exercise_id, result in report.results.items():
                if result.cases_total == 0 and result.seconds == 0 and result.status == ERROR:
                    result.cases_total = self._count(get_exercise(exercise_id))
                    result.hidden_total = result.cases_total - self.visible.get(exercise_id, result.cases_total)

    def _verdict(self, ex: Exercise, outcome: JobOutcome) -> tuple[str, str, int, int, int]:
        """:func:`_verdict`, reached once per distinct outcome: the same data judged again gets the
        same verdict (every correct copy of a deterministic answer sends the very same bytes)."""
        over = outcome.printed_bytes > self.config.max_output_kb * 1024
        key = (ex.id, outcome.timed_out, outcome.returncode, over, hashlib.sha256(outcome.result).digest(),
               outcome.stopped_at)  # fmt: skip
        if key not in self.verdicts:
            self.verdicts[key] = _verdict(ex, self.cases[ex.id], self.visible[ex.id], outcome, self.config)
        return self.verdicts[key]


def _readable(folder: Path) -> None:
    """Readable by every user (as root, a worker runs as another uid); writable by this one only."""
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def _verdict(ex: Exercise, cases: list[Case], visible: int, outcome: JobOutcome,
             config: GradingConfig) -> tuple[str, str, int, int, int]:  # fmt: skip
    """The status and message of one exercise, the cases passed (of how many), and how many of the
    hidden ones passed (``cases[visible:]``), from how its child ended and what it sent back. A
    hidden case's failure is counted, never described."""
    total = len(cases)
    if outcome.timed_out:
        limit = config.timeout_for(ex.id)
        return TIMED_OUT, f"still running after {limit:g} s (an infinite loop?): stopped{_where(outcome)}", 0, total, 0
    if outcome.printed_bytes > config.max_output_kb * 1024:
        why = f"printed more than {config.max_output_kb} KiB (the output limit): remove debug prints"
        return ERROR, why, 0, total, 0
    try:
        payload = read_payload(outcome.result, total)
    except MalformedResult as error:
        why = f"the result channel was written to by something else, or cut: {error}"
        return ERROR, why if outcome.result else _why_no_result(outcome, config), 0, total, 0
    guard, results = payload["guard"] or {}, payload["cases"]
    status, message, passed, hidden_passed = ERROR, payload["fatal"], 0, 0
    if not payload["fatal"]:
        shown = verdict(ex, zip(cases[:visible], results[:visible], strict=False), expected=visible, hints=config.hints)
        status, message, passed = shown.status, shown.message, shown.cases_passed
        if total > visible:
            secret = verdict(ex, zip(cases[visible:], results[visible:], strict=False), expected=total - visible)
            hidden_passed = secret.cases_passed
            count = f"{hidden_passed} of {total - visible} hidden cases passed"
            if status != PASSED:
                message = f"{message} [{count}]"
            elif secret.status != PASSED:
                status = ERROR if secret.status == ERROR else FAILED
                message = (f"the {visible} cases you can run pass, but only {count}: the same checks on other "
                           "inputs (does the code depend on the sizes of the visible cases?)")  # fmt: skip
            passed += hidden_passed
    if status != PASSED and payload["package_error"] and payload["package_error"] not in message:
        message = f"{message} [the package itself failed to import: {payload['package_error']}]"
    if any(word in message for word in ("MemoryError", "can't allocate memory", "out of memory")):
        status, message = ERROR, f"ran out of memory (the limit is {config.memory_mb} MB): {message}"
    if guard.get("reference"):
        return REFERENCE, f"tried to use the reference answers ({guard['reference']}): {message}", 0, total, 0
    for kind in ("write", "process"):
        if guard.get(kind) and status != PASSED:
            return ERROR, f"{guard[kind]}: {message}", passed, total, hidden_passed
    return (status if status in STATUSES else ERROR), message, passed, total, hidden_passed


def _where(outcome: JobOutcome) -> str:
    """Where a stopped child was in the submission: " at masks.py line 5 (while importing masks.py)"."""
    stack = outcome.stack()
    if not stack:
        return ""
    file, line, function = stack[0]
    imports = outcome.hanging_imports()
    inside = f" in {function}()" if function != "<module>" else ""
    return f" at {file} line {line}{inside}" + (f" (while importing {imports[-1][0]})" if imports else "")


def _why_no_result(outcome: JobOutcome, config: GradingConfig) -> str:
    reason = sandbox.killed_reason(outcome.returncode, False, 0)
    if reason and "SIGXFSZ" in reason:
        return "wrote a file larger than the limit: stopped"
    if reason and "SIGKILL" in reason:
        return f"the process was killed (out of memory? the limit is {config.memory_mb} MB)"
    if reason:
        return f"the process crashed ({reason})"
    return (
        f"the process ended (exit status {outcome.returncode}) before the check finished: does the code call "
        "os._exit() or exit the interpreter?"
    )


def _site_packages() -> list[str]:
    import site

    return [p for p in site.getsitepackages() if os.path.isdir(p)]


def _hidden_course_packages(work: Path) -> list[sandbox.Visible]:
    """The instructor's package, where Python's installation (which every job sees) holds it (a
    non-editable install): shown to the jobs as an empty folder. Raises ValueError (one line)
    where it cannot be hidden."""
    package = course.package_dir()
    if not any(package.is_relative_to(path) for path in sandbox.python_paths()):
        return []  # an editable install or a checkout: the package lives outside the installation
    if any(package.is_relative_to(reserved) for reserved in sandbox.RESERVED):
        raise ValueError(
            f"the course is installed in {package}, which grading jobs would see and which cannot be hidden "
            "there: grade from a clone installed with `pip install -e .` in a virtual environment"
        )
    empty = work / "empty"
    empty.mkdir(mode=0o755, exist_ok=True)
    return [sandbox.Visible(empty, str(package))]


# ---------------------------------------------------------------- a long run: progress and resuming


def state_path(report_csv: Path) -> Path:
    """Where a run's state lives: next to the report, ``report.csv`` → ``report.progress.jsonl``."""
    return Path(report_csv).with_suffix(".progress.jsonl")


class Progress:
    """One line on stderr as each student is done (and at most every ``every_s`` seconds between):
    students done / total, exercises per second, an estimate of the time left."""

    def __init__(self, students: int, exercises: int, enabled: bool = True, every_s: float = 10.0) -> None:
        self.students, self.exercises, self.enabled, self.every_s = students, exercises, enabled, every_s
        self.students_done = self.exercises_done = self.said = 0
        self.start = self.last = time.monotonic()

    def advance(self, student_done: bool) -> None:
        self.exercises_done += 1
        self.students_done += student_done
        if student_done or time.monotonic() - self.last >= self.every_s:
            self._say()

    def finish(self) -> None:
        if self.said != self.exercises_done:
            self._say()

    def line(self) -> str:
        seconds = max(time.monotonic() - self.start, 1e-9)
        rate = self.exercises_done / seconds
        left = (self.exercises - self.exercises_done) / rate if rate else float("inf")
        return (f"grading: {self.students_done}/{self.students} students, {self.exercises_done}/{self.exercises} "
                f"exercises, {rate:.2f} exercises/s, about {_duration(left)} left")  # fmt: skip

    def _say(self) -> None:
        self.last, self.said = time.monotonic(), self.exercises_done
        if self.enabled:
            print(self.line(), file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "? min"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


class GradingState:
    """The results of the students already done, one JSON line each, next to the report: a run
    interrupted half way goes on from there (``--resume``) without grading them again.

    The first line names the run (its exercises and settings, ``jobs`` aside); a student is taken
    from the file only in a run of the same name and when the copy of their submission has the same
    fingerprint (a submission handed in again is graded again). Only the grader writes it."""

    VERSION = "transformer-course-grading-state-1"

    def __init__(self, path: Path, exercises: list[str], config: GradingConfig) -> None:
        self.path = Path(path)
        settings = {k: v for k, v in asdict(config).items() if k != "jobs"}
        if config.hidden_cases:  # the same file name with other cases is another run
            settings["hidden_cases"] = hashlib.sha256(Path(config.hidden_cases).read_bytes()).hexdigest()
        self.run = hashlib.sha256(json.dumps([exercises, settings], sort_keys=True).encode()).hexdigest()
        self.exercises = exercises

    def restore(
        self, reports: list[StudentReport], todo: list[tuple[int, Path]], resume: bool
    ) -> list[tuple[int, Path]]:
        """Fill in the students the state holds (with ``resume``); start the file afresh otherwise.
        Returns the students still to grade."""
        done = self._read() if resume else {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not done:
            write_atomically(self.path, json.dumps({"state": self.VERSION, "run": self.run}) + "\n")
        left = []
        for index, copy in todo:
            record = done.get((reports[index].student, fingerprint(copy)))
            if record is None:
                left.append((index, copy))
            else:
                reports[index].results = record
        if done:
            print(f"resumed {len(todo) - len(left)} student(s) from {self.path}", file=sys.stderr)
        return left

    def record(self, report: StudentReport, copy: Path) -> None:
        """Add a finished student (flushed to disk before the next one is counted)."""
        line = {"student": report.student, "fingerprint": fingerprint(copy),
                "results": {i: asdict(r) for i, r in report.results.items()}}  # fmt: skip
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def _read(self) -> dict[tuple[str, str], dict[str, ExerciseResult]]:
        """(student, fingerprint) → results, from a state of this run; {} from anything else. A
        line cut short by the interruption is left out (that student is graded again)."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
            if json.loads(lines[0]) != {"state": self.VERSION, "run": self.run}:
                return {}
        except (OSError, ValueError, IndexError):
            return {}
        done = {}
        for line in lines[1:]:
            try:
                entry = json.loads(line)
                results = {i: ExerciseResult(**entry["results"][i]) for i in self.exercises}
            except (ValueError, KeyError, TypeError):
                continue
            done[(entry["student"], entry["fingerprint"])] = results
        return done


# ---------------------------------------------------------------- what the reports may carry


class Scrubber:
    """Cuts a message to size and takes out every line of the course's solutions (the edition
    module's :func:`~.edition.solution_snippets`) that it carries."""

    REMOVED = "[…removed: course solution text…]"

    def __init__(self, snippets: Iterable[str]) -> None:
        self.snippets = sorted(set(snippets), key=len, reverse=True)

    @classmethod
    def for_course(cls) -> Scrubber:
        from .edition import solution_snippets

        root = course.find_course_root()
        return cls(solution_snippets(root) if root is not None else ())

    def __call__(self, text: str, limit: int = MAX_MESSAGE) -> str:
        lines = []
        for line in str(text).splitlines():
            flat = " ".join(line.split())
            for snippet in self.snippets:
                if snippet in flat:
                    flat = flat.replace(snippet, self.REMOVED)
            lines.append(flat if flat != " ".join(line.split()) else line)
        return cut("\n".join(lines), limit)


def _scrubbed(result: ExerciseResult, scrub: Callable[..., str]) -> ExerciseResult:
    result.message = scrub(result.message)
    result.output_head = scrub(result.output_head, HEAD_BYTES)
    return result


# ---------------------------------------------------------------- reports


REPORT_MODE = 0o644  # reports and feedback: the instructor's to write, anyone's on the machine to read


def write_atomically(path: Path, text: str) -> None:
    """Write ``path`` so that a reader sees the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                         delete=False, newline="")  # fmt: skip
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), REPORT_MODE)  # a temporary file is private (0600); a report is not
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula


def spreadsheet_safe(cell: object) -> object:
    """A text cell that a spreadsheet would take for a formula, prefixed with ``'`` (OWASP's advice
    against CSV injection); numbers and other text as they are. The csv module still quotes it."""
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS):
        return "'" + cell
    return cell


def write_csv(report: GradingReport, path: Path) -> None:
    cases = [f"{i} cases" for i in report.exercises]
    rows = [["student", *report.exercises, *report.written, "total", "max_points", "percent", *cases, "newest_file",
             "late", "fingerprint", "flags"]]  # fmt: skip
    for s in report.students:
        points = [_number_text(s.results[i].points) for i in report.exercises]
        points += [_written_text(s.written.get(q)) for q in report.written]  # "" until graded
        percent = round(100 * s.total / s.max_points, 1) if s.max_points else 0.0
        passed = [s.results[i].cases_text() for i in report.exercises]
        rows.append([s.student, *points, _number_text(s.total), _number_text(s.max_points), percent, *passed,
                     s.newest_text(), _late_text(s.late), s.fingerprint or "", "; ".join(s.flags)])  # fmt: skip
    _write_rows(rows, path)


def _write_rows(rows: list[list], path: Path) -> None:
    buffer = io.StringIO()
    csv.writer(buffer).writerows([spreadsheet_safe(cell) for cell in row] for row in rows)
    write_atomically(path, buffer.getvalue())


def _written_text(result: WrittenResult | None) -> float | int | str:
    return "" if result is None or result.points is None else _number_text(result.points)


def _late_text(late: bool | None) -> str:
    return "" if late is None else ("yes" if late else "no")


# ---------------------------------------------------------------- learning management systems

ROSTER_COLUMNS = ("folder", "name", "id", "sis_user_id", "sis_login_id", "section", "email")


def load_roster(path: Path) -> dict[str, dict[str, str]]:
    """A roster CSV: a header with ``folder`` (the submission's name) and any of ``name``, ``id``,
    ``sis_user_id``, ``sis_login_id``, ``section``, ``email``; folder → those fields ("" when
    absent). Raises FileNotFoundError or ValueError (one line)."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"--roster: {path} does not exist")
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
            header = rows[0].keys() if rows else []
    except (UnicodeDecodeError, csv.Error) as error:
        raise ValueError(f"--roster: {path} is not a readable CSV file ({error})") from None
    unknown = set(header) - set(ROSTER_COLUMNS)
    if "folder" not in header or unknown:
        raise ValueError(f"--roster: {path} needs a header with 'folder' and only columns among "
                         f"{', '.join(ROSTER_COLUMNS)}" + (f" (unknown: {', '.join(sorted(unknown))})" if unknown else ""))  # fmt: skip
    roster: dict[str, dict[str, str]] = {}
    for row in rows:
        folder = (row.get("folder") or "").strip()
        if folder in roster:
            raise ValueError(f"--roster: {path} names the folder {folder!r} twice")
        roster[folder] = {column: (row.get(column) or "").strip() for column in ROSTER_COLUMNS}
    return roster


def write_gradebook(report: GradingReport, path: Path, form: str, roster: dict[str, dict[str, str]]) -> list[str]:
    """The CSV a learning management system imports: one row per student of the roster with a
    submission, the assignment's points in a column named after it. ``form``: ``canvas`` (Student,
    ID, SIS User ID, SIS Login ID, Section, then a Points Possible row) or ``moodle`` (Full name, ID
    number, Email address, the points, Feedback: what the feedback file says in one line). Returns
    the students graded but not in the roster (left out of the file)."""
    assignment = report.config.assignment
    students = [s for s in report.students if s.student in roster]
    if form == "canvas":
        rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment],
                ["Points Possible", "", "", "", "", _number_text(_max_points(report))]]  # fmt: skip
        for s in students:
            who = roster[s.student]
            rows.append([who["name"] or s.student, who["id"], who["sis_user_id"], who["sis_login_id"], who["section"],
                         _number_text(s.total)])  # fmt: skip
    else:
        rows = [["Full name", "ID number", "Email address", assignment, "Feedback"]]
        for s in students:
            who = roster[s.student]
            rows.append([who["name"] or s.student, who["id"], who["email"], _number_text(s.total), _one_line(s)])
    _write_rows(rows, path)
    return [s.student for s in report.students if s.student not in roster]


def _max_points(report: GradingReport) -> float:
    return sum(report.config.points_for(i) for i in report.exercises) + sum(
        report.config.written_points_for(q) for q in report.written
    )


def _one_line(student: StudentReport) -> str:
    """The feedback in a gradebook cell: the exercises not passed, by id and status."""
    missed = [f"{i} {r.status}" for i, r in student.results.items() if r.status != PASSED]
    return "all exercises passed" if not missed else "not passed: " + "; ".join(missed)


# ---------------------------------------------------------------- a term's work: one student again


def read_report(path: Path, config: GradingConfig | None, what: str = "--only") -> GradingReport:
    """The report ``write_json`` wrote (for ``--only``: one student graded again, the others kept;
    for ``grade-written``, with ``config`` None: the settings it was graded with). Raises
    FileNotFoundError or ValueError (one line starting with ``what``)."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"{what}: there is no report to update ({path} does not exist)")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        students = [
            StudentReport(
                s["student"],
                s["package"],
                {i: ExerciseResult(**r) for i, r in s["results"].items()},
                s.get("newest_time"),
                s.get("late"),
                s.get("fingerprint"),
                s.get("flags", []),
                {q: WrittenResult(**w) for q, w in s.get("written", {}).items()},
            )
            for s in data["students"]
        ]
        if config is None:  # the settings the report was graded with
            config = GradingConfig(**data["settings"] | {"exercises": None})
        written = {q: w["question"] for q, w in data.get("written", {}).items()}
        return GradingReport(list(data["exercises"]), students, config, data["seconds"], data["sandbox"],
                             [(e["entry"], e["why"]) for e in data.get("skipped", [])], written)  # fmt: skip
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"{what}: {path} is not a report this course wrote ({type(error).__name__}: {error})"
        ) from None


def same_exercises(old: GradingReport, exercises: list[str]) -> None:
    """ValueError (one line) unless ``old`` grades ``exercises``."""
    if old.exercises != exercises:
        raise ValueError(f"--only: the report grades {', '.join(old.exercises)}, not {', '.join(exercises)}: "
                         "grade the same exercises")  # fmt: skip


def merged(old: GradingReport, new: GradingReport) -> GradingReport:
    """``old`` with the students of ``new`` put in (replacing those of the same name, in name order)."""
    same_exercises(old, new.exercises)
    students = {s.student: s for s in old.students} | {s.student: s for s in new.students}
    return GradingReport(new.exercises, [students[name] for name in sorted(students)], new.config, new.seconds,
                         new.sandbox, old.skipped, new.written or old.written)  # fmt: skip


_MARKDOWN_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*[]|#"})


def markdown_text(text: str) -> str:
    """``text`` shown as itself in Markdown and in the HTML it becomes: ``&``, ``<`` and ``>`` HTML
    escaped (quotes are left as they are: outside an attribute they are plain text, and ``O'Neil``
    stays readable in the file), and the characters that make links, code, emphasis, headings or
    table cells backslash-escaped; one line."""
    return html.escape(" ".join(str(text).split()), quote=False).translate(_MARKDOWN_SPECIAL)


def write_json(report: GradingReport, path: Path) -> None:
    data = {
        "exercises": {i: {"title": get_exercise(i).title, "points": report.config.points_for(i)} for i in report.exercises},
        "settings": asdict(report.config) | {"exercises": report.exercises},  # those graded, --exercises too
        "sandbox": report.sandbox,
        "seconds": report.seconds,
        "skipped": [{"entry": name, "why": why} for name, why in report.skipped],
        "written": {q: {"question": text, "points": report.config.written_points_for(q)}
                    for q, text in report.written.items()},
        "students": [
            {"student": s.student, "package": s.package, "total": s.total, "max_points": s.max_points,
             "newest_file": s.newest_text() or None, "newest_time": s.newest_file, "late": s.late,
             "fingerprint": s.fingerprint, "flags": s.flags,
             "results": {i: asdict(r) for i, r in s.results.items()},
             "written": {q: asdict(w) for q, w in s.written.items()}}
            for s in report.students
        ],
    }  # fmt: skip
    write_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def feedback_markdown(student: StudentReport, report: GradingReport) -> str:
    lines = [
        f"# Feedback for {markdown_text(student.student)}",
        "",
        f"**{_number_text(student.total)} / {_number_text(student.max_points)} points.** "
        f"Graded: {markdown_text(student.package or 'no package found')}"
        + (f", newest file {student.newest_text()}" if student.newest_file is not None else "")
        + (" (after the due time: late)" if student.late else "")
        + ".",
        "",
        "| exercise | status | cases passed | points | what the check says |",
        "| --- | --- | --- | --- | --- |",
    ]
    for exercise_id, r in student.results.items():
        title = get_exercise(exercise_id).title
        status = f"{SYMBOLS.get(r.status, '')} {r.status}"
        lines.append(
            f"| {exercise_id} {title} | {status} | {r.feedback_cases()} | {_number_text(r.points)} / "
            f"{_number_text(r.max_points)} "
            f"| {markdown_text(r.message)} |"
        )
    if student.written:
        lines += ["", "## Written answers", "", "| question | points | comment |", "| --- | --- | --- |"]
        for question_id, w in student.written.items():
            points = (
                "not graded yet" if w.points is None else f"{_number_text(w.points)} / {_number_text(w.max_points)}"
            )
            comment = w.comment or ("" if w.answered else "not answered")
            lines.append(f"| {question_id} | {points} | {markdown_text(comment)} |")
    noisy = [(i, r) for i, r in student.results.items() if r.output_bytes]
    if noisy:
        lines += ["", "## Output printed during the checks", ""]
        for exercise_id, r in noisy:
            head = r.output_head[:500].rstrip().replace("```", "'''")
            lines += [f"{exercise_id}: {r.output_bytes} bytes; it began with:", "", "```text", head, "```", ""]
    lines += [
        "",
        "Run the same checks yourself: `python -m transformer_course check` (or `pytest -m ex03_1` for one).",
        "",
    ]
    return "\n".join(lines)


def write_feedback(report: GradingReport, folder: Path, only: str | None = None) -> list[Path]:
    """One file per student (``only``: that student's), in ``folder/<assignment>/`` when the
    assignment is named, else in ``folder``."""
    written = []
    if report.config.assignment:
        folder = folder / report.config.assignment
    for student in report.students:
        if only is not None and student.student != only:
            continue
        path = folder / f"{student.student}.md"
        write_atomically(path, feedback_markdown(student, report))
        written.append(path)
    return written


def summary_table(report: GradingReport) -> str:
    """The terminal summary: one row per student, one column per exercise (status symbols)."""
    names = [_printable(s.student) for s in report.students]
    width = max([len(name) for name in names] + [7])
    header = f"{'student':{width}}  " + " ".join(f"{i:>7}" for i in report.exercises) + "   points"
    rows = [header]
    for name, s in zip(names, report.students, strict=True):
        cells = " ".join(f"{_short_status(s.results[i].status):>7}" for i in report.exercises)
        rows.append(f"{name:{width}}  {cells}   {_number_text(s.total)}/{_number_text(s.max_points)}")
    return "\n".join(rows)


def skipped_lines(report: GradingReport) -> list[str]:
    """For the terminal: every entry of the submissions folder that was not graded, and why."""
    return [f"skipped {_printable(name)}: {why}" for name, why in report.skipped]


def _printable(name: str) -> str:
    """A folder name for the terminal: control characters (escape sequences) shown as '?'."""
    return "".join(c if c.isprintable() else "?" for c in name)


def _short_status(status: str) -> str:
    return {"passed": "ok", "failed": "FAIL", "not implemented": "todo", "error": "ERROR",
            "timed out": "TIMEOUT", "reference import": "REF"}.get(status, status)  # fmt: skip


def _number_text(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 2)
