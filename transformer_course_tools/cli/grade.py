"""``grade``: score a folder of submissions safely and write CSV, JSON and feedback."""

from __future__ import annotations

import argparse
import math
from datetime import datetime
from pathlib import Path

from transformer_course_tools.course import course_root
from transformer_course_tools.grading.sandbox import MECHANISMS, SandboxError

from . import CLIError


def _grade(args: argparse.Namespace) -> int:
    root = course_root("grade")
    from transformer_course_tools import grading
    from transformer_course_tools.grading import written

    config_path = args.config or (root / "grading.toml" if (root / "grading.toml").exists() else None)
    config = grading.load_config(config_path)
    for name in ("timeout_s", "memory_mb", "jobs", "assignment"):
        if getattr(args, name) is not None:
            setattr(config, name, getattr(args, name))
    due = _due(args.due)
    roster = None
    if args.format != "csv":
        if args.roster is None or config.assignment is None:
            raise CLIError(f"--format {args.format} needs --roster (folder names → students) and the assignment's "
                           "name (--assignment, or assignment in grading.toml's [grading])")  # fmt: skip
        roster = grading.load_roster(args.roster)
    if config.jobs < 1 or not (math.isfinite(config.timeout_s) and config.timeout_s > 0) or config.memory_mb < 256:
        raise CLIError("--jobs must be ≥ 1, --timeout a number > 0 and --memory-mb ≥ 256")
    try:
        config.validate()  # what the flags changed, too (--assignment)
    except ValueError as error:
        raise CLIError(f"--assignment: {error}" if args.assignment else str(error)) from None
    out = args.out
    if out.suffix.lower() != ".csv" or out.is_dir():
        raise CLIError(f"--out must name a .csv file, got {out}")
    if not args.submissions_dir.is_dir():
        raise CLIError(f"{args.submissions_dir} is not a folder of submissions (one sub-folder per student)")
    mechanism = None if args.sandbox == "auto" else args.sandbox
    try:
        support = grading.sandbox_support(mechanism, args.require_sandbox)
    except SandboxError as error:
        raise CLIError(str(error)) from None
    if not support.isolated:
        print(f"warning: {support.description}. Use --require-sandbox to refuse to grade like this.")
    state = grading.state_path(out)
    if args.resume and not state.is_file():
        raise CLIError(f"--resume: there is no interrupted run to resume ({state} does not exist)")
    json_path = args.json or out.with_suffix(".json")
    old = grading.read_report(json_path, config) if args.only is not None else None
    if old is not None:
        grading.same_exercises(old, grading.exercise_ids(config, args.exercises))
    questions = written.assignment_questions(config, grading.exercise_ids(config, args.exercises))
    sheet = out.parent / "written.csv"
    if questions and sheet.is_file():  # its marks are kept: an unreadable one is refused now, not after grading
        written.read_sheet(sheet)
    try:
        report = grading.grade(args.submissions_dir, config, args.exercises or None, progress=not args.no_progress,
                               mechanism=mechanism, state_file=state, resume=args.resume, due=due,
                               only=args.only)  # fmt: skip
    except KeyboardInterrupt:
        print(f"interrupted: the students still running were stopped; no report written. The students done are "
              f"kept in {state}: run the same command with --resume to go on from there")  # fmt: skip
        return 130
    except SandboxError as error:
        raise CLIError(str(error)) from None
    feedback_dir = args.feedback or out.parent / "feedback"
    if questions:  # before the merge: students graded now get their answers, the others keep their points
        answers, problems = written.collect(args.submissions_dir, questions, config, only=args.only)
        written.attach(report, questions, answers)
    if old is not None:
        report = grading.merged(old, report)
    if roster is None:
        grading.write_csv(report, out)
    else:
        missing = grading.write_gradebook(report, out, args.format, roster)
        if missing:
            print(f"warning: not in the roster, so not in {out}: {', '.join(missing)}")
    grading.write_json(report, json_path)
    grading.write_feedback(report, feedback_dir, only=args.only)
    if questions:
        written.write_sheet(report, questions, answers, sheet)
    state.unlink(missing_ok=True)
    print(grading.summary_table(report))
    for line in grading.skipped_lines(report):
        print(line)
    print(
        f"graded {len(report.students)} submission(s) on {len(report.exercises)} exercise(s) in {report.seconds:.1f} s"
        f" ({report.sandbox})"
    )
    folder = feedback_dir / config.assignment if config.assignment else feedback_dir
    print(f"wrote {out}, {json_path} and {folder}/<student>.md")
    if questions:
        for line in problems:
            print(line)
        print(f"wrote {sheet} ({len(questions)} written question(s); answers side by side in {sheet.parent}/written/): "
              f"fill in points and comment, then: python -m transformer_course grade-written {sheet} --report {out}")  # fmt: skip
    return 0


def _grade_written(args: argparse.Namespace) -> int:
    from transformer_course_tools import grading
    from transformer_course_tools.grading import written

    report_csv = args.report
    if report_csv.suffix.lower() != ".csv":
        raise CLIError(f"--report must name the .csv report of grade, got {report_csv}")
    json_path = args.json or report_csv.with_suffix(".json")
    report = grading.read_report(json_path, None, what="grade-written")
    rows = written.read_sheet(args.sheet)
    roster = None
    if args.format != "csv":
        if args.roster is None or report.config.assignment is None:
            raise CLIError(f"--format {args.format} needs --roster and a report graded with the assignment's name")
        roster = grading.load_roster(args.roster)
    merged = written.merge_sheet(report, rows, args.sheet)  # everything checked before anything is written
    feedback_dir = args.feedback or report_csv.parent / "feedback"
    if roster is None:
        grading.write_csv(report, report_csv)
    else:
        missing = grading.write_gradebook(report, report_csv, args.format, roster)
        if missing:  # as grade warns
            print(f"warning: not in the roster, so not in {report_csv}: {', '.join(missing)}")
    grading.write_json(report, json_path)
    grading.write_feedback(report, feedback_dir)
    print(grading.summary_table(report))
    folder = feedback_dir / report.config.assignment if report.config.assignment else feedback_dir
    print(
        f"merged {merged} written answer(s) from {args.sheet}: wrote {report_csv}, {json_path} and {folder}/<student>.md"
    )
    return 0


def _due(text: str | None) -> datetime | None:
    """--due as a time (a date alone is its end of day; no time zone: this machine's)."""
    if text is None:
        return None
    try:
        due = datetime.fromisoformat(text)
    except ValueError:
        raise CLIError(f"--due must be a date and time such as 2026-12-01T23:59, got {text!r}") from None
    if len(text) == 10:  # 2026-12-01: the whole day
        due = due.replace(hour=23, minute=59, second=59)
    return due


DESCRIPTION = (
    "Each sub-folder (or .zip) of SUBMISSIONS_DIR is one student's edited student edition (or just their "
    "transformer_course/ folder); every other entry is listed as skipped. Each is copied, then graded in a sandbox "
    "of its own (bubblewrap, else unshare) by a warm worker that runs every exercise in a fresh child with a time "
    "limit, a memory cap and an output cap; the grade is decided here, outside the student's code. Points and limits "
    "come from grading.toml. Each student done is noted in REPORT.progress.jsonl next to --out; --resume goes on "
    "from there after an interruption. The answers to the written questions of the exercise notebooks (exNN_*.ipynb "
    "anywhere in a submission) go to written.csv next to --out, for grade-written."
)


FORMATS = ("csv", "canvas", "moodle")  # what --out holds: our report, or a gradebook to import


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
        "--exercises",
        nargs="+",
        metavar="ID",
        help="grade only these exercises, ids or chapters (ex03: all of chapter 03's; default: from the config, else all)",
    )
    grade.add_argument("--timeout", dest="timeout_s", type=float, help="seconds per exercise (overrides the config)")
    grade.add_argument("--memory-mb", type=int, help="address-space cap per exercise in MB (overrides the config)")
    grade.add_argument("--jobs", type=int, help="students graded at the same time (default 1: fair time limits)")
    grade.add_argument("--resume", action="store_true",
                       help="go on with an interrupted run: students already in REPORT.progress.jsonl are not graded "
                            "again (without it, that file is started afresh)")  # fmt: skip
    grade.add_argument("--sandbox", choices=("auto", *MECHANISMS), default="auto",
                       help="how jobs are isolated (default: the best that works here; 'none' is unprotected)")  # fmt: skip
    grade.add_argument("--require-sandbox", action="store_true",
                       help="refuse to grade when no sandbox works here (instead of warning)")  # fmt: skip
    grade.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    grade.add_argument("--format", choices=FORMATS, default="csv",
                       help="what --out holds: our report (csv), or a gradebook to import into Canvas or Moodle "
                            "(needs --roster and the assignment's name)")  # fmt: skip
    grade.add_argument("--roster", type=Path, help="CSV mapping submission folders to students: a header with 'folder' "
                       "and any of name, id, sis_user_id, sis_login_id, section, email")  # fmt: skip
    grade.add_argument("--assignment", help="the assignment's name: the gradebook's column and the feedback's folder "
                       "(feedback/<assignment>/); overrides grading.toml")  # fmt: skip
    grade.add_argument("--due", metavar="TIME", help="due time, e.g. 2026-12-01T23:59: a submission whose newest file is "
                       "newer is flagged late (a flag, not a penalty)")  # fmt: skip
    grade.add_argument("--only", metavar="STUDENT", help="grade this student alone and update their row of the "
                       "existing report (CSV, JSON and their feedback) instead of replacing the class")  # fmt: skip
    grade.set_defaults(run=_grade)

    summary = "add the points and comments of a filled-in written.csv to the report and the feedback"
    merge = subparsers.add_parser("grade-written", help=summary, description=summary + (
        ". SHEET is the written.csv that grade wrote, with its points and comment columns filled in. Every row is "
        "checked first (points from 0 to max_points, known students and questions); then --report, its JSON and "
        "the feedback files are written again, the written points in each total."))  # fmt: skip
    merge.add_argument("sheet", type=Path, metavar="SHEET")
    merge.add_argument(
        "--report", type=Path, default=Path("report.csv"), help="the CSV report of grade (default: report.csv)"
    )
    merge.add_argument("--json", type=Path, help="the JSON report (default: next to --report, .json)")
    merge.add_argument("--feedback", type=Path, help="the feedback folder (default: feedback/ next to --report)")
    merge.add_argument("--format", choices=FORMATS, default="csv", help="what --report holds, as for grade")
    merge.add_argument("--roster", type=Path, help="the roster, with --format canvas or moodle (as for grade)")
    merge.set_defaults(run=_grade_written)
