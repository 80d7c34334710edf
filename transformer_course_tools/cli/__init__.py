"""Command line of the course: ``python -m transformer_course <command> --help``.

Each module ``cli/<name>.py`` adds its sub-commands with ``register(subparsers)``; they are
found automatically. A command's function returns the exit status. Expected user errors
(``CLIError``, ``ValueError``, ``FileNotFoundError``, a command that needs a clone of the course)
print one line and exit with status 2, and so does a learner's file that does not compile. Building
the parser imports no room of the learner's (``--help`` works whatever they saved); Ctrl-C ends a
command with one line (status 130).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from transformer_course_tools.course import NeedsClone
from transformer_course_tools.exercises.saved import said


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


LONGEST = 400  # characters of an error line: a long input is cut, never echoed whole


def quoted(text: str, limit: int = 60) -> str:
    """``text`` as a message quotes it: repr'd, and cut to its start when longer than ``limit``."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}… ({len(text):,} characters)"


def _cut(message: str) -> str:
    """One line of at most :data:`LONGEST` characters (a long input echoed by a message is cut)."""
    line = " ".join(str(message).split("\n"))
    return line if len(line) <= LONGEST else f"{line[: LONGEST - 40]} … (cut: {len(line):,} characters)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m transformer_course", description="The Transformer course.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"{__name__}.{info.name}")
        except ModuleNotFoundError as error:  # the student edition leaves grading and authoring out
            if not (error.name or "").startswith(INSTRUCTORS):
                raise
            _instructors_only(subparsers, info.name.replace("_", "-"))
            continue
        module.register(subparsers)
    return parser


INSTRUCTORS = ("transformer_course_tools.grading", "transformer_course_tools.authoring")


def _instructors_only(subparsers, name: str) -> None:
    """A command of the complete course that this edition does not hold: one line says where it is."""

    def run(args: argparse.Namespace) -> int:
        raise NeedsClone(
            f"{name} is the instructor's: the student edition does not hold it; run it in a clone of the complete "
            "course (git clone the course's repository, pip install -e ., python -m transformer_course …)"
        )

    command = subparsers.add_parser(name, help="(in the complete course only)", add_help=False)
    command.add_argument("rest", nargs=argparse.REMAINDER)
    command.set_defaults(run=run)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except (CLIError, NeedsClone, ValueError, KeyError, FileNotFoundError, PermissionError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"error: {_cut(str(message))}", file=sys.stderr)
        return 2
    except SyntaxError as error:  # a room the learner saved with a syntax error: one line, no traceback
        line = said(error, "command")
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as error:  # Ctrl-C: one line, saying what was saved where something was (train)
        print(f"{args.command}: {str(error) or 'interrupted (Ctrl-C)'}.", file=sys.stderr)
        return 130
