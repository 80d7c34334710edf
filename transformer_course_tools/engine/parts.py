"""The parts of a decoding plan: a trained model read into plain tensors, in the form the engine runs.

A plan holds no autograd, and no module but the learner's own RMSNorm and SwiGLU where the
engine runs them (bfloat16 and int8: see :mod:`~.read`): matrices (:class:`~.weights.Dense`),
norms, the embedding and the positions, per layer. :mod:`~.read` makes one from a model; :mod:`~.run` runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .weights import Dense, Int8Dense


@dataclass
class Norm:
    """LayerNorm or RMSNorm over the last axis; ``weight`` and ``bias`` None where they were folded
    into the matrix that reads the norm's output (pre-LN, float32), or where the LayerNorm has none;
    ``module``: the learner's own RMSNorm, run as it is (bfloat16, int8).

    In float32 an RMSNorm computes ``x / √(Σx² + D·ε)``: RMSNorm's ``x / √(mean(x²) + ε)`` divided
    by √D, which its weight (``√D · g`` for the gain g) or, folded, the matrix after it multiplies
    back. That is three operations (the norm of x, its hypotenuse with √(D·ε), the division)
    instead of five.
    """

    kind: str  # "layer" (LayerNorm), "rms_sum" (RMSNorm, float32) or "module" (the learner's own)
    weight: Tensor | None
    bias: Tensor | None
    eps: float
    floor: Tensor | None = None  # "rms_sum": √(D·ε), (1,)
    module: nn.Module | None = None  # "module"

    def __call__(self, x: Tensor) -> Tensor:
        if self.kind == "layer":
            return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)
        if self.kind == "module":
            return self.module(x)
        root = torch.linalg.vector_norm(x, dim=-1, keepdim=True)  # √(Σx²), (N, 1)
        x = x / torch.hypot(root, self.floor)
        return x if self.weight is None else x * self.weight


@dataclass
class SelfAttention:
    """W^Q, W^K and W^V stacked into one product; W^O. Rotary positions where
    ``rope_base`` is set (turned after the product, by a table of the plan). ``merge``: in
    bfloat16, the learner's own ``merge_heads``, whose layout W^O then reads as the modules' does
    (a bfloat16 product rounds differently on another layout)."""

    qkv: Dense | Int8Dense  # (D) → (H·Dk + Hkv·Dk + Hkv·Dv)
    out: Dense | Int8Dense  # (H·Dv) → (D)
    n_heads: int
    n_kv_heads: int
    d_k: int
    d_v: int
    rope_base: float | None
    merge: Callable[[Tensor], Tensor] | None = None


@dataclass
class CrossAttention:
    """W^Q and W^O of a decoder layer; its W^K and W^V are in the plan's
    :attr:`Plan.memory_kv`, which projects the encoder's output once per decoding call."""

    q: Dense | Int8Dense
    out: Dense | Int8Dense
    n_heads: int
    d_k: int
    d_v: int


@dataclass
class FeedForward:
    """``down(act(up(x)))``, or SwiGLU's ``down(silu(gate) ⊙ value)`` with W₁ and W₃ stacked in ``up``;
    or the learner's own SwiGLU ``module``, run as it is (bfloat16, int8: ``up`` and ``down`` None)."""

    up: Dense | Int8Dense | None
    down: Dense | Int8Dense | None
    activation: str  # a name of feedforward.ACTIVATIONS ("relu", "gelu", "gelu_tanh", "swish")
    gated: bool
    module: nn.Module | None = None

    @property
    def nbytes(self) -> int:
        if self.module is not None:
            return sum(p.numel() * p.element_size() for p in self.module.parameters())
        return self.up.nbytes + self.down.nbytes


@dataclass
class Layer:
    """One block: a norm around each sub-layer (pre-LN: before it, post-LN: after the residual sum)."""

    norm_first: bool
    norms: list[Norm]
    self_attn: SelfAttention
    cross_attn: CrossAttention | None
    ffn: FeedForward


@dataclass
class Embedding:
    """Token vectors (times √D in the paper's models) and the positions added to them.

    ``table`` is (V, D) float, or int8 with one ``row_scale`` per token (chapter 16). ``positions``
    is the (max_len, D) table added at each position (sinusoids or learned vectors), or None where
    the positions enter inside attention (rotary).
    """

    table: Tensor
    row_scale: Tensor | None
    scale: float
    positions: Tensor | None

    def __call__(self, tokens: Tensor, start: int) -> Tensor:
        """Shape: tokens (B, T) at positions start … start+T-1 → (B·T, D)"""
        x = F.embedding(tokens, self.table)  # (B, T, D)
        if self.row_scale is not None:
            x = x.float() * F.embedding(tokens, self.row_scale[:, None])  # int8 rows times their scales
        if self.scale != 1.0:
            x = x * self.scale
        if self.positions is not None:
            x = x + self.positions[start : start + tokens.shape[1]]  # (B, T, D) + (T, D)
        return x.flatten(0, 1)  # (B·T, D)


@dataclass
class Plan:
    """Everything the engine needs to decode with one model. ``encoder`` and ``memory_kv`` are the
    translator's (None for a language model); ``embed`` is the target (or the only) embedding."""

    layers: list[Layer]
    embed: Embedding
    final_norm: Norm | None
    output: Dense | Int8Dense
    d_model: int
    max_len: int
    dtype: torch.dtype
    device: torch.device
    pad_id: int
    bos_id: int
    eos_id: int
    src_embed: Embedding | None = None
    encoder: list[Layer] | None = None
    encoder_norm: Norm | None = None
    memory_kv: Dense | Int8Dense | None = None  # every decoder layer's W^K, W^V stacked: (D) → (N·H·(Dk+Dv))

    @property
    def nbytes(self) -> int:
        """Bytes of the weights one decoding step reads (decoder layers and output layer, biases
        included; the embedding reads one row per token, not counted)."""
        total = self.output.nbytes
        for layer in self.layers:
            parts = [layer.self_attn.qkv, layer.self_attn.out, layer.ffn]
            if layer.cross_attn is not None:
                parts += [layer.cross_attn.q, layer.cross_attn.out]
            total += sum(part.nbytes for part in parts)
        return total
