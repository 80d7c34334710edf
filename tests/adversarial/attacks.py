"""Submissions that try to cheat or to harm, one per attack seen against the first grader.

:func:`write_attacks` writes them (and a classmate, ``bystander``, with a correct package) into a
folder and returns what each must get. Most attack ``attention_scores`` (ex03_1): its code is
replaced by code that does not compute the scores, plus the attack, so that every point an attack
gets is a point it did not earn. ``always_equal_list`` attacks ``Vocab.encode`` (ex01_1).

An expectation is ``(status, a piece of the message)`` per mode: ``"sandbox"`` (bubblewrap or
unshare) and ``"none"`` (no sandbox: the audit hook only); ``None`` where that mode does not
protect against the attack (it is then not run in that mode; the README says so).
"""

from __future__ import annotations

import os
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

from . import PACKAGE, _replace_function

ZEROS = "return torch.zeros(*q.shape[:-1], k.shape[-2])  # not the scores\n"
SIGNATURE = "def attention_scores(q, k):\n"


@dataclass(frozen=True)
class Attack:
    name: str
    what: str  # the attack, in the words of the issue
    exercise: str  # the exercise it targets
    sandbox: tuple[str, str]  # expected (status, message part) with a sandbox
    none: tuple[str, str] | None  # ... without one (None: not protected there, not run)


def attacks() -> list[Attack]:
    failed_values = ("failed", "wrong value")
    return [
        Attack("patch_allclose", "patch torch.allclose/equal/Tensor.all/any at import", "ex03_1", failed_values,
               failed_values),
        Attack("replace_runner", "replace the runner's _run_check and the registry", "ex03_1", failed_values,
               failed_values),
        Attack("lying_tensor", "a tensor subclass whose comparisons lie", "ex03_1", failed_values, failed_values),
        Attack("always_equal_list", "a list subclass whose __eq__ is always true (ex01_1)", "ex01_1",
               ("failed", "got AlwaysEqual"), ("failed", "got AlwaysEqual")),
        Attack("stack_result_channel", "walk the stack to the result channel and write 'passed'", "ex03_1",
               ("error", "result channel"), ("error", "result channel")),
        Attack("want_from_frame", "read `want` from the caller's frame", "ex03_1", failed_values, failed_values),
        Attack("reference_helpers", "call the checks' reference helpers and stand-ins", "ex03_1",
               ("failed", "No module named 'transformer_course_tools'"),
               ("failed", "No module named 'transformer_course_tools'")),
        Attack("read_dir_fd", "read the answers with os.open(dir_fd=...)", "ex03_1",
               ("failed", "FileNotFoundError"), ("reference import", "reading")),
        Attack("read_link", "read the answers through os.link", "ex03_1", ("failed", "FileNotFoundError"),
               ("error", "os.link")),
        Attack("read_ctypes", "read the answers with ctypes' open", "ex03_1", ("failed", "ctypes open failed"),
               ("error", "ctypes.dlopen")),
        Attack("read_git_pack", "read the answers from .git's pack", "ex03_1", ("failed", "FileNotFoundError"),
               ("reference import", ".git")),
        Attack("other_copy", "read the answers from another copy of the course", "ex03_1",
               ("failed", "FileNotFoundError"), None),
        Attack("classmate_folder", "read a classmate's folder", "ex03_1", ("failed", "FileNotFoundError"),
               ("reference import", "bystander")),
        Attack("guard_off", "switch the guard off, then read the answers", "ex03_1",
               ("failed", "FileNotFoundError"), ("reference import", "reading")),
        Attack("fork_setsid", "fork() + setsid() child rewriting the report later", "ex03_1", failed_values,
               ("error", "os.fork")),
        Attack("proc_fd_write", "write into /proc/<pid>/fd/N of other processes and its own", "ex03_1",
               failed_values, ("error", "/proc/")),
        Attack("classmate_write", "import-time write into a classmate's attention.py", "ex03_1", failed_values,
               ("error", "writing")),
        Attack("instructor_write", "write into the instructor's checks/ and a .pth in the venv", "ex03_1",
               failed_values, ("error", "writing")),
        Attack("disk_filler", "400 MiB of small files", "ex03_1", ("failed", "No space left on device"), None),
        Attack("exception_leak", "exception messages and prints carrying solution code", "ex03_1",
               ("failed", "RuntimeError"), ("failed", "RuntimeError")),
        Attack("symlink_file", "a package file that is a link to the instructor's solution", "ex03_1",
               ("error", "is a symbolic link"), ("error", "is a symbolic link")),
        Attack("symlink_classmate", "a package folder that is a link to a classmate's", "ex03_1",
               ("error", "is a symbolic link"), ("error", "is a symbolic link")),
        Attack("too_many_files", "a package of thousands of small files", "ex03_1", ("error", "larger than the caps"),
               ("error", "larger than the caps")),
    ]  # fmt: skip


def _attack_code(name: str, paths: dict[str, str]) -> tuple[str, str]:
    """(module-level code appended to attention.py, new body of attention_scores) for an attack."""
    root, answers = paths["root"], os.path.join(paths["root"], PACKAGE, "attention.py")
    run_answers = (
        "namespace = {}\n"
        "exec(compile(source.replace('from ._validate', 'from transformer_course._validate'), 'answers', 'exec'),"
        " namespace)\n"
        "return namespace['attention_scores'](q, k)\n"
    )
    read_file = f"with open({answers!r}) as handle:\n    source = handle.read()\n"
    code = {
        "patch_allclose": (
            "torch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True\n"
            "torch.isclose = lambda a, b, *x, **k: torch.ones_like(a, dtype=torch.bool)\n"
            "torch.Tensor.all = lambda self, *a, **k: torch.tensor(True)\n"
            "torch.Tensor.any = lambda self, *a, **k: torch.tensor(False)\n",
            ZEROS,
        ),
        "replace_runner": (
            "try:\n"
            "    from transformer_course_tools.exercises.checks import registry, runner\n"
            "    runner._run_check = lambda i, impl=None: runner.CheckResult(i, '', 'passed', '9 cases')\n"
            "    for key in list(registry.EXERCISES):\n"
            "        registry.EXERCISES[key] = None\n"
            "except Exception as error:\n"
            "    print('could not replace the runner:', error)\n"
            "try:\n"
            "    import _course_probe.calls as calls\n"
            "    calls.run_case = lambda impl, spec: {'status': 'passed'}\n"
            "except Exception as error:\n"
            "    print('could not replace the probe:', error)\n",
            ZEROS,
        ),
        "lying_tensor": (
            "class Liar(torch.Tensor):\n"
            "    @classmethod\n"
            "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
            "        if getattr(func, '__name__', '') in ('allclose', 'equal', 'eq', '__eq__', 'isclose', 'all'):\n"
            "            return True\n"
            "        return super().__torch_function__(func, types, args, kwargs or {})\n",
            "return torch.zeros(*q.shape[:-1], k.shape[-2]).as_subclass(Liar)\n",
        ),
        "stack_result_channel": (
            "",
            "import os, sys\n"
            "frame = sys._getframe()\n"
            "while frame is not None:\n"
            "    for name, value in list(frame.f_locals.items()):\n"
            "        if type(value) is int and 'fd' in name:\n"
            "            try:\n"
            '                os.write(value, b\'{"status": "passed"}\\n\')\n'
            "            except OSError:\n"
            "                pass\n"
            "    frame = frame.f_back\n"
            "for fd in range(3, 64):\n"
            "    try:\n"
            "        os.write(fd, b'passed\\n')\n"
            "    except OSError:\n"
            "        pass\n" + ZEROS,
        ),
        "want_from_frame": (
            "",
            "import sys\nframe = sys._getframe(1)\n"
            "while frame is not None:\n"
            "    for name in ('want', 'wanted', 'expected', 'reference'):\n"
            "        value = frame.f_locals.get(name)\n"
            "        if isinstance(value, torch.Tensor) and value.shape == (*q.shape[:-1], k.shape[-2]):\n"
            "            return value\n"
            "    frame = frame.f_back\n" + ZEROS,
        ),
        "reference_helpers": (
            "",
            "import importlib\nerrors = []\n"
            "for name in ('transformer_course_tools.exercises.checks.standins', 'transformer_course_tools.exercises.checks.ch03'):\n"
            "    try:\n"
            "        return importlib.import_module(name).attention_scores(q, k)\n"
            "    except Exception as error:\n"
            "        errors.append(f'{type(error).__name__}: {error}')\n"
            "raise ImportError('; '.join(errors))\n",
        ),
        "read_dir_fd": (
            "",
            f"import os\nfolder = os.open({root!r}, os.O_RDONLY | os.O_DIRECTORY)\n"
            f"fd = os.open({PACKAGE + '/attention.py'!r}, os.O_RDONLY, dir_fd=folder)\n"
            "source = os.read(fd, 10**6).decode()\n" + run_answers,
        ),
        "read_link": (
            "",
            f"import os, tempfile\nlinked = os.path.join(tempfile.gettempdir(), 'answers.py')\nos.link({answers!r}, linked)\n"
            "with open(linked) as handle:\n    source = handle.read()\n" + run_answers,
        ),
        "read_ctypes": (
            "",
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            f"fd = libc.open({answers.encode()!r}, 0)\n"
            "if fd < 0:\n    raise OSError(ctypes.get_errno(), 'ctypes open failed')\n"
            "buffer = ctypes.create_string_buffer(10**6)\nsource = buffer.raw[: libc.read(fd, buffer, 10**6)].decode()\n"
            + run_answers,
        ),
        "read_git_pack": (
            "",
            "import os, zlib\nsource = None\n"
            f"for folder, _, names in os.walk(os.path.join({root!r}, '.git', 'objects')):\n"
            "    for name in names:\n"
            "        with open(os.path.join(folder, name), 'rb') as handle:\n"
            "            data = handle.read()\n"
            "        for start in [i for i in range(len(data)) if data[i] == 0x78][:20000]:\n"
            "            try:\n"
            "                text = zlib.decompressobj().decompress(data[start : start + 200000])\n"
            "            except zlib.error:\n"
            "                continue\n"
            "            if b'def attention_scores' in text and b'### BEGIN SOLUTION' in text:\n"
            "                source = text[text.index(b'\"\"\"'):].decode(errors='replace')\n"
            f"if source is None:\n    raise FileNotFoundError({root + '/.git'!r})\n" + run_answers,
        ),
        "other_copy": ("", read_file.replace(paths["root"], paths["other_copy"]) + run_answers),
        "classmate_folder": (
            "",
            f"with open({os.path.join(paths['submissions'], 'bystander', PACKAGE, 'attention.py')!r}) as handle:\n"
            "    source = handle.read()\n" + run_answers,
        ),
        "guard_off": (
            "import gc\n"
            "for thing in gc.get_objects():\n"
            "    if 'guard' in type(thing).__name__.lower():\n"
            "        for attribute in ('_busy', '_rules', 'forbidden'):\n"
            "            try:\n"
            "                setattr(thing, attribute, True if attribute == '_busy' else ())\n"
            "            except Exception:\n"
            "                pass\n",
            read_file + run_answers,
        ),
        "fork_setsid": (
            "import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    time.sleep(4)\n"
            "    try:\n"
            f"        with open({paths['report']!r}, 'w') as handle:\n"
            "            handle.write('student,ex03_1,total,max_points,percent\\nfork_setsid,1,1,1,100.0\\n')\n"
            "    finally:\n"
            "        os._exit(0)\n",
            ZEROS,
        ),
        "proc_fd_write": (
            "import os\n"
            "for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
            "    for fd in range(64):\n"
            "        try:\n"
            "            with open(f'/proc/{pid}/fd/{fd}', 'w') as handle:\n"
            '                handle.write(\'{"key": "0-ex03_1", "status": "passed"}\\n\')\n'
            "        except OSError:\n"
            "            pass\n",
            ZEROS,
        ),
        "classmate_write": (
            "try:\n"
            f"    with open({os.path.join(paths['submissions'], 'bystander', PACKAGE, 'attention.py')!r}, 'a') as h:\n"
            "        h.write('\\nattention_scores = lambda q, k: q.sum()  # broken by a classmate\\n')\n"
            "except OSError as error:\n"
            "    print('could not write into the classmate\\'s folder:', error)\n",
            ZEROS,
        ),
        "instructor_write": (
            f"for target in ({paths['checks']!r}, {paths['pth']!r}):\n"
            "    try:\n"
            "        with open(target, 'a') as handle:\n"
            "            handle.write('\\n# written by a submission\\n')\n"
            "    except OSError as error:\n"
            "        print('could not write', target, error)\n",
            ZEROS,
        ),
        "disk_filler": (
            "",
            "import os, tempfile\n"
            f"folder = os.path.join(tempfile.gettempdir(), {paths['filler']!r})\nos.makedirs(folder, exist_ok=True)\n"
            "chunk = b'x' * 10240\n"
            "for i in range(40960):  # 400 MiB in 10 KiB files\n"
            "    try:\n"
            "        with open(os.path.join(folder, f'{i}.bin'), 'wb') as handle:\n"
            "            handle.write(chunk)\n"
            "    except OSError as error:\n"
            "        raise OSError(f'stopped after {i} files: {error}') from None\n" + ZEROS,
        ),
        "exception_leak": (
            "",
            f"print({paths['solution_line']!r})\nraise RuntimeError('the answer is ' + {paths['solution_line']!r})\n",
        ),
    }
    return code[name]


ALWAYS_EQUAL = """

class AlwaysEqual(list):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False


def _encode(self, tokens, add_bos=False, add_eos=False):
    return AlwaysEqual()


Vocab.encode = _encode
"""


def write_attacks(dest: Path, course_root: Path, paths: dict[str, str]) -> dict[str, Attack]:
    """Write every attack (and ``bystander``) into ``dest``; ``paths`` names the places the attacks
    aim at (root, submissions, report, other_copy, checks, pth, filler, solution_line)."""
    package = course_root / PACKAGE
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(package, dest / "bystander" / PACKAGE, ignore=ignore)
    found = {}
    for attack in attacks():
        found[attack.name] = attack
        target = dest / attack.name / PACKAGE
        if attack.name == "symlink_classmate":
            target.parent.mkdir(parents=True)
            target.symlink_to(dest / "bystander" / PACKAGE)
            continue
        shutil.copytree(package, target, ignore=ignore)
        if attack.name == "always_equal_list":
            with open(target / "vocab.py", "a", encoding="utf-8") as handle:
                handle.write(ALWAYS_EQUAL)
        elif attack.name == "symlink_file":
            (target / "attention.py").unlink()
            (target / "attention.py").symlink_to(package / "attention.py")
        elif attack.name == "too_many_files":
            (target / "notes").mkdir()
            for i in range(2100):
                (target / "notes" / f"{i}.txt").write_text("x")
        else:
            prelude, body = _attack_code(attack.name, paths)
            _replace_function(target / "attention.py", "attention_scores", SIGNATURE + textwrap.indent(body, "    "))
            with open(target / "attention.py", "a", encoding="utf-8") as handle:
                handle.write("\n\n" + prelude)
    return found


# -- attacks on the warm worker: one Python per student, a fresh child per exercise ---------------------

WORKER_EXERCISES = ("ex03_1", "ex03_3")  # graded in this order, by one worker per student
BROKEN_ATTENTION = "return torch.zeros_like(v), torch.zeros(*q.shape[:-1], k.shape[-2])  # not attention\n"
ATTENTION_SIGNATURE = "def scaled_dot_product_attention(q, k, v, mask=None, dropout_p=0.0):\n"


@dataclass(frozen=True)
class WorkerAttack:
    """An attack run by the ex03_1 child (in ``attention_scores``) on what the worker shares with
    it; expected (status, message part) per exercise, with a sandbox and without one (the audit
    hook then refuses the attack's first step). ex03_3 is correct unless ``breaks_ex03_3``: an
    attack that hurt the worker would show as a wrong verdict on it."""

    name: str
    what: str
    sandbox: dict[str, tuple[str, str]]
    none: dict[str, tuple[str, str]]
    breaks_ex03_3: bool = False


def worker_attacks() -> list[WorkerAttack]:
    passed = ("passed", "cases")
    return [
        WorkerAttack("ptrace_worker", "ptrace the worker (the child's parent): attach and seize",
                     {"ex03_1": ("failed", "ptrace of the worker refused"), "ex03_3": passed},
                     {"ex03_1": ("error", "ctypes.dlopen"), "ex03_3": passed}),
        WorkerAttack("worker_memory", "write the worker's memory, descriptors and environment through /proc",
                     {"ex03_1": ("failed", "the worker is out of reach"), "ex03_3": passed},
                     {"ex03_1": ("error", "/proc/"), "ex03_3": passed}),
        WorkerAttack("worker_files", "write into the worker's code, settings and inbox",
                     {"ex03_1": ("failed", "the worker's files are read-only"), "ex03_3": passed},
                     {"ex03_1": ("error", "writing"), "ex03_3": passed}),
        WorkerAttack("never_exits", "a child that never exits, leaving a setsid() process killing every later one",
                     {"ex03_1": ("timed out", "still running"), "ex03_3": passed},
                     {"ex03_1": ("error", "os.fork"), "ex03_3": passed}),
        WorkerAttack("forge_later", "forge the worker's answer for the next exercise, now and from a process left "
                     "behind", {"ex03_1": ("error", "result channel"), "ex03_3": ("failed", "")},
                     {"ex03_1": ("error", "result channel"), "ex03_3": ("failed", "")}, breaks_ex03_3=True),
        WorkerAttack("kill_worker", "SIGKILL the worker",
                     {"ex03_1": ("error", "the grading worker ended"), "ex03_3": passed},
                     {"ex03_1": ("error", "os.kill"), "ex03_3": passed}),
        WorkerAttack("stop_worker", "SIGSTOP the worker, so that it never answers",
                     {"ex03_1": ("error", "stopped answering"), "ex03_3": passed},
                     {"ex03_1": ("error", "os.kill"), "ex03_3": passed}),
    ]  # fmt: skip


def _worker_attack_code(name: str) -> str:
    """The body of ``attention_scores`` (run by the ex03_1 child) for an attack on the worker."""
    forged_answer = (
        "forged = json.dumps({'nonce': '0' * 32, 'returncode': 0, 'timed_out': False, 'seconds': 0.1,\n"
        "                     'result_bytes': 0, 'printed_bytes': 0, 'head_bytes': 0}).encode() + b'\\n'\n"
        "def spray():\n"
        "    for fd in range(64):\n"
        "        try:\n"
        "            os.write(fd, forged)\n"
        "        except OSError:\n"
        "            pass\n"
        "    for pid in [p for p in os.listdir('/proc') if p.isdigit()]:\n"
        "        for fd in range(16):\n"
        "            try:\n"
        "                with open(f'/proc/{pid}/fd/{fd}', 'wb') as handle:\n"
        "                    handle.write(forged)\n"
        "            except OSError:\n"
        "                pass\n"
    )
    code = {
        "ptrace_worker": (
            "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]\n"
            "refused = []\n"
            "for request, name in ((16, 'PTRACE_ATTACH'), (0x4206, 'PTRACE_SEIZE')):\n"
            "    if libc.ptrace(request, os.getppid(), None, None) != 0:\n"
            "        refused.append(f'{name}: errno {ctypes.get_errno()}')\n"
            "if len(refused) == 2:\n"
            "    raise PermissionError('ptrace of the worker refused: ' + '; '.join(refused))\n"
            "raise RuntimeError(f'ptrace of the worker succeeded ({refused})')\n"
        ),
        "worker_memory": (
            "import os\nppid, refused = os.getppid(), []\n"
            "for path, mode in ((f'/proc/{ppid}/mem', 'r+b'), (f'/proc/{ppid}/fd/1', 'wb'),\n"
            "                   (f'/proc/{ppid}/environ', 'rb')):\n"
            "    try:\n"
            "        with open(path, mode) as handle:\n"
            "            handle.read(1) if mode == 'rb' else handle.write(b'passed')\n"
            "    except OSError as error:\n"
            "        refused.append(f'{path}: {type(error).__name__}')\n"
            "if len(refused) == 3:\n"
            "    raise PermissionError('the worker is out of reach: ' + '; '.join(refused))\n"
            "raise RuntimeError(f'reached the worker ({refused})')\n"
        ),
        "worker_files": (
            "import os, sys\ncourse, job = sys.argv[1], sys.argv[3]\n"
            "targets = [os.path.join(course, '_course_probe', 'worker.py'), os.path.join(job, 'worker.json'),\n"
            "           os.path.join(job, 'inbox', 'job.json'), os.path.join(job, 'inbox', 'cases.pt'),\n"
            "           os.path.join(job, 'inbox', 'next.json')]\n"
            "refused = []\n"
            "for target in targets:\n"
            "    try:\n"
            "        with open(target, 'a') as handle:\n"
            "            handle.write('\\n# written by a submission\\n')\n"
            "    except OSError as error:\n"
            "        refused.append(type(error).__name__)\n"
            "if len(refused) == len(targets):\n"
            '    raise PermissionError(f"the worker\'s files are read-only: {refused}")\n'
            'raise RuntimeError(f"wrote into the worker\'s files ({refused})")\n'
        ),
        "never_exits": (
            "import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    present = set(os.listdir('/proc'))\n"
            "    while True:  # kill every process that starts after this one: the next exercise's child\n"
            "        for pid in [p for p in os.listdir('/proc') if p.isdigit() and p not in present]:\n"
            "            try:\n"
            "                os.kill(int(pid), 9)\n"
            "            except OSError:\n"
            "                pass\n"
            "        time.sleep(0.01)\n"
            "while True:\n"
            "    pass\n"
        ),
        "forge_later": (
            "import json, os, time\n" + forged_answer + "spray()\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    for _ in range(3000):\n"
            "        spray()\n"
            "        time.sleep(0.01)\n"
            "    os._exit(0)\n" + ZEROS
        ),
        "kill_worker": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n" + ZEROS,
        "stop_worker": "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n" + ZEROS,
    }
    return code[name]


def write_worker_attacks(dest: Path, course_root: Path) -> dict[str, WorkerAttack]:
    """Write every attack on the worker (and ``bystander``, correct) into ``dest``."""
    package = course_root / PACKAGE
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(package, dest / "bystander" / PACKAGE, ignore=ignore)
    found = {}
    for attack in worker_attacks():
        found[attack.name] = attack
        target = dest / attack.name / PACKAGE
        shutil.copytree(package, target, ignore=ignore)
        body = textwrap.indent(_worker_attack_code(attack.name), "    ")
        _replace_function(target / "attention.py", "attention_scores", SIGNATURE + body)
        if attack.breaks_ex03_3:
            _replace_function(target / "attention.py", "scaled_dot_product_attention",
                              ATTENTION_SIGNATURE + textwrap.indent(BROKEN_ATTENTION, "    "))  # fmt: skip
    return found
