"""Written answers in the grade: the questions of solutions/, the answers of the students'
notebooks (folders, zips, notebooks alone), the sheet, the merge of its points and its refusals."""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import jupytext
import nbformat
import pytest

from transformer_course_tools.cli import main
from transformer_course_tools.exercises.checks.registry import load_checks
from transformer_course_tools.exercises.edition import TEXT_STUB, clear_notebook, solution_regions
from transformer_course_tools.grading import GradingConfig, load_config, written

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = written.course_questions()
EX06 = "ex06_decoder_and_masks"


def _notebook(path: Path, answers: dict[str, str], notebook: str = EX06) -> Path:
    """A student's notebook: each question of ``notebook`` in its cell, the answer in place of the stub
    (missing from ``answers``: the stub left as it is)."""
    cells = [nbformat.v4.new_code_cell("import torch")]
    for q in QUESTIONS.values():
        if q.notebook == notebook:
            cells.append(nbformat.v4.new_markdown_cell(f"{q.text}\n\n{answers.get(q.id, TEXT_STUB)}"))
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


# -- the questions: one source, the same ids everywhere -------------------------------------------------


def test_every_answer_cell_of_the_exercise_notebooks_is_a_question_with_a_stable_id() -> None:
    for path in sorted((ROOT / "exercises").glob("ex*.ipynb")):
        stubs = sum(c.source.count(TEXT_STUB) for c in nbformat.read(path, as_version=4).cells)
        ids = [q for q, question in QUESTIONS.items() if question.notebook == path.stem]
        assert ids == [f"{path.stem[:4]}_q{k}" for k in range(1, stubs + 1)], path.name
        unanswered = written.notebook_answers(path, [QUESTIONS[q] for q in ids])
        assert unanswered == dict.fromkeys(ids, ""), "the handout's cells count as not answered"
    assert QUESTIONS["ex11_q4"].text.startswith("*In your own words:* the variant without residual connections")
    assert QUESTIONS["ex11_q3"].until == QUESTIONS["ex11_q4"].text  # two questions in one cell
    assert QUESTIONS["ex03_q1"].short() == (
        "*In your own words:* why is the result (..., T, S) and not (..., S, T)? (A worked answer is in the "
        "complete edition.)"
    )


def test_the_student_edition_holds_no_worked_written_answer() -> None:
    for path in sorted((ROOT / "solutions").glob("ex*.py")):
        solution = jupytext.read(path)
        cleared = clear_notebook(solution)
        for ours, theirs in zip(solution.cells, cleared.cells, strict=True):
            regions = list(solution_regions(ours.source)) if ours.cell_type == "markdown" else []
            lines = ours.source.split("\n")
            for begin, end in regions:
                answer = [line for line in lines[begin + 1 : end] if len(line.strip()) > 20]
                assert answer, f"{path.name}: a written question without a worked answer"
                assert not [line for line in answer if line in theirs.source], path.name
            assert theirs.source.count(TEXT_STUB) == len(regions)


# -- answers ----------------------------------------------------------------------------------------------


def test_answers_are_read_from_the_cells_that_ask_the_questions(tmp_path: Path) -> None:
    q1, q2, q3 = (QUESTIONS[f"ex06_q{k}"] for k in (1, 2, 3))
    path = _notebook(tmp_path / f"{EX06}.ipynb", {"ex06_q1": "Because of\n\n- the mask", "ex06_q3": ""})
    assert written.notebook_answers(path, [q1, q2, q3]) == {"ex06_q1": "Because of\n\n- the mask", "ex06_q2": "",
                                                             "ex06_q3": ""}  # fmt: skip
    rewrapped = " ".join(q2.text.split()) + f"\n{TEXT_STUB}\nMy answer."  # the editor joined the question's lines
    assert written.answer_in(q2, rewrapped) == "My answer."
    assert written.answer_in(q2, q1.text + "\n\nanything") is None
    q4, q5 = QUESTIONS["ex11_q3"], QUESTIONS["ex11_q4"]  # two questions in one cell
    both = f"{q4.text}\n\nIt plateaued.\n\n{q5.text}\n\nThe shortcut carries x."
    assert (written.answer_in(q4, both), written.answer_in(q5, both)) == ("It plateaued.", "The shortcut carries x.")
    (tmp_path / "bad.ipynb").write_text("{not json")
    with pytest.raises(ValueError, match="bad.ipynb is not a notebook"):
        written.notebook_answers(tmp_path / "bad.ipynb", [q1])


def test_notebooks_are_found_beside_or_above_the_package_in_folders_and_zips(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    _notebook(subs / "ada" / f"{EX06}.ipynb", {"ex06_q1": "ada top"})  # notebooks only, no package
    _notebook(subs / "ada" / "old" / f"{EX06}.ipynb", {"ex06_q1": "ada deeper"})  # the one nearer the top wins
    _notebook(subs / "ada" / ".ipynb_checkpoints" / f"{EX06}.ipynb", {"ex06_q2": "checkpoint"})
    (subs / "cy" / "transformer_course").mkdir(parents=True)
    (subs / "cy" / "transformer_course" / "__init__.py").touch()
    _notebook(tmp_path / "elsewhere" / f"{EX06}.ipynb", {"ex06_q2": "not cy's"})
    (subs / "cy" / f"{EX06}.ipynb").symlink_to(tmp_path / "elsewhere" / f"{EX06}.ipynb")  # a link: not read
    zipped = _notebook(tmp_path / "bob" / "exercises" / f"{EX06}.ipynb", {"ex06_q2": "bob's"})
    with zipfile.ZipFile(subs / "bob.zip", "w") as archive:
        archive.write(zipped, "course-main/exercises/" + zipped.name)
        archive.writestr("course-main/transformer_course/__init__.py", "")
    (subs / "dan.zip").write_bytes(b"not a zip")
    questions = {q: QUESTIONS[q] for q in ("ex06_q1", "ex06_q2")}
    answers, problems = written.collect(subs, questions, GradingConfig())
    assert answers == {"ada": {"ex06_q1": "ada top", "ex06_q2": ""}, "bob": {"ex06_q1": "", "ex06_q2": "bob's"},
                       "cy": {"ex06_q1": "", "ex06_q2": ""}, "dan": {"ex06_q1": "", "ex06_q2": ""}}  # fmt: skip
    assert len(problems) == 1 and problems[0].startswith("dan: written answers not read: dan.zip could not be unpacked")
    assert written.collect(subs, questions, GradingConfig(), only="bob")[0] == {"bob": answers["bob"]}


# -- grading.toml's [written] ---------------------------------------------------------------------------


def test_the_written_table_sets_questions_and_points(tmp_path: Path) -> None:
    config_file = tmp_path / "grading.toml"
    config_file.write_text("[written]\ndefault_points = 2\nex06_q3 = 3\n")
    config = load_config(config_file)
    assert [config.written_points_for(q) for q in ("ex06_q1", "ex06_q3")] == [2.0, 3.0]
    assert list(written.assignment_questions(config, ["ex06_1", "ex06_2"])) == ["ex06_q1", "ex06_q2", "ex06_q3"]
    assert written.assignment_questions(GradingConfig(written_questions=[]), ["ex06_1"]) == {}
    # chapter 11's notebook asks questions only: graded with every exercise, not with a chapter's
    every = sorted(load_checks())
    assert {"ex11_q1", "ex11_q5", "ex06_q1"} <= set(written.assignment_questions(config, every))
    assert not any(q.startswith("ex11") for q in written.assignment_questions(config, every[:-1]))
    config_file.write_text('[written]\nquestions = ["ex03_q2"]\n')
    assert list(written.assignment_questions(load_config(config_file), ["ex06_1"])) == ["ex03_q2"]
    for text, part in [("[written]\nex06_q9 = 1\n", "[written] ex06_q9: no such written question"),
                       ("[written]\nex06_q1 = 'two'\n", "[written] ex06_q1 must be a number, got 'two'"),
                       ("[written]\ndefault_points = -1\n", "written.default_points = -1.0 must be a finite number"),
                       ("[written]\nquestions = 'some'\n", '[written] questions must be "auto" or a list')]:  # fmt: skip
        config_file.write_text(text)
        with pytest.raises(ValueError) as error:
            load_config(config_file)
        assert part in str(error.value) and "\n" not in str(error.value), error.value


# -- grade writes the sheet, grade-written merges it back ------------------------------------------------


@pytest.fixture
def graded(tmp_path: Path, capsys: pytest.CaptureFixture) -> Path:
    """Two students who handed in notebooks only (a folder, a zip), graded on ex06_1 with written
    questions worth 2 points (ex06_q3: 3); returns the report's CSV."""
    subs = tmp_path / "subs"
    _notebook(subs / "ada" / f"{EX06}.ipynb", {"ex06_q1": "=SUM(A1)", "ex06_q3": "Padding is ignored."})
    bob = _notebook(tmp_path / "bob" / f"{EX06}.ipynb", {"ex06_q2": "So that position t sees only t and before."})
    with zipfile.ZipFile(subs / "bob.zip", "w") as archive:
        archive.write(bob, "work/exercises/" + bob.name)
    config_file = tmp_path / "grading.toml"
    config_file.write_text("[written]\ndefault_points = 2\nex06_q3 = 3\n")
    out = tmp_path / "grades" / "report.csv"
    assert main(["grade", str(subs), "--out", str(out), "--exercises", "ex06_1", "--config", str(config_file),
                 "--assignment", "hw", "--no-progress"]) == 0  # fmt: skip
    assert f"grade-written {out.parent / 'written.csv'} --report {out}" in capsys.readouterr().out
    return out


def _sheet_with(out: Path, marks: dict[tuple[str, str], tuple[str, str]]) -> Path:
    rows = _rows(out.parent / "written.csv")
    for row in rows:
        row["points"], row["comment"] = marks.get((row["student"], row["question"]), ("", ""))
    with open(out.parent / "written.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out.parent / "written.csv"


MARKS = {("ada", "ex06_q1"): ("0.5", "a formula is no answer"), ("ada", "ex06_q3"): ("3", "Right."),
         ("bob", "ex06_q2"): ("1.5", "and why?")}  # fmt: skip


def test_grade_writes_a_sheet_and_grade_written_adds_its_points(graded: Path, capsys: pytest.CaptureFixture) -> None:
    out = graded
    rows = _rows(out.parent / "written.csv")
    assert list(rows[0]) == list(written.SHEET_COLUMNS)
    got = [(r["student"], r["question"], r["answer"], r["max_points"], r["points"], r["comment"]) for r in rows]
    assert got == [("ada", "ex06_q1", "'=SUM(A1)", "2", "", ""), ("ada", "ex06_q2", "", "2", "", ""),
                   ("ada", "ex06_q3", "Padding is ignored.", "3", "", ""), ("bob", "ex06_q1", "", "2", "", ""),
                   ("bob", "ex06_q2", "So that position t sees only t and before.", "2", "", ""),
                   ("bob", "ex06_q3", "", "3", "", "")]  # fmt: skip
    assert rows[0]["question_text"] == QUESTIONS["ex06_q1"].short()
    view = (out.parent / "written" / "ex06_q2.md").read_text()
    assert "| bob | So that position t sees only t and before. |" in view and "| ada | *(not answered)* |" in view
    before = {s["student"]: s for s in json.loads(out.with_suffix(".json").read_text())["students"]}
    assert before["ada"]["total"] == 0 and before["ada"]["max_points"] == 8  # ex06_1: 1, written: 2 + 2 + 3
    assert before["ada"]["written"]["ex06_q1"] == {"max_points": 2.0, "answered": True, "points": None, "comment": ""}
    assert "| ex06_q1 | not graded yet |  |" in (out.parent / "feedback" / "hw" / "ada.md").read_text()

    sheet = _sheet_with(out, MARKS)
    assert main(["grade-written", str(sheet), "--report", str(out)]) == 0
    assert "merged 6 written answer(s)" in capsys.readouterr().out
    report = {r["student"]: r for r in _rows(out)}
    assert [report["ada"][c] for c in ("ex06_1", "ex06_q1", "ex06_q2", "ex06_q3", "total", "max_points", "percent")] == [
        "0", "0.5", "0", "3", "3.5", "8", "43.8"]  # fmt: skip
    assert [report["bob"][c] for c in ("ex06_q1", "ex06_q2", "ex06_q3", "total")] == ["0", "1.5", "0", "1.5"]
    students = {s["student"]: s for s in json.loads(out.with_suffix(".json").read_text())["students"]}
    assert students["ada"]["total"] == 3.5 and students["bob"]["max_points"] == 8
    assert students["bob"]["written"]["ex06_q2"] == {"max_points": 2.0, "answered": True, "points": 1.5,
                                                     "comment": "and why?"}  # fmt: skip
    feedback = (out.parent / "feedback" / "hw" / "ada.md").read_text()
    assert "**3.5 / 8 points.**" in feedback and "| ex06_q1 | 0.5 / 2 | a formula is no answer |" in feedback
    assert "| ex06_q2 | 0 / 2 | not answered |" in feedback
    roster = out.parent / "roster.csv"
    roster.write_text("folder,name\nada,Ada Lovelace\n")
    assert main(["grade-written", str(sheet), "--report", str(out), "--format", "moodle", "--roster", str(roster)]) == 0
    assert [row[:4] for row in csv.reader(out.read_text().splitlines())] == [
        ["Full name", "ID number", "Email address", "hw"], ["Ada Lovelace", "", "", "3.5"]]  # fmt: skip


def test_grading_again_keeps_the_marks_of_unchanged_answers(graded: Path, tmp_path: Path) -> None:
    _sheet_with(graded, MARKS)
    bob = _notebook(tmp_path / "bob" / f"{EX06}.ipynb", {"ex06_q2": "Another answer."})
    with zipfile.ZipFile(tmp_path / "subs" / "bob.zip", "w") as archive:
        archive.write(bob, "work/exercises/" + bob.name)
    assert main(["grade", str(tmp_path / "subs"), "--out", str(graded), "--exercises", "ex06_1", "--config",
                 str(tmp_path / "grading.toml"), "--no-progress", "--only", "bob"]) == 0  # fmt: skip
    marks = {
        (r["student"], r["question"]): (r["answer"], r["points"], r["comment"])
        for r in _rows(graded.parent / "written.csv")
    }
    assert marks[("ada", "ex06_q3")] == ("Padding is ignored.", "3", "Right.")
    assert marks[("bob", "ex06_q2")] == ("Another answer.", "", "")
    sheet = graded.parent / "written.csv"
    sheet.write_text(sheet.read_text().replace("points,comment", "score,comment", 1))
    report = graded.with_suffix(".json").read_bytes()
    assert main(["grade", str(tmp_path / "subs"), "--out", str(graded), "--exercises", "ex06_1", "--no-progress"]) == 2
    assert graded.with_suffix(".json").read_bytes() == report, "a sheet being filled in is refused before grading"


@pytest.mark.parametrize(
    ("change", "part"),
    [
        ({("ada", "ex06_q3"): ("4", "")}, "row 4 (ada, ex06_q3), column points: 4 is above the question's 3 points"),
        ({("bob", "ex06_q2"): ("two", "")}, "row 6 (bob, ex06_q2), column points: 'two' is not a number"),
        ({("bob", "ex06_q2"): ("-1", "")}, "row 6 (bob, ex06_q2), column points: -1 must be a number from 0 to 2"),
        ({("bob", "ex06_q2"): ("nan", "")}, "row 6 (bob, ex06_q2), column points: nan must be a number from 0 to 2"),
        ({("bob", "ex06_q2"): ("", "")}, "row 6 (bob, ex06_q2), column points: empty; give the answer its points"),
        ("student", "row 2, column student: 'eve' is not a student of the report"),
        ("question", "row 2, column question: 'ex06_q9' is not a written question of the report"),
        ("twice", "row 3, columns student and question: ada ex06_q1 is given twice"),
        ("header", "the header lacks the column(s) points"),
    ],
)
def test_grade_written_refuses_bad_rows_in_one_line_and_writes_nothing(
    graded: Path, capsys: pytest.CaptureFixture, change: object, part: str
) -> None:
    sheet = _sheet_with(graded, {**MARKS, **change} if isinstance(change, dict) else MARKS)
    if isinstance(change, str):
        lines = sheet.read_text().splitlines()
        first = lines[1]
        lines[1] = {"student": first.replace("ada,", "eve,", 1), "question": first.replace("ex06_q1", "ex06_q9", 1),
                    "twice": first, "header": first}[change]  # fmt: skip
        lines.insert(2, first) if change == "twice" else None
        lines[0] = lines[0].replace("points,comment", "score,comment") if change == "header" else lines[0]
        sheet.write_text("\n".join(lines) + "\n")
    reports = [graded, graded.with_suffix(".json"), graded.parent / "feedback" / "hw" / "ada.md"]
    before = [p.read_bytes() for p in reports]
    capsys.readouterr()
    assert main(["grade-written", str(sheet), "--report", str(graded)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {sheet}") and part in err, err
    assert [p.read_bytes() for p in reports] == before, "nothing is written when a row is refused"
