"""``make exercises``: everything the exercises' registrations make, and the one-line report of a piece missing.

An exercise's facts are written once, where it is registered (``@exercise`` in ``checks/chNN.py``):
its id, its room and function, its difficulty, what it needs, its cases. From them the build writes

* in its notebook, ``solutions/exNN_*.py``: the table row, the section's heading and "File:" line,
  the check cell, the worked solution's code (copied from the room's answer), and the exercises of
  other chapters the chapter runs (a new exercise gets a section to write, its placeholders marked
  ``TO WRITE``);
* the package's exports (``_EXPORTS`` and its ``TYPE_CHECKING`` copy in ``transformer_course/__init__.py``);
* the lock (:mod:`.lock`: the cases' counts and digests, each chapter's exercises);
* ``exercises/`` from ``solutions/`` (:func:`.edition.write_exercises`).

The student edition's stubs and the pytest markers are made from the registrations where they are
used. :func:`problems` says, one line each, which piece is missing or out of date, naming the file to
write or the command to run; ``build-exercises`` prints them, and a test requires none.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

from transformer_course_tools.course import PACKAGE, TOOLS
from transformer_course_tools.exercises import lock
from transformer_course_tools.exercises.regions import region_targets, region_text

TODO = "TO WRITE"  # the mark of a placeholder a new exercise's section holds until its author writes it
TABLE_HEADER = "| exercise | function | level |"
NEEDS_START = "**Before you start:**"
WORKED = "**Worked solution.**"


# ---------------------------------------------------------------- what a registration says


def signature(ex, root: Path, defaults: bool = True) -> str:  # noqa: ANN001 - an Exercise
    """``Class.method(self, x, mask=None)`` as the room defines the exercise's function (without the
    defaults: ``Class.method(x, mask)``, self left out)."""
    node = _function(root / ex.file, ex.qualname)
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    firsts = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    parts = [_param(a.arg, d, defaults) for a, d in zip(positional, firsts, strict=True)]
    if not defaults and "." in ex.qualname and parts and parts[0] == "self":
        parts = parts[1:]
    if args.vararg or args.kwonlyargs:
        parts.append(f"*{args.vararg.arg}" if args.vararg else "*")
    parts += [_param(a.arg, d, defaults) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    parts += [f"**{args.kwarg.arg}"] if args.kwarg else []
    if not defaults:
        parts = [p for p in parts if p != "*"]
    return f"{ex.qualname}({', '.join(parts)})"


def _param(name: str, default: ast.expr | None, defaults: bool) -> str:
    return f"{name}={ast.unparse(default)}" if defaults and default is not None else name


def _function(path: Path, qualname: str) -> ast.FunctionDef:
    node: ast.AST = ast.parse(path.read_text(encoding="utf-8"))
    for part in qualname.split("."):
        node = next(c for c in ast.iter_child_nodes(node) if getattr(c, "name", None) == part)
    return node


def heading(ex) -> str:  # noqa: ANN001 - an Exercise
    title = re.sub(r"([<>])", r"\\\1", ex.title[:1].upper() + ex.title[1:])  # <unk> is text, not HTML
    return f"## {ex.id} — {title} ({ex.difficulty})"


def file_line(ex, root: Path) -> str:  # noqa: ANN001 - an Exercise
    kind = "method" if "." in ex.qualname else "function"
    return f"**File:** `{ex.file}`, {kind} `{signature(ex, root)}`."


def table_row(ex, root: Path) -> str:  # noqa: ANN001 - an Exercise
    return f"| {ex.id} | `{signature(ex, root, defaults=False)}` in `{ex.file.rsplit('/', 1)[1]}` | {ex.difficulty} |"


def needs_paragraph(chapter: str, needed: list[str]) -> str:
    """What the notebook says up front: the exercises of other chapters its chapter runs ("" if none)."""
    others = [i for i in needed if i[2:4] != chapter]
    if not others:
        return ""
    listed = ", ".join(others[:-1]) + f" and {others[-1]}" if len(others) > 1 else others[0]
    return (f"{NEEDS_START} chapter {chapter} also runs exercises of other chapters: {listed}. Until they are "
            "written it stops at the first of them, naming all those still to write.")  # fmt: skip


# ---------------------------------------------------------------- an exercise notebook


def chapter_notebook(root: Path, chapter: str) -> Path | None:
    found = sorted((root / "solutions").glob(f"ex{chapter}_*.py"))
    return found[0] if found else None


def synced(notebook, chapter: str, exercises: list, root: Path, needed: list[str]):  # noqa: ANN001, ANN201
    """``notebook`` (jupytext's) with every part its chapter's ``exercises`` make brought up to date,
    and a section (placeholders marked ``TO WRITE``) for an exercise that has none."""
    import copy

    import nbformat

    notebook = copy.deepcopy(notebook)
    cells = notebook.cells
    cells[0].source = _title(
        cells[0].source, [table_row(ex, root) for ex in exercises], needs_paragraph(chapter, needed)
    )
    for ex in exercises:
        _sync_section(cells, ex, root, nbformat)
    return notebook


def _sync_section(cells: list, ex, root: Path, nbformat) -> None:  # noqa: ANN001
    """The exercise's section (made if missing): its heading and "File:" line, a check cell, the
    worked solution's code."""
    start = _heading_cell(cells, ex.id)
    if start is None:
        cells[-1:-1] = _skeleton(ex, root, nbformat)
        start = _heading_cell(cells, ex.id)
    cells[start].source = _heading_source(cells[start].source, ex, root)
    end = _section_end(cells, start)
    check_cell = f'check("{ex.id}")'
    if not any(c.cell_type == "code" and c.source.strip() == check_cell for c in cells[start:end]):
        cells.insert(end, nbformat.v4.new_code_cell(check_cell))
    answer = region_text((root / ex.file).read_text(encoding="utf-8"), ex.target)
    for cell in cells[start:end]:
        if cell.cell_type == "markdown" and WORKED in cell.source and answer is not None:
            cell.source = _worked(cell.source, answer)


def _section_end(cells: list, start: int) -> int:
    """Where the section that starts at ``start`` ends: the next heading, or the notebook's closing words."""
    last = len(cells) - 1 if cells[-1].cell_type == "markdown" else len(cells)
    return next((i for i in range(start + 1, last) if cells[i].source.startswith("## ")), max(last, start + 1))


def _title(source: str, rows: list[str], needs: str) -> str:
    lines = source.split("\n")
    if TABLE_HEADER not in lines:
        return source
    top = lines.index(TABLE_HEADER) + 2  # the header and its rule
    end = top
    while end < len(lines) and lines[end].startswith("| ex"):
        end += 1
    rest = lines[end:]
    if rest[:2] and rest[0] == "" and rest[1].startswith(NEEDS_START):
        rest = rest[2:]
        while rest and rest[0] != "":
            rest = rest[1:]
    return "\n".join([*lines[:top], *rows, *([""] + _wrapped(needs) if needs else []), *rest])


def _heading_cell(cells: list, exercise_id: str) -> int | None:
    return next((i for i, c in enumerate(cells) if c.cell_type == "markdown"
                 and re.match(rf"## {exercise_id}\b", c.source)), None)  # fmt: skip


def _heading_source(source: str, ex, root: Path) -> str:  # noqa: ANN001 - an Exercise
    """The section's first cell with its heading and "File:" paragraph as the registration says."""
    paragraphs = source.split("\n\n")
    files = [i for i, p in enumerate(paragraphs) if p.startswith("**File:**")]
    body = paragraphs[1:]
    if files:
        body = paragraphs[1 : files[0]] + paragraphs[files[0] + 1 :]
    return "\n\n".join([heading(ex), "\n".join(_wrapped(file_line(ex, root))), *body])


def _worked(source: str, answer: str) -> str:
    """A worked solution's cell with its code block the room's answer."""
    block = f"```python\n{answer}\n```"
    at = source.index(WORKED) + len(WORKED)
    found = re.compile(r"```python\n.*?```", re.S).search(source, at)
    if found is None:
        return f"{source[:at]}\n\n{block}{source[at:]}"
    return source[: found.start()] + block + source[found.end() :]


def _skeleton(ex, root: Path, nbformat) -> list:  # noqa: ANN001
    """A new exercise's section: what the build knows, and the places its author writes."""
    return [
        nbformat.v4.new_markdown_cell(
            f"## {ex.id}\n\n{TODO}: the statement (what to return, the shapes, what to watch for)."
        ),  # fmt: skip
        nbformat.v4.new_code_cell(
            f"# {TODO}: a small example to try the function on\n### BEGIN SOLUTION\n### END SOLUTION"
        ),  # fmt: skip
        nbformat.v4.new_markdown_cell(
            f"*In your own words:* {TODO}: a question.\n\n### BEGIN SOLUTION\n{WORKED}\n\n"
            f"{TODO}: why this answer works.\n### END SOLUTION"
        ),  # fmt: skip
    ]


def _wrapped(text: str, width: int = 100) -> list[str]:
    """``text`` in lines of at most ``width`` characters (a word longer than that on its own line)."""
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line] if line else lines


# ---------------------------------------------------------------- the package's exports


def exports_source(source: str, exercises: Mapping) -> str:  # noqa: ANN001 - id → Exercise
    """``transformer_course/__init__.py`` with every exercise's function (a room's top-level function)
    in ``_EXPORTS`` and the ``TYPE_CHECKING`` imports made from ``_EXPORTS``."""
    tree = ast.parse(source)
    table = _exports_node(tree)
    exports = _exports_of(source)
    for ex in sorted(exercises.values(), key=lambda e: e.id):
        if "." not in ex.qualname:
            exports.setdefault(ex.qualname, ex.module.removeprefix(f"{PACKAGE}."))
    lines = source.split("\n")
    block = next(n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test))
    rebuilt = [*lines[: table.lineno - 1], *_exports_table(exports), *lines[table.end_lineno : block.lineno - 1]]
    return "\n".join([*rebuilt, *_type_checking(exports), *lines[block.end_lineno :]])


def _exports_node(tree: ast.Module) -> ast.AnnAssign:
    return next(n for n in tree.body if isinstance(n, ast.AnnAssign) and ast.unparse(n.target) == "_EXPORTS")


def _exports_of(source: str) -> dict[str, str]:
    """The ``_EXPORTS`` table of the package's ``__init__.py`` source: name → room."""
    return ast.literal_eval(_exports_node(ast.parse(source)).value)


def _exports_table(exports: dict[str, str]) -> list[str]:
    """``_EXPORTS``, one room per line (or more where it has many names), in the order the rooms come."""
    out = ["_EXPORTS: dict[str, str] = {"]
    for room in dict.fromkeys(exports.values()):
        line = "   "
        for entry in (f'"{name}": "{room}",' for name, r in exports.items() if r == room):
            if len(line) + 1 + len(entry) > 120:
                out.append(line)
                line = "   "
            line += " " + entry
        out.append(line)
    return [*out, "}  # fmt: skip"]


def _type_checking(exports: dict[str, str]) -> list[str]:
    """The ``if TYPE_CHECKING:`` block, laid out as ruff formats and sorts it."""
    out = ["if TYPE_CHECKING:  # for editors and type checkers only: at run time nothing is imported here"]
    for room in sorted(set(exports.values())):
        names = sorted((n for n, r in exports.items() if r == room), key=_isort_key)
        line = f"    from .{room} import {', '.join(names)}"
        out += (
            [line] if len(line) <= 120 else [f"    from .{room} import (", *[f"        {n}," for n in names], "    )"]
        )
    return out


def _isort_key(name: str) -> tuple[int, str]:
    """isort's order by type: constants, classes, then functions and the rest."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


# ---------------------------------------------------------------- the build, and what is missing


def build(root: Path, exercises: Mapping) -> list[Path]:  # noqa: ANN001 - id → Exercise
    """Bring every made piece up to date; return the files written."""
    import jupytext

    from transformer_course_tools.exercises.edition import write_exercises

    from .pairs import write_pair

    written = []
    derived = lock.derive(root, exercises)
    for chapter, notebook_path, chapter_exercises in _notebooks(root, exercises):
        notebook = jupytext.read(notebook_path)
        new = synced(notebook, chapter, chapter_exercises, root, derived["chapters"].get(chapter, []))
        if jupytext.writes(new, "py:percent") != jupytext.writes(notebook, "py:percent"):
            write_pair(new, notebook_path)
            written.append(notebook_path)
    init = root / PACKAGE / "__init__.py"
    source = init.read_text(encoding="utf-8")
    if exports_source(source, exercises) != source:
        init.write_text(exports_source(source, exercises), encoding="utf-8")
        written.append(init)
    locked = root / lock.RELATIVE
    if lock.text(derived) != (locked.read_text(encoding="utf-8") if locked.is_file() else ""):
        locked.write_text(lock.text(derived), encoding="utf-8")
        written.append(locked)
    return written + write_exercises(root / "solutions", root / "exercises")


def _notebooks(root: Path, exercises: Mapping) -> list[tuple[str, Path, list]]:  # noqa: ANN001
    chapters: dict[str, list] = {}
    for ex in sorted(exercises.values(), key=lambda e: e.id):
        chapters.setdefault(ex.chapter, []).append(ex)
    found = [(c, chapter_notebook(root, c), exs) for c, exs in chapters.items()]
    return [(c, path, exs) for c, path, exs in found if path is not None]


def problems(root: Path, exercises: Mapping, derived: dict | None = None) -> list[str]:  # noqa: ANN001
    """Every piece of an exercise that is missing or out of date, one line each: what, and the file to
    write or the command to run. ``derived``: the lock as the exercises make it (computed if None)."""
    import jupytext

    derived = lock.derive(root, exercises) if derived is None else derived
    found = [*_region_problems(root, exercises), *_attempt_problems(root, exercises)]
    for chapter in sorted({ex.chapter for ex in exercises.values()}):
        if chapter_notebook(root, chapter) is None:
            found.append(f"chapter {chapter} has no exercise notebook: create solutions/ex{chapter}_<topic>.py (the "
                         "title and set-up cells of another one), then run `make exercises`")  # fmt: skip
    for chapter, path, chapter_exercises in _notebooks(root, exercises):
        notebook = jupytext.read(path)
        rel = path.relative_to(root)
        new = synced(notebook, chapter, chapter_exercises, root, derived["chapters"].get(chapter, []))
        if jupytext.writes(new, "py:percent") != jupytext.writes(notebook, "py:percent"):
            found.append(
                f"{rel} is out of date with the exercises ({_what_differs(notebook, new)}): run `make exercises`"
            )
        elif any(TODO in cell.source for cell in notebook.cells):
            ids = [ex.id for ex in chapter_exercises if _placeholder(notebook, ex.id)]
            found.append(f"{rel}: the section of {', '.join(ids) or 'an exercise'} still holds {TODO} placeholders: "
                         "write them")  # fmt: skip
    init = root / PACKAGE / "__init__.py"
    source = init.read_text(encoding="utf-8")
    if exports_source(source, exercises) != source:
        found.append(f"{init.relative_to(root)}: its exports are out of date with the exercises: run `make exercises`")
    return found + lock.differences(lock.read(root / lock.RELATIVE), derived)


def _region_problems(root: Path, exercises: Mapping) -> list[str]:  # noqa: ANN001
    targets = {t: ex for ex in exercises.values() for t in ex.targets}
    found, seen = [], set()
    for path in sorted({root / ex.file for ex in exercises.values()} | set((root / PACKAGE).glob("*.py"))):
        if not path.is_file():
            continue
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        for begin, _, target in region_targets(path.read_text(encoding="utf-8"), module):
            seen.add(target)
            if target not in targets:
                found.append(f"{path.relative_to(root)} line {begin + 1}: the solution region in {target.split(':')[1]} "
                             f"belongs to no exercise: register its check with @exercise in {TOOLS}/exercises/checks/"
                             "chNN.py, NN its chapter")  # fmt: skip
    for target, ex in targets.items():
        if target not in seen:
            found.append(f"{ex.id}: {ex.file} has no solution region in {target.split(':')[1]}: put the answer between "
                         "### BEGIN SOLUTION and ### END SOLUTION")  # fmt: skip
    return found


NAMED_MISTAKES = 3  # an exercise's own file names at least this many wrong answers (words its message must hold)


def _attempt_problems(root: Path, exercises: Mapping) -> list[str]:  # noqa: ANN001
    found = []
    for exercise_id in sorted(exercises):
        path = root / "tests" / "attempts" / f"{exercise_id}.py"
        if not path.is_file():
            found.append(f"{exercise_id} has no wrong answers: create tests/attempts/{exercise_id}.py (AUTHORING.md, "
                         "'An exercise')")  # fmt: skip
            continue
        named = len(re.findall(r"@wrong\((?:[^()]|\([^()]*\))*\bsays=", path.read_text(encoding="utf-8")))
        if named < NAMED_MISTAKES:
            found.append(f"tests/attempts/{exercise_id}.py names {named} mistake(s): mark at least {NAMED_MISTAKES} "
                         "wrong answers with the words their message must hold, @wrong(..., says=...)")  # fmt: skip
    return found


def _what_differs(old, new) -> str:  # noqa: ANN001 - jupytext notebooks
    """Which made parts differ: the title cell's, or the sections of which exercises."""
    title = ["the table or the chapter's exercises"] if old.cells[0].source != new.cells[0].source else []
    before, after = _sections(old), _sections(new)
    return ", ".join(title + [f"{i}'s section" for i in after if before.get(i) != after[i]]) or "a generated part"


def _sections(notebook) -> dict[str, list[str]]:  # noqa: ANN001 - a jupytext notebook
    """Exercise id → the sources of its section's cells (its heading to the next heading)."""
    cells = notebook.cells
    starts = {re.match(r"## (ex\d\d_\d+)\b", c.source): i for i, c in enumerate(cells)}
    return {m.group(1): [c.source for c in cells[i : _section_end(cells, i)]] for m, i in starts.items() if m}


def _placeholder(notebook, exercise_id: str) -> bool:  # noqa: ANN001 - a jupytext notebook
    start = _heading_cell(notebook.cells, exercise_id)
    if start is None:
        return False
    return any(TODO in c.source for c in notebook.cells[start : _section_end(notebook.cells, start)])
