"""The student edition: no solution text anywhere, stubs that name exercise and file, chapters
that stop at the first unwritten exercise, a test suite that still runs, a way back per exercise."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from transformer_course_tools.exercises import lock
from transformer_course_tools.exercises.checks.registry import EXERCISES, load_checks, parse_stub_message
from transformer_course_tools.exercises.edition import (
    SHOWS_SOLUTIONS,
    STUDENT_MARK,
    build_student_edition,
    find_leaks,
    find_structure_leaks,
    region_targets,
    restore_exercise,
    solution_regions,
    solution_snippets,
    solution_structures,
)

pytestmark = pytest.mark.complete_edition
ROOT = Path(__file__).resolve().parent.parent
load_checks()


@pytest.fixture(scope="module")
def edition(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # the leak check runs in its own test below, so that a leak fails that test only
    return build_student_edition(ROOT, tmp_path_factory.mktemp("edition") / "course", check_leaks=False)


def _run(args: list[str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """Run Python in ``cwd`` so that it imports the package of ``cwd`` (not this repository's)."""
    env = {**os.environ, "PYTHONPATH": str(cwd), "TQDM_DISABLE": "1"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_every_solution_region_has_lines_the_leak_check_looks_for() -> None:
    snippets = solution_snippets(ROOT)
    covered = {origin.split(" cell ")[0] if " cell " in origin else origin for origin in snippets.values()}
    for ex in EXERCISES.values():
        text = (ROOT / ex.file).read_text(encoding="utf-8")
        for begin, _ in solution_regions(text):
            assert f"{ex.file}:{begin + 1}" in covered, f"{ex.file} line {begin + 1}: no line long enough to search for"
    for path in (ROOT / "solutions").glob("*.py"):
        assert any(origin.startswith(f"solutions/{path.name}") for origin in snippets.values()), path.name


def test_no_solution_text_remains_anywhere(edition: Path) -> None:
    snippets = solution_snippets(ROOT)
    leaks = find_leaks(edition, snippets)
    assert not leaks, "solution text in the student edition:\n" + "\n".join(f"{w}: {line}" for w, line in leaks)
    assert not (edition / "solutions").exists() and not (edition / "tests" / "attempts").exists()
    assert not [p for p in edition.rglob("*") if p.suffix == ".pyc" or p.name == "__pycache__"]
    for path in [*edition.rglob("*.py"), *(edition / "exercises").glob("*.ipynb")]:
        regions = list(solution_regions(path.read_text(encoding="utf-8")))
        assert not regions, f"{path.relative_to(edition)} still has a solution region"


def test_a_cell_that_prints_exercise_code_loses_its_output(edition: Path) -> None:
    """Chapter 06 prints the model's code from the package (its exercises' answers among it): the
    course shows the output, the student edition drops it (the learner's run prints their own code)."""
    import nbformat

    def tagged(root: Path) -> list:
        notebook = nbformat.read(root / "chapters" / "06_decoder_and_masks.ipynb", as_version=4)
        return [c for c in notebook.cells if SHOWS_SOLUTIONS in c.metadata.get("tags", [])]

    assert tagged(ROOT) and all(c.outputs for c in tagged(ROOT))
    assert tagged(edition) and not any(c.outputs for c in tagged(edition))


def test_the_leak_check_finds_a_planted_answer(edition: Path, tmp_path: Path) -> None:
    snippets = solution_snippets(ROOT)
    line = next(line for line, origin in snippets.items() if origin.startswith("transformer_course/"))
    planted = tmp_path / "chapters" / "99_notes.ipynb"
    planted.parent.mkdir()
    planted.write_text('{"cells": [{"cell_type": "code", "source": ["x = 1\\n", "    ' + line.replace('"', '\\"') + '"], '
                       '"outputs": []}]}')  # fmt: skip
    assert find_leaks(tmp_path, snippets), "a solution line inside a notebook cell must be found"


@pytest.fixture(scope="module")
def structures() -> dict[tuple[str, ...], str]:
    return solution_structures(ROOT)


def test_no_solution_structure_remains_anywhere(edition: Path, structures: dict) -> None:
    """Issue 30, item 8: no run of statements repeats a solution under other names (as
    RotaryAttention.forward once repeated ex04_3's solution line for line)."""
    assert {origin.split()[0] for origin in structures.values()} >= {"ex04_3", "ex12_3", "ex13_5", "ex15_3"}
    leaks = find_structure_leaks(edition, structures)
    assert not leaks, "a solution's structure in the student edition:\n" + "\n".join(f"{w}: {o}" for w, o in leaks)


def _renamed(code: str) -> str:
    """``code`` with every name, attribute, argument and constant changed; its structure kept."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            if isinstance(value, str):
                setattr(node, field, value + "_2")
            elif isinstance(node, ast.Constant) and isinstance(value, int | float) and not isinstance(value, bool):
                setattr(node, field, value * 3 + 1)
    return ast.unparse(tree)


def _solution(exercise_id: str) -> str:
    ex = EXERCISES[exercise_id]
    source = (ROOT / ex.file).read_text(encoding="utf-8")
    begin, end = next((b, e) for b, e, target in region_targets(source, ex.module) if target == ex.target)
    return textwrap.dedent("\n".join(source.splitlines()[begin + 1 : end]))


_UNRELATED = """
def tally(words, stop):
    counts = {}
    for word in words:
        if word.lower() in stop:
            continue
        counts[word.lower()] = counts.get(word.lower(), 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    total = sum(n for _, n in ranked)
    return [(w, n / total) for w, n in ranked[:10]]
"""


def test_the_structure_check_finds_a_renamed_solution_and_nothing_unrelated(tmp_path: Path, structures: dict) -> None:
    covered = sorted({origin.split()[0] for origin in structures.values()})
    planted = tmp_path / "transformer_course" / "notes.py"
    planted.parent.mkdir()
    for exercise_id in covered:
        body = textwrap.indent(_renamed(_solution(exercise_id)), "    ")
        planted.write_text(f"import torch\n\n\ndef helper(self, a, b):\n    c = a + b\n{body}\n" + _UNRELATED)
        found = find_structure_leaks(tmp_path, structures)
        assert found and {o.split()[0] for _, o in found} == {exercise_id}, (exercise_id, found)
        assert all(where.startswith("transformer_course/notes.py:") for where, _ in found)
    planted.write_text(_UNRELATED)
    assert not find_structure_leaks(tmp_path, structures)


def test_every_exercise_is_a_stub_naming_the_exercise_and_the_file(edition: Path) -> None:
    for ex in EXERCISES.values():
        text = (edition / ex.file).read_text(encoding="utf-8")
        assert f"raise NotImplementedError({ex.stub_message()!r})" in text, f"{ex.id}: no stub in {ex.file}"
        assert parse_stub_message(ex.stub_message())[:3] == (ex.id, ex.qualname, ex.file)
    assert (edition / STUDENT_MARK).is_file()
    assert (edition / "README.md").read_text(encoding="utf-8").startswith("> **Student edition.**")
    solutions = sorted(p.stem for p in (ROOT / "solutions").glob("*.py"))
    for suffix in (".py", ".ipynb"):
        assert sorted(p.stem for p in (edition / "exercises").glob(f"*{suffix}")) == solutions


def test_the_edition_test_suite_runs_and_names_what_is_missing(edition: Path) -> None:
    """``pytest -m ex03_1`` fails with the check's message; a unit test that reaches the stub is
    skipped naming the exercise it waits for; tests that need the solutions are skipped."""
    probe = edition / "tests" / "test_probe_stub.py"
    probe.write_text(
        "import pytest\nimport torch\nfrom transformer_course import attention_scores\n\n\n"
        "@pytest.mark.ex03_1\ndef test_uses_an_unwritten_exercise():\n"
        "    attention_scores(torch.ones(1, 2, 3), torch.ones(1, 2, 3))\n"
    )
    try:
        args = [
            "-m",
            "pytest",
            "-rs",
            "-p",
            "no:cacheprovider",
            "-m",
            "ex03_1",
            "tests/test_exercises.py",
            "tests/test_hidden_cases.py",
            f"tests/{probe.name}",
        ]
        out = _run(args, edition)
    finally:
        probe.unlink()
    text = out.stdout + out.stderr
    summary = text.strip().splitlines()[-1]
    assert "1 failed" in summary and "3 skipped" in summary and "error" not in summary, text[-3000:]
    assert "ex03_1 (attention_scores) is not implemented yet: edit transformer_course/attention.py" in text
    assert "waits for ex03_1: write it in transformer_course/attention.py" in text, text[-3000:]
    assert "needs the complete edition" in text, text[-3000:]


def test_pytest_m_works_there_for_every_exercise(edition: Path) -> None:
    """``pytest -m exNN_M``, as the notebooks and the README offer it, collects the edition's whole
    test suite without an error (nothing there imports what the edition leaves out) and runs each
    exercise's check, which says the exercise is not written yet."""
    args = ["-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-m", " or ".join(sorted(EXERCISES)), "tests"]
    env = {**os.environ, "PYTHONPATH": str(edition), "COLUMNS": "1000"}  # the summary's lines whole
    out = subprocess.run([sys.executable, *args], cwd=edition, env=env, capture_output=True, text=True, timeout=900)
    text = out.stdout + out.stderr
    assert out.returncode == 1 and f"{len(EXERCISES)} failed" in text and " error" not in text, text[-3000:]
    for exercise_id in EXERCISES:  # each failure is titled by its exercise and says the check's line
        assert f"FAILED tests/test_exercises.py::{exercise_id} - ○ {exercise_id} " in text, (exercise_id, text[-3000:])


def test_check_table_restore_and_timed_out(edition: Path, tmp_path: Path) -> None:
    """In a copy of the edition: restore ex03_1's answer, write an infinite loop as ex03_3, and
    read the ``check`` table: passed / not implemented / timed out."""
    copy = tmp_path / "mine"
    shutil.copytree(edition / "transformer_course", copy / "transformer_course")
    shutil.copy(edition / STUDENT_MARK, copy / STUDENT_MARK)
    edited, backup = restore_exercise(copy, "ex03_1", complete=ROOT)
    assert backup.exists() and "ex03_1 (attention_scores) is not implemented" in backup.read_text()
    attention = edited.read_text()
    assert "is not implemented yet" in attention.split("def apply_mask")[1]  # the others are untouched
    with pytest.raises(ValueError, match="no worked answer|not a student edition"):
        restore_exercise(ROOT, "ex03_1")
    stub = EXERCISES["ex03_3"].stub_message()
    edited.write_text(attention.replace(f"raise NotImplementedError({stub!r})", "while True:\n        pass"))
    out = _run(["-m", "transformer_course", "check", "ex03_1", "ex03_2", "ex03_3", "--timeout", "5"], copy)
    rows = {line.split()[0]: line for line in out.stdout.splitlines() if line.startswith("ex")}
    assert out.returncode == 1, out.stdout + out.stderr
    assert " passed " in rows["ex03_1"], out.stdout
    assert " not implemented " in rows["ex03_2"] and "transformer_course/attention.py" in rows["ex03_2"], out.stdout
    assert " timed out " in rows["ex03_3"] and "still running after 5 s" in rows["ex03_3"], out.stdout


def test_a_chapter_stops_at_the_first_unwritten_exercise(edition: Path) -> None:
    chapters = sorted((edition / "chapters").glob("*.ipynb"))
    if not chapters:
        pytest.skip("no chapter yet")
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    chapter = chapters[0]
    notebook = nbformat.read(chapter, as_version=4)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(chapter.parent)}}
    )
    env = {**os.environ, "PYTHONPATH": str(edition)}
    with pytest.raises(CellExecutionError) as stopped:
        client.execute(env=env)
    message = str(stopped.value)
    assert "is not written yet — the chapter stops here" in message, message[-2000:]
    assert "transformer_course/" in message and "python -m transformer_course check ex" in message, message[-2000:]
    assert "Traceback" not in message.split("is not written yet")[1], "the stop shows a short message, not a traceback"


@pytest.mark.parametrize(
    "chapter",
    [
        "03_attention",  # its first stop is a function that calls the chapter's other two
        "12_real_translation",  # its third exercise, in §2
        "13_modern_language_models",  # in §2, after a model that holds none of the chapter's parts
        "15_real_weights",  # in §1, converting SmolLM2
    ],
)
def test_a_later_chapter_stops_at_its_own_first_exercise(edition: Path, tmp_path: Path, chapter: str) -> None:
    """With every exercise of the chapters before it written (restored), a chapter runs up to its
    own first exercise and stops there with the short message: the one the lock records (``make
    exercises`` reads it from the chapter's code, :func:`needs.first_stops`)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    copy = tmp_path / "mine"
    shutil.copytree(edition, copy)
    for exercise_id in sorted(i for i in EXERCISES if int(i[2:4]) < int(chapter[:2])):
        restore_exercise(copy, exercise_id, complete=ROOT)
    path = copy / "chapters" / f"{chapter}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    with pytest.raises(CellExecutionError) as stopped:
        client.execute(env={**os.environ, "PYTHONPATH": str(copy), "OMP_NUM_THREADS": "1"})
    message = str(stopped.value)
    stop = EXERCISES[lock.read(ROOT / lock.RELATIVE)["first_stops"][chapter[:2]]]
    assert f"{stop.id}: {stop.qualname} is not written yet — the chapter stops here" in message, message[-2000:]
    assert stop.file in message, message[-2000:]


def test_only_grouped_heads_reach_the_repeat_kv_stub(edition: Path, tmp_path: Path) -> None:
    """``repeat_kv`` (ex13_3) lives in chapter 13's room and only grouped heads call it: with chapters
    03–04 written, the paper's multi-head attention runs (every path, a cache too) while the stub is
    still there; a layer with fewer key/value heads stops at ex13_3."""
    copy = tmp_path / "mine"
    shutil.copytree(edition, copy)
    for exercise_id in sorted(i for i in EXERCISES if i.startswith(("ex03", "ex04"))):
        restore_exercise(copy, exercise_id, complete=ROOT)
    code = (
        "import torch\n"
        "from transformer_course import GroupedQueryAttention, KVCache, MultiHeadAttention\n"
        "from transformer_course.cache import with_cache\n"
        "x = torch.randn(2, 5, 12)\n"
        "mha = MultiHeadAttention(12, 4).eval()\n"
        "for need in (True, False):\n"
        "    mha(x, x, x, need_weights=need)\n"
        "with torch.no_grad():\n"
        "    cache = KVCache()\n"
        "    for t in range(3):\n"
        "        with_cache(mha, cache)(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1])\n"
        "try:\n"
        "    GroupedQueryAttention(12, 4, n_kv_heads=2)(x, x, x)\n"
        "except NotImplementedError as error:\n"
        "    print(error)\n"
    )
    out = _run(["-c", code], copy)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("ex13_3 (repeat_kv) is not implemented yet: edit transformer_course/grouped.py")
