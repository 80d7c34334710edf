"""Small input checks shared by the modules: clear errors instead of silent broadcasting."""

from __future__ import annotations

import torch
from torch import Tensor


def check_token_ids(tokens: Tensor, vocab_size: int, name: str = "tokens") -> None:
    """Raise ``ValueError`` unless ``tokens`` holds integer ids in ``[0, vocab_size)``."""
    if not isinstance(tokens, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(tokens).__name__}")
    if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer token ids (torch.long), got dtype {tokens.dtype}")
    if tokens.numel() == 0:
        return
    low, high = int(tokens.min()), int(tokens.max())
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise ValueError(f"{name} contains id {bad}, outside the vocabulary range [0, {vocab_size})")


def check_ndim(x: Tensor, ndim: int, name: str, shape_doc: str) -> None:
    """Raise ``ValueError`` unless ``x`` has ``ndim`` dimensions (``shape_doc`` names them)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor {shape_doc}, got {type(x).__name__}")
    if x.dim() != ndim:
        raise ValueError(f"{name} must have shape {shape_doc}, got {tuple(x.shape)}")


def check_mask(mask: Tensor | None, target_shape: tuple[int, ...], name: str = "mask") -> None:
    """Check that a boolean attention mask broadcasts to ``target_shape`` (e.g. (B, H, T, S)).

    Every dimension of the mask must be 1 or equal to the matching dimension of the target:
    a mask of the wrong length is an error, never silently broadcast.
    """
    if mask is None:
        return
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name} must be a bool torch.Tensor or None, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise ValueError(
            f"{name} must be a bool tensor with True = may attend, got dtype {mask.dtype} "
            "(an additive float mask or a 0/1 int mask is ambiguous: convert it with mask.bool())"
        )
    if mask.dim() > len(target_shape):
        raise ValueError(f"{name} has shape {tuple(mask.shape)}, which does not broadcast to {target_shape}")
    for size, want in zip(reversed(mask.shape), reversed(target_shape), strict=False):
        if size not in (1, want):
            raise ValueError(
                f"{name} has shape {tuple(mask.shape)}, which does not broadcast to {target_shape} "
                "(each dimension must be 1 or match; expected e.g. (B, 1, 1, S) or (T, S))"
            )
