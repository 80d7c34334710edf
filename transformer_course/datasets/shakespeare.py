"""Real English text for the language models: six plays by Shakespeare (public domain), 732 KB.

The files are in ``texts/`` beside this module, with their source and licence (``texts/README.md``):
no download, the same bytes on every machine. A play is cut into its *passages*, the blocks
between blank lines of the file: a speech with its speaker ("Ber. Who's there?"), a stage
direction, a scene heading. The line breaks inside a passage become spaces (chapter 12's
tokenizer collapses whitespace anyway).

:func:`shakespeare_splits` holds out the end of every play: the last 5 % of its passages are the
test split, the 5 % before them validation, the rest training. :func:`pack_passages` joins
consecutive tokenized passages into training texts of at most ``max_tokens`` ids, so that a
language model reads several speeches in a row, as in the play.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

TEXTS = Path(__file__).resolve().parent / "texts"
PLAYS: tuple[str, ...] = ("hamlet", "macbeth", "romeo_and_juliet", "julius_caesar", "midsummer_nights_dream", "tempest")
HELD_OUT_SHARE = 0.05  # of each play's passages, for validation and again for test (its end)


def play_text(name: str) -> str:
    """The whole text of one play, as shipped (``texts/<name>.txt``)."""
    if name not in PLAYS:
        raise ValueError(f"unknown play {name!r}; choose one of {', '.join(PLAYS)}")
    return (TEXTS / f"{name}.txt").read_text(encoding="utf-8")


def passages(text: str) -> list[str]:
    """The blocks of ``text`` between blank lines, each on one line (its whitespace collapsed).

    >>> passages("Ber.\\nWho's there?\\n\\nFran.\\nNay, answer me.\\n")
    ["Ber. Who's there?", 'Fran. Nay, answer me.']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    blocks = re.split(r"\n\s*\n", text)
    return [" ".join(block.split()) for block in blocks if block.strip()]


def shakespeare_splits(plays: Sequence[str] = PLAYS) -> dict[str, list[str]]:
    """Passages of ``plays`` for training, validation and test: each play's last 5 % is test, the 5 %
    before it validation (at least one passage each), the rest training; in the plays' order."""
    splits: dict[str, list[str]] = {"train": [], "valid": [], "test": []}
    for name in plays:
        blocks = passages(play_text(name))
        held = max(1, round(HELD_OUT_SHARE * len(blocks)))
        splits["train"] += blocks[: -2 * held]
        splits["valid"] += blocks[-2 * held : -held]
        splits["test"] += blocks[-held:]
    return splits


def pack_passages(passage_ids: Sequence[Sequence[int]], max_tokens: int, bos_id: int, eos_id: int) -> list[list[int]]:
    """Consecutive passages (token ids) joined into texts ``<bos> p₁ p₂ … <eos>`` of at most
    ``max_tokens`` ids. A passage too long for one text is cut into pieces: ``<bos>`` and the
    piece, ``<eos>`` after its last piece only (the text goes on; the model should not stop there).

    Shape:
        N lists of ids → M lists, each of at most ``max_tokens`` ids
    """
    if max_tokens < 3:
        raise ValueError(f"max_tokens must be >= 3 (<bos>, a token, <eos>), got {max_tokens}")
    room = max_tokens - 2  # <bos> and <eos>
    texts: list[list[int]] = []
    current: list[int] = []
    for ids in passage_ids:
        ids = list(ids)
        if current and len(current) + len(ids) > room:
            texts.append([bos_id, *current, eos_id])
            current = []
        while len(ids) > room:  # a long speech: pieces of room + 1 ids, no <eos> inside a passage
            texts.append([bos_id, *ids[: room + 1]])
            ids = ids[room + 1 :]
        current += ids
    if current:
        texts.append([bos_id, *current, eos_id])
    return texts
