"""Chapter 05 — the position-wise feed-forward network (paper §3.3, equation 2).

    FFN(x) = max(0, x W₁ + b₁) W₂ + b₂

The same two-layer network is applied to every position separately (it never mixes positions:
that is attention's job).
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn

from .sublayer import build_part


class PositionwiseFeedForward(nn.Module):
    """Two linear layers with a ReLU between them, D → d_ff → D.

    Dropout sits after the ReLU, where ``nn.TransformerEncoderLayer`` puts it.

    Shape:
        x: (B, T, D) → (B, T, D)
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)  # W₁, b₁
        self.linear2 = nn.Linear(d_ff, d_model)  # W₂, b₂
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        ### BEGIN SOLUTION
        hidden = self.dropout(self.linear1(x).relu())  # (B, T, d_ff)
        return self.linear2(hidden)  # (B, T, D)
        ### END SOLUTION


def make_feed_forward(
    feed_forward: Callable[[int, int, float], nn.Module] | None, d_model: int, d_ff: int, dropout: float
) -> nn.Module:
    """A layer's feed-forward sub-layer: ``feed_forward(d_model, d_ff, dropout)`` if that part is
    given, else the paper's :class:`PositionwiseFeedForward`."""
    if feed_forward is None:
        return PositionwiseFeedForward(d_model, d_ff, dropout)
    return build_part(feed_forward, "feed_forward(d_model, d_ff, dropout)", d_model, d_ff, dropout)
