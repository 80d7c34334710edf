"""Chapter 13 — RMSNorm: LayerNorm without the mean (Zhang & Sennrich 2019; Llama, Mistral, Gemma).

    RMSNorm(x) = x / √(mean(x²) + ε) · g

LayerNorm (chapter 05) subtracts the mean of the features and divides by their standard
deviation, then scales and shifts. RMSNorm only divides by the root mean square and scales: no
mean, no shift (β), so it is a little cheaper, and in practice trains as well. Like LayerNorm it
acts on each position's D features separately.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class RMSNorm(nn.Module):
    """Divide each position's features by their root mean square, then scale by a learned ``weight``.

    Equal to ``torch.nn.RMSNorm(d_model, eps)`` with the same weight.

    Args:
        d_model: number of features D (the last dimension of the input).
        eps: added to the mean square before the square root (no division by zero).

    Shape:
        x: (..., D) → (..., D): any number of leading axes, the mean over the last one
    """

    def __init__(self, d_model: int, eps: float = 1e-6) -> None:
        super().__init__()
        if d_model < 1:
            raise ValueError(f"d_model must be >= 1, got {d_model}")
        if not eps > 0:
            raise ValueError(f"eps must be > 0, got {eps}")
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # g, one scale per feature

    def forward(self, x: Tensor) -> Tensor:
        if x.shape[-1] != self.weight.shape[0]:
            raise ValueError(f"x must have last dimension d_model={self.weight.shape[0]}, got {tuple(x.shape)}")
        ### BEGIN SOLUTION
        mean_square = x.pow(2).mean(dim=-1, keepdim=True)  # (..., 1)
        return x * torch.rsqrt(mean_square + self.eps) * self.weight  # (..., D)
        ### END SOLUTION

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"
