"""One source, two editions.

The complete edition (this repository) holds the solutions between nbgrader's markers
``### BEGIN SOLUTION`` / ``### END SOLUTION``: in package functions and in the notebooks of
``solutions/``. This module derives the student edition from it:

* :func:`stub_source` replaces each marked region of a package file by a
  ``raise NotImplementedError`` naming the exercise, the file to edit and a hint;
* :func:`clear_notebook` empties the marked regions of a notebook (as nbgrader's
  ``ClearSolutions`` does), and :func:`write_exercises` writes ``exercises/`` from ``solutions/``;
* :func:`build_student_edition` writes a whole runnable copy of the course without solutions,
  and refuses to finish if any line of a solution region is still to be found in it
  (:func:`solution_snippets`, :func:`find_leaks`), or a run of statements that repeats a
  solution's structure under other names (:func:`solution_structures`, :func:`find_structure_leaks`);
* :func:`restore_exercise` puts one worked answer back into a student edition ("I give up on
  ex03_2"), copied from the complete edition.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from .course import PACKAGE, REPOSITORY_URL

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
# The tag of a chapter cell that prints the package's exercise code (chapter 06's model on one page):
# the student edition drops its committed output, and the learner's run prints the learner's own code.
SHOWS_SOLUTIONS = "shows-solutions"
CODE_STUB = "# YOUR CODE HERE"
TEXT_STUB = "YOUR ANSWER HERE"

HINT_LEVELS = ("full", "nudge", "none")  # how much a stub and a failing check say (grading.toml's hints)


def check_level(level: str, name: str = "hints") -> str:
    """``level`` if it is one of :data:`HINT_LEVELS`, else ValueError (one line naming ``name``)."""
    if level not in HINT_LEVELS:
        raise ValueError(f"{name} = {level!r} must be one of {', '.join(HINT_LEVELS)}")
    return level


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


def stub_source(source: str, module: str, hints: str = "full") -> str:
    """Replace each solution region of a package file by a NotImplementedError stub whose hint is
    at level ``hints`` (see ``HINT_LEVELS``)."""
    from .checks.registry import EXERCISES
    from .checks.runner import _load_all

    _load_all()
    by_target = {target: ex for ex in EXERCISES.values() for target in ex.targets}
    lines = source.splitlines()
    for begin, end, target in reversed(region_targets(source, module)):
        if target not in by_target:
            raise ValueError(f"solution region in {target} (line {begin + 1}) belongs to no registered exercise")
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        message = by_target[target].stub_message(target, hints)
        lines[begin : end + 1] = [f"{indent}{CODE_STUB}", f"{indent}raise NotImplementedError({message!r})"]
    return "\n".join(lines) + "\n"


def clear_text(text: str, stub: str) -> str:
    """Replace each solution region (markers included) by ``stub`` at the marker's indentation,
    line for line as nbgrader's ``ClearSolutions`` does (tests/test_nbgrader_compat.py)."""
    lines = text.split("\n")
    for begin, end in reversed(list(solution_regions(text))):
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        lines[begin : end + 1] = [indent + stub_line for stub_line in stub.split("\n")]
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


def drop_solution_outputs(path: Path) -> bool:
    """Empty the outputs of the cells of notebook ``path`` tagged :data:`SHOWS_SOLUTIONS` (in place);
    True if there were any."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    tagged = [c for c in notebook.cells if c.cell_type == "code" and SHOWS_SOLUTIONS in c.metadata.get("tags", [])]
    for cell in tagged:
        cell.outputs, cell.execution_count = [], None
    if tagged:
        nbformat.write(notebook, path)
    return bool(tagged)


def write_exercises(solutions_dir: Path, exercises_dir: Path) -> list[Path]:
    """Write ``exercises/`` (percent .py + .ipynb without outputs) from ``solutions/*.py``; an
    exercise notebook that exists keeps its cell ids (regenerating an unchanged one changes nothing)."""
    import jupytext

    from .pairs import write_pair

    exercises_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for source in sorted(solutions_dir.glob("*.py")):
        target = exercises_dir / source.name
        write_pair(clear_notebook(jupytext.read(source)), target, keep_outputs=False)
        written += [target, target.with_suffix(".ipynb")]
    return written


def room_files(package_dir: Path) -> list[Path]:
    """The learner's rooms: every ``.py`` file of the package outside ``tools/``."""
    return sorted(p for p in package_dir.rglob("*.py") if "tools" not in p.relative_to(package_dir).parts)


def stub_package(package_dir: Path, hints: str = "full") -> list[Path]:
    """Stub every room (in place) that holds solution regions, hints at level ``hints``; return those files."""
    changed = []
    for path in room_files(package_dir):
        source = path.read_text(encoding="utf-8")
        if BEGIN not in source:
            continue
        module = ".".join(path.relative_to(package_dir.parent).with_suffix("").parts)
        path.write_text(stub_source(source, module, hints), encoding="utf-8")
        changed.append(path)
    return changed


# What the student edition leaves out: the solutions, the machinery that proves the checks, and the
# instructor's own files (``instructor/``: the hidden cases that grading.toml may name).
EXCLUDED = ("solutions", "tests/mutants", "tests/test_own_mistakes.py", "tests/unseen", "tests/test_unseen_mistakes.py",
            ".git", ".venv", ".venv-oldest", "student-edition", "instructor")  # fmt: skip
# Never copied, whatever git says (compiled solutions, editor checkpoints, caches).
JUNK = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".ruff_cache", ".mypy_cache"}
STUDENT_MARK = ".student-edition.json"  # written at the root of every student edition


def is_student_edition(root: Path) -> bool:
    return (Path(root) / STUDENT_MARK).is_file()


def edition_hints(root: Path | None = None) -> str:
    """The hint level the student edition at ``root`` (default: the running package's course) was
    made with; "full" in the complete course or an edition made before hint levels."""
    from .course import package_dir

    mark = Path(root or package_dir().parent) / STUDENT_MARK
    return json.loads(mark.read_text(encoding="utf-8")).get("hints", "full") if mark.is_file() else "full"


def _course_files(root: Path) -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=root, capture_output=True, text=True, check=True,
        ).stdout.splitlines()  # fmt: skip
        files = [Path(p) for p in listed]
    except (OSError, subprocess.CalledProcessError):
        files = [p.relative_to(root) for p in root.rglob("*") if p.is_file()]

    return [f for f in files if _shipped(f) and (root / f).is_file()]


def _shipped(f: Path) -> bool:
    """The student edition holds file ``f`` (relative to the course) when the course does."""
    posix = f.as_posix()
    if any(posix == e or posix.startswith(e + "/") for e in EXCLUDED):
        return False
    return not (JUNK & set(f.parts) or f.suffix in {".pyc", ".pyo"} or any(p.endswith(".egg-info") for p in f.parts))


_BANNER = """\
> **Student edition.** The exercise functions of `transformer_course/` are stubs that you write
> yourself; `exercises/` holds the exercise notebooks. A chapter runs up to the first exercise you
> have not written yet and stops there, naming the exercise and the file to edit. Check your work
> with the check cells, `pytest -m ex03_2` or `python -m transformer_course check`. Stuck on one?
> `python -m transformer_course restore ex03_2` copies its worked answer from the complete course.
> Set-up: `pip install -e .` in this folder (or `make lab`), so that Python imports *this* package.

"""


def _banner(hints: str) -> str:
    """The edition's README banner; below "full" hints it says how to ask for more."""
    if hints == "full":
        return _BANNER
    more = (f'> Hints here are at level "{hints}"; `check("ex03_2", hints="full")` shows the whole hint and '
            "the fix.\n\n")  # fmt: skip
    return _BANNER[:-1] + more


def build_student_edition(root: Path, out_dir: Path, check_leaks: bool = True, hints: str = "full") -> Path:
    """Copy the course to ``out_dir`` with the package stubbed and no solution text (with
    ``check_leaks``, the default, refuse to finish if any solution line is found in it); the stubs'
    hints, and the default of ``check``'s there, are at level ``hints`` ("full", "nudge", "none")."""
    root, out_dir = root.resolve(), out_dir.resolve()
    if out_dir == root or root in out_dir.parents and out_dir.parts[len(root.parts)] != "student-edition":
        raise ValueError(f"OUT_DIR must be outside the course (or ./student-edition), got {out_dir}")
    if out_dir.exists() and any(out_dir.iterdir()):
        raise ValueError(f"OUT_DIR {out_dir} exists and is not empty")
    if is_student_edition(root):
        raise ValueError(f"{root} is already a student edition: build it from the complete course")
    check_level(hints)
    try:
        _write_edition(root, out_dir, check_leaks, hints)
    except BaseException:
        shutil.rmtree(out_dir, ignore_errors=True)  # never leave half an edition (with answers) behind
        raise
    return out_dir


def edition_mark(hints: str = "full") -> str:
    """What ``.student-edition.json`` holds: the exercises and their functions, the hint level, and no
    path of the machine the edition was built on (it is handed out)."""
    from .checks.registry import EXERCISES

    exercises = {i: ex.target for i, ex in sorted(EXERCISES.items())}
    return json.dumps({"exercises": exercises, "hints": hints}, indent=2) + "\n"


def _write_edition(root: Path, out_dir: Path, check_leaks: bool, hints: str = "full") -> None:
    for rel in _course_files(root):
        (out_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, out_dir / rel)
    stub_package(out_dir / PACKAGE, hints)
    write_exercises(root / "solutions", out_dir / "exercises")
    for notebook in sorted((out_dir / "chapters").glob("*.ipynb")):
        drop_solution_outputs(notebook)
    readme = out_dir / "README.md"
    if readme.exists():
        readme.write_text(_banner(hints) + readme.read_text(encoding="utf-8"), encoding="utf-8")
    (out_dir / STUDENT_MARK).write_text(edition_mark(hints), encoding="utf-8")
    leaks = find_leaks(out_dir, solution_snippets(root)) if check_leaks else []
    if check_leaks:
        found = find_structure_leaks(out_dir, solution_structures(root))
        leaks += [(where, f"repeats the structure of {origin} under other names") for where, origin in found]
    if leaks:
        shown = "\n".join(f"  {where}: {line}" for where, line in leaks[:20])
        raise ValueError(f"solution text (or structure) would remain in the student edition:\n{shown}")


# ---------------------------------------------------------------- no solution text anywhere

_MIN_CODE, _MIN_TEXT = 20, 30  # shorter lines (``optimizer.step()``, ``d_k = q.shape[-1]``) prove nothing


_STRUCTURE = re.compile(r"^(for|with|if|elif|while|else|try|except|finally|def|class)\b.*:$|.*[(\[{,]$")
_BARE_CALL = re.compile(r"^[\w.]+\(\)$")  # ``optimizer.zero_grad()``: an idiom, not an answer


def _telling(line: str, prose: bool = False) -> str | None:
    """The line, whitespace-normalised, if it could identify a solution: long enough, and not
    mere structure (``with torch.no_grad():``, ``for h in range(3):``, ``x = residual(``).
    ``prose``: the line comes from a markdown cell (outside a code block)."""
    norm = " ".join(line.split())
    if not norm or BEGIN.strip("# ") in norm or END.strip("# ") in norm or norm.startswith("```"):
        return None
    is_text = prose or norm.startswith("#")  # prose or a comment
    if not is_text and (_STRUCTURE.match(norm) or _BARE_CALL.match(norm)):
        return None
    return norm if len(norm) >= (_MIN_TEXT if is_text else _MIN_CODE) else None


def solution_snippets(root: Path) -> dict[str, str]:
    """Every telling line of every solution region: the package's and the solution notebooks'.
    Returns line → where it comes from.

    The package's regions are the exercises: every line counts. A solution notebook's "try it"
    region also holds set-up and demonstration code (``changed = x.clone()``); its lines that the
    complete course already shows outside any solution (a chapter, a test, the package) are
    course material, not answers, and are left out."""
    import jupytext

    package: dict[str, str] = {}
    notebooks: dict[str, str] = {}

    def add(found: dict[str, str], text: str, where: str, markdown: bool = False) -> None:
        lines = text.splitlines()
        for begin, end in solution_regions(text):
            in_code_block = False
            for line in lines[begin + 1 : end]:
                in_code_block ^= line.strip().startswith("```")
                norm = _telling(line, prose=markdown and not in_code_block)
                if norm:
                    found.setdefault(norm, f"{where}:{begin + 1}")

    for path in room_files(root / PACKAGE):
        add(package, path.read_text(encoding="utf-8"), str(path.relative_to(root)))
    for path in sorted((root / "solutions").glob("*.py")):
        for n, cell in enumerate(jupytext.read(path).cells):
            add(notebooks, cell.source, f"{path.relative_to(root)} cell {n}", markdown=cell.cell_type == "markdown")
    public = _public_text(root)
    return {**{k: v for k, v in notebooks.items() if k not in public}, **package}


def _public_text(root: Path) -> str:
    """What the complete course shows outside solution regions, ``solutions/`` and ``exercises/``."""
    parts = []
    for rel in _course_files(root):
        if rel.parts[0] == "exercises":
            continue
        path = root / rel
        text = _searchable_text(path)
        if text is not None and path.suffix == ".py" and BEGIN in text:
            lines = text.split("\n")
            for begin, end in reversed(list(solution_regions(text))):
                lines[begin : end + 1] = []
            text = "\n".join(lines)
        if text is not None:
            parts.append(text)
    return "\n".join(parts)


def _searchable_text(path: Path) -> str | None:
    """A file's text, one whitespace-normalised line per line; notebooks as cell sources plus
    text outputs (what a reader sees). None for binary files."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    if path.suffix == ".ipynb":
        try:
            notebook = json.loads(raw)
        except ValueError:
            notebook = None
        if isinstance(notebook, dict):
            parts = []
            for cell in notebook.get("cells", []):
                parts.append(_joined(cell.get("source", "")))
                for output in cell.get("outputs", []):
                    parts.append(_joined(output.get("text", "")))
                    for mime, value in output.get("data", {}).items():
                        if mime.startswith("text/") or mime.endswith("json"):
                            parts.append(_joined(value) if isinstance(value, list | str) else json.dumps(value))
            raw = "\n".join(parts)
    return "\n".join(" ".join(line.split()) for line in raw.splitlines())


def _joined(value: str | list) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def find_leaks(edition: Path, snippets: dict[str, str]) -> list[tuple[str, str]]:
    """(file in the edition, solution line) for every solution line found in the edition."""
    leaks = []
    for path in sorted(p for p in Path(edition).rglob("*") if p.is_file()):
        text = _searchable_text(path)
        if text is None:
            continue
        for line, origin in snippets.items():
            if line in text:
                leaks.append((f"{path.relative_to(edition)} (from {origin})", line))
    return leaks


# ---------------------------------------------------------------- no solution structure either

STRUCTURE_WINDOW = 4  # consecutive statements: a repeat this long is a solution under other names
_MIN_NODES = 20  # a shorter window (or a whole solution of fewer statements) proves nothing
_MIN_NODES_ONE = 10  # a one-statement solution this large (``return x.masked_fill(~m, lowest)``) is telling
_UNTOLD = {"ctx", "kind", "type_comment"}  # fields that say nothing about the structure


def statement_shapes(source: str) -> list[tuple[int, str, int]]:
    """Each statement of ``source`` in reading order as (line, shape, nodes), the shape keeping the
    node types and call structure with every name, attribute, argument and constant replaced by a
    placeholder (``x = F.softmax(s / 2, dim=-1)`` and ``y = torch.exp(z / 3, axis=-2)`` share one);
    a compound statement's shape is its header, the statements of its body follow it. Trivial
    statements (``pass``, a docstring, ``return x``, imports) are left out."""

    def shape(node: object) -> tuple[str, int]:
        if isinstance(node, ast.Constant):
            return type(node.value).__name__, 1
        if isinstance(node, list):
            if node and isinstance(node[0], ast.stmt | ast.excepthandler | ast.match_case):
                return "", 0  # a body: its statements come on their own
            parts = [shape(item) for item in node]
            return "[" + ",".join(p for p, _ in parts) + "]", sum(n for _, n in parts)
        if not isinstance(node, ast.AST):
            return ("_" if isinstance(node, str) else repr(node)), 0  # names become one placeholder
        parts = [shape(getattr(node, field, None)) for field in node._fields if field not in _UNTOLD]
        return f"{type(node).__name__}({','.join(p for p, _ in parts)})", 1 + sum(n for _, n in parts)

    def statements(body: list) -> Iterator[ast.stmt]:
        for stmt in body:
            yield stmt
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.excepthandler | ast.match_case):
                    yield from statements(child.body)
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    yield from statements(inner)

    trivial = ast.Pass | ast.Break | ast.Continue | ast.Import | ast.ImportFrom | ast.Global | ast.Nonlocal
    found = []
    for stmt in statements(ast.parse(source).body):
        bare = isinstance(stmt, ast.Expr | ast.Return) and isinstance(stmt.value, ast.Constant | ast.Name | None)
        if isinstance(stmt, trivial) or bare:
            continue
        found.append((stmt.lineno, *shape(stmt)))
    return found


def solution_structures(root: Path) -> dict[tuple[str, ...], str]:
    """Windows of :data:`STRUCTURE_WINDOW` consecutive statement shapes of each exercise's solution
    (a shorter solution: all its statements; a one-statement solution: that statement), telling ones
    only → "exercise (file:line)"."""
    from .checks.registry import EXERCISES
    from .checks.runner import _load_all

    _load_all()
    by_target = {target: ex.id for ex in EXERCISES.values() for target in ex.targets}
    found: dict[tuple[str, ...], str] = {}
    for path in room_files(root / PACKAGE):
        source = path.read_text(encoding="utf-8")
        if BEGIN not in source:
            continue
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        shapes = statement_shapes(source)
        for begin, end, target in region_targets(source, module):
            inside = [(shape, nodes) for line, shape, nodes in shapes if begin < line - 1 < end]
            size = min(STRUCTURE_WINDOW, len(inside))
            telling = _MIN_NODES if size > 1 else _MIN_NODES_ONE
            for i in range(len(inside) - size + 1):
                window = inside[i : i + size]
                if sum(nodes for _, nodes in window) >= telling:
                    found.setdefault(tuple(shape for shape, _ in window), f"{by_target.get(target, target)} "
                                     f"({path.relative_to(root)}:{begin + 1})")  # fmt: skip
    return found


def find_structure_leaks(tree: Path, structures: dict[tuple[str, ...], str]) -> list[tuple[str, str]]:
    """("file:line", exercise) for every run of statements of a Python file the student edition
    would ship from ``tree`` (an edition, or the course: outside its solution regions) that repeats
    the structure of a solution (:func:`solution_structures`) under other names."""
    tree = Path(tree)
    sizes = sorted({len(window) for window in structures})
    leaks = []
    for folder, dirs, files in os.walk(tree):
        here = Path(folder).relative_to(tree)
        dirs[:] = sorted(d for d in dirs if _shipped(here / d))  # not into .venv, solutions/, …
        for rel in (here / f for f in sorted(files) if f.endswith(".py") and _shipped(here / f)):
            leaks += _repeats(rel, (tree / rel).read_text(encoding="utf-8"), structures, sizes)
    return leaks


def _repeats(rel: Path, source: str, structures: dict[tuple[str, ...], str], sizes: list[int]) -> list[tuple[str, str]]:
    """The findings of :func:`find_structure_leaks` in one file: one per line where a repeat starts."""
    try:
        shapes = statement_shapes(source)
    except SyntaxError:  # not Python a learner runs (a template, a fixture)
        return []
    regions = list(solution_regions(source)) if BEGIN in source else []
    shapes = [s for s in shapes if not any(b < s[0] - 1 < e for b, e in regions)]
    leaks = []
    for i in range(len(shapes)):
        origin = next(filter(None, (structures.get(tuple(s for _, s, _ in shapes[i : i + n])) for n in sizes)), None)
        if origin:
            leaks.append((f"{rel}:{shapes[i][0]}", origin))
    return leaks


# ---------------------------------------------------------------- "I give up on this one"


def _function_span(source: str, qualname: str) -> tuple[int, int]:
    """0-based first and last line of function ``qualname`` (decorators and a trailing
    ``### END SOLUTION`` comment included)."""
    node: ast.AST = ast.parse(source)
    for part in qualname.split("."):
        children = [c for c in ast.iter_child_nodes(node) if getattr(c, "name", None) == part]
        if not children:
            raise ValueError(f"no function or class {qualname} found")
        node = children[-1]
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        raise ValueError(f"{qualname} is not a function")
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    last = node.end_lineno - 1
    lines = source.splitlines()
    indent = len(lines[node.lineno - 1]) - len(lines[node.lineno - 1].lstrip())
    while last + 1 < len(lines) and lines[last + 1].strip().startswith("#"):
        if len(lines[last + 1]) - len(lines[last + 1].lstrip()) <= indent:
            break
        last += 1
    return first, last


def restore_exercise(edition: Path, exercise_id: str, complete: Path | None = None) -> tuple[Path, Path]:
    """Replace the student's version of one exercise function by the worked answer of the complete
    course (default: the clone around the edition, as ``make student-edition`` makes it, else Colab's
    ``~/transformer-course``; the edition records no path of the machine it was built on, since it
    is handed out). The student's file is kept as a backup.
    Returns (edited file, backup)."""
    from .checks.runner import get_exercise

    edition = Path(edition).resolve()
    if not is_student_edition(edition):
        raise ValueError(f"{edition} is not a student edition (no {STUDENT_MARK}): restore works inside one")
    ex = get_exercise(exercise_id)
    if complete is None:  # the clone it was built in (make student-edition), else Colab's clone
        candidates = (edition.parent, Path.home() / "transformer-course")
        found = [
            c for c in candidates if (c / ex.file).is_file() and BEGIN in (c / ex.file).read_text(encoding="utf-8")
        ]
        complete = found[0] if found else edition.parent
    source_file, target_file = Path(complete) / ex.file, edition / ex.file
    if not source_file.is_file() or BEGIN not in source_file.read_text(encoding="utf-8"):
        raise FileNotFoundError(
            f"no worked answer at {source_file}: pass --from PATH to a complete copy of the course "
            f"(git clone {REPOSITORY_URL})"
        )
    answer_source = source_file.read_text(encoding="utf-8")
    if not any(t == ex.target for _, _, t in region_targets(answer_source, ex.module)):
        raise ValueError(f"{source_file} holds no worked answer for {exercise_id} ({ex.target})")
    mine = target_file.read_text(encoding="utf-8")
    backup = target_file.with_name(f"{target_file.name}.{exercise_id}.bak")
    backup.write_text(mine, encoding="utf-8")
    for qualname in (t.split(":")[1] for t in ex.targets):
        first, last = _function_span(answer_source, qualname)
        lines = mine.splitlines()
        m_first, m_last = _function_span(mine, qualname)
        lines[m_first : m_last + 1] = answer_source.splitlines()[first : last + 1]
        mine = "\n".join(lines) + "\n"
    target_file.write_text(mine, encoding="utf-8")
    return target_file, backup
