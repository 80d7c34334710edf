"""Checks for chapter 03 — scaled dot-product attention.

References are independent of the package: plain ``torch.matmul`` and PyTorch's own
``F.scaled_dot_product_attention``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer_course_tools.exercises.probe.calls import call, calls_case

from ._tools import (
    CheckFailure,
    Mistakes,
    expect_close,
    expect_device,
    expect_equal,
    expect_finite,
    expect_shape,
    expect_tensor,
    expect_tuple,
    matches,
    name_mistake,
)
from .case import Case, Outcome
from .registry import exercise

# (batch shape, T, S, d_k, d_v): odd sizes so a wrong axis cannot broadcast by luck
_SIZES = [((2,), 3, 5, 4, 6), ((2, 3), 5, 7, 12, 8), ((1,), 1, 1, 1, 1), ((3,), 6, 2, 64, 5)]
_SIZES_LARGER = [((4,), 9, 13, 16, 20), ((2, 4), 11, 17, 24, 10), ((2,), 1, 3, 2, 3), ((5,), 14, 6, 96, 7)]
_UNBATCHED = {False: ((), 4, 6, 8, 3), True: ((), 10, 15, 32, 5)}  # 2-D q and k, as chapter 03 uses them


def _qkv(batch: tuple[int, ...], t: int, s: int, d_k: int, d_v: int) -> tuple[torch.Tensor, ...]:
    return torch.randn(*batch, t, d_k), torch.randn(*batch, s, d_k), torch.randn(*batch, s, d_v)


def attention_scores(q: Tensor, k: Tensor) -> Tensor:
    """The stand-in: (..., T, Dk), (..., S, Dk) → (..., T, S)."""
    return torch.einsum("...td,...sd->...ts", q, k) * (1.0 / math.sqrt(q.shape[-1]))


@exercise("ex03_1", "transformer_course.attention:attention_scores", "easy", standin=attention_scores)
def attention_scores_cases(larger: bool = False) -> Iterator[Case]:
    """attention scores Q·Kᵀ/√d_k

    Nudge: each query is compared with each key by a dot product, scaled so that large key widths do not push
    the softmax into its flat regions (paper §3.2.1).

    Hint: transpose the last two axes of k, multiply, and divide by the square root of q's last dimension.
    """
    for batch, t, s, d_k, d_v in [*(_SIZES_LARGER if larger else _SIZES), _UNBATCHED[larger]]:
        q, k, _ = _qkv(batch, t, s, d_k, d_v)  # (*B, T, Dk), (*B, S, Dk)
        yield Case(f"q {tuple(q.shape)}, k {tuple(k.shape)}", calls_case(call(q, k)), _judge_scores)


def _judge_scores(case: Case, got: Outcome) -> None:
    label, (q, k) = case.label, case.args()
    d_k = q.shape[-1]
    want = torch.einsum("...td,...sd->...ts", q, k) / math.sqrt(d_k)  # (*B, T, S)
    expect_close(got.output(), want, "scores", label, names={"sqrt(d_k)": math.sqrt(d_k), "d_k": d_k},
                 mistakes=_score_mistakes(q, k))  # fmt: skip


def _score_mistakes(q: torch.Tensor, k: torch.Tensor) -> Mistakes:
    d_k, raw = q.shape[-1], q @ k.transpose(-2, -1)
    return [
        (raw, f"the scores are not scaled: divide by sqrt(d_k) = {math.sqrt(d_k):g}"),
        (raw / d_k, "the scores are divided by d_k; divide by sqrt(d_k) instead"),
        (raw * math.sqrt(d_k), "the scores are multiplied by sqrt(d_k); divide by it"),
        (raw / math.sqrt(q.shape[-2]), "the scores are divided by the square root of the number of queries "
         "(q.shape[-2]); d_k is the last dimension, q.shape[-1]"),
        (raw / math.sqrt(k.shape[-2]), "the scores are divided by the square root of the number of keys "
         "(k.shape[-2]); d_k is the last dimension, q.shape[-1]"),
        (k @ q.transpose(-2, -1) / math.sqrt(d_k), "k @ q.transpose(-2, -1) gives the scores transposed, (S, T); "
         "compute q @ k.transpose(-2, -1): one row per query"),
        ((raw / math.sqrt(d_k)).softmax(-1), "the scores went through a softmax; attention_scores returns the raw "
         "scaled scores (the softmax comes in exercise 03.3)"),
    ]  # fmt: skip


def apply_mask(scores: Tensor, mask: Tensor | None) -> Tensor:
    """The stand-in: blocked scores become the dtype's lowest value."""
    if mask is None:
        return scores
    return torch.where(mask, scores, torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype))


@exercise("ex03_2", "transformer_course.attention:apply_mask", "medium", standin=apply_mask)
def apply_mask_cases(larger: bool = False) -> Iterator[Case]:
    """masking scores (True = may attend)

    Nudge: a blocked position must get a score so low that the softmax gives it no weight, while a fully blocked
    row still stays finite (paper §3.2.3).

    Hint: fill the positions where mask is False with torch.finfo(scores.dtype).min, without changing scores in
    place.
    """
    for dtype in (torch.float32, torch.float64, torch.float16):
        b, h, t, s = (4, 6, 9, 11) if larger else (2, 3, 4, 5)  # larger: the grader's hidden cases
        scores = torch.randn(b, h, t, s).to(dtype)
        mask = torch.rand(b, 1, t, s) > 0.4
        mask[0, 0, 1] = False  # one fully masked row
        label = f"scores {tuple(scores.shape)} {dtype}, mask {tuple(mask.shape)}"
        yield Case(label, calls_case(call(scores, mask)), _judge_masked)


def _judge_masked(case: Case, got: Outcome) -> None:
    label, (scores, mask) = case.label, case.args()
    masked = expect_shape(got.output(), tuple(scores.shape), "masked scores", label)
    dtype = scores.dtype
    if masked.dtype != dtype:
        raise CheckFailure(f"{label}: the result should keep dtype {dtype}, got {masked.dtype}")
    lowest = torch.finfo(dtype).min
    kept = mask.expand_as(scores)
    name_mistake(masked, scores.masked_fill(~mask, lowest), _mask_mistakes(scores, mask), label, 0.0, 0.0)
    if not torch.equal(masked[kept], scores[kept]):
        if torch.equal(masked[~kept], scores[~kept]):
            raise CheckFailure(f"{label}: the mask polarity is reversed: True means *may attend* (keep the score)")
        raise CheckFailure(f"{label}: scores where mask is True must be left unchanged")
    if torch.isinf(masked).any():
        raise CheckFailure(f"{label}: {_MINUS_INF}")
    if not (masked[~kept] == lowest).all():
        value = masked[~kept][0].item()
        raise CheckFailure(
            f"{label}: masked positions should hold torch.finfo({dtype}).min = {lowest:.4g}, got {value:.4g}"
        )


_MINUS_INF = "the masked positions hold -inf (a fully masked row would give NaN): use torch.finfo(dtype).min"


def _mask_mistakes(scores: torch.Tensor, mask: torch.Tensor) -> Mistakes:
    lowest = torch.finfo(scores.dtype).min

    def filled(value: float) -> torch.Tensor:  # float16 overflows to -inf, as a learner's fill would
        return torch.where(mask, scores, torch.tensor(value).to(scores.dtype))

    return [
        (scores.masked_fill(mask, lowest), "the mask polarity is reversed: True means *may attend* (keep the score)"),
        (scores.masked_fill(~mask, float("-inf")), _MINUS_INF),
        (filled(-1e9), "the masked positions hold -1e9; fill them with "
         "torch.finfo(scores.dtype).min, the lowest value of the scores' own dtype"),
        (filled(torch.finfo(torch.float32).min), "the masked positions hold float32's lowest "
         "value whatever the dtype; use torch.finfo(scores.dtype).min"),
        (scores * mask, "the scores are multiplied by the mask: a blocked score becomes 0, which the softmax still "
         "weights; fill it with torch.finfo(scores.dtype).min"),
        (scores, "the scores are returned unchanged: fill the positions where mask is False"),
    ]  # fmt: skip


def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0
) -> tuple[Tensor, Tensor]:
    """The stand-in: ``(output (..., T, Dv), weights (..., T, S))``, weights before dropout."""
    logits = apply_mask(attention_scores(q, k), mask)
    probabilities = torch.exp(logits - logits.amax(dim=-1, keepdim=True))
    probabilities = probabilities / probabilities.sum(dim=-1, keepdim=True)  # (..., T, S)
    used = F.dropout(probabilities, dropout_p) if dropout_p > 0 else probabilities
    return torch.einsum("...ts,...sd->...td", used, v), probabilities


@exercise(
    "ex03_3",
    "transformer_course.attention:scaled_dot_product_attention",
    "medium",
    needs=("ex03_1", "ex03_2"),
    standin=scaled_dot_product_attention,
)
def scaled_dot_product_attention_cases(larger: bool = False) -> Iterator[Case]:
    """scaled dot-product attention

    Nudge: the weights are a softmax of the masked, scaled scores over the keys, and the output is the weighted
    sum of the values (paper §3.2.1, equation 1).

    Hint: scores = apply_mask(attention_scores(q, k), mask); weights = softmax over the last axis; return
    (weights @ v, weights).
    """
    for batch, t, s, d_k, d_v in _SIZES_LARGER if larger else _SIZES:
        q, k, v = _qkv(batch, t, s, d_k, d_v)
        full = torch.rand(*batch, t, s) > 0.3
        full[..., 0] = True  # every row keeps one key so the reference has no NaN
        padding = torch.ones(batch[0], *[1] * (len(batch) - 1), 1, s, dtype=torch.bool)  # (B, 1…, 1, S)
        padding[0, ..., s // 2 + 1 :] = False  # the first sequence is padded
        for name, mask in (("None", None), ("(..., T, S)", full), (f"padding {tuple(padding.shape)}", padding)):
            label = f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, mask {name}"
            yield Case(label, calls_case(call(q, k, v, mask)), _judge_attention)
    # a fully masked row must stay finite (uniform weights), not NaN
    q, k, v = _qkv((1,), 2, 3, 4, 4)
    mask = torch.tensor([[True, True, False], [False, False, False]])
    yield (Case("a fully masked query row (mask row all False)", calls_case(call(q, k, v, mask)),
                      _judge_fully_masked))  # fmt: skip
    # dropout on the weights: with the identity as values, the output *is* the dropped weights
    q, k, _ = _qkv((2,), 3, 6, 4, 6)
    yield Case("dropout_p=0.5, v = the identity (2, 6, 6), mask None",
               calls_case(call(q, k, torch.eye(6).expand(2, 6, 6), None, 0.5)), _judge_dropout)  # fmt: skip


def _judge_attention(case: Case, got: Outcome) -> None:
    label, (q, k, v, mask) = case.label, case.args()
    out, weights = expect_tuple(got.output(), "output, weights", label)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    shapes = (tuple(want.shape), (*q.shape[:-1], k.shape[-2]))  # output, weights
    if shapes[0] != shapes[1] and all(isinstance(t, torch.Tensor) for t in (out, weights)):
        if (tuple(out.shape), tuple(weights.shape)) == shapes[::-1]:
            raise CheckFailure(f"{label}: the weights and the output are returned in the other order: return "
                               "(output, weights)")  # fmt: skip
    expect_close(out, want, "output", label, mistakes=_attention_mistakes(q, k, v, mask))
    expect_shape(weights, (*q.shape[:-1], k.shape[-2]), "weights", label)
    expect_close(weights.sum(-1), torch.ones(q.shape[:-1]), "row sums of weights", label)
    if mask is not None and (weights[~mask.expand_as(weights)] > 1e-6).any():
        raise CheckFailure(f"{label}: weights are non-zero where mask is False (polarity: True = may attend)")
    # with the identity as values, PyTorch's output *is* the weight matrix
    s = k.shape[-2]
    eye = torch.eye(s).expand(*q.shape[:-2], s, s)
    expect_close(weights, F.scaled_dot_product_attention(q, k, eye, attn_mask=mask), "weights", label)


def _replayed(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, scale: float = -0.5,
              axis: int = -1, blocked: bool = False, after: bool = False) -> torch.Tensor:  # fmt: skip
    """The output of attention with a mistake: scores times d_k**scale, a softmax over ``axis``, the
    mask's True blocking (``blocked``) or applied to the weights (``after``)."""
    scores = q @ k.transpose(-2, -1) * q.shape[-1] ** scale
    if mask is not None and not after:
        scores = scores.masked_fill(mask if blocked else ~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(axis)
    return (weights * mask if mask is not None and after else weights) @ v


def _attention_mistakes(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> Mistakes:
    return [
        (lambda: _replayed(q, k, v, mask, axis=-2), "the softmax runs over the queries (dim=-2); each query's "
         "weights over the keys sum to 1: softmax(dim=-1)"),
        (lambda: _replayed(q, k, v, mask, scale=0.0), "the scores are not scaled: divide by sqrt(d_k)"),
        (lambda: _replayed(q, k, v, mask, scale=-1.0), "the scores are divided by d_k, as if scaled twice "
         "(attention_scores already divides by sqrt(d_k)): divide by sqrt(d_k) once"),
        (lambda: _replayed(q, k, v, None), "the mask is ignored: pass it to apply_mask before the softmax"),
        (lambda: _replayed(q, k, v, mask, blocked=True), "the mask polarity is reversed: True means *may attend*"),
        (lambda: _replayed(q, k, v, mask, after=True), "the mask is applied to the weights after the softmax (the "
         "rows no longer sum to 1); mask the scores before the softmax"),
    ]  # fmt: skip


def _judge_dropout(case: Case, got: Outcome) -> None:
    label, (q, k, _, _, p) = case.label, case.args()
    out, weights = expect_tuple(got.output(), "output, weights", label)
    want = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)  # (B, T, S), before dropout
    out = expect_shape(out, tuple(want.shape), "output", label)
    weights = expect_shape(weights, tuple(want.shape), "weights", label)
    kept = out != 0  # the output is the dropped weights: 0 where dropped, weight / (1 - p) where kept
    if not matches(weights, want):
        if matches(weights, want * kept / (1 - p)) or matches(weights, want * kept):
            raise CheckFailure(f"{label}: the weights returned are after dropout: return them before dropout "
                               "(each row sums to 1)")  # fmt: skip
        expect_close(weights, want, "weights (before dropout)", label)
    if matches(out, want):
        raise CheckFailure(f"{label}: dropout_p is ignored: drop the weights with F.dropout(weights, p=dropout_p) "
                           "before multiplying by v")  # fmt: skip
    if matches(out, want * kept):
        raise CheckFailure(f"{label}: the kept weights are not scaled by 1 / (1 - dropout_p): use F.dropout, which "
                           "scales them")  # fmt: skip
    expect_close(out, want * kept / (1 - p), "output (the kept weights / (1 - dropout_p), the rest 0)", label)


def _judge_fully_masked(case: Case, got: Outcome) -> None:
    label, (_, _, v, mask) = case.label, case.args()
    out, weights = expect_tuple(got.output(), "output, weights", label)
    expect_finite(expect_tensor(out, "output", label), "output", label, empty_rows=~mask.any(-1))  # rows (T,)
    expect_close(expect_tensor(weights, "weights", label)[0, 1], torch.full((3,), 1 / 3),
                 "weights of the fully masked row", label)  # fmt: skip
    expect_close(out[0, 1], v[0].mean(0), "output of the fully masked row (the mean of the values)", label)


_BANDS = [(7, 2), (5, 0), (4, 5), (1, 1), (9, 3)]  # (size, r): r = 0 keeps the diagonal, r >= size everything
_BANDS_LARGER = [(16, 4), (12, 0), (6, 9), (2, 1), (33, 7)]


@exercise("ex03_4", "transformer_course.attention:band_mask", "easy")
def band_mask_cases(larger: bool = False) -> Iterator[Case]:
    """restricted self-attention's band mask (True within r positions)

    Nudge: restricted self-attention lets each position attend to a window of r neighbours on either side of it,
    which makes a layer's cost linear in the length (paper §4, Table 1's last row).

    Hint: with positions = torch.arange(size, device=device), query t may attend to key s when |t - s| <= r:
    compare the (size, size) table of differences with r.
    """
    for size, r in _BANDS_LARGER if larger else _BANDS:
        yield Case(f"band_mask({size}, r={r})", calls_case(call(size, r)), _judge_band)
    yield Case("band_mask(4, r=1, device='meta')", calls_case(call(4, 1, device="meta")), _judge_band_device)


def _band(size: int, low: int, high: int) -> torch.Tensor:
    """True where ``low <= t - s <= high`` (query t, key s): a band of diagonals."""
    return torch.ones(size, size).tril(-low).triu(-high).bool()  # (T, T)


def _judge_band(case: Case, got: Outcome) -> None:
    label, (size, r) = case.label, case.args()
    mask = expect_shape(got.output(), (size, size), "mask", label)
    if mask.dtype != torch.bool:
        raise CheckFailure(f"{label}: the mask has dtype {mask.dtype}: return a bool mask (True = may attend)")
    want = _band(size, -r, r)
    mistakes = [
        (~want, "the polarity is reversed: True means *may attend*, the positions within r"),
        (_band(size, 1 - r, r - 1), f"the window is one too narrow, |t - s| < r: keep the keys up to r = {r} "
         "positions away, |t - s| <= r"),
        (_band(size, -r - 1, r + 1), f"the window is one too wide, |t - s| <= r + 1: keep the keys up to r = {r} "
         "positions away"),
        (_band(size, 0, r), "only the positions before t are in the window (a causal window): it reaches r "
         "positions on both sides, |t - s| <= r"),
        (_band(size, -r, 0), "only the positions after t are in the window: it reaches r positions on both sides, "
         "|t - s| <= r"),
        (want & ~torch.eye(size, dtype=torch.bool), "the diagonal is False, but a position may attend to itself: "
         "|t - s| <= r includes t = s"),
    ]  # fmt: skip
    expect_equal(mask, want, "mask", label, mistakes=mistakes)


def _judge_band_device(case: Case, got: Outcome) -> None:
    expect_device(got.output(), "meta", "mask", case.label)
