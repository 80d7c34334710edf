"""The book's reading targets (issue 37) stay held in the chapters that meet them: at most 15% of
sentences over 30 words and none over 60, at most 3% of the prose about seeds and CPU paths, at
most 10% of the output lines a reader of the web edition sees being the course's machinery.
Measured by transformer_course/tools/readability.py; a chapter joins HELD once it meets them."""

from __future__ import annotations

from pathlib import Path

import pytest

from transformer_course.tools.readability import measure

ROOT = Path(__file__).resolve().parent.parent
HELD = ["06_decoder_and_masks", "07_training", "09_real_translation"]


@pytest.mark.parametrize("chapter", HELD)
def test_the_chapter_reads_within_the_targets(chapter: str) -> None:
    m = measure(ROOT / "chapters" / f"{chapter}.py")
    long = [s for s in m.sentences if len(s.split()) > 60]
    assert m.long_share <= 0.15, f"{m.long_share:.0%} of the sentences are over 30 words (at most 15%)"
    assert m.longest <= 60, f"a sentence of {m.longest} words (at most 60): {long[:1]}"
    assert m.seed_share <= 0.03, f"{m.seed_share:.1%} of the prose is about seeds and CPU paths (at most 3%)"
    assert m.machinery_share <= 0.10, f"{m.machinery_lines} of {m.output_lines} output lines are machinery"
