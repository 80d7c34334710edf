"""Chapter 05 — the position-wise feed-forward network (paper §3.3, equation 2).

    FFN(x) = max(0, x W₁ + b₁) W₂ + b₂

The same two-layer network is applied to every position separately (it never mixes positions:
that is attention's job).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch.nn.functional as F
from torch import Tensor, nn

from .sublayer import build_part

# The activations between the two layers, by the names the configurations use: the paper's ReLU;
# GELU and its tanh approximation (BERT, GPT-2); swish = SiLU, x·σ(x) (Marian's OPUS-MT translators).
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": partial(F.gelu, approximate="tanh"),
    "swish": F.silu,
}


class PositionwiseFeedForward(nn.Module):
    """Two linear layers with an activation between them, D → d_ff → D.

    Dropout sits after the activation, where ``nn.TransformerEncoderLayer`` puts it.

    Args:
        d_model, d_ff: sizes D and the hidden size.
        dropout: dropout on the hidden features.
        activation: a name of :data:`ACTIVATIONS`; the paper's ReLU by default (chapter 15's
            real checkpoints use ``"swish"``, Marian, and ``"gelu_tanh"``, GPT-2).
        bias: whether the two layers have biases (b₁, b₂ of equation 2).

    Shape:
        x: (B, T, D) → (B, T, D); any number of leading axes works, since ``nn.Linear`` acts on the last one
    """

    def __init__(
        self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu", bias: bool = True
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(map(repr, ACTIVATIONS))}, got {activation!r}")
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)  # W₁, b₁
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)  # W₂, b₂
        self.dropout = nn.Dropout(dropout)
        self.activation_name = activation
        self.activation = ACTIVATIONS[activation]  # max(0, ·) unless another activation was asked for

    def forward(self, x: Tensor) -> Tensor:
        ### BEGIN SOLUTION
        hidden = self.dropout(self.activation(self.linear1(x)))  # (B, T, d_ff)
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
