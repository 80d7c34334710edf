"""Chapter 03 — scaled dot-product attention (paper §3.2.1, equation 1).

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

Two paths give the same numbers:

* the **teaching path** (:func:`scaled_dot_product_attention`) writes every step out and
  returns the attention weights, so they can be looked at and plotted;
* the **fast path** (:func:`fast_attention`) calls PyTorch's
  ``F.scaled_dot_product_attention``, one kernel that never materialises the weights.

Masks are boolean with **True = may attend**, broadcastable to (B, H, T, S).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from . import _validate
from ._validate import check_mask


def _check_qkv(q: Tensor, k: Tensor, v: Tensor) -> None:
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, Tensor) or x.dim() < 2:
            raise ValueError(f"{name} must be a tensor of shape (..., length, features), got {getattr(x, 'shape', x)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share the last dimension d_k, got q {tuple(q.shape)} and k {tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same length S, got k {tuple(k.shape)} and v {tuple(v.shape)}")
    try:  # leading (batch, head) dimensions must match or be 1
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(
            "q, k and v must have the same leading (batch, head) dimensions, got "
            f"q {tuple(q.shape)}, k {tuple(k.shape)} and v {tuple(v.shape)}"
        ) from None


def attention_scores(q: Tensor, k: Tensor) -> Tensor:
    """Similarity of every query with every key, scaled by 1/√d_k.

    Shape:
        q: (..., T, Dk), k: (..., S, Dk) → scores (..., T, S); the leading axes ``...`` can be anything:
        none, a batch (B,), or a batch and heads (B, H)
    """
    ### BEGIN SOLUTION
    d_k = q.shape[-1]
    return q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T, S)
    ### END SOLUTION


def apply_mask(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Return ``scores`` with every position where ``mask`` is False set to the dtype's minimum.

    ``torch.finfo(dtype).min`` rather than ``-inf``: a fully masked row then gets a uniform
    softmax (finite) instead of NaN, and rather than ``-1e9``: that overflows in float16.
    The input is not modified.

    Shape:
        scores: (..., T, S); mask: bool, broadcastable to scores, e.g. (B, 1, S) for padding or (T, S)
        for a causal mask; True = may attend
    """
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    ### BEGIN SOLUTION
    return scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    ### END SOLUTION


def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0
) -> tuple[Tensor, Tensor]:
    """Equation 1 of the paper, step by step (the teaching path).

    Args:
        q, k, v: the queries, keys and values.
        mask: bool, True = may attend.
        dropout_p: dropout on the attention weights (not in the paper's §5.4, which drops sub-layer
            outputs, but done by its reference code and by ``nn.MultiheadAttention``); 0.0 at evaluation.

    Returns:
        ``(output, weights)``, the weights returned before dropout.

    Shape:
        q: (..., T, Dk), k: (..., S, Dk), v: (..., S, Dv), mask: broadcastable to (..., T, S)
        → output (..., T, Dv), weights (..., T, S); every row of the weights sums to 1
    """
    _check_qkv(q, k, v)
    ### BEGIN SOLUTION
    scores = apply_mask(attention_scores(q, k), mask)  # (..., T, S)
    weights = scores.softmax(dim=-1)  # (..., T, S), rows sum to 1
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights  # (..., T, Dv), (..., T, S)
    ### END SOLUTION


def is_causal_mask(mask: Tensor | None) -> bool:
    """Whether ``mask`` says that it is a square causal mask (position t sees 0 … t, chapter 06's):
    its attribute ``is_causal_mask`` is true (chapter 13's ``lm.mark_causal`` sets it)."""
    return getattr(mask, "is_causal_mask", False)


def fast_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0, is_causal: bool = False
) -> Tensor:
    """The same computation through PyTorch's one-kernel attention (no weights returned).

    The boolean mask (True = may attend) is handed to ``F.scaled_dot_product_attention``,
    which uses the same polarity. Only a fully masked query row needs care: PyTorch's answer
    for it depends on the version (NaN in older releases, zeros in newer ones), while the
    teaching path gives it uniform weights, the mean of the values. So such a row is
    unmasked and its query zeroed: every score is then 0 and the weights are exactly uniform,
    in any dtype. On a CPU the fix is applied only when some row is empty (rare; the copy of
    ``q`` it needs costs more than asking). On a GPU it is applied always: asking
    (``empty.any()``) would make the CPU wait for the GPU, and the fix leaves the other rows
    unchanged. ``is_causal=True`` (with no mask) lets PyTorch skip building the causal mask, and so
    does a square causal mask that says so (:func:`is_causal_mask`: chapter 13's language model marks
    the one it makes): PyTorch then gets ``is_causal=True`` instead of the mask, which on a GPU lets it
    take its flash kernel (a kernel that reads no mask).

    Shape:
        q: (..., T, Dk), k: (..., S, Dk), v: (..., S, Dv) → (..., T, Dv)
    """
    _check_qkv(q, k, v)
    if is_causal_mask(mask) and q.shape[-2] == k.shape[-2]:  # chapter 13: the kernel needs no mask to read
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)
    if mask is not None:
        check_mask(mask, (*q.shape[:-1], k.shape[-2]))
        if mask.dim() == 1:  # (S,): the same keys for every query; PyTorch's kernel wants a (T, S) mask
            mask = mask.expand(q.shape[-2], -1)  # (T, S)
        empty = ~mask.any(dim=-1, keepdim=True)  # (..., T, 1): rows with nothing to attend to
        if not _validate.reads_are_free(q) or empty.any():  # on a GPU, asking would wait for it: just fix
            q = q.masked_fill(empty, 0.0)  # zero query → equal scores → uniform weights
            mask = mask | empty  # an empty row may attend everywhere; other rows are unchanged
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal)


def band_mask(size: int, r: int, device: torch.device | str | None = None) -> Tensor:
    """Restricted self-attention's mask (paper §4, Table 1's last row): position t may attend to the
    positions at most ``r`` away on either side, itself included (True = may attend).

    Shape:
        → (size, size) bool, broadcastable to (B, H, T, T)
    """
    if size < 1 or r < 0:
        raise ValueError(f"size must be >= 1 and r >= 0, got size={size}, r={r}")
    ### BEGIN SOLUTION
    positions = torch.arange(size, device=device)  # (T,)
    return (positions[:, None] - positions[None, :]).abs() <= r  # (T, T): |t - s| <= r
    ### END SOLUTION
