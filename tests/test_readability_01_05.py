"""Chapters 01–05 keep the book's reading targets (issue 37, items 2 and 4), measured by
``transformer_course.tools.readability`` on the committed sources and notebooks."""

from __future__ import annotations

from pathlib import Path

import pytest

from transformer_course.tools.readability import LONG, measure, n_words

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = [ROOT / "chapters" / f"{name}.py" for name in (
    "01_embeddings", "02_positional_encoding", "03_attention", "04_multi_head_attention", "05_encoder",
)]  # fmt: skip


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_sentences_are_short(chapter: Path) -> None:
    m = measure(chapter)
    longest = max(m.sentences, key=n_words)
    assert m.long_share <= 0.15, f"{m.long_share:.0%} of the sentences are over {LONG} words (at most 15 %)"
    assert m.longest <= 60, f"a sentence of {m.longest} words (at most 60): {longest}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_method_is_said_once_and_its_machinery_folded(chapter: Path) -> None:
    m = measure(chapter)
    assert m.seed_share <= 0.03, f"{m.seed_share:.1%} of the prose is about seeds or CPU paths (chapter 07 says it)"
    assert m.machinery_share <= 0.10, (
        f"{m.machinery_lines} of the {m.output_lines} output lines a reader sees are the course's machinery: "
        "tag the cells that print checks hide-output"
    )
