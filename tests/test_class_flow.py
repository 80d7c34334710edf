"""A class from handout to gradebook (issue 29's "done when"), through the command line as the README's
"For instructors" describes it: a handout, six students' submissions of one assignment (ex06_1 and
ex06_2, with written answers), grade with hidden cases and partial credit, the rubric sheet filled
in, grade-written, a Canvas gradebook, and one student graded again after fixing their file."""

from __future__ import annotations

import csv
import json
import os
import shutil
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from transformer_course_tools.cli import main
from transformer_course_tools.exercises.edition import TEXT_STUB, build_student_edition

pytestmark = pytest.mark.complete_edition
ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "transformer_course"
NOTEBOOK = "exercises/ex06_decoder_and_masks.ipynb"
BEFORE_DUE = time.mktime((2026, 1, 1, 12, 0, 0, 0, 0, -1))

# The students' own answers, written in place of the handout's stubs (not the worked solutions' lines)
CAUSAL = "    rows = torch.arange(size, device=device)\n    return rows[:, None] >= rows[None, :]\n"
FITTED = "    return torch.ones(8, 8, dtype=torch.bool, device=device).tril()[:size, :size]  # right up to 8\n"
PADDING = "    return tokens.ne(pad_id).unsqueeze(1).unsqueeze(1)\n"

GRADING_TOML = """\
[grading]
exercises = ["ex06_1", "ex06_2"]
scoring = "cases"
hidden = true
assignment = "Homework 6"
timeout_s = 120

[points]
ex06_1 = 2
ex06_2 = 3

[written]
questions = ["ex06_q1", "ex06_q2"]
ex06_q2 = 2
"""
ROSTER = (
    "folder,name,id,sis_user_id,sis_login_id,section,email\n"
    "ada,Ada Lovelace,101,S1,ada1,A,ada@uni.edu\nbob,Bob Kahn,102,S2,bob2,A,bob@uni.edu\n"
    "cy,Cy Young,103,S3,cy3,B,cy@uni.edu\ndan,Dan Bricklin,104,S4,dan4,B,dan@uni.edu\n"
    "eve,Eve Curie,105,S5,eve5,B,eve@uni.edu\nfay,Fay Ray,106,S6,fay6,A,fay@uni.edu\n"
)


def _masks(handout: Path, causal: str | None, padding: str | None) -> str:
    """The handout's masks.py with the two stubs replaced by these bodies (None: the stub left)."""
    lines = []
    for line in (handout / PACKAGE / "masks.py").read_text().splitlines(keepends=True):
        if line.startswith("    raise NotImplementedError('ex06_1") and causal is not None:
            line = causal
        elif line.startswith("    raise NotImplementedError('ex06_2") and padding is not None:
            line = padding
        lines.append(line)
    return "".join(lines)


def _answered(handout: Path, answers: list[str | None]) -> str:
    """The handout's ex06 notebook with its k-th written question answered by ``answers[k]`` (None, or
    past the end of the list: left as handed out)."""
    notebook = nbformat.read(handout / NOTEBOOK, as_version=4)
    k = 0
    for cell in notebook.cells:
        parts = cell.source.split(TEXT_STUB)
        filled = [parts[0]]
        for part in parts[1:]:
            answer = answers[k] if k < len(answers) else None
            filled += [TEXT_STUB if answer is None else answer, part]
            k += 1
        cell.source = "".join(filled)
    return nbformat.writes(notebook)


def _student(folder: Path, handout: Path, masks: str, notebook: str | None, when: float | None) -> Path:
    shutil.copytree(handout / PACKAGE, folder / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / PACKAGE / "masks.py").write_text(masks)
    if notebook is not None:
        (folder / "exercises").mkdir(parents=True)
        (folder / NOTEBOOK).write_text(notebook)
    if when is not None:
        for path in [folder, *folder.rglob("*")]:
            os.utime(path, (when, when))
    return folder


def _number(value: float) -> str:
    return f"{value:g}"


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_a_class_from_handout_to_gradebook(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    start = time.perf_counter()
    # The handout: the folder `student-edition` writes (its check for leftover solution text is
    # tests/test_student_edition.py's)
    handout = build_student_edition(ROOT, tmp_path / "handout", check_leaks=False)
    assert "raise NotImplementedError('ex06_1" in (handout / PACKAGE / "masks.py").read_text()

    subs = tmp_path / "submissions"
    right = _masks(handout, CAUSAL, PADDING)
    _student(subs / "ada", handout, right, _answered(handout, ["Ada: the mask hides the future.", "Ada two."]),
             BEFORE_DUE)  # fmt: skip
    bob = _student(tmp_path / "bob-edition" / "course-main", handout, right,
                   _answered(handout, ["Bob: because of teacher forcing."]), BEFORE_DUE)  # fmt: skip
    with zipfile.ZipFile(subs / "bob.zip", "w") as archive:
        for path in sorted(bob.rglob("*")):
            archive.write(path, path.relative_to(bob.parent).as_posix())
    _student(subs / "cy", handout, _masks(handout, FITTED, PADDING), None, BEFORE_DUE)  # right for small sizes
    copied = (ROOT / PACKAGE / "masks.py").read_text()  # the complete edition's file, verbatim
    _student(subs / "dan", handout, copied, _answered(handout, [None, "Dan two."]), BEFORE_DUE)
    _student(subs / "eve", handout, right, None, None)  # handed in now, after the due time
    _student(subs / "fay", handout, _masks(handout, None, None), None, BEFORE_DUE)  # the handout untouched
    (subs / "gus").mkdir()  # an empty folder: graded, nothing to find
    (subs / "notes.txt").write_text("not a submission")
    config = tmp_path / "grading.toml"
    config.write_text(GRADING_TOML)
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)

    grades = tmp_path / "grades"
    common = ["--config", str(config), "--due", "2026-06-01T23:59", "--jobs", "1", "--no-progress"]
    assert main(["grade", str(subs), "--out", str(grades / "report.csv"), *common]) == 0
    printed = capsys.readouterr().out
    _graded(grades, printed)

    # The rubric sheet: points and comments for the answers (an unanswered row left blank counts 0)
    sheet = _rows(grades / "written.csv")
    assert [(r["student"], r["question"], r["answer"], r["max_points"], r["points"], r["comment"]) for r in sheet] == [
        ("ada", "ex06_q1", "Ada: the mask hides the future.", "1", "", ""), ("ada", "ex06_q2", "Ada two.", "2", "", ""),
        ("bob", "ex06_q1", "Bob: because of teacher forcing.", "1", "", ""), ("bob", "ex06_q2", "", "2", "", ""),
        ("cy", "ex06_q1", "", "1", "", ""), ("cy", "ex06_q2", "", "2", "", ""),
        ("dan", "ex06_q1", "", "1", "", ""), ("dan", "ex06_q2", "Dan two.", "2", "", ""),
        ("eve", "ex06_q1", "", "1", "", ""), ("eve", "ex06_q2", "", "2", "", ""),
        ("fay", "ex06_q1", "", "1", "", ""), ("fay", "ex06_q2", "", "2", "", ""),
        ("gus", "ex06_q1", "", "1", "", ""), ("gus", "ex06_q2", "", "2", "", ""),
    ]  # fmt: skip
    marks = {("ada", "ex06_q1"): ("1", "Right."), ("ada", "ex06_q2"): ("1.5", "Say which axis B meets."),
             ("bob", "ex06_q1"): ("0.5", "Teacher forcing is not why."), ("dan", "ex06_q2"): ("2", "Good.")}  # fmt: skip
    for row in sheet:
        row["points"], row["comment"] = marks.get((row["student"], row["question"]), ("", ""))
    with open(grades / "written.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(sheet[0]))
        writer.writeheader()
        writer.writerows(sheet)
    assert main(["grade-written", str(grades / "written.csv"), "--report", str(grades / "report.csv")]) == 0
    capsys.readouterr()
    totals = {"ada": ("1", "1.5", "7.5", "93.8"), "bob": ("0.5", "0", "5.5", "68.8"), "cy": ("0", "0", "4.6", "57.5"),
              "dan": ("0", "2", "7", "87.5"), "eve": ("0", "0", "5", "62.5"), "fay": ("0", "0", "0", "0.0"),
              "gus": ("0", "0", "0", "0.0")}  # fmt: skip
    rows = _rows(grades / "report.csv")
    assert {r["student"]: (r["ex06_q1"], r["ex06_q2"], r["total"], r["percent"]) for r in rows} == totals
    report = json.loads((grades / "report.json").read_text())
    for student in report["students"]:
        q1, q2, total, _ = totals[student["student"]]
        assert (student["total"], student["max_points"]) == (float(total), 8.0)
        assert [student["written"][q]["points"] for q in ("ex06_q1", "ex06_q2")] == [float(q1), float(q2)]
    assert report["students"][0]["written"]["ex06_q2"]["comment"] == "Say which axis B meets."
    ada = (grades / "feedback" / "Homework 6" / "ada.md").read_text()
    assert "**7.5 / 8 points.**" in ada and "| ex06_q1 | 1 / 1 | Right. |" in ada
    assert "| ex06_q2 | 1.5 / 2 | Say which axis B meets. |" in ada
    bob = (grades / "feedback" / "Homework 6" / "bob.md").read_text()
    assert "| ex06_q1 | 0.5 / 1 | Teacher forcing is not why. |" in bob and "| ex06_q2 | 0 / 2 | not answered |" in bob

    # The gradebook for Canvas, from the same report
    canvas = grades / "canvas.csv"
    assert main(["grade-written", str(grades / "written.csv"), "--report", str(canvas), "--json",
                 str(grades / "report.json"), "--format", "canvas", "--roster", str(roster)]) == 0  # fmt: skip
    assert f"warning: not in the roster, so not in {canvas}: gus" in capsys.readouterr().out
    with open(canvas, newline="") as handle:
        assert list(csv.reader(handle)) == [
            ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Homework 6"],
            ["Points Possible", "", "", "", "", "8"],
            ["Ada Lovelace", "101", "S1", "ada1", "A", "7.5"],
            ["Bob Kahn", "102", "S2", "bob2", "A", "5.5"],
            ["Cy Young", "103", "S3", "cy3", "B", "4.6"],
            ["Dan Bricklin", "104", "S4", "dan4", "B", "7"],
            ["Eve Curie", "105", "S5", "eve5", "B", "5"],
            ["Fay Ray", "106", "S6", "fay6", "A", "0"],
        ]

    # cy fixes the mask and is graded again, alone
    before = {r["student"]: r for r in _rows(grades / "report.csv")}
    feedback = grades / "feedback" / "Homework 6"
    others = {name: (feedback / f"{name}.md").stat().st_mtime_ns for name in ("ada", "bob", "dan", "eve", "fay", "gus")}
    (subs / "cy" / PACKAGE / "masks.py").write_text(right)
    for path in [subs / "cy", *(subs / "cy").rglob("*")]:
        os.utime(path, (BEFORE_DUE, BEFORE_DUE))
    assert main(["grade", str(subs), "--out", str(grades / "report.csv"), *common, "--only", "cy"]) == 0
    capsys.readouterr()
    after = {r["student"]: r for r in _rows(grades / "report.csv")}
    assert {name: row for name, row in after.items() if name != "cy"} == {
        name: row for name, row in before.items() if name != "cy"
    }
    cy = after["cy"]
    assert (cy["ex06_1"], cy["ex06_2"], cy["total"], cy["percent"], cy["ex06_1 cases"], cy["late"]) == (
        "2", "3", "5", "62.5", "10 of 10", "no")  # fmt: skip
    assert cy["fingerprint"] == before["ada"]["fingerprint"]  # now the same package as ada's
    assert {name: (feedback / f"{name}.md").stat().st_mtime_ns for name in others} == others
    result = json.loads((grades / "report.json").read_text())["students"][2]["results"]["ex06_1"]
    assert (result["status"], result["hidden_passed"], result["hidden_total"]) == ("passed", 5, 5)
    seconds = time.perf_counter() - start
    assert seconds < 300, f"the class took {seconds:.0f} s"


def _graded(grades: Path, printed: str) -> None:
    """What grade wrote: every number of the CSV and the JSON, the flags, the skipped entry."""
    hashes = {}
    rows = _rows(grades / "report.csv")
    assert list(rows[0]) == ["student", "ex06_1", "ex06_2", "ex06_q1", "ex06_q2", "total", "max_points", "percent",
                             "ex06_1 cases", "ex06_2 cases", "newest_file", "late", "fingerprint", "flags"]  # fmt: skip
    for row in rows:
        hashes[row["student"]] = row.pop("fingerprint")
    assert [list(row.values()) for row in rows] == [
        ["ada", "2", "3", "", "", "5", "8", "62.5", "10 of 10", "8 of 8", "2026-01-01T12:00:00+00:00", "no", ""],
        ["bob", "2", "3", "", "", "5", "8", "62.5", "10 of 10", "8 of 8", "2026-01-01T12:00:00+00:00", "no", ""],
        ["cy", "1.6", "3", "", "", "4.6", "8", "57.5", "8 of 10", "8 of 8", "2026-01-01T12:00:00+00:00", "no", ""],
        ["dan", "2", "3", "", "", "5", "8", "62.5", "10 of 10", "8 of 8", "2026-01-01T12:00:00+00:00", "no",
         "solution markers (### BEGIN SOLUTION) in masks.py; ex06_1: the same code as the worked solution; "
         "ex06_2: the same code as the worked solution"],
        ["eve", "2", "3", "", "", "5", "8", "62.5", "10 of 10", "8 of 8", rows[4]["newest_file"], "yes", ""],
        ["fay", "0", "0", "", "", "0", "8", "0.0", "0 of 10", "0 of 8", "2026-01-01T12:00:00+00:00", "no", ""],
        ["gus", "0", "0", "", "", "0", "8", "0.0", "0 of 10", "0 of 8", "", "", ""],  # nothing to date
    ]  # fmt: skip
    assert rows[4]["newest_file"] > "2026-06-01T23:59"
    assert hashes["ada"] == hashes["bob"] == hashes["eve"] != hashes["cy"]  # the same package, in a zip or not
    assert hashes.pop("gus") == "" and len(set(hashes.values())) == 4 and all(len(h) == 64 for h in hashes.values())

    report = json.loads((grades / "report.json").read_text())
    assert report["skipped"] == [{"entry": "notes.txt", "why": "neither a folder nor a .zip archive"}]
    assert report["settings"]["scoring"] == "cases" and report["settings"]["hidden"] is True
    assert report["settings"]["assignment"] == "Homework 6"
    assert report["settings"]["written_questions"] == ["ex06_q1", "ex06_q2"]
    assert {q: w["points"] for q, w in report["written"].items()} == {"ex06_q1": 1.0, "ex06_q2": 2.0}
    students = {s["student"]: s for s in report["students"]}
    assert list(students) == ["ada", "bob", "cy", "dan", "eve", "fay", "gus"]
    assert students["bob"]["package"] == "bob.zip: course-main/transformer_course"
    counts = {  # (status, points, cases passed, cases, hidden passed, hidden cases) of ex06_1 and ex06_2
        "ada": [("passed", 2.0, 10, 10, 5, 5), ("passed", 3.0, 8, 8, 4, 4)],
        "bob": [("passed", 2.0, 10, 10, 5, 5), ("passed", 3.0, 8, 8, 4, 4)],
        "cy": [("failed", 1.6, 8, 10, 3, 5), ("passed", 3.0, 8, 8, 4, 4)],
        "dan": [("passed", 2.0, 10, 10, 5, 5), ("passed", 3.0, 8, 8, 4, 4)],
        "eve": [("passed", 2.0, 10, 10, 5, 5), ("passed", 3.0, 8, 8, 4, 4)],
        "fay": [("not implemented", 0.0, 0, 10, 0, 5), ("not implemented", 0.0, 0, 8, 0, 4)],
        "gus": [("error", 0.0, 0, 10, 0, 5), ("error", 0.0, 0, 8, 0, 4)],
    }
    answered = {"ada": [True, True], "bob": [True, False], "dan": [False, True]}
    for name, student in students.items():
        results = [student["results"][e] for e in ("ex06_1", "ex06_2")]
        keys = ("status", "points", "cases_passed", "cases_total", "hidden_passed", "hidden_total")
        assert [tuple(r[k] for k in keys) for r in results] == counts[name], name
        assert [r["max_points"] for r in results] == [2.0, 3.0]
        assert student["total"] == sum(c[1] for c in counts[name]) and student["max_points"] == 8.0
        assert student["late"] == {"eve": True, "gus": None}.get(name, False)
        assert bool(student["flags"]) == (name == "dan")
        written = [student["written"][q] for q in ("ex06_q1", "ex06_q2")]
        assert [w["answered"] for w in written] == answered.get(name, [False, False]), name
        assert [(w["max_points"], w["points"]) for w in written] == [(1.0, None), (2.0, None)]
    assert students["cy"]["results"]["ex06_1"]["message"].startswith(
        "the 5 cases you can run pass, but only 3 of 5 hidden cases passed"
    )
    assert "[0 of 5 hidden cases passed]" in students["fay"]["results"]["ex06_1"]["message"]
    assert students["gus"]["results"]["ex06_2"]["message"] == (
        "not graded: no transformer_course/ package found in the submission gus/"
    )

    feedback = grades / "feedback" / "Homework 6"
    assert sorted(p.name for p in feedback.iterdir()) == [f"{n}.md" for n in students]
    symbols = {"passed": "✓ passed", "failed": "✗ failed", "not implemented": "○ not implemented", "error": "! error"}
    for name, student in students.items():  # the feedback's table: visible and hidden cases apart
        text = (feedback / f"{name}.md").read_text()
        assert f"**{_number(student['total'])} / 8 points.**" in text, name
        for (status, points, _, _, hidden, hidden_total), shown in zip(counts[name], (5, 4), strict=True):
            visible = shown if status in ("passed", "failed") else 0
            cells = f"| {symbols[status]} | {visible} of {shown}; hidden: {hidden} of {hidden_total} |"
            assert f"{cells} {_number(points)} / {2 if shown == 5 else 3} |" in text, (name, cells)
        assert text.count("| not graded yet |") == 2
    cy = (feedback / "cy.md").read_text()
    assert "5 of 5; hidden: 3 of 5" in cy and "not graded yet" in cy
    assert "after the due time: late" in (feedback / "eve.md").read_text()
    assert "worked solution" not in (feedback / "dan.md").read_text()  # flags are for the instructor only
    assert "skipped notes.txt: neither a folder nor a .zip archive" in printed
    assert "graded 7 submission(s) on 2 exercise(s)" in printed
