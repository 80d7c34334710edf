"""Chapter 06 — the decoder layer and the decoder stack (paper §3.1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import Tensor, nn

from .encoder import _check_torch_layer, _copy_ffn_and_norms
from .feedforward import PositionwiseFeedForward
from .multihead import MultiHeadAttention
from .sublayer import residual

if TYPE_CHECKING:
    from .cache import DecoderCache, LayerCache


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, then a feed-forward
    network; each wrapped by :func:`residual`.

    Args: as :class:`~transformer_course.encoder.EncoderLayer`.

    Shape:
        x: (B, T, D) decoder states, memory: (B, S, D) encoder output,
        tgt_mask: bool broadcastable to (B, H, T, T) (causal, usually),
        memory_mask: bool broadcastable to (B, H, T, S) (source padding) → (B, T, D)
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
        self.cross_attn = MultiHeadAttention(d_model, n_heads, d_k, d_v, dropout)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        cache: LayerCache | None = None,
    ) -> Tensor:
        if cache is not None:  # incremental decoding (chapter 08): x holds only the new positions
            with cache.attached(self):
                return self.forward(x, memory, tgt_mask, memory_mask)
        ### BEGIN SOLUTION
        x = residual(x, lambda h: self.self_attn(h, h, h, tgt_mask)[0], self.norm1, self.dropout1, self.norm_first)
        # queries from the decoder, keys and values from the encoder memory (never from x)
        x = residual(
            x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, self.norm_first
        )
        return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)  # (B, T, D)
        ### END SOLUTION

    @classmethod
    def from_torch(cls, layer: nn.TransformerDecoderLayer) -> DecoderLayer:
        """Build ours with the weights of a ``nn.TransformerDecoderLayer`` (ReLU activation)."""
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
        ours.cross_attn = MultiHeadAttention.from_torch(layer.multihead_attn)
        _copy_ffn_and_norms(ours, layer, n_norms=3)
        return ours.to(layer.linear1.weight.device)


class Decoder(nn.Module):
    """A stack of N decoder layers (plus a final LayerNorm for pre-LN).

    Shape:
        x: (B, T, D), memory: (B, S, D) → (B, T, D)
    """

    def __init__(self, layers: list[DecoderLayer], final_norm: nn.Module | None = None) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.norm = final_norm if final_norm is not None else nn.Identity()

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        layer_caches = [None] * len(self.layers) if cache is None else cache.layers
        for layer, layer_cache in zip(self.layers, layer_caches, strict=True):
            x = layer(x, memory, tgt_mask, memory_mask, cache=layer_cache)
        return self.norm(x)
