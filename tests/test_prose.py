"""Sentences a reader found wrong stay fixed: the wrong wording must not come back, and the caveats
that replaced it stay in place. (The prose is compared as running text: line breaks and the
comment marks of the jupytext source do not matter.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def prose(path: str) -> str:
    """The file's text with each line's leading "# " removed and the lines joined by spaces."""
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    return " ".join(re.sub(r"^#\s?", "", line).strip() for line in lines)


WRONG = [
    # attention wins on short sequences through fewer sequential steps, not through less arithmetic
    ("chapters/03_attention.py", "work is small, while the loop pays"),
    ("chapters/03_attention.py", "does not show on one thread"),
    ("solutions/ex03_attention.py", "so attention is cheaper while $n < d$"),
    # the unchanged gradient path through a whole stack is pre-LN's, not post-LN's
    ("chapters/05_encoder.py", 'through the "$x +$" unchanged, however many layers are stacked'),
    # [3] of the paper is Britz et al.
    ("chapters/09_real_translation.py", "Sennrich et al., 2016, the paper's reference [3]"),
    # the data has no names; German capitalises nouns, so ▁baby and ▁Baby are different tokens
    ("chapters/09_real_translation.py", "names and loan words spelled alike"),
    ("chapters/09_real_translation.py", "(a name, *Baby*, a comma)"),
    ("chapters/09_real_translation.py", "learns real German grammar in minutes"),
    # the maps show heads that disagree
    ("chapters/08_decoding.py", "in layer 2 every head reads"),
    # a run's result is one draw on one CPU
    ("chapters/07_training.py", "so that every run gives the same numbers"),
    ("chapters/09_real_translation.py", "so every run gives the same numbers"),
]

STILL_THERE = [
    ("chapters/02_positional_encoding.py", "no longer a function of $p - q$ alone"),
    ("chapters/05_encoder.py", "in the paper's post-LN, every residual sum passes through a LayerNorm"),
    ("chapters/03_attention.py", "attention does *more* arithmetic than the loop"),
]


@pytest.mark.parametrize(("path", "wrong"), WRONG)
def test_a_corrected_sentence_does_not_come_back(path: str, wrong: str) -> None:
    assert wrong not in prose(path), f"{path} says again: {wrong!r}"


@pytest.mark.parametrize(("path", "caveat"), STILL_THERE)
def test_the_correction_is_still_there(path: str, caveat: str) -> None:
    assert caveat in prose(path), f"{path} lost: {caveat!r}"
