"""Checks for chapter 03 — scaled dot-product attention.

References are independent of the package: plain ``torch.matmul`` and PyTorch's own
``F.scaled_dot_product_attention``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from ._tools import CheckFailure, call, expect_close, expect_finite, expect_shape
from .registry import exercise

# (batch shape, T, S, d_k, d_v): odd sizes so a wrong axis cannot broadcast by luck
_SIZES = [((2,), 3, 5, 4, 6), ((2, 3), 5, 7, 12, 8), ((1,), 1, 1, 1, 1), ((3,), 6, 2, 64, 5)]


def _qkv(batch: tuple[int, ...], t: int, s: int, d_k: int, d_v: int) -> tuple[torch.Tensor, ...]:
    return torch.randn(*batch, t, d_k), torch.randn(*batch, s, d_k), torch.randn(*batch, s, d_v)


@exercise("ex03_1", "transformer_course.attention:attention_scores", "easy")
def check_attention_scores(impl: Callable) -> int:
    """attention scores Q·Kᵀ/√d_k

    Hint: transpose the last two axes of k, multiply, and divide by the square root of q's last dimension.
    """
    for batch, t, s, d_k, d_v in _SIZES:
        q, k, _ = _qkv(batch, t, s, d_k, d_v)
        case = f"q {tuple(q.shape)}, k {tuple(k.shape)}"
        got = call(impl, q, k, case=case)
        want = torch.einsum("...td,...sd->...ts", q, k) / math.sqrt(d_k)
        if isinstance(got, torch.Tensor) and got.shape == want.shape and d_k > 1:
            if torch.allclose(got, want * math.sqrt(d_k), atol=1e-5):
                raise CheckFailure(f"{case}: the scores are not scaled: divide by sqrt(d_k) = {math.sqrt(d_k):g}")
            if torch.allclose(got, want / math.sqrt(d_k), atol=1e-5):
                raise CheckFailure(f"{case}: the scores are divided by d_k; divide by sqrt(d_k) instead")
        expect_close(got, want, "scores", case)
    return len(_SIZES)


@exercise("ex03_2", "transformer_course.attention:apply_mask", "medium")
def check_apply_mask(impl: Callable) -> int:
    """masking scores (True = may attend)

    Hint: fill the positions where mask is False with torch.finfo(scores.dtype).min, without changing scores in
    place.
    """
    cases = 0
    for dtype in (torch.float32, torch.float64, torch.float16):
        scores = torch.randn(2, 3, 4, 5).to(dtype)
        mask = torch.rand(2, 1, 4, 5) > 0.4
        mask[0, 0, 1] = False  # one fully masked row
        case = f"scores {tuple(scores.shape)} {dtype}, mask {tuple(mask.shape)}"
        got = expect_shape(call(impl, scores, mask, case=case), tuple(scores.shape), "masked scores", case)
        if got.dtype != dtype:
            raise CheckFailure(f"{case}: the result should keep dtype {dtype}, got {got.dtype}")
        lowest = torch.finfo(dtype).min
        kept = mask.expand_as(scores)
        if not torch.equal(got[kept], scores[kept]):
            if torch.equal(got[~kept], scores[~kept]):
                raise CheckFailure(f"{case}: the mask polarity is reversed: True means *may attend* (keep the score)")
            raise CheckFailure(f"{case}: scores where mask is True must be left unchanged")
        if torch.isinf(got).any():
            raise CheckFailure(f"{case}: use torch.finfo(dtype).min, not -inf (a fully masked row would give NaN)")
        if not (got[~kept] == lowest).all():
            value = got[~kept][0].item()
            raise CheckFailure(
                f"{case}: masked positions should hold torch.finfo({dtype}).min = {lowest:.4g}, got {value:.4g}"
            )
        cases += 1
    return cases


@exercise("ex03_3", "transformer_course.attention:scaled_dot_product_attention", "medium", needs=("ex03_1", "ex03_2"))
def check_scaled_dot_product_attention(impl: Callable) -> int:
    """scaled dot-product attention

    Hint: scores = apply_mask(attention_scores(q, k), mask); weights = softmax over the last axis; return
    (weights @ v, weights).
    """
    cases = 0
    for batch, t, s, d_k, d_v in _SIZES:
        q, k, v = _qkv(batch, t, s, d_k, d_v)
        full = torch.rand(*batch, t, s) > 0.3
        full[..., 0] = True  # every row keeps one key so the reference has no NaN
        padding = torch.ones(batch[0], *[1] * (len(batch) - 1), 1, s, dtype=torch.bool)  # (B, 1…, 1, S)
        padding[0, ..., s // 2 + 1 :] = False  # the first sequence is padded
        for name, mask in (("None", None), ("(..., T, S)", full), (f"padding {tuple(padding.shape)}", padding)):
            case = f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, mask {name}"
            result = call(impl, q, k, v, mask, case=case)
            if not (isinstance(result, tuple) and len(result) == 2):
                raise CheckFailure(f"{case}: return a tuple (output, weights), got {type(result).__name__}")
            out, weights = result
            expect_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), "output", case)
            expect_shape(weights, (*batch, t, s), "weights", case)
            expect_close(weights.sum(-1), torch.ones(*batch, t), "row sums of weights", case)
            if mask is not None and (weights[~mask.expand_as(weights)] > 1e-6).any():
                raise CheckFailure(f"{case}: weights are non-zero where mask is False (polarity: True = may attend)")
            # with the identity as values, PyTorch's output *is* the weight matrix
            eye = torch.eye(s).expand(*batch, s, s)
            expect_close(weights, F.scaled_dot_product_attention(q, k, eye, attn_mask=mask), "weights", case)
            cases += 1
    # a fully masked row must stay finite (uniform weights), not NaN
    q, k, v = _qkv((1,), 2, 3, 4, 4)
    mask = torch.tensor([[True, True, False], [False, False, False]])
    case = "a fully masked query row (mask row all False)"
    result = call(impl, q, k, v, mask, case=case)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise CheckFailure(f"{case}: return a tuple (output, weights), got {type(result).__name__}")
    out, weights = result
    expect_finite(out, "output", case)
    expect_close(weights[0, 1], torch.full((3,), 1 / 3), "weights of the fully masked row", case)
    expect_close(out[0, 1], v[0].mean(0), "output of the fully masked row (the mean of the values)", case)
    return cases + 1
