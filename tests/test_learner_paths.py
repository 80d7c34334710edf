"""A self-learner's paths through a student edition (issue 49): a file that does not compile is one line on
every path, a chapter's first stop lists all it needs (from a notebook and from a plain script), a few
chapters only, restore without --from, written answers, and the edges (pointers, which code a check runs,
pytest -m in seconds, Ctrl-C in train, long inputs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_course_tools.exercises.checks.registry import load_checks
from transformer_course_tools.exercises.edition import STUDENT_MARK, build_student_edition, restore_exercise

from .kernel import kernel

pytestmark = pytest.mark.complete_edition  # it makes a student edition and writes worked answers into it
ROOT = Path(__file__).resolve().parent.parent
BROKEN = "def broken(:\n"  # what a learner saves by mistake
load_checks()


@pytest.fixture(scope="module")
def edition(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_student_edition(ROOT, tmp_path_factory.mktemp("edition") / "course", check_leaks=False)


@pytest.fixture
def mine(edition: Path, tmp_path: Path) -> Path:
    """A learner's copy of the edition (the same id: the machine remembers where it was made from)."""
    copy = tmp_path / "mine"
    shutil.copytree(edition, copy)
    return copy


def _run(args: list[str], cwd: Path, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    """Python in ``cwd``, importing the package of ``cwd``."""
    environment = {**os.environ, "PYTHONPATH": str(cwd), "TQDM_DISABLE": "1", "COLUMNS": "1000", **env}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=environment, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def _break(course: Path, room: str = "attention.py") -> str:
    """Save ``room`` with a syntax error at its end; returns the line every path must say."""
    path = course / "transformer_course" / room
    source = path.read_text(encoding="utf-8")
    path.write_text(source + BROKEN, encoding="utf-8")
    line = source.count("\n") + 1
    return f"transformer_course/{room} does not compile (line {line}: invalid syntax)"


# -- 1. a file that does not compile ----------------------------------------------------------------------


def test_a_file_that_does_not_compile_is_one_line_for_every_command(mine: Path) -> None:
    said = _break(mine)
    helped = _run(["-m", "transformer_course", "--help"], mine)
    assert helped.returncode == 0 and "train" in helped.stdout and not helped.stderr, helped.stderr
    table = _run(["-m", "transformer_course", "check"], mine)
    assert table.stdout.startswith(f"{said}: fix that line and save, then run the check again.\n"), table.stdout
    assert table.returncode == 1 and table.stdout.count(said) == 1 and "Traceback" not in table.stdout + table.stderr
    one = _run(["-m", "transformer_course", "check", "ex03_1"], mine)
    assert one.stdout.count(said) == 1 and " error " in one.stdout and not one.stderr, one.stdout + one.stderr
    for command in (["train", "--steps", "1", "--quiet"], ["translate", "three"]):
        run = _run(["-m", "transformer_course", *command], mine)
        expected = f"error: {said}: fix that line and save, then run the command again.\n"
        assert (run.returncode, run.stderr, run.stdout) == (2, expected, ""), (command, run.stderr[-2000:])


def test_the_parser_imports_no_room() -> None:
    code = (
        "import sys; from transformer_course_tools.cli import build_parser; build_parser()\n"
        "print(sorted(m for m in sys.modules if m.startswith('transformer_course.')))"
    )
    loaded = json.loads(_run(["-c", code], ROOT).stdout.replace("'", '"'))
    rooms = {path.stem for path in (ROOT / "transformer_course").glob("*.py")} - {"__init__", "__main__"}
    assert not [m for m in loaded if m.split(".")[1] in rooms], loaded


def test_pytest_says_it_in_one_line(mine: Path) -> None:
    said = _break(mine)
    checked = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "ex03_1"], mine)
    text = checked.stdout + checked.stderr
    summary = text.strip().splitlines()[-1]
    assert checked.returncode == 1 and "Traceback" not in text and summary.startswith("1 failed, "), text[-3000:]
    assert "error" not in summary, summary
    assert re.search(r"_+ ex03_1 attention scores", text) and text.count(said) == 2, text  # the section, the summary
    others = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "ex01_1"], mine)
    assert "1 failed" in others.stdout and "○ ex01_1" in others.stdout and said not in others.stdout, others.stdout
    suite = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_layout.py"], mine)
    expected = f"ERROR: {said}: fix that line and save, then run pytest again.\n"
    assert (suite.returncode, (suite.stdout + suite.stderr).strip()) == (4, expected.strip()), (
        suite.stdout + suite.stderr
    )


def test_a_notebook_says_it_once_and_no_traceback(mine: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(mine), "TQDM_DISABLE": "1"}
    with kernel(sys.executable, mine / "exercises", env, tmp_path) as lab:
        setup = next(c for c in _code_cells(mine / "exercises" / "ex03_attention.py") if "setup_chapter(" in c)
        assert "Traceback" not in lab.run(setup)
        assert "○ ex03_1" in lab.run('check("ex03_1")')
        said = _break(mine)
        first = lab.run('check("ex03_1")')
        assert first.strip() == f"✗ {said}: fix that line and save, then re-run this cell. This kernel keeps running " \
                                "the version it had.", first  # fmt: skip
        again = lab.run('check("ex03_1")')  # said by the check this time, once
        assert again.count(said) == 1 and "Traceback" not in again and "not implemented" not in again, again
        stop = lab.run("from transformer_course import scaled_dot_product_attention\n"
                       "scaled_dot_product_attention(*torch.ones(3, 1, 2, 4))")  # fmt: skip
        assert stop.strip() == f"○ ex03_3: {said}: fix that line and save, then re-run this cell.", stop
        refused = _run(["-m", "transformer_course", "restore", "ex03_1"], mine)
        assert refused.returncode == 2 and refused.stderr.startswith(f"error: {said}: fix that line"), refused.stderr
        room = mine / "transformer_course" / "attention.py"
        room.write_text(room.read_text().replace(BROKEN, ""))  # the learner fixes the line
        restore_exercise(mine, "ex03_1", complete=ROOT)  # and writes the answer
        assert "✓ ex03_1" in lab.run('check("ex03_1")')


def _code_cells(py: Path) -> list[str]:
    import jupytext

    return [c.source for c in jupytext.read(py).cells if c.cell_type == "code"]


# -- 5. a chapter's stop lists all it needs ---------------------------------------------------------------

CHAPTER_05 = ["ex03_1", "ex03_2", "ex03_3", "ex04_1", "ex04_2", "ex04_3", "ex05_1", "ex05_2", "ex05_3"]


def test_a_chapter_run_as_a_script_stops_with_the_whole_list(edition: Path) -> None:
    run = _run(["chapters/05_encoder.py"], edition, MPLBACKEND="Agg")
    stop = run.stderr[run.stderr.index("○ ex05_1") :]
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert stop.startswith("○ ex05_1: PositionwiseFeedForward.forward is not written yet — the chapter stops here.")
    assert [line.split()[0] for line in stop.splitlines() if line.startswith("  ex")] == CHAPTER_05, stop
    assert "then run the script again." in stop, stop


def test_a_notebook_that_jupyter_does_not_name_lists_its_chapters_exercises(edition: Path) -> None:
    """nbclient (as Colab) gives the kernel no notebook name: the chapter's set-up cell names its chapter."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = edition / "chapters" / "05_encoder.ipynb"
    client = NotebookClient(nbformat.read(path, as_version=4), timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})  # fmt: skip
    with pytest.raises(CellExecutionError) as stopped:
        client.execute(env={**os.environ, "PYTHONPATH": str(edition)})
    message = re.sub(r"\x1b\[[0-9;]*m", "", str(stopped.value))
    assert "Chapter 05 also runs ex03_1, ex03_2, ex03_3, ex04_1, ex04_2, ex04_3, ex05_2 and ex05_3" in message, message
    assert [line.split()[0] for line in message.splitlines() if line.startswith("  ex")] == CHAPTER_05, message


# -- 6. a few chapters only -------------------------------------------------------------------------------


def test_a_check_needs_only_the_learners_function(mine: Path) -> None:
    """ex05_3 with chapter 04 not written: the check runs the course's multi-head attention (issue 49)."""
    for exercise_id in ("ex05_1", "ex05_2", "ex05_3"):
        restore_exercise(mine, exercise_id, complete=ROOT)
    run = _run(["-m", "transformer_course", "check", "ex05_3", "ex04_3"], mine)
    rows = {line.split()[0]: line for line in run.stdout.splitlines() if line.startswith("ex")}
    assert " passed " in rows["ex05_3"] and " not implemented " in rows["ex04_3"], run.stdout


def test_restore_finds_the_course_the_edition_was_made_from(mine: Path, tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path / "home")}  # no ~/transformer-course here
    run = _run(["-m", "transformer_course", "restore", "ex03_1"], mine, **home)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"ex03_1: worked answer copied from {ROOT} into transformer_course/attention.py")
    assert "(From another complete copy of the course: add --from PATH.)" in run.stdout
    mark = json.loads((mine / STUDENT_MARK).read_text())
    (mine / STUDENT_MARK).write_text(json.dumps(mark | {"id": "another machine's"}))  # a handout: nothing remembered
    refused = _run(["-m", "transformer_course", "restore", "ex03_2"], mine, **home)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "no complete copy of the course found for ex03_2" in refused.stderr and "--from PATH" in refused.stderr
    assert _run(["-m", "transformer_course", "restore", "ex03_2", "--from", str(ROOT)], mine, **home).returncode == 0


# -- 7. written answers -----------------------------------------------------------------------------------


def _answer(course: Path, notebook: str, text: str) -> None:
    """The learner writes ``text`` under the first question of ``notebook`` and saves it."""
    path = course / "exercises" / notebook
    data = json.loads(path.read_text(encoding="utf-8"))
    cell = next(c for c in data["cells"] if c["cell_type"] == "markdown" and "YOUR ANSWER HERE" in "".join(c["source"]))
    cell["source"] = "".join(cell["source"]).replace("YOUR ANSWER HERE", text, 1)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_a_written_answer_shows_the_points_of_a_good_one_once_written(mine: Path) -> None:
    import jupytext

    from transformer_course_tools.exercises.questions import worked_answers_in
    from transformer_course_tools.exercises.written_answers import LEFT_OUT

    cells = [(c.cell_type, c.source) for c in jupytext.read(ROOT / "solutions" / "ex05_encoder.py").cells]
    worked = worked_answers_in(cells, "ex05_encoder")["ex05_q1"]
    code = worked.split("```")[1].splitlines()[1:]  # the worked answer's code block: the exercise's answer
    prose = [line for line in worked.split("```")[2].splitlines() if len(line) > 40]
    before = _run(["-m", "transformer_course", "check", "ex05_q1"], mine)
    assert before.returncode == 1 and before.stdout.startswith("○ ex05_q1 not answered yet: in "), before.stdout
    assert not [line for line in prose if line in before.stdout], "a worked answer shown before the answer"
    assert not [line for line in prose if line in (mine / ".written-answers.json").read_text()], "readable there"
    _answer(mine, "ex05_encoder.ipynb", "The same two layers act on every position, one position at a time.")
    after = _run(["-m", "transformer_course", "check", "ex05_q1"], mine)
    assert after.returncode == 0 and after.stdout.startswith("✓ ex05_q1 answered (13 words). The points a good answer")
    assert all(line in after.stdout for line in prose) and LEFT_OUT in after.stdout, after.stdout
    assert code and not [line for line in code if line.strip() and line in after.stdout], after.stdout
    unknown = _run(["-m", "transformer_course", "check", "ex05_q9"], mine)
    assert unknown.returncode == 2 and "unknown written question 'ex05_q9'" in unknown.stderr, unknown.stderr


def test_an_instructors_handout_shows_no_worked_answer(tmp_path: Path) -> None:
    from transformer_course_tools.exercises.written_answers import FILE, edition_file, review

    (tmp_path / "exercises").mkdir()
    shutil.copy(ROOT / "exercises" / "ex05_encoder.ipynb", tmp_path / "exercises")
    (tmp_path / FILE).write_text(edition_file(ROOT, worked=False))
    assert "packed" not in json.loads((tmp_path / FILE).read_text())
    _answer(tmp_path, "ex05_encoder.ipynb", "Position by position.")
    assert review("ex05_q1", tmp_path) == (True, "✓ ex05_q1 answered (3 words). This edition shows no worked answers.")
    assert review("ex05_q2", tmp_path)[0] is False


# -- 8. the edges -----------------------------------------------------------------------------------------


def test_the_edition_points_to_restore_not_to_solutions(edition: Path) -> None:
    found = [f"{path.relative_to(edition)}" for folder in ("chapters", "exercises") for path in (edition / folder).iterdir()
             if path.suffix in (".py", ".ipynb") and "solutions/" in path.read_text(encoding="utf-8")]  # fmt: skip
    assert not found, found
    assert "python -m transformer_course restore ex05_1" in (edition / "chapters" / "05_encoder.py").read_text()


def test_a_notebook_outside_its_course_says_which_code_it_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from transformer_course_tools.course import package_dir
    from transformer_course_tools.exercises.checks import check, runner

    monkeypatch.chdir(tmp_path)  # a notebook copied out of the course (or opened with a plain install)
    monkeypatch.setattr(runner, "_said_which", False)
    check("ex06_1")
    check("ex06_1")
    out = capsys.readouterr().out
    assert out.startswith(f"Checking {package_dir()}: the complete course, where every exercise is already written")
    assert out.count("Checking") == 1 and out.count("✓ ex06_1") == 2, out


def test_pytest_m_collects_the_exercises_checks_only() -> None:
    run = _run(["-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", "-m", "ex05_1"], ROOT)
    items = [line for line in run.stdout.splitlines() if "::" in line]
    marking = {"tests/test_exercises.py", "tests/test_attempts.py", "tests/test_hidden_cases.py",
               "tests/test_hint_levels.py"}  # per-exercise tests  # fmt: skip
    assert "tests/test_exercises.py::ex05_1" in items and {i.split("::")[0] for i in items} <= marking, run.stdout
    deselected = int(re.search(r"(\d+) deselected", run.stdout).group(1))
    # the other test files were not even imported: what -m left out is the rest of these four files
    # (a fixed bound, 400, broke as the course grew to 46 exercises)
    whole = _run(["-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *sorted(marking)], ROOT)
    in_marking = int(re.search(r"(\d+) tests? collected", whole.stdout).group(1))
    assert deselected + len(items) == in_marking, (run.stdout, whole.stdout[-300:])


def test_ctrl_c_ends_train_with_one_line_and_the_run_saved(tmp_path: Path) -> None:
    out = tmp_path / "run.pt"
    args = ["-m", "transformer_course", "train", "--task", "reverse", "--steps", "100000", "--out", str(out)]
    env = {key: value for key, value in os.environ.items() if key != "TQDM_DISABLE"}
    process = subprocess.Popen([sys.executable, *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    shown = ""
    while not re.search(r"\dstep/s", shown) and process.poll() is None:  # the progress bar: steps are being made
        shown += process.stderr.read(1)
    process.send_signal(signal.SIGINT)
    stdout, rest = process.communicate(timeout=120)
    last = (shown + rest).rstrip("\n").split("\n")[-1]
    match = re.fullmatch(rf"train: interrupted \(Ctrl-C\) after step (\d+); saved {re.escape(str(out))} \(go on with "
                         rf"--resume {re.escape(str(out))}\)\.", last)  # fmt: skip
    assert process.returncode == 130 and match and not stdout and "Traceback" not in shown + rest, shown + rest
    from transformer_course.checkpoint import load_checkpoint

    assert load_checkpoint(out).step == int(match.group(1)) > 0


def test_a_long_input_is_cut_in_the_message() -> None:
    run = _run(["-m", "transformer_course", "translate", "zebra " * 20000], ROOT)
    assert run.returncode == 2 and run.stderr.startswith("error: unknown word 'zebra' in 'zebra zebra"), run.stderr
    assert "(120,000 characters)" in run.stderr and len(run.stderr) < 400, run.stderr


def test_a_notebooks_check_cell_knows_written_questions(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """check("ex05_q1") in a cell (here the complete course's own exercise notebook, not answered)."""
    from transformer_course_tools.exercises.checks import check, runner

    monkeypatch.setattr(runner, "_said_which", True)
    check("ex05_q1")
    assert capsys.readouterr().out.startswith("○ ex05_q1 not answered yet: in exercises/ex05_encoder.ipynb, write ")
