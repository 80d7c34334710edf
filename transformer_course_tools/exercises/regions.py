"""Solution regions: the text between nbgrader's markers, and the function that holds it.

The complete edition holds every answer between ``### BEGIN SOLUTION`` and ``### END SOLUTION``:
inside one function of a room (an exercise), and in the cells of ``solutions/`` (a worked answer,
a written question's answer). Everything that reads the answers finds them here.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
CODE_STUB = "# YOUR CODE HERE"
TEXT_STUB = "YOUR ANSWER HERE"


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


def region_text(source: str, target: str) -> str | None:
    """The answer of ``target`` (``module:qualname``) in a room's ``source``, dedented; None if it has none."""
    module = target.split(":")[0]
    lines = source.splitlines()
    found = [(b, e) for b, e, t in region_targets(source, module) if t == target]
    return textwrap.dedent("\n".join(lines[found[0][0] + 1 : found[0][1]])).strip("\n") if found else None


def clear_text(text: str, stub: str) -> str:
    """Replace each solution region (markers included) by ``stub`` at the marker's indentation,
    line for line as nbgrader's ``ClearSolutions`` does (tests/test_nbgrader_compat.py)."""
    lines = text.split("\n")
    for begin, end in reversed(list(solution_regions(text))):
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        lines[begin : end + 1] = [indent + stub_line for stub_line in stub.split("\n")]
    return "\n".join(lines)


def function_span(source: str, qualname: str) -> tuple[int, int]:
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
