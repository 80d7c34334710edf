"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from . import right, wrong

# -- mutants


@wrong("mutant", "divides by 128")
def _by_128(weight):
    weight = weight.float()
    scale = weight.abs().amax(dim=1) / 128
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8), scale


@wrong("mutant", "truncates instead of rounding")
def _truncated(weight):
    weight = weight.float()
    scale = weight.abs().amax(dim=1) / 127
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return (weight / scale[:, None]).to(torch.int8), scale


@wrong("mutant", "zero row keeps scale 0")
def _zero_scale(weight):
    weight = weight.float()
    scale = weight.abs().amax(dim=1) / 127
    return torch.nan_to_num(torch.round(weight / scale[:, None])).clamp(-127, 127).to(torch.int8), scale


@wrong("mutant", "returns the rounded numbers as floats", says="turn the rounded numbers into int8")
def _float_q(weight):
    weight = weight.float()
    scale = weight.abs().amax(dim=1) / 127
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return torch.round(weight / scale[:, None]).clamp(-127, 127), scale


@wrong("mutant", "the scale is not divided by 127", says="the scale is the row's largest magnitude")
def _not_by_127(weight):
    weight = weight.float()
    scale = weight.abs().amax(dim=1)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8), scale


@wrong("mutant", "the scale inverted", says="the inverse")
def _inverse_scale(weight):
    weight = weight.float()
    scale = 127 / weight.abs().amax(dim=1)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return torch.round(weight * scale[:, None]).clamp(-127, 127).to(torch.int8), scale


@wrong("mutant", "rounds down", says="rounded down (floor)")
def _floored(weight):
    weight = weight.float()
    scale = weight.abs().amax(dim=1) / 127
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return torch.floor(weight / scale[:, None]).clamp(-127, 127).to(torch.int8), scale


@wrong("mutant", "the ratios not rounded", says="the ratios not rounded")
def _not_rounded(weight):
    weight = weight.float()
    scale = weight.abs().amax(dim=1) / 127
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return (weight / scale[:, None]).clamp(-127, 127), scale


# -- own mistakes and alternatives


@wrong("own", says="one number for the whole matrix")
def _one_scale(weight):
    weight = weight.float()
    scale = weight.abs().max() / 127
    return torch.round(weight / scale).clamp(-127, 127).to(torch.int8), scale


@wrong("own", says="scale of the whole matrix")
def _one_scale_per_row_copied(weight):
    weight = weight.float()
    scale = (weight.abs().max() / 127).expand(weight.shape[0]).clone()
    return torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8), scale


@wrong("own", says="max|row| / 255")
def _unsigned_levels(weight):
    weight = weight.float()
    scale = weight.abs().amax(dim=1) / 255
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8), scale


@wrong("own", says="largest value, not its largest magnitude")
def _no_abs(weight):
    weight = weight.float()
    scale = weight.amax(dim=1) / 127
    scale = torch.where(scale != 0, scale, torch.ones_like(scale))
    return torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8), scale


@wrong("own", says="one per column")
def _per_column(weight):
    weight = weight.float()
    scale = weight.abs().amax(dim=0) / 127
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return torch.round(weight / scale).clamp(-127, 127).to(torch.int8), scale


@wrong("own", says="cut towards zero")
def _int_cast(weight):
    scale = weight.float().abs().amax(dim=1) / 127
    scale[scale == 0] = 1.0
    return (weight.float() / scale.unsqueeze(1)).to(torch.int8), scale


@right("own")
def _row_by_row(weight):
    rows, scales = [], []
    for row in weight.float():
        largest = row.abs().max()
        s = largest / 127 if largest > 0 else torch.tensor(1.0)
        rows.append(torch.clamp(torch.round(row / s), -127, 127))
        scales.append(s)
    return torch.stack(rows).to(torch.int8), torch.stack(scales)


@right("own")
def _keepdim(weight):
    w = weight.detach().to(torch.float32)
    scale = w.abs().amax(dim=-1, keepdim=True) / 127  # (out, 1)
    scale = scale.masked_fill(scale == 0, 1.0)
    return (w / scale).round().clamp(-127, 127).char(), scale.squeeze(-1)
