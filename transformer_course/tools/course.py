"""Where the course lives: its public repository, and a clone of it on this machine.

Most of the course works from any install of the package (``pip install .``, ``pip install
git+URL``, Colab): the chapters, ``check``, ``train``, ``evaluate``, ``translate``. A few commands
work on the course's *repository* instead (its notebooks, its worked solutions): making the
student edition, regenerating ``exercises/``, grading. :func:`course_root` finds that repository,
or says in one line how to get it.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = "transformer_course"  # the name of the learner's package, in every edition
REPOSITORY_URL = "https://github.com/transformer-course/transformer-course"  # the one place this URL is written

# What makes a folder the course's repository: the package next to the chapters and the worked solutions.
_MARKERS = ("pyproject.toml", "chapters", "solutions", PACKAGE)


class NeedsClone(RuntimeError):
    """A command needs the course's repository, and this installation is not inside one."""


def package_dir() -> Path:
    """The folder of the ``transformer_course`` package that is running."""
    return Path(__file__).resolve().parent.parent


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
