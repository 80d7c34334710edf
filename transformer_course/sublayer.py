"""Chapter 05 — residual connection + layer normalisation around a sub-layer (paper §3.1, §5.4).

post-LN (the paper):  x = LayerNorm(x + Dropout(Sublayer(x)))
pre-LN  (common now): x = x + Dropout(Sublayer(LayerNorm(x)))
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn


def residual(
    x: Tensor, sublayer: Callable[[Tensor], Tensor], norm: nn.LayerNorm, dropout: nn.Dropout, norm_first: bool
) -> Tensor:
    """Wrap ``sublayer`` in a residual connection with layer normalisation.

    ``norm_first=False`` is the paper's post-LN order, ``True`` the pre-LN order.

    Shape:
        x: (B, T, D) → (B, T, D)
    """
    ### BEGIN SOLUTION
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))
    ### END SOLUTION
