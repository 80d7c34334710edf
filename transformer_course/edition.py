"""One source, two editions.

The complete edition (this repository) holds the solutions between nbgrader's markers
``### BEGIN SOLUTION`` / ``### END SOLUTION``: in package functions and in the notebooks of
``solutions/``. This module derives the student edition from it:

* :func:`stub_source` replaces each marked region of a package file by a
  ``raise NotImplementedError`` naming the exercise, the file to edit and a hint;
* :func:`clear_notebook` empties the marked regions of a notebook (as nbgrader's
  ``ClearSolutions`` does), and :func:`write_exercises` writes ``exercises/`` from ``solutions/``;
* :func:`build_student_edition` writes a whole runnable copy of the course without solutions.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
CODE_STUB = "# YOUR CODE HERE"
TEXT_STUB = "YOUR ANSWER HERE"
PACKAGE = "transformer_course"


def solution_regions(source: str) -> Iterator[tuple[int, int]]:
    """Yield (begin, end) line indices (0-based, inclusive) of each marked region."""
    begin = None
    for i, line in enumerate(source.splitlines()):
        stripped = line.strip().lstrip("#").strip()
        if stripped == BEGIN.lstrip("#").strip() and line.strip().startswith("###"):
            if begin is not None:
                raise ValueError(f"line {i + 1}: {BEGIN} inside another solution region")
            begin = i
        elif stripped == END.lstrip("#").strip() and line.strip().startswith("###"):
            if begin is None:
                raise ValueError(f"line {i + 1}: {END} without a {BEGIN}")
            yield begin, i
            begin = None
    if begin is not None:
        raise ValueError(f"line {begin + 1}: {BEGIN} is never closed")


def _enclosing_functions(source: str) -> list[tuple[int, int, str]]:
    """(first line, last line, qualname) of every function, 0-based."""
    found: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                found.append((child.lineno - 1, child.end_lineno - 1, name))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")

    visit(ast.parse(source), "")
    return found


def region_targets(source: str, module: str) -> list[tuple[int, int, str]]:
    """Each region with the ``module:qualname`` of the innermost function holding it."""
    functions = _enclosing_functions(source)
    targets = []
    for begin, end in solution_regions(source):
        holders = [f for f in functions if f[0] < begin < f[1]]  # the END comment lies past end_lineno
        if not holders:
            raise ValueError(f"{module}: the solution region at line {begin + 1} is not inside a function")
        qualname = max(holders, key=lambda f: f[0])[2]
        targets.append((begin, end, f"{module}:{qualname}"))
    return targets


def stub_source(source: str, module: str) -> str:
    """Replace each solution region of a package file by a NotImplementedError stub."""
    from .checks.registry import EXERCISES
    from .checks.runner import _load_all

    _load_all()
    by_target = {ex.target: ex for ex in EXERCISES.values()}
    lines = source.splitlines()
    for begin, end, target in reversed(region_targets(source, module)):
        if target not in by_target:
            raise ValueError(f"solution region in {target} (line {begin + 1}) belongs to no registered exercise")
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        message = by_target[target].stub_message()
        lines[begin : end + 1] = [f"{indent}{CODE_STUB}", f"{indent}raise NotImplementedError({message!r})"]
    return "\n".join(lines) + "\n"


def clear_text(text: str, stub: str) -> str:
    lines = text.splitlines()
    for begin, end in reversed(list(solution_regions(text))):
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        lines[begin : end + 1] = [indent + stub]
    return "\n".join(lines)


def clear_notebook(notebook):
    """Clear the solution regions of every cell and drop all outputs (in a copy)."""
    import copy

    notebook = copy.deepcopy(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.source = clear_text(cell.source, CODE_STUB)
            cell.outputs, cell.execution_count = [], None
        elif cell.cell_type == "markdown":
            cell.source = clear_text(cell.source, TEXT_STUB)
    return notebook


def write_exercises(solutions_dir: Path, exercises_dir: Path) -> list[Path]:
    """Write ``exercises/`` (percent .py + .ipynb without outputs) from ``solutions/*.py``."""
    import jupytext

    exercises_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for source in sorted(solutions_dir.glob("*.py")):
        notebook = clear_notebook(jupytext.read(source))
        target = exercises_dir / source.name
        jupytext.write(notebook, target, fmt="py:percent")
        jupytext.write(notebook, target.with_suffix(".ipynb"))
        written += [target, target.with_suffix(".ipynb")]
    return written


def stub_package(package_dir: Path) -> list[Path]:
    """Stub every package file (in place) that holds solution regions; return those files."""
    changed = []
    for path in sorted(package_dir.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if BEGIN not in source:
            continue
        module = ".".join(path.relative_to(package_dir.parent).with_suffix("").parts)
        path.write_text(stub_source(source, module), encoding="utf-8")
        changed.append(path)
    return changed


# What the student edition leaves out: the solutions and the machinery that proves the checks.
EXCLUDED = ("solutions", "tests/mutants", ".git", ".venv")


def _course_files(root: Path) -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=root, capture_output=True, text=True, check=True,
        ).stdout.splitlines()  # fmt: skip
        files = [Path(p) for p in listed]
    except (OSError, subprocess.CalledProcessError):
        files = [p.relative_to(root) for p in root.rglob("*") if p.is_file()]
    return [f for f in files if not any(f.as_posix().startswith(e) for e in EXCLUDED) and (root / f).is_file()]


def build_student_edition(root: Path, out_dir: Path) -> Path:
    """Copy the course to ``out_dir`` with the package stubbed and no solution text."""
    root, out_dir = root.resolve(), out_dir.resolve()
    if out_dir == root or root in out_dir.parents and out_dir.parts[len(root.parts)] != "student-edition":
        raise ValueError(f"OUT_DIR must be outside the course (or ./student-edition), got {out_dir}")
    if out_dir.exists() and any(out_dir.iterdir()):
        raise ValueError(f"OUT_DIR {out_dir} exists and is not empty")
    for rel in _course_files(root):
        (out_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, out_dir / rel)
    stub_package(out_dir / PACKAGE)
    write_exercises(root / "solutions", out_dir / "exercises")
    return out_dir
