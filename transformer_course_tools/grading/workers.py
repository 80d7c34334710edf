"""The jobs: one warm worker per student in its sandbox, a fresh child per exercise, the verdict outside.

The grader puts one exercise's files in the worker's inbox and asks with a fresh nonce; the answer
(how the child ended, what it sent back) is taken only with that nonce, and judged here with the
course's own checks (:func:`verdict`), never by the student's code.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import re
import secrets
import select
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import torch

from transformer_course_tools import course
from transformer_course_tools.course import PACKAGE
from transformer_course_tools.exercises.checks.case import Case
from transformer_course_tools.exercises.checks.registry import Exercise, get_exercise
from transformer_course_tools.exercises.checks.runner import build_cases, verdict
from transformer_course_tools.exercises.checks.standins import job_source
from transformer_course_tools.exercises.checks.status import ERROR, FAILED, PASSED, REFERENCE, STATUSES, TIMED_OUT
from transformer_course_tools.exercises.probe import child, worker
from transformer_course_tools.exercises.probe.wire import MAGIC, MAX_RESULT_BYTES, MalformedResult, read_payload
from transformer_course_tools.exercises.probe.worker import HEAD_BYTES, WHERE_BYTES

from . import sandbox
from .collect import readable
from .config import GradingConfig, load_hidden_cases
from .results import ExerciseResult, StudentReport


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


class Worker:
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


class Jobs:
    """The grading of one run: the exercises' files, one warm worker per student, what came back."""

    def __init__(self, work: Path, support: sandbox.SandboxSupport, config: GradingConfig, submissions: Path,
                 wanted: list[Exercise]) -> None:  # fmt: skip
        self.work, self.support, self.config, self.submissions = work, support, config, submissions
        self.wanted = wanted
        self.hidden = hidden_course_packages(work) if support.isolated else []
        self.probe_dir = work / "probe"  # the probe package, which every worker imports
        probe = Path(child.__file__).parent
        shutil.copytree(probe, self.probe_dir / child.NAME, ignore=lambda _, names: [n for n in names
                        if not n.endswith(".py")])  # fmt: skip
        readable(self.probe_dir)
        self.cases: dict[str, list[Case]] = {}  # the visible cases, then the hidden ones
        self.visible: dict[str, int] = {}  # how many of them are visible
        self.extra = load_hidden_cases(Path(config.hidden_cases)) if config.hidden_cases else {}
        self.verdicts: dict[tuple, tuple] = {}  # judged outcomes (see judge_outcome); main thread only
        # Built in the background, in the order the workers ask for them, while the first workers start.
        self.preparing = ThreadPoolExecutor(max_workers=1)
        self.exercise_dirs = {ex.id: self.preparing.submit(self._prepare, ex) for ex in wanted}

    def _prepare(self, ex: Exercise) -> Path:
        """The exercise's files: its stand-ins, its cases, job.json (never shown to a job but its own)."""
        folder = self.work / "jobs" / ex.id
        folder.mkdir(parents=True)
        (folder / "standins.py").write_text(job_source(ex.needs), encoding="utf-8")
        self._draw(ex)
        torch.save([case.probe for case in self.cases[ex.id]], folder / "cases.pt")
        targets = {i: get_exercise(i).target for i in (ex.id, *ex.needs)}  # the rooms the job must look at, no more
        job = {"exercise": ex.id, "target": ex.target, "targets": targets}
        (folder / "job.json").write_text(json.dumps(job), encoding="utf-8")
        readable(folder)
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
        forbidden = {str(root), str(course.package_dir()), str(course.tools_dir()), str(self.submissions.resolve()),
                     str(self.work)}  # fmt: skip
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

    def _start_worker(self, folder: Path, copy: Path, uid: int) -> Worker:
        inside = self.support.isolated  # without a sandbox the folders are where they are
        course_at, submission_at, job_at = ("/course", "/submission", "/job") if inside else (
            str(self.probe_dir), str(copy), str(folder))  # fmt: skip
        if not folder.exists():
            (folder / "inbox").mkdir(parents=True)
            guard = None if inside else self._guard([course_at, job_at])
            settings = {"package": PACKAGE, "site_packages": _site_packages(), "guard": guard, "isolated": inside,
                        "max_result_bytes": RESULT_LIMIT}  # fmt: skip
            (folder / "worker.json").write_text(json.dumps(settings), encoding="utf-8")
            readable(folder)
        argv = [sys.executable, "-I", "-S", "-c", child.BOOT, course_at, submission_at, job_at]
        views = [sandbox.Visible(self.probe_dir, course_at), sandbox.Visible(copy, submission_at),
                 sandbox.Visible(folder, job_at), *self.hidden]  # fmt: skip
        threads = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
        session = sandbox.start(
            argv, visible=views, env=threads, memory_mb=self.config.memory_mb, max_processes=64,
            max_file_mb=2 * MAX_RESULT_BYTES // 2**20, tmp_mb=64, output_limit_bytes=64 * 1024,
            mechanism=self.support.mechanism, uid_if_root=uid,
        )  # fmt: skip
        return Worker(session)

    def _exercise(self, worker_: Worker, inbox: Path, ex: Exercise, hanging: dict) -> JobOutcome:
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
        """:func:`judge_outcome`, reached once per distinct outcome: the same data judged again gets the
        same verdict (every correct copy of a deterministic answer sends the very same bytes)."""
        over = outcome.printed_bytes > self.config.max_output_kb * 1024
        key = (ex.id, outcome.timed_out, outcome.returncode, over, hashlib.sha256(outcome.result).digest(),
               outcome.stopped_at)  # fmt: skip
        if key not in self.verdicts:
            self.verdicts[key] = judge_outcome(ex, self.cases[ex.id], self.visible[ex.id], outcome, self.config)
        return self.verdicts[key]


def judge_outcome(ex: Exercise, cases: list[Case], visible: int, outcome: JobOutcome,
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


def hidden_course_packages(work: Path) -> list[sandbox.Visible]:
    """The instructor's two packages (the complete rooms, and the course's side with its checks'
    references and stand-ins), where Python's installation (which every job sees) holds them (a
    non-editable install): shown to the jobs as empty folders. Raises ValueError (one line) where
    they cannot be hidden."""
    hidden = []
    for package in (course.package_dir(), course.tools_dir()):
        if not any(package.is_relative_to(path) for path in sandbox.python_paths()):
            continue  # an editable install or a checkout: the package lives outside the installation
        if any(package.is_relative_to(reserved) for reserved in sandbox.RESERVED):
            raise ValueError(
                f"the course is installed in {package}, which grading jobs would see and which cannot be hidden "
                "there: grade from a clone installed with `pip install -e .` in a virtual environment"
            )
        empty = work / "empty"
        empty.mkdir(mode=0o755, exist_ok=True)
        hidden.append(sandbox.Visible(empty, str(package)))
    return hidden
