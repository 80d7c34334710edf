"""The grading sandbox keeps each promise: every test runs a small Python program inside it.

Each isolation test runs once per mechanism (bubblewrap, util-linux unshare) and is skipped, naming
what is missing, where that mechanism does not work. When the tests run as root the job runs as
uid 65534, so the folders shown to it are made world-readable (or writable) first, as a grader must.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from transformer_course_tools.grading import sandbox

from . import sandboxes

REPO = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024


@pytest.fixture(params=["bwrap", "unshare"])
def mechanism(request: pytest.FixtureRequest) -> str:
    sandboxes.needs(request.param)
    return request.param


def python(code: str) -> list[str]:
    return [sys.executable, "-I", "-c", textwrap.dedent(code)]


def job(mechanism: str, code: str, **options) -> sandbox.Result:
    return sandbox.run(python(code), mechanism=mechanism, **options)


def report(result: sandbox.Result) -> dict:
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(result.stdout.decode().splitlines()[-1])


def shown(path: Path, *, writable: bool = False) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o777 if writable else 0o755)  # readable (writable) by the job's uid when grading as root
    return path


def host_processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass  # exited meanwhile
    return found


PROBE_PATHS = """
import errno, json, os
def look(path):
    try:
        os.listdir(path) if os.path.isdir(path) else open(path, "rb").read(1)
        return "readable"
    except FileNotFoundError:
        return "missing"
    except OSError as error:
        return errno.errorcode[error.errno]
"""


def test_only_the_allow_list_is_visible(mechanism: str, tmp_path: Path) -> None:
    course = tmp_path / "course"
    alice = shown(course / "submissions" / "alice")
    (alice / "attention.py").write_text("x = 1\n")
    shown(course / "submissions" / "bob")
    (course / "submissions" / "bob" / "attention.py").write_text("secret = 2\n")
    shown(course / "solutions")
    (course / "solutions" / "answers.py").write_text("answer = 42\n")
    hidden = [
        alice / "attention.py",  # the host path of the shown folder is not there either
        course / "submissions" / "bob" / "attention.py",
        course / "solutions" / "answers.py",
        REPO / ".git" / "HEAD",
        REPO / "solutions",
        Path("/etc/passwd"),
    ]
    code = (
        PROBE_PATHS
        + f"""
paths = {[str(p) for p in hidden]!r}
home = os.listdir({str(Path.home())!r}) if os.path.isdir({str(Path.home())!r}) else []
repo = os.listdir({str(REPO)!r}) if os.path.isdir({str(REPO)!r}) else []
print(json.dumps({{"shown": look("/submission/attention.py"), "hidden": [look(p) for p in paths],
                  "home": home, "repo": repo, "etc": os.listdir("/etc")}}))
"""
    )
    seen = report(job(mechanism, code, visible=[(alice, "/submission", False)]))
    assert seen["shown"] == "readable"
    assert seen["hidden"] == ["missing"] * len(hidden)
    # Of the home folder and of this checkout only the way to the Python installation may exist
    # (pyenv lives in the home folder here; the course's virtual environment in the checkout).
    for folder, listed in ((Path.home(), seen["home"]), (REPO, seen["repo"])):
        on_the_way = {
            Path(p).relative_to(folder).parts[0] for p in sandbox.python_paths() if Path(p).is_relative_to(folder)
        }
        assert set(listed) <= on_the_way, (folder, listed)
    assert set(seen["etc"]) <= {"ld.so.cache", "localtime"}


def test_writes_land_only_in_private_tmp_and_writable_folders(mechanism: str, tmp_path: Path) -> None:
    student = shown(tmp_path / "student")
    (student / "work.py").write_text("x = 1\n")
    out = shown(tmp_path / "out", writable=True)
    targets = ["/tmp/scratch", "/out/result.json", "/submission/work.py", "/submission/new.py", "/evil"]
    targets += ["/usr/evil", f"{sys.prefix}/evil.pth", str(tmp_path / "evil")]
    code = f"""
import errno, json
def write(path):
    try:
        with open(path, "w") as f:
            f.write("forged")
        return "written"
    except OSError as error:
        return errno.errorcode[error.errno]
print(json.dumps([write(p) for p in {targets!r}]))
"""
    outcome = report(job(mechanism, code, visible=[(student, "/submission", False), (out, "/out", True)]))
    assert outcome[:2] == ["written", "written"]
    assert all(result in ("EROFS", "EACCES", "ENOENT") for result in outcome[2:]), outcome
    assert (out / "result.json").read_text() == "forged"
    assert sorted(p.name for p in student.iterdir()) == ["work.py"]
    assert (student / "work.py").read_text() == "x = 1\n"
    assert not Path(sys.prefix, "evil.pth").exists() and not (tmp_path / "evil").exists()


def test_private_tmp_is_capped_and_private(mechanism: str) -> None:
    code = """
import errno, json, os
written, failure = 0, None
try:
    while written < 400 * 2**20:  # 400 MiB of small files
        with open(f"/tmp/f{written}", "wb") as f:
            f.write(b"x" * 65536)
        written += 65536
except OSError as error:
    failure = errno.errorcode[error.errno]
info = os.statvfs("/tmp")
print(json.dumps({"written": written, "failure": failure, "size": info.f_blocks * info.f_frsize}))
"""
    outcome = report(job(mechanism, code, tmp_mb=16))
    assert outcome["failure"] == "ENOSPC"
    assert outcome["written"] <= 16 * MIB and outcome["size"] == 16 * MIB  # in memory, not on the host disk
    listed = report(job(mechanism, "import json, os; print(json.dumps(os.listdir('/tmp')))"))
    # empty, but for the way to the Python installation when it lives under /tmp (a checkout there)
    tmp = Path("/tmp")
    on_the_way = {Path(p).relative_to(tmp).parts[0] for p in sandbox.python_paths() if Path(p).is_relative_to(tmp)}
    assert set(listed) <= on_the_way, listed


def test_there_is_no_network(mechanism: str) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    unix_name = f"\0course-sandbox-test-{uuid.uuid4().hex}"
    unix_server = socket.socket(socket.AF_UNIX)
    unix_server.bind(unix_name)
    unix_server.listen()
    code = f"""
import json, socket
def connect(family, address):
    try:
        socket.socket(family).connect(address)
        return "connected"
    except OSError as error:
        return type(error).__name__
print(json.dumps({{"tcp": connect(socket.AF_INET, ("127.0.0.1", {server.getsockname()[1]})),
                  "unix": connect(socket.AF_UNIX, {unix_name!r}),
                  "interfaces": [name for _, name in socket.if_nameindex()]}}))
"""
    with server, unix_server:
        outcome = report(job(mechanism, code))
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()
    assert outcome["tcp"] != "connected" and outcome["unix"] != "connected"
    assert outcome["interfaces"] == ["lo"]


def test_setsid_and_double_forked_processes_die_with_the_job(mechanism: str, tmp_path: Path) -> None:
    out = shown(tmp_path / "out", writable=True)
    marker = f"daemon-{uuid.uuid4().hex}"
    code = f"""
import os, time  # {marker}
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:  # a daemon: its own session, parent gone
        open("/out/started", "w").close()
        time.sleep(0.8)
        open("/out/survived", "w").close()
    os._exit(0)
time.sleep(0.3)
"""
    result = job(mechanism, code, visible=[(out, "/out", True)])
    assert result.ok, result.stderr
    assert host_processes_with(marker) == []
    time.sleep(1.0)
    assert (out / "started").exists() and not (out / "survived").exists()


def test_the_graders_own_stdout_is_out_of_reach(mechanism: str) -> None:
    code = f"""
import json, os
def attempt(action):
    try:
        action()
        return "done"
    except OSError as error:
        return type(error).__name__
print(json.dumps({{"write": attempt(lambda: open("/proc/{os.getpid()}/fd/1", "w").write("forged")),
                  "signal": attempt(lambda: os.kill({os.getpid()}, 0)),
                  "pids": [int(p) for p in os.listdir("/proc") if p.isdigit()]}}))
"""
    outcome = report(job(mechanism, code))
    assert outcome["write"] == "FileNotFoundError" and outcome["signal"] == "ProcessLookupError"
    assert max(outcome["pids"]) < 10  # only the job's own namespace is visible


def test_memory_limit(mechanism: str) -> None:
    result = job(mechanism, "block = bytearray(1024 * 2**20)", memory_mb=256)
    assert result.returncode != 0 and b"MemoryError" in result.stderr


def test_a_fork_bomb_is_contained(mechanism: str) -> None:
    marker = f"bomb-{uuid.uuid4().hex}"
    code = f"""
import errno, json, os, time  # {marker}
started = 0
try:
    while started < 500:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        started += 1
except OSError as error:
    print(json.dumps({{"started": started, "error": errno.errorcode[error.errno]}}))
"""
    outcome = report(job(mechanism, code, max_processes=16))
    assert outcome["error"] == "EAGAIN" and outcome["started"] < 16
    assert host_processes_with(marker) == []


def test_wall_clock_timeout_kills_everything(mechanism: str) -> None:
    marker = f"sleeper-{uuid.uuid4().hex}"
    code = f"""
import os, time  # {marker}
if os.fork() == 0:
    os.setsid()
time.sleep(60)
"""
    result = job(mechanism, code, timeout_s=1)
    assert result.timed_out and not result.ok and "wall-clock" in result.killed_reason
    assert result.seconds < 5
    assert host_processes_with(marker) == []


def test_file_size_limit_and_capped_output(mechanism: str) -> None:
    code = """
import errno, sys
try:
    open("/tmp/big", "wb").write(b"x" * (2 * 2**20))
except OSError as error:
    print(errno.errorcode[error.errno])
sys.stdout.flush()
sys.stderr.write("e" * 5000)
"""
    result = job(mechanism, code, max_file_mb=1, output_limit_bytes=1000)
    assert result.stdout == b"EFBIG\n"  # Python ignores SIGXFSZ, so the write fails instead
    assert result.truncated and result.stderr == b"e" * 1000


def test_torch_imports_and_computes(mechanism: str) -> None:
    code = """
import json, torch
x = torch.arange(6.0).reshape(2, 3)
print(json.dumps((x @ x.T).tolist()))
"""
    assert report(job(mechanism, code, timeout_s=120)) == [[5.0, 14.0], [14.0, 50.0]]


def test_the_graders_environment_is_not_passed(mechanism: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COURSE_SECRET_TOKEN", "hunter2")
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    seen = report(job(mechanism, code, env={"CHAPTER": "03"}))
    assert "COURSE_SECRET_TOKEN" not in seen and seen["CHAPTER"] == "03" and seen["HOME"] == "/tmp"


def test_a_sandbox_that_cannot_be_built_is_an_error_not_a_result(mechanism: str, tmp_path: Path) -> None:
    folder = shown(tmp_path / "folder")
    with pytest.raises(sandbox.SandboxError, match="did not start"):
        job(mechanism, "pass", visible=[(folder, f"{sys.prefix}/not-there", False)])  # inside read-only Python
    missing = sandbox.run(["/no/such/program"], mechanism=mechanism)
    assert missing.returncode == 127 and not missing.ok


def test_without_a_sandbox_limits_still_apply_and_it_says_so(tmp_path: Path) -> None:
    support = sandbox.probe("none")
    assert not support.isolated and support.description.startswith("NOT sandboxed")
    assert "\n" not in support.description
    assert job("none", "print('hello')").stdout == b"hello\n"
    slow = job("none", "import time; time.sleep(60)", timeout_s=1)
    assert slow.timed_out and slow.seconds < 5
    big = job("none", "block = bytearray(1024 * 2**20)", memory_mb=256)
    assert big.returncode != 0 and b"MemoryError" in big.stderr
    with pytest.raises(sandbox.SandboxError, match="a sandbox is required"):
        job("none", "pass", require_isolation=True)
    with pytest.raises(sandbox.SandboxError, match="cannot be shown"):
        job("none", "pass", visible=[(tmp_path, "/submission", False)])


def test_probe_names_one_mechanism_in_one_line() -> None:
    support = sandbox.probe()
    assert support.mechanism in sandbox.MECHANISMS and "\n" not in support.description
    assert support.isolated == (support.mechanism != "none")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"argv": []}, "argv must be"),
        ({"argv": "python -c 1"}, "argv must be"),
        ({"timeout_s": float("nan")}, "timeout_s must be"),
        ({"timeout_s": -1}, "timeout_s must be"),
        ({"memory_mb": 0}, "memory_mb must be"),
        ({"max_processes": True}, "max_processes must be"),
        ({"visible": [("/no/such/folder", "/x", False)]}, "does not exist"),
        ({"visible": [("/tmp", "relative", False)]}, "must be absolute"),
        ({"visible": [("/tmp", "/proc/x", False)]}, "reserved"),
        ({"visible": [("/tmp", "/x", "yes")]}, "writable must be"),
        ({"stdin": "some text"}, "stdin must be"),
        ({"mechanism": "docker"}, "mechanism must be"),
    ],
)
def test_bad_arguments_fail_with_one_line(arguments: dict, message: str) -> None:
    call = {"argv": ["true"], "mechanism": "none"} | arguments
    with pytest.raises((ValueError, TypeError), match=message) as caught:
        sandbox.run(call.pop("argv"), **call)
    assert "\n" not in str(caught.value)


def test_stdin_data_reaches_the_job(tmp_path: Path) -> None:
    support = sandbox.probe()
    code = "import sys; print(sys.stdin.read().upper())"
    assert job(support.mechanism, code, stdin=b"tokens").stdout == b"TOKENS\n"
    (tmp_path / "input.txt").write_text("from a file")
    assert job(support.mechanism, code, stdin=tmp_path / "input.txt").stdout == b"FROM A FILE\n"
