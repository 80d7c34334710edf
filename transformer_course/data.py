"""Chapter 07 — data made on the spot: no download, no dataset host, the same bytes every run.

Two tasks:

* **copy / reverse** — the target is the source (or the source backwards). A model that cannot
  learn this in a few seconds has a bug; a model that can is worth training on real data.
* **numbers-en-de** — English number words to German number words, made with ``num2words``:
  "twenty-one" → "einundzwanzig", "three hundred and forty-seven thousand …" →
  "dreihundertsiebenundvierzigtausend…". German says the units before the tens, so the model
  must reorder, and the cross-attention maps of chapter 08 show it.

Tokens
------
English is split into words: ``english_tokens("Twenty-one")`` → ``['twenty', 'one']``.
A German number is *one* word, however long, so word-level tokens would need a vocabulary of a
million words, and characters would make every target ~50 tokens long. We cut German into the
pieces its compounds are made of — ``drei | hundert | sieben | und | vierzig | tausend`` — a
vocabulary of 32 pieces, at most 11 per number, and each piece corresponds to an English word.

Splits
------
Every number below 1,000 is in the training set: irregular forms ("null", "elf", "sechzehn",
"dreißig") appear there, and a model cannot guess a form it never saw. Validation and test
numbers are drawn from 1,000 … 999,999 and never appear in training: the model must *compose*.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache

import torch

from .vocab import Vocab

MAX_NUMBER = 999_999  # the largest number of the task (German writes a million as two words)

# -- English ---------------------------------------------------------------------------------

ENGLISH_WORDS: tuple[str, ...] = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    "hundred", "thousand", "and",
)  # fmt: skip

_WORD = re.compile(r"[^\W\d_]+|\d+")  # runs of letters (or of digits); hyphens, commas, spaces split


def english_tokens(text: str) -> list[str]:
    """Lower-case ``text`` and split it into words; hyphens and commas only separate words.

    >>> english_tokens("Three hundred and twenty-one thousand, five")
    ['three', 'hundred', 'and', 'twenty', 'one', 'thousand', 'five']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _WORD.findall(text.lower())


def _check_number(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if not 0 <= n <= MAX_NUMBER:
        raise ValueError(f"n must be in [0, {MAX_NUMBER:,}], got {n:,}")


@cache
def _num2words(n: int, lang: str) -> str:
    from num2words import num2words  # ~170 µs a call: only the 1,000 numbers below 1,000 are asked

    return num2words(n, lang=lang)


def number_to_english(n: int) -> str:
    """``n`` in English words, exactly as ``num2words(n, lang="en")`` writes it (British "and").

    Numbers from 1,000 up are composed from the two groups below 1,000, which is ~100× faster
    than calling ``num2words`` and gives the same text (tested on every number).

    >>> number_to_english(101_021)
    'one hundred and one thousand and twenty-one'
    """
    _check_number(n)
    if n < 1000:
        return _num2words(n, "en")
    thousands, rest = divmod(n, 1000)
    text = _num2words(thousands, "en") + " thousand"
    if rest:
        text += (" and " if rest < 100 else ", ") + _num2words(rest, "en")
    return text


def number_to_german(n: int) -> str:
    """``n`` as one German word, with the errors of ``num2words`` corrected.

    Before "tausend" the number one is "ein", not "eins": ``num2words`` knows this for 1,000
    ("eintausend") and 21,000 ("einundzwanzigtausend") but writes 101,000 as
    "einhunderteinstausend" (and likewise every x01,000 … x01,999). The correct form is
    "einhunderteintausend". Composing from the groups below 1,000 fixes it in one place.

    >>> number_to_german(101_001)
    'einhunderteintausendeins'
    """
    _check_number(n)
    return german_text(_german_pieces(n))


# -- German pieces -------------------------------------------------------------------------

GERMAN_PIECES: tuple[str, ...] = (
    "null", "ein", "eins", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun",
    "zehn", "elf", "zwölf", "dreizehn", "vierzehn", "fünfzehn", "sechzehn", "siebzehn", "achtzehn", "neunzehn",
    "zwanzig", "dreißig", "vierzig", "fünfzig", "sechzig", "siebzig", "achtzig", "neunzig",
    "und", "hundert", "tausend",
)  # fmt: skip
_LONGEST_FIRST = sorted(GERMAN_PIECES, key=len, reverse=True)


def german_tokens(word: str) -> list[str]:
    """Cut a German number word into the pieces it is made of (longest piece first).

    >>> german_tokens("einhunderteinundzwanzigtausend")
    ['ein', 'hundert', 'ein', 'und', 'zwanzig', 'tausend']
    """
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__}")
    word, pieces, i = word.lower(), [], 0
    while i < len(word):
        piece = next((p for p in _LONGEST_FIRST if word.startswith(p, i)), None)
        if piece is None:
            raise ValueError(f"word {word!r} has no German number piece at position {i}: {word[i:]!r}")
        pieces.append(piece)
        i += len(piece)
    return pieces


def german_text(tokens: Sequence[str]) -> str:
    """Join German pieces back into the written word: ``['ein', 'und', 'zwanzig']`` → "einundzwanzig"."""
    if isinstance(tokens, str):
        raise TypeError("german_text expects a list of pieces, not a string")
    return "".join(tokens)


# -- examples and splits -----------------------------------------------------------------------

Pair = tuple[list[str], list[str]]  # (source tokens, target tokens)


@cache
def _group_pair(n: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(english_tokens(_num2words(n, "en"))), tuple(german_tokens(_num2words(n, "de")))


def _german_pieces(n: int) -> list[str]:
    """The German pieces of ``n``, composed from the cached pieces of its two groups below 1,000.

    The one place where the num2words erratum is mended: before "tausend", one is "ein", not
    "eins" (see :func:`number_to_german`).
    """
    thousands, rest = divmod(n, 1000)
    if not thousands:
        return list(_group_pair(rest)[1])
    prefix = _group_pair(thousands)[1]
    if prefix[-1] == "eins":  # ein-tausend, hundertein-tausend
        prefix = (*prefix[:-1], "ein")
    return [*prefix, "tausend", *(_group_pair(rest)[1] if rest else ())]


def number_pair(n: int) -> Pair:
    """(English tokens, German pieces) of the number ``n``.

    The same as ``english_tokens(number_to_english(n)), german_tokens(number_to_german(n))``,
    assembled from the cached tokens of the two groups below 1,000 (fast enough for 100,000
    numbers in a second).
    """
    _check_number(n)
    thousands, rest = divmod(n, 1000)
    src = list(_group_pair(thousands)[0]) + ["thousand"] if thousands else []
    if rest or not thousands:
        src += ["and"] if thousands and rest < 100 else []
        src += _group_pair(rest)[0]
    return src, _german_pieces(n)


def number_splits(
    n_train: int = 60_000, n_valid: int = 1000, n_test: int = 1000, seed: int = 0
) -> dict[str, list[int]]:
    """Disjoint train / validation / test numbers, the same for the same arguments.

    Training holds every number below 1,000 plus ``n_train`` larger ones; validation and test
    hold ``n_valid`` and ``n_test`` numbers from 1,000 … 999,999 that training never sees.
    """
    for name, value in (("n_train", n_train), ("n_valid", n_valid), ("n_test", n_test)):
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    large = MAX_NUMBER + 1 - 1000
    if n_train + n_valid + n_test > large:
        raise ValueError(f"n_train + n_valid + n_test must be at most {large:,}")
    generator = torch.Generator().manual_seed(seed)
    order = (torch.randperm(large, generator=generator) + 1000).tolist()
    test, valid = order[:n_test], order[n_test : n_test + n_valid]
    train = list(range(1000)) + order[n_test + n_valid : n_test + n_valid + n_train]
    return {"train": train, "valid": valid, "test": test}


def copy_pairs(
    n: int, min_len: int = 3, max_len: int = 10, n_symbols: int = 10, reverse: bool = False, seed: int = 0
) -> list[Pair]:
    """``n`` random sequences of the letters a, b, c, … and their copy (or reversal)."""
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    if not 1 <= n_symbols <= 26:
        raise ValueError(f"n_symbols must be in [1, 26], got {n_symbols}")
    rng = random.Random(seed)
    letters = [chr(ord("a") + i) for i in range(n_symbols)]
    pairs = []
    for _ in range(n):
        src = rng.choices(letters, k=rng.randint(min_len, max_len))
        pairs.append((src, src[::-1] if reverse else list(src)))
    return pairs


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


def number_vocabs() -> tuple[Vocab, Vocab]:
    """The fixed English and German vocabularies of the numbers task (ids never depend on data)."""
    return Vocab(ENGLISH_WORDS), Vocab(GERMAN_PIECES)


def numbers_task(n_train: int = 60_000, n_valid: int = 1000, n_test: int = 1000, seed: int = 0) -> Task:
    """English → German number words with the splits of :func:`number_splits`."""
    splits = number_splits(n_train, n_valid, n_test, seed)
    src_vocab, tgt_vocab = number_vocabs()
    pairs = {name: [number_pair(n) for n in numbers] for name, numbers in splits.items()}
    return Task("numbers-en-de", src_vocab, tgt_vocab, **pairs, detokenize=german_text, info={"numbers": splits})


def copy_task(
    reverse: bool = False, n_train: int = 20_000, n_eval: int = 500, n_symbols: int = 10, seed: int = 0
) -> Task:
    """The copy (or reverse) task; validation and test sequences are generated with other seeds."""
    vocab = Vocab(chr(ord("a") + i) for i in range(n_symbols))
    make = lambda n, s: copy_pairs(n, n_symbols=n_symbols, reverse=reverse, seed=s)
    name = "reverse" if reverse else "copy"
    return Task(name, vocab, vocab, make(n_train, seed), make(n_eval, seed + 1), make(n_eval, seed + 2), _join_spaces)


TASKS: dict[str, Callable[[], Task]] = {
    "numbers-en-de": numbers_task,
    "copy": copy_task,
    "reverse": lambda: copy_task(reverse=True),
}


def load_task(name: str) -> Task:
    """One of :data:`TASKS` by name (``"numbers-en-de"``, ``"copy"``, ``"reverse"``)."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}")
    return TASKS[name]()
