"""Chapter 02: the sinusoidal table, relative positions as rotations, and the batch-first module."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
import torch

from transformer_course.positional import (
    LearnedPositionalEmbedding,
    PositionalEncoding,
    relative_position_map,
    sinusoidal_positional_encoding,
)


def _table_by_loop(max_len: int, d_model: int) -> np.ndarray:
    """§3.5 written out one entry at a time."""
    table = np.zeros((max_len, d_model))
    for pos in range(max_len):
        for i in range(0, d_model, 2):
            angle = pos / 10000 ** (i / d_model)
            table[pos, i] = math.sin(angle)
            if i + 1 < d_model:
                table[pos, i + 1] = math.cos(angle)
    return table


# -- the table -------------------------------------------------------------------------------


@pytest.mark.parametrize(("max_len", "d_model"), [(50, 16), (9, 7), (1, 4), (3, 1), (120, 64)])
def test_table_matches_the_closed_form(max_len: int, d_model: int) -> None:
    table = sinusoidal_positional_encoding(max_len, d_model)
    assert table.shape == (max_len, d_model) and table.dtype == torch.float32
    np.testing.assert_allclose(table.numpy(), _table_by_loop(max_len, d_model), atol=1e-4)


def test_position_zero_is_sin0_cos0_and_values_stay_in_minus1_1() -> None:
    table = sinusoidal_positional_encoding(200, 10)
    assert torch.equal(table[0], torch.tensor([0.0, 1.0] * 5))
    assert table.abs().max() <= 1.0
    torch.testing.assert_close(table.norm(dim=1), torch.full((200,), math.sqrt(5)))  # each pair on a unit circle


@pytest.mark.parametrize(("max_len", "d_model"), [(0, 8), (8, 0), (-1, 4)])
def test_table_rejects_empty_sizes(max_len: int, d_model: int) -> None:
    with pytest.raises(ValueError, match="max_len and d_model must be >= 1"):
        sinusoidal_positional_encoding(max_len, d_model)


# -- relative positions ------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "d_model"), [(1, 8), (5, 16), (13, 6), (0, 4), (-3, 8)])
def test_shift_by_k_is_one_linear_map_for_every_position(k: int, d_model: int) -> None:
    table = torch.from_numpy(_table_by_loop(80, d_model))  # independent of the package's table
    m = relative_position_map(k, d_model).double()
    positions = range(max(0, -k), 80 - max(0, k))
    for pos in positions:
        torch.testing.assert_close(m @ table[pos], table[pos + k], atol=1e-5, rtol=0)


def test_shift_maps_are_rotations_that_compose() -> None:
    m2, m3, m5 = (relative_position_map(k, 12).double() for k in (2, 3, 5))
    torch.testing.assert_close(m2 @ m2.T, torch.eye(12, dtype=torch.float64), atol=1e-6, rtol=0)
    torch.testing.assert_close(m2 @ m3, m5, atol=1e-6, rtol=0)
    torch.testing.assert_close(relative_position_map(-2, 12).double(), m2.T, atol=1e-6, rtol=0)
    assert torch.equal(relative_position_map(0, 12), torch.eye(12))
    assert not torch.allclose(m2, torch.eye(12, dtype=torch.float64))


@pytest.mark.parametrize("d_model", [5, 0, 1])
def test_shift_map_needs_an_even_d_model(d_model: int) -> None:
    with pytest.raises(ValueError, match="d_model must be even"):
        relative_position_map(1, d_model)


def test_similarity_depends_only_on_the_distance() -> None:
    table = sinusoidal_positional_encoding(60, 32).double()
    similarity = table @ table.T  # (60, 60)
    for offset in (0, 1, 7, 30):
        diagonal = torch.diagonal(similarity, offset)
        torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal), atol=1e-5, rtol=0)


# -- the module: batch-first ---------------------------------------------------------------


def _assert_each_position_gets_its_own_row(forward: Callable) -> None:
    """x = 0 makes the output the added table itself: position t of every sequence must get row t."""
    module = PositionalEncoding(d_model=6, max_len=20)
    for batch, length in [(3, 5), (1, 4), (5, 2)]:
        out = forward(module, torch.zeros(batch, length, 6))
        assert out.shape == (batch, length, 6)
        for b in range(batch):
            torch.testing.assert_close(out[b], module.pe[:length])


def test_each_position_gets_its_own_row() -> None:
    _assert_each_position_gets_its_own_row(PositionalEncoding.forward)


def test_the_row_test_catches_indexing_with_the_batch_size() -> None:
    def batch_size_as_length(self, x):  # the pitfall: x.size(0) is B on a batch-first tensor
        return x + self.pe[: x.size(0)].unsqueeze(1)

    with pytest.raises(AssertionError):
        _assert_each_position_gets_its_own_row(batch_size_as_length)


def test_module_adds_the_table_and_keeps_the_input() -> None:
    module = PositionalEncoding(d_model=8, max_len=16)
    x = torch.randn(2, 7, 8)
    copy = x.clone()
    torch.testing.assert_close(module(x), x + sinusoidal_positional_encoding(7, 8))
    assert torch.equal(x, copy)


def test_sequence_longer_than_max_len_is_a_value_error() -> None:
    module = PositionalEncoding(d_model=4, max_len=10)
    module(torch.zeros(1, 10, 4))  # exactly max_len is fine
    with pytest.raises(ValueError, match=r"sequence length 11 is longer than max_len=10"):
        module(torch.zeros(1, 11, 4))


@pytest.mark.parametrize(
    ("shape", "message"),
    [((2, 5, 7), r"last dimension d_model=8, got shape \(2, 5, 7\)"), ((5, 8), r"x must have shape \(B, T, D\)")],
)
def test_wrong_input_shape_is_a_value_error(shape: tuple[int, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PositionalEncoding(d_model=8, max_len=10)(torch.zeros(shape))


def test_table_is_a_non_persistent_buffer_that_follows_to() -> None:
    module = PositionalEncoding(d_model=8, max_len=16)
    assert "pe" in dict(module.named_buffers())
    assert "pe" not in module.state_dict()
    PositionalEncoding(d_model=8, max_len=99).load_state_dict(module.state_dict())  # max_len is not saved
    module.to(torch.float64)
    assert module.pe.dtype == torch.float64
    assert module(torch.zeros(1, 3, 8, dtype=torch.float64)).dtype == torch.float64


def test_output_keeps_a_half_precision_input_dtype() -> None:
    module = PositionalEncoding(d_model=8, max_len=16)
    assert module(torch.zeros(1, 3, 8, dtype=torch.float16)).dtype == torch.float16


def test_dropout_acts_in_training_only() -> None:
    module = PositionalEncoding(d_model=16, max_len=32, dropout=0.5)
    x = torch.randn(4, 8, 16)
    assert (module.train()(x) == 0).any()
    torch.testing.assert_close(module.eval()(x), x + module.pe[:8])


# -- learned positions ---------------------------------------------------------------------


def test_learned_positions_have_one_row_each_and_no_vector_past_max_len() -> None:
    module = LearnedPositionalEmbedding(d_model=4, max_len=6)
    out = module(torch.zeros(2, 5, 4))
    torch.testing.assert_close(out[1], module.embedding.weight[:5])
    with pytest.raises(ValueError, match="max_len=6"):
        module(torch.zeros(1, 7, 4))
    with pytest.raises(ValueError, match="d_model=4"):
        module(torch.zeros(1, 3, 5))


def test_learned_positions_past_the_training_length_get_no_gradient() -> None:
    module = LearnedPositionalEmbedding(d_model=4, max_len=10)
    module(torch.randn(2, 6, 4)).pow(2).sum().backward()
    row_has_grad = module.embedding.weight.grad.abs().sum(dim=1) > 0
    assert row_has_grad.tolist() == [True] * 6 + [False] * 4


def test_learned_positions_take_an_offset_like_the_sinusoids() -> None:
    torch.manual_seed(0)
    module, x = LearnedPositionalEmbedding(d_model=4, max_len=8), torch.randn(2, 6, 4)
    torch.testing.assert_close(module(x[:, 3:], offset=3), module(x)[:, 3:])  # tokens 3… continue the sequence
    with pytest.raises(ValueError, match="positions 5…8 do not fit a table of max_len=8"):
        module(x[:, :4], offset=5)


def test_cached_decoding_works_with_learned_positions() -> None:
    from transformer_course import Transformer, TransformerConfig
    from transformer_course.decoding import greedy_decode

    torch.manual_seed(0)
    config = TransformerConfig(14, 14, d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1, n_decoder_layers=1,
                               dropout=0.0, max_len=16)  # fmt: skip
    model = Transformer(config, positional=LearnedPositionalEmbedding).eval()
    src = torch.randint(4, 14, (3, 6), generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(greedy_decode(model, src, 6), greedy_decode(model, src, 6, use_cache=False))
