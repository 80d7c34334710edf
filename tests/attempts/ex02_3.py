"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import math

import torch

from . import right, wrong

# -- mutants


def _blocks(k, d_model, sign=1.0, exponent_step=2, cos_only=False):
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    for two_i in range(0, d_model, 2):
        w = 1 / 10000 ** ((two_i * exponent_step // 2) / d_model)
        c, s = math.cos(w * k), 0.0 if cos_only else sign * math.sin(w * k)
        m[two_i, two_i], m[two_i, two_i + 1], m[two_i + 1, two_i], m[two_i + 1, two_i + 1] = c, s, -s, c
    return m.float()


@wrong("mutant", "rotates the wrong way (transpose)")
def _wrong_direction(k, d_model):
    return _blocks(k, d_model, sign=-1.0)


@wrong("mutant", "no sin terms")
def _no_sin_terms(k, d_model):
    return _blocks(k, d_model, cos_only=True)


@wrong("mutant", "i instead of 2i in the frequency")
def _wrong_frequency(k, d_model):
    return _blocks(k, d_model, exponent_step=1)


@wrong("mutant", "identity (ignores k)")
def _identity(k, d_model):
    return torch.eye(d_model)


@wrong("mutant", "a shift matrix")
def _shift_matrix(k, d_model):
    return torch.roll(torch.eye(d_model), shifts=k, dims=0)  # moves columns around; not a rotation


@wrong("mutant", "both off-diagonal terms -sin", says="both sin terms are -sin")
def _both_minus_sin(k, d_model):
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(-sin)  # a minus on both: not a rotation
    m[1::2, 0::2] = torch.diag(-sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()


# -- own mistakes and alternatives


def _rotation(k, d_model, angle, swap=False):
    m = torch.zeros(d_model, d_model)
    for two_i in range(0, d_model, 2):
        c, s = math.cos(angle(k, two_i, d_model)), math.sin(angle(k, two_i, d_model))
        c, s = (s, c) if swap else (c, s)
        m[two_i : two_i + 2, two_i : two_i + 2] = torch.tensor([[c, s], [-s, c]])
    return m


@wrong("own", says="cos and sin are swapped")
def _rotation_swapped(k, d_model):
    return _rotation(k, d_model, lambda k, j, d: k / 10000 ** (j / d), swap=True)


@wrong("own", says="k is ignored")
def _rotation_k_ignored(k, d_model):
    return _rotation(k, d_model, lambda k, j, d: 1 / 10000 ** (j / d))


@wrong("own", says="it is its inverse")
def _rotation_inverse_frequency(k, d_model):
    return _rotation(k, d_model, lambda k, j, d: k * 10000 ** (j / d))


# -- tester set 'first'


@wrong("tester", "sin signs swapped: builds M_{-k} (the inverse rotation)", by="first")
def ex02_3_inverse_rotation(k, d_model):
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(-sin)  # signs of sin swapped: M_{-k}
    m[1::2, 0::2] = torch.diag(sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()


@wrong("tester", "returns float64 (forgot .float())", by="first")
def ex02_3_float64(k, d_model):
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(sin)
    m[1::2, 0::2] = torch.diag(-sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m  # forgot .float()


@wrong("tester", "rotation blocks laid out as halves (sin first half, cos second)", by="first")
def ex02_3_halves_blocks(k, d_model):
    half = d_model // 2
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[:half, :half] = torch.diag(cos)  # sin features assumed in the first half
    m[:half, half:] = torch.diag(sin)
    m[half:, :half] = torch.diag(-sin)
    m[half:, half:] = torch.diag(cos)
    return m.float()


@wrong("tester", "both off-diagonal terms +sin (not a rotation)", by="first")
def x02_3_both_plus_sin(k, d_model):
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(sin)
    m[1::2, 0::2] = torch.diag(sin)  # sign forgotten: not a rotation
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()


# -- tester set 'second'


def _rel_pre(d_model):
    if d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be even and >= 2, got {d_model}")


@wrong("tester", "sin signs swapped: rotates the wrong way (M_{-k})", by="second")
def rel_sin_sign(k, d_model):
    _rel_pre(d_model)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(-sin)
    m[1::2, 0::2] = torch.diag(sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()


@wrong("tester", "frequency uses i instead of 2i", by="second")
def rel_i_not_2i(k, d_model):
    _rel_pre(d_model)
    i = torch.arange(0, d_model // 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(sin)
    m[1::2, 0::2] = torch.diag(-sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()


@wrong("tester", "rotation blocks laid out in halves (i, i+D/2) instead of pairs (2i, 2i+1)", by="second")
def rel_halves_blocks(k, d_model):
    _rel_pre(d_model)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    h = d_model // 2
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[:h, :h] = torch.diag(cos)
    m[:h, h:] = torch.diag(sin)
    m[h:, :h] = torch.diag(-sin)
    m[h:, h:] = torch.diag(cos)
    return m.float()


@right("tester", by="second")
def rel_alt(k, d_model):
    _rel_pre(d_model)
    blocks = []
    for i in range(d_model // 2):
        w = 1.0 / (10000.0 ** (2 * i / d_model))
        c, s = math.cos(w * k), math.sin(w * k)
        blocks.append(torch.tensor([[c, s], [-s, c]], dtype=torch.float64))
    return torch.block_diag(*blocks).float()


# -- tester set 'third'


def _rel_guard(d_model):
    if d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be even and >= 2, got {d_model}")


@wrong("tester", "rotation transposed (signs of the sin entries swapped: M_{-k})", by="third")
def rel_transposed(k, d_model):
    _rel_guard(d_model)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(-sin)
    m[1::2, 0::2] = torch.diag(sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()


@wrong("tester", "frequency exponent uses i instead of 2i", by="third")
def rel_i(k, d_model):
    _rel_guard(d_model)
    i = torch.arange(0, d_model // 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(sin)
    m[1::2, 0::2] = torch.diag(-sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()


@wrong("tester", "blocks laid out as halves (sin block / cos block) instead of interleaved pairs", by="third")
def rel_halves(k, d_model):
    _rel_guard(d_model)
    h = d_model // 2
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[:h, :h] = torch.diag(cos)
    m[:h, h:] = torch.diag(sin)
    m[h:, :h] = torch.diag(-sin)
    m[h:, h:] = torch.diag(cos)
    return m.float()
