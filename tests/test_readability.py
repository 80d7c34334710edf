"""Every chapter keeps the book's reading targets (issue 37, items 2, 3 and 4), measured by
``transformer_course_tools.authoring.readability`` on the committed sources and notebooks: at most 15 % of
sentences over 30 words and none over 60, at most 3 % of the prose about seeds and CPU paths (chapter
08's box says it once), at most 10 % of the output lines a reader of the web edition sees being the
course's machinery, and no chapter past about 3,000 words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transformer_course_tools.authoring.readability import (
    LONG,
    measure,
    measure_outputs,
    measure_prose,
    n_words,
    prose_blocks,
    sentences,
)
from transformer_course_tools.exercises import lock

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("*.py"))
WORDS = 3000  # issue 48: visible prose at most 3,000 words (folded figure descriptions apart)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_sentences_are_short(chapter: Path) -> None:
    m = measure(chapter)
    longest = max(m.sentences, key=n_words)
    assert m.long_share <= 0.15, f"{m.long_share:.0%} of the sentences are over {LONG} words (at most 15 %)"
    assert m.longest <= 60, f"a sentence of {m.longest} words (at most 60): {longest}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_method_is_said_once_and_its_machinery_folded(chapter: Path) -> None:
    m = measure(chapter)
    assert m.seed_share <= 0.03, f"{m.seed_share:.1%} of the prose is about seeds or CPU paths (book/index.md says it)"
    assert m.machinery_share <= 0.10, (
        f"{m.machinery_lines} of the {m.output_lines} output lines a reader sees are the course's machinery: "
        "tag the cells that print checks hide-output"
    )


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_chapter_runs_past_about_3000_words(chapter: Path) -> None:
    assert measure(chapter).words <= WORDS, f"{measure(chapter).words} words of prose (3,000 at most)"


def test_no_chapter_runs_a_later_chapters_exercise() -> None:
    """Issues 37 and 47: a chapter's code uses only what it or an earlier chapter built (the lock lists
    the exercises each chapter's code reaches, read from the code by ``make exercises``), so that in
    the student edition a chapter runs with the exercises of its own and earlier chapters written."""
    needs = lock.read(ROOT / lock.RELATIVE)["chapters"]
    later = {chapter: [i for i in ids if int(i[2:4]) > int(chapter)] for chapter, ids in needs.items()}
    assert {chapter: ids for chapter, ids in later.items() if ids} == {}
    assert set(needs) == {p.stem[:2] for p in CHAPTERS}, "every chapter is in the lock: run `make exercises`"


def test_the_measure_cuts_sentences_and_folds_what_the_web_edition_folds(tmp_path: Path) -> None:
    block = prose_blocks(
        "A first sentence, e.g. with an abbreviation. **A bold lead.** Then `code` and $x^2$.\n\n- an item"
    )
    assert [s for b in block for s in sentences(b)] == [
        "A first sentence, e.g. with an abbreviation.", "**A bold lead.**", "Then `code` and $x^2$.", "an item",
    ]  # fmt: skip
    assert n_words("Then `code` and $x^2$.") == 4
    cell = {"cell_type": "code", "metadata": {}, "source": "", "outputs": [{"text": "✓ a claim (measured: 1)\nresult"}]}
    folded = {**cell, "metadata": {"tags": ["hide-output"]}}
    notebook = tmp_path / "n.ipynb"
    notebook.write_text(json.dumps({"cells": [cell, folded]}), encoding="utf-8")
    m = measure(ROOT / "chapters" / "01_embeddings.py")
    m.output_lines = m.machinery_lines = 0
    measure_outputs(notebook, m)
    assert (m.machinery_lines, m.output_lines) == (1, 2)  # the folded cell's lines are not seen


def test_a_figure_described_in_words_is_counted_apart(tmp_path: Path) -> None:
    source = tmp_path / "c.py"
    source.write_text(
        "# %% [markdown]\n# One two three.\n#\n# <details><summary>The figure in words</summary>\n#\n"
        "# Four five six seven.\n#\n# </details>\n",
        encoding="utf-8",
    )
    m = measure_prose(source)
    assert (m.words, m.figure_words) == (3, 4)  # the folded description counted apart
    assert len(m.sentences) == 2  # its sentences are still held short
