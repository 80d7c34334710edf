"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import math

import torch

from . import right, wrong

# -- mutants


def _angles(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),)
    return position / 10000 ** (two_i / d_model)  # (max_len, ceil(D/2))


def _table(sin, cos, max_len, d_model):
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = sin
    table[:, 1::2] = cos[:, : d_model // 2]
    return table.float()


@wrong("mutant", "sin and cos swapped")
def _sin_cos_swapped(max_len, d_model):
    angle = _angles(max_len, d_model)
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.cos(angle)
    table[:, 1::2] = torch.sin(angle[:, : d_model // 2])
    return table.float()


@wrong("mutant", "[sin | cos] halves instead of interleaved")
def _halves(max_len, d_model):
    angle = _angles(max_len, d_model)
    return torch.cat([torch.sin(angle), torch.cos(angle[:, : d_model // 2])], dim=1).float()


@wrong("mutant", "column index j in the exponent")
def _column_index_exponent(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float64)[:, None]
    column = torch.arange(d_model, dtype=torch.float64)
    angle = position / 10000 ** (column / d_model)  # odd columns get the next pair's frequency
    table = torch.where(column.long() % 2 == 0, torch.sin(angle), torch.cos(angle))
    return table.float()


@wrong("mutant", "i instead of 2i in the exponent")
def _i_instead_of_2i(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float64)[:, None]
    i = torch.arange((d_model + 1) // 2, dtype=torch.float64)
    angle = position / 10000 ** (i / d_model)
    return _table(torch.sin(angle), torch.cos(angle), max_len, d_model)


@wrong("mutant", "crashes on an odd d_model")
def _odd_d_model_crash(max_len, d_model):
    angle = _angles(max_len, d_model)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)  # shape error when d_model is odd
    return table


@wrong("mutant", "positions start at 1")
def _positions_from_one(max_len, d_model):
    angle = _angles(max_len + 1, d_model)[1:]
    return _table(torch.sin(angle), torch.cos(angle), max_len, d_model)


@wrong("mutant", "returns float64")
def _float64(max_len, d_model):
    angle = _angles(max_len, d_model)
    return _table(torch.sin(angle), torch.cos(angle), max_len, d_model).double()


@wrong("mutant", "base 1000 instead of 10000")
def _base_1000(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = position / 1000 ** (two_i / d_model)
    return _table(torch.sin(angle), torch.cos(angle), max_len, d_model)


# -- own mistakes and alternatives


def _sinusoids(max_len, d_model, exponent_sign=-1.0, sines_only=False):
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    frequency = 10000.0 ** (exponent_sign * torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    angles = position * frequency  # (max_len, ceil(d/2))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = (torch.sin if sines_only else torch.cos)(angles)[:, : d_model // 2]
    return table


@wrong("own", says="multiplied by 10000")
def _table_positive_exponent(max_len, d_model):
    return _sinusoids(max_len, d_model, exponent_sign=1.0)


@wrong("own", says="every column holds a sine")
def _table_sines_only(max_len, d_model):
    return _sinusoids(max_len, d_model, sines_only=True)


@wrong("own", says="the table is transposed")
def _table_transposed(max_len, d_model):
    return _sinusoids(max_len, d_model).T


# -- tester set 'first'


@wrong("tester", "exponent uses i instead of 2i (frequencies 10000^(i/D))", by="first")
def ex02_1_i_not_2i(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    i = torch.arange(0, (d_model + 1) // 2, dtype=torch.float32)  # i instead of 2i
    frequency = torch.exp(-math.log(10000.0) * i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table


@wrong("tester", "cos in the even columns, sin in the odd ones", by="first")
def ex02_1_sin_cos_swapped(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.cos(angle)
    table[:, 1::2] = torch.sin(angle[:, : d_model // 2])
    return table


@wrong("tester", "cos assigned to all of angle: shape error for odd d_model", by="first")
def ex02_1_odd_d_crash(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)  # shape error when d_model is odd
    return table


@right("tester", by="first")
def ex02_1_alt_pow(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    denom = torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angle = pos / denom
    table = torch.empty(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = angle.sin()
    table[:, 1::2] = angle.cos()[:, : d_model // 2]
    return table.float()


@wrong("tester", "positions counted from 1 instead of 0", by="first")
def x02_1_positions_from_1(max_len, d_model):
    position = torch.arange(1, max_len + 1, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    angle = position * torch.exp(-math.log(10000.0) * two_i / d_model)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table


# -- tester set 'second'


def _pe_pre(max_len, d_model):
    if max_len < 1 or d_model < 1:
        raise ValueError(f"max_len and d_model must be >= 1, got max_len={max_len}, d_model={d_model}")


@wrong("tester", "exponent uses i instead of 2i (frequencies too low)", by="second")
def pe_i_not_2i(max_len, d_model):
    _pe_pre(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    i = torch.arange(0, (d_model + 1) // 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table


@wrong("tester", "cos on even features, sin on odd (swapped)", by="second")
def pe_sin_cos_swapped(max_len, d_model):
    _pe_pre(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.cos(angle)
    table[:, 1::2] = torch.sin(angle[:, : d_model // 2])
    return table


@wrong("tester", "cos(angle) not cut for odd d_model (shape error for odd D)", by="second")
def pe_odd_crash(max_len, d_model):
    _pe_pre(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


@right("tester", by="second")
def pe_alt(max_len, d_model):
    _pe_pre(max_len, d_model)
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    denom = torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    ang = pos / denom
    out = torch.empty(max_len, d_model, dtype=torch.float64)
    out[:, 0::2] = ang.sin()
    out[:, 1::2] = ang.cos()[:, : d_model // 2]
    return out.float()


# -- tester set 'third'


def _pe_guard(max_len, d_model):
    if max_len < 1 or d_model < 1:
        raise ValueError(f"max_len and d_model must be >= 1, got max_len={max_len}, d_model={d_model}")


@wrong("tester", "sin and cos swapped (cos on even columns, sin on odd)", by="third")
def pe_swapped(max_len, d_model):
    _pe_guard(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.cos(angle)
    table[:, 1::2] = torch.sin(angle[:, : d_model // 2])
    return table


@wrong("tester", "exponent i/d_model instead of 2i/d_model", by="third")
def pe_i_not_2i_third(max_len, d_model):
    _pe_guard(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    i = torch.arange(0, (d_model + 1) // 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table


@wrong("tester", "cos of every angle assigned to the odd columns: breaks for odd d_model", by="third")
def pe_odd_crash_third(max_len, d_model):
    _pe_guard(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


@right("tester", by="third")
def pe_alt_third(max_len, d_model):
    _pe_guard(max_len, d_model)
    table = torch.empty(max_len, d_model, dtype=torch.float64)
    pos = torch.arange(max_len, dtype=torch.float64)
    for col in range(d_model):
        two_i = col - col % 2
        angle = pos / (10000.0 ** (two_i / d_model))
        table[:, col] = torch.sin(angle) if col % 2 == 0 else torch.cos(angle)
    return table.float()
