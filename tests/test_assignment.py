"""``assignment --for nbgrader|otter``, without the tools: the notebooks cut into parts, the cells each
tool is given, the course's check that the graded cells run, the requirements, and bad input.
(tests/test_graders_nbgrader.py and tests/test_graders_otter.py grade students with the real tools.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

from tests import graders
from tests.graders import ROOM
from transformer_course_tools.cli import main
from transformer_course_tools.exercises.checks.registry import load_checks
from transformer_course_tools.exercises.questions import course_questions
from transformer_course_tools.exercises.regions import BEGIN
from transformer_course_tools.grading import assignment, course_check, load_config, nbgrader, otter

pytestmark = pytest.mark.complete_edition
ROOT = Path(__file__).resolve().parent.parent
WORKED = sorted((ROOT / "solutions").glob("ex[0-9][0-9]_*.py"))


def _handout(exercises: list[str], questions: str = "") -> assignment.Handout:
    config = load_config(None)
    if questions:
        config.written_questions = questions.split()
    return assignment.handout(ROOT, config, exercises, None)


@pytest.mark.parametrize("path", WORKED, ids=[p.stem for p in WORKED])
def test_every_worked_notebook_is_cut_into_the_parts_the_tools_treat_apart(path: Path) -> None:
    parts = assignment.notebook_parts(path)
    cells = jupytext.read(path).cells
    asked = [q for q in course_questions(ROOT) if q.startswith(path.stem[:4])]
    assert [p.question for p in parts if p.kind == "question"] == asked  # the ids grade and grading.toml use
    assert sum(p.source.count(BEGIN) for p in parts) == sum(c.source.count(BEGIN) for c in cells)
    assert all(p.kind in ("try", "question") for p in parts if BEGIN in p.source)
    assert all(p.source.count(BEGIN) == 1 for p in parts if p.kind == "question")  # one question per part
    kinds = [p.kind for p in parts]
    assert kinds[:2] == ["text", "colab"] and ("setup" in kinds or "check" not in kinds)  # ex13: questions only
    headings = [p.exercise for p in parts if p.kind == "text" and p.exercise]
    for part in parts:
        if part.kind in ("try", "check"):
            assert part.exercise in headings, f"{path.stem}: {part.kind} cell of {part.exercise} outside its section"


def test_a_chapter_gives_the_handout_of_its_exercises() -> None:
    listed = sorted(i for i in load_checks() if i.startswith("ex03_"))
    assert list(_handout(["ex03"]).exercises) == list(_handout(listed).exercises) == listed
    assert _handout(["ex03"]).notebooks == ["ex03_attention"]


def test_a_markdown_cell_with_two_questions_gives_one_part_each() -> None:
    source = f"Why?\n\n{BEGIN}\nBecause.\n### END SOLUTION\nAnd how?\n{BEGIN}\nSo.\n### END SOLUTION\nThe end."
    parts = assignment._questions(source, iter(["ex11_q3", "ex11_q4"]))
    assert [(p.kind, p.question) for p in parts] == [("question", "ex11_q3"), ("question", "ex11_q4"), ("text", None)]
    assert assignment.split_question(parts[1].source) == ("And how?", "So.")
    assert parts[2].source == "The end."


def test_nbgrader_gets_graded_tests_answers_and_locked_cells() -> None:
    handout = _handout(["ex03_1", "ex03_2"], "ex03_q1 ex03_q4")
    handout.exercises["ex03_1"] = 2.0
    notebook = nbgrader.assignment_notebook(ROOT / "solutions" / "ex03_attention.py", handout)
    meta = {
        c.metadata["nbgrader"]["grade_id"]: (c, c.metadata["nbgrader"])
        for c in notebook.cells
        if "nbgrader" in c.metadata
    }
    graded = {i: m["points"] for i, (_, m) in meta.items() if m["grade"]}
    assert graded == {"ex03_1": 2.0, "ex03_2": 1.0, "ex03_q1": 1.0, "ex03_q4": 1.0}
    assert 'run_course_check("ex03_1")' in meta["ex03_1"][0].source and meta["ex03_1"][1]["locked"]
    for cell in notebook.cells:  # nbgrader refuses a region outside a solution cell; ours leave none ungraded
        if BEGIN in cell.source:
            assert cell.metadata["nbgrader"]["solution"], cell.source
        elif "nbgrader" not in cell.metadata:  # a question not graded here: cleared, the student's to fill
            assert "YOUR ANSWER HERE" in cell.source
    setup = next(c for c in notebook.cells if "from transformer_course import" in c.source)
    assert setup.metadata["nbgrader"]["locked"] and setup.metadata["editable"] is False
    assert not any("google.colab" in c.source for c in notebook.cells)  # the Colab cell would clone the answers


def test_nbgrader_config_names_the_students_files_and_the_stubs() -> None:
    handout = _handout(["ex03_1", "ex04_1"], " ")
    handout.name = "hw3"

    class Section(dict):
        def __getattr__(self, name: str) -> object:
            return self.setdefault(name, Section())

        def __setattr__(self, name: str, value: object) -> None:
            self[name] = value

    config = Section()
    exec(nbgrader.config_text(handout), {"get_config": lambda: config})  # noqa: S102 - our own file
    assert config.Autograde.exclude_overwriting == {
        "hw3": ["transformer_course/attention.py", "transformer_course/multihead.py"]
    }
    assert config.ClearSolutions.code_stub == {"python": "# YOUR CODE HERE"}
    assert config.ClearSolutions.text_stub == "YOUR ANSWER HERE"
    assert config.OverwriteCells.add_missing_cells is True
    assert config.Execute.timeout > 60


def test_otter_master_puts_each_answer_in_otters_blocks() -> None:
    import yaml

    handout = _handout(["ex03_1", "ex03_2"], "ex03_q1").only("ex03_attention")
    notebook = otter.master_notebook(ROOT / "solutions" / "ex03_attention.py", handout)
    cells, depth, questions = notebook.cells, [], []
    settings = yaml.safe_load(cells[0].source)
    assert settings["name"] == "ex03_attention" and settings["run_tests"] is False
    assert settings["export_cell"]["files"] == [ROOM] and "transformer_course" in settings["files"]
    for cell in cells[1:]:
        head = cell.source.split("\n")[0]
        if cell.cell_type == "raw" and head.startswith("# BEGIN "):
            depth.append(head.split()[2])
            if head == "# BEGIN QUESTION":
                questions.append(yaml.safe_load(cell.source))
        elif cell.cell_type == "raw" and head.startswith("# END "):
            assert depth.pop() == head.split()[2]
        elif "# BEGIN SOLUTION" in cell.source or "### END SOLUTION" in cell.source:
            assert depth[-1:] == ["SOLUTION"], cell.source  # Otter strips solutions in its blocks only
        if depth[-1:] == ["SOLUTION"] and cell.cell_type == "code":
            assert "### BEGIN SOLUTION" not in cell.source  # Otter's marker is '# BEGIN SOLUTION'
    assert depth == []
    assert questions == [{"name": "ex03_1", "points": 1}, {"name": "ex03_q1", "manual": True, "points": 1},
                         {"name": "ex03_2", "points": 1}]  # fmt: skip
    tests = [c.source for c in cells if "run_course_check" in c.source]
    assert len(tests) == 2 and all("print" not in t for t in tests)  # a doctest: output would have to match
    assert not any(c.source.strip() == 'check("ex03_1")' for c in cells)  # the test took its place


def test_the_requirements_pin_the_courses_pytorch_as_its_cpu_build(tmp_path: Path) -> None:
    lines = assignment.requirements(ROOT).splitlines()
    assert lines[:2] == ["--extra-index-url https://download.pytorch.org/whl/cpu", "torch==2.13.0+cpu"]
    assert "TORCH_SPEC ?= torch==2.13.0" in (ROOT / "Makefile").read_text(encoding="utf-8")
    assert any(line.startswith("numpy") for line in lines) and not any(line.startswith("torch>") for line in lines)
    (tmp_path / "Makefile").write_text("TORCH_SPEC ?= torch\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(ValueError, match="names no TORCH_SPEC"):
        assignment.requirements(tmp_path)


# ---------------------------------------------------------------- the check the graded cells run


def _folder(tmp_path: Path, exercises: list[str], timeout_s: float | None = None) -> Path:
    folder = tmp_path / "release"
    folder.mkdir(parents=True)
    handout = _handout(exercises, " ")
    assignment.write_package(ROOT, folder, handout)
    if timeout_s is not None:
        settings = json.loads((folder / assignment.SETTINGS).read_text(encoding="utf-8"))
        for exercise in settings["exercises"].values():
            exercise["timeout_s"] = timeout_s
        (folder / assignment.SETTINGS).write_text(json.dumps(settings), encoding="utf-8")
    return folder


def test_a_clean_copy_takes_the_courses_files_from_the_tools_copy_and_only_the_rooms_from_the_student(
    tmp_path: Path,
) -> None:
    here, trusted, out = tmp_path / "submission", tmp_path / "source" / "files", tmp_path / "copy"
    settings = {"trusted": "../source/files", "files": ["pkg/__init__.py", "pkg/checks.py", "pkg/room.py"],
                "rooms": ["pkg/room.py"]}  # fmt: skip
    for folder, text in ((trusted, "course"), (here, "student")):
        (folder / "pkg" / "__pycache__").mkdir(parents=True)
        for name in ("__init__.py", "checks.py", "room.py"):
            (folder / "pkg" / name).write_text(text, encoding="utf-8")
    (here / "pkg" / "extra.py").write_text("shadow", encoding="utf-8")
    (here / "pkg" / "__pycache__" / "checks.cpython-311.pyc").write_bytes(b"forged")
    assert course_check.clean_copy(here, settings, out) is None
    assert {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()} == {
        "pkg/__init__.py": "course", "pkg/checks.py": "course", "pkg/room.py": "student"}  # fmt: skip
    (here / "pkg" / "room.py").unlink()
    (here / "room.py").write_text("loose", encoding="utf-8")  # a Gradescope upload of loose files
    assert course_check.clean_copy(here, settings, tmp_path / "copy2") is None
    assert (tmp_path / "copy2" / "pkg" / "room.py").read_text() == "loose"
    (here / "room.py").unlink()
    assert course_check.clean_copy(here, settings, tmp_path / "copy3") == "pkg/room.py"
    no_tools_copy = {**settings, "trusted": "../nowhere"}  # the student's own run: their folder is the course
    assert course_check.clean_copy(here, no_tools_copy, tmp_path / "copy4") == "pkg/room.py"


def test_the_graded_check_passes_the_right_file_and_says_what_is_wrong_with_the_wrong_one(tmp_path: Path) -> None:
    folder = _folder(tmp_path, ["ex03_1"])
    stub = course_check.run_course_check("ex03_1", folder)
    assert stub.status == "not implemented" and not stub.passed
    (folder / ROOM).write_text(graders.wrong(), encoding="utf-8")
    checks = folder / "transformer_course_tools/exercises/checks/ch03.py"  # the student's copy, edited to pass anything
    judge = "def _judge_scores(case: Case, got: Outcome) -> None:\n"
    checks.write_text(checks.read_text(encoding="utf-8").replace(judge, judge + "    return\n"), encoding="utf-8")
    trusted = _folder(tmp_path / "tool", ["ex03_1"])  # the tool's own copy, as Otter's autograder keeps it
    settings = json.loads((folder / assignment.SETTINGS).read_text(encoding="utf-8"))
    settings["trusted"] = os.path.relpath(trusted, folder)
    (folder / assignment.SETTINGS).write_text(json.dumps(settings), encoding="utf-8")
    wrong = course_check.run_course_check("ex03_1", folder)
    assert wrong.status == "failed", wrong.line()
    assert "the scores are divided by d_k; divide by sqrt(d_k) instead" in wrong.line()
    (folder / ROOM).write_text(graders.right(), encoding="utf-8")
    right = course_check.run_course_check("ex03_1", folder)
    assert right.passed and right.line().startswith("✓ ex03_1"), right.line()


def test_the_graded_check_stops_a_hang_and_names_a_missing_file(tmp_path: Path) -> None:
    folder = _folder(tmp_path, ["ex03_1"], timeout_s=3)
    text = graders.right().replace("    d_k = q.shape[-1]\n", "    d_k = q.shape[-1]\n    while True:\n        pass\n")
    (folder / ROOM).write_text(text, encoding="utf-8")
    hung = course_check.run_course_check("ex03_1", folder)
    assert hung.status == "timed out" and "still running after 3 s" in hung.message
    (folder / ROOM).unlink()
    missing = course_check.run_course_check("ex03_1", folder)
    assert missing.status == "error" and f"{ROOM} is not in the submission" in missing.message
    assert course_check.run_course_check("ex03_9", folder).status == "error"  # not an exercise of this assignment


def test_the_graded_cell_runs_the_courses_check_beside_a_package_named_like_it(tmp_path: Path) -> None:
    folder = _folder(tmp_path, ["ex03_1"])
    (folder / ROOM).write_text(graders.wrong(), encoding="utf-8")
    (folder / "transformer_course_check").mkdir()  # imported before the module of that name
    (folder / "transformer_course_check" / "__init__.py").write_text(graders.FAKE_CHECK, encoding="utf-8")
    cell = assignment.check_cell("ex03_1")
    done = subprocess.run([sys.executable, "-c", cell], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "AssertionError: ✗ ex03_1" in done.stderr, done.stdout + done.stderr
    assert "the scores are divided by d_k" in done.stdout  # the line it prints, as the feedback shows it


# ---------------------------------------------------------------- nothing leaks, bad input refused


def test_a_release_with_a_solution_line_is_refused(tmp_path: Path) -> None:
    clean, leaking = tmp_path / "clean", tmp_path / "leaking"
    for folder in (clean, leaking):
        folder.mkdir()
        (folder / "hello.py").write_text("print('hello')\n", encoding="utf-8")
    answer = next(line.strip() for line in graders.right().splitlines() if "math.sqrt(d_k)" in line)
    (leaking / "notes.py").write_text(f"def f(q, k, d_k):\n    {answer}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="would remain in the second release:\n  notes.py"):
        assignment.refuse_leaks(ROOT, {clean: "the first release", leaking: "the second release"})


def test_the_command_exits_2_with_one_line_on_bad_input() -> None:
    done = subprocess.run([sys.executable, "-m", "transformer_course", "assignment", "--for", "nbgrader", "course-out"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "OUT_DIR must be outside the course" in done.stderr and not (ROOT / "course-out").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--for", "nbgrader", "{tmp}", "--name", "Homework 3"], "--name: nbgrader's assignment is a folder"),
        (["--for", "otter", "{tmp}", "--exercises", "ex03_9"], "unknown exercise 'ex03_9'"),
        (["--for", "otter", "{tmp}", "--exercises", "ex10"], "no exercises in chapter 10"),
        (["--for", "otter", "{tmp}", "--config", "{tmp}.toml"], "new.toml does not exist"),
        (["--for", "otter", "{full}"], "exists and is not an empty folder"),
    ],
)
def test_bad_input_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture, args: list[str],
                                          says: str) -> None:  # fmt: skip
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x", encoding="utf-8")
    assert main(["assignment", *(a.format(tmp=tmp_path / "new", full=tmp_path / "full") for a in args)]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and says in said
    assert not (tmp_path / "new").exists()


def test_a_missing_tool_is_named_with_where_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    from transformer_course_tools.cli import assignment as command

    monkeypatch.setattr(command, "missing", lambda module: module == "otter")
    assert main(["assignment", "--for", "otter", str(tmp_path / "out"), "--exercises", "ex03_1"]) == 2
    said = capsys.readouterr().err
    assert "otter-grader is not installed in this Python" in said and "make graders" in said
    assert not (tmp_path / "out").exists()


def test_a_failing_step_leaves_no_half_assignment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture) -> None:  # fmt: skip
    from transformer_course_tools.cli import assignment as command

    def leaking(out: Path, handout: assignment.Handout, root: Path) -> Path:
        raise ValueError("solution text (or structure) would remain in nbgrader's release")

    monkeypatch.setattr(command, "missing", lambda module: False)
    monkeypatch.setattr(nbgrader, "generate", leaking)
    assert main(["assignment", "--for", "nbgrader", str(tmp_path / "out"), "--exercises", "ex03_1"]) == 2
    assert "would remain in nbgrader's release" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # its source/ held the worked notebooks


def test_settings_the_tools_do_not_carry_are_named() -> None:
    from transformer_course_tools.cli import assignment as command

    config = load_config(None)
    assert command._not_carried(config, "otter") == []
    config.hidden, config.scoring = True, "cases"
    (line,) = command._not_carried(config, "otter")
    assert "hidden = true" in line and 'scoring = "cases"' in line and "not carried to otter" in line
