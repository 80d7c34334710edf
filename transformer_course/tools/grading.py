"""Grade a class: ``python -m transformer_course grade SUBMISSIONS_DIR --out report.csv``.

Each sub-folder of ``SUBMISSIONS_DIR`` is one student's submission: their edited student edition,
or just their ``transformer_course/`` package folder (found up to three levels down). How a grade
is reached, and what a submission can and cannot do about it:

1. **A private copy.** The package is copied into a folder of the grader's (regular files and
   folders only, within size caps; the course's ``tools/`` and caches left out). A symbolic link,
   a device or a file outside the student's own folder refuses the submission, named in the report.
2. **One sandbox per (student, exercise)** (:mod:`.sandbox`: bubblewrap, else util-linux
   ``unshare``): the job sees its copy, the probes of that exercise and the Python installation,
   nothing else of the machine (no solutions, no ``.git``, no classmates, no other copies of the
   course, not the instructor's package even where it is installed in site-packages); read-only
   except a small private ``/tmp``; no network; limits on time, memory, processes and file size;
   every process it started is killed when it ends.
3. **The verdict outside.** The job only computes: it runs the exercise's probes on the student's
   code and sends plain data back through its own result channel (:mod:`.probe.wire`). This
   process, which never imports the submission, judges that data with the course's references
   (the very judges ``check`` uses). A malformed or forged result costs that exercise only.
4. **The report at the end**, written atomically (CSV, JSON, a feedback file per student), its
   messages and output excerpts capped and scrubbed of solution text.

Without a sandbox (macOS, no user namespaces) the same jobs run with the limits that ``setrlimit``
gives and an audit hook in the child refusing what the sandbox would hide; :func:`grade` says what
that does not protect, and ``require_sandbox=True`` (``--require-sandbox``) refuses to run.

Points per exercise, time and memory limits live in ``grading.toml`` at the root of the course.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import math
import os
import queue
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from . import course, sandbox
from .checks.case import Case
from .checks.registry import Exercise
from .checks.runner import build_cases, get_exercise, verdict
from .checks.standins import job_source
from .checks.status import ERROR, PASSED, REFERENCE, STATUSES, SYMBOLS, TIMED_OUT
from .course import PACKAGE
from .probe import child
from .probe.wire import MAGIC, MAX_RESULT_BYTES, MalformedResult, cut, read_payload

MAX_MESSAGE = 2000  # characters of a message in the report
HEAD_BYTES = 4096  # bytes of a job's printed output kept for the feedback
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

    def points_for(self, exercise_id: str) -> float:
        return float(self.points.get(exercise_id, self.default_points))

    def timeout_for(self, exercise_id: str) -> float:
        return float(self.timeouts.get(exercise_id, self.timeout_s))

    def validate(self) -> GradingConfig:
        """Raise ValueError (one line) for a value no grading can use; return self."""
        numbers = {"default_points": self.default_points, "timeout_s": self.timeout_s, **self.points,
                   **{f"timeout_s.{k}": v for k, v in self.timeouts.items()}}  # fmt: skip
        for name, value in numbers.items():
            if not math.isfinite(value) or value < 0 or (name.startswith("timeout_s") and value == 0):
                raise ValueError(f"grading setting {name} = {value} must be a finite number above 0")
        limits = {"jobs": (self.jobs, 1), "memory_mb": (self.memory_mb, 256), "max_output_kb": (self.max_output_kb, 1),
                  "max_submission_mb": (self.max_submission_mb, 1), "max_files": (self.max_files, 1)}  # fmt: skip
        for name, (value, lowest) in limits.items():
            if value < lowest:
                raise ValueError(f"grading setting {name} = {value} must be at least {lowest}")
        for exercise_id in [*self.points, *self.timeouts, *(self.exercises or [])]:
            get_exercise(exercise_id)  # a typo is an error, not a silent default
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
    unknown = set(data) - {"grading", "points", "timeout_s"}
    if unknown:
        raise ValueError(f"{path}: unknown section(s) {sorted(unknown)}; expected [grading], [points], [timeout_s]")
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
                           "max_files", "jobs"}:  # fmt: skip
                raise ValueError(f"unknown setting [grading] {key}")
            kind = type(getattr(config, key))
            setattr(config, key, _number(value, key) if kind is float else _integer(value, key))
        return config.validate()
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def _integer(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return value


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


class Refused(Exception):
    """A submission that is not graded at all; the message names what was wrong."""


def copy_package(student: Path, package: Path, dest: Path, config: GradingConfig) -> None:
    """Copy ``package`` (inside the folder ``student``) to ``dest``, readable by every user (a job
    may run as another uid). Only regular files and folders, within the size caps; the package's
    ``tools/`` (the course's machinery, which no room imports) and caches are left out. Raises
    :class:`Refused` naming a link, a special file, a path leading outside ``student`` or a cap."""
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
    sandbox: str = ""  # what protected the jobs (the sandbox's one-line description)


def list_submissions(submissions_dir: Path) -> list[Path]:
    if not submissions_dir.is_dir():
        raise FileNotFoundError(f"{submissions_dir} is not a folder of submissions")
    found = sorted(p for p in submissions_dir.iterdir() if not p.name.startswith((".", "_")))
    found = [p for p in found if p.is_dir() or p.is_symlink()]  # a link is listed, to be refused by name
    if not found:
        raise FileNotFoundError(f"{submissions_dir} holds no submission folders (one sub-folder per student)")
    return found


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
) -> GradingReport:
    """Grade every sub-folder of ``submissions_dir`` on ``exercises`` (default: the config's)."""
    from tqdm.auto import tqdm

    from .checks.registry import EXERCISES
    from .checks.runner import _load_all

    start = time.perf_counter()
    config = (config or GradingConfig()).validate()
    _load_all()
    ids = list(exercises or config.exercises or sorted(EXERCISES))
    wanted = [get_exercise(i) for i in ids]
    folders = list_submissions(Path(submissions_dir))
    if importlib.util.find_spec("jupytext") is None:
        raise ValueError(
            "grade scrubs the worked solutions out of the feedback and needs jupytext: pip install jupytext"
        )
    support = sandbox_support(mechanism, require_sandbox)
    background = ThreadPoolExecutor(max_workers=1)
    scrubber = background.submit(Scrubber.for_course)  # reading the solutions takes seconds: meanwhile, grade
    try:
        with tempfile.TemporaryDirectory(prefix="transformer-course-grading-") as temporary:
            jobs = _Jobs(Path(temporary), support, config, Path(submissions_dir))
            exercise_dirs = {ex.id: jobs.prepare(ex) for ex in wanted}
            reports, todo = _copy_all(folders, Path(submissions_dir), Path(temporary) / "copies", wanted, config)
            bar = tqdm(total=len(todo), desc="grading", unit="exercise", disable=not progress)
            for index, ex, outcome in jobs.run(todo, exercise_dirs):
                reports[index].results[ex.id] = outcome
                bar.update(1)
            bar.close()
        scrub = scrubber.result()
    finally:
        background.shutdown(wait=False, cancel_futures=True)
    for report in reports:
        report.results = {i: _scrubbed(report.results[i], scrub) for i in ids}
    return GradingReport(ids, reports, config, round(time.perf_counter() - start, 2), support.description)


def _copy_all(folders: list[Path], submissions_dir: Path, copies: Path, wanted: list[Exercise],
              config: GradingConfig) -> tuple[list[StudentReport], list[tuple[int, Exercise, Path]]]:  # fmt: skip
    """Copy every submission; return the reports (refused ones already filled in) and the jobs to run."""
    reports, todo = [], []
    for index, folder in enumerate(folders):
        reports.append(StudentReport(folder.name, None, {}))
        copy = copies / str(index)
        try:
            reports[-1].package = _copy_submission(folder, submissions_dir, copy, config)
        except Refused as refused:
            message = f"not graded: {refused}"
            reports[-1].results = {
                ex.id: ExerciseResult(ERROR, message, 0.0, config.points_for(ex.id)) for ex in wanted
            }
            continue
        todo += [(index, ex, copy) for ex in wanted]
    return reports, todo


def _copy_submission(folder: Path, submissions_dir: Path, copy: Path, config: GradingConfig) -> str:
    """Copy one submission's package to ``copy``; return the package's path as the report shows it."""
    if folder.is_symlink():
        raise Refused(f"{folder.name} is a symbolic link (to {os.readlink(folder)}); hand in a folder")
    package = find_package(folder)
    if package is None:
        raise Refused(f"no {PACKAGE}/ package found in the submission {folder.name}/")
    copy.mkdir(parents=True, mode=0o755)
    copy.chmod(0o755)
    copy_package(folder, package, copy / PACKAGE, config)
    return str(package.relative_to(submissions_dir))


class _Jobs:
    """The grading jobs of one run: their folders, their sandboxes, and what came back."""

    def __init__(self, work: Path, support: sandbox.SandboxSupport, config: GradingConfig, submissions: Path):
        self.work, self.support, self.config, self.submissions = work, support, config, submissions
        self.cases: dict[str, list[Case]] = {}
        self.hidden = _hidden_course_packages(work) if support.isolated else []

    def prepare(self, ex: Exercise) -> Path:
        """The exercise's read-only folder: the probe package, its stand-ins, its cases, job.json."""
        from .checks.registry import EXERCISES

        folder = self.work / "jobs" / ex.id
        probe_dir = Path(child.__file__).parent
        shutil.copytree(probe_dir, folder / child.NAME, ignore=lambda _, names: [n for n in names
                        if not n.endswith(".py")])  # fmt: skip
        (folder / "standins.py").write_text(job_source(ex.needs), encoding="utf-8")
        self.cases[ex.id] = build_cases(ex)
        torch.save([case.probe for case in self.cases[ex.id]], folder / "cases.pt")
        guard = None if self.support.isolated else self._guard()
        targets = {i: EXERCISES[i].target for i in (ex.id, *ex.needs)}  # the rooms the job must look at, no more
        job = {"exercise": ex.id, "target": ex.target, "package": PACKAGE, "guard": guard, "targets": targets,
               "site_packages": _site_packages()}  # fmt: skip
        (folder / "job.json").write_text(json.dumps(job), encoding="utf-8")
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        return folder

    def _guard(self) -> dict:
        """Without a sandbox: what the child's audit hook refuses to read (the course, every
        submission, the other jobs) and what it still allows (Python's own folders)."""
        root = course.find_course_root() or course.package_dir()
        forbidden = {str(root), str(course.package_dir()), str(self.submissions.resolve()), str(self.work)}
        return {"forbidden": sorted(forbidden), "allowed": sandbox.python_paths()}

    def run(self, todo: list, exercise_dirs: dict[str, Path]) -> Iterable[tuple[int, Exercise, ExerciseResult]]:
        """Run the jobs ``config.jobs`` at a time; yield each one's result, judged, as it finishes."""
        uids: queue.Queue[int] = queue.Queue()
        for slot in range(self.config.jobs):  # as root, jobs at the same time get different uids
            uids.put(sandbox.NOBODY - slot)

        def one(index: int, ex: Exercise, copy: Path) -> tuple[int, Exercise, sandbox.Result | Exception]:
            uid = uids.get()
            try:
                return index, ex, self._sandboxed(exercise_dirs[ex.id], copy, ex, uid)
            except (sandbox.SandboxError, OSError, ValueError) as error:
                return index, ex, error
            finally:
                uids.put(uid)

        pool = ThreadPoolExecutor(max_workers=self.config.jobs)
        try:
            futures = [pool.submit(one, *item) for item in todo]
            for future in futures:
                index, ex, result = future.result()
                yield index, ex, self._judged(ex, result)
        finally:  # interrupted (Ctrl-C): start nothing more; what runs ends within its time limit
            pool.shutdown(wait=True, cancel_futures=True)

    def _sandboxed(self, job_dir: Path, copy: Path, ex: Exercise, uid: int) -> sandbox.Result:
        inside = self.support.isolated  # without a sandbox the folders are where they are
        course_at, submission_at = ("/course", "/submission") if inside else (str(job_dir), str(copy))
        argv = [sys.executable, "-I", "-S", "-c", child.BOOT, course_at, submission_at]
        views = [sandbox.Visible(job_dir, course_at), sandbox.Visible(copy, submission_at), *self.hidden]
        threads = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
        return sandbox.run(
            argv, visible=views, env=threads, timeout_s=self.config.timeout_for(ex.id),
            memory_mb=self.config.memory_mb, max_processes=64, max_file_mb=2 * MAX_RESULT_BYTES // 2**20,
            tmp_mb=64, output_limit_bytes=len(MAGIC) + 8 + MAX_RESULT_BYTES, mechanism=self.support.mechanism,
            uid_if_root=uid,
        )  # fmt: skip

    def _judged(self, ex: Exercise, result: sandbox.Result | Exception) -> ExerciseResult:
        points = self.config.points_for(ex.id)
        if isinstance(result, Exception):
            return ExerciseResult(ERROR, f"the grading job could not run: {result}", 0.0, points)
        status, message = _verdict(ex, self.cases[ex.id], result, self.config)
        printed = result.stderr
        return ExerciseResult(status, message, points if status == PASSED else 0.0, points, round(result.seconds, 3),
                              len(printed), printed[:HEAD_BYTES].decode("utf-8", "replace"))  # fmt: skip


def _verdict(ex: Exercise, cases: list[Case], result: sandbox.Result, config: GradingConfig) -> tuple[str, str]:
    """The status and message of one job, from how it ended and what it sent back."""
    limit = config.timeout_for(ex.id)
    if result.timed_out:
        return TIMED_OUT, f"still running after {limit:g} s (an infinite loop?): stopped"
    if len(result.stderr) > config.max_output_kb * 1024:
        return ERROR, f"printed more than {config.max_output_kb} KiB (the output limit): remove debug prints"
    try:
        payload = read_payload(result.stdout, len(cases))
    except MalformedResult as error:
        if not result.stdout:
            return ERROR, _why_no_result(result, config)
        return ERROR, f"the result channel was written to by something else, or cut: {error}"
    guard = payload["guard"] or {}
    if payload["fatal"]:
        status, message = ERROR, payload["fatal"]
    else:
        checked = verdict(ex, zip(cases, payload["cases"], strict=False), expected=len(cases))
        status, message = checked.status, checked.message
    if status != PASSED and payload["package_error"] and payload["package_error"] not in message:
        message = f"{message} [the package itself failed to import: {payload['package_error']}]"
    if any(word in message for word in ("MemoryError", "can't allocate memory", "out of memory")):
        status, message = ERROR, f"ran out of memory (the limit is {config.memory_mb} MB): {message}"
    if guard.get("reference"):
        return REFERENCE, f"tried to use the reference answers ({guard['reference']}): {message}"
    for kind in ("write", "process"):
        if guard.get(kind) and status != PASSED:
            return ERROR, f"{guard[kind]}: {message}"
    return (status if status in STATUSES else ERROR), message


def _why_no_result(result: sandbox.Result, config: GradingConfig) -> str:
    if result.killed_reason and "SIGXFSZ" in result.killed_reason:
        return "wrote a file larger than the limit: stopped"
    if result.killed_reason and "SIGKILL" in result.killed_reason:
        return f"the process was killed (out of memory? the limit is {config.memory_mb} MB)"
    if result.killed_reason:
        return f"the process crashed ({result.killed_reason})"
    return (
        f"the process ended (exit status {result.returncode}) before the check finished: does the code call "
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


def write_atomically(path: Path, text: str) -> None:
    """Write ``path`` so that a reader sees the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                         delete=False, newline="")  # fmt: skip
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def write_csv(report: GradingReport, path: Path) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["student", *report.exercises, "total", "max_points", "percent"])
    for s in report.students:
        points = [_number_text(s.results[i].points) for i in report.exercises]
        percent = round(100 * s.total / s.max_points, 1) if s.max_points else 0.0
        writer.writerow([s.student, *points, _number_text(s.total), _number_text(s.max_points), percent])
    write_atomically(path, buffer.getvalue())


def write_json(report: GradingReport, path: Path) -> None:
    data = {
        "exercises": {i: {"title": get_exercise(i).title, "points": report.config.points_for(i)} for i in report.exercises},
        "settings": asdict(report.config),
        "sandbox": report.sandbox,
        "seconds": report.seconds,
        "students": [
            {"student": s.student, "package": s.package, "total": s.total, "max_points": s.max_points,
             "results": {i: asdict(r) for i, r in s.results.items()}}
            for s in report.students
        ],
    }  # fmt: skip
    write_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def feedback_markdown(student: StudentReport, report: GradingReport) -> str:
    lines = [
        f"# Feedback for {student.student}",
        "",
        f"**{_number_text(student.total)} / {_number_text(student.max_points)} points.** "
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
            f"| {exercise_id} {title} | {status} | {_number_text(r.points)} / {_number_text(r.max_points)} "
            f"| {message} |"
        )
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


def write_feedback(report: GradingReport, folder: Path) -> list[Path]:
    written = []
    for student in report.students:
        path = folder / f"{student.student}.md"
        write_atomically(path, feedback_markdown(student, report))
        written.append(path)
    return written


def summary_table(report: GradingReport) -> str:
    """The terminal summary: one row per student, one column per exercise (status symbols)."""
    width = max([len(s.student) for s in report.students] + [7])
    header = f"{'student':{width}}  " + " ".join(f"{i:>7}" for i in report.exercises) + "   points"
    rows = [header]
    for s in report.students:
        cells = " ".join(f"{_short_status(s.results[i].status):>7}" for i in report.exercises)
        rows.append(f"{s.student:{width}}  {cells}   {_number_text(s.total)}/{_number_text(s.max_points)}")
    return "\n".join(rows)


def _short_status(status: str) -> str:
    return {"passed": "ok", "failed": "FAIL", "not implemented": "todo", "error": "ERROR",
            "timed out": "TIMEOUT", "reference import": "REF"}.get(status, status)  # fmt: skip


def _number_text(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 2)
