"""Does this text contain a solution? The one answer, wherever the course asks.

The student edition must not ship a line of an answer (:func:`find_leaks`) nor an answer's
structure under other names (:func:`find_structure_leaks`); the grader's messages and the output it
quotes are scrubbed of them (:meth:`SolutionText.scrub`); a submission whose function is the worked
solution line for line is flagged (:func:`same_as_worked_solution`). All of them read the answers
through :class:`SolutionText`: every *telling* line of a solution region (long enough, not mere
structure), with where it comes from.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from transformer_course_tools.course import PACKAGE, course_files, find_course_root, room_files, shipped

from .probe.wire import cut
from .regions import BEGIN, END, function_span, region_targets, solution_regions

MAX_MESSAGE = 2000  # characters of a message in a grading report


class SolutionText:
    """Every telling line of the course's solutions (line → where it comes from), found in a text or
    taken out of it."""

    REMOVED = "[…removed: course solution text…]"

    def __init__(self, snippets: Mapping[str, str] | Iterable[str]) -> None:
        origins = snippets if isinstance(snippets, Mapping) else dict.fromkeys(snippets, "")
        self.origins = dict(origins)
        self.longest_first = sorted(self.origins, key=len, reverse=True)

    @classmethod
    def for_course(cls, root: Path | None = None) -> SolutionText:
        """The solutions of the course at ``root`` (default: the running package's; none in a plain install)."""
        root = root or find_course_root()
        return cls(solution_snippets(root) if root is not None else ())

    def found_in(self, text: str) -> list[tuple[str, str]]:
        """(line, origin) of every solution line in ``text`` (whitespace-normalised, one line per line)."""
        return [(line, origin) for line, origin in self.origins.items() if line in text]

    def scrub(self, text: str, limit: int = MAX_MESSAGE) -> str:
        """``text`` cut to ``limit`` characters, every solution line it carries replaced by :attr:`REMOVED`."""
        lines = []
        for line in str(text).splitlines():
            flat = " ".join(line.split())
            for snippet in self.longest_first:
                if snippet in flat:
                    flat = flat.replace(snippet, self.REMOVED)
            lines.append(flat if flat != " ".join(line.split()) else line)
        return cut("\n".join(lines), limit)

    __call__ = scrub


# ---------------------------------------------------------------- the telling lines

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
    for rel in course_files(root):
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


def find_leaks(edition: Path, snippets: Mapping[str, str]) -> list[tuple[str, str]]:
    """(file in the edition, solution line) for every solution line found in the edition."""
    solutions, leaks = SolutionText(snippets), []
    for path in sorted(p for p in Path(edition).rglob("*") if p.is_file()):
        text = _searchable_text(path)
        if text is not None:
            leaks += [
                (f"{path.relative_to(edition)} (from {origin})", line) for line, origin in solutions.found_in(text)
            ]
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
    from .checks.registry import load_checks

    by_target = {target: ex.id for ex in load_checks().values() for target in ex.targets}
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
        dirs[:] = sorted(d for d in dirs if shipped(here / d))  # not into .venv, solutions/, …
        for rel in (here / f for f in sorted(files) if f.endswith(".py") and shipped(here / f)):
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


# ---------------------------------------------------------------- the worked solution, handed in


def same_as_worked_solution(theirs: Path, ours: Path, qualname: str) -> bool:
    """Function ``qualname`` of the file ``theirs`` is, line for line (indentation, blank lines and the
    markers aside), the worked solution in the complete edition's file ``ours`` (False where ``ours``
    holds no worked solution: grading from a student edition)."""
    answer = _worked_solution(str(ours), qualname)
    return answer is not None and _function_lines(str(theirs), qualname) == answer


@functools.lru_cache(maxsize=256)  # the course's own answers: read once per run, not once per student
def _worked_solution(path: str, qualname: str) -> tuple[str, ...] | None:
    return _function_lines(path, qualname) if BEGIN in _source(path) else None


def _function_lines(path: str, qualname: str) -> tuple[str, ...] | None:
    """Function ``qualname`` of the file ``path`` line by line (stripped; blank lines and the
    solution markers left out), or None where there is no such function."""
    source = _source(path)
    try:
        first, last = function_span(source, qualname)
    except (SyntaxError, ValueError):
        return None
    lines = (line.strip() for line in source.splitlines()[first : last + 1])
    return tuple(line for line in lines if line and line not in (BEGIN, END))


def _source(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
