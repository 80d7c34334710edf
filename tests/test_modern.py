"""Chapter 13's rooms against independent references: PyTorch's RMSNorm and fused attention,
closed-form rotations, and brute force."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_course.attention import scaled_dot_product_attention
from transformer_course.blocked import blocked_attention, online_softmax_update
from transformer_course.feedforward import PositionwiseFeedForward
from transformer_course.rmsnorm import RMSNorm
from transformer_course.rotary import apply_rope
from transformer_course.swiglu import SwiGLU, swiglu_hidden_size

# -- RMSNorm ------------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(torch.nn, "RMSNorm"), reason="torch.nn.RMSNorm needs PyTorch 2.4")
@pytest.mark.parametrize("eps", [1e-6, 1e-2])
def test_rms_norm_equals_pytorchs(eps):
    torch.manual_seed(0)
    ours, theirs = RMSNorm(16, eps=eps), torch.nn.RMSNorm(16, eps=eps)
    with torch.no_grad():
        ours.weight.normal_()
        theirs.weight.copy_(ours.weight)
    x = torch.randn(3, 5, 16) * 4
    torch.testing.assert_close(ours(x), theirs(x))


def test_rms_norm_closed_form_and_no_mean_subtracted():
    x = torch.tensor([[3.0, 4.0]])  # root mean square √12.5
    torch.testing.assert_close(RMSNorm(2, eps=1e-12)(x), x / math.sqrt(12.5))
    shifted = torch.randn(4, 8) + 10  # LayerNorm would remove the shift; RMSNorm keeps the sign pattern
    assert (RMSNorm(8)(shifted) > 0).all()


def test_rms_norm_rejects_bad_input():
    with pytest.raises(ValueError, match="d_model must be >= 1"):
        RMSNorm(0)
    with pytest.raises(ValueError, match="eps must be > 0"):
        RMSNorm(4, eps=0)
    with pytest.raises(ValueError, match="last dimension d_model=4"):
        RMSNorm(4)(torch.randn(2, 5))


# -- rotary embeddings --------------------------------------------------------------------------


def _rope_by_hand(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Pair by pair, position by position, with 2×2 rotation matrices (float64)."""
    out = torch.empty_like(x, dtype=torch.float64)
    d = x.shape[-1]
    for t, p in enumerate(positions.tolist()):
        for i in range(d // 2):
            angle = p * base ** (-2 * i / d)
            rotation = torch.tensor(
                [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]], dtype=torch.float64
            )
            out[..., t, 2 * i : 2 * i + 2] = x[..., t, 2 * i : 2 * i + 2].double() @ rotation.T
    return out


def test_apply_rope_rotates_interleaved_pairs_by_position():
    torch.manual_seed(0)
    x, positions = torch.randn(2, 3, 5, 8), torch.tensor([0, 1, 2, 7, 40])
    torch.testing.assert_close(apply_rope(x, positions).double(), _rope_by_hand(x, positions), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(apply_rope(x, torch.zeros(5, dtype=torch.long)), x)  # position 0: no rotation


def test_apply_rope_keeps_norms_and_makes_scores_relative():
    """After any W^Q, W^K, the score of a query at p and a key at q depends only on p − q."""
    torch.manual_seed(1)
    d, w_q, w_k = 16, torch.randn(16, 16), torch.randn(16, 16)
    x, y = torch.randn(d), torch.randn(d)

    def score(p: int, q: int) -> float:
        query = apply_rope((x @ w_q)[None], torch.tensor([p]))[0]
        key = apply_rope((y @ w_k)[None], torch.tensor([q]))[0]
        return float(query @ key)

    assert score(5, 2) == pytest.approx(score(13, 10), rel=1e-4) == pytest.approx(score(103, 100), rel=1e-4)
    assert score(5, 2) != pytest.approx(score(5, 3), rel=1e-3)
    v = torch.randn(4, 16)
    torch.testing.assert_close(apply_rope(v, torch.arange(4)).norm(dim=-1), v.norm(dim=-1))


def test_apply_rope_cached_keys_equal_the_full_pass():
    """A decoding step rotates its new key at its own position: the cache equals one full pass."""
    torch.manual_seed(2)
    keys = torch.randn(1, 2, 6, 8)
    full = apply_rope(keys, torch.arange(6))
    stepwise = torch.cat([apply_rope(keys[..., t : t + 1, :], torch.tensor([t])) for t in range(6)], dim=-2)
    torch.testing.assert_close(stepwise, full)


def test_apply_rope_rejects_bad_input():
    with pytest.raises(ValueError, match="d must be even"):
        apply_rope(torch.randn(3, 5), torch.arange(3))
    with pytest.raises(ValueError, match="integer tensor of shape"):
        apply_rope(torch.randn(3, 4), torch.arange(3.0))
    with pytest.raises(ValueError, match="T = len\\(positions\\) = 2"):
        apply_rope(torch.randn(3, 4), torch.arange(2))


# -- SwiGLU -------------------------------------------------------------------------------------


def test_swiglu_formula_and_parameter_count():
    torch.manual_seed(3)
    ffn, x = SwiGLU(8, 12), torch.randn(2, 3, 8)
    w1, w2, w3 = ffn.w1.weight, ffn.w2.weight, ffn.w3.weight
    expected = ((x @ w1.T) * torch.sigmoid(x @ w1.T) * (x @ w3.T)) @ w2.T
    torch.testing.assert_close(ffn(x), expected)
    d = 96
    relu = sum(p.numel() for p in PositionwiseFeedForward(d, 4 * d).parameters())
    gated = sum(p.numel() for p in SwiGLU(d, swiglu_hidden_size(d)).parameters())
    assert swiglu_hidden_size(d) == 256 and abs(gated - relu) / relu < 0.01
    assert swiglu_hidden_size(100, multiple_of=64) == 320


# -- blocked attention --------------------------------------------------------------------------


@pytest.mark.parametrize("block_size", [1, 3, 16, 64, 1000])
def test_blocked_attention_equals_pytorchs_fused_kernel(block_size):
    torch.manual_seed(4)
    q, k, v = torch.randn(2, 3, 7, 8), torch.randn(2, 3, 19, 8), torch.randn(2, 3, 19, 5)
    mask = torch.rand(2, 1, 7, 19) > 0.3
    mask[..., 0] = True  # no empty row here (see the next test)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(blocked_attention(q, k, v, mask, block_size), expected, atol=1e-5, rtol=1e-5)
    causal = torch.ones(7, 19, dtype=torch.bool).tril(diagonal=12)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
    torch.testing.assert_close(blocked_attention(q, k, v, causal, block_size), expected, atol=1e-5, rtol=1e-5)


def test_blocked_attention_matches_the_teaching_path_on_empty_rows_and_early_masked_blocks():
    torch.manual_seed(5)
    q, k, v = torch.randn(1, 4, 8), torch.randn(1, 10, 8), torch.randn(1, 10, 3)
    mask = torch.ones(1, 4, 10, dtype=torch.bool)
    mask[0, 0] = False  # an empty row: uniform weights, the mean of the values
    mask[0, 1, :6] = False  # the first blocks of a row hidden: their running sums must be discarded
    expected, _ = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(blocked_attention(q, k, v, mask, block_size=3), expected, atol=1e-5, rtol=1e-5)


def test_online_softmax_update_without_the_running_maximum_overflows():
    """Scores of 1000 overflow exp() unless each block is taken relative to the running maximum."""
    scores, values = torch.tensor([[1000.0, 999.0]]), torch.tensor([[1.0], [3.0]])
    top, total, acc = online_softmax_update(
        torch.full((1, 1), -1e30), torch.zeros(1, 1), torch.zeros(1, 1), scores, values
    )
    torch.testing.assert_close(acc / total, torch.softmax(scores, -1) @ values)


def test_blocked_attention_rejects_bad_input():
    q = torch.randn(2, 4, 8)
    with pytest.raises(ValueError, match="block_size must be an integer >= 1"):
        blocked_attention(q, q, q, block_size=0)
    with pytest.raises(ValueError, match="need q"):
        blocked_attention(q, torch.randn(2, 4, 6), q)
    with pytest.raises(ValueError, match="does not broadcast"):
        blocked_attention(q, q, q, torch.ones(4, 5, dtype=torch.bool))
