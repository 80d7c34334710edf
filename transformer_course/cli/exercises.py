"""``check``, ``build-exercises`` and ``student-edition``."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import ROOT


def _check(args: argparse.Namespace) -> int:
    from ..checks import run_checks

    results = run_checks(args.exercises or None)
    width = max(len(r.title) for r in results)
    for r in results:
        print(f"{r.id:7} {r.title:{width}}  {r.status:15}  {r.message}")
    passed = sum(r.passed for r in results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


def _build_exercises(args: argparse.Namespace) -> int:
    from ..edition import write_exercises

    for path in write_exercises(ROOT / "solutions", ROOT / "exercises"):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


def _student_edition(args: argparse.Namespace) -> int:
    from ..edition import build_student_edition

    print(f"student edition written to {build_student_edition(ROOT, args.out_dir)}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    check = subparsers.add_parser("check", help="run the exercise checks and print a table")
    check.add_argument("exercises", nargs="*", help="exercise ids such as ex03_1 (default: all)")
    check.set_defaults(run=_check)
    build = subparsers.add_parser("build-exercises", help="regenerate exercises/ from solutions/")
    build.set_defaults(run=_build_exercises)
    edition = subparsers.add_parser("student-edition", help="write the student edition of the course")
    edition.add_argument("out_dir", type=Path)
    edition.set_defaults(run=_student_edition)
