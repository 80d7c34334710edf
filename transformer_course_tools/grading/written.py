"""Written answers: the "in your own words" questions of the exercise notebooks, in the grade.

* **Questions** come from the one source, ``solutions/exNN_*.py`` (:mod:`.questions`): ids
  ``exNN_qK``, which the student's notebook, the sheet and ``grading.toml``'s ``[written]`` table
  all use.
* **Answers**: ``grade`` finds each submission's ``exNN_*.ipynb`` (anywhere in its folder or zip)
  and takes, for each question, the text the student put in place of ``YOUR ANSWER HERE`` in the
  cell that starts with the question. Empty, or still ``YOUR ANSWER HERE``: not answered.
* **The sheet** ``written.csv`` (next to the report): one row per student × question, with empty
  ``points`` and ``comment`` for the instructor, and ``written/<question>.md``: the answers to one
  question side by side. Grading again keeps the points and comments of the answers that did not change.
* **Merging** (``grade-written SHEET --report report.csv``): every row checked first (one line
  naming the row and the column for the first bad one), then the report (CSV, JSON) and the
  feedback files written again, whole, with the written points in each total.
"""

from __future__ import annotations

import csv
import math
import tempfile
from pathlib import Path

from transformer_course_tools.exercises.questions import (  # noqa: F401
    QUESTION_ID,
    SHORT,
    Question,
    answer_in,
    check_question_ids,
    course_questions,
    notebook_answers,
    questions_in,
)

from .collect import NOT_SUBMITTED, SKIPPED, Refused, is_archive, list_submissions, student_name, unpack_archive
from .config import GradingConfig
from .reports import FORMULA_STARTS, markdown_text, number_text, write_atomically, write_rows
from .results import GradingReport, WrittenResult

NOTEBOOK = "ex[0-9][0-9]_*.ipynb"  # a submission's exercise notebooks
SHEET_COLUMNS = ("student", "question", "question_text", "answer", "max_points", "points", "comment")


def assignment_questions(config: GradingConfig, exercises: list[str]) -> dict[str, Question]:
    """The written questions graded: grading.toml's list, else those of the graded exercises' notebooks,
    and, when every exercise is graded, those of the notebooks that hold questions only (chapter 11's)."""
    if config.written_questions is not None:  # [] for none: solutions/ is not even read
        return {q: course_questions()[q] for q in config.written_questions}
    from transformer_course_tools.exercises.checks.registry import load_checks

    known = course_questions()
    every = set(load_checks())
    notebooks = {exercise_id.split("_")[0] for exercise_id in exercises}
    if every <= set(exercises):
        notebooks |= {q.split("_")[0] for q in known} - {e.split("_")[0] for e in every}
    return {q.id: q for q in known.values() if q.id.split("_")[0] in notebooks}


# ---------------------------------------------------------------- the students' answers (answer_in and
# notebook_answers, which a self-learner's ``check exNN_qK`` reads too, are in exercises/questions.py)


def find_notebooks(folder: Path, max_bytes: int) -> dict[str, Path]:
    """The exercise notebooks of a submission folder, by name without .ipynb: anywhere in it (beside
    or above the package), the one nearest the top where there are several; links, checkpoints, a
    ``.venv`` and files larger than ``max_bytes`` left out."""
    found: dict[str, Path] = {}
    for path in sorted(folder.rglob(NOTEBOOK), key=lambda p: (len(p.parts), str(p))):
        parts = path.relative_to(folder).parts
        linked = any(folder.joinpath(*parts[:i]).is_symlink() for i in range(1, len(parts) + 1))
        if linked or (NOT_SUBMITTED | SKIPPED) & set(parts):
            continue
        if path.is_file() and path.stat().st_size <= max_bytes:
            found.setdefault(path.stem, path)
    return found


def collect(submissions_dir: Path, questions: dict[str, Question], config: GradingConfig,
            only: str | None = None) -> tuple[dict[str, dict[str, str]], list[str]]:  # fmt: skip
    """Student → question id → answer ("" unanswered), for every submission (folder or zip, as
    ``grade`` lists them; ``only``: that student's) and the problems met, one line each."""
    by_notebook: dict[str, list[Question]] = {}
    for q in questions.values():
        by_notebook.setdefault(q.notebook, []).append(q)
    answers, problems = {}, []
    entries, _ = list_submissions(Path(submissions_dir))
    with tempfile.TemporaryDirectory(prefix="transformer-course-written-") as temporary:
        for index, entry in enumerate(entries):
            student = student_name(entry)
            if only is not None and student != only:
                continue
            answers[student] = dict.fromkeys(questions, "")
            try:
                if entry.is_symlink():
                    raise Refused(f"{entry.name} is a symbolic link")
                folder = unpack_archive(entry, Path(temporary) / str(index), config) if is_archive(entry) else entry
                notebooks = find_notebooks(folder, config.max_submission_mb * 2**20)
                for name, asked in by_notebook.items():
                    if name in notebooks:
                        answers[student] |= notebook_answers(notebooks[name], asked)
            except (Refused, ValueError, OSError) as error:
                problems.append(f"{student}: written answers not read: {error}")
    return answers, problems


# ---------------------------------------------------------------- the sheet


def read_sheet(path: Path) -> list[dict[str, str]]:
    """The rows of a sheet (cells as they were before ``spreadsheet_safe``); ValueError (one line)."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path} does not exist")
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            rows = [{k: _unsafe(v) for k, v in row.items() if k is not None} for row in reader]
            header = reader.fieldnames or []
    except (UnicodeDecodeError, csv.Error) as error:
        raise ValueError(f"{path} is not a readable CSV file ({error})") from None
    missing = [c for c in ("student", "question", "points", "comment") if c not in header]
    if missing:
        raise ValueError(f"{path}: the header lacks the column(s) {', '.join(missing)}")
    return rows


def _unsafe(cell: str | None) -> str:
    """A cell as written before :func:`.grading.spreadsheet_safe` prefixed it with ``'``."""
    cell = cell or ""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_STARTS) else cell


def write_sheet(report: GradingReport, questions: dict[str, Question], answers: dict[str, dict[str, str]],
                path: Path) -> None:  # fmt: skip
    """``written.csv`` (columns: SHEET_COLUMNS) and ``written/<question>.md`` next to it. The rows of
    students not in ``answers`` (``grade --only``) are kept; so are the points and comments of an
    answer that did not change."""
    old = read_sheet(path) if path.is_file() else []
    kept = {(r["student"], r["question"]): r for r in old}
    rows = [list(SHEET_COLUMNS)]
    for s in report.students:
        for q in questions.values():
            before = kept.get((s.student, q.id), {})
            answer = answers[s.student][q.id] if s.student in answers else before.get("answer")
            if answer is None:  # not graded now, not in the sheet before
                continue
            same = bool(before) and before.get("answer") == answer
            marks = [before["points"], before["comment"]] if same else ["", ""]
            points = report.config.written_points_for(q.id)
            rows.append([s.student, q.id, q.short(), answer, number_text(points), *marks])
    write_rows(rows, path)
    for q in questions.values():
        lines = [f"# {q.id} ({number_text(report.config.written_points_for(q.id))} points)", "",
                 *[f"> {line}" for line in q.text.splitlines()], "", "| student | answer |", "| --- | --- |"]  # fmt: skip
        lines += [
            f"| {markdown_text(r[0])} | {markdown_text(r[3]) or '*(not answered)*'} |" for r in rows[1:] if r[1] == q.id
        ]
        write_atomically(path.parent / "written" / f"{q.id}.md", "\n".join(lines) + "\n")


def attach(report: GradingReport, questions: dict[str, Question], answers: dict[str, dict[str, str]]) -> None:
    """Give each student graded now a written result per question (not graded yet)."""
    report.written = {q.id: q.short() for q in questions.values()}
    for s in report.students:
        if s.student in answers:
            s.written = {
                q: WrittenResult(report.config.written_points_for(q), bool(answers[s.student][q])) for q in questions
            }


def merge_sheet(report: GradingReport, rows: list[dict[str, str]], sheet: Path) -> int:
    """Put the sheet's points and comments into ``report`` (in place); return the rows merged.
    Every row is checked before anything changes: ValueError naming the row and the column."""
    students = {s.student: s for s in report.students}
    seen: set[tuple[str, str]] = set()
    updates = []
    for number, row in enumerate(rows, start=2):  # row 1 is the header, as a spreadsheet counts
        student, question = row["student"], row["question"]
        where = f"{sheet}: row {number}"
        if student not in students:
            raise ValueError(f"{where}, column student: {student!r} is not a student of the report")
        if question not in report.written or question not in students[student].written:
            raise ValueError(f"{where}, column question: {question!r} is not a written question of the report")
        if (student, question) in seen:
            raise ValueError(f"{where}, columns student and question: {student} {question} is given twice")
        seen.add((student, question))
        result = students[student].written[question]
        points = _points(row["points"].strip(), result, f"{where} ({student}, {question}), column points")
        updates.append((result, points, row["comment"].strip()))
    for result, points, comment in updates:
        result.points, result.comment = points, comment
    return len(updates)


def _points(text: str, result: WrittenResult, where: str) -> float:
    if not text:
        if not result.answered:
            return 0.0  # nothing to grade
        raise ValueError(f"{where}: empty; give the answer its points (0 for none)")
    try:
        points = float(text)
    except ValueError:
        raise ValueError(f"{where}: {text!r} is not a number") from None
    if not math.isfinite(points) or points < 0:
        raise ValueError(f"{where}: {text} must be a number from 0 to {number_text(result.max_points)}")
    if points > result.max_points:
        raise ValueError(f"{where}: {text} is above the question's {number_text(result.max_points)} points")
    return points
