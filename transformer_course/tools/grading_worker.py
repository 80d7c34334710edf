"""The process that runs students' code for ``python -m transformer_course grade``.

Started by :mod:`transformer_course.grading` as ``python -I grading_worker.py JOBS.json`` (a
script, not ``-m``: the course package is never imported here, so a student's package can take
its name). It imports PyTorch once, then for every (submission, exercise) job forks a child that

* starts a new session (so a timeout kills it and everything it started), caps its memory
  (``RLIMIT_AS``), its CPU time and the size of what it prints (``RLIMIT_FSIZE`` on the file
  its stdout/stderr go to), and sends nothing to this process's pipes;
* imports the student's package as ``transformer_course`` (their own absolute imports resolve
  to their own code), with ``transformer_course.tools`` taken from the *trusted* course instead
  of the submission, and runs that exercise's check on the student's function;
* watches, through an audit hook, for any read of the reference answers (the instructor's package
  files, ``solutions/``), any import of a ``transformer_course_*`` module, and any attempt to start
  a process or send a signal: the operation is refused and the exercise scores "reference import"
  or "error";
* writes its result to a file descriptor opened before any student code ran, tagged with a random
  nonce, so a submission that prints or exits cannot forge a result.

This process waits for each child with a wall-clock deadline and kills the child's process group
when it passes. One JSON line per finished job goes to stdout.

This defends against mistakes and naive cheating, not against a determined attacker: code that
runs in the same process as the check can, with enough effort, reach anything the process can
(ctypes, the interpreter's internals). Grade untrusted classes inside a container or VM.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import resource
import secrets
import signal
import sys
import time
import traceback

MAX_MESSAGE = 2000
CODE_SUFFIXES = {".py", ".pyc", ".pyo", ".ipynb", ".so", ".pyd", ""}
HEAD_BYTES = 4096
# Starting processes or sending signals could escape the limits or kill the grader.
PROCESS_EVENTS = {
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill", "os.killpg",
    "subprocess.Popen", "pty.spawn", "signal.pthread_kill",
}  # fmt: skip


def _short(text: str) -> str:
    text = str(text)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 20] + " … (message cut)"


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class _Guard:
    """Audit hook: refuses reads of the reference answers and process creation, remembering why."""

    def __init__(self, forbidden: list[str], forbidden_code: list[str], allowed: list[str]) -> None:
        # forbidden: every file below (solutions/); forbidden_code: code below (the instructor's
        # package: its data files, say a checkpoint, are no answers); allowed: the trusted checks
        self.forbidden, self.forbidden_code, self.allowed = forbidden, forbidden_code, allowed
        self.reference: str | None = None  # what the submission tried to read
        self.process: str | None = None  # what it tried to start
        self._busy = False

    def _is_reference(self, path: object) -> bool:
        if isinstance(path, int) or path is None:
            return False
        path = os.fsdecode(path) if isinstance(path, bytes) else str(path)
        real = os.path.realpath(path)
        if any(_inside(real, a) for a in self.allowed):
            return False
        if any(_inside(real, f) for f in self.forbidden):
            return True
        code = os.path.splitext(real)[1] in CODE_SUFFIXES or os.path.isdir(real)
        return code and any(_inside(real, f) for f in self.forbidden_code)

    def __call__(self, event: str, args: tuple) -> None:
        if self._busy:
            return
        self._busy = True
        try:
            if event == "open" and args and self._is_reference(args[0]):
                self.reference = self.reference or f"opened {args[0]}"
                raise PermissionError(f"grading: reading the reference answers is not allowed ({args[0]})")
            if event == "import" and args:
                top = str(args[0]).split(".")[0]
                if top != PACKAGE and top.startswith(PACKAGE) or top == "solutions":
                    self.reference = self.reference or f"imported {args[0]}"
                    raise ImportError(f"grading: importing {args[0]} (reference answers) is not allowed")
            if event in PROCESS_EVENTS:
                self.process = self.process or event
                raise PermissionError(f"grading: {event} is not allowed while grading")
        finally:
            self._busy = False


class _TrustedTools(importlib.abc.MetaPathFinder):
    """Serve ``transformer_course.tools`` (and below) from the trusted course, never the submission."""

    def __init__(self, tools_dir: str) -> None:
        self.tools_dir = tools_dir

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001
        prefix = f"{PACKAGE}.tools"
        if fullname != prefix and not fullname.startswith(prefix + "."):
            return None
        parts = fullname.split(".")[2:]
        base = os.path.join(self.tools_dir, *parts)
        if os.path.isdir(base):
            return importlib.util.spec_from_file_location(
                fullname, os.path.join(base, "__init__.py"), submodule_search_locations=[base]
            )
        if os.path.isfile(base + ".py"):
            return importlib.util.spec_from_file_location(fullname, base + ".py")
        return None


def _import_student_package(package_dir: str) -> tuple[str, str] | None:
    """Import the submission's package as ``transformer_course``; on failure keep a bare package
    (no ``__init__``) so exercises in modules that do import still get graded. Returns the error
    (a description, and the exception's own text)."""
    init = os.path.join(package_dir, "__init__.py")
    error = None
    if os.path.isfile(init):
        spec = importlib.util.spec_from_file_location(PACKAGE, init, submodule_search_locations=[package_dir])
        module = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = module
        try:
            spec.loader.exec_module(module)
            return None
        except BaseException as exc:  # noqa: BLE001 - student code: anything can come out
            error = _describe(exc, "importing the package (__init__.py)"), str(exc)
            for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
                del sys.modules[name]
    spec = importlib.machinery.ModuleSpec(PACKAGE, None, is_package=True)
    spec.submodule_search_locations = [package_dir]
    module = importlib.util.module_from_spec(spec)
    module.__path__ = [package_dir]
    sys.modules[PACKAGE] = module
    return error


def _describe(exc: BaseException, when: str) -> str:
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r}) while {when}"
    if isinstance(exc, SyntaxError):
        where = f"{os.path.basename(exc.filename or '?')}, line {exc.lineno}"
        return f"SyntaxError in {where}: {exc.msg} (while {when})"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}{where} while {when}: {exc}"


def _run_child(job: dict, setup: dict, guard: _Guard) -> dict:
    """In the child: import the submission, run the trusted check, return the result."""
    sys.meta_path[:] = [f for f in sys.meta_path if not str(getattr(f, "__module__", "")).startswith("__editable__")]
    sys.meta_path.insert(0, _TrustedTools(setup["tools_dir"]))
    # the course's own folder (an editable install, a checkout on the path) must not shadow the submission
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != setup["course_root"]]
    sys.dont_write_bytecode = True  # leave the submission's folder as it was
    sys.addaudithook(guard)
    init_error = _import_student_package(job["package_dir"])
    runner = importlib.import_module(f"{PACKAGE}.tools.checks.runner")
    try:
        result = runner.run_check(job["exercise"])
        status, message = result.status, result.message
    except BaseException as exc:  # noqa: BLE001 - sys.exit and friends escaping the check
        status, message = ERROR, _describe(exc, "running the check")
    if status != PASSED and init_error and init_error[1] not in message:  # unless it is the same error again
        message = f"{message} [the package itself failed to import: {init_error[0]}]"
    if "MemoryError" in message or "can't allocate memory" in message or "out of memory" in message:
        status, message = ERROR, f"ran out of memory (the limit is {job['memory_mb']} MB): {message}"
    if guard.reference:
        status, message = REFERENCE, f"tried to use the reference answers ({guard.reference}): {message}"
    elif guard.process and status != PASSED:
        status, message = ERROR, f"tried to start a process or send a signal ({guard.process}): {message}"
    return {"status": status, "message": _short(message)}


def _start(job: dict, setup: dict, workdir: str) -> dict:
    """Fork the child for one job; return what the parent needs to watch it."""
    out_path = os.path.join(workdir, f"{job['key']}.out")
    result_path = os.path.join(workdir, f"{job['key']}.result")
    nonce = secrets.token_hex(16)
    guard = _Guard(setup["reference_paths"], setup["reference_code_paths"], allowed=[setup["tools_dir"]])
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 70
        try:
            os.setsid()
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            result_fd = os.open(result_path, flags, 0o600)
            out_fd = os.open(out_path, flags, 0o600)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out_fd, 1)
            os.dup2(out_fd, 2)
            os.close(out_fd)
            limit_bytes = job["memory_mb"] * 1024 * 1024
            cpu = int(job["timeout_s"]) + 2
            for name, value in (("RLIMIT_AS", limit_bytes), ("RLIMIT_CPU", cpu), ("RLIMIT_CORE", 0),
                                ("RLIMIT_FSIZE", job["max_output_bytes"])):  # fmt: skip
                try:
                    resource.setrlimit(getattr(resource, name), (value, value))
                except (ValueError, OSError, AttributeError):  # e.g. RLIMIT_AS on macOS
                    pass
            os.chdir(os.path.dirname(job["package_dir"]))
            import torch

            torch.set_num_threads(1)
            try:
                result = _run_child(job, setup, guard)
            except BaseException as exc:  # noqa: BLE001
                result = {"status": ERROR, "message": _short(_describe(exc, "setting up the check"))}
            result["nonce"] = nonce
            os.write(result_fd, json.dumps(result).encode())
            code = 0
        finally:
            os._exit(code)
    return {"pid": pid, "job": job, "nonce": nonce, "out": out_path, "result": result_path,
            "start": time.monotonic(), "deadline": time.monotonic() + job["timeout_s"]}  # fmt: skip


def _finish(run: dict, wait_status: int | None) -> dict:
    """Turn a finished (or killed) child into the job's result line."""
    job, seconds = run["job"], round(time.monotonic() - run["start"], 3)
    size = os.path.getsize(run["out"]) if os.path.exists(run["out"]) else 0
    head = b""
    if size:
        with open(run["out"], "rb") as handle:
            head = handle.read(HEAD_BYTES)
    result = None
    if os.path.exists(run["result"]) and os.path.getsize(run["result"]) < 1_000_000:
        try:
            with open(run["result"], "rb") as handle:
                data = json.loads(handle.read() or b"null")
            if isinstance(data, dict) and data.get("nonce") == run["nonce"]:
                result = {"status": str(data["status"]), "message": _short(data["message"])}
        except (ValueError, KeyError, OSError):
            result = None
    limit = job["timeout_s"]
    if wait_status is None:
        result = {"status": TIMED_OUT, "message": f"still running after {limit:g} s (an infinite loop?): stopped"}
    elif result is None:
        if os.WIFSIGNALED(wait_status):
            number = os.WTERMSIG(wait_status)
            name = signal.Signals(number).name if number in signal.valid_signals() else str(number)
            if name == "SIGXCPU":
                result = {"status": TIMED_OUT, "message": f"used more than {limit:g} s of CPU time: stopped"}
            else:
                result = {"status": ERROR, "message": f"the process crashed (signal {name})"}
        else:
            code = os.WEXITSTATUS(wait_status)
            result = {
                "status": ERROR,
                "message": f"the process ended (exit status {code}) before the check finished: "
                "does the code call os._exit() or exit the interpreter?",
            }
    if size >= job["max_output_bytes"] and result["status"] != TIMED_OUT:
        kib = job["max_output_bytes"] // 1024
        result = {"status": ERROR, "message": f"printed more than {kib} KiB (the output limit): remove debug prints"}
    for path in (run["out"], run["result"]):
        if os.path.exists(path):
            os.remove(path)
    return {**result, "key": job["key"], "seconds": seconds, "output_bytes": size,
            "output_head": head.decode("utf-8", "replace")}  # fmt: skip


def _kill(pid: int) -> int | None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return os.waitpid(pid, 0)[1]


def _load_constants(setup: dict) -> None:
    """The status words and the package name, read from the course's own files (by path: this
    process never imports the course)."""
    for key in ("status_module", "course_module"):
        spec = importlib.util.spec_from_file_location(f"_course_{key}", setup[key])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        globals().update({k: v for k, v in vars(module).items() if k.isupper()})


PACKAGE = PASSED = ERROR = TIMED_OUT = REFERENCE = ""  # set by _load_constants before any job runs


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as handle:
        spec = json.load(handle)
    setup, jobs, workdir = spec["setup"], list(spec["jobs"]), spec["workdir"]
    _load_constants(setup)
    import torch  # noqa: F401 - imported once here; every child inherits it through fork
    import torch.nn.functional  # noqa: F401

    print(json.dumps({"ready": True}), flush=True)
    running: dict[int, dict] = {}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # the grader stopped: clean up below
    try:
        while jobs or running:
            while jobs and len(running) < max(1, spec.get("jobs_at_once", 1)):
                run = _start(jobs.pop(0), setup, workdir)
                running[run["pid"]] = run
            time.sleep(0.005)
            for pid, run in list(running.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    try:  # anything the child left running in its session goes too
                        os.killpg(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                    line = _finish(running.pop(pid), status)
                elif time.monotonic() > run["deadline"]:
                    _kill(pid)
                    line = _finish(running.pop(pid), None)
                else:
                    continue
                print(json.dumps(line), flush=True)
    finally:
        for pid in running:  # never leave a submission running behind us
            _kill(pid)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
