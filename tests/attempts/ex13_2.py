"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch
from torch import Tensor

from transformer_course.rotary import rope_angles

from . import right, wrong

# -- mutants


def _rope_with(x, positions, base, split):
    """Rotation by ``rope_angles(positions)``; ``split(x)`` gives the two halves of each pair and how to put them back."""
    angles = rope_angles(positions, x.shape[-1], base)
    cos, sin = angles.cos(), angles.sin()
    first, second, join = split(x.float())
    return join(first * cos - second * sin, first * sin + second * cos).to(x.dtype)


def _interleaved(x):
    return x[..., 0::2], x[..., 1::2], lambda a, b: torch.stack([a, b], dim=-1).flatten(-2)


def _halves(x):
    half = x.shape[-1] // 2
    return x[..., :half], x[..., half:], lambda a, b: torch.cat([a, b], dim=-1)


@wrong("mutant", "half-split pairs (i, i + d/2)", says="half-split")
def _half_split_pairs(x, positions, base=10000.0):
    return _rope_with(x, positions, base, _halves)  # pairs (i, i + d/2), as some libraries order them


@wrong("mutant", "positions ignored (0 … T-1)", says="ignores positions")
def _positions_ignored(x, positions, base=10000.0):
    return _rope_with(x, torch.arange(x.shape[-2]), base, _interleaved)  # rows taken as positions 0 … T-1


@wrong("mutant", "rotates by −θ", says="rotates the wrong way")
def _rotates_backwards(x, positions, base=10000.0):
    return _rope_with(x, -positions, base, _interleaved)


@wrong("mutant", "float64 computed in float32")
def _float64_in_float32(x, positions, base=10000.0):
    return _rope_with(x, positions, base, _interleaved)  # every dtype through float32, float64 included


@wrong("mutant", "base ignored")
def _base_ignored(x, positions, base=10000.0):
    return _rope_with(x, positions, 10000.0, _interleaved)


@wrong("mutant", "returns float32 for bfloat16 input")
def _float32_out(x, positions, base=10000.0):
    return _rope_with(x, positions, base, _interleaved).float()  # bfloat16 keys come back as float32


@wrong("mutant", "pairs rotated but put back as two halves")
def _pairs_concatenated_not_interleaved(x, positions, base=10000.0):
    even, odd = x[..., 0::2], x[..., 1::2]
    angles = rope_angles(positions, x.shape[-1], base)
    rotated = [even * angles.cos() - odd * angles.sin(), even * angles.sin() + odd * angles.cos()]
    return torch.cat(rotated, dim=-1).to(x.dtype)  # the pairs rotated right, but put back as two halves


@wrong("mutant", "computed in bfloat16 for a bfloat16 input", says="computed in bfloat16")
def _in_bfloat16(x, positions, base=10000.0):
    angles = rope_angles(positions, x.shape[-1], base, x.dtype)  # (T, d/2) in x's dtype: bfloat16 stays bfloat16
    even, odd = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack([even * angles.cos() - odd * angles.sin(), even * angles.sin() + odd * angles.cos()], -1)
    return rotated.flatten(-2)


# -- own mistakes and alternatives


def _rope(x, positions, base, rule):
    d = x.shape[-1]
    theta = positions.double()[:, None] * base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    cos, sin = theta.cos(), theta.sin()
    even, odd = x.double()[..., 0::2], x.double()[..., 1::2]
    return torch.stack(rule(even, odd, cos, sin), dim=-1).flatten(-2).to(x.dtype)


@wrong("own", says="the new 2i is used")
def _rope_sequential(x, positions, base=10000.0):
    def rule(even, odd, cos, sin):
        even = even * cos - odd * sin  # overwrites x2i before the second line reads it
        return even, even * sin + odd * cos

    return _rope(x, positions, base, rule)


@wrong("own", says="sin and cos are swapped")
def _rope_sin_cos_swapped(x, positions, base=10000.0):
    return _rope(x, positions, base, lambda e, o, c, s: (e * s - o * c, e * c + o * s))


@wrong("own", says="only the even features")
def _rope_even_only(x, positions, base=10000.0):
    return _rope(x, positions, base, lambda e, o, c, s: (e * c - o * s, o))


# -- tester set 'first'


@wrong("tester", "rotates the wrong way (sin signs flipped)", by="first")
def ex13_2_inverse_rotation(x, positions, base=10000.0):
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)
    rotated = torch.stack([even * cos + odd * sin, -even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2).to(x.dtype)


@wrong("tester", "pairs feature i with i + d/2 (Llama's halves) instead of (2i, 2i+1)", by="first")
def ex13_2_halves(x, positions, base=10000.0):
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    half = x.shape[-1] // 2
    first, second = x[..., :half].to(dtype), x[..., half:].to(dtype)  # Llama's rotate_half pairing
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1).to(x.dtype)


@wrong("tester", "ignores positions, always uses 0…T-1", by="first")
def ex13_2_ignores_positions(x, positions, base=10000.0):
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    positions = torch.arange(x.shape[-2], device=x.device)  # always 0 … T-1
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2).to(x.dtype)


@right("tester", by="first")
def ex13_2_alt_complex(x, positions, base=10000.0):
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    d = x.shape[-1]
    freq = 1.0 / base ** (torch.arange(0, d, 2, dtype=dtype, device=x.device) / d)
    angles = positions.to(dtype)[:, None] * freq
    z = torch.view_as_complex(x.to(dtype).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    out = torch.view_as_real(z * torch.polar(torch.ones_like(angles), angles))
    return out.reshape(x.shape).to(x.dtype)


@wrong(
    "tester",
    "angles made in float32, cos/sin and the rotation in x's dtype (float16 stays float16; float64 gets float32-precision angles)",
    by="first",
)
def x10_2_angles_in_x_dtype(x, positions, base=10000.0):
    dtype = x.dtype  # cos/sin and rotation in x's dtype; angles from float32
    angles = rope_angles(positions, x.shape[-1], base, torch.float32).to(dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)


# -- tester set 'second'


def _rope_pre(x, positions):
    if not isinstance(positions, Tensor) or positions.dim() != 1 or positions.dtype.is_floating_point:
        raise ValueError("positions must be an integer tensor of shape (T,)")
    if x.dim() < 2 or x.shape[-2] != positions.shape[0]:
        raise ValueError("x must have shape (..., T, d) with T = len(positions)")


@wrong("tester", "rotates by -angle (sin sign flipped)", by="second")
def rope_inverse_rotation(x, positions, base=10000.0):
    _rope_pre(x, positions)
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)
    rotated = torch.stack([even * cos + odd * sin, -even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2).to(x.dtype)


@wrong("tester", "pairs (i, i+d/2) (halves layout) instead of (2i, 2i+1)", by="second")
def rope_halves_pairs(x, positions, base=10000.0):
    _rope_pre(x, positions)
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    h = x.shape[-1] // 2
    a, b = x[..., :h].to(dtype), x[..., h:].to(dtype)
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1).to(x.dtype)


@wrong("tester", "positions argument ignored: uses arange(T)", by="second")
def rope_positions_ignored(x, positions, base=10000.0):
    _rope_pre(x, positions)
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(torch.arange(x.shape[-2], device=x.device), x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2).to(x.dtype)


@right("tester", by="second")
def rope_alt(x, positions, base=10000.0):
    _rope_pre(x, positions)
    real = torch.float64 if x.dtype == torch.float64 else torch.float32
    cplx = torch.complex128 if real == torch.float64 else torch.complex64
    d = x.shape[-1]
    freqs = 1.0 / (base ** (torch.arange(0, d, 2, dtype=real, device=x.device) / d))
    angles = positions.to(real)[:, None] * freqs
    rot = torch.polar(torch.ones_like(angles), angles).to(cplx)
    z = torch.view_as_complex(x.to(real).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * rot).reshape(x.shape).to(x.dtype)


# -- tester set 'third'


def _rope_guard(x, positions):
    if not isinstance(positions, torch.Tensor) or positions.dim() != 1 or positions.dtype.is_floating_point:
        raise ValueError(
            f"positions must be an integer tensor of shape (T,), got {getattr(positions, 'shape', positions)}"
        )
    if x.dim() < 2 or x.shape[-2] != positions.shape[0]:
        raise ValueError(
            f"x must have shape (..., T, d) with T = len(positions) = {positions.shape[0]}, got {tuple(x.shape)}"
        )


@wrong("tester", "pairs taken as halves (i, i + d/2), Llama's layout, not (2i, 2i+1)", by="third")
def rope_halves(x, positions, base=10000.0):
    _rope_guard(x, positions)
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    h = x.shape[-1] // 2
    first, second = x[..., :h].to(dtype), x[..., h:].to(dtype)
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1).to(x.dtype)


@wrong("tester", "rotates the wrong way (sign of sin flipped)", by="third")
def rope_wrong_sign(x, positions, base=10000.0):
    _rope_guard(x, positions)
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)
    rotated = torch.stack([even * cos + odd * sin, -even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2).to(x.dtype)


@wrong("tester", "base argument ignored (always 10000)", by="third")
def rope_no_base(x, positions, base=10000.0):
    _rope_guard(x, positions)
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], 10000.0, dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2).to(x.dtype)


@right("tester", by="third")
def rope_alt_third(x, positions, base=10000.0):
    _rope_guard(x, positions)
    d = x.shape[-1]
    if x.dtype == torch.float64:
        cdt, rdt = torch.complex128, torch.float64
    else:
        cdt, rdt = torch.complex64, torch.float32
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=rdt, device=x.device) / d))
    ang = positions.to(rdt)[:, None] * inv
    rot = torch.polar(torch.ones_like(ang), ang).to(cdt)
    xc = torch.view_as_complex(x.to(rdt).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    out = torch.view_as_real(xc * rot).reshape(x.shape)
    return out.to(x.dtype)
