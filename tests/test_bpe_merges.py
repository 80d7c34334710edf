"""Chapter 12 — byte-pair merges from scratch (``bpe_merges``, exercise ex12_3) against the
``tokenizers`` library's BPE trainer: the same merges, in the same order, ties included."""

from __future__ import annotations

import json
import random

import pytest

from transformer_course.datasets.sentences import sentence_splits
from transformer_course.sentence_training import shared_tokenizer
from transformer_course.subwords import bpe_merges, pretokenized_words


def _library(words: dict[str, int]) -> list[tuple[str, str]]:
    """Every merge of the library's trainer on these word counts (words split at spaces only)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=100_000, min_frequency=0, show_progress=False)
    tok.train_from_iterator([" ".join([word] * count) for word, count in words.items()], trainer=trainer)
    return [
        tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in json.loads(tok.to_str())["model"]["merges"]
    ]


def test_the_first_100_merges_of_chapter_12s_corpus_are_the_librarys() -> None:
    texts = sentence_splits()["train"]  # the chapter's training pairs
    tokenizer = shared_tokenizer(texts, vocab_size=1000)  # as chapter 12 trains it
    words = pretokenized_words(text for pair in texts for text in pair)
    assert bpe_merges(words, 100) == [tuple(m.split(" ")) for m in tokenizer.merges()[:100]]


def test_small_vocabularies_full_of_ties_give_the_librarys_merges() -> None:
    rng = random.Random(0)
    for _ in range(200):
        alphabet = rng.choice(["ab", "abc", "ba▁ä", "xyzab"])  # few letters: many ties, "aaa" runs
        words = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 7))): rng.randint(1, 4) for _ in range(5)}
        assert bpe_merges(words, 1000) == _library(words), words


def test_by_hand() -> None:
    assert bpe_merges({"aaa": 2, "bc": 3}, 5) == [("a", "a"), ("b", "c"), ("aa", "a")]  # (a, a) counts 4
    assert bpe_merges({"ab": 1, "ba": 1}, 1) == [("a", "b")]  # a tie: the older (lower) code point first
    assert bpe_merges({"abc": 1}, 0) == []


def test_pretokenized_words_cut_as_the_tokenizer_does() -> None:
    assert pretokenized_words(["Der  Hund.", "der Hund"]) == {"▁Der": 1, "▁Hund": 2, ".": 1, "▁der": 1}


@pytest.mark.parametrize(
    "words, n_merges, message",
    [
        ({"ab": 0}, 1, r"words\['ab'\] must be a count >= 1, got 0"),
        ({"": 3}, 1, "non-empty str keys"),
        ({"ab": 2}, -1, "n_merges must be an int >= 0, got -1"),
        ({"ab": 1.5}, 1, "must be a count >= 1, got 1.5"),
    ],
)
def test_bad_input(words, n_merges, message) -> None:
    with pytest.raises(ValueError, match=message):
        bpe_merges(words, n_merges)
