"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from . import right, wrong

# -- mutants


@wrong("mutant", "divides by the scales")
def _divided(q, scale, dtype=torch.float32):
    return q.to(dtype) / scale.to(dtype)[:, None]


@wrong("mutant", "scales multiply the columns")
def _per_column(q, scale, dtype=torch.float32):
    return q.to(dtype) * scale.to(dtype)


@wrong("mutant", "one scale for every row")
def _mean_scale(q, scale, dtype=torch.float32):
    return q.to(dtype) * scale.mean().to(dtype)


# -- own mistakes and alternatives


@wrong("own", says="multiplied by scale / 127")
def _scale_taken_for_the_largest(q, scale, dtype=torch.float32):
    return q.to(dtype) * (scale / 127).to(dtype).unsqueeze(1)


@wrong("own", says="the scales are missing")
def _only_cast(q, scale, dtype=torch.float32):
    return q.to(dtype)


@wrong("own", says="should have dtype")
def _dtype_ignored(q, scale, dtype=torch.float32):
    return q.float() * scale.float()[:, None]


@right("own")
def _diagonal(q, scale, dtype=torch.float32):
    return torch.diag(scale.to(dtype)) @ q.to(dtype)


@right("own")
def _row_by_row(q, scale, dtype=torch.float32):
    return torch.stack([row.to(dtype) * s.to(dtype) for row, s in zip(q, scale, strict=True)])
