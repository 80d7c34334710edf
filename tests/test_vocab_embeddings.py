"""Chapter 01: the vocabulary, the embedding lookup, the √d_model scale and weight tying."""

from __future__ import annotations

import math
import random

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer_course.embeddings import TokenEmbedding, one_hot_lookup, tie_weights
from transformer_course.vocab import SPECIAL_TOKENS, Vocab, tokenize

SENTENCES = [
    tokenize("The robot paints the door."),
    tokenize("A blue robot opens the door!"),
    tokenize("The door is blue."),
]

# -- Vocab ---------------------------------------------------------------------------------


def test_tokenize_lowercases_and_splits_punctuation() -> None:
    assert tokenize("The Robot, paints!") == ["the", "robot", ",", "paints", "!"]


def test_special_tokens_take_the_first_four_ids() -> None:
    vocab = Vocab(["robot", "door", "robot"])  # duplicates are ignored
    assert vocab.id_to_token == ["<pad>", "<bos>", "<eos>", "<unk>", "robot", "door"]
    assert (vocab.pad_id, vocab.bos_id, vocab.eos_id, vocab.unk_id) == (0, 1, 2, 3)
    assert len(vocab) == 6 and "robot" in vocab and "zebra" not in vocab


def test_encode_maps_known_tokens_unknown_tokens_and_wraps() -> None:
    vocab = Vocab(["robot", "door"])
    assert vocab.encode(["door", "robot"]) == [5, 4]
    assert vocab.encode(["door", "zebra"]) == [5, vocab.unk_id]
    assert vocab.encode(["robot"], add_bos=True, add_eos=True) == [1, 4, 2]
    assert vocab.encode([], add_bos=True) == [1]
    assert vocab.encode(["Robot"]) == [vocab.unk_id]  # encode does not lower-case


def test_encode_refuses_a_plain_string() -> None:
    with pytest.raises(TypeError, match="tokenize"):
        Vocab(["robot"]).encode("robot")


def test_decode_inverts_encode_and_stops_at_eos() -> None:
    vocab = Vocab.build(SENTENCES)
    sentence = tokenize("The blue robot opens the door.")
    ids = vocab.encode(sentence, add_bos=True, add_eos=True) + [vocab.pad_id] * 3
    assert vocab.decode(ids) == sentence
    assert vocab.decode([vocab.bos_id, 4, vocab.eos_id, 5]) == [vocab.id_to_token[4]]
    kept = vocab.decode([vocab.bos_id, 4, vocab.eos_id, vocab.pad_id], skip_special=False)
    assert kept == ["<bos>", vocab.id_to_token[4], "<eos>", "<pad>"]


def test_unknown_tokens_come_back_as_unk() -> None:
    vocab = Vocab.build(SENTENCES)
    assert vocab.decode(vocab.encode(["the", "giraffe"])) == ["the", "<unk>"]


def test_decode_rejects_ids_outside_the_vocabulary() -> None:
    vocab = Vocab(["robot"])
    with pytest.raises(ValueError, match="out of range"):
        vocab.decode([len(vocab)])
    with pytest.raises(ValueError, match="out of range"):
        vocab.decode([-1])


def test_build_orders_by_frequency_then_alphabetically_and_ignores_sentence_order() -> None:
    vocab = Vocab.build(SENTENCES)
    assert vocab.id_to_token[4:8] == ["the", "door", ".", "blue"]  # 4×, 3×, 2×, 2× (alphabetical tie)
    shuffled = SENTENCES[:]
    random.Random(1).shuffle(shuffled)
    assert Vocab.build(list(reversed(SENTENCES))) == vocab == Vocab.build(shuffled)


def test_min_freq_sends_rare_words_to_unk() -> None:
    vocab = Vocab.build(SENTENCES, min_freq=2)
    assert "robot" in vocab and "paints" not in vocab
    assert vocab.encode(["paints"]) == [vocab.unk_id]
    with pytest.raises(ValueError, match="min_freq"):
        Vocab.build(SENTENCES, min_freq=0)


def test_save_and_load_round_trip(tmp_path) -> None:
    vocab = Vocab.build(SENTENCES + [["zürich", "→"]])
    path = tmp_path / "vocab.json"
    vocab.save(path)
    loaded = Vocab.load(path)
    assert loaded == vocab and loaded.id_to_token == vocab.id_to_token
    assert loaded.encode(["zürich", "robot"]) == vocab.encode(["zürich", "robot"])


def test_loading_something_else_is_an_error() -> None:
    with pytest.raises(ValueError, match="not a saved Vocab"):
        Vocab.from_dict({"tokens": ["robot", "<pad>"]})
    with pytest.raises(ValueError, match="not a saved Vocab"):
        Vocab.from_dict({"words": list(SPECIAL_TOKENS)})


def test_tokens_must_be_strings() -> None:
    with pytest.raises(TypeError, match="strings"):
        Vocab(["robot", 7])


# -- TokenEmbedding ------------------------------------------------------------------------


@pytest.mark.parametrize(("vocab_size", "d_model"), [(11, 8), (13, 7), (5, 1)])
def test_token_embedding_is_nn_embedding_times_sqrt_d_model(vocab_size: int, d_model: int) -> None:
    ours = TokenEmbedding(vocab_size, d_model)
    reference = nn.Embedding(vocab_size, d_model)
    reference.weight.data.copy_(ours.weight.data)
    tokens = torch.randint(0, vocab_size, (3, 5))
    torch.testing.assert_close(ours(tokens), reference(tokens) * math.sqrt(d_model))


def test_initialisation_gives_unit_scale_entries_after_scaling() -> None:
    d_model = 64
    embedding = TokenEmbedding(2000, d_model)
    assert embedding.weight.std().item() == pytest.approx(d_model**-0.5, rel=0.05)
    out = embedding(torch.arange(2000))  # (V, D)
    assert out.std().item() == pytest.approx(1.0, rel=0.05)


def test_padding_row_is_zero_and_gets_no_gradient() -> None:
    embedding = TokenEmbedding(6, 4, padding_idx=0)
    assert torch.count_nonzero(embedding.weight[0]) == 0
    tokens = torch.tensor([[0, 3, 0, 5]])
    embedding(tokens).sum().backward()
    grad = embedding.weight.grad
    assert torch.count_nonzero(grad[0]) == 0
    torch.testing.assert_close(grad[3], torch.full((4,), 2.0))  # √4 per use


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        (torch.tensor([[1, 11]]), r"id 11, outside the vocabulary range \[0, 11\)"),
        (torch.tensor([[-1, 2]]), r"id -1, outside the vocabulary range"),
        (torch.tensor([[1.0, 2.0]]), r"integer token ids .* torch.float32"),
        (torch.tensor([[True, False]]), r"integer token ids .* torch.bool"),
    ],
    ids=["too large", "negative", "float", "bool"],
)
def test_bad_token_ids_are_value_errors(tokens: torch.Tensor, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        one_hot_lookup(tokens, torch.randn(11, 4))
    if tokens.dtype.is_floating_point or tokens.dtype == torch.bool:
        with pytest.raises(ValueError, match=message):
            TokenEmbedding(11, 4)(tokens)
    else:  # the values are checked once, where ids enter the Transformer (see _validate.py)
        with pytest.raises(IndexError, match="index out of range"):
            TokenEmbedding(11, 4)(tokens)


def test_token_embedding_rejects_empty_sizes() -> None:
    with pytest.raises(ValueError, match="vocab_size and d_model"):
        TokenEmbedding(0, 8)


# -- one-hot lookup --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 5), (1, 1), (7,), (2, 3, 4)])
def test_one_hot_lookup_equals_the_embedding_lookup(shape: tuple[int, ...]) -> None:
    weight = torch.randn(9, 6, dtype=torch.float64)
    tokens = torch.randint(0, 9, shape)
    got = one_hot_lookup(tokens, weight)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, F.embedding(tokens, weight))
    torch.testing.assert_close(got, nn.Embedding.from_pretrained(weight)(tokens))


def test_one_hot_lookup_needs_a_matrix() -> None:
    with pytest.raises(ValueError, match=r"weight must be a \(V, D\) matrix"):
        one_hot_lookup(torch.tensor([0, 1]), torch.randn(4))


# -- weight tying --------------------------------------------------------------------------


def test_tie_weights_shares_one_matrix() -> None:
    vocab_size, d_model = 12, 8
    embedding = TokenEmbedding(vocab_size, d_model)
    projection = nn.Linear(d_model, vocab_size, bias=False)
    model = nn.ModuleList([embedding, projection])
    before = sum(p.numel() for p in model.parameters())
    tie_weights(embedding, projection)
    assert projection.weight is embedding.weight
    assert projection.weight.data_ptr() == embedding.weight.data_ptr()
    assert before - sum(p.numel() for p in model.parameters()) == vocab_size * d_model
    with torch.no_grad():  # a change through one name is seen through the other
        embedding.weight[2, 0] = 42.0
    assert projection.weight[2, 0].item() == 42.0


def test_tied_matrix_gets_gradients_from_both_uses() -> None:
    embedding = TokenEmbedding(5, 4)
    projection = nn.Linear(4, 5, bias=False)
    tie_weights(embedding, projection)
    projection(embedding(torch.tensor([[1]]))).sum().backward()  # loss = Σ_v h · E[v], h = √D·E[1]
    weight = embedding.weight.detach()
    h = weight[1] * math.sqrt(4)
    want = h.expand(5, 4).clone()  # the output layer: every row gets h
    want[1] += math.sqrt(4) * weight.sum(0)  # the lookup: row 1 gets √D · Σ_v E[v]
    torch.testing.assert_close(embedding.weight.grad, want)


def test_tie_weights_refuses_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match=r"cannot tie: projection.weight has shape \(12, 7\)"):
        tie_weights(TokenEmbedding(12, 8), nn.Linear(7, 12))


def test_init_std_sets_the_spread_of_the_initial_table() -> None:
    torch.manual_seed(0)
    unit = TokenEmbedding(1000, 16, padding_idx=0, init_std=1.0)
    assert 0.95 < unit.weight[1:].std().item() < 1.05 and (unit.weight[0] == 0).all()
    with pytest.raises(ValueError, match="init_std must be a positive number"):
        TokenEmbedding(10, 4, init_std=0.0)
