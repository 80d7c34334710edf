"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from transformer_course.attention import (
    _check_qkv,
    apply_mask,
    attention_scores,
)

from . import right, wrong

# -- mutants


@wrong("mutant", "softmax over the query axis")
def _softmax_wrong_axis(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-2)
    return weights @ v, weights


@wrong("mutant", "mask ignored")
def _mask_ignored(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
    return weights @ v, weights


@wrong("mutant", "-inf gives NaN on a fully masked row")
def _nan_on_full_mask(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(-1)
    return weights @ v, weights


@wrong("mutant", "mask applied after the softmax")
def _mask_after_softmax(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
    if mask is not None:
        weights = weights * mask  # zeroes the blocked keys but the rows no longer sum to 1
    return weights @ v, weights


@wrong("mutant", "mask after the softmax, renormalised (NaN on a fully masked row)")
def _renormalised_after_softmax(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
    if mask is not None:
        weights = weights * mask
        weights = weights / weights.sum(-1, keepdim=True)  # 0 / 0 on a fully masked row
    return weights @ v, weights


# -- own mistakes and alternatives


def _attention(q, k, v, mask, scale, dim=-1, keep=True):
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask if keep else mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=dim)
    return weights @ v, weights


@wrong("own", says="not scaled")
def _attention_unscaled(q, k, v, mask=None):
    return _attention(q, k, v, mask, 1.0)


@wrong("own", says="divided by d_k")
def _attention_over_d_k(q, k, v, mask=None):
    return _attention(q, k, v, mask, 1 / q.shape[-1])


@wrong("own", says="polarity is reversed")
def _attention_mask_flipped(q, k, v, mask=None):
    return _attention(q, k, v, mask, q.shape[-1] ** -0.5, keep=False)


# -- tester set 'first'


@wrong("tester", "softmax over dim=-2 (queries) instead of keys", by="first")
def ex03_3_softmax_dim(q, k, v, mask=None, dropout_p=0.0):
    scores = apply_mask(attention_scores(q, k), mask)
    weights = scores.softmax(dim=-2)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


@wrong("tester", "returns the weights after dropout", by="first")
def ex03_3_returns_dropped(q, k, v, mask=None, dropout_p=0.0):
    scores = apply_mask(attention_scores(q, k), mask)
    weights = scores.softmax(dim=-1)
    weights = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return weights @ v, weights


@wrong("tester", "mask applied after the softmax (masked weights set to 0, rows no longer sum to 1)", by="first")
def ex03_3_mask_after_softmax(q, k, v, mask=None, dropout_p=0.0):
    weights = attention_scores(q, k).softmax(dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


@right("tester", by="first")
def ex03_3_alt_where(q, k, v, mask=None, dropout_p=0.0):
    scores = torch.einsum("...td,...sd->...ts", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    out = torch.einsum("...ts,...sd->...td", F.dropout(weights, dropout_p) if dropout_p else weights, v)
    return out, weights


@wrong("tester", "divides by √d_k again after attention_scores", by="first")
def x03_3_scaled_twice(q, k, v, mask=None, dropout_p=0.0):
    scores = apply_mask(attention_scores(q, k) / math.sqrt(q.shape[-1]), mask)  # attention_scores already scales
    weights = scores.softmax(dim=-1)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


# -- tester set 'second'


@wrong("tester", "softmax over dim=-2 (queries) instead of keys", by="second")
def sdpa_softmax_dim2(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    scores = apply_mask(attention_scores(q, k), mask)
    weights = scores.softmax(dim=-2)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


@wrong("tester", "returns the weights after dropout", by="second")
def sdpa_returns_dropped(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    scores = apply_mask(attention_scores(q, k), mask)
    weights = scores.softmax(dim=-1)
    weights = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return weights @ v, weights


@wrong("tester", "mask multiplied into the weights after softmax (rows no longer sum to 1)", by="second")
def sdpa_mask_after_softmax(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    weights = attention_scores(q, k).softmax(dim=-1)
    if mask is not None:
        weights = weights * mask
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


# -- tester set 'third'


@wrong("tester", "softmax over dim=-2 (the query axis)", by="third")
def sdpa_dim(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    scores = apply_mask(attention_scores(q, k), mask)
    weights = scores.softmax(dim=-2)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


@wrong("tester", "mask ignored", by="third")
def sdpa_no_mask(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    scores = attention_scores(q, k)
    weights = scores.softmax(dim=-1)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


@wrong("tester", "returns (weights, output) instead of (output, weights)", by="third")
def sdpa_order(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    scores = apply_mask(attention_scores(q, k), mask)
    weights = scores.softmax(dim=-1)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return weights, dropped @ v


@right("tester", by="third")
def sdpa_alt(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    scores = attention_scores(q, k)
    scores = apply_mask(scores, mask)
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    weights = e / e.sum(dim=-1, keepdim=True)
    out = torch.matmul(F.dropout(weights, p=dropout_p, training=dropout_p > 0), v)
    return out, weights
