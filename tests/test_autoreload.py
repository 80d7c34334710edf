"""In the student edition, a notebook runs the code the learner saved: no restart needed.

A real kernel runs a chapter's set-up cell in a copy of the student edition; the test then writes
exercises into the rooms (as the learner would, with their worked answers), re-runs the cell, and
reads what the notebook shows. Covered: functions imported by the notebook, functions other rooms
hold through ``from .attention import …``, names cached by the package's lazy ``__getattr__``,
methods of a module made before the edit, the stop message that lists the unwritten exercises a
stopped one needs, an edit that does not load (and what then works), and the exercise notebooks.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import jupytext
import pytest

from transformer_course_tools.exercises.checks import EXERCISES
from transformer_course_tools.exercises.checks.registry import load_checks
from transformer_course_tools.exercises.edition import build_student_edition, restore_exercise

from .kernel import kernel

pytestmark = pytest.mark.complete_edition  # it writes the worked answers into a student edition
ROOT = Path(__file__).resolve().parent.parent
STOP = "is not written yet — the chapter stops here"
load_checks()


@pytest.fixture(scope="module")
def edition(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_student_edition(ROOT, tmp_path_factory.mktemp("edition") / "course", check_leaks=False)


@pytest.fixture
def learner(edition: Path, tmp_path: Path):
    """A copy of the student edition and a kernel that imports it, started in its chapters/."""
    copy = tmp_path / "course"
    shutil.copytree(edition, copy)
    env = {**os.environ, "PYTHONPATH": str(copy), "TQDM_DISABLE": "1"}
    with kernel(sys.executable, copy / "chapters", env, tmp_path) as running:
        yield copy, running


def write(course: Path, *exercise_ids: str) -> None:
    """The learner writes these exercises (their worked answers) and saves."""
    for exercise_id in exercise_ids:
        restore_exercise(course, exercise_id, complete=ROOT)


def cell(course: Path, notebook: str, marker: str) -> str:
    """The source of the first cell of ``notebook`` that contains ``marker``."""
    return next(c.source for c in jupytext.read(course / notebook).cells if marker in c.source)


def test_a_chapter_runs_what_the_learner_saved(learner) -> None:
    course, lab = learner
    assert "Traceback" not in lab.run(cell(course, "chapters/03_attention.py", "setup_chapter("))
    lab.run(
        "import transformer_course, transformer_course.multihead as multihead\n"
        "from transformer_course import MultiHeadAttention\n"
        "cached = transformer_course.scaled_dot_product_attention  # kept by the package's lazy __getattr__\n"
        "mha = MultiHeadAttention(8, 2)  # made before its forward is written\n"
        "q, x = torch.randn(1, 3, 4), torch.randn(1, 3, 8)"
    )
    attend = "print(scaled_dot_product_attention(q, q, q)[0].shape)"

    first = lab.run(attend)
    assert f"ex03_3: scaled_dot_product_attention {STOP}" in first, first
    order = first.index("It needs ex03_1 and ex03_2, not written yet either")
    assert (
        order
        < first.index("ex03_1 attention_scores in transformer_course/attention.py")
        < first.index("ex03_2 apply_mask in transformer_course/attention.py")
        < first.index("ex03_3 scaled_dot_product_attention in transformer_course/attention.py (hint:")
    ), first
    assert "check ex03_1 ex03_2 ex03_3" in first and "Traceback" not in first, first

    write(course, "ex03_3")
    second = lab.run(attend)  # the new ex03_3 runs, and reaches ex03_1
    assert f"ex03_1: attention_scores {STOP}" in second, second
    assert "This cell runs it through scaled_dot_product_attention" in second, second

    write(course, "ex03_1", "ex03_2")
    assert lab.run(attend).strip() == "torch.Size([1, 3, 4])"
    assert lab.run("print(cached(q, q, q)[0].shape)").strip() == "torch.Size([1, 3, 4])"
    assert lab.run("print(multihead.scaled_dot_product_attention(q, q, q)[0].shape)").strip() == "torch.Size([1, 3, 4])"

    stopped = lab.run("mha(x, x, x)")
    assert f"ex04_3: MultiHeadAttention.forward {STOP}" in stopped and "It needs ex04_1 and ex04_2," in stopped
    assert "ex03_3" not in stopped.split("It needs")[1].split("\n")[0], "a written exercise is not listed"
    write(course, "ex04_1", "ex04_2", "ex04_3")
    assert lab.run("print(mha(x, x, x)[0].shape)").strip() == "torch.Size([1, 3, 8])"
    checks = lab.run(
        "from transformer_course_tools.exercises.checks import run_check\n"
        "print(run_check('ex04_3').line()); print(run_check('ex03_3').line())"
    )
    assert checks.count(": passed") == 2, checks


def test_a_check_tests_one_exercise_after_a_full_reload(learner) -> None:
    """IPython before 9 (Colab's) reloads a room into new function objects while other rooms keep
    the old ones, updated to run the new code: a check must still recognise them as exercises."""
    course, lab = learner
    lab.run(cell(course, "chapters/04_multi_head_attention.py", "setup_chapter("))
    lab.run(
        "try:\n    get_ipython().run_line_magic('autoreload', '2-')  # IPython 9: full reloads only\nexcept ValueError:\n    pass"
    )
    write(course, "ex03_1", "ex03_2", "ex04_1", "ex04_2", "ex04_3")
    lab.run("import transformer_course.multihead")  # multihead.py reloaded: it holds attention's functions
    room = course / "transformer_course" / "attention.py"
    stub = EXERCISES["ex03_3"].stub_message()
    room.write_text(room.read_text().replace(f"raise NotImplementedError({stub!r})", "return q, q  # wrong"))
    shown = lab.run(
        "import transformer_course.attention as attention, transformer_course.multihead as multihead\n"
        "print(multihead.scaled_dot_product_attention is attention.scaled_dot_product_attention)\n"
        "from transformer_course_tools.exercises.checks import run_check\n"
        "print(run_check('ex03_3').line()); print(run_check('ex04_3').line())"
    )
    assert shown.startswith("False\n"), f"not the case this test is about:\n{shown}"
    assert "✗ ex03_3" in shown and "✓ ex04_3" in shown, shown


def test_chapter_08_evaluates_without_chapter_09s_exercises(learner) -> None:
    """Chapter 08 reads its model's answers with its own greedy loop (evaluation.py): with every exercise
    but chapter 09's written, its evaluation runs (it once stopped at ex09_1's greedy_step)."""
    course, lab = learner
    write(course, *sorted(i for i in EXERCISES if i < "ex09"))
    lab.run(cell(course, "chapters/08_training.py", "setup_chapter("))
    shown = lab.run(
        "from transformer_course.data import load_task\n"  # chapter 08 imports each where it first uses it
        "from transformer_course.evaluation import evaluate\n"
        "from transformer_course.training import pick_profile, prepare_training\n"
        "task = load_task('reverse')\n"
        "model = prepare_training(task, pick_profile('cpu', task.name)).model\n"
        "print(sorted(evaluate(model, task.test[:2], task)))"
    )
    assert shown.strip() == "['bleu', 'chrf', 'exact_match']", shown


def test_an_edit_that_does_not_load_says_so_and_what_then_works(learner) -> None:
    course, lab = learner
    lab.run(cell(course, "chapters/05_encoder.py", "setup_chapter("))
    feed_forward = "print(PositionwiseFeedForward(4, 8)(torch.ones(1, 2, 4)).shape)"
    assert f"ex05_1: PositionwiseFeedForward.forward {STOP}" in lab.run(feed_forward)

    room = course / "transformer_course" / "feedforward.py"
    stub = room.read_text(encoding="utf-8")
    room.write_text(stub.replace("raise NotImplementedError(", "return (  # unfinished\n        ("), encoding="utf-8")
    broken = lab.run(feed_forward)
    assert (
        "feedforward.py does not compile (line" in broken and "fix that line and save, then re-run this cell" in broken
    )
    room.write_text(stub, encoding="utf-8")
    write(course, "ex05_1")  # fixed: autoreload tries again, no restart
    assert lab.run(feed_forward).strip() == "torch.Size([1, 2, 4])"

    lab.run("%autoreload off")  # a kernel that cannot reload (as if autoreload failed)
    write(course, "ex05_2")
    stale = lab.run("residual(torch.ones(2), lambda t: t, torch.nn.Identity(), torch.nn.Identity(), False)")
    assert "your edit of sublayer.py is saved, but this kernel still runs the stub" in stale, stale
    assert "Restart Kernel and Run All Cells" in stale, stale
    lab.restart()
    lab.run(cell(course, "chapters/05_encoder.py", "setup_chapter("))
    assert lab.run(
        "print(residual(torch.ones(2), lambda t: t, torch.nn.Identity(), torch.nn.Identity(), False))"
    ).strip() == ("tensor([2., 2.])")


def test_an_exercise_notebook_checks_the_code_saved_after_it_ran(learner) -> None:
    course, lab = learner
    notebook = "exercises/ex04_multi_head_attention.py"
    assert "Traceback" not in lab.run(cell(course, notebook, "setup_chapter("))  # the set-up cell
    check = cell(course, notebook, 'check("ex04_1")')
    before = lab.run(check)
    assert "○ ex04_1" in before and "not implemented" in before, before
    write(course, "ex04_1")
    assert "✓ ex04_1" in lab.run(check)


def test_a_chapter_that_stops_lists_every_unwritten_exercise_it_runs(learner) -> None:
    """JupyterLab names the notebook (``__session__``): chapter 04's first stop lists the exercises of
    chapters 02 and 03 it runs as well as its own, in one message, and no written one."""
    course, lab = learner
    write(course, "ex03_1")
    lab.run(f"__session__ = {str(course / 'chapters' / '04_multi_head_attention.ipynb')!r}")
    lab.run(cell(course, "chapters/04_multi_head_attention.py", "setup_chapter("))
    shown = lab.run("sinusoidal_positional_encoding(10, 8)")
    assert f"ex02_1: sinusoidal_positional_encoding {STOP}" in shown, shown
    assert "Chapter 04 also runs ex02_3, ex03_2, ex03_3, ex04_1, ex04_2 and ex04_3, not written yet." in shown, shown
    listed = [line.split()[0] for line in shown.splitlines() if line.startswith("  ex")]
    assert listed == ["ex02_1", "ex02_3", "ex03_2", "ex03_3", "ex04_1", "ex04_2", "ex04_3"], shown
