"""English → German number words (the task of chapters 08 and 09), made on the spot with
``num2words``: no download, no dataset host, the same bytes every run.

"twenty-one" → "einundzwanzig", "three hundred and forty-seven thousand …" →
"dreihundertsiebenundvierzigtausend…". German says the units before the tens, so the model must
reorder, and the cross-attention maps of chapter 10 show it.

Tokens
------
English is split into words: ``english_tokens("Twenty-one")`` → ``['twenty', 'one']``.
A German number is *one* word, however long, so word-level tokens would need a vocabulary of a
million words, and characters would make every target ~50 tokens long. We cut German into the
pieces its compounds are made of — ``drei | hundert | sieben | und | vierzig | tausend`` — a
vocabulary of 32 pieces, at most 11 per number, and each piece corresponds to an English word.

Splits
------
A random number below a million almost always has six digits, so a random test set says nothing
about "seven", "one hundred" or "forty thousand". The numbers are sorted into *strata* (0–20,
21–99, 100–999, round hundreds, round thousands, round hundred-thousands, "N thousand and k",
the full range) and validation and test take a fixed number from each. The strata too small to
spare — below 100 the forms are irregular ("null", "elf", "sechzehn", "dreißig") and a model
cannot guess a form it never saw — are wholly in training, and their score is *seen* accuracy.
From the others validation and test draw numbers that training never sees: the model must
*compose*. Training holds every other number below 1,000 and every other round thousand, plus
60,000 random numbers, and repeats the rare strata so that the model sees them often enough.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache

import torch

from ..data import Pair, Task
from ..vocab import Vocab

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


def english_to_number(tokens: Sequence[str]) -> int | None:
    """The number whose English words (as :func:`number_pair` writes them) are ``tokens``, or None.

    Only the course's own spelling counts, the only one the translator was trained on: "one
    hundred and five", not "a hundred five"; "one thousand thousand" or a lone "and" are no number.

    >>> english_to_number(["twenty", "one", "thousand", "and", "five"])
    21005
    """
    tokens = list(tokens)
    thousands = tokens.index("thousand") if "thousand" in tokens else None
    head, tail = (tokens, []) if thousands is None else (tokens[:thousands], tokens[thousands + 1 :])
    groups = _groups_by_tokens()
    if tuple(head) not in groups:
        return None
    n = groups[tuple(head)] if thousands is None else 1000 * groups[tuple(head)]
    if tail:
        rest = groups.get(tuple(tail[1:] if tail[0] == "and" else tail))
        n = None if rest is None or n == 0 else n + rest
    return n if n is not None and 0 <= n <= MAX_NUMBER and number_pair(n)[0] == tokens else None


@cache
def _groups_by_tokens() -> dict[tuple[str, ...], int]:
    """English tokens of 0 … 999 → the number."""
    return {_group_pair(n)[0]: n for n in range(1000)}


# -- strata: the kinds of number a random sample almost never holds -----------------------------
#
# A random number below a million is almost always six digits long with both groups non-zero:
# "zero", "seven", "one hundred" and "forty thousand" are each one in a million, so a test split
# of random numbers says nothing about them, and a training set of random numbers barely shows
# them. We name these kinds (strata), test each one on its own and show the rare ones more often.

STRATA: tuple[str, ...] = (
    "0-20", "21-99", "100-999", "round hundreds", "round thousands", "round hundred-thousands",
    "N thousand and k", "full range",
)  # fmt: skip

# Strata too small to hold numbers out of: below 100 the forms are irregular ("elf", "sechzehn",
# "dreißig") and a model cannot guess a form it never saw; the 9 round hundreds and the 9 round
# hundred-thousands are too few to spare. Every member is in training *and* in the validation
# and test splits, so their accuracy is "seen" accuracy: it shows the model learnt them (and
# where to stop), not that it generalises.
SEEN_STRATA: tuple[str, ...] = ("0-20", "21-99", "round hundreds", "round hundred-thousands")

# How many times each training number of a stratum is repeated (the largest factor among its
# strata wins; 1 for the rest). Unrepeated, a number below 100 is one example in 60,000: the
# shipped run shows it about 6 times, too few to learn where a one-piece translation ends
# ("seven" → "sieben sieben sieben …"). The one-piece numbers 0-20 get the most: with ×20 the
# 800-step run of chapter 08 still got 7 of the 21 wrong, with ×60 none. The ×4 on 100-999 and
# on the round thousands helps the final "eins" of "einhunderteins": without it 101, 201, … 901
# were wrong after 1,500 steps, with it right (after 800 steps they are wrong either way).
NUMBER_OVERSAMPLING: dict[str, int] = {
    "0-20": 60, "21-99": 20, "100-999": 4, "round hundreds": 20, "round thousands": 4, "round hundred-thousands": 20,
}  # fmt: skip


def number_strata(n: int) -> tuple[str, ...]:
    """The strata ``n`` belongs to, in the order of :data:`STRATA`; every number is in "full range".

    >>> number_strata(300_000)
    ('round thousands', 'round hundred-thousands', 'full range')
    >>> number_strata(40_007)
    ('N thousand and k', 'full range')
    """
    _check_number(n)
    thousands, rest = divmod(n, 1000)
    strata: list[str] = []
    if not thousands:
        strata.append("0-20" if n <= 20 else "21-99" if n < 100 else "100-999")
        if n >= 100 and n % 100 == 0:
            strata.append("round hundreds")
    elif rest == 0:
        strata.append("round thousands")
        if n % 100_000 == 0:
            strata.append("round hundred-thousands")
    elif rest < 100:
        strata.append("N thousand and k")  # English says "and" here: "forty thousand and seven"
    return (*strata, "full range")


def stratum_members(stratum: str) -> list[int]:
    """Every number of ``stratum``, ascending (written from the definitions, not from :func:`number_strata`)."""
    members = {
        "0-20": lambda: range(0, 21),
        "21-99": lambda: range(21, 100),
        "100-999": lambda: range(100, 1000),
        "round hundreds": lambda: range(100, 1000, 100),
        "round thousands": lambda: range(1000, MAX_NUMBER + 1, 1000),
        "round hundred-thousands": lambda: range(100_000, MAX_NUMBER + 1, 100_000),
        "N thousand and k": lambda: (t * 1000 + k for t in range(1, 1000) for k in range(1, 100)),
        "full range": lambda: range(MAX_NUMBER + 1),
    }
    if stratum not in members:
        raise ValueError(f"unknown stratum {stratum!r}; choose one of {', '.join(STRATA)}")
    return list(members[stratum]())


def _seen_numbers() -> list[int]:
    return sorted({n for stratum in SEEN_STRATA for n in stratum_members(stratum)})


def held_out_numbers(
    n_valid: int = 1000, n_test: int = 1000, n_per_stratum: int = 100, seed: int = 0
) -> dict[str, dict[str, list[int]]]:
    """The validation and test numbers, stratum by stratum: ``{"valid": {stratum: numbers}, "test": …}``.

    A seen stratum (:data:`SEEN_STRATA`) gives all its members to both splits. Every other
    stratum gives ``n_per_stratum`` numbers to each split ("full range": ``n_valid`` and
    ``n_test``), drawn at random from its members that are neither seen nor drawn before, so
    no held-out number is in two places.
    """
    for name, value in (("n_valid", n_valid), ("n_test", n_test), ("n_per_stratum", n_per_stratum)):
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    generator = torch.Generator().manual_seed(seed)
    taken = set(_seen_numbers())
    splits: dict[str, dict[str, list[int]]] = {"valid": {}, "test": {}}
    for stratum in STRATA:
        if stratum in SEEN_STRATA:
            splits["valid"][stratum] = splits["test"][stratum] = stratum_members(stratum)
            continue
        sizes = (n_test, n_valid) if stratum == "full range" else (n_per_stratum, n_per_stratum)
        pool = [n for n in stratum_members(stratum) if n not in taken]
        if sum(sizes) > len(pool):
            raise ValueError(f"stratum {stratum!r} has {len(pool)} numbers to hold out, {sum(sizes)} asked")
        picks = [pool[i] for i in torch.randperm(len(pool), generator=generator)[: sum(sizes)].tolist()]
        splits["test"][stratum], splits["valid"][stratum] = picks[: sizes[0]], picks[sizes[0] :]
        taken.update(picks)
    return splits


def _flatten(by_stratum: dict[str, list[int]]) -> list[int]:
    """The numbers of all strata, each once, in stratum order (seen strata share no members)."""
    return list(dict.fromkeys(n for numbers in by_stratum.values() for n in numbers))


def training_numbers(held_out: dict[str, dict[str, list[int]]], n_train: int = 60_000, seed: int = 0) -> list[int]:
    """The training numbers: every number of the small strata not held out, plus ``n_train`` others.

    Every number below 1,000 and every round thousand that validation and test do not hold is
    in training: a random draw would hold only ~60 of the 999 round thousands. The ``n_train``
    others are drawn at random from the rest (mostly six-digit numbers).
    """
    if n_train < 0:
        raise ValueError(f"n_train must be >= 0, got {n_train}")
    held = {n for split in held_out.values() for numbers in split.values() for n in numbers} - set(_seen_numbers())
    covered = [n for n in range(1000)] + stratum_members("round thousands")
    covered = [n for n in covered if n not in held]
    excluded = held | set(covered)
    pool = [n for n in range(1000, MAX_NUMBER + 1) if n not in excluded]
    if n_train > len(pool):
        raise ValueError(f"n_train must be at most {len(pool):,}, got {n_train:,}")
    generator = torch.Generator().manual_seed(seed + 1)  # not the held-out draw's stream
    return covered + [pool[i] for i in torch.randperm(len(pool), generator=generator)[:n_train].tolist()]


def number_splits(
    n_train: int = 60_000, n_valid: int = 1000, n_test: int = 1000, seed: int = 0, n_per_stratum: int = 100
) -> dict[str, list[int]]:
    """Train / validation / test numbers, the same for the same arguments.

    Validation and test are :func:`held_out_numbers` flattened; training is
    :func:`training_numbers`. Only the seen strata (:data:`SEEN_STRATA`) are in more than one split.
    """
    held_out = held_out_numbers(n_valid, n_test, n_per_stratum, seed)
    train = training_numbers(held_out, n_train, seed)
    return {"train": train, "valid": _flatten(held_out["valid"]), "test": _flatten(held_out["test"])}


def oversample(numbers: Sequence[int], weights: Mapping[str, int]) -> list[int]:
    """``numbers`` with each one repeated by the largest weight among its strata (1 if none is given)."""
    if any(w < 1 for w in weights.values()) or set(weights) - set(STRATA):
        raise ValueError(f"weights must be integers >= 1 for strata among {STRATA}, got {dict(weights)}")
    return [n for n in numbers for _ in range(max(weights.get(s, 1) for s in number_strata(n)))]


def number_vocabs() -> tuple[Vocab, Vocab]:
    """The fixed English and German vocabularies of the numbers task (ids never depend on data)."""
    return Vocab(ENGLISH_WORDS), Vocab(GERMAN_PIECES)


def numbers_task(
    n_train: int = 60_000,
    n_valid: int = 1000,
    n_test: int = 1000,
    seed: int = 0,
    n_per_stratum: int = 100,
    oversampling: Mapping[str, int] | None = None,
) -> Task:
    """English → German number words with the splits of :func:`number_splits`.

    The training pairs repeat the numbers of rare strata (``oversampling``, default
    :data:`NUMBER_OVERSAMPLING`; ``{}`` turns it off); ``info["numbers"]`` lists each training
    number once, and ``info["strata"]`` holds the validation and test numbers stratum by stratum.
    """
    held_out = held_out_numbers(n_valid, n_test, n_per_stratum, seed)
    train = training_numbers(held_out, n_train, seed)
    splits = {"train": train, "valid": _flatten(held_out["valid"]), "test": _flatten(held_out["test"])}
    weights = dict(NUMBER_OVERSAMPLING if oversampling is None else oversampling)
    src_vocab, tgt_vocab = number_vocabs()
    pairs = {name: [number_pair(n) for n in numbers] for name, numbers in splits.items()}
    pairs["train"] = [number_pair(n) for n in oversample(train, weights)]
    info = {"numbers": splits, "strata": held_out, "oversampling": weights}
    return Task("numbers-en-de", src_vocab, tgt_vocab, **pairs, detokenize=german_text, info=info)
