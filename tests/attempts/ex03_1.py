"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import math

import torch

from . import right, wrong

# -- mutants


@wrong("mutant", "no 1/sqrt(d_k)")
def _unscaled_scores(q, k):
    return q @ k.transpose(-2, -1)


@wrong("mutant", "divides by d_k")
def _scaled_by_dk(q, k):
    return q @ k.transpose(-2, -1) / q.shape[-1]


@wrong("mutant", "q transposed")
def _wrong_transpose(q, k):
    return q.transpose(-2, -1) @ k / math.sqrt(q.shape[-1])


# -- own mistakes and alternatives


@wrong("own", says="multiplied by sqrt(d_k)")
def _scores_times_sqrt(q, k):
    return q @ k.transpose(-2, -1) * math.sqrt(q.shape[-1])


@wrong("own", says="number of queries")
def _scores_over_sqrt_t(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(1 if q.dim() == 3 else -2))


@wrong("own", says="k @ q.transpose")
def _scores_k_first(q, k):
    return k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1])


@wrong("own", says="went through a softmax")
def _scores_softmaxed(q, k):
    return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1)


@wrong("own", "a batch axis taken for granted: fails on 2-D inputs", says="q (4, 8), k (6, 8)")
def _scores_batched_only(q, k):
    return torch.einsum("b...td,b...sd->b...ts", q, k) / math.sqrt(q.shape[-1])


# -- tester set 'first'


@wrong("tester", "forgot to divide by √d_k", by="first")
def ex03_1_no_scale(q, k):
    return q @ k.transpose(-2, -1)


@wrong("tester", "divides by √S (k.shape[-2]) instead of √d_k", by="first")
def ex03_1_scale_by_s(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(k.shape[-2])


@wrong("tester", "q @ k.T (reverses every axis of a batched k)", by="first")
def ex03_1_dot_T(q, k):
    return q @ k.T / math.sqrt(q.shape[-1])


@right("tester", by="first")
def ex03_1_alt_einsum(q, k):
    return torch.einsum("...td,...sd->...ts", q, k) * q.shape[-1] ** -0.5


@wrong("tester", "d_k read as q.size(2) (T for 4-D inputs)", by="first")
def x03_1_dk_from_axis2(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(2))  # axis 2 is T for (B, H, T, Dk)


# -- tester set 'second'


@wrong("tester", "k.transpose(1, 2) instead of the last two axes", by="second")
def scores_transpose_12(q, k):
    d_k = q.shape[-1]
    return q @ k.transpose(1, 2) / math.sqrt(d_k)


@wrong("tester", "divides by d_k instead of sqrt(d_k)", by="second")
def scores_div_dk(q, k):
    d_k = q.shape[-1]
    return q @ k.transpose(-2, -1) / d_k


@wrong("tester", "d_k read from k.shape[-2] (the key length S)", by="second")
def scores_dk_from_k_rows(q, k):
    d_k = k.shape[-2]
    return q @ k.transpose(-2, -1) / math.sqrt(d_k)


@right("tester", by="second")
def scores_alt(q, k):
    return torch.einsum("...td,...sd->...ts", q, k) * q.shape[-1] ** -0.5


# -- tester set 'third'


@wrong("tester", "scaled by sqrt of the key length S instead of sqrt(d_k)", by="third")
def scores_sqrt_s(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(k.shape[-2])


@wrong("tester", "k.transpose(0, 1) instead of the last two axes", by="third")
def scores_transpose01(q, k):
    d_k = q.shape[-1]
    return q @ k.transpose(0, 1) / math.sqrt(d_k)


@wrong("tester", "divides by d_k, not sqrt(d_k)", by="third")
def scores_no_sqrt(q, k):
    d_k = q.shape[-1]
    return q @ k.transpose(-2, -1) / d_k


@right("tester", by="third")
def scores_alt_third(q, k):
    return torch.einsum("...td,...sd->...ts", q * q.shape[-1] ** -0.5, k)
