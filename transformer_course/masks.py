"""Chapter 06 — the two masks of the Transformer (paper §3.2.3).

Convention of the whole course: a mask is boolean and **True means "may attend"**, the same
polarity as ``F.scaled_dot_product_attention``. (``nn.MultiheadAttention``'s ``attn_mask`` and
``key_padding_mask`` use the opposite: True = blocked.)
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._validate import check_ndim


def causal_mask(size: int, device: torch.device | str | None = None) -> Tensor:
    """Lower-triangular mask: position t may attend to positions 0…t, never to the future.

    Shape:
        → (size, size) bool, broadcastable to (B, H, T, T)
    """
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    ### BEGIN SOLUTION
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()  # (T, T)
    ### END SOLUTION


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """True where ``tokens`` holds a real token, False at padding, shaped to broadcast over
    heads and query positions.

    Shape:
        tokens: (B, S) → (B, 1, 1, S) bool
    """
    check_ndim(tokens, 2, "tokens", "(B, S)")
    ### BEGIN SOLUTION
    return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, S)
    ### END SOLUTION


def target_mask(tgt: Tensor, pad_id: int) -> Tensor:
    """Decoder self-attention mask: causal and not attending to target padding.

    Shape:
        tgt: (B, T) → (B, 1, T, T) bool
    """
    return padding_mask(tgt, pad_id) & causal_mask(tgt.shape[1], device=tgt.device)  # (B, 1, T, T)
