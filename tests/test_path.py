"""The book is one path (issue 47): chapters sort in reading order, each ends with a link to the next,
no chapter uses a room of a later chapter, and every "chapter NN" that names a piece of the package
points at the chapter that builds it. So when chapters move again, a stale pointer fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import transformer_course

from .test_layout import ROOM_CHAPTERS

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))
NUMBER = {path: int(path.stem[:2]) for path in CHAPTERS}


def _room_of(name: str) -> str | None:
    """The room that defines a name the package exports (``greedy_decode`` → ``decoding``)."""
    room = transformer_course._EXPORTS.get(name)
    return None if room is None or room.startswith("datasets") else room


def _rooms_used(path: Path) -> dict[str, int]:
    """Every room a chapter's code imports (directly, or a name the package exports), with the line."""
    used = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("transformer_course."):
            used.setdefault(node.module.split(".")[1], node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "transformer_course":
            for alias in node.names:
                if (room := _room_of(alias.name)) is not None:
                    used.setdefault(room, node.lineno)
    return used


def test_the_chapters_are_numbered_01_to_16_in_reading_order() -> None:
    assert [n for n in NUMBER.values()] == list(range(1, len(CHAPTERS) + 1))
    book = (ROOT / "book" / "index.md").read_text(encoding="utf-8")
    listed = re.findall(r"^/chapters/(\d\d)_\w+$", book, flags=re.MULTILINE)
    assert listed == [p.stem[:2] for p in CHAPTERS], "the web edition lists the chapters in reading order"
    assert "Moved sections" not in book


@pytest.mark.parametrize("room", sorted(ROOM_CHAPTERS))
def test_a_rooms_docstring_names_the_chapter_that_builds_it(room: str) -> None:
    if ROOM_CHAPTERS[room] == 0:
        return  # small helpers of every chapter
    doc = ast.get_docstring(ast.parse((ROOT / "transformer_course" / f"{room}.py").read_text(encoding="utf-8")))
    assert doc.startswith(f"Chapter {ROOM_CHAPTERS[room]:02} — "), f"{room}.py: {doc.splitlines()[0]}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_chapter_uses_a_room_of_a_later_chapter(chapter: Path) -> None:
    later = {room: line for room, line in _rooms_used(chapter).items()
             if ROOM_CHAPTERS.get(room, 0) > NUMBER[chapter]}  # fmt: skip
    assert not later, ", ".join(
        f"line {line}: {room}.py is chapter {ROOM_CHAPTERS[room]:02}'s" for room, line in later.items()
    )


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_ends_with_the_next(chapter: Path) -> None:
    last_cell = chapter.read_text(encoding="utf-8").rstrip().split("# %%")[-1]
    index = CHAPTERS.index(chapter)
    if index + 1 == len(CHAPTERS):
        assert "**After the course:**" in last_cell
        return
    following = CHAPTERS[index + 1]
    assert "**Next:**" in last_cell and f"]({following.stem}.ipynb)" in last_cell, last_cell


LINK = re.compile(r"\[[Cc]hapters? (\d\d)[^\]]*\]\((?:\.\./chapters/)?(\d\d)_(\w+)\.ipynb")
EXERCISES = re.compile(r"\[[Ee]xercises (\d\d)[^\]]*\]\((?:\.\./exercises/)?ex(\d\d)_\w+\.ipynb")
NAMED = re.compile(r"[Cc]hapter (\d\d)'s `(\w+)`|`(\w+)` \([Cc]hapter (\d\d)\)")


def _joined(path: Path) -> str:
    """The file's text on one line, comment marks dropped: a pointer may span two comment lines."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return " ".join(re.sub(r"^\s*#\s?", "", line).strip() for line in lines)


def _texts() -> list[Path]:
    folders = ("chapters", "solutions", "exercises")
    return [p for f in folders for p in sorted((ROOT / f).glob("*.py"))] + [ROOT / "README.md", ROOT / "AUTHORING.md"]


@pytest.mark.parametrize("path", _texts(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_pointer_leads_where_it_says(path: Path) -> None:
    """A link "[chapter NN](NN_name.ipynb)" leads to chapter NN's file; "chapter NN's `name`" and
    "`name` (chapter NN)" name a piece of the package that chapter NN builds."""
    text = _joined(path)
    wrong = []
    for said, linked, stem in LINK.findall(text):
        if said != linked or not (ROOT / "chapters" / f"{linked}_{stem}.ipynb").exists():
            wrong.append(f"chapter {said} links to {linked}_{stem}.ipynb")
    for said, linked in EXERCISES.findall(text):
        if said != linked:
            wrong.append(f"exercises {said} links to ex{linked}")
    for match in NAMED.finditer(text):
        number, name = (match[1], match[2]) if match[1] else (match[4], match[3])
        room = _room_of(name)
        if room is not None and ROOM_CHAPTERS.get(room) != int(number):
            wrong.append(f"`{name}` is chapter {ROOM_CHAPTERS[room]:02}'s ({room}.py), not chapter {number}'s")
    assert not wrong, "; ".join(wrong)


HYPHENATED = re.compile(r"(?<![\w-])[Cc]hapters?-\d\d")


def _code_texts() -> list[Path]:
    """The code's own prose: docstrings, comments, help texts and messages of the package, the tools,
    the benchmarks and the scripts."""
    folders = ("transformer_course", "transformer_course_tools", "benchmarks", "scripts")
    return [p for f in folders for p in sorted((ROOT / f).rglob("*.py"))]


def test_the_codes_pointers_lead_where_they_say_too() -> None:
    """The code names chapters as the chapters do ("chapter 12's text", not "chapter-09 text": the
    renumbering into reading order rewrote "chapter NN" and missed that spelling), and "chapter NN's
    `name`" in a docstring names a piece that chapter NN builds."""
    wrong = []
    for path in _code_texts():
        text = _joined(path)
        where = path.relative_to(ROOT).as_posix()
        wrong += [f"{where}: '{match}' (write 'chapter NN's …')" for match in HYPHENATED.findall(text)]
        for match in NAMED.finditer(text):
            number, name = (match[1], match[2]) if match[1] else (match[4], match[3])
            room = _room_of(name)
            if room is not None and ROOM_CHAPTERS.get(room) != int(number):
                wrong.append(
                    f"{where}: `{name}` is chapter {ROOM_CHAPTERS[room]:02}'s ({room}.py), not chapter {number}'s"
                )
    assert not wrong, "; ".join(wrong)


BOX = re.compile(r"[Cc]hapter (\d\d)(?:\]\([^)]*\))?'s\s+box,?\s+\"([^\"]+)\"")
BOOK_BOX = re.compile(r"box,?\s+\"([^\"]+)\",?\s+on the \[?book's first page")
UNTITLED_BOX = re.compile(r"[Cc]hapter (\d\d)(?:\]\([^)]*\))?'s\s+box(?!,?\s+\")")


@pytest.mark.parametrize("path", _texts(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_named_box_is_in_the_chapter_that_a_pointer_names(path: Path) -> None:
    """'chapter 06's box "TITLE"' leads to a box of that title in chapter 06, and 'the box "How this book
    tests a claim" on the book's first page' to one in book/index.md (a box is a quoted paragraph that
    starts with its bold title): a box renamed or cut fails here. A pointer without the title is
    refused: "chapter 08's box" outlived the box it meant."""
    text = _joined(path)
    wrong = []
    for number, title in BOX.findall(text):
        chapter = next((p for p in CHAPTERS if p.stem.startswith(number)), None)
        if chapter is None or f"> **{title}.**" not in chapter.read_text(encoding="utf-8"):
            wrong.append(f'chapter {number} has no box "{title}"')
    for number in UNTITLED_BOX.findall(text):  # "chapter 08's box" outlived the box it meant: name the title
        wrong.append(f"'chapter {number}'s box' names no title: write 'chapter {number}'s box \"TITLE\"'")
    first_page = (ROOT / "book" / "index.md").read_text(encoding="utf-8")
    for title in BOOK_BOX.findall(text):
        if f"> **{title}.**" not in first_page:
            wrong.append(f'the book\'s first page has no box "{title}"')
    assert not wrong, "; ".join(wrong)
