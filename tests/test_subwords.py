"""Chapter 12 subwords: special ids, round trips, determinism, plain-data saving, the Task bridge."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys

import pytest
import torch

pytest.importorskip("tokenizers")

from transformer_course.batching import encode_pairs  # noqa: E402
from transformer_course.datasets.sentences import sentence_splits  # noqa: E402
from transformer_course.subwords import (  # noqa: E402
    SubwordTokenizer,
    subword_task,
    tokenizer_summary,
    train_subwords,
)
from transformer_course.vocab import SPECIAL_TOKENS  # noqa: E402

TOY = ["the cat sat on the mat.", "the cat ate the rat!", "a mat, a cat, a rat?"] * 20


@pytest.fixture(scope="module")
def texts() -> dict:
    return sentence_splits(2000, 100, 100, seed=0)


@pytest.fixture(scope="module")
def tok(texts) -> SubwordTokenizer:
    return train_subwords([t for pair in texts["train"] for t in pair], vocab_size=600)


def test_special_ids_are_the_course_ones(tok):
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id) == (0, 1, 2, 3)
    assert tok.id_to_token[:4] == list(SPECIAL_TOKENS)
    assert len(tok) == 600
    # a special token typed in a text is just characters: only code makes special ids
    assert not set(tok.encode("<pad> Der <bos> Hund <eos>.")) & {0, 1, 2}
    assert tok.decode(tok.encode("Der Hund <eos> schläft.")).endswith("schläft.")


def test_toy_corpus_learns_its_words():
    tok = train_subwords(TOY, vocab_size=60, min_frequency=2, alphabet="")  # only the toy's own letters
    # frequent whole words become single tokens; punctuation is cut off the word
    assert tok.tokens("the cat sat.") == ["▁the", "▁cat", "▁sat", "."]
    index = tok.id_to_token.index
    assert tok.encode("the cat", add_bos=True, add_eos=True) == [1, index("▁the"), index("▁cat"), 2]
    assert tok.merges()[0].count(" ") == 1  # "a b": the first merge joins two symbols


def test_round_trip_gives_the_text_back(texts, tok):
    for en, de in texts["test"]:
        assert tok.decode(tok.encode(en)) == en
        assert tok.decode(tok.encode(de)) == de
        assert tok.decode_tokens(tok.tokens(de)) == de
    # whitespace is tidied, composed and decomposed umlauts are the same text
    assert tok.decode(tok.encode("  Der   Hund\tschläft. ")) == "Der Hund schläft."
    assert tok.encode("schla\u0308ft") == tok.encode("schläft")


def test_decode_stops_at_eos_and_drops_specials(tok):
    ids = tok.encode("Der Hund.")
    assert tok.decode([1, *ids, 2, *tok.encode("Die Katze.")]) == "Der Hund."
    assert tok.decode([0, 0, *ids, 0]) == "Der Hund."
    assert tok.decode(torch.tensor([1, *ids, 2])) == "Der Hund."
    with pytest.raises(ValueError, match="out of range"):
        tok.decode([len(tok)])


def test_unseen_characters_become_unk(tok):
    ids = tok.encode("Der Hund ☃ schläft.")
    assert tok.unk_id in ids
    assert tok.decode(ids) == "Der Hund schläft."
    # ASCII and the German letters are always known, even when training never saw them
    assert tok.unk_id not in tok.encode("ÖL & ÜBER {x} ~ 42%")


def test_same_texts_same_tokenizer_in_any_order(texts):
    lines = [t for pair in texts["train"] for t in pair]
    a = train_subwords(lines, vocab_size=500)
    shuffled = list(lines)
    random.Random(1).shuffle(shuffled)
    assert train_subwords(shuffled, vocab_size=500) == a
    assert train_subwords(lines, vocab_size=400) != a


def test_same_tokenizer_in_a_fresh_process():
    """No hidden state (hash seeds, thread scheduling) changes what is learned."""
    code = (
        "from transformer_course.subwords import train_subwords;"
        f"print(train_subwords({TOY!r}, vocab_size=200).to_dict()['tokenizer'])"
    )

    def run(**env: str) -> str:
        env = {**os.environ, **env}
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout

    other = run(PYTHONHASHSEED="12345", RAYON_NUM_THREADS="1")  # another hash seed, one thread
    assert other == train_subwords(TOY, vocab_size=200).to_dict()["tokenizer"] + "\n"


def test_max_texts_samples_with_the_seed(texts):
    lines = [t for pair in texts["train"] for t in pair]
    a = train_subwords(lines, vocab_size=300, seed=0, max_texts=500)
    assert a == train_subwords(lines, vocab_size=300, seed=0, max_texts=500)
    assert a != train_subwords(lines, vocab_size=300, seed=1, max_texts=500)


def test_saved_as_plain_data_inside_a_weights_only_checkpoint(tok):
    data = tok.to_dict()
    assert set(data) == {"format", "version", "tokenizer"} and isinstance(data["tokenizer"], str)
    json.loads(data["tokenizer"])  # a JSON text a learner can open
    buffer = io.BytesIO()
    torch.save({"tokenizer": data, "weights": torch.zeros(2)}, buffer)
    buffer.seek(0)
    loaded = SubwordTokenizer.from_dict(torch.load(buffer, weights_only=True)["tokenizer"])
    assert loaded == tok and loaded.encode("Die Frau gibt dem Kind einen Ball.") == tok.encode(
        "Die Frau gibt dem Kind einen Ball."
    )


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"tokens": []}, "not a saved SubwordTokenizer"),
        ("text", "not a saved SubwordTokenizer"),
        ({"format": "transformer-course-subwords", "version": 9, "tokenizer": "{}"}, "version 9"),
    ],
)
def test_from_dict_rejects_other_data(data, match):
    with pytest.raises(ValueError, match=match):
        SubwordTokenizer.from_dict(data)


def test_bad_arguments():
    with pytest.raises(ValueError, match="vocab_size"):
        train_subwords(TOY, vocab_size=3)
    with pytest.raises(ValueError, match="empty"):
        train_subwords([], vocab_size=100)
    with pytest.raises(TypeError, match="str"):
        train_subwords([b"bytes"], vocab_size=100)


def test_subword_task_ids_match_the_tokenizer(texts, tok):
    task = subword_task(texts, tok)
    assert task.src_vocab is task.tgt_vocab and task.src_vocab.id_to_token == tok.id_to_token
    (src_ids, tgt_ids), *_ = encode_pairs(task.train[:1], task.src_vocab, task.tgt_vocab)
    en, de = texts["train"][0]
    assert src_ids == tok.encode(en) and tgt_ids == tok.encode(de, add_bos=True, add_eos=True)
    assert task.detokenize(task.test[0][1]) == texts["test"][0][1]
    assert SubwordTokenizer.from_dict(task.info["tokenizer"]) == tok
    with pytest.raises(ValueError, match="missing: test"):
        subword_task({"train": [], "valid": []}, tok)


def test_summary_counts_tokens(tok):
    summary = tokenizer_summary(tok, ["Der Hund schläft.", "Die Katze."])
    assert summary["vocab_size"] == 600 and summary["unk_share"] == 0.0
    assert summary["tokens_per_text"] == (len(tok.encode("Der Hund schläft.")) + len(tok.encode("Die Katze."))) / 2
