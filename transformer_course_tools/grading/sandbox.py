"""One sandbox per grading job: run a command that sees only what it is shown.

``run(argv, visible=[...])`` starts ``argv`` so that

* the file system is read-only, except a private ``/tmp`` (a size-capped tmpfs in memory, so the
  job cannot fill the disk) and the folders the caller marks writable;
* only an allow-list is visible: ``/usr`` and the loader's files, the running Python's installation
  (prefix, base prefix, site-packages) and the caller's ``visible`` folders. Everything else (home,
  ``/work``, ``.git``, other copies of the course, classmates' folders) does not exist inside;
* there is no network (a fresh network namespace with nothing in it);
* every process it starts dies when it ends, ``setsid()`` or double fork included (a fresh pid
  namespace: when its first process exits, the kernel kills the rest);
* wall time, memory (address space per process), processes and file size are limited.

``start(argv, visible=[...])`` builds the same sandbox for a job that stays up and answers requests
(a student's grading worker): a :class:`Session` with pipes to its stdin and stdout, whose owner
sets the deadlines and ends it with ``close()``, which kills everything it started.

Two tools can build this on an ordinary Linux machine, without Docker and without root:

* ``bwrap`` (Debian package ``bubblewrap``), preferred: a small, widely audited tool made for this;
* util-linux's ``unshare`` (installed everywhere), with the mounts done by the course's own
  inside step (:mod:`.sandbox_inside`), for machines where bubblewrap is not installed.

An instructor installs bubblewrap with ``apt-get install bubblewrap`` (Debian, Ubuntu) or
``dnf install bubblewrap`` (Fedora); a learner without root needs nothing: ``unshare`` is there.

``probe()`` says which one works here. Where neither does (macOS, user namespaces disabled), ``run``
still runs the job with the same rlimits and a process-group kill, and reports ``isolated=False``;
``run(..., require_isolation=True)`` refuses instead.

Who the job runs as. Not as uid 0: a process with uid 0, even inside a user namespace and without any
capability, may write files such as ``/proc/sys/kernel/core_pattern`` whose permission check is
"owner is root" (we tried it with bubblewrap: it works), and the kernel exempts uid 0 from the
process limit. So when the grader itself runs as root, the job runs as ``uid_if_root`` (default
65534, "nobody"), which must be able to read the visible folders (``run`` checks) and the Python
installation. Without a user namespace, the process limit then counts every process of that uid on
the machine: give jobs that run at the same time different ``uid_if_root`` values. When the grader is
an ordinary user, the job runs as that user inside a fresh user namespace, and the limit counts the
job's own processes only.

Why no Landlock or seccomp. The mount namespace already gives an allow-list view of the file system,
which is what Landlock would add; a seccomp filter would need a compiled BPF program (another
dependency) and a list of system calls to keep up to date, to shrink the kernel's attack surface,
which is not the threat here (students gaming a grade). Both are worth adding only if the
threat model grows.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import resource
import shutil
import signal
import site
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal, NamedTuple

from .sandbox_inside import PIVOT_ROOT, PR_SET_PDEATHSIG, libc

Mechanism = Literal["bwrap", "unshare", "none"]
MECHANISMS: tuple[Mechanism, ...] = ("bwrap", "unshare", "none")
NOBODY = 65534  # the job's uid and gid when the grader runs as root
MIB = 1024 * 1024

# What the job sees in its environment: nothing from the grader's (it may hold tokens or paths).
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "USER": "sandbox",  # getpass.getuser() reads these first; the sandbox has no /etc/passwd
    "LOGNAME": "sandbox",
}
# Paths a visible folder may not be shown at: the sandbox builds these itself.
RESERVED = ("/proc", "/dev", "/usr")


class SandboxError(RuntimeError):
    """The job did not run: the sandbox could not be built, or isolation was required and is missing."""


class _NotStarted(SandboxError):
    """The launcher ran but built no sandbox; ``message`` is its own error, in one line."""

    def __init__(self, mechanism: Mechanism, message: str) -> None:
        super().__init__(f"{mechanism}: the job did not start: {message}")
        self.message = message


class Visible(NamedTuple):
    """A host path shown to the job at ``sandbox_path`` (default: the same path), read-only unless ``writable``."""

    host_path: str | os.PathLike[str]
    sandbox_path: str | None = None
    writable: bool = False


@dataclass(frozen=True)
class SandboxSupport:
    """What ``probe`` found: the mechanism, whether it isolates, and one line saying what is protected."""

    mechanism: Mechanism
    isolated: bool
    description: str


@dataclass(frozen=True)
class Result:
    """How a job ended. ``returncode`` follows the shell: 128 + N when signal N ended the job."""

    returncode: int
    timed_out: bool
    killed_reason: str | None  # None when the job exited by itself
    stdout: bytes  # at most ``output_limit_bytes`` of it
    stderr: bytes
    truncated: bool  # stdout or stderr was longer than the limit
    seconds: float
    mechanism: Mechanism

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


# --------------------------------------------------------------------------------------------------
# Which mechanism works here


def _describe(mechanism: Mechanism) -> str:
    return (
        f"sandboxed with {mechanism}: only the listed folders and Python are visible, read-only except a "
        "private size-capped /tmp; no network; every process killed at the end; limits on time, memory, "
        "processes and file size"
    )


@cache
def _problem(mechanism: Mechanism) -> str | None:
    """Why ``mechanism`` cannot sandbox a job on this machine, in one line, or None when it can (tried for real)."""
    if mechanism == "none":
        return None
    if sys.platform != "linux":
        return f"{mechanism} needs Linux (this is {sys.platform})"
    tools = {"bwrap": ["bwrap", "prlimit"] + (["setpriv"] if os.geteuid() == 0 else []), "unshare": ["unshare"]}
    missing = [tool for tool in tools[mechanism] if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not installed"
    if mechanism == "unshare" and PIVOT_ROOT is None:
        return f"unshare: unknown architecture {platform.machine()} (pivot_root's number is not known)"
    try:  # the only reliable test: run a tiny job the way run() will
        mounts, limits = _mounts([], python=False, tmp_mb=1), _Limits(10.0, 256, 8, 1, 4096)
        result = _run(mechanism, ["true"], mounts, limits, BASE_ENV, "/tmp")
    except _NotStarted as error:
        return f"{mechanism} refused: {error.message}"
    except (SandboxError, OSError) as error:
        return f"{mechanism} refused: {one_line(str(error))}"
    if not result.ok:
        return f"{mechanism} refused: {tool_message(result.stderr, result.returncode)}"
    return None


def one_line(text: str, limit: int = 160) -> str:
    """``text`` as one printable line of at most ``limit`` characters."""
    line = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def tool_message(stderr: bytes, returncode: int) -> str:
    """What a launcher said when it failed, in one line: its first line (a Python traceback's last)."""
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    if not lines:
        return f"exit status {returncode}, no message"
    return one_line(lines[-1] if lines[0].startswith("Traceback") else lines[0])


def probe(mechanism: Mechanism | None = None) -> SandboxSupport:
    """The best mechanism that works here (``mechanism=None``), or whether the named one works.

    Runs a tiny job per mechanism the first time (a fraction of a second), then answers from a cache.
    """
    if mechanism is not None and mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {', '.join(MECHANISMS)}, not {mechanism!r}")
    if mechanism in ("bwrap", "unshare"):
        problem = _problem(mechanism)
        return SandboxSupport(mechanism, problem is None, problem or _describe(mechanism))
    problems = ["asked for none"]
    if mechanism is None:
        for candidate in ("bwrap", "unshare"):
            if (problem := _problem(candidate)) is None:
                return SandboxSupport(candidate, True, _describe(candidate))
        problems = [_problem("bwrap"), _problem("unshare")]
    return SandboxSupport(
        "none",
        False,
        f"NOT sandboxed ({'; '.join(map(str, problems))}): the job can read and write what this user can, use "
        "the network and leave setsid() processes behind; only time, memory and file-size limits apply",
    )


# --------------------------------------------------------------------------------------------------
# What the sandbox contains: one list of mounts, carried out by bwrap's arguments or by _inside()


class _Op(NamedTuple):
    kind: Literal["ro", "rw", "symlink", "tmpfs", "proc", "dev"]
    src: str  # host path (ro, rw), link target (symlink), size in bytes (tmpfs), "" otherwise
    dst: str  # path inside the sandbox


class _Limits(NamedTuple):
    timeout_s: float
    memory_mb: int
    max_processes: int
    max_file_mb: int
    output_limit_bytes: int


def python_paths() -> list[str]:
    """The folders the running interpreter needs: its prefixes, site-packages and the real executable."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    found.add(str(Path(sys.executable).resolve().parent))  # a venv's python is a link to it
    found |= {os.path.realpath(path) for path in found}  # where a link leads must be there too
    return sorted(path for path in found if path != "/" and os.path.exists(path))


def _mounts(visible: Sequence[Visible], *, python: bool, tmp_mb: int) -> list[_Op]:
    ops = [_Op("ro", "/usr", "/usr")]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):  # links into /usr on merged-/usr systems
        path = "/" + name
        if os.path.islink(path):
            ops.append(_Op("symlink", os.readlink(path), path))
        elif os.path.isdir(path):
            ops.append(_Op("ro", path, path))
    ops += [_Op("ro", path, path) for path in ("/etc/ld.so.cache", "/etc/localtime") if os.path.exists(path)]
    ops += [_Op("ro", path, path) for path in (python_paths() if python else [])]
    ops += [_Op("rw" if v.writable else "ro", os.path.abspath(v.host_path), str(v.sandbox_path)) for v in visible]
    ops += [_Op("dev", "", "/dev"), _Op("proc", "", "/proc"), _Op("tmpfs", str(tmp_mb * MIB), "/tmp")]
    # A read-only path inside another one shown at the same place adds nothing (site-packages in a prefix).
    same = [op.dst for op in ops if op.kind == "ro" and op.src == op.dst]
    ops = [op for op in ops if not (op.kind == "ro" and op.src == op.dst and _inside_any(op.dst, same))]
    return sorted(ops, key=lambda op: Path(op.dst).parts)  # parents before children


def _inside_any(path: str, others: Sequence[str]) -> bool:
    return any(other != path and (other == "/" or path.startswith(other + "/")) for other in others)


# --------------------------------------------------------------------------------------------------
# Running a job


def run(
    argv: Sequence[str],
    *,
    visible: Sequence[Visible | tuple] = (),
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | os.PathLike[str] | None = None,
    timeout_s: float = 60.0,
    memory_mb: int = 2048,
    max_processes: int = 64,
    max_file_mb: int = 64,
    tmp_mb: int = 64,
    output_limit_bytes: int = MIB,
    python: bool = True,
    mechanism: Mechanism | None = None,
    require_isolation: bool = False,
    uid_if_root: int = NOBODY,
) -> Result:
    """Run ``argv`` in a fresh sandbox and return how it ended; the job's failures are in the Result.

    ``visible``: ``(host_path, sandbox_path, writable)`` triples (``Visible``); nothing else from the
    host is shown except ``/usr``, the loader's files and, with ``python=True``, the running Python's
    installation (``python_paths()``). ``cwd`` is a path inside the sandbox (default ``/tmp``, the
    private ``tmp_mb`` folder). ``env`` is added to ``BASE_ENV``; the grader's environment is not
    passed. ``stdin`` is data (bytes) or a host file (a Path); default empty. ``memory_mb`` caps each
    process's address space, ``max_processes`` the job's processes and threads, ``max_file_mb`` any
    file it writes (its stdout and stderr too). ``max_processes`` counts threads, and PyTorch starts
    one per core: on a machine with many cores pass ``env={"OMP_NUM_THREADS": "1"}`` or raise it.
    ``mechanism`` forces one (default: ``probe()``'s).

    Raises ``ValueError``/``TypeError`` (one line) for bad arguments and ``SandboxError`` when the
    job could not be started, or when ``require_isolation`` is set and no sandbox works here.
    Without a sandbox (``mechanism="none"``) the visible paths must be shown at their own path.
    """
    if stdin is not None and not isinstance(stdin, bytes | os.PathLike):
        raise TypeError("stdin must be bytes (data) or a pathlib.Path (a host file)")
    job = _checked_job(argv, visible, cwd, env, _Limits(timeout_s, memory_mb, max_processes, max_file_mb,
                       output_limit_bytes), tmp_mb, python, mechanism, require_isolation, uid_if_root)  # fmt: skip
    with _stdin_fd(stdin) as stdin_file:
        if job.support.mechanism == "none":
            return _run_unsandboxed(job.argv, job.views, job.limits, job.env, cwd, stdin_file)
        return _run(job.support.mechanism, job.argv, job.mounts, job.limits, job.env, job.cwd, stdin_file, job.uid)


class _Job(NamedTuple):
    """A job's arguments, checked: what ``run`` and ``start`` launch."""

    argv: list[str]
    views: list[Visible]
    limits: _Limits
    env: dict[str, str]
    cwd: str  # inside the sandbox
    support: SandboxSupport
    mounts: list[_Op]
    uid: int  # the job's uid when the grader is root


def _checked_job(
    argv: Sequence[str],
    visible: Sequence[Visible | tuple],
    cwd: str | None,
    env: Mapping[str, str] | None,
    limits: _Limits,
    tmp_mb: int,
    python: bool,
    mechanism: Mechanism | None,
    require_isolation: bool,
    uid_if_root: int,
) -> _Job:
    """Every argument checked (one line per problem), the mechanism chosen and its mounts listed."""
    argv = _check_argv(argv)
    if isinstance(visible, str | os.PathLike) or not all(isinstance(v, tuple | list) for v in visible):
        raise TypeError("visible must be a list of (host_path, sandbox_path, writable) tuples")
    views = [_check_visible(Visible(*entry)) for entry in visible]
    integers = {"memory_mb", "max_processes", "max_file_mb", "output_limit_bytes"}
    limits = _Limits(
        *(_check_number(name, value, integer=name in integers) for name, value in limits._asdict().items())
    )
    tmp_mb = _check_number("tmp_mb", tmp_mb, integer=True)
    uid_if_root = _check_number("uid_if_root", uid_if_root, integer=True)
    if len({v.sandbox_path for v in views}) < len(views):
        raise ValueError("visible: two entries are shown at the same sandbox path")
    if cwd is not None and (not isinstance(cwd, str) or not os.path.isabs(cwd)):
        raise ValueError(f"cwd must be an absolute path inside the sandbox, not {cwd!r}")
    full_env = {**BASE_ENV, **(env or {})}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in full_env.items()):
        raise TypeError("env must map str to str")

    support = probe(mechanism)
    if mechanism in ("bwrap", "unshare") and not support.isolated:
        raise SandboxError(f"{mechanism} cannot be used here: {support.description}")
    if require_isolation and not support.isolated:
        raise SandboxError(f"a sandbox is required and none works here: {support.description}")
    if support.isolated and os.geteuid() == 0:
        for view in views + [Visible(path, path) for path in (python_paths() if python else [])]:
            _check_job_can_use(view, uid_if_root)
    mounts = _mounts(views, python=python, tmp_mb=tmp_mb) if support.isolated else []
    return _Job(argv, views, limits, full_env, cwd or "/tmp", support, mounts, uid_if_root)


def _run(
    mechanism: Mechanism,
    argv: list[str],
    mounts: list[_Op],
    limits: _Limits,
    env: Mapping[str, str],
    cwd: str,
    stdin_file: int | None = None,
    uid_if_root: int = NOBODY,
) -> Result:
    """Start the launcher (bwrap or unshare), wait, kill what is left, and read the status pipe."""
    status_read, status_write = os.pipe()
    try:
        command = _sandbox_command(mechanism, argv, mounts, limits, cwd, uid_if_root, status_write)
        result, status = _launch(mechanism, command, limits, env, None, stdin_file, status_write, status_read)
    finally:
        os.close(status_read)
    # bwrap and _inside write {"exit-code": N} only when the sandbox was built and its first process ran
    # to the end; without it the sandbox failed to build, and the message is on stderr.
    if not result.timed_out and b'"exit-code"' not in status:
        raise _NotStarted(mechanism, tool_message(result.stderr, result.returncode))
    return result


def _run_unsandboxed(
    argv: list[str], views: list[Visible], limits: _Limits, env: dict[str, str], cwd: str | None, stdin_file: int | None
) -> Result:
    """No sandbox: the same limits, a private temporary folder, and a kill of the job's process group."""
    _check_shown_in_place(views)
    with tempfile.TemporaryDirectory(prefix="sandbox-tmp-") as private_tmp:
        env = env | {"HOME": private_tmp, "TMPDIR": private_tmp}
        result, _ = _launch("none", list(argv), limits, env, cwd or private_tmp, stdin_file, None, None)
    return result


def _check_shown_in_place(views: list[Visible]) -> None:
    for view in views:
        if os.path.realpath(view.host_path) != os.path.realpath(str(view.sandbox_path)):
            raise SandboxError(f"no sandbox here, so {view.host_path} cannot be shown at {view.sandbox_path}")


def start(
    argv: Sequence[str],
    *,
    visible: Sequence[Visible | tuple] = (),
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    memory_mb: int = 2048,
    max_processes: int = 64,
    max_file_mb: int = 64,
    tmp_mb: int = 64,
    output_limit_bytes: int = MIB,
    python: bool = True,
    mechanism: Mechanism | None = None,
    require_isolation: bool = False,
    uid_if_root: int = NOBODY,
) -> Session:
    """Start ``argv`` in a fresh sandbox, as :func:`run` would, and leave it running: a
    :class:`Session` whose ``stdin`` and ``stdout`` are pipes to the job. Its owner sets the
    deadlines and ends it with ``close()``, which kills it and everything it started, as ``run``
    does at the end of a job. Arguments and errors as for :func:`run` (no ``timeout_s``, no ``stdin``).
    """
    limits = _Limits(1.0, memory_mb, max_processes, max_file_mb, output_limit_bytes)
    job = _checked_job(argv, visible, cwd, env, limits, tmp_mb, python, mechanism, require_isolation, uid_if_root)
    return Session(job)


class Session:
    """A job started by :func:`start`: write requests to ``stdin``, read answers from ``stdout``
    (both binary pipes); what it prints on stderr goes to an unlinked file, capped, returned by ``close``."""

    def __init__(self, job: _Job) -> None:
        self.mechanism = job.support.mechanism
        self._limits = job.limits
        self._private_tmp = None if job.support.isolated else tempfile.TemporaryDirectory(prefix="sandbox-tmp-")
        self._stderr = tempfile.TemporaryFile()
        self._status_read: int | None = None
        status_write = None
        env, host_cwd = job.env, None
        if job.support.isolated:
            self._status_read, status_write = os.pipe()
            command = _sandbox_command(self.mechanism, job.argv, job.mounts, job.limits, job.cwd, job.uid, status_write)
        else:
            _check_shown_in_place(job.views)
            tmp = self._private_tmp.name
            command, env, host_cwd = job.argv, env | {"HOME": tmp, "TMPDIR": tmp}, job.cwd if job.cwd != "/tmp" else tmp
        streams = (subprocess.PIPE, subprocess.PIPE, self._stderr)
        self.process = _spawn(command, job.limits, env, host_cwd, streams, status_write, self._status_read)
        self.stdin, self.stdout = self.process.stdin, self.process.stdout

    def close(self) -> bytes:
        """Kill the job and all it started, wait for them; return the first bytes it printed on stderr."""
        for pipe in (self.stdin, self.stdout):
            try:
                pipe.close()
            except OSError:
                pass  # a broken pipe to a job that is gone
        try:
            _stop(self.process, self._status_read, timed_out=True)
        finally:
            if self._status_read is not None:
                os.close(self._status_read)
                self._status_read = None
            if self._private_tmp is not None:
                self._private_tmp.cleanup()
        printed, _ = _read_capped(self._stderr, self._limits.output_limit_bytes)
        self._stderr.close()
        return printed

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *_: object) -> None:
        if not self._stderr.closed:
            self.close()


def _launch(
    mechanism: Mechanism,
    command: list[str],
    limits: _Limits,
    env: Mapping[str, str],
    host_cwd: str | None,
    stdin_file: int | None,
    status_write: int | None,
    status_read: int | None,
) -> tuple[Result, bytes]:
    # Output goes to unlinked files, not pipes: no reader thread, and RLIMIT_FSIZE caps what the job writes.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        stdin = subprocess.DEVNULL if stdin_file is None else stdin_file
        process = _spawn(command, limits, env, host_cwd, (stdin, out, err), status_write, status_read)
        timed_out = False
        try:
            process.wait(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            status = _stop(process, status_read, timed_out)
        seconds = time.monotonic() - start
        stdout, cut_out = _read_capped(out, limits.output_limit_bytes)
        stderr, cut_err = _read_capped(err, limits.output_limit_bytes)
    code = process.returncode if process.returncode >= 0 else 128 - process.returncode
    reason = killed_reason(code, timed_out, limits.timeout_s)
    return Result(code, timed_out, reason, stdout, stderr, cut_out or cut_err, seconds, mechanism), status


def _sandbox_command(
    mechanism: Mechanism, argv: list[str], mounts: list[_Op], limits: _Limits, cwd: str, uid_if_root: int,
    status_write: int,
) -> list[str]:  # fmt: skip
    """The launcher's command line: bwrap's, or unshare's with this module's ``--inside`` step."""
    job_uid = uid_if_root if os.geteuid() == 0 else None  # None: stay this user, in a user namespace
    if mechanism == "bwrap":
        return _bwrap_command(argv, mounts, cwd, job_uid, limits.max_processes, status_write)
    spec = {"ops": mounts, "cwd": cwd, "argv": argv, "uid": job_uid, "nproc": limits.max_processes}
    return _unshare_command(spec | {"status_fd": status_write}, as_root=job_uid is not None)


def _spawn(
    command: list[str], limits: _Limits, env: Mapping[str, str], host_cwd: str | None, streams: tuple,
    status_write: int | None, status_read: int | None,
) -> subprocess.Popen:  # fmt: skip
    """Start the launcher in its own process group with the limits; ``streams``: its stdin, stdout, stderr."""
    try:
        process = subprocess.Popen(
            command,
            stdin=streams[0],
            stdout=streams[1],
            stderr=streams[2],
            env=dict(env),
            cwd=host_cwd,
            pass_fds=() if status_write is None else (status_write,),
            start_new_session=True,  # its own process group, killed as a whole by _stop
            preexec_fn=_rlimits(limits),
        )
    finally:
        if status_write is not None:
            os.close(status_write)  # only the child holds the write end now
    if status_read is not None:
        os.set_blocking(status_read, False)
    return process


def _stop(process: subprocess.Popen, status_read: int | None, timed_out: bool) -> bytes:
    """Kill what is left of a launched job and wait for all of it; return what the status pipe said.

    The namespace's first process ("child-pid", reported by bwrap and by _inside) kills every other one
    when it exits. The launcher may exit before that is over (bwrap does), so wait for it too. Without a
    sandbox the group kill reaches all but setsid() processes. (Signalling a pid after it was reaped is
    safe in practice: pids are reused only after the counter wraps around pid_max.)
    """
    status = _read_available(status_read)
    if timed_out and (init := _init_pid(status)):
        _kill(init)
    _kill_group(process.pid)
    process.wait()
    status += _read_available(status_read)
    if init := _init_pid(status):
        _wait_until_gone(init)
    return status


def _bwrap_command(
    argv: list[str], mounts: list[_Op], cwd: str, job_uid: int | None, nproc: int, status_fd: int
) -> list[str]:
    command = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--new-session"]
    command += ["--json-status-fd", str(status_fd)]  # {"exit-code": N} appears only if the job ran
    command += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if job_uid is None:
        command += ["--unshare-user"]  # bwrap drops every capability of the job itself
    else:  # as root bwrap keeps capabilities: keep only those setpriv needs to become job_uid
        command += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        command += ["--cap-add", "CAP_SETPCAP"]
    made: set[str] = set()
    bound = [op.dst for op in mounts if op.kind in ("ro", "rw")]
    for op in mounts:
        for parent in reversed(Path(op.dst).parents[:-1]):  # bwrap would make them 0700: unreadable by nobody
            if str(parent) not in made and not _inside_any(str(parent), bound):
                command += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        made.add(op.dst)
        if op.kind in ("ro", "rw"):
            command += ["--ro-bind" if op.kind == "ro" else "--bind", op.src, op.dst]
        elif op.kind == "symlink":
            command += ["--symlink", op.src, op.dst]
        elif op.kind == "tmpfs":
            command += ["--perms", "1777", "--size", op.src, "--tmpfs", op.dst]
        else:
            command += [f"--{op.kind}", op.dst]
    command += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", cwd, "--"]
    if job_uid is not None:
        command += [_inside_path("setpriv"), f"--reuid={job_uid}", f"--regid={job_uid}", "--clear-groups"]
        command += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    # RLIMIT_NPROC is set inside, after the user namespace exists, so that it counts this job's processes
    # only (as root, where there is none, it counts all of job_uid's).
    return command + [_inside_path("prlimit"), f"--nproc={nproc}:{nproc}", "--", *argv]


def _inside_path(tool: str) -> str:
    """Where a helper that runs inside the sandbox really lives: a link on the PATH (~/.local/bin) is not shown there."""
    found = shutil.which(tool)
    return os.path.realpath(found) if found else tool


def _unshare_command(spec: dict, *, as_root: bool) -> list[str]:
    # As root no user namespace is needed (and one would leave the job uid 0); otherwise map us to its root.
    command = [shutil.which("unshare") or "unshare"] + ([] if as_root else ["--user", "--map-root-user"])
    command += ["--mount", "--pid", "--net", "--ipc", "--uts", "--fork", "--kill-child"]
    inside = Path(__file__).resolve().with_name("sandbox_inside.py")  # run by path: standard library only
    return command + [sys.executable, "-I", "-S", str(inside), json.dumps(spec)]


def _rlimits(limits: _Limits):
    """A preexec function: limits that hold for the launcher and everything it starts."""
    wanted = {
        resource.RLIMIT_AS: limits.memory_mb * MIB,
        resource.RLIMIT_FSIZE: limits.max_file_mb * MIB,
        resource.RLIMIT_CORE: 0,  # a crash must not write a core file (or hand one to a host helper)
    }
    capped = {}
    for which, value in wanted.items():  # never above the current hard limit: setrlimit would fail
        hard = resource.getrlimit(which)[1]
        capped[which] = value if hard == resource.RLIM_INFINITY else min(value, hard)

    def apply() -> None:
        for which, value in capped.items():
            resource.setrlimit(which, (value, value))
        if sys.platform == "linux":  # the launcher dies with the grader
            libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return apply


def killed_reason(code: int, timed_out: bool, timeout_s: float) -> str | None:
    if timed_out:
        return f"wall-clock limit ({timeout_s:g} s)"
    if not 128 < code <= 128 + 64:
        return None
    number = code - 128
    if number == signal.SIGXFSZ:
        return "file size limit (SIGXFSZ)"
    if number == signal.SIGKILL:
        return "killed by SIGKILL (out of memory?)"
    try:
        return f"killed by {signal.Signals(number).name}"
    except ValueError:
        return f"killed by signal {number}"


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # nothing left in the group


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # already gone


def _read_available(fd: int | None) -> bytes:
    """What the status pipe holds now (all of it once every writer is gone)."""
    chunks = []
    while fd is not None:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _init_pid(status: bytes) -> int | None:
    found = re.search(rb'"child-pid": (\d+)', status)
    return int(found.group(1)) if found else None


def _wait_until_gone(pid: int, timeout_s: float = 10.0) -> None:
    """Wait until ``pid`` has exited (gone, or a zombie): a namespace's first process exits last."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.002)
    raise SandboxError(f"the sandbox's first process {pid} is still alive {timeout_s:g} s after the job ended")


def _read_capped(file, limit: int) -> tuple[bytes, bool]:
    file.seek(0)
    data = file.read(limit + 1)
    return data[:limit], len(data) > limit


@contextmanager
def _stdin_fd(stdin: bytes | os.PathLike[str] | None) -> Iterator[int | None]:
    """The job's stdin as an open file descriptor: data through an unlinked file, or the host file."""
    if stdin is None:
        yield None
        return
    if isinstance(stdin, bytes):
        with tempfile.TemporaryFile() as file:
            file.write(stdin)
            fd = os.dup(file.fileno())
        os.lseek(fd, 0, os.SEEK_SET)
    else:
        fd = os.open(stdin, os.O_RDONLY)
    try:
        yield fd
    finally:
        os.close(fd)


# --------------------------------------------------------------------------------------------------
# Argument checks: one clear line each


def _check_argv(argv: Sequence[str]) -> list[str]:
    if isinstance(argv, str | bytes) or not argv or not all(isinstance(arg, str) and arg for arg in argv):
        raise ValueError("argv must be a non-empty list of non-empty strings, e.g. ['python', '-c', '...']")
    return list(argv)


def _check_number(name: str, value: object, *, integer: bool = False) -> float | int:
    allowed = int if integer else int | float
    if isinstance(value, bool) or not isinstance(value, allowed) or not math.isfinite(value) or value <= 0:
        kind = "a positive integer" if integer else "a positive finite number"
        raise ValueError(f"{name} must be {kind}, not {value!r}")
    return value


def _check_visible(view: Visible) -> Visible:
    host = os.fspath(view.host_path)
    if not os.path.exists(host):
        raise ValueError(f"visible path does not exist: {host}")
    inside = os.path.abspath(host) if view.sandbox_path is None else view.sandbox_path
    if not isinstance(inside, str) or not os.path.isabs(inside) or os.path.normpath(inside) != inside:
        raise ValueError(f"sandbox path must be absolute and normalised, not {inside!r}")
    if inside in ("/", "/tmp") or any(inside == r or inside.startswith(r + "/") for r in RESERVED):
        raise ValueError(f"sandbox path {inside} is reserved (/, /tmp, {', '.join(RESERVED)})")
    if not isinstance(view.writable, bool):
        raise TypeError(f"writable must be True or False, not {view.writable!r}")
    return Visible(host, inside, view.writable)


def _check_job_can_use(view: Visible, uid: int) -> None:
    """As root the job is ``uid``: say so now rather than let it fail on 'Permission denied'."""
    info = os.stat(view.host_path)
    if info.st_uid == uid:
        bits = info.st_mode >> 6
    elif info.st_gid == uid:
        bits = info.st_mode >> 3
    else:
        bits = info.st_mode
    need = 0o4 | (0o1 if stat.S_ISDIR(info.st_mode) else 0) | (0o2 if view.writable else 0)
    if bits & need != need:
        action = "write" if view.writable else "read"
        raise ValueError(
            f"{view.host_path}: jobs run as uid {uid} when grading as root and cannot {action} it "
            f"(chown {uid} or chmod o+rX{'w' if view.writable else ''})"
        )
