"""The exercise is the unit: its registration is the one place its facts are written, and everything
else is made from it by ``make exercises`` or found by its id. Every piece is there and up to date,
and a piece removed is reported in one line naming the file to write or the command to run."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from transformer_course_tools.authoring import build
from transformer_course_tools.exercises import lock
from transformer_course_tools.exercises.checks import EXERCISES, get_exercise
from transformer_course_tools.exercises.checks.registry import load_checks

pytestmark = pytest.mark.complete_edition  # the student edition has no solutions/ and no tests/attempts/
ROOT = Path(__file__).resolve().parent.parent
load_checks()


def test_every_exercise_has_every_piece_up_to_date() -> None:
    found = build.problems(ROOT, EXERCISES)
    assert not found, "\n".join(found)


def test_signatures_titles_and_rows_come_from_the_registration() -> None:
    mha, mask = get_exercise("ex04_3"), get_exercise("ex03_2")
    assert build.signature(mha, ROOT) == (
        "MultiHeadAttention.forward(self, query, key, value, mask=None, need_weights=False, *, fast=True)"
    )
    assert build.table_row(mha, ROOT).startswith("| ex04_3 | `MultiHeadAttention.forward(query, key, value, mask,")
    assert (
        build.file_line(mask, ROOT)
        == "**File:** `transformer_course/attention.py`, function `apply_mask(scores, mask)`."
    )
    assert build.heading(get_exercise("ex01_1")) == (
        r"## ex01_1 — Vocab.encode: tokens → ids, with \<unk\>, \<bos\>, \<eos\> (easy)"
    )


def test_the_type_checking_imports_are_made_from_the_exports() -> None:
    source = (ROOT / "transformer_course" / "__init__.py").read_text(encoding="utf-8")
    block = source[source.index("if TYPE_CHECKING:") :]
    assert block.strip() == "\n".join(build._type_checking(build._exports_of(source))).strip()
    for ex in EXERCISES.values():  # every function a learner writes is a name of the package
        if "." not in ex.qualname:
            assert f'"{ex.qualname}": "{ex.module.split(".", 1)[1]}"' in source, ex.id


# -- a piece removed: one line, naming the file to write or the command to run ---------------------


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of what the pieces live in: the package (its shipped models left out), the chapters' and
    the solutions' sources, the attempts."""
    base = tmp_path_factory.mktemp("course")
    shutil.copytree(ROOT / "transformer_course", base / "transformer_course",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pt"))  # fmt: skip
    (base / lock.RELATIVE).parent.mkdir(parents=True)
    shutil.copy(ROOT / lock.RELATIVE, base / lock.RELATIVE)  # the lock, on the course's side
    shutil.copytree(
        ROOT / "tests" / "attempts", base / "tests" / "attempts", ignore=shutil.ignore_patterns("__pycache__")
    )
    for folder in ("chapters", "solutions"):
        (base / folder).mkdir()
        for path in (ROOT / folder).glob("*.py"):
            shutil.copy(path, base / folder / path.name)
    return base


def _edit(path: Path, change: Callable[[str], str]) -> None:
    text = path.read_text(encoding="utf-8")
    assert change(text) != text, f"{path.name}: the piece to remove is not there"
    path.write_text(change(text), encoding="utf-8")


def _cut_cells(text: str, first: str, up_to: str) -> str:
    """The notebook's text without the cells from the one that starts with ``first`` to the one before ``up_to``."""
    start = text.index(f"# %% [markdown]\n# {first}")
    return text[:start] + text[text.index(up_to, start) :]


NOTEBOOK = "solutions/ex03_attention.py"
PIECES = {  # the piece removed → (what to do to the copy, the words the one line must hold)
    "the exercise's section": (NOTEBOOK, lambda t: _cut_cells(t, "## ex03_2", "# %% [markdown]\n# ## ex03_3"),
                               "solutions/ex03_attention.py is out of date with the exercises (ex03_2's section): run "
                               "`make exercises`"),
    "its check cell": (NOTEBOOK, lambda t: t.replace('# %%\ncheck("ex03_2")\n\n', ""),
                       "solutions/ex03_attention.py is out of date with the exercises (ex03_2's section)"),
    "the worked solution's code": (NOTEBOOK, lambda t: t.replace("# return scores.masked_fill(~mask, torch.finfo("
                                   "scores.dtype).min)\n", ""), "(ex03_2's section): run `make exercises`"),
    "the table row": (NOTEBOOK, lambda t: re.sub(r"# \| ex03_2 .*\n", "", t),
                      "(the table or the chapter's exercises): run `make exercises`"),
    "the wrong answers": ("tests/attempts/ex03_2.py", None,
                          "ex03_2 has no wrong answers: run `make exercises`, which starts tests/attempts/ex03_2.py"),
    "the named mistakes": ("tests/attempts/ex03_2.py", lambda t: t.replace("says=", "what="),
                           "tests/attempts/ex03_2.py names 0 mistake(s): mark at least 3 wrong answers"),
    "the export": ("transformer_course/__init__.py", lambda t: t.replace('"apply_mask": "attention", ', ""),
                   "transformer_course/__init__.py: its exports are out of date with the exercises: run `make exercises`"),
    "the TYPE_CHECKING copy": ("transformer_course/__init__.py",  # on one line or, wrapped by ruff, on several
                               lambda t: re.sub(r"\bapply_mask,\s+(?=attention_scores)", "", t),
                               "its exports are out of date with the exercises"),
    "the answer's region": ("transformer_course/attention.py", lambda t: t.replace("    ### BEGIN SOLUTION\n    return "
                            "scores.masked_fill", "    return scores.masked_fill", 1).replace("min)\n    ### END "
                            "SOLUTION\n", "min)\n", 1), "ex03_2: transformer_course/attention.py has no solution "
                            "region in apply_mask: put the answer between"),
    "the lock's entry": ("transformer_course_tools/exercises/lock.json",
                         lambda t: re.sub(r'    "ex03_2": .*\n', "", t), "ex03_2 is not in the lock yet: run `make exercises`"),
    "the exercise notebook": (NOTEBOOK, None, "chapter 03 has no exercise notebook: create solutions/ex03_<topic>.py"),
    "the docstring's shapes": ("transformer_course/attention.py",  # the statement's line is then typed by hand
                               lambda t: re.sub(r"\n    Shape:\n        scores: .*?True = may attend\n", "\n", t, flags=re.S),
                               f"{NOTEBOOK}: the statement of ex03_2 has a Shapes line typed by hand: move it to a "
                               "`Shape:` section of the docstring of apply_mask in transformer_course/attention.py"),
}  # fmt: skip


@pytest.mark.parametrize("piece", sorted(PIECES))
def test_a_piece_removed_is_reported_in_one_line(course: Path, tmp_path: Path, piece: str) -> None:
    copy = tmp_path / "course"
    shutil.copytree(course, copy)
    where, change, words = PIECES[piece]
    if change is None:
        (copy / where).unlink()
    else:
        _edit(copy / where, change)
    found = build.problems(copy, EXERCISES, derived=lock.read(ROOT / lock.RELATIVE))
    assert len(found) == 1 and "\n" not in found[0], found
    assert words in found[0], found[0]


def test_a_chapter_with_too_few_exercises_is_reported_by_the_build() -> None:
    """The rule of tests/test_exercises.py (three or more, the first easy) said by `make exercises`,
    not found later by a test."""
    ladder = [get_exercise(f"ex14_{k}") for k in (1, 2, 3)]
    assert build._ladder_problems("14", ladder) == []
    (few,) = build._ladder_problems("14", ladder[:1])
    assert few.startswith("chapter 14 has 1 exercise(s), at least 3 are needed") and "@exercise" in few
    found = build._ladder_problems("14", ladder[1:])
    assert len(found) == 2 and "opens with ex14_2, a medium exercise" in found[1], found


def test_the_web_editions_exercise_list_is_made_from_the_notebooks() -> None:
    page = (ROOT / build.BOOK_INDEX).read_text(encoding="utf-8")
    assert build.book_contents(ROOT, page) == page
    without = page.replace("/exercises/ex14_training_a_language_model\n", "")
    assert without != page and build.book_contents(ROOT, without) == page  # a new notebook is listed in its place


def test_a_registration_removed_is_reported_first(course: Path) -> None:
    others = {i: ex for i, ex in EXERCISES.items() if i != "ex03_2"}
    found = build.problems(course, others, derived=lock.read(ROOT / lock.RELATIVE))
    line = (ROOT / "transformer_course" / "attention.py").read_text().split("\n").index(
        "    ### BEGIN SOLUTION", 60
    ) + 1
    assert found[0] == (f"transformer_course/attention.py line {line}: the solution region in apply_mask belongs to "
                        "no exercise: register its check with @exercise in transformer_course_tools/exercises/checks/chNN.py, NN "
                        "its chapter"), found  # fmt: skip
    assert all("\n" not in line for line in found)


def test_a_new_exercise_gets_a_section_to_write(course: Path, tmp_path: Path) -> None:
    """An exercise registered without its notebook's section: the build writes the section (its
    heading, "File:" line and check cell) with places marked TO WRITE, reported until written."""
    import jupytext

    copy = tmp_path / "course"
    shutil.copytree(course, copy)
    notebook = copy / NOTEBOOK
    _edit(notebook, lambda t: _cut_cells(t, "## ex03_2", "# %% [markdown]\n# ## ex03_3"))
    new = build.synced(jupytext.read(notebook), "03", [e for i, e in sorted(EXERCISES.items()) if i[2:4] == "03"], copy,
                       lock.read(ROOT / lock.RELATIVE)["chapters"]["03"])  # fmt: skip
    text = jupytext.writes(new, "py:percent")
    section = text[text.index("# ## ex03_2") : text.index('check("ex03_2")')]
    assert "**File:** `transformer_course/attention.py`, function `apply_mask(scores, mask)`." in section
    assert section.count(build.TODO) == 5 and "**Worked solution.**\n#\n# ```python\n# return scores" in section
    assert "# - **Shapes:** `scores` (..., T, S); `mask`: bool" in section  # from the docstring
    notebook.write_text(text, encoding="utf-8")
    found = build.problems(copy, EXERCISES, derived=lock.read(ROOT / lock.RELATIVE))
    assert found == [f"{NOTEBOOK}: the section of ex03_2 still holds {build.TODO} placeholders: write them"]


def test_the_statements_shapes_are_the_docstrings(course: Path, tmp_path: Path) -> None:
    """The shapes are typed once, in the docstring's ``Shape:`` section: the build writes the statement's line
    from it, in place of the old one, its argument names in code type."""
    copy = tmp_path / "course"
    shutil.copytree(course, copy)
    _edit(copy / "transformer_course" / "attention.py",
          lambda t: t.replace("q: (..., T, Dk), k: (..., S, Dk) → scores (..., T, S);", "q: (..., T, Dk), k: (..., "
                              "S, Dk) → scores (..., T, S), scaled;"))  # fmt: skip
    written = {p.relative_to(copy).as_posix() for p in build.build(copy, EXERCISES)}
    assert NOTEBOOK in written, written
    text = (copy / NOTEBOOK).read_text(encoding="utf-8")
    section = text[text.index("# ## ex03_1") : text.index("# ## ex03_2")]
    assert section.count("- **Shapes:**") == 1
    assert "# - **Shapes:** `q` (..., T, Dk), `k` (..., S, Dk) → scores (..., T, S), scaled; the leading" in section
    assert build.problems(copy, EXERCISES) == []


def test_what_a_command_can_see_of_the_texts_is_reported_by_the_build(course: Path, tmp_path: Path) -> None:
    """Two slips of a held-out maintainer that only reading found: existing code made an exercise while a
    notebook still calls it written (chapter 13's rope_angles, here a sentence of a copy on ex03_1's
    function), and a hint asking for a device, which no case can test (the checks run on the CPU). A
    function that takes a ``device`` may speak of it."""
    import dataclasses

    copy = tmp_path / "course"
    shutil.copytree(course, copy)
    _edit(
        copy / NOTEBOOK,
        lambda t: t.replace("# ## ex03_2 ", "# `attention_scores(q, k)` is already written.\n#\n# ## ex03_2 ", 1),
    )
    assert build._text_problems(copy, {"ex03_1": get_exercise("ex03_1")}) == [
        f"{NOTEBOOK}: a sentence says `attention_scores` is already written, but it is exercise ex03_1: mend it "
        "(AUTHORING.md, 'Existing code made an exercise')"
    ]
    device = "compute the angles on the positions' device"
    on_device = dataclasses.replace(get_exercise("ex13_2"), hint=device)
    assert build._text_problems(ROOT, {"ex13_2": on_device}) == [
        "ex13_2: its hint asks for a device, which no case can test (the checks run on the CPU): leave it out of "
        "the texts (AUTHORING.md, 'An exercise')"
    ]
    assert build._text_problems(ROOT, {"ex03_4": dataclasses.replace(get_exercise("ex03_4"), hint=device)}) == []
    assert build._text_problems(ROOT, EXERCISES) == []


def test_a_solutions_notebook_edited_after_its_run_is_reported_by_the_build(course: Path, tmp_path: Path) -> None:
    """A statement edited in the .py after the notebook ran (a held-out maintainer's .ipynb kept its TO WRITE
    places while `make exercises` said nothing was missing): the .ipynb is older, and the build says so."""
    copy = tmp_path / "course"
    shutil.copytree(course, copy)
    shutil.copy(ROOT / NOTEBOOK.replace(".py", ".ipynb"), copy / NOTEBOOK.replace(".py", ".ipynb"))
    assert build.problems(copy, EXERCISES, derived=lock.read(ROOT / lock.RELATIVE)) == []
    _edit(
        copy / NOTEBOOK, lambda t: t.replace("# - **Watch for:**", "# - **Watch for:** a note added after the run;", 1)
    )
    assert build.problems(copy, EXERCISES, derived=lock.read(ROOT / lock.RELATIVE)) == [
        "solutions/ex03_attention.ipynb is older than its .py (its outputs too): run `.venv/bin/python "
        "scripts/execute_notebooks.py solutions/ex03_attention.py`"
    ]


def test_a_registration_is_all_an_author_types_of_an_exercises_facts(course: Path, tmp_path: Path) -> None:
    """A new exercise registered (here ex12_4, on a function chapter 12 calls before bpe_merges): `make
    exercises` writes every place its facts appear and lists the files it wrote, and nothing reports
    them out of date: the chapter's "Exercises:" paragraph, the notebook's title, table and order
    sentence, the lock's exercises of the chapter and its first stop in the student edition, and the start
    of its attempts file."""
    import dataclasses

    copy = tmp_path / "course"
    shutil.copytree(course, copy)
    new = dataclasses.replace(get_exercise("ex12_1"), id="ex12_4", needs=(),
                              target="transformer_course.sentence_training:pick_sentence_profile")  # fmt: skip
    exercises = {**EXERCISES, "ex12_4": new}
    assert lock.read(copy / lock.RELATIVE)["first_stops"]["12"] == "ex12_3"
    written = {p.relative_to(copy).as_posix() for p in build.build(copy, exercises)}
    assert {"chapters/12_real_translation.py", "solutions/ex12_real_translation.py", lock.RELATIVE.as_posix(),
            "transformer_course/__init__.py", "tests/attempts/ex12_4.py"} <= written, written  # fmt: skip
    assert (copy / "tests" / "attempts" / "ex12_4.py").read_text(encoding="utf-8") == build.ATTEMPTS_HEADER
    text = (copy / "chapters" / "12_real_translation.py").read_text(encoding="utf-8")
    chapter = " ".join(w for w in text.split() if w != "#")  # the markdown's words, however the lines wrap
    assert (
        "`average_state_dicts` (ex12_2), `bpe_merges` (ex12_3) and `pick_sentence_profile` (ex12_4). Stuck" in chapter
    )
    notebook = (copy / NOTEBOOK.replace("03_attention", "12_real_translation")).read_text(encoding="utf-8")
    assert "# | ex12_4 | `pick_sentence_profile(" in notebook and "# **Order:** the four are independent" in notebook
    assert "# # Exercises 12 — " in notebook
    locked = lock.read(copy / lock.RELATIVE)
    assert locked["first_stops"]["12"] == "ex12_4" and "ex12_4" in locked["chapters"]["12"]
    assert build.build(copy, exercises) == [], "a second build writes nothing"
    left = build.problems(copy, exercises)  # what the author still writes: the answer's region, the attempts, prose
    assert all(
        line.startswith(
            ("ex12_4", "tests/attempts/ex12_4.py names 0", "solutions/ex12_real_translation.py: the section")
        )
        for line in left
    ), left


def test_the_order_sentence_names_the_exercises_to_write_first() -> None:
    """The generated "**Order:**" line read "ex16_3 calls ex16_1, so write those first" (one exercise), then
    "so write it first", which a held-out maintainer read as the caller: it names the ones to write first."""
    from types import SimpleNamespace

    one = [SimpleNamespace(id="ex16_1", needs=()), SimpleNamespace(id="ex16_3", needs=("ex16_1",))]
    two = [SimpleNamespace(id="ex03_3", needs=("ex03_1", "ex03_2"))]
    assert build.order_sentence(one).endswith("ex16_3 calls ex16_1, so write ex16_1 first.")
    assert build.order_sentence(two).endswith("ex03_3 calls ex03_1 and ex03_2, so write ex03_1 and ex03_2 first.")


def test_an_answer_that_calls_an_undeclared_exercise_is_reported_by_the_build() -> None:
    """``make exercises`` says at once when an answer calls another exercise that its ``needs=`` leaves
    out, or a needed exercise has no stand-in (a later test used to find it, or no command at all)."""
    from dataclasses import replace

    from transformer_course_tools.exercises.checks.standins import standins
    from transformer_course_tools.exercises.needs import undeclared_needs

    assert undeclared_needs(EXERCISES, standins()) == []
    forgetful = {**EXERCISES, "ex07_3": replace(EXERCISES["ex07_3"], needs=())}
    assert undeclared_needs(forgetful, standins()) == [
        "ex07_3's answer calls ex07_2: declare needs=('ex07_2',) in its @exercise(...) in "
        "transformer_course_tools/exercises/checks/ch07.py"
    ]
    without = {i: standin for i, standin in standins().items() if i != "ex07_2"}
    assert undeclared_needs(EXERCISES, without) == [
        "ex07_2 is needed by ex07_3 but has no stand-in: write one beside its check and pass it to its "
        "@exercise(..., standin=...) in transformer_course_tools/exercises/checks/ch07.py"
    ]
