"""A student's warm grading worker: one Python per student, one fresh child per exercise.

The grader (``transformer_course_tools/grading.pyworkers.py``) starts it inside the student's sandbox as::

    python -I -S -c BOOT COURSE SUBMISSION JOB

``COURSE`` holds this package (as ``_course_probe``); ``JOB`` holds ``worker.json`` (the package's
name, where Python's packages are, the guard when there is no sandbox) and ``inbox/``, where the
grader puts the files of one exercise at a time. The worker imports PyTorch and the probes once,
never the student's code, and makes itself impossible to trace or to read through ``/proc``
(``PR_SET_DUMPABLE`` 0) and the reaper of every orphan (``PR_SET_CHILD_SUBREAPER``). Then, for
each request, it forks a child from that clean state (:func:`.child.run_job`), with fresh
descriptors for its result and for what it prints, and nothing else of the worker's; it stops the
child at the exercise's time limit, kills every process the child left behind, empties ``/tmp``,
and answers.

The protocol, on the worker's stdin and stdout (the child holds neither):

* the worker says it is ready: ``{"ready": true}`` + newline;
* a request: ``{"nonce": "<hex>", "timeout_s": 60.0}`` + newline;
* the answer: a JSON header line ``{"nonce", "returncode", "timed_out", "seconds", "result_bytes",
  "printed_bytes", "head_bytes", "where_bytes"}``, then ``result_bytes`` bytes (the child's frame),
  ``head_bytes`` bytes (the start of what it printed) and ``where_bytes`` bytes (where a child that
  ran out of time was: its Python stack, as :mod:`faulthandler` writes it, before it was killed).

The grader accepts an answer only with the nonce it sent for that exercise, and judges the frame
itself (:mod:`.wire`): a child can spoil its own exercise, never a later one.
"""

from __future__ import annotations

import ctypes
import faulthandler
import importlib
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time

READY = b'{"ready": true}\n'
HEAD_BYTES = 4096  # bytes of what a child printed that come back with its answer
WHERE_BYTES = 4096  # bytes of the stack of a child stopped at its time limit
WHERE_SIGNAL = signal.SIGUSR1  # asks a child that ran out of time where it is, before it is killed
_PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER = 4, 36
# Parts of PyTorch that its modules import on first use (optimizers, some nn.Module methods): about a
# second per child otherwise. The course's own code only; the student's is never imported here.
WARM_MODULES = ("torch._dynamo", "torch.optim", "torch.optim.lr_scheduler")


def main(argv: list[str]) -> None:
    """Serve requests until the grader closes stdin; never returns."""
    course, submission, job = argv
    answers = os.dup(1)  # the answer channel, which no child keeps
    os.dup2(2, 1)  # anything the worker itself prints goes to stderr
    with open(os.path.join(job, "worker.json"), encoding="utf-8") as handle:
        settings = json.load(handle)
    sys.path.insert(1, submission)
    sys.path += settings["site_packages"]  # after the standard library, as site would put them
    sys.dont_write_bytecode = True
    import torch

    from .child import run_job

    torch.set_num_threads(1)  # before any fork: no thread pool a child would inherit half-made
    for name in WARM_MODULES:  # PyTorch's own lazy imports, done once here rather than in every child
        importlib.import_module(name)
    _harden()
    _write_all(answers, READY)
    requests = os.fdopen(0, "rb", buffering=0)
    while line := requests.readline(4096):
        request = json.loads(line)
        header, result, head = _serve(request, os.path.join(job, "inbox"), submission, settings, run_job)
        _write_all(answers, json.dumps(header).encode() + b"\n" + result + head)
    os._exit(0)


def _harden() -> None:
    """No process of this uid may trace the worker or open its memory or descriptors (/proc/PID/mem,
    /proc/PID/fd); orphans of a child become the worker's, so that it reaps (and counts) them."""
    if sys.platform != "linux":
        return  # no prctl (macOS): there is no sandbox there either, only the audit hook (see the README)
    libc = ctypes.CDLL(None, use_errno=True)
    for option in (_PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER):
        if libc.prctl(option, 0 if option == _PR_SET_DUMPABLE else 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def _serve(request: dict, inbox: str, submission: str, settings: dict, run_job) -> tuple:  # noqa: ANN001
    """Run one exercise in a fresh child; return (header, result bytes, head of the printed bytes)."""
    result_fd, printed_fd, where_fd = _private_file("result"), _private_file("printed"), _private_file("where")
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: only its own three descriptors, then the exercise
        try:
            _only_own_descriptors(result_fd, printed_fd, where_fd)
            faulthandler.register(WHERE_SIGNAL, file=4, all_threads=False)  # its stack, when it runs out of time
            run_job(inbox, submission, settings["package"], settings["guard"], 3)
        finally:
            os._exit(70)  # run_job ends with os._exit; this is reached only if the course's code failed
    code, timed_out = _wait(pid, float(request["timeout_s"]), where_fd)
    seconds = time.monotonic() - start
    _end_everything_but_me(pid, settings["isolated"])
    _empty(os.environ.get("TMPDIR", "/tmp"))
    result = _read(result_fd, settings["max_result_bytes"])  # a longer frame is cut: malformed, this exercise only
    printed = os.fstat(printed_fd).st_size
    head = _read(printed_fd, HEAD_BYTES)
    where = _read(where_fd, WHERE_BYTES) if timed_out else b""
    for fd in (result_fd, printed_fd, where_fd):
        os.close(fd)
    header = {"nonce": request["nonce"], "returncode": code, "timed_out": timed_out, "seconds": round(seconds, 3),
              "result_bytes": len(result), "printed_bytes": printed, "head_bytes": len(head),
              "where_bytes": len(where)}  # fmt: skip
    return header, result, head + where


def _only_own_descriptors(result_fd: int, printed_fd: int, where_fd: int) -> None:
    """In the child: stdin empty, stdout and stderr into ``printed_fd``, the result at descriptor 3,
    where it is when it runs out of time at 4, every other descriptor (the worker's request and
    answer channels) closed."""
    os.setpgid(0, 0)  # its own process group, killed as one where there is no sandbox
    os.dup2(printed_fd, 1)
    os.dup2(printed_fd, 2)
    os.dup2(result_fd, 3)
    os.dup2(where_fd, 4)
    os.set_inheritable(3, False)
    os.set_inheritable(4, False)
    os.closerange(5, os.sysconf("SC_OPEN_MAX"))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def _private_file(name: str) -> int:
    """A file with no name, for one child: in memory (Linux), else an unlinked temporary file."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create(name)
    with tempfile.TemporaryFile() as file:
        return os.dup(file.fileno())


def _wait(pid: int, timeout_s: float, where_fd: int) -> tuple[int, bool]:
    """Wait for the child until ``timeout_s``; kill it then, once it has written where it is to
    ``where_fd``. Return its exit status (128 + N for a signal N, as a shell says it) and whether it
    ran out of time."""
    timed_out = not _exits_within(pid, timeout_s)
    if timed_out:
        try:
            os.kill(pid, WHERE_SIGNAL)  # its stack, written by faulthandler's handler when it next runs
            _stack_written(pid, where_fd)
        except ProcessLookupError:
            pass
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return (code if code >= 0 else 128 - code), timed_out


def _stack_written(pid: int, where_fd: int, limit_s: float = 3.0) -> None:
    """Until the stopped child's stack has arrived whole in ``where_fd`` (its size the same for
    50 ms), or it has exited, or ``limit_s``: on a loaded machine the child may wait a while for a
    processor before its handler runs (a fixed 0.2 s lost the stack there)."""
    deadline, size = time.monotonic() + limit_s, 0
    while time.monotonic() < deadline:
        if _exits_within(pid, 0.05):
            return
        now = os.fstat(where_fd).st_size
        if now and now == size:
            return
        size = now


def _exits_within(pid: int, timeout_s: float) -> bool:
    """Whether the child ends within ``timeout_s`` (left to be reaped): a pidfd where the kernel has
    them (Linux 5.3), else a poll every few milliseconds."""
    try:
        watch = os.pidfd_open(pid)
    except (AttributeError, OSError):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
            time.sleep(0.005)
        return False
    try:
        return bool(select.select([watch], [], [], timeout_s)[0])
    finally:
        os.close(watch)


def _end_everything_but_me(child: int, isolated: bool) -> None:
    """Kill every process the child left behind (setsid() and double forks included) and reap them.

    In the sandbox's pid namespace ``kill(-1)`` reaches every process but the namespace's first
    (the sandbox's own) and the worker; without a sandbox only the child's process group is reached
    (forking is refused there by the audit hook)."""
    try:
        if isolated:
            os.kill(-1, signal.SIGKILL)
        else:
            os.killpg(child, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # nothing left
    while True:  # as the subreaper, the worker waits for each orphan it inherited
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _empty(folder: str) -> None:
    """Empty the private /tmp, so that nothing a child wrote there is seen by the next one (folders
    the child made unreadable are opened up first: they are the worker's uid's too)."""
    for root, folders, _ in os.walk(folder):
        for name in folders:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                try:
                    os.chmod(path, 0o700)
                except OSError:
                    pass  # gone already
    with os.scandir(folder) as entries:
        for entry in list(entries):
            try:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass  # what cannot go costs the next child some of /tmp, never its result (a descriptor)


def _read(fd: int, limit: int) -> bytes:
    chunks, offset = [], 0
    while offset < limit:
        chunk = os.pread(fd, min(65536, limit - offset), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]
