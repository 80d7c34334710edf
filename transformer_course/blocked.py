"""Chapter 13 — attention one block of keys at a time, with an online softmax (the idea of
FlashAttention, Dao et al. 2022).

Chapter 03's attention builds the whole (T, S) matrix of weights: T·S numbers per head, which for
long sequences is more memory than the model itself. But each output row is a weighted mean of the
values, and a softmax can be computed *online*: read the keys in blocks, and keep for each query
only three running quantities,

* ``top``: the largest score seen so far (for numerical safety, as in any softmax),
* ``total``: the sum of exp(score − top) over the keys seen so far,
* ``acc``: the sum of exp(score − top) · value over the keys seen so far.

When a block brings a larger maximum, what was summed under the old one is rescaled by
exp(old top − new top); at the end, ``acc / total`` is exactly softmax(scores) · V. Memory per query: one
block of scores, never the full row. (FlashAttention also tiles the queries and keeps the tiles
in the GPU's fast on-chip memory; this is the arithmetic, in plain PyTorch.)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._validate import check_mask


def online_softmax_update(
    top: Tensor, total: Tensor, acc: Tensor, scores: Tensor, values: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """Take one block of keys into the running maximum ``top``, sum ``total`` and weighted sum ``acc``.

    Shape:
        top, total: (..., T, 1); acc: (..., T, Dv); scores: (..., T, Sb) (masked scores already at
        the dtype's minimum); values: (..., Sb, Dv) → (top, total, acc) of the same shapes
    """
    ### BEGIN SOLUTION
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))  # (..., T, 1)
    rescale = torch.exp(top - new_top)  # (..., T, 1): what was summed under the old maximum
    weights = torch.exp(scores - new_top)  # (..., T, Sb), not yet normalised
    total = total * rescale + weights.sum(dim=-1, keepdim=True)  # (..., T, 1)
    acc = acc * rescale + weights @ values  # (..., T, Dv)
    return new_top, total, acc
    ### END SOLUTION


def blocked_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, block_size: int = 64) -> Tensor:
    """softmax(Q Kᵀ / √d_k) V over blocks of ``block_size`` keys, never holding all the weights.

    Equal to ``F.scaled_dot_product_attention(q, k, v, attn_mask=mask)`` (to rounding), and to
    chapter 03's teaching path also on a fully masked row (uniform weights: the mean of the values).

    Args:
        q: (..., T, Dk); k: (..., S, Dk); v: (..., S, Dv).
        mask: bool, broadcastable to (..., T, S), True = may attend.
        block_size: keys per block (≥ 1).

    Shape:
        → (..., T, Dv)
    """
    if not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be an integer >= 1, got {block_size!r}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"need q (..., T, Dk), k (..., S, Dk), v (..., S, Dv), got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    length, keys = q.shape[-2], k.shape[-2]
    if mask is not None:
        check_mask(mask, (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), length, keys))
    lowest = torch.finfo(q.dtype).min
    q = q / math.sqrt(q.shape[-1])  # scale once, not every block
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    top = q.new_full((*lead, length, 1), lowest)  # (..., T, 1)
    total = q.new_zeros((*lead, length, 1))  # (..., T, 1)
    acc = q.new_zeros((*lead, length, v.shape[-1]))  # (..., T, Dv)
    for start in range(0, keys, block_size):
        stop = min(start + block_size, keys)
        scores = q @ k[..., start:stop, :].transpose(-2, -1)  # (..., T, Sb)
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:stop] if mask.shape[-1] > 1 else ~mask, lowest)  # (..., T, Sb)
        top, total, acc = online_softmax_update(top, total, acc, scores, v[..., start:stop, :])
    return acc / total  # (..., T, Dv)
