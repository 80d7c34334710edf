"""Every number the prose states agrees with something that holds on every machine (issues 48, 53).

A number in a chapter's prose (its markdown, outside math, code and the folded figure descriptions)
must appear in the chapter's code or in an output that nbval compares (an exact output, the same on
every machine), or be a fact about the world listed in book/facts.toml with its source. A number that
a training run or a timing printed (an output tagged nbval-ignore-output) anchors nothing: the prose
never quotes one; a cell renders such a sentence from its own result instead. So a sentence that
explains an output with a number the output does not show (88,808 for a printed 88,088) fails here.
Numbers of one digit, years, section and equation numbers, chapter numbers and exercise ids are left out.

The solutions notebooks are held to the same rule. Their worked answers may quote the companion
chapter's results, so a solution's anchors are its own and its chapter's, and so are its facts. A run
result typed into a worked answer ("about 40,700") that neither notebook prints fails here.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from transformer_course_tools.authoring.readability import FIGURE_IN_WORDS, markdown_cells

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the floor
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))
SOLUTIONS = sorted((ROOT / "solutions").glob("ex[0-9][0-9]_*.py"))
FACTS = tomllib.loads((ROOT / "book" / "facts.toml").read_text(encoding="utf-8"))
NUMBER = re.compile(r"(?<![\w.§$/-])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w,]\d|\w)")
NOT_A_RESULT = re.compile(
    r"§\s?\d+(\.\d+)*|[Cc]hapters? \d\d(\s*(,|and|–|-|to)\s*\d\d)*|\(\d{4}[a-z]?\)|\b(19|20)\d\d\b"
    r"|equation \(\d+\)|[Tt]able \d+|[Ss]ections? \d+|\bex\d\d_\w+|\bq\d\b|exercise \w+|[Ee]xercises \d\d"
)


def visible_prose(markdown: str) -> str:
    markdown = FIGURE_IN_WORDS.sub(" ", markdown)
    markdown = re.sub(r"```.*?```|\$\$.*?\$\$|\$[^$]*\$|`[^`]*`", " ", markdown, flags=re.S)
    markdown = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)  # a link: its text
    markdown = re.sub(r"(?m)^#+ .*$", " ", markdown)  # headings
    return NOT_A_RESULT.sub(" ", markdown)


def anchors(notebook: Path) -> str:
    """The chapter's code and its compared outputs (not those of cells tagged nbval-ignore-output)."""
    found = []
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        found.append("".join(cell["source"]))
        if "nbval-ignore-output" in cell.get("metadata", {}).get("tags", []):
            continue
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            text = output.get("text") or data.get("text/markdown") or data.get("text/plain") or ""
            found.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(found)


def stated_numbers(chapter: Path) -> set[str]:
    numbers = set()
    for markdown in markdown_cells(chapter.read_text(encoding="utf-8")):
        for match in NUMBER.finditer(visible_prose(markdown)):
            if len(match.group(1)) > 1:
                numbers.add(match.group(1))
    return numbers


def companion(source: Path) -> Path | None:
    """The chapter a solutions notebook belongs to (``solutions/ex07_x.py`` → ``chapters/07_x.py``)."""
    if source.parent.name != "solutions":
        return None
    return ROOT / "chapters" / f"{source.stem[2:]}.py"


@pytest.mark.parametrize("source", CHAPTERS + SOLUTIONS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_number_in_the_prose_is_anchored(source: Path) -> None:
    anchored = anchors(source.with_suffix(".ipynb"))
    facts = dict(FACTS.get(source.stem, {}))
    chapter = companion(source)
    if chapter is not None:  # a worked answer may quote its chapter's results and facts
        anchored += "\n" + anchors(chapter.with_suffix(".ipynb"))
        facts |= FACTS.get(chapter.stem, {})
    loose = sorted(
        n for n in stated_numbers(source)
        if n not in facts and n not in anchored and n.replace(",", "") not in anchored
    )  # fmt: skip
    assert not loose, (
        f"{source.relative_to(ROOT)}: numbers the prose states that no compared output, code or fact "
        f"(book/facts.toml, with its source) holds: {', '.join(loose)}"
    )


def test_every_fact_has_a_source_and_is_used() -> None:
    for chapter, facts in FACTS.items():
        folder = "solutions" if chapter.startswith("ex") else "chapters"
        path = ROOT / folder / f"{chapter}.py"
        assert path.exists(), f"book/facts.toml names no chapter or solutions notebook {chapter}"
        stated = stated_numbers(path)
        for number, source in facts.items():
            assert isinstance(source, str) and len(source) > 10, f"{chapter} {number}: give its source"
            assert number in stated, f"{chapter}: {number} is listed as a fact but the prose no longer states it"
