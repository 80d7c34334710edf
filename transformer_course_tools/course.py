"""Where the course lives: its public repository, and a clone of it on this machine.

Most of the course works from any install of the package (``pip install .``, ``pip install
git+URL``, Colab): the chapters, ``check``, ``train``, ``evaluate``, ``translate``. A few commands
work on the course's *repository* instead (its notebooks, its worked solutions): making the
student edition, regenerating ``exercises/``, grading. :func:`course_root` finds that repository,
or says in one line how to get it.
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

PACKAGE = "transformer_course"  # the name of the learner's package, in every edition
TOOLS = "transformer_course_tools"  # the course's side: this package
REPOSITORY_URL = "https://github.com/transformer-course/transformer-course"  # the one place this URL is written

# What makes a folder the course's repository: the package next to the chapters and the worked solutions.
_MARKERS = ("pyproject.toml", "chapters", "solutions", PACKAGE)


class NeedsClone(RuntimeError):
    """A command needs the course's repository, and this installation is not inside one."""


def package_dir() -> Path:
    """The folder of the learner's package, the ``transformer_course`` that Python imports (found
    without importing it); the one beside this package where Python finds none."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is not None and spec.origin is not None:
        return Path(spec.origin).resolve().parent
    return tools_dir().parent / PACKAGE


def tools_dir() -> Path:
    """The folder of this package, ``transformer_course_tools``."""
    return Path(__file__).resolve().parent


def find_course_root() -> Path | None:
    """The repository holding the running package (an editable install or a checkout), or None
    (a plain ``pip install``: the package sits in site-packages, without the course around it)."""
    root = package_dir().parent
    return root if all((root / marker).exists() for marker in _MARKERS) else None


def course_root(command: str) -> Path:
    """The course's repository, or :class:`NeedsClone` naming ``command`` and how to get a clone."""
    root = find_course_root()
    if root is None:
        raise NeedsClone(
            f"{command} needs a clone of the course (this transformer_course is installed in "
            f"{package_dir().parent}): git clone {REPOSITORY_URL} && cd transformer-course && "
            f"pip install -e . && python -m {PACKAGE} {command} …"
        )
    return root


# What the student edition leaves out: the solutions, the machinery that proves the checks, the
# instructor's own files (``instructor/``: the hidden cases that grading.toml may name), and the course's
# grading and authoring code (a learner checks exercises; grading a class and making the course are not theirs).
INSTRUCTORS = (f"{TOOLS}/grading", f"{TOOLS}/authoring")
EXCLUDED = ("solutions", "tests/attempts", "tests/test_attempts.py", ".git", ".venv", ".venv-oldest", "student-edition",
            "instructor", *INSTRUCTORS)  # fmt: skip
# Never copied, whatever git says (compiled solutions, editor checkpoints, caches).
JUNK = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".ruff_cache", ".mypy_cache"}


def course_files(root: Path) -> list[Path]:
    """The files of the course at ``root`` (relative) that a student edition ships: git's list where
    there is one (ignored files left out), else every file."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=root, capture_output=True, text=True, check=True,
        ).stdout.splitlines()  # fmt: skip
        files = [Path(p) for p in listed]
    except (OSError, subprocess.CalledProcessError):
        files = [p.relative_to(root) for p in root.rglob("*") if p.is_file()]
    return [f for f in files if shipped(f) and (root / f).is_file()]


def shipped(f: Path) -> bool:
    """The student edition holds file ``f`` (relative to the course) when the course does."""
    posix = f.as_posix()
    if any(posix == e or posix.startswith(e + "/") for e in EXCLUDED):
        return False
    return not (JUNK & set(f.parts) or f.suffix in {".pyc", ".pyo"} or any(p.endswith(".egg-info") for p in f.parts))


def room_files(package_dir: Path) -> list[Path]:
    """The learner's files: every ``.py`` file of the package (its rooms and ``datasets/``)."""
    return sorted(package_dir.rglob("*.py"))
