"""Chapter 10 — rotary position embeddings, RoPE (Su et al. 2021, "RoFormer"; Llama and most LLMs).

Chapter 02 added a sinusoid table to the token embeddings, and its caveat was that the product
PE(p)·PE(q) depends only on p − q, but the scores attention computes, (x W^Q)·(y W^K), no longer
do once W^Q and W^K mix the features. Rotary embeddings put the position where the score is made:
after the projections, each query and key is *rotated*, pair of features by pair of features, by
an angle proportional to its position. A rotation by angle a followed by the inverse of a rotation
by angle b is a rotation by a − b, so the score of a query at p and a key at q depends on their
contents and on p − q only, whatever W^Q and W^K are.

Pairs and angles follow chapter 02's table: features (2i, 2i+1) form pair i, rotated at position
p by the angle p · base^(−2i/d), so the first pairs turn fast and the last ones slowly:

    out[2i]   = x[2i] cos θ − x[2i+1] sin θ
    out[2i+1] = x[2i] sin θ + x[2i+1] cos θ,     θ = p · base^(−2i/d)

(Some libraries pair feature i with feature i + d/2 instead, "half-split"; the two are the same
idea with the features in another order, but their weights do not load into each other.)
"""

from __future__ import annotations

import torch
from torch import Tensor


def rope_angles(positions: Tensor, d: int, base: float = 10000.0) -> Tensor:
    """The angle of every (position, pair): ``positions[t] · base^(−2i/d)``.

    Shape:
        positions: (T,) integers → (T, d/2) float32
    """
    if d % 2:
        raise ValueError(f"rotary embeddings rotate pairs of features: d must be even, got {d}")
    frequencies = base ** (-torch.arange(0, d, 2, dtype=torch.float32, device=positions.device) / d)  # (d/2,)
    return positions.to(torch.float32)[:, None] * frequencies  # (T, d/2)


def apply_rope(x: Tensor, positions: Tensor, base: float = 10000.0) -> Tensor:
    """Rotate each pair of features (2i, 2i+1) of ``x`` by the angle ``p · base^(−2i/d)`` of its position.

    Args:
        x: queries or keys (..., T, d), ``d`` even (usually one head's features: (B, H, T, Dk)).
        positions: integer tensor (T,), the position of each of the T rows (a cached decoding
            step passes the positions of its new tokens, not 0 … T-1).
        base: the wavelength scale (10000, as in the paper's sinusoids).

    Shape:
        x: (..., T, d), positions: (T,) → (..., T, d), the dtype of x
    """
    if not isinstance(positions, Tensor) or positions.dim() != 1 or positions.dtype.is_floating_point:
        raise ValueError(
            f"positions must be an integer tensor of shape (T,), got {getattr(positions, 'shape', positions)}"
        )
    if x.dim() < 2 or x.shape[-2] != positions.shape[0]:
        raise ValueError(
            f"x must have shape (..., T, d) with T = len(positions) = {positions.shape[0]}, got {tuple(x.shape)}"
        )
    angles = rope_angles(positions, x.shape[-1], base)  # (T, d/2)
    cos, sin = angles.cos(), angles.sin()  # (T, d/2)
    even, odd = x[..., 0::2].float(), x[..., 1::2].float()  # (..., T, d/2): features 2i and 2i+1
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)  # (..., T, d/2, 2)
    return rotated.flatten(-2).to(x.dtype)  # (..., T, d): pairs back in place
