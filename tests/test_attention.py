"""Scaled dot-product attention (chapter 03, paper §3.2.1, equation 1).

Reference equality with ``F.scaled_dot_product_attention``, the teaching path against the fast
path, masks (True = may attend), fully masked rows, gradients and input errors. Odd sizes
(B=2, H=3, T=7, S=5, D=12 split into Dk=4) so that a wrong axis cannot broadcast by luck.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_course.attention import apply_mask, attention_scores, fast_attention, scaled_dot_product_attention

B, H, T, S, D_K, D_V = 2, 3, 7, 5, 4, 6
LEADS = {"no batch": (), "batch": (B,), "batch and heads": (B, H)}


def _qkv(lead: tuple[int, ...], t: int = T, s: int = S, dtype: torch.dtype = torch.float32):
    return (torch.randn(*lead, t, D_K, dtype=dtype), torch.randn(*lead, s, D_K, dtype=dtype),
            torch.randn(*lead, s, D_V, dtype=dtype))  # fmt: skip


def _mask(kind: str, lead: tuple[int, ...], t: int = T, s: int = S) -> torch.Tensor | None:
    """A boolean mask (True = may attend) in which every query row keeps at least one key."""
    if kind == "none":
        return None
    if kind == "random":
        mask = torch.rand(*lead, t, s) > 0.4  # (..., T, S)
        mask[..., 0] = True
        return mask
    if kind == "padding":  # (B, 1, …, 1, S) or (1, S): the last keys of the first sequence are padding
        mask = torch.ones(*lead[:1], *[1] * len(lead[1:]), 1, s, dtype=torch.bool)
        mask[..., 3:] = False
        if lead:
            mask[1:] = True
        return mask
    if kind == "causal":
        return torch.ones(t, s, dtype=torch.bool).tril()  # (T, S): row t sees keys 0…t
    raise ValueError(kind)


def _teaching(q, k, v, mask=None):
    return scaled_dot_product_attention(q, k, v, mask)[0]


PATHS = {"teaching": _teaching, "fast": fast_attention}


# --- equal to PyTorch ----------------------------------------------------------------------


@pytest.mark.parametrize("lead", LEADS.values(), ids=LEADS.keys())
@pytest.mark.parametrize("kind", ["none", "random", "padding", "causal"])
@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
def test_output_equals_pytorch_sdpa(path, kind, lead) -> None:
    q, k, v = _qkv(lead)
    mask = _mask(kind, lead)
    torch.testing.assert_close(path(q, k, v, mask), F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


@pytest.mark.parametrize("lead", LEADS.values(), ids=LEADS.keys())
@pytest.mark.parametrize("kind", ["none", "random", "padding", "causal"])
def test_weights_equal_pytorch_with_identity_values(kind, lead) -> None:
    q, k, _ = _qkv(lead)
    mask = _mask(kind, lead)
    _, weights = scaled_dot_product_attention(q, k, torch.randn(*lead, S, D_V), mask)
    eye = torch.eye(S).expand(*lead, S, S)  # with the identity as values, the output is the weights
    torch.testing.assert_close(weights, F.scaled_dot_product_attention(q, k, eye, attn_mask=mask))


def test_scores_are_dot_products_over_sqrt_dk() -> None:
    q, k, _ = _qkv((B, H))
    want = torch.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(D_K)
    torch.testing.assert_close(attention_scores(q, k), want)


def test_teaching_path_equals_fast_path_with_broadcast_masks_and_empty_rows() -> None:
    q, k, v = _qkv((B, H))
    mask = torch.rand(B, 1, T, S) > 0.5  # broadcast over heads, some rows fully masked
    mask[1, 0, 2] = False
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(fast_attention(q, k, v, mask), out)


def test_fast_path_is_causal_equals_a_causal_mask() -> None:
    q, k, v = _qkv((B, H), t=S)
    causal = torch.ones(S, S, dtype=torch.bool).tril()
    torch.testing.assert_close(fast_attention(q, k, v, is_causal=True), _teaching(q, k, v, causal))


# --- weights and masks -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["none", "random", "padding", "causal"])
def test_rows_of_weights_sum_to_one_and_blocked_keys_get_zero(kind) -> None:
    q, k, v = _qkv((B, H))
    mask = _mask(kind, (B, H))
    _, weights = scaled_dot_product_attention(q, k, v, mask)
    assert weights.shape == (B, H, T, S)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T))
    assert (weights >= 0).all()
    if mask is not None:
        assert (weights[~mask.expand_as(weights)] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_apply_mask_fills_with_the_dtype_minimum_and_keeps_the_input(dtype) -> None:
    scores = torch.randn(B, H, T, S).to(dtype)
    before = scores.clone()
    mask = _mask("random", (B, 1))
    masked = apply_mask(scores, mask)
    assert masked.dtype == dtype
    assert torch.equal(scores, before), "apply_mask must not modify its input"
    keep = mask.expand_as(scores)
    assert torch.equal(masked[keep], scores[keep])
    assert (masked[~keep] == torch.finfo(dtype).min).all()
    assert apply_mask(scores, None) is scores


@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_fully_masked_row_gives_the_mean_of_the_values(path, dtype) -> None:
    q, k, v = _qkv((B, H), dtype=dtype)
    q = q * 8  # large scores: an additive-mask shortcut would no longer give exactly equal scores
    mask = torch.ones(B, 1, T, S, dtype=torch.bool)
    mask[0, 0, 3] = False  # one query row with nothing to attend to
    mask[1] = False  # a whole sequence of padding
    out = path(q, k, v, mask)
    assert torch.isfinite(out).all()
    tol = {"atol": 1e-2, "rtol": 1e-2} if dtype in (torch.float16, torch.bfloat16) else {}
    torch.testing.assert_close(out[0, :, 3], v[0].mean(dim=-2), **tol)
    torch.testing.assert_close(out[1], v[1].mean(dim=-2, keepdim=True).expand(H, T, D_V), **tol)


@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
def test_gradients_are_finite_with_a_fully_masked_row(path) -> None:
    q, k, v = (x.requires_grad_() for x in _qkv((B, H)))
    mask = _mask("random", (B, H))
    mask[0, 1, 4] = False
    path(q, k, v, mask)[:, :, :2].sum().backward()  # the loss does not even use the empty row
    for name, x in (("q", q), ("k", k), ("v", v)):
        assert torch.isfinite(x.grad).all(), f"{name}.grad has NaN"


@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
def test_gradients_flow_to_q_k_v_but_not_to_blocked_values(path) -> None:
    q, k, v = (x.requires_grad_() for x in _qkv((B,)))
    mask = _mask("padding", (B,))  # keys 3, 4 of sequence 0 are padding
    path(q, k, v, mask).pow(2).sum().backward()
    for name, x in (("q", q), ("k", k), ("v", v)):
        assert x.grad is not None and x.grad.abs().sum() > 0, f"no gradient reaches {name}"
    assert (v.grad[0, 3:] == 0).all(), "a padded value received gradient: it was attended to"
    assert (v.grad[0, :3] != 0).any() and (v.grad[1, 3:] != 0).any()


def test_dropout_acts_on_the_output_but_weights_are_returned_before_it() -> None:
    q, k, v = _qkv((B, H))
    plain, weights = scaled_dot_product_attention(q, k, v)
    dropped, weights_again = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert not torch.allclose(dropped, plain)
    torch.testing.assert_close(weights_again, weights)


# --- clear errors --------------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
def test_q_and_k_feature_sizes_must_match(path) -> None:
    q, k, v = _qkv((B,))
    with pytest.raises(ValueError, match="q and k must share the last dimension d_k"):
        path(q, k[..., :-1], v)


@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
def test_k_and_v_lengths_must_match(path) -> None:
    q, k, v = _qkv((B,))
    with pytest.raises(ValueError, match="k and v must have the same length S"):
        path(q, k, v[:, :-1])


@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
def test_query_and_key_batches_must_match(path) -> None:
    q, _, _ = _qkv((B,))
    _, k, v = _qkv((B + 1,))
    with pytest.raises(ValueError, match="same leading"):
        path(q, k, v)


@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
def test_inputs_need_a_length_and_a_feature_axis(path) -> None:
    q, k, v = _qkv((B,))
    with pytest.raises(ValueError, match="q must be a tensor of shape"):
        path(q[0, 0], k, v)


@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
@pytest.mark.parametrize("shape", [(B, 1, S + 1), (B, S + 1), (T + 1, S), (B + 1, 1, S)])
def test_mask_of_the_wrong_shape_is_an_error(path, shape) -> None:
    q, k, v = _qkv((B,))
    with pytest.raises(ValueError, match=r"mask has shape .* does not broadcast"):
        path(q, k, v, torch.ones(shape, dtype=torch.bool))


@pytest.mark.parametrize("path", PATHS.values(), ids=PATHS.keys())
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.uint8])
def test_mask_must_be_boolean(path, dtype) -> None:
    q, k, v = _qkv((B,))
    with pytest.raises(ValueError, match="mask must be a bool tensor with True = may attend"):
        path(q, k, v, torch.ones(B, 1, S, dtype=dtype))


def test_a_one_dimensional_mask_works_on_both_paths() -> None:
    """A mask of shape (S,): the same keys for every query. Both paths accept it and agree."""
    q, k, v = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 7, 4), torch.randn(2, 3, 7, 6)
    keys = torch.tensor([True, True, False, True, False, True, True])
    teaching, _ = scaled_dot_product_attention(q, k, v, keys)
    torch.testing.assert_close(fast_attention(q, k, v, keys), teaching, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(teaching, scaled_dot_product_attention(q, k, v, keys.expand(5, 7))[0])
    nothing = torch.zeros(7, dtype=torch.bool)  # every row fully masked: uniform weights on both paths
    torch.testing.assert_close(fast_attention(q, k, v, nothing), v.mean(-2, keepdim=True).expand(2, 3, 5, 6))
