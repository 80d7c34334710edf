"""Chapter 08 — the data a training run reads: pairs of token lists, a :class:`Task`, and the
copy / reverse tasks.

A :class:`Task` holds the training, validation and test pairs (source tokens, target tokens), the
two vocabularies and how target tokens become text. The **copy / reverse** tasks live here: the
target is the source (or the source backwards), so a model that cannot learn them in a few
seconds has a bug, and a model that can is worth training on real data.

The data the later chapters translate is *made* by generators that are not rooms of the model
(you do not build them): :mod:`transformer_course.datasets.numbers` (English → German number
words, chapters 08–09), :mod:`transformer_course.datasets.sentences` (sentences with German
grammar, chapter 12) and :mod:`transformer_course.datasets.corpora` (your own text files, or a
corpus from the Hugging Face Hub). :func:`load_task` finds the tasks by name.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .vocab import Vocab

Pair = tuple[list[str], list[str]]  # (source tokens, target tokens)


def copy_pairs(
    n: int,
    min_len: int = 3,
    max_len: int = 10,
    n_symbols: int = 10,
    reverse: bool = False,
    seed: int = 0,
    unseen_in: Sequence[Pair] = (),
) -> list[Pair]:
    """``n`` random sequences of the letters a, b, c, … and their copy (or reversal).

    ``unseen_in``: pairs whose sources must not be drawn again (the training pairs, when drawing
    held-out strings). A string drawn that is one of them is thrown away and another drawn.
    """
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    if not 1 <= n_symbols <= 26:
        raise ValueError(f"n_symbols must be in [1, 26], got {n_symbols}")
    rng = random.Random(seed)
    letters = [chr(ord("a") + i) for i in range(n_symbols)]
    seen = {tuple(src) for src, _ in unseen_in}
    _check_room(seen, letters, min_len, max_len, n)
    pairs = []
    while len(pairs) < n:
        src = rng.choices(letters, k=rng.randint(min_len, max_len))
        if tuple(src) not in seen:
            pairs.append((src, src[::-1] if reverse else list(src)))
    return pairs


def _check_room(seen: set[tuple[str, ...]], letters: list[str], min_len: int, max_len: int, n: int) -> None:
    """Refuse a draw that could never finish: every string of these lengths is already seen."""
    if not seen or n == 0:
        return
    possible = sum(len(letters) ** length for length in range(min_len, max_len + 1))
    alphabet = set(letters)
    taken = sum(min_len <= len(src) <= max_len and alphabet.issuperset(src) for src in seen)
    if taken >= possible:
        raise ValueError(
            f"unseen_in holds all {possible} strings of {min_len}-{max_len} letters from {len(letters)} symbols: "
            "no held-out string is left to draw"
        )


def _join_spaces(tokens: Sequence[str]) -> str:
    return " ".join(tokens)


@dataclass
class Task:
    """Everything a training run needs to know about a task.

    ``train`` / ``valid`` / ``test`` hold (source tokens, target tokens) pairs; ``detokenize``
    turns target tokens back into text (for BLEU / chrF and for printing).
    """

    name: str
    src_vocab: Vocab
    tgt_vocab: Vocab
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    detokenize: Callable[[Sequence[str]], str] = _join_spaces
    info: dict = field(default_factory=dict)


def copy_task(
    reverse: bool = False, n_train: int = 20_000, n_eval: int = 500, n_symbols: int = 10, seed: int = 0
) -> Task:
    """The copy (or reverse) task. Validation and test strings are drawn with other seeds and are
    held out: none of them is a training string, and no test string is a validation string."""
    vocab = Vocab(chr(ord("a") + i) for i in range(n_symbols))
    make = lambda n, s, unseen: copy_pairs(n, n_symbols=n_symbols, reverse=reverse, seed=s, unseen_in=unseen)
    train = make(n_train, seed, ())
    valid = make(n_eval, seed + 1, train)
    test = make(n_eval, seed + 2, train + valid)
    return Task("reverse" if reverse else "copy", vocab, vocab, train, valid, test, _join_spaces)


TASKS: dict[str, Callable[[], Task]] = {
    "copy": copy_task,
    "reverse": lambda: copy_task(reverse=True),
}
"""This room's toy tasks by name. The generators of :mod:`transformer_course.datasets` fill a
:class:`Task` too and import this room, never the other way round: ``transformer_course.load_task``
(:func:`transformer_course.datasets.load_task`) knows them all."""


def load_task(name: str) -> Task:
    """One of this room's :data:`TASKS` by name (``"copy"``, ``"reverse"``); the number words,
    ``"numbers-en-de"``, come from :func:`transformer_course.datasets.load_task`."""
    if name not in TASKS:
        raise ValueError(
            f"unknown task {name!r}; choose one of {', '.join(TASKS)} "
            "(every task, numbers-en-de included: transformer_course.load_task)"
        )
    return TASKS[name]()
