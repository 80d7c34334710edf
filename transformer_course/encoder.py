"""Chapter 05 — the encoder layer and the encoder stack (paper §3.1)."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from .feedforward import PositionwiseFeedForward
from .multihead import MultiHeadAttention
from .sublayer import residual


class EncoderLayer(nn.Module):
    """Self-attention then a feed-forward network, each wrapped by :func:`residual`.

    Args:
        d_model, n_heads, d_ff: sizes D, H and the hidden size of the feed-forward network.
        dropout: dropout after each sub-layer, on attention weights and inside the FFN.
        norm_first: False = post-LN (the paper), True = pre-LN.
        layer_norm_eps: epsilon of the two LayerNorms.
        d_k, d_v: per-head sizes (default D // H).

    Shape:
        x: (B, S, D), mask: bool broadcastable to (B, H, S, S), True = may attend → (B, S, D)
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
        d_k: int | None = None,
        d_v: int | None = None,
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, d_k, d_v, dropout)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        ### BEGIN SOLUTION
        x = residual(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm1, self.dropout1, self.norm_first)
        return residual(x, self.ffn, self.norm2, self.dropout2, self.norm_first)  # (B, S, D)
        ### END SOLUTION

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> EncoderLayer:
        """Build ours with the weights of a ``nn.TransformerEncoderLayer`` (ReLU activation)."""
        _check_torch_layer(layer)
        ours = cls(
            layer.self_attn.embed_dim,
            layer.self_attn.num_heads,
            layer.linear1.out_features,
            dropout=layer.dropout.p,
            norm_first=layer.norm_first,
            layer_norm_eps=layer.norm1.eps,
        )
        ours.self_attn = MultiHeadAttention.from_torch(layer.self_attn)
        _copy_ffn_and_norms(ours, layer, n_norms=2)
        return ours.to(layer.linear1.weight.device)


class Encoder(nn.Module):
    """A stack of N encoder layers. With pre-LN a final LayerNorm normalises the output
    (post-LN layers already end with one).

    Shape:
        x: (B, S, D), mask: (B, 1, 1, S) bool → memory (B, S, D)
    """

    def __init__(self, layers: list[EncoderLayer], final_norm: nn.Module | None = None) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.norm = final_norm if final_norm is not None else nn.Identity()

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


def _check_torch_layer(layer: nn.Module) -> None:
    if not getattr(layer.self_attn, "batch_first", False):
        raise ValueError("from_torch expects a layer built with batch_first=True")
    if not (layer.activation is F.relu or isinstance(layer.activation, nn.ReLU)):
        raise ValueError("from_torch supports the ReLU activation only (the paper's)")
    if layer.linear1.bias is None or layer.norm1.bias is None:
        raise ValueError("from_torch expects a layer built with bias=True (ours always has biases)")


def _copy_ffn_and_norms(ours: nn.Module, layer: nn.Module, n_norms: int) -> None:
    # match device and dtype *before* copying, so a float64 layer is copied without rounding
    ours.to(device=layer.linear1.weight.device, dtype=layer.linear1.weight.dtype)
    ours.ffn.linear1.load_state_dict(layer.linear1.state_dict())
    ours.ffn.linear2.load_state_dict(layer.linear2.state_dict())
    for i in range(1, n_norms + 1):
        getattr(ours, f"norm{i}").load_state_dict(getattr(layer, f"norm{i}").state_dict())
