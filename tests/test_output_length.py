"""One output-length rule (paper §6.1: input length + 50, stop early when possible).

``decoding.max_output_length`` is the only rule. The package and the command line never choose a
length of their own: a call of a decoder there passes ``max_len`` on from its own caller or not
at all. A chapter may pass a smaller limit, and says why in a comment on the line or the two
above it. Nothing derives a limit from the reference translations.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = sorted((ROOT / "transformer_course").rglob("*.py"))
CHAPTERS = sorted((ROOT / "chapters").glob("*.py"))

# the position of max_len in each decoder's signature (after model and src, or beam_size)
MAX_LEN_POSITION = {"greedy_decode": 2, "sample": 2, "beam_search": 3, "translate": 4}

# the earlier rules, gone: the table's length minus one, a reference's length, fixed lengths
OLD_RULES = [r"config\.max_len\s*-\s*1", r"\bMAX_OUT\b", r"min\(2\s*\*\s*longest", r"default_len", r"max_len=40\b"]


def _limits_given(path: Path) -> list[tuple[int, ast.expr]]:
    """(line, expression) of every max_len passed explicitly to a decoder in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", getattr(node.func, "attr", None))
        if name not in MAX_LEN_POSITION:
            continue
        given = [k.value for k in node.keywords if k.arg == "max_len"]
        if len(node.args) > MAX_LEN_POSITION[name]:
            given.append(node.args[MAX_LEN_POSITION[name]])
        found += [(node.lineno, value) for value in given]
    return found


@pytest.mark.parametrize("path", PACKAGE + CHAPTERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_other_output_length_rule(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for rule in OLD_RULES:
        assert not re.search(rule, text), f"{path.name}: an output-length rule other than §6.1's: {rule}"


@pytest.mark.parametrize("path", PACKAGE, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_package_passes_max_len_on_or_not_at_all(path: Path) -> None:
    for line, value in _limits_given(path):
        passed_on = (
            isinstance(value, ast.Name)
            and value.id == "max_len"
            or (isinstance(value, ast.Constant) and value.value is None)
        )
        assert passed_on, f"{path.name}:{line}: a decoder called with a length of its own ({ast.unparse(value)})"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_a_chapter_says_why_it_passes_a_smaller_limit(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    for line, value in _limits_given(path):
        context = " ".join(lines[max(line - 3, 0) : line])  # the call's line and the two above
        assert "#" in context and re.search(r"max_len|limit|tokens", context.split("#", 1)[1]), (
            f"{path.name}:{line}: max_len={ast.unparse(value)} without a comment saying why"
        )
