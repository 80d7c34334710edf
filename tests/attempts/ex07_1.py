"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch
from torch import nn

from . import right, wrong


def _sizes(d_model, n_heads, d_k, d_v):
    return (d_k or d_model // n_heads), (d_v or d_model // n_heads)


# -- mutants


@wrong("mutant", "the biases left out")
def _no_biases(d_model, n_heads, d_k=None, d_v=None, bias=True):
    d_k, d_v = _sizes(d_model, n_heads, d_k, d_v)
    return 2 * d_model * n_heads * d_k + 2 * d_model * n_heads * d_v


@wrong("mutant", "the biases counted whatever bias says")
def _biases_always(d_model, n_heads, d_k=None, d_v=None, bias=True):
    d_k, d_v = _sizes(d_model, n_heads, d_k, d_v)
    return 2 * d_model * n_heads * d_k + 2 * d_model * n_heads * d_v + 2 * n_heads * d_k + n_heads * d_v + d_model


@wrong("mutant", "W^O forgotten")
def _no_output_projection(d_model, n_heads, d_k=None, d_v=None, bias=True):
    d_k, d_v = _sizes(d_model, n_heads, d_k, d_v)
    return 2 * (d_model + bias) * n_heads * d_k + (d_model + bias) * n_heads * d_v


@wrong("mutant", "W^O's bias of H·d_v numbers")
def _output_bias_of_the_heads(d_model, n_heads, d_k=None, d_v=None, bias=True):
    d_k, d_v = _sizes(d_model, n_heads, d_k, d_v)
    return 2 * (d_model + bias) * n_heads * d_k + 2 * (d_model + bias) * n_heads * d_v


# -- own mistakes and alternatives


@wrong("own", says="d_model × d_model")
def _square_projections(d_model, n_heads, d_k=None, d_v=None, bias=True):
    return 4 * (d_model * d_model + (d_model if bias else 0))  # 4(D² + D): true only when H·d_k = H·d_v = D


@wrong("own", says="for one head")
def _one_head(d_model, n_heads, d_k=None, d_v=None, bias=True):
    d_k, d_v = _sizes(d_model, n_heads, d_k, d_v)
    per_bias = (2 * d_k + d_v + d_model) if bias else 0
    return 2 * d_model * d_k + 2 * d_model * d_v + per_bias


@wrong("own", says="values are counted with d_k")
def _values_with_d_k(d_model, n_heads, d_k=None, d_v=None, bias=True):
    d_k, _ = _sizes(d_model, n_heads, d_k, d_v)
    inner = n_heads * d_k
    return 4 * d_model * inner + ((3 * inner + d_model) if bias else 0)


@wrong("own", says="not an int")
def _as_a_float(d_model, n_heads, d_k=None, d_v=None, bias=True):
    d_k = d_k or d_model / n_heads  # '/' makes every count a float
    d_v = d_v or d_model / n_heads
    return (
        2 * (d_model + bias) * n_heads * d_k
        + (d_model + bias) * n_heads * d_v
        + n_heads * d_v * d_model
        + bias * d_model
    )


@right("own")
def _linear_by_linear(d_model, n_heads, d_k=None, d_v=None, bias=True):
    d_k, d_v = _sizes(d_model, n_heads, d_k, d_v)
    shapes = [(d_model, n_heads * d_k), (d_model, n_heads * d_k), (d_model, n_heads * d_v), (n_heads * d_v, d_model)]
    return sum(i * o + bias * o for i, o in shapes)


@right("own")
def _built_on_meta(d_model, n_heads, d_k=None, d_v=None, bias=True):
    d_k, d_v = _sizes(d_model, n_heads, d_k, d_v)
    with torch.device("meta"):
        parts = [nn.Linear(d_model, n_heads * d_k, bias=bias), nn.Linear(d_model, n_heads * d_k, bias=bias),
                 nn.Linear(d_model, n_heads * d_v, bias=bias), nn.Linear(n_heads * d_v, d_model, bias=bias)]  # fmt: skip
    return sum(p.numel() for part in parts for p in part.parameters())
