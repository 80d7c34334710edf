"""The exported tokenizers (tokenizer.json) cut text exactly as the course does, on many inputs: the
numbers task's words (english_tokens) and chapter 12's subwords with the export's id order; and the
one-vocabulary translator that export writes translates exactly as the course's."""

from __future__ import annotations

import random

import pytest
import torch

pytest.importorskip("tokenizers")

from transformer_course.datasets.numbers import english_tokens, german_text, number_to_english  # noqa: E402
from transformer_course.datasets.sentences import sentence_splits  # noqa: E402
from transformer_course.decoding import beam_search, greedy_decode  # noqa: E402
from transformer_course.subwords import train_subwords  # noqa: E402
from transformer_course_tools.models.export.hf_tokenizers import subword_tokenizer, word_tokenizer  # noqa: E402
from transformer_course_tools.models.export.sources import one_vocabulary  # noqa: E402
from transformer_course_tools.models.pretrained import load_pretrained  # noqa: E402

# characters a learner may type: letters with and without accents, digits, other numerals (², ½, Ⅻ),
# punctuation, an underscore, combining marks, Greek (final sigma), Turkish İ, and every kind of space
ALPHABET = list("abcXYZ äöüÄÖÜßé 019 ²½Ⅻ٣ -,.;:!?'\"()_ \u0301\u0308 ΣσςΑΒ İı \t\n\u00a0\u2009") + ["  "]


def random_texts(n: int, seed: int = 0, words: list[str] | None = None) -> list[str]:
    """Random strings over ALPHABET, half of them mixed with real ``words`` in odd cases and spacing."""
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        chars = [rng.choice(ALPHABET) for _ in range(rng.randint(0, 30))]
        if words and i % 2:
            picked = [rng.choice(words) for _ in range(rng.randint(1, 6))]
            chars += [rng.choice([" ", "-", ", ", "  "]) + (w.upper() if rng.random() < 0.2 else w) for w in picked]
            rng.shuffle(chars)
        texts.append("".join(chars))
    return texts


@pytest.fixture(scope="module")
def numbers():
    return load_pretrained("numbers-en-de")


def test_the_word_tokenizer_cuts_as_english_tokens(numbers) -> None:
    src = numbers.src_vocab
    tokens = [*src.id_to_token, "drei", "hundert"]
    tok = word_tokenizer(tokens)
    rng = random.Random(1)
    texts = [number_to_english(rng.randrange(1_000_000)) for _ in range(500)]
    texts += random_texts(2000, words=src.id_to_token[4:])
    different = [t for t in texts if tok.encode(t).tokens != [w if w in tokens else "<unk>" for w in english_tokens(t)]]
    assert not different, f"{len(different)} of {len(texts)} texts cut differently, e.g. {different[:3]!r}"
    assert tok.encode("Twenty-ONE thousand,five").ids == [
        tokens.index(w) for w in ["twenty", "one", "thousand", "five"]
    ]
    assert tok.encode("<eos>").tokens == ["<unk>"], "typed, <eos> is the word eos (unknown), not the special token"


def test_the_word_tokenizer_writes_german_pieces_joined(numbers) -> None:
    tgt = numbers.tgt_vocab.id_to_token
    tok = word_tokenizer(tgt)
    rng = random.Random(2)
    for _ in range(300):
        ids = [rng.randrange(len(tgt)) for _ in range(rng.randint(0, 12))]
        ids = [i for i in ids if tgt[i] != "<unk>"]  # the course writes <unk> as text, transformers drops it
        expected = german_text(numbers.tgt_vocab.decode(ids))  # stops at <eos>, drops <pad> and <bos>
        kept = ids[: ids.index(2)] if 2 in ids else ids
        assert tok.decode(kept, skip_special_tokens=True) == expected


@pytest.fixture(scope="module")
def subwords():
    texts = sentence_splits(n_train=400, n_valid=10, n_test=10)
    return train_subwords([s for pair in texts["train"] for s in pair], vocab_size=300), texts


def test_the_subword_tokenizer_with_pad_last_cuts_as_the_course(subwords) -> None:
    course, texts = subwords
    order = [*course.id_to_token[1:], course.id_to_token[0]]  # <pad> last, as export writes it
    tok = subword_tokenizer(course.to_dict(), order)
    moved = lambda ids: [order.index(course.id_to_token[i]) for i in ids]  # noqa: E731
    sentences = [s for pair in texts["test"] + texts["valid"] for s in pair]
    inputs = sentences + random_texts(1500, seed=3, words=[w for s in sentences for w in s.split()])
    different = [t for t in inputs if tok.encode(t).ids != moved(course.encode(t))]
    assert not different, f"{len(different)} of {len(inputs)} texts cut differently, e.g. {different[:3]!r}"
    for text in inputs[:400]:
        ids = course.encode(text)
        decoded = tok.decode(moved(ids), skip_special_tokens=True)
        assert " ".join(decoded.split()) == course.decode(ids)  # the course also collapses spaces
    with_bos = subword_tokenizer(course.to_dict(), course.id_to_token, add_bos=True)
    assert with_bos.encode("Der Hund.").ids == course.encode("Der Hund.", add_bos=True)


def test_one_vocabulary_translates_as_the_two(numbers) -> None:
    """Source words, then German pieces, <pad> last: the same translations, greedy and beam 4, and the
    rows of the merged model are the old rows."""
    model, tokens = one_vocabulary(numbers.model, numbers.src_vocab.id_to_token, numbers.tgt_vocab.id_to_token)
    assert tokens[-1] == "<pad>" and len(tokens) == 4 + 31 + 32 and model.config.pad_id == len(tokens) - 1
    rng = random.Random(4)
    texts = [number_to_english(rng.randrange(1_000_000)) for _ in range(50)]
    old_src = [numbers.src_vocab.encode(english_tokens(t)) for t in texts]
    new_src = [[tokens.index(numbers.src_vocab.id_to_token[i]) for i in ids] for ids in old_src]
    pad = lambda rows, p: torch.tensor([r + [p] * (max(map(len, rows)) - len(r)) for r in rows])  # noqa: E731
    words = lambda out, vocab: [[vocab[i] for i in row if vocab[i] not in ("<pad>",)] for row in out.tolist()]  # noqa: E731
    old = greedy_decode(numbers.model, pad(old_src, numbers.config.pad_id), max_len=20)
    new = greedy_decode(model, pad(new_src, model.config.pad_id), max_len=20)
    assert words(old, numbers.tgt_vocab.id_to_token) == words(new, tokens)
    old_beam = beam_search(numbers.model, pad(old_src, numbers.config.pad_id), 4, max_len=20)[0][:, 0]
    new_beam = beam_search(model, pad(new_src, model.config.pad_id), 4, max_len=20)[0][:, 0]
    assert words(old_beam, numbers.tgt_vocab.id_to_token) == words(new_beam, tokens)
    eins = numbers.tgt_vocab.token_to_id["eins"]
    assert torch.equal(model.tgt_embed.weight[tokens.index("eins")], numbers.model.tgt_embed.weight[eins])
    assert model.output.bias[tokens.index("thousand")] == float("-inf"), "a source word is never written"
