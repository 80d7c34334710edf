"""Chapter 13 — rotary position embeddings, RoPE (Su et al. 2021, "RoFormer"; Llama and most LLMs).

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

(These are RoFormer's pairs and those of Meta's own Llama code. GPT-NeoX, and Hugging Face's Llama,
pair feature i with feature i + d/2 instead, "halves" (``rotate_half``): the same rotations with the
features in another order. Models trained that way (GPT-NeoX, SmolLM2) are stored that way, and Hugging
Face's copies of Meta's Llama have the rows of W^Q and W^K permuted to suit ``rotate_half``. A checkpoint
of one layout runs in the other once the rows of W^Q and W^K are reordered the same way within each
head, since a score sums over the features in any order: chapter 15's ``rope_halves_to_interleaved``.)
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .cache import Remembering, swapped
from .grouped import GroupedQueryAttention
from .multihead import merge_heads, split_heads


def rope_angles(positions: Tensor, d: int, base: float = 10000.0, dtype: torch.dtype = torch.float32) -> Tensor:
    """The angle of every (position, pair): ``positions[t] · base^(−2i/d)``, computed in ``dtype``.

    Shape:
        positions: (T,) integers → (T, d/2) ``dtype`` (float32 unless float64 is asked for)
    """
    if d % 2:
        raise ValueError(f"rotary embeddings rotate pairs of features: d must be even, got {d}")
    frequencies = base ** (-torch.arange(0, d, 2, dtype=dtype, device=positions.device) / d)  # (d/2,)
    return positions.to(dtype)[:, None] * frequencies  # (T, d/2)


def apply_rope(x: Tensor, positions: Tensor, base: float = 10000.0) -> Tensor:
    """Rotate each pair of features (2i, 2i+1) of ``x`` by the angle ``p · base^(−2i/d)`` of its position.

    Args:
        x: queries or keys (..., T, d), ``d`` even (usually one head's features: (B, H, T, Dk)).
        positions: integer tensor (T,), the position of each of the T rows (a cached decoding
            step passes the positions of its new tokens, not 0 … T-1).
        base: the wavelength scale (10000, as in the paper's sinusoids).

    The angles and the rotation are computed in float32 (half-precision inputs included: an
    angle of position 1000 needs more than float16's 11 bits), or in float64 for float64 inputs.

    Shape:
        x: (..., T, d) with d even, positions: (T,) integers → (..., T, d), in the dtype of ``x``
    """
    if not isinstance(positions, Tensor) or positions.dim() != 1 or positions.dtype.is_floating_point:
        raise ValueError(
            f"positions must be an integer tensor of shape (T,), got {getattr(positions, 'shape', positions)}"
        )
    if x.dim() < 2 or x.shape[-2] != positions.shape[0]:
        raise ValueError(
            f"x must have shape (..., T, d) with T = len(positions) = {positions.shape[0]}, got {tuple(x.shape)}"
        )
    ### BEGIN SOLUTION
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32  # float64 stays float64
    angles = rope_angles(positions, x.shape[-1], base, dtype)  # (T, d/2)
    cos, sin = angles.cos(), angles.sin()  # (T, d/2)
    even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)  # (..., T, d/2): features 2i and 2i+1
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)  # (..., T, d/2, 2)
    return rotated.flatten(-2).to(x.dtype)  # (..., T, d): pairs back in place
    ### END SOLUTION


class Rotary(nn.Module):
    """The position part of :class:`RotaryAttention`: it turns queries and keys, after W^Q and
    W^K, by :func:`apply_rope`. No weights.

    Args:
        base: the wavelength scale of :func:`apply_rope`.

    Shape:
        x: (B, heads, T, d), start: the position of its first row → (B, heads, T, d), rows at
        positions start … start+T-1
    """

    def __init__(self, base: float = 10000.0) -> None:
        super().__init__()
        if not base > 1:
            raise ValueError(f"base must be > 1, got {base}")
        self.base = base

    def forward(self, x: Tensor, start: int) -> Tensor:
        positions = torch.arange(start, start + x.shape[-2], device=x.device)  # (T,): start … start+T-1
        return apply_rope(x, positions, self.base)

    def extra_repr(self) -> str:
        return f"base={self.base}"


class RotaryAttention(GroupedQueryAttention):
    """Self-attention whose queries and keys are rotated by their positions (:func:`apply_rope`)
    after W^Q and W^K: the position enters every score, and nowhere else. It is chapter 04's
    :class:`~transformer_course.multihead.MultiHeadAttention` (with grouped key/value heads where
    ``n_kv_heads`` < H), run on a copy whose W^Q and W^K turn what they project (:class:`Turned`);
    the state dict is the same.

    Args: those of :class:`~transformer_course.grouped.GroupedQueryAttention`, then ``base``, the
    wavelength scale of :func:`apply_rope`.

    The rows of ``query`` are positions 0 … T-1. With chapter 09's KV cache holding L positions,
    W^K returns the L kept keys and the T new ones, and the queries are positions L … L+T-1. The
    cache keeps the keys before the turn; every step turns key j by its own position j, never by
    the position of a later query.

    Shape:
        query = key = value: (B, T, D) (self-attention), mask: bool broadcastable to
        (B, H, T, L+T) → ``(output (B, T, D), weights (B, H, T, L+T) or None)``
    """

    def __init__(self, d_model: int, n_heads: int, d_k: int | None = None, d_v: int | None = None,
                 dropout: float = 0.0, bias: bool = True, n_kv_heads: int | None = None,
                 base: float = 10000.0) -> None:  # fmt: skip
        super().__init__(d_model, n_heads, d_k, d_v, dropout, bias, n_kv_heads)
        if self.d_k % 2:
            raise ValueError(f"rotary attention rotates pairs of features: d_k must be even, got {self.d_k}")
        self.rotary = Rotary(base)

    @property
    def base(self) -> float:
        return self.rotary.base

    def as_multi_head(self) -> nn.Module:
        """A copy (the same weights) whose W^Q and W^K turn what they project (:class:`Turned`),
        then :meth:`GroupedQueryAttention.as_multi_head` of it: chapter 04's forward runs on it.

        W^K returns every key, at positions 0 … S-1. The queries come after the L positions a
        chapter 09 cache holds (its W^K is then a :class:`~transformer_course.cache.Remembering`)."""
        held = len(self.w_k.cache) if isinstance(self.w_k, Remembering) else 0  # L, before this step
        w_q = Turned(self.w_q, self.rotary, self.n_heads, start=held)
        w_k = Turned(self.w_k, self.rotary, self.n_kv_heads, start=0)
        return GroupedQueryAttention.as_multi_head(swapped(self, w_q=w_q, w_k=w_k))

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        super()._check_inputs(query, key, value)
        if key.shape[1] != query.shape[1]:
            raise ValueError("rotary attention is self-attention: query, key and value are the same positions")


class Turned(nn.Module):
    """W^Q or W^K of rotary attention: ``projection``, then each head's rows turned by their
    positions (:class:`Rotary`), the first row at position ``start``.

    Shape:
        x: (B, R, D) → (B, R, heads·d), rows at positions start … start+R-1
    """

    def __init__(self, projection: nn.Module, rotary: Rotary, n_heads: int, start: int) -> None:
        super().__init__()
        self.projection, self.rotary, self.n_heads, self.start = projection, rotary, n_heads, start

    def forward(self, x: Tensor) -> Tensor:
        heads = split_heads(self.projection(x), self.n_heads)  # (B, heads, R, d)
        return merge_heads(self.rotary(heads, self.start))  # (B, R, heads·d)
