"""Whether the learner's saved files compile, said in one line: never a traceback.

A room saved with a syntax error reaches the learner on every path: a command (``python -m
transformer_course …``), a check (the notebook's cell, the command, ``pytest -m exNN_M``), a
chapter's cell, a chapter run as a script. Each says the same line, :func:`problem`'s
``transformer_course/attention.py does not compile (line 51: invalid syntax)``, followed by what to
do there (:data:`AGAIN`). Nothing here imports a room: the files are compiled, not run.

Standard library only (the Colab cell imports the course before anything is installed).
"""

from __future__ import annotations

from pathlib import Path

from transformer_course_tools.course import PACKAGE, package_dir

# what to do after fixing the line, where the learner is
AGAIN = {
    "command": "fix that line and save, then run the command again",
    "check": "fix that line and save, then run the check again",
    "cell": "fix that line and save, then re-run this cell",
    "pytest": "fix that line and save, then run pytest again",
    "script": "fix that line and save, then run the script again",
}


def shown(path: Path) -> str:
    """``transformer_course/attention.py`` for a file of the package; the path as it is otherwise."""
    path = Path(path).resolve()
    root = package_dir()
    return f"{PACKAGE}/{path.relative_to(root).as_posix()}" if root in path.parents else str(path)


def in_package(filename: str | None) -> bool:
    """``filename`` is one of the learner's files (a room, ``datasets/``, ``__init__.py``)."""
    return bool(filename) and package_dir() in Path(filename).resolve().parents


def error_line(error: SyntaxError, path: Path | None = None) -> str:
    """``FILE does not compile (line N: what)`` for a syntax error of ``path`` (default: the error's file)."""
    where = shown(Path(path or error.filename or "?"))
    return f"{where} does not compile (line {error.lineno}: {error.msg or 'invalid syntax'})"


def problem(path: Path) -> str | None:
    """:func:`error_line` if the file at ``path`` does not compile as it is saved, else None (also
    for a file that cannot be read: whoever imports it says why)."""
    try:
        source = Path(path).read_bytes()
    except OSError:
        return None
    try:
        compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as error:  # IndentationError and TabError too
        return error_line(error, Path(path))
    except ValueError as error:  # a NUL byte in the file
        return f"{shown(Path(path))} does not compile ({error})"
    return None


def broken_files(package: Path | None = None) -> list[str]:
    """:func:`problem` of every ``.py`` file of the learner's package that does not compile, in path order."""
    folder = package or package_dir()
    return [line for path in sorted(folder.rglob("*.py")) if (line := problem(path)) is not None]


def said(error: BaseException, where: str) -> str | None:
    """The one line for ``error`` if it is a learner's file that does not compile (``where``: one of
    :data:`AGAIN`), else None: every other error is shown as Python shows it."""
    if isinstance(error, SyntaxError) and in_package(error.filename):
        return f"{error_line(error)}: {AGAIN[where]}."
    return None
