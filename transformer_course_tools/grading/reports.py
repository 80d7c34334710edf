"""The reports of a grading run, for ``grade`` and ``grade-written`` alike: the CSV, the JSON, a
feedback file per student, an LMS gradebook, the terminal summary. Each is written whole (a
temporary file, then a rename), its cells safe to open in a spreadsheet, its names escaped in
Markdown."""

from __future__ import annotations

import csv
import html
import io
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

from transformer_course_tools.exercises.checks.registry import get_exercise
from transformer_course_tools.exercises.checks.status import PASSED, SYMBOLS

from .config import GradingConfig
from .results import ExerciseResult, GradingReport, StudentReport, WrittenResult

REPORT_MODE = 0o644  # reports and feedback: the instructor's to write, anyone's on the machine to read


def write_atomically(path: Path, text: str) -> None:
    """Write ``path`` so that a reader sees the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                         delete=False, newline="")  # fmt: skip
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), REPORT_MODE)  # a temporary file is private (0600); a report is not
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula


def spreadsheet_safe(cell: object) -> object:
    """A text cell that a spreadsheet would take for a formula, prefixed with ``'`` (OWASP's advice
    against CSV injection); numbers and other text as they are. The csv module still quotes it."""
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS):
        return "'" + cell
    return cell


def write_csv(report: GradingReport, path: Path) -> None:
    cases = [f"{i} cases" for i in report.exercises]
    rows = [["student", *report.exercises, *report.written, "total", "max_points", "percent", *cases, "newest_file",
             "late", "fingerprint", "flags"]]  # fmt: skip
    for s in report.students:
        points = [number_text(s.results[i].points) for i in report.exercises]
        points += [_written_text(s.written.get(q)) for q in report.written]  # "" until graded
        percent = round(100 * s.total / s.max_points, 1) if s.max_points else 0.0
        passed = [s.results[i].cases_text() for i in report.exercises]
        rows.append([s.student, *points, number_text(s.total), number_text(s.max_points), percent, *passed,
                     s.newest_text(), _late_text(s.late), s.fingerprint or "", "; ".join(s.flags)])  # fmt: skip
    write_rows(rows, path)


def write_rows(rows: list[list], path: Path) -> None:
    buffer = io.StringIO()
    csv.writer(buffer).writerows([spreadsheet_safe(cell) for cell in row] for row in rows)
    write_atomically(path, buffer.getvalue())


def _written_text(result: WrittenResult | None) -> float | int | str:
    return "" if result is None or result.points is None else number_text(result.points)


def _late_text(late: bool | None) -> str:
    return "" if late is None else ("yes" if late else "no")


ROSTER_COLUMNS = ("folder", "name", "id", "sis_user_id", "sis_login_id", "section", "email")


def load_roster(path: Path) -> dict[str, dict[str, str]]:
    """A roster CSV: a header with ``folder`` (the submission's name) and any of ``name``, ``id``,
    ``sis_user_id``, ``sis_login_id``, ``section``, ``email``; folder → those fields ("" when
    absent). Raises FileNotFoundError or ValueError (one line)."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"--roster: {path} does not exist")
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
            header = rows[0].keys() if rows else []
    except (UnicodeDecodeError, csv.Error) as error:
        raise ValueError(f"--roster: {path} is not a readable CSV file ({error})") from None
    unknown = set(header) - set(ROSTER_COLUMNS)
    if "folder" not in header or unknown:
        raise ValueError(f"--roster: {path} needs a header with 'folder' and only columns among "
                         f"{', '.join(ROSTER_COLUMNS)}" + (f" (unknown: {', '.join(sorted(unknown))})" if unknown else ""))  # fmt: skip
    roster: dict[str, dict[str, str]] = {}
    for row in rows:
        folder = (row.get("folder") or "").strip()
        if folder in roster:
            raise ValueError(f"--roster: {path} names the folder {folder!r} twice")
        roster[folder] = {column: (row.get(column) or "").strip() for column in ROSTER_COLUMNS}
    return roster


def write_gradebook(report: GradingReport, path: Path, form: str, roster: dict[str, dict[str, str]]) -> list[str]:
    """The CSV a learning management system imports: one row per student of the roster with a
    submission, the assignment's points in a column named after it. ``form``: ``canvas`` (Student,
    ID, SIS User ID, SIS Login ID, Section, then a Points Possible row) or ``moodle`` (Full name, ID
    number, Email address, the points, Feedback: what the feedback file says in one line). Returns
    the students graded but not in the roster (left out of the file)."""
    assignment = report.config.assignment
    students = [s for s in report.students if s.student in roster]
    if form == "canvas":
        rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment],
                ["Points Possible", "", "", "", "", number_text(_max_points(report))]]  # fmt: skip
        for s in students:
            who = roster[s.student]
            rows.append([who["name"] or s.student, who["id"], who["sis_user_id"], who["sis_login_id"], who["section"],
                         number_text(s.total)])  # fmt: skip
    else:
        rows = [["Full name", "ID number", "Email address", assignment, "Feedback"]]
        for s in students:
            who = roster[s.student]
            rows.append([who["name"] or s.student, who["id"], who["email"], number_text(s.total), _one_line(s)])
    write_rows(rows, path)
    return [s.student for s in report.students if s.student not in roster]


def _max_points(report: GradingReport) -> float:
    return sum(report.config.points_for(i) for i in report.exercises) + sum(
        report.config.written_points_for(q) for q in report.written
    )


def _one_line(student: StudentReport) -> str:
    """The feedback in a gradebook cell: the exercises not passed, by id and status."""
    missed = [f"{i} {r.status}" for i, r in student.results.items() if r.status != PASSED]
    return "all exercises passed" if not missed else "not passed: " + "; ".join(missed)


def read_report(path: Path, config: GradingConfig | None, what: str = "--only") -> GradingReport:
    """The report ``write_json`` wrote (for ``--only``: one student graded again, the others kept;
    for ``grade-written``, with ``config`` None: the settings it was graded with). Raises
    FileNotFoundError or ValueError (one line starting with ``what``)."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"{what}: there is no report to update ({path} does not exist)")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        students = [
            StudentReport(
                s["student"],
                s["package"],
                {i: ExerciseResult(**r) for i, r in s["results"].items()},
                s.get("newest_time"),
                s.get("late"),
                s.get("fingerprint"),
                s.get("flags", []),
                {q: WrittenResult(**w) for q, w in s.get("written", {}).items()},
            )
            for s in data["students"]
        ]
        if config is None:  # the settings the report was graded with
            config = GradingConfig(**data["settings"] | {"exercises": None})
        written = {q: w["question"] for q, w in data.get("written", {}).items()}
        return GradingReport(list(data["exercises"]), students, config, data["seconds"], data["sandbox"],
                             [(e["entry"], e["why"]) for e in data.get("skipped", [])], written)  # fmt: skip
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"{what}: {path} is not a report this course wrote ({type(error).__name__}: {error})"
        ) from None


def same_exercises(old: GradingReport, exercises: list[str]) -> None:
    """ValueError (one line) unless ``old`` grades ``exercises``."""
    if old.exercises != exercises:
        raise ValueError(f"--only: the report grades {', '.join(old.exercises)}, not {', '.join(exercises)}: "
                         "grade the same exercises")  # fmt: skip


def merged(old: GradingReport, new: GradingReport) -> GradingReport:
    """``old`` with the students of ``new`` put in (replacing those of the same name, in name order)."""
    same_exercises(old, new.exercises)
    students = {s.student: s for s in old.students} | {s.student: s for s in new.students}
    return GradingReport(new.exercises, [students[name] for name in sorted(students)], new.config, new.seconds,
                         new.sandbox, old.skipped, new.written or old.written)  # fmt: skip


_MARKDOWN_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*[]|#"})


def markdown_text(text: str) -> str:
    """``text`` shown as itself in Markdown and in the HTML it becomes: ``&``, ``<`` and ``>`` HTML
    escaped (quotes are left as they are: outside an attribute they are plain text, and ``O'Neil``
    stays readable in the file), and the characters that make links, code, emphasis, headings or
    table cells backslash-escaped; one line."""
    return html.escape(" ".join(str(text).split()), quote=False).translate(_MARKDOWN_SPECIAL)


def write_json(report: GradingReport, path: Path) -> None:
    data = {
        "exercises": {i: {"title": get_exercise(i).title, "points": report.config.points_for(i)} for i in report.exercises},
        "settings": asdict(report.config) | {"exercises": report.exercises},  # those graded, --exercises too
        "sandbox": report.sandbox,
        "seconds": report.seconds,
        "skipped": [{"entry": name, "why": why} for name, why in report.skipped],
        "written": {q: {"question": text, "points": report.config.written_points_for(q)}
                    for q, text in report.written.items()},
        "students": [
            {"student": s.student, "package": s.package, "total": s.total, "max_points": s.max_points,
             "newest_file": s.newest_text() or None, "newest_time": s.newest_file, "late": s.late,
             "fingerprint": s.fingerprint, "flags": s.flags,
             "results": {i: asdict(r) for i, r in s.results.items()},
             "written": {q: asdict(w) for q, w in s.written.items()}}
            for s in report.students
        ],
    }  # fmt: skip
    write_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def feedback_markdown(student: StudentReport, report: GradingReport) -> str:
    lines = [
        f"# Feedback for {markdown_text(student.student)}",
        "",
        f"**{number_text(student.total)} / {number_text(student.max_points)} points.** "
        f"Graded: {markdown_text(student.package or 'no package found')}"
        + (f", newest file {student.newest_text()}" if student.newest_file is not None else "")
        + (" (after the due time: late)" if student.late else "")
        + ".",
        "",
        "| exercise | status | cases passed | points | what the check says |",
        "| --- | --- | --- | --- | --- |",
    ]
    for exercise_id, r in student.results.items():
        title = get_exercise(exercise_id).title
        status = f"{SYMBOLS.get(r.status, '')} {r.status}"
        lines.append(
            f"| {exercise_id} {title} | {status} | {r.feedback_cases()} | {number_text(r.points)} / "
            f"{number_text(r.max_points)} "
            f"| {markdown_text(r.message)} |"
        )
    if student.written:
        lines += ["", "## Written answers", "", "| question | points | comment |", "| --- | --- | --- |"]
        for question_id, w in student.written.items():
            points = "not graded yet" if w.points is None else f"{number_text(w.points)} / {number_text(w.max_points)}"
            comment = w.comment or ("" if w.answered else "not answered")
            lines.append(f"| {question_id} | {points} | {markdown_text(comment)} |")
    noisy = [(i, r) for i, r in student.results.items() if r.output_bytes]
    if noisy:
        lines += ["", "## Output printed during the checks", ""]
        for exercise_id, r in noisy:
            head = r.output_head[:500].rstrip().replace("```", "'''")
            lines += [f"{exercise_id}: {r.output_bytes} bytes; it began with:", "", "```text", head, "```", ""]
    lines += [
        "",
        "Run the same checks yourself: `python -m transformer_course check` (or `pytest -m ex03_1` for one).",
        "",
        f"What protected the grading: {markdown_text(report.sandbox)}.",
        "",
    ]
    return "\n".join(lines)


def write_feedback(report: GradingReport, folder: Path, only: str | None = None) -> list[Path]:
    """One file per student (``only``: that student's), in ``folder/<assignment>/`` when the
    assignment is named, else in ``folder``."""
    written = []
    if report.config.assignment:
        folder = folder / report.config.assignment
    for student in report.students:
        if only is not None and student.student != only:
            continue
        path = folder / f"{student.student}.md"
        write_atomically(path, feedback_markdown(student, report))
        written.append(path)
    return written


def summary_table(report: GradingReport) -> str:
    """The terminal summary: one row per student, one column per exercise (status symbols)."""
    names = [_printable(s.student) for s in report.students]
    width = max([len(name) for name in names] + [7])
    header = f"{'student':{width}}  " + " ".join(f"{i:>7}" for i in report.exercises) + "   points"
    rows = [header]
    for name, s in zip(names, report.students, strict=True):
        cells = " ".join(f"{_short_status(s.results[i].status):>7}" for i in report.exercises)
        rows.append(f"{name:{width}}  {cells}   {number_text(s.total)}/{number_text(s.max_points)}")
    return "\n".join(rows)


def skipped_lines(report: GradingReport) -> list[str]:
    """For the terminal: every entry of the submissions folder that was not graded, and why."""
    return [f"skipped {_printable(name)}: {why}" for name, why in report.skipped]


def _printable(name: str) -> str:
    """A folder name for the terminal: control characters (escape sequences) shown as '?'."""
    return "".join(c if c.isprintable() else "?" for c in name)


def _short_status(status: str) -> str:
    return {"passed": "ok", "failed": "FAIL", "not implemented": "todo", "error": "ERROR",
            "timed out": "TIMEOUT", "reference import": "REF"}.get(status, status)  # fmt: skip


def number_text(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 2)
