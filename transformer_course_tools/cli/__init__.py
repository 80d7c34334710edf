"""Command line of the course: ``python -m transformer_course <command> --help``.

Each module ``cli/<name>.py`` adds its sub-commands with ``register(subparsers)``; they are
found automatically. A command's function returns the exit status. Expected user errors
(``CLIError``, ``ValueError``, ``FileNotFoundError``, a command that needs a clone of the course)
print one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from transformer_course_tools.course import NeedsClone


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m transformer_course", description="The Transformer course.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except (CLIError, NeedsClone, ValueError, KeyError, FileNotFoundError, PermissionError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"error: {message}", file=sys.stderr)
        return 2
