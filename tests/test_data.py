"""Chapter 08 data: number words, tokens, splits, padding, bucketing, teacher forcing."""

from __future__ import annotations

import random

import pytest
import torch
from num2words import num2words

from transformer_course.batching import (
    batch_indices,
    batch_stream,
    encode_pairs,
    make_batch,
    pad_sequences,
    teacher_forcing,
)
from transformer_course.data import copy_pairs, copy_task, load_task
from transformer_course.datasets.numbers import (
    GERMAN_PIECES,
    SEEN_STRATA,
    STRATA,
    english_tokens,
    german_text,
    german_tokens,
    held_out_numbers,
    number_pair,
    number_splits,
    number_strata,
    number_to_english,
    number_to_german,
    number_vocabs,
    oversample,
    stratum_members,
    training_numbers,
)

# -- an independent, rule-based German reference (written from a grammar book, not num2words) --
_UNITS = ["", "ein", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun"]
_TEENS = ["zehn", "elf", "zwölf", "dreizehn", "vierzehn", "fünfzehn", "sechzehn", "siebzehn", "achtzehn", "neunzehn"]
_TENS = ["", "", "zwanzig", "dreißig", "vierzig", "fünfzig", "sechzig", "siebzig", "achtzig", "neunzig"]


def _german_group(n: int, last: bool) -> str:
    hundreds, rest = divmod(n, 100)
    word = _UNITS[hundreds] + "hundert" if hundreds else ""
    if 10 <= rest < 20:
        word += _TEENS[rest - 10]
    elif rest:
        tens, units = divmod(rest, 10)
        word += (_UNITS[units] + "und" if units and tens else _UNITS[units]) + _TENS[tens]
    if last and rest == 1:
        word += "s"  # "eins" at the very end, "ein" inside a compound (einhunderteintausend)
    return word


def german_reference(n: int) -> str:
    if n == 0:
        return "null"
    thousands, rest = divmod(n, 1000)
    return (_german_group(thousands, False) + "tausend" if thousands else "") + (
        _german_group(rest, True) if rest else ""
    )


def _sample(k: int = 3000, seed: int = 1) -> list[int]:
    rng = random.Random(seed)
    return list(range(1200)) + [rng.randrange(1_000_000) for _ in range(k)] + [x * 1000 + 1 for x in range(1, 1000)]


def test_german_matches_a_rule_based_reference() -> None:
    for n in _sample():
        assert number_to_german(n) == german_reference(n), n


@pytest.mark.parametrize(
    "n, word",
    [
        (101_000, "einhunderteintausend"),  # num2words: einhunderteinstausend
        (901_001, "neunhunderteintausendeins"),
        (1000, "eintausend"),
        (21_000, "einundzwanzigtausend"),
        (1, "eins"),
        (0, "null"),
        (347_000, "dreihundertsiebenundvierzigtausend"),
    ],
)
def test_num2words_errata_are_corrected(n: int, word: str) -> None:
    assert number_to_german(n) == word


def test_every_x01_thousand_is_corrected() -> None:
    for hundreds in range(1, 10):
        n = hundreds * 100_000 + 1000 + 7
        assert "einstausend" not in number_to_german(n)
        assert number_to_german(n).endswith("hunderteintausendsieben")


def test_english_is_what_num2words_writes() -> None:
    rng = random.Random(2)
    for n in [0, 1, 21, 100, 101, 1001, 1100, 100_001, 101_000, 999_999] + [rng.randrange(10**6) for _ in range(400)]:
        assert number_to_english(n) == num2words(n, lang="en"), n


def test_number_pair_is_the_tokenized_texts() -> None:
    for n in _sample(1000, seed=3):
        src, tgt = number_pair(n)
        assert src == english_tokens(number_to_english(n))
        assert tgt == german_tokens(number_to_german(n))
        assert german_text(tgt) == number_to_german(n)


@pytest.mark.parametrize("bad", [-1, 1_000_000, 2.0, True, "7"])
def test_numbers_out_of_range_are_refused(bad) -> None:
    with pytest.raises((ValueError, TypeError), match="n must"):
        number_to_german(bad)


def test_english_tokens() -> None:
    assert english_tokens("Twenty-One") == ["twenty", "one"]
    assert english_tokens("one thousand, one hundred and five") == ["one", "thousand", "one", "hundred", "and", "five"]
    assert english_tokens("  ") == []


def test_german_tokens_cut_compounds_into_pieces() -> None:
    assert german_tokens("einundzwanzig") == ["ein", "und", "zwanzig"]
    assert german_tokens("siebzehntausendsechzig") == ["siebzehn", "tausend", "sechzig"]
    assert german_tokens("achtundachtzig") == ["acht", "und", "achtzig"]
    assert set(german_tokens(number_to_german(777_777))) <= set(GERMAN_PIECES)
    with pytest.raises(ValueError, match="no German number piece"):
        german_tokens("einhundertxyz")


def test_splits_are_disjoint_deterministic_and_hold_out_large_numbers() -> None:
    splits = number_splits(n_train=5000, n_valid=300, n_test=300, seed=0, n_per_stratum=50)
    train, valid, test = (set(splits[k]) for k in ("train", "valid", "test"))
    seen = {n for stratum in SEEN_STRATA for n in stratum_members(stratum)}
    assert len(valid) == len(test) == len(seen) + 3 * 50 + 300
    assert train & valid == train & test == valid & test == seen, "only the seen strata are shared"
    assert set(range(21)) <= train, "irregular small numbers must be in training"
    assert number_splits(5000, 300, 300, seed=0, n_per_stratum=50) == splits
    assert number_splits(5000, 300, 300, seed=1, n_per_stratum=50)["test"] != splits["test"]


# -- strata -------------------------------------------------------------------------------------


def _strata_from_words(n: int) -> tuple[str, ...]:
    """The strata of ``n`` read off its English words: an independent check of :func:`number_strata`."""
    words = number_pair(n)[0]
    found = []
    if "thousand" not in words:
        found.append("0-20" if n <= 20 else "100-999" if "hundred" in words else "21-99")
        if words[1:] == ["hundred"]:
            found.append("round hundreds")
    elif words[-1] == "thousand":
        found.append("round thousands")
        if words[1:] == ["hundred", "thousand"]:
            found.append("round hundred-thousands")
    elif words[words.index("thousand") + 1] == "and":
        found.append("N thousand and k")
    return (*found, "full range")


def test_strata_membership_by_brute_force() -> None:
    members = {stratum: set(stratum_members(stratum)) for stratum in STRATA}
    sizes = {stratum: len(numbers) for stratum, numbers in members.items()}
    assert sizes == {
        "0-20": 21, "21-99": 79, "100-999": 900, "round hundreds": 9, "round thousands": 999,
        "round hundred-thousands": 9, "N thousand and k": 999 * 99, "full range": 1_000_000,
    }  # fmt: skip
    for n in range(1_000_000):
        strata = number_strata(n)
        assert strata == tuple(s for s in STRATA if n in members[s]), n
        assert strata == _strata_from_words(n), n
    with pytest.raises(ValueError, match="unknown stratum"):
        stratum_members("millions")


def test_held_out_splits_cover_every_stratum_without_overlap() -> None:
    held_out = held_out_numbers(n_valid=400, n_test=400, n_per_stratum=60, seed=3)
    train = training_numbers(held_out, n_train=3000, seed=3)
    held = [n for split in held_out.values() for s, numbers in split.items() if s not in SEEN_STRATA for n in numbers]
    assert len(held) == len(set(held)) == 2 * (3 * 60 + 400), "no held-out number is drawn twice"
    assert not set(held) & set(train)
    for split in ("valid", "test"):
        assert list(held_out[split]) == list(STRATA)
        for stratum, numbers in held_out[split].items():
            assert all(stratum in number_strata(n) for n in numbers), (split, stratum)
            if stratum in SEEN_STRATA:  # too small to hold out: all of it, in training too
                assert numbers == stratum_members(stratum) and set(numbers) <= set(train)
            else:
                assert len(numbers) == (400 if stratum == "full range" else 60), (split, stratum)
    small_and_round = set(range(1000)) | set(stratum_members("round thousands"))
    assert small_and_round - set(held) <= set(train), "every small or round number not held out is trained on"
    assert len(train) == len(set(train)) == len(small_and_round - set(held)) + 3000


def test_splits_are_seeded() -> None:
    assert held_out_numbers(200, 200, 30, seed=5) == held_out_numbers(200, 200, 30, seed=5)
    assert (
        held_out_numbers(200, 200, 30, seed=5)["test"]["N thousand and k"]
        != (held_out_numbers(200, 200, 30, seed=6)["test"]["N thousand and k"])
    )
    held_out = held_out_numbers(200, 200, 30, seed=5)
    assert training_numbers(held_out, 1000, seed=5) == training_numbers(held_out, 1000, seed=5)
    assert training_numbers(held_out, 1000, seed=5) != training_numbers(held_out, 1000, seed=6)
    with pytest.raises(ValueError, match="to hold out"):
        held_out_numbers(n_per_stratum=500)  # 100-999 has only 891 numbers that are not seen


def test_oversampling_repeats_by_the_largest_weight() -> None:
    weights = {"0-20": 20, "round thousands": 4, "round hundred-thousands": 10}
    counts = {n: oversample([7, 150, 40_000, 300_000, 123_456], weights).count(n) for n in (7, 150, 40_000, 300_000)}
    assert counts == {7: 20, 150: 1, 40_000: 4, 300_000: 10}
    assert oversample([7, 8], {}) == [7, 8]
    with pytest.raises(ValueError, match="weights"):
        oversample([7], {"0-20": 0})
    with pytest.raises(ValueError, match="weights"):
        oversample([7], {"millions": 2})


def test_vocabularies_cover_every_number() -> None:
    src_vocab, tgt_vocab = number_vocabs()
    for n in _sample(500, seed=4):
        src, tgt = number_pair(n)
        assert src_vocab.unk_id not in src_vocab.encode(src)
        assert tgt_vocab.unk_id not in tgt_vocab.encode(tgt)


def test_teacher_forcing_shifts_by_one() -> None:
    tgt = torch.tensor([[1, 5, 6, 7, 2], [1, 8, 2, 0, 0]])  # <bos> … <eos> <pad>
    decoder_in, labels = teacher_forcing(tgt)
    assert decoder_in.tolist() == [[1, 5, 6, 7], [1, 8, 2, 0]]
    assert labels.tolist() == [[5, 6, 7, 2], [8, 2, 0, 0]]
    with pytest.raises(ValueError, match="tgt"):
        teacher_forcing(torch.tensor([[1]]))


def test_padding_and_batches() -> None:
    assert pad_sequences([[4, 5, 6], [7]], pad_id=0).tolist() == [[4, 5, 6], [7, 0, 0]]
    src_vocab, tgt_vocab = number_vocabs()
    examples = encode_pairs([number_pair(21), number_pair(347_512)], src_vocab, tgt_vocab)
    batch = make_batch(examples, pad_id=0)
    assert batch.src.shape == (2, len(number_pair(347_512)[0]))
    assert batch.tgt_in[:, 0].tolist() == [tgt_vocab.bos_id] * 2
    assert batch.tgt_in.shape == batch.tgt_out.shape
    # "einundzwanzig" = 3 pieces + <eos>; the rest of its row is padding
    assert batch.tgt_out[0].tolist()[:4] == tgt_vocab.encode(["ein", "und", "zwanzig"]) + [tgt_vocab.eos_id]
    assert (batch.tgt_out[0, 4:] == 0).all()
    assert batch.n_tokens == 4 + len(number_pair(347_512)[1]) + 1


def test_bucketing_covers_each_example_once_and_reduces_padding() -> None:
    rng = random.Random(0)
    lengths = [rng.randint(1, 30) for _ in range(2000)]
    for bucket in (1, 50):
        batches = batch_indices(lengths, 32, seed=0, epoch=0, bucket=bucket)
        assert sorted(i for b in batches for i in b) == list(range(2000))
    padding = {
        bucket: sum(
            len(b) * max(lengths[i] for i in b) - sum(lengths[i] for i in b)
            for b in batch_indices(lengths, 32, 0, 0, bucket)
        )
        for bucket in (1, 50)
    }
    assert padding[50] < padding[1] / 5
    assert batch_indices(lengths, 32, 0, 0) == batch_indices(lengths, 32, 0, 0)
    assert batch_indices(lengths, 32, 0, 0) != batch_indices(lengths, 32, 0, 1), "each epoch has its own order"


def test_batch_stream_resumes_where_it_stopped() -> None:
    task = copy_task(n_train=300)
    examples = encode_pairs(task.train, task.src_vocab, task.tgt_vocab)
    full = batch_stream(examples, 16, 0, seed=3)
    first = [next(full) for _ in range(45)]  # crosses two epochs of 19 batches
    resumed = batch_stream(examples, 16, 0, seed=3, start_step=40)
    for expected in first[40:]:
        got = next(resumed)
        assert torch.equal(got.src, expected.src) and torch.equal(got.tgt_out, expected.tgt_out)


def test_copy_and_reverse_tasks() -> None:
    copy, reverse = load_task("copy"), load_task("reverse")
    assert all(s == t for s, t in copy.train[:100])
    assert all(s[::-1] == t for s, t in reverse.train[:100])
    assert copy.train[:50] != copy.test[:50]
    with pytest.raises(ValueError, match="unknown task"):
        load_task("numbers-en-fr")


@pytest.mark.parametrize("name", ["copy", "reverse"])
def test_held_out_strings_are_not_training_strings(name: str) -> None:
    task = load_task(name)
    sources = lambda pairs: {tuple(src) for src, _ in pairs}
    train = sources(task.train)
    # before the fix, 74 of reverse's 500 test strings (and 61 validation strings) were training strings
    assert not sources(task.valid) & train and not sources(task.test) & train
    assert not sources(task.test) & sources(task.valid)
    assert len(task.valid) == len(task.test) == 500


def test_a_draw_with_nothing_left_to_hold_out_is_refused() -> None:
    every = [([a, b, c], [a, b, c]) for a in "ab" for b in "ab" for c in "ab"]  # all 8 strings of 3 letters a, b
    assert len(copy_pairs(5, 3, 4, n_symbols=2, unseen_in=every)) == 5  # strings of 4 letters are left
    with pytest.raises(ValueError, match="no held-out string is left"):
        copy_pairs(5, 3, 3, n_symbols=2, unseen_in=every)
