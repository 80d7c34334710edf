"""Masks (chapter 06): values, shapes, polarity, device, and how they broadcast in attention."""

from __future__ import annotations

import pytest
import torch

from transformer_course import causal_mask, padding_mask, scaled_dot_product_attention, target_mask


@pytest.mark.parametrize("size", [1, 2, 7])
def test_causal_mask_lets_position_t_see_positions_up_to_t(size: int) -> None:
    mask = causal_mask(size)
    assert mask.dtype == torch.bool and mask.shape == (size, size)
    for t in range(size):
        for s in range(size):
            assert bool(mask[t, s]) == (s <= t), f"mask[{t}, {s}]"


def test_causal_mask_is_built_on_the_requested_device() -> None:
    assert causal_mask(3, device="meta").device.type == "meta"


@pytest.mark.parametrize("size", [0, -2])
def test_causal_mask_rejects_a_size_below_one(size: int) -> None:
    with pytest.raises(ValueError, match="size"):
        causal_mask(size)


def test_padding_mask_marks_real_tokens_true_and_broadcasts_over_heads_and_queries() -> None:
    tokens = torch.tensor([[5, 6, 7, 9, 9], [4, 9, 4, 4, 4]])  # pad id 9, not 0
    mask = padding_mask(tokens, pad_id=9)
    assert mask.dtype == torch.bool
    assert mask.shape == (2, 1, 1, 5)
    expected = torch.tensor([[True, True, True, False, False], [True, False, True, True, True]])
    assert torch.equal(mask[:, 0, 0], expected)


@pytest.mark.parametrize("shape", [(5,), (2, 5, 1)])
def test_padding_mask_rejects_tokens_that_are_not_b_by_s(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=r"tokens must have shape \(B, S\)"):
        padding_mask(torch.zeros(shape, dtype=torch.long), 0)


def test_target_mask_is_causal_and_hides_target_padding() -> None:
    tgt = torch.tensor([[1, 5, 6, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6, 7]])  # B=2, T=7
    mask = target_mask(tgt, pad_id=0)
    assert mask.shape == (2, 1, 7, 7) and mask.dtype == torch.bool
    for b in range(2):
        for t in range(7):
            for s in range(7):
                want = s <= t and int(tgt[b, s]) != 0
                assert bool(mask[b, 0, t, s]) == want, f"mask[{b}, 0, {t}, {s}]"


def test_masks_follow_the_device_of_the_tokens() -> None:
    tgt = torch.zeros(2, 3, dtype=torch.long, device="meta")
    assert padding_mask(tgt, 0).device.type == "meta"
    assert target_mask(tgt, 0).device.type == "meta"


def test_padding_mask_in_attention_zeroes_the_weights_of_padded_keys_with_odd_sizes() -> None:
    batch, heads, t, s, d_k = 2, 3, 7, 5, 4
    src = torch.tensor([[3, 4, 5, 0, 0], [3, 4, 5, 6, 7]])
    q, k, v = torch.randn(batch, heads, t, d_k), torch.randn(batch, heads, s, d_k), torch.randn(batch, heads, s, d_k)
    out, weights = scaled_dot_product_attention(q, k, v, padding_mask(src, 0))
    assert out.shape == (batch, heads, t, d_k)
    assert torch.all(weights[0, :, :, 3:] == 0), "padded keys of sequence 0 got weight"
    assert torch.all(weights[1] > 0), "sequence 1 has no padding: every key should get weight"
    torch.testing.assert_close(weights.sum(-1), torch.ones(batch, heads, t))


def test_a_fully_padded_sequence_gives_finite_attention() -> None:
    src = torch.tensor([[0, 0, 0], [3, 4, 0]])
    q, k, v = torch.randn(2, 1, 2, 4), torch.randn(2, 1, 3, 4), torch.randn(2, 1, 3, 4)
    out, weights = scaled_dot_product_attention(q, k, v, padding_mask(src, 0))
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
