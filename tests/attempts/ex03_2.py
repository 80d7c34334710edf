"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from transformer_course._validate import check_mask

from . import right, wrong

# -- mutants


@wrong("mutant", "mask polarity reversed")
def _reversed_polarity(scores, mask):
    return scores.masked_fill(mask, torch.finfo(scores.dtype).min)


@wrong("mutant", "-inf fill")
def _minus_inf(scores, mask):
    return scores.masked_fill(~mask, float("-inf"))


@wrong("mutant", "-1e9 fill (fp16 overflow)")
def _minus_1e9(scores, mask):
    return scores.masked_fill(~mask, -1e9)


@wrong("mutant", "modifies scores in place")
def _in_place(scores, mask):
    return scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)


# -- own mistakes and alternatives


@wrong("own", says="multiplied by the mask")
def _mask_multiplied(scores, mask):
    return scores * mask


@wrong("own", says="float32's lowest")
def _mask_float32_lowest(scores, mask):
    return scores.masked_fill(~mask, torch.finfo(torch.float32).min)


@wrong("own", says="returned unchanged")
def _mask_forgotten(scores, mask):
    return scores.clone()


@wrong("own", says="a boolean index does not broadcast")
def _mask_by_boolean_index(scores, mask):
    masked = scores.clone()
    masked[~mask] = torch.finfo(scores.dtype).min
    return masked


# -- tester set 'first'


@wrong("tester", "mask polarity inverted (fills where mask is True)", by="first")
def ex03_2_polarity(scores, mask):
    if mask is None:
        return scores
    return scores.masked_fill(mask, torch.finfo(scores.dtype).min)


@wrong("tester", "fills with -inf instead of finfo(dtype).min", by="first")
def ex03_2_neg_inf(scores, mask):
    if mask is None:
        return scores
    return scores.masked_fill(~mask, float("-inf"))


@wrong("tester", "masked_fill_ in place: modifies the caller's scores", by="first")
def ex03_2_in_place(scores, mask):
    if mask is None:
        return scores
    scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)
    return scores


@right("tester", by="first")
def ex03_2_alt_where(scores, mask):
    if mask is None:
        return scores
    low = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype, device=scores.device)
    return torch.where(mask, scores, low)


@wrong("tester", "fills with -1e9 (overflows to -inf in float16)", by="first")
def x03_2_minus_1e9(scores, mask):
    if mask is None:
        return scores
    return scores.masked_fill(~mask, -1e9)


# -- tester set 'second'


@wrong("tester", "mask polarity inverted (fills where True)", by="second")
def mask_inverted(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    return scores.masked_fill(mask, torch.finfo(scores.dtype).min)


@wrong("tester", "fills with -1e9 instead of finfo(dtype).min", by="second")
def mask_minus_1e9(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    return scores.masked_fill(~mask, -1e9)


@wrong("tester", "masked_fill_ in place: modifies the input scores", by="second")
def mask_in_place(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    return scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)


@right("tester", by="second")
def mask_alt(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    low = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype, device=scores.device)
    return torch.where(mask, scores, low)


# -- tester set 'third'


@wrong("tester", "mask not inverted: fills where mask is True", by="third")
def mask_inverted_third(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    return scores.masked_fill(mask, torch.finfo(scores.dtype).min)


@wrong("tester", "fills -1e9 instead of the dtype's minimum", by="third")
def mask_minus_1e9_third(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    return scores.masked_fill(~mask, -1e9)


@wrong("tester", "in-place masked_fill_: modifies the input scores", by="third")
def mask_inplace(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    return scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)


@right("tester", by="third")
def mask_alt_third(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    low = torch.full((), torch.finfo(scores.dtype).min, dtype=scores.dtype, device=scores.device)
    return torch.where(mask, scores, low)
