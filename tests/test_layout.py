"""The layout: the learner's rooms apart from the course's tools, imports that run nothing, rooms
that import only earlier rooms, and a broken later room that cannot stop an earlier chapter."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

import transformer_course

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "transformer_course"
TOOLS = ROOT / "transformer_course_tools"

# Every room and the chapter that builds it (0: small helpers every chapter may use).
ROOM_CHAPTERS = {
    "_validate": 0, "device": 0,
    "vocab": 1, "embeddings": 1, "positional": 2, "attention": 3, "multihead": 4,
    "feedforward": 5, "sublayer": 5, "encoder": 5,
    "masks": 6, "decoder": 6, "config": 6, "model": 6, "counting": 7,
    "data": 8, "batching": 8, "loss": 8, "schedule": 8, "step": 8, "training": 8, "checkpoint": 8, "evaluation": 8,
    "cache": 9, "decoding": 9,
    "subwords": 12, "token_batches": 12, "sentence_training": 12, "distributed": 12, "averaging": 12,
    "rmsnorm": 13, "grouped": 13, "rotary": 13, "swiglu": 13, "blocked": 13, "lm": 13, "recipe": 14,
    "lm_checkpoint": 14, "convert": 15, "quantize": 16, "export": 16,
}  # fmt: skip
# The data generators (not rooms) that a room may use, and the first chapter that uses them.
DATASETS_FROM_CHAPTER = 8

# The names `transformer_course` exported before the rooms were separated from the tools: they stay.
STABLE_NAMES = """
SPECIAL_TOKENS Decoder DecoderLayer Encoder EncoderLayer LearnedPositionalEmbedding MultiHeadAttention
PositionalEncoding PositionwiseFeedForward TokenEmbedding Transformer TransformerConfig Vocab apply_mask
attention_scores causal_mask fast_attention merge_heads one_hot_lookup padding_mask pick_device
relative_position_map residual scaled_dot_product_attention sinusoidal_positional_encoding split_heads
target_mask tie_weights tokenize english_tokens evaluate german_text german_tokens
label_smoothed_cross_entropy load_checkpoint load_pretrained load_task number_to_english number_to_german
save_checkpoint train_step transformer_lr transformer_scheduler DecoderCache KVCache beam_search
greedy_decode sample
""".split()


def _python(code: str, cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)} if pythonpath else dict(os.environ)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_every_room_is_known_and_the_tools_are_apart() -> None:
    rooms = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert rooms == set(ROOM_CHAPTERS), f"rooms without a chapter here: {sorted(rooms ^ set(ROOM_CHAPTERS))}"
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} == {"datasets"}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "transformer_course_tools/" in readme and "every file is yours" in readme
    assert "transformer_course/datasets/" in readme


def test_the_data_generators_are_not_rooms() -> None:
    """The generators of number words, sentences and corpora live in ``datasets/``, not among the rooms,
    and none of them is an exercise: the rooms the learner builds are the model, training and decoding."""
    generators = {p.stem for p in (PACKAGE / "datasets").glob("*.py")} - {"__init__"}
    assert generators == {"numbers", "sentences", "corpora", "shakespeare"}
    for path in (PACKAGE / "datasets").glob("*.py"):
        assert "BEGIN SOLUTION" not in path.read_text(encoding="utf-8"), path.name
    rooms = [p for p in PACKAGE.glob("*.py") if ROOM_CHAPTERS.get(p.stem, 0) < 13]  # chapters 01–12
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in rooms)
    assert lines < 5000, f"the rooms of chapters 01–12 hold {lines} lines: has a generator moved back among them?"


def _runtime_imports(path: Path) -> set[str]:
    """Package modules a room imports when it runs (``if TYPE_CHECKING:`` blocks left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
            found |= {alias.name for alias in node.names}  # `from . import _validate`: that room
        elif isinstance(node, ast.ImportFrom) and node.level == 1:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("transformer_course_tools"):
            found.add("engine" if node.module.startswith("transformer_course_tools.engine") else "tools")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("transformer_course"):
            found.add((node.module.split(".") + ["<package>"])[1])
        elif isinstance(node, ast.Import):
            found |= {"tools" for a in node.names if a.name.startswith("transformer_course_tools")}
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("transformer_course.")}
    return found


@pytest.mark.parametrize("room", sorted(ROOM_CHAPTERS))
def test_a_room_imports_only_earlier_rooms_and_never_a_tool(room: str) -> None:
    for imported in _runtime_imports(PACKAGE / f"{room}.py"):
        assert imported not in ("tools", "<package>"), f"{room}.py imports {imported}: rooms never import the tools"
        if imported == "datasets":
            assert ROOM_CHAPTERS[room] >= DATASETS_FROM_CHAPTER, f"{room}.py imports the data generators"
            continue
        assert imported != "engine", f"{room}.py imports the inference engine: the loops take it as an argument"
        assert ROOM_CHAPTERS[imported] <= ROOM_CHAPTERS[room], (
            f"{room}.py (chapter {ROOM_CHAPTERS[room]:02}) imports {imported} (chapter {ROOM_CHAPTERS[imported]:02})"
        )


def _module_level_imports(path: Path) -> set[str]:
    """The modules a file imports at its top level (what importing it imports): a sibling by its name
    (``from .plan import …``), a module of either package by its dotted name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            found.add((node.module or "").split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("transformer_course"):
            found.add(node.module)
    return found


def test_the_engine_imports_no_room_when_it_loads() -> None:
    for path in (TOOLS / "engine").glob("*.py"):
        found = _module_level_imports(path)
        assert found <= {"", "plan", "parts", "weights", "run", "read", "search"}, (
            f"engine/{path.name} imports {found} at its top level"
        )


def test_importing_the_package_runs_nothing() -> None:
    code = (
        "import sys; from IPython.core.interactiveshell import InteractiveShell; shell = InteractiveShell.instance(); "
        "import transformer_course; "
        "print(sorted(m for m in sys.modules if m.startswith('transformer_course')), 'torch' in sys.modules, "
        "shell.custom_exceptions)"
    )
    run = _python(code, ROOT)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["['transformer_course']", "False", "()"], "no room, no torch, no exception handler"


def test_the_names_stay_and_load_their_room_on_first_use() -> None:
    missing = [name for name in STABLE_NAMES if not hasattr(transformer_course, name)]
    assert not missing, f"names that disappeared: {missing}"
    rooms_names = set(STABLE_NAMES) - set(transformer_course._TOOLS)  # load_pretrained lives on the course's side
    assert rooms_names <= set(transformer_course.__all__) and set(STABLE_NAMES) <= set(dir(transformer_course))
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        transformer_course.nonsense  # noqa: B018


def test_the_chapter_cell_switches_on_the_stop_message() -> None:
    code = (
        "from IPython.core.interactiveshell import InteractiveShell; shell = InteractiveShell.instance(); "
        "from transformer_course_tools.notebook.setup import setup_chapter; setup_chapter(); print(shell.custom_exceptions)"
    )
    run = _python(code, ROOT)
    assert run.stdout.strip() == "(<class 'NotImplementedError'>, <class 'SyntaxError'>)", run.stderr


def _setup_cell(chapter: Path) -> str:
    return next(c.source for c in jupytext.read(chapter).cells if "setup_chapter(" in c.source)


def test_a_broken_later_room_does_not_stop_an_earlier_chapter(tmp_path: Path) -> None:
    shutil.copytree(PACKAGE, tmp_path / "transformer_course", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "transformer_course" / "decoding.py").write_text("def greedy_step(:\n", encoding="utf-8")
    cell = _setup_cell(ROOT / "chapters" / "01_embeddings.py")
    code = cell + "\nprint(run_check('ex01_2').line())\nVocab(['a']).encode(['a'])\nprint('chapter 01 runs')"
    run = _python(code, tmp_path, pythonpath=tmp_path)
    assert run.returncode == 0 and "chapter 01 runs" in run.stdout and "ex01_2" in run.stdout, run.stderr[-2000:]
    check = subprocess.run(
        [sys.executable, "-m", "transformer_course", "check", "ex01_1", "ex09_1"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    rows = {line.split()[0]: line for line in check.stdout.splitlines() if line[:2] == "ex"}
    broken = "transformer_course/decoding.py does not compile (line 1: invalid syntax): fix that line and save"
    assert " passed " in rows["ex01_1"] and " error " in rows["ex09_1"] and broken in rows["ex09_1"], check.stdout
    assert "Traceback" not in check.stdout + check.stderr


# The words of the inference engine's machinery (transformer_course_tools/engine/): none of them belongs in a
# room of chapters 01–13, which hold each chapter's idea as the chapter draws it (the rooms of chapters 15
# and 16 convert and quantize real checkpoints: int8 is their subject).
ENGINE_WORDS = ("fused", "fuse", "stacked", "folded", "fold", "prepared", "int8", "packed", "lean")


@pytest.mark.parametrize("room", sorted(r for r, chapter in ROOM_CHAPTERS.items() if chapter <= 13))
def test_a_room_of_chapters_01_to_13_holds_no_engine_machinery(room: str) -> None:
    text = (PACKAGE / f"{room}.py").read_text(encoding="utf-8").lower()
    found = sorted({word for word in ENGINE_WORDS if re.search(rf"\b{word}\b", text)})
    assert not found, f"{room}.py names the engine's machinery ({', '.join(found)}): it belongs in engine/"


def test_multi_head_attention_is_one_page() -> None:
    """Chapter 04's room is multi-head attention (and the cache's two hooks), not decoding machinery."""
    lines = len((PACKAGE / "multihead.py").read_text(encoding="utf-8").splitlines())
    assert lines <= 200, f"multihead.py has {lines} lines (at most 200, docstrings included)"
