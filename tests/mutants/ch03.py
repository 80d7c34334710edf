"""Wrong answers for chapter 03 (the pitfalls of the design notes §5)."""

from __future__ import annotations

import math

import torch


def _unscaled_scores(q, k):
    return q @ k.transpose(-2, -1)


def _scaled_by_dk(q, k):
    return q @ k.transpose(-2, -1) / q.shape[-1]


def _wrong_transpose(q, k):
    return q.transpose(-2, -1) @ k / math.sqrt(q.shape[-1])


def _reversed_polarity(scores, mask):
    return scores.masked_fill(mask, torch.finfo(scores.dtype).min)


def _minus_inf(scores, mask):
    return scores.masked_fill(~mask, float("-inf"))


def _minus_1e9(scores, mask):
    return scores.masked_fill(~mask, -1e9)


def _in_place(scores, mask):
    return scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)


def _softmax_wrong_axis(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-2)
    return weights @ v, weights


def _mask_ignored(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
    return weights @ v, weights


def _nan_on_full_mask(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(-1)
    return weights @ v, weights


def _mask_after_softmax(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
    if mask is not None:
        weights = weights * mask  # zeroes the blocked keys but the rows no longer sum to 1
    return weights @ v, weights


def _renormalised_after_softmax(q, k, v, mask=None):
    weights = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
    if mask is not None:
        weights = weights * mask
        weights = weights / weights.sum(-1, keepdim=True)  # 0 / 0 on a fully masked row
    return weights @ v, weights


MUTANTS = {
    "ex03_1": [
        ("no 1/sqrt(d_k)", _unscaled_scores),
        ("divides by d_k", _scaled_by_dk),
        ("q transposed", _wrong_transpose),
    ],
    "ex03_2": [
        ("mask polarity reversed", _reversed_polarity),
        ("-inf fill", _minus_inf),
        ("-1e9 fill (fp16 overflow)", _minus_1e9),
        ("modifies scores in place", _in_place),
    ],
    "ex03_3": [
        ("softmax over the query axis", _softmax_wrong_axis),
        ("mask ignored", _mask_ignored),
        ("-inf gives NaN on a fully masked row", _nan_on_full_mask),
        ("mask applied after the softmax", _mask_after_softmax),
        ("mask after the softmax, renormalised (NaN on a fully masked row)", _renormalised_after_softmax),
    ],
}
