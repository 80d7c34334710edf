"""``restore``: in a student edition, put the worked answer of one exercise back ("I give up")."""

from __future__ import annotations

import argparse
from pathlib import Path

from transformer_course_tools.course import package_dir


def _restore(args: argparse.Namespace) -> int:
    from transformer_course_tools.exercises.checks.registry import get_exercise
    from transformer_course_tools.exercises.edition import complete_course_for, restore_exercise

    edition = package_dir().parent  # the student edition this package belongs to (checked by restore_exercise)
    for exercise_id in args.exercises:
        complete = args.complete or complete_course_for(edition, get_exercise(exercise_id).file)
        edited, backup = restore_exercise(edition, exercise_id, complete)
        print(f"{exercise_id}: worked answer copied from {complete} into {edited.relative_to(edition)} "
              f"(your version: {backup.name})")  # fmt: skip
    if args.complete is None:
        print("(From another complete copy of the course: add --from PATH.)")
    print("Re-run the notebook's cell: chapters and exercise notebooks reload the files you save.")
    return 0


DESCRIPTION = (
    "Copies the worked answer of each exercise from the complete course (by default the one this student edition "
    "was made from, which the machine that made it remembers; else the clone around the edition, or Colab's "
    "~/transformer-course) into this edition's package; your version is kept as FILE.EXERCISE.bak."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    summary = "student edition: replace your version of an exercise by its worked answer"
    restore = subparsers.add_parser("restore", help=summary, description=DESCRIPTION)
    restore.add_argument("exercises", nargs="+", metavar="EXERCISE", help="exercise ids such as ex03_2")
    restore.add_argument("--from", dest="complete", type=Path, help="a complete copy of the course (a git clone)")
    restore.set_defaults(run=_restore)
