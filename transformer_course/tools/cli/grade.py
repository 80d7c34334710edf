"""``grade``: score a folder of submissions safely and write CSV, JSON and feedback."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..course import course_root
from . import CLIError


def _grade(args: argparse.Namespace) -> int:
    root = course_root("grade")
    from ..grading import grade, load_config, summary_table, write_csv, write_feedback, write_json

    config_path = args.config or (root / "grading.toml" if (root / "grading.toml").exists() else None)
    config = load_config(config_path)
    for name in ("timeout_s", "memory_mb", "jobs"):
        if getattr(args, name) is not None:
            setattr(config, name, getattr(args, name))
    if config.jobs < 1 or config.timeout_s <= 0 or config.memory_mb < 256:
        raise CLIError("--jobs must be ≥ 1, --timeout > 0 and --memory-mb ≥ 256")
    out = args.out
    if out.suffix.lower() != ".csv":
        raise CLIError(f"--out must name a .csv file, got {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        report = grade(args.submissions_dir, config, args.exercises or None, progress=not args.no_progress)
    except KeyboardInterrupt:
        print("interrupted: the submissions still running were stopped; no report written")
        return 130
    json_path = args.json or out.with_suffix(".json")
    feedback_dir = args.feedback or out.parent / "feedback"
    write_csv(report, out)
    write_json(report, json_path)
    write_feedback(report, feedback_dir)
    print(summary_table(report))
    print(
        f"graded {len(report.students)} submission(s) on {len(report.exercises)} exercise(s) in {report.seconds:.1f} s"
    )
    print(f"wrote {out}, {json_path} and {feedback_dir}/<student>.md")
    return 0


DESCRIPTION = (
    "Each sub-folder of SUBMISSIONS_DIR is one student's edited student edition (or just their transformer_course/ "
    "folder). Every exercise of every student runs in its own process with a time limit, a memory cap and an output "
    "cap. Points and limits come from grading.toml."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    summary = "grade a folder of submissions (one sub-folder per student) and write a report"
    grade = subparsers.add_parser("grade", help=summary, description=DESCRIPTION)
    grade.add_argument("submissions_dir", type=Path)
    grade.add_argument("--out", type=Path, default=Path("report.csv"), help="the CSV report (default: report.csv)")
    grade.add_argument("--json", type=Path, help="the JSON report (default: next to --out, .json)")
    grade.add_argument(
        "--feedback", type=Path, help="folder for one markdown file per student (default: feedback/ next to --out)"
    )
    grade.add_argument("--config", type=Path, help="points and limits (default: grading.toml of the course)")
    grade.add_argument(
        "--exercises", nargs="+", metavar="ID", help="grade only these exercises (default: from the config, else all)"
    )
    grade.add_argument("--timeout", dest="timeout_s", type=float, help="seconds per exercise (overrides the config)")
    grade.add_argument("--memory-mb", type=int, help="address-space cap per exercise in MB (overrides the config)")
    grade.add_argument("--jobs", type=int, help="exercises run at the same time (default 1: fair time limits)")
    grade.add_argument("--no-progress", action="store_true", help="no progress bar")
    grade.set_defaults(run=_grade)
