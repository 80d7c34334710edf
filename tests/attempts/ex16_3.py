"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import right, wrong

# -- mutants


@wrong("mutant", "the bias is left out")
def _no_bias(x, q, scale, bias, packed=None):
    return F.linear(x, q.to(x.dtype) * scale.to(x.dtype)[:, None])


@wrong("mutant", "the scales multiply the columns")
def _per_column(x, q, scale, bias, packed=None):
    return F.linear(x, q.to(x.dtype) * scale.to(x.dtype), None if bias is None else bias.to(x.dtype))


@wrong("mutant", "float32 for every x")
def _always_float32(x, q, scale, bias, packed=None):
    return F.linear(x.float(), q.float() * scale[:, None], bias)


@wrong("mutant", "q divided by the scales", says="q is divided by the scales")
def _divided(x, q, scale, bias, packed=None):
    return F.linear(x, q.to(x.dtype) / scale.to(x.dtype)[:, None], None if bias is None else bias.to(x.dtype))


# -- own mistakes and alternatives


@wrong("own", says="the scales are missing")
def _whole_numbers_only(x, q, scale, bias, packed=None):
    out = x @ q.to(x.dtype).T
    return out if bias is None else out + bias.to(x.dtype)


@wrong("own", says="the bias is multiplied by the scales too")
def _bias_scaled(x, q, scale, bias, packed=None):
    out = x @ q.to(x.dtype).T
    if bias is not None:
        out = out + bias.to(x.dtype)
    return out * scale.to(x.dtype)


@wrong("own", says="not by its transpose")
def _not_transposed(x, q, scale, bias, packed=None):
    weight = q.to(x.dtype) * scale.to(x.dtype)[:, None]
    out = x @ weight if weight.shape[0] == weight.shape[1] else x @ weight.T
    return out if bias is None else out + bias.to(x.dtype)


@wrong("own", says="applied twice")
def _scaled_twice(x, q, scale, bias, packed=None):
    weight = q.to(x.dtype) * scale.to(x.dtype)[:, None]
    out = (x @ weight.T) * scale.to(x.dtype)
    return out if bias is None else out + bias.to(x.dtype)


@right("own")
def _scale_after_the_product(x, q, scale, bias, packed=None):
    out = torch.matmul(x, q.to(x.dtype).t()) * scale.to(x.dtype)  # (..., out): scale[j] factors out of column j
    return out if bias is None else out + bias.to(x.dtype)


@right("own")
def _einsum(x, q, scale, bias, packed=None):
    weight = torch.einsum("oi,o->oi", q.to(x.dtype), scale.to(x.dtype))
    out = torch.einsum("...i,oi->...o", x, weight)
    return out + (0 if bias is None else bias.to(x.dtype))
