"""Chapter 13 — the SwiGLU feed-forward network (Shazeer 2020; PaLM, Llama).

    SwiGLU(x) = W₂ (silu(W₁ x) ⊙ W₃ x),   silu(z) = z · σ(z)

The paper's network (chapter 05) is ``W₂ max(0, W₁ x)``: one hidden layer with a ReLU. A *gated*
linear unit multiplies, feature by feature, a smooth activation of one projection (the gate,
silu(W₁ x)) with a second projection (W₃ x): the network can turn each hidden feature up or down
by how much of it the input asks for. It has three matrices instead of two, so at equal parameter
count its hidden size is ⅔ of the ReLU network's: d_ff = ⅔ · 4 · d_model (Llama rounds it).
No biases, as in the models that use it.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn


class SwiGLU(nn.Module):
    """``W2(silu(W1 x) ⊙ W3 x)``: D → d_ff (twice, gate and value) → D, without biases.

    Args:
        d_model: model size D.
        d_ff: hidden size (⅔ · 4 · D matches the parameters of the ReLU network with 4 · D).
        dropout: dropout on the hidden features (where chapter 05's network has it).

    Shape:
        x: (..., D) → (..., D)
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        if d_model < 1 or d_ff < 1:
            raise ValueError(f"d_model and d_ff must be >= 1, got d_model={d_model}, d_ff={d_ff}")
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # the gate
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # the value it gates
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # back to D
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        ### BEGIN SOLUTION
        hidden = F.silu(self.w1(x)) * self.w3(x)  # (..., d_ff)
        return self.w2(self.dropout(hidden))  # (..., D)
        ### END SOLUTION


def swiglu_hidden_size(d_model: int, multiple_of: int = 1) -> int:
    """The hidden size that gives SwiGLU the parameters of a ReLU network with d_ff = 4 · D:
    ⅔ · 4 · D, rounded up to a ``multiple_of`` (hardware likes multiples of 64 or 256)."""
    hidden = (2 * 4 * d_model + 2) // 3  # ⅔ · 4 · D, rounded
    return -(-hidden // multiple_of) * multiple_of
