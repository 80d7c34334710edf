"""The grading child: runs one exercise's probes on one submission and sends plain data back.

It is forked, once per exercise, by the student's warm worker (:mod:`.worker`), which imported
PyTorch and this package but never the student's code; so each child starts from that clean state.
It reads its exercise from ``JOB`` (the worker's inbox, a read-only folder the grader fills for
this one exercise): ``job.json`` (exercise, target, the rooms it may look at), ``cases.pt`` (the
cases' probe parts: plain data, no answers) and ``standins.py`` (the stand-ins of the *other*
exercises this one calls, never its own). ``SUBMISSION`` holds the student's ``transformer_course/``.

The child imports the student's package, runs every case's probe (an error costs its case only) and
writes one frame (:mod:`.wire`) to its own result descriptor, a fresh one per child. It decides
nothing: the grader judges. Without a sandbox (the worker's settings then carry a ``guard``), an
audit hook refuses what the sandbox would have hidden; that guard is a speed bump for honest
mistakes, not a wall (see the README's instructor section).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable

import torch

from .calls import run_case
from .isolation import Isolation, resolve
from .wire import cut, frame

BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from _course_probe.worker import main; main(sys.argv[1:])"
NAME = "_course_probe"  # this package's name in the folder the worker is started from


def run_job(job_dir: str, submission: str, package: str, guard: dict | None, result_fd: int) -> None:
    """Run the exercise of ``job_dir`` on the submission; write the frame to ``result_fd``; never
    returns (``os._exit``, so that no code of the student's runs at exit)."""
    with open(os.path.join(job_dir, "job.json"), encoding="utf-8") as handle:
        job = json.load(handle)
    cases = torch.load(os.path.join(job_dir, "cases.pt"), weights_only=True)
    standins = _load_module("_course_standins", os.path.join(job_dir, "standins.py")).STANDINS
    found = None
    if guard:  # no sandbox: the job's own folders and its private /tmp are what it may use
        allowed = [*guard["allowed"], job_dir, submission]
        hook, found = _guard(guard["forbidden"], allowed, writable=[os.environ["TMPDIR"]])
        sys.addaudithook(hook)
    payload: dict = {"cases": [], "fatal": None, "package_error": None, "guard": None}
    try:
        payload["package_error"] = _import_package(package, os.path.join(submission, package))
        impl = _resolve(job["target"], payload["package_error"])
        isolated = Isolation(job["exercise"], job["targets"], standins).wrap(impl)
        torch.manual_seed(0)
        for spec in cases:
            payload["cases"].append(run_case(isolated, spec))
    except SystemExit as exit_:
        payload["fatal"] = f"the code called sys.exit({exit_.code!r})"
    except BaseException as error:  # noqa: BLE001 - the student's code: anything can come out
        payload["fatal"] = cut(str(error) if isinstance(error, _Fatal) else describe(error, "importing the exercise"))
    payload["guard"] = None if found is None else dict(found)
    _flush_printed()
    data = frame(payload)
    while data:
        data = data[os.write(result_fd, data) :]
    os._exit(0)


def _flush_printed() -> None:
    """What the code printed and Python still buffers, written out before ``os._exit`` (which
    flushes nothing): a student's debug prints reach the feedback."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001, S110 - a stream the code replaced or closed: nothing to save
            pass


class _Fatal(Exception):
    """The exercise cannot be run at all (its function does not import)."""


def _import_package(package: str, folder: str) -> str | None:
    """Import the submission's package; if its ``__init__`` fails, keep a bare package so that the
    exercises in modules that do import are still graded. Returns the error, described."""
    init = os.path.join(folder, "__init__.py")
    if os.path.isfile(init):
        spec = importlib.util.spec_from_file_location(package, init, submodule_search_locations=[folder])
        module = importlib.util.module_from_spec(spec)
        sys.modules[package] = module
        try:
            spec.loader.exec_module(module)
            return None
        except Exception as error:  # noqa: BLE001
            problem = describe(error, "importing the package (__init__.py)")
            for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
                del sys.modules[name]
    else:
        problem = None
    spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
    spec.submodule_search_locations = [folder]
    module = importlib.util.module_from_spec(spec)
    module.__path__ = [folder]
    sys.modules[package] = module
    return problem


def _resolve(target: str, init_error: str | None):  # noqa: ANN202
    try:
        return resolve(target)
    except Exception as error:  # noqa: BLE001
        problem = describe(error, f"importing {target.split(':')[0]}")
        raise _Fatal(
            problem + (f" [the package itself failed to import: {init_error}]" if init_error else "")
        ) from None


def _load_module(name: str, path: str):  # noqa: ANN202
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def describe(error: BaseException, when: str) -> str:
    """One line saying what went wrong and where, for the report."""
    if isinstance(error, SyntaxError):
        where = f"{os.path.basename(error.filename or '?')}, line {error.lineno}"
        return f"SyntaxError in {where}: {error.msg} (while {when})"[:2000]
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    try:
        text = str(error)
    except Exception:  # noqa: BLE001
        text = "(its message could not be read)"
    return f"{type(error).__name__}{where} while {when}: {text}"[:2000]


# -- without a sandbox: an audit hook (bypassable; the sandbox is the protection) ------------------

_PROCESS_EVENTS = frozenset({
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill", "os.killpg",
    "subprocess.Popen", "pty.spawn", "signal.pthread_kill", "ctypes.dlopen", "ctypes.dlsym", "socket.connect",
    "socket.bind", "socket.sendto",
})  # fmt: skip
_WRITE_EVENTS = frozenset({
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.chmod", "os.chown",
    "os.truncate", "os.utime", "shutil.rmtree", "shutil.move", "os.chflags",
})  # fmt: skip
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _guard(forbidden: list[str], allowed: list[str], writable: list[str]) -> tuple[Callable, dict[str, str]]:
    """An audit hook refusing reads below ``forbidden`` (unless below ``allowed``), writes outside
    ``writable``, other processes' /proc entries, starting processes, loading libraries and the
    network; and the dict where it notes the first refusal of each kind. Its rules live in a
    closure, not in attributes a submission could reset."""
    rules = (tuple(forbidden), tuple(allowed), tuple(writable), f"/proc/{os.getpid()}/")
    found: dict[str, str] = {}

    def refuse(kind: str, message: str) -> None:
        found.setdefault(kind, message)
        raise PermissionError(f"grading: {message}")

    def hook(event: str, args: tuple) -> None:
        forbidden, allowed, writable, own_proc = rules
        if event in _PROCESS_EVENTS:
            refuse("process", f"{event} is not allowed while grading")
        if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], str | bytes):
            path = os.fsdecode(args[0])
            if path.startswith("/proc/") and path.split("/")[2].isdigit() and not path.startswith(own_proc):
                refuse("process", f"opening {path} (another process) is not allowed while grading")
            if event == "open" and _opens_for_writing(args):
                paths = [path]
            elif _below(path, forbidden) and not _below(path, allowed):
                refuse("reference", f"reading {path} is not allowed while grading")
            else:
                paths = []
        else:
            paths = [a for a in args[:2] if isinstance(a, str | bytes)] if event in _WRITE_EVENTS else []
        for path in paths:
            if not _below(path, writable):
                refuse("write", f"writing {os.fsdecode(path)} is not allowed while grading ({event})")

    return hook, found


def _opens_for_writing(args: tuple) -> bool:
    mode = args[1] if len(args) > 1 and isinstance(args[1], str) else ""
    flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
    return bool(set(mode) & set("wax+")) or bool(flags & _WRITE_FLAGS)


def _below(path: str | bytes, folders: tuple[str, ...]) -> bool:
    real = os.path.realpath(os.fsdecode(path))
    return any(real == f or real.startswith(f.rstrip(os.sep) + os.sep) for f in folders)
