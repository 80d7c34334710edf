"""``make exercises``: everything the exercises' registrations make, and the one-line report of a piece missing.

An exercise's facts are written once, where it is registered (``@exercise`` in ``checks/chNN.py``):
its id, its room and function, its difficulty, what it needs, its cases. From them the build writes

* in its notebook, ``solutions/exNN_*.py``: the title's number, the table row, the exercises of other
  chapters the chapter runs, the order to write them in (which calls which, or how many are
  independent), the section's heading and "File:" line, the statement's "Shapes" line (the docstring's
  ``Shape:`` section), the check cell, the worked solution's code
  (copied from the room's answer); a new exercise gets a section to write, its placeholders marked
  ``TO WRITE``;
* in its chapter, ``chapters/NN_*.py``: the first sentence of the "**Exercises:**" paragraph of the
  closing cells (the notebook, and the functions to write with their ids; the rest of the paragraph is
  the author's);
* the package's exports (``_EXPORTS`` and its ``TYPE_CHECKING`` copy in ``transformer_course/__init__.py``);
* the lock (:mod:`.lock`: the cases' counts and digests, each chapter's exercises, the exercise each
  chapter stops at first in the student edition);
* ``exercises/`` from ``solutions/`` (:func:`.edition.write_exercises`).

The student edition's stubs and the pytest markers are made from the registrations where they are
used. :func:`problems` says, one line each, which piece is missing or out of date, naming the file to
write or the command to run; ``build-exercises`` prints them, and a test requires none.
"""

from __future__ import annotations

import ast
import inspect
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
EXERCISES_LINE = "**Exercises:**"  # a chapter's paragraph naming its exercises
WATCH = "**Watch for:**"  # a statement's line on the mistakes to avoid
ORDER = "**Order:**"  # an exercise notebook's paragraph saying in which order to write them
NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


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


SHAPES = "- **Shapes:**"  # a statement's line on the shapes, copied from the docstring's ``Shape:`` section


def shapes_line(ex, root: Path) -> str | None:  # noqa: ANN001 - an Exercise
    """The statement's "Shapes" line: the ``Shape:`` section of the function's docstring (a method's own,
    else its class's), its argument names in code type (None: no such section)."""
    node = _function(root / ex.file, ex.qualname)
    owners = [node, *([_function(root / ex.file, ex.qualname.rsplit(".", 1)[0])] if "." in ex.qualname else [])]
    section = next((s for s in map(_shape_section, owners) if s), None)
    if section is None:
        return None
    names = "|".join(re.escape(a.arg) for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs])
    text = re.sub(r"``([^`]+)``", r"`\1`", section)
    labels = rf"(?<![\w`·])((?:(?:{names}), )*(?:{names})):(?= )"  # "x: (B, T)", "top, total: (..., 1)"
    text = re.sub(labels, lambda m: ", ".join(f"`{n}`" for n in m.group(1).split(", ")) + ":", text)
    text = re.sub(r"`: \(", "` (", text)  # "`x` (B, T)": a shape follows its name
    return f"{SHAPES} {text}" + ("" if text.endswith(".") else ".")


def _shape_section(node: ast.AST) -> str | None:
    """The ``Shape:`` (or ``Shapes:``) section of a function's or class's docstring, in one line."""
    lines = inspect.cleandoc(ast.get_docstring(node, clean=False) or "").split("\n")
    start = next((i for i, line in enumerate(lines) if line in ("Shape:", "Shapes:")), None)
    if start is None:
        return None
    body = []
    for line in lines[start + 1 :]:
        if not line.startswith(" "):
            break
        body.append(line.strip())
    return " ".join(body) or None


def table_row(ex, root: Path) -> str:  # noqa: ANN001 - an Exercise
    return f"| {ex.id} | `{signature(ex, root, defaults=False)}` in `{ex.file.rsplit('/', 1)[1]}` | {ex.difficulty} |"


def needs_paragraph(chapter: str, needed: list[str]) -> str:
    """What the notebook says up front: the exercises of other chapters its chapter runs ("" if none)."""
    others = [i for i in needed if i[2:4] != chapter]
    if not others:
        return ""
    return (f"{NEEDS_START} chapter {chapter} also runs exercises of other chapters: {_listed(others)}. Until they "
            "are written it stops at the first of them, naming all those still to write.")  # fmt: skip


def order_sentence(exercises: list) -> str:
    """The notebook's sentence on the order to write its exercises in: which calls which (``needs``), or
    how many are independent ("" for a single exercise)."""
    calling = [ex for ex in exercises if ex.needs]
    if calling:
        needed = sorted({need for ex in calling for need in ex.needs})
        calls = "; ".join(f"{ex.id} calls {_listed(list(ex.needs))}" for ex in calling)
        return f"{ORDER} {calls}, so write {_listed(needed)} first."
    if len(exercises) < 2:
        return ""
    count = NUMBERS[len(exercises)] if len(exercises) < len(NUMBERS) else str(len(exercises))
    return f"{ORDER} the {count} are independent of each other."


def exercises_sentence(exercises: list, notebook: str | None) -> str:
    """The first sentence of a chapter's "**Exercises:**" paragraph: its exercise notebook (``None``:
    it has none) and the functions to write there, with their ids."""
    if notebook is None:
        return f"{EXERCISES_LINE} this chapter has no exercises of its own."
    link = f"[exercises/{notebook}.ipynb](../exercises/{notebook}.ipynb)"
    if not exercises:
        return f"{EXERCISES_LINE} {link} has no functions to write: it asks you to explain what this chapter shows."
    functions = _listed([f"`{ex.qualname}` ({ex.id})" for ex in exercises])
    restore = f"`python -m transformer_course restore {exercises[0].id}`"
    return (f"{EXERCISES_LINE} {link} asks you to write {functions}. Stuck on one? {restore} puts its worked "
            "answer in your student edition.")  # fmt: skip


def _listed(items: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else items[0]


def sentence_end(text: str) -> int:
    """Where the first sentence of ``text`` ends (after its full stop): the first "." or "?" followed by a
    space or the end, outside code spans, links and brackets (``len(text)`` if none)."""
    depth, code = 0, False
    for i, char in enumerate(text):
        code = not code if char == "`" else code
        if not code:
            depth += (char in "([{") - (char in ")]}")
            if char in ".?" and depth == 0 and text[i + 1 : i + 2] in ("", " "):
                return i + 1
    return len(text)


def with_first_sentence(paragraph: str, sentence: str) -> str:
    """``paragraph`` (one line) with its first sentences replaced by ``sentence`` (as many as it has; the
    rest kept)."""
    rest = paragraph
    for _ in range(_count_sentences(sentence)):
        rest = rest[sentence_end(rest) :].lstrip(" ")
    return f"{sentence} {rest}" if rest else sentence


def _count_sentences(text: str) -> int:
    count = 0
    while text:
        text = text[sentence_end(text) :].lstrip(" ")
        count += 1
    return count


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
        re.sub(r"\A# Exercises \d+ —", f"# Exercises {chapter} —", cells[0].source),
        [table_row(ex, root) for ex in exercises],
        needs_paragraph(chapter, needed),
        order_sentence(exercises),
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


def _title(source: str, rows: list[str], needs: str, order: str) -> str:
    """The title cell with the table's rows, the "Before you start" paragraph and the first sentence of
    the "Order" paragraph made from the exercises (the rest of that paragraph is the author's)."""
    lines = source.split("\n")
    if TABLE_HEADER not in lines:
        return source
    top = lines.index(TABLE_HEADER) + 2  # the header and its rule
    end = top
    while end < len(lines) and lines[end].startswith("| ex"):
        end += 1
    rest = lines[end:]
    _, rest = _paragraph(rest, NEEDS_START)
    ordered, rest = _paragraph(rest, ORDER)
    order = with_first_sentence(ordered, order) if order and ordered else order
    made = [[""] + _wrapped(text) for text in (needs, order) if text]
    return "\n".join([*lines[:top], *rows, *(line for paragraph in made for line in paragraph), *rest])


def _paragraph(lines: list[str], start: str) -> tuple[str, list[str]]:
    """(the paragraph that starts ``lines`` after a blank line with ``start``, joined in one line, or "";
    the lines after it)."""
    if not (lines[:2] and lines[0] == "" and lines[1].startswith(start)):
        return "", lines
    end = lines.index("", 1) if "" in lines[1:] else len(lines)
    return " ".join(lines[1:end]), lines[end:]


def _heading_cell(cells: list, exercise_id: str) -> int | None:
    return next((i for i, c in enumerate(cells) if c.cell_type == "markdown"
                 and re.match(rf"## {exercise_id}\b", c.source)), None)  # fmt: skip


def _heading_source(source: str, ex, root: Path) -> str:  # noqa: ANN001 - an Exercise
    """The section's first cell with its heading and "File:" paragraph as the registration says, and its
    "Shapes" line as the docstring says."""
    paragraphs = source.split("\n\n")
    files = [i for i, p in enumerate(paragraphs) if p.startswith("**File:**")]
    body = paragraphs[1:]
    if files:
        body = paragraphs[1 : files[0]] + paragraphs[files[0] + 1 :]
    made = "\n\n".join([heading(ex), "\n".join(_wrapped(file_line(ex, root))), *body])
    shapes = shapes_line(ex, root)
    return made if shapes is None else _with_shapes(made, shapes)


def _with_shapes(source: str, shapes: str) -> str:
    """``source`` with its "Shapes" line ``shapes``: in place of the one it has, else before its "Watch for"
    line, else at its end."""
    lines = source.split("\n")
    made = _wrapped(shapes, 98, indent="  ", brackets=True)
    start = next((i for i, line in enumerate(lines) if line.startswith(SHAPES)), None)
    if start is None:
        at = next((i for i, line in enumerate(lines) if line.startswith(f"- {WATCH}")), None)
        return "\n".join([*lines[:at], *made, *lines[at:]]) if at is not None else f"{source}\n\n" + "\n".join(made)
    end = start + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    return "\n".join([*lines[:start], *made, *lines[end:]])


def hand_typed_shapes(notebook, ex, root: Path) -> bool:  # noqa: ANN001 - a jupytext notebook
    """Whether the exercise's statement has a "Shapes" line that no docstring section makes."""
    return SHAPES in _statement(notebook, ex.id) and shapes_line(ex, root) is None


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
            f"## {ex.id}\n\n{TODO}: the statement (what the function does, in the chapter's words; the Shapes line "
            f"comes from the docstring's `Shape:` section).\n\n- {WATCH} {TODO}: the mistakes the check names."
        ),  # fmt: skip
        nbformat.v4.new_code_cell(
            f"from {ex.module} import {ex.qualname.split('.')[0]}  # yours (an earlier cell may use the name)\n\n"
            f"# {TODO}: a small example to try the function on\n### BEGIN SOLUTION\n### END SOLUTION"
        ),  # fmt: skip
        nbformat.v4.new_markdown_cell(
            f"*In your own words:* {TODO}: a question.\n\n### BEGIN SOLUTION\n{WORKED}\n\n"
            f"{TODO}: why this answer works.\n### END SOLUTION"
        ),  # fmt: skip
    ]


def _wrapped(text: str, width: int = 100, indent: str = "", brackets: bool = False) -> list[str]:
    """``text`` in lines of at most ``width`` characters (a word longer than that on its own line), the
    lines after the first starting with ``indent``; ``brackets``: a short bracket is not broken."""
    lines, line = [], ""
    for word in _unbroken(text) if brackets else text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = indent + word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line] if line else lines


def _unbroken(text: str) -> list[str]:
    """The words of ``text``, a code span's kept together, and a bracket's while short: "(B, T, D)" is one."""
    words: list[str] = []
    depth, code = 0, False
    for word in text.split(" "):
        if code or (depth > 0 and len(words[-1]) < 30):
            words[-1] += " " + word
        else:
            words.append(word)
        depth = max(0, depth + word.count("(") - word.count(")"))
        code ^= word.count("`") % 2 == 1
    return words


# ---------------------------------------------------------------- a chapter's "Exercises:" paragraph


def chapter_synced(notebook, sentence: str):  # noqa: ANN001, ANN201 - a jupytext notebook
    """``notebook`` (a chapter's) with the first sentence of its "**Exercises:**" paragraph ``sentence``
    (None: it has no such paragraph)."""
    import copy

    for index in reversed(range(len(notebook.cells))):
        cell = notebook.cells[index]
        lines = cell.source.split("\n")
        starts = [i for i, line in enumerate(lines) if line.startswith(EXERCISES_LINE)]
        if cell.cell_type == "markdown" and starts:
            start = starts[0]
            end = lines.index("", start) if "" in lines[start:] else len(lines)
            paragraph = with_first_sentence(" ".join(lines[start:end]), sentence)
            notebook = copy.deepcopy(notebook)
            notebook.cells[index].source = "\n".join([*lines[:start], *_wrapped(paragraph), *lines[end:]])
            return notebook
    return None


def _chapters(root: Path, exercises: Mapping) -> list[tuple[Path, str]]:  # noqa: ANN001 - id → Exercise
    """Each chapter's source and the first sentence of its "Exercises:" paragraph (a chapter whose
    exercises have no notebook yet left out: that is reported on its own)."""
    found = []
    for path in sorted((root / "chapters").glob("[0-9][0-9]_*.py")):
        chapter = path.name[:2]
        notebook = chapter_notebook(root, chapter)
        own = [ex for _, ex in sorted(exercises.items()) if ex.chapter == chapter]
        if notebook is not None or not own:
            found.append((path, exercises_sentence(own, notebook.stem if notebook else None)))
    return found


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
            written += [notebook_path, notebook_path.with_suffix(".ipynb")]
    for path, sentence in _chapters(root, exercises):
        notebook = jupytext.read(path)
        new = chapter_synced(notebook, sentence)
        if new is not None and jupytext.writes(new, "py:percent") != jupytext.writes(notebook, "py:percent"):
            write_pair(new, path)
            written += [path, path.with_suffix(".ipynb")]
    init = root / PACKAGE / "__init__.py"
    source = init.read_text(encoding="utf-8")
    if exports_source(source, exercises) != source:
        init.write_text(exports_source(source, exercises), encoding="utf-8")
        written.append(init)
    locked = root / lock.RELATIVE
    if lock.text(derived) != (locked.read_text(encoding="utf-8") if locked.is_file() else ""):
        locked.write_text(lock.text(derived), encoding="utf-8")
        written.append(locked)
    written += _attempt_starters(root, exercises)
    contents = _book_contents_update(root)
    if contents is not None:
        (root / BOOK_INDEX).write_text(contents, encoding="utf-8")
        written.append(root / BOOK_INDEX)
    return written + write_exercises(root / "solutions", root / "exercises")


BOOK_INDEX = Path("book/index.md")  # the web edition's front page, whose last lists hold the exercise notebooks
_EXERCISES_TOC = "```{toctree}\n:caption: Exercises\n:maxdepth: 1\n\n"


def book_contents(root: Path, text: str) -> str:
    """The web edition's front page ``text`` with its "Exercises" list naming every exercise notebook,
    in number order (unchanged if the page has no such list)."""
    start = text.find(_EXERCISES_TOC)
    if start < 0:
        return text
    body = start + len(_EXERCISES_TOC)
    end = text.index("```", body)
    names = sorted(path.stem for path in (root / "solutions").glob("ex[0-9][0-9]_*.py"))
    return text[:body] + "".join(f"/exercises/{name}\n" for name in names) + text[end:]


def _book_contents_update(root: Path) -> str | None:
    """The web edition's front page with its Exercises list made, or None if it has no change (or no page)."""
    page = root / BOOK_INDEX
    if not page.is_file():
        return None
    text = page.read_text(encoding="utf-8")
    made = book_contents(root, text)
    return None if made == text else made


def _notebooks(root: Path, exercises: Mapping) -> list[tuple[str, Path, list]]:  # noqa: ANN001
    """(chapter, its exercise notebook, its exercises) for every exercise notebook (a notebook of written
    questions only has none)."""
    chapters: dict[str, list] = {path.name[2:4]: [] for path in (root / "solutions").glob("ex[0-9][0-9]_*.py")}
    for ex in sorted(exercises.values(), key=lambda e: e.id):
        chapters.setdefault(ex.chapter, []).append(ex)
    found = [(c, chapter_notebook(root, c), exs) for c, exs in sorted(chapters.items())]
    return [(c, path, exs) for c, path, exs in found if path is not None]


def problems(root: Path, exercises: Mapping, derived: dict | None = None) -> list[str]:  # noqa: ANN001
    """Every piece of an exercise that is missing or out of date, one line each: what, and the file to
    write or the command to run. ``derived``: the lock as the exercises make it (computed if None)."""
    import jupytext

    from transformer_course_tools.exercises.checks.standins import standins
    from transformer_course_tools.exercises.needs import undeclared_needs

    derived = lock.derive(root, exercises) if derived is None else derived
    found = [*_region_problems(root, exercises), *_attempt_problems(root, exercises)]
    found += undeclared_needs(exercises, standins())
    for chapter in sorted({ex.chapter for ex in exercises.values()}):
        if chapter_notebook(root, chapter) is None:
            found.append(f"chapter {chapter} has no exercise notebook: create solutions/ex{chapter}_<topic>.py (the "
                         "title and set-up cells of another one), then run `make exercises`")  # fmt: skip
        found += _ladder_problems(chapter, [ex for ex in exercises.values() if ex.chapter == chapter])
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
        paired, source = path.with_suffix(".ipynb"), path.read_text(encoding="utf-8")
        if paired.is_file() and jupytext.writes(jupytext.read(paired), "py:percent") != source:
            found.append(f"{paired.relative_to(root)} is older than its .py (its outputs too): run `.venv/bin/python "
                         f"scripts/execute_notebooks.py {rel}`")  # fmt: skip
        found += [f"{rel}: the statement of {ex.id} has a Shapes line typed by hand: move it to a `Shape:` section "
                  f"of the docstring of {ex.qualname} in {ex.file}, then run `make exercises`, which writes the line "
                  "from it" for ex in chapter_exercises if hand_typed_shapes(notebook, ex, root)]  # fmt: skip
    found += _chapter_problems(root, exercises)
    found += _text_problems(root, exercises)
    init = root / PACKAGE / "__init__.py"
    source = init.read_text(encoding="utf-8")
    if exports_source(source, exercises) != source:
        found.append(f"{init.relative_to(root)}: its exports are out of date with the exercises: run `make exercises`")
    if _book_contents_update(root) is not None:
        found.append(
            f"{BOOK_INDEX}: its Exercises list is out of date with the exercise notebooks: run `make exercises`"
        )
    return found + lock.differences(lock.read(root / lock.RELATIVE), derived)


MIN_EXERCISES = 3  # a chapter's exercises climb from easy to hard (tests/test_exercises.py holds every chapter to it)


def _ladder_problems(chapter: str, chapter_exercises: list) -> list[str]:
    """A chapter with exercises has at least :data:`MIN_EXERCISES`, the first of them easy."""
    ordered = sorted(chapter_exercises, key=lambda ex: ex.id)
    found = []
    if len(ordered) < MIN_EXERCISES:
        found.append(f"chapter {chapter} has {len(ordered)} exercise(s), at least {MIN_EXERCISES} are needed (from "
                     "easy to hard): register more with @exercise (AUTHORING.md, 'An exercise')")  # fmt: skip
    if ordered and ordered[0].difficulty != "easy":
        found.append(f"chapter {chapter} opens with {ordered[0].id}, a {ordered[0].difficulty} exercise: make its "
                     "first exercise an easy one")  # fmt: skip
    return found


def _chapter_problems(root: Path, exercises: Mapping) -> list[str]:  # noqa: ANN001 - id → Exercise
    """A chapter without an "Exercises:" paragraph, or with one whose first sentence is out of date."""
    import jupytext

    found = []
    for path, sentence in _chapters(root, exercises):
        notebook = jupytext.read(path)
        new = chapter_synced(notebook, sentence)
        rel = path.relative_to(root)
        if new is None:
            found.append(f"{rel} has no {EXERCISES_LINE} paragraph in its closing cells: add one (AUTHORING.md, "
                         "'A chapter', step 9), then run `make exercises`")  # fmt: skip
        elif jupytext.writes(new, "py:percent") != jupytext.writes(notebook, "py:percent"):
            found.append(
                f"{rel}: its {EXERCISES_LINE} paragraph is out of date with the exercises: run `make exercises`"
            )
    return found


# what no case can test: the checks run on the CPU, and a case cannot take a meta tensor (the probe reads values)
_DEVICE_REQUIREMENT = re.compile(r"(?:'s?|s') device\b|\bdevice of\b|\bsame device\b|\bon (?:the )?device\b")
_GIVEN = re.compile(r"already written|written for you")  # what a sentence says of code a learner does not write


def _text_problems(root: Path, exercises: Mapping) -> list[str]:  # noqa: ANN001 - id → Exercise
    """What a command can see of the texts: a hint or statement that asks for a device (no case tests it, unless
    the function takes a ``device``), and a sentence of the notebooks that calls an exercise's function written."""
    import jupytext

    found = []
    paths = sorted((root / "chapters").glob("[0-9][0-9]_*.py")) + sorted((root / "solutions").glob("ex*.py"))
    notebooks = {path: jupytext.read(path) for path in paths}
    sentences = {path: _sentences(notebook) for path, notebook in notebooks.items()}
    for ex in sorted(exercises.values(), key=lambda e: e.id):
        args = {a.arg for a in ast.walk(_function(root / ex.file, ex.qualname).args) if isinstance(a, ast.arg)}
        statement = _statement(notebooks.get(chapter_notebook(root, ex.chapter)), ex.id)
        for part, text in (("nudge", ex.nudge), ("hint", ex.hint), ("statement", statement)):
            if "device" not in args and _DEVICE_REQUIREMENT.search(text or ""):
                found.append(f"{ex.id}: its {part} asks for a device, which no case can test (the checks run on the "
                             "CPU): leave it out of the texts (AUTHORING.md, 'An exercise')")  # fmt: skip
        name = re.compile(rf"`{re.escape(ex.qualname)}[`(]")
        for path, said in sentences.items():
            for sentence in said:
                if name.search(sentence) and _GIVEN.search(sentence):
                    found.append(f"{path.relative_to(root)}: a sentence says `{ex.qualname}` is already written, but "
                                 f"it is exercise {ex.id}: mend it (AUTHORING.md, 'Existing code made an exercise')")  # fmt: skip
    return found


def _sentences(notebook) -> list[str]:  # noqa: ANN001 - a jupytext notebook
    """The sentences of a notebook's markdown cells, each on one line."""
    text = " ".join(" ".join(c.source.split()) for c in notebook.cells if c.cell_type == "markdown")
    return re.split(r"(?<=[.!?])\s+", text)


def _statement(notebook, exercise_id: str) -> str:  # noqa: ANN001 - a jupytext notebook, or None
    """The first cell of the exercise's section in its notebook ("" if it has none yet)."""
    start = None if notebook is None else _heading_cell(notebook.cells, exercise_id)
    return "" if start is None else notebook.cells[start].source


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


ATTEMPTS_HEADER = (
    '"""What learners wrote, wrong and right; the file\'s name is the exercise\'s id (format: '
    'tests/attempts/__init__.py)."""\n\nfrom __future__ import annotations\n\nfrom . import right, wrong\n'
)


def _attempt_starters(root: Path, exercises: Mapping) -> list[Path]:  # noqa: ANN001
    """Start ``tests/attempts/<id>.py`` for every exercise without one (its header only); return those written."""
    written = []
    for exercise_id in sorted(exercises):
        path = root / "tests" / "attempts" / f"{exercise_id}.py"
        if path.parent.is_dir() and not path.exists():
            path.write_text(ATTEMPTS_HEADER, encoding="utf-8")
            written.append(path)
    return written


NAMED_MISTAKES = 3  # an exercise's own file names at least this many wrong answers (words its message must hold)


def _attempt_problems(root: Path, exercises: Mapping) -> list[str]:  # noqa: ANN001
    found = []
    for exercise_id in sorted(exercises):
        path = root / "tests" / "attempts" / f"{exercise_id}.py"
        if not path.is_file():
            found.append(f"{exercise_id} has no wrong answers: run `make exercises`, which starts "
                         f"tests/attempts/{exercise_id}.py (AUTHORING.md, 'An exercise')")  # fmt: skip
            continue
        named = len(re.findall(r"@wrong\((?:[^()]|\([^()]*\))*\bsays=", path.read_text(encoding="utf-8")))
        if named < NAMED_MISTAKES:
            found.append(f"tests/attempts/{exercise_id}.py names {named} mistake(s): mark at least {NAMED_MISTAKES} "
                         "wrong answers with the words their message must hold, @wrong(..., says=...)")  # fmt: skip
    return found


def edited_exercises(root: Path, exercises: Mapping) -> dict[str, str]:  # noqa: ANN001 - id → Exercise
    """Exercise id → the first of its files edited since the last commit (:func:`edited_exercise_files`)."""
    return {exercise_id: paths[0] for exercise_id, paths in edited_exercise_files(root, exercises).items()}


def edited_exercise_files(root: Path, exercises: Mapping) -> dict[str, list[str]]:  # noqa: ANN001 - id → Exercise
    """Exercise id → its files edited since the last commit (an uncommitted edit, or a new file) that make
    ``make exercises`` run its wrong and right answers: its attempts file, its check module, the room of its
    answer, in that order. {} outside a git clone, or without ``tests/attempts/`` (the student edition)."""
    from .changed import changed_files, registrations

    if not (root / "tests" / "attempts").is_dir():
        return {}
    try:
        edited = set(changed_files(root, "HEAD"))
    except (OSError, ValueError):  # no git, or a repository without a commit
        return {}
    found = {}
    for exercise_id, (check, target) in sorted(registrations(root).items()):
        room = target.replace(".", "/") + ".py"  # "transformer_course.counting" → its file
        paths = [p for p in (f"tests/attempts/{exercise_id}.py", check, room) if p in edited]
        if exercise_id in exercises and paths:
            found[exercise_id] = paths
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
