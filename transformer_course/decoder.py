"""Chapter 06 — the decoder layer and the decoder stack (paper §3.1)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torch import Tensor, nn

from .encoder import EncoderLayer, LayerStack, layer_from_torch
from .multihead import MultiHeadAttention
from .sublayer import residual

if TYPE_CHECKING:
    from .cache import DecoderCache, LayerCache


class DecoderLayer(EncoderLayer):
    """Masked self-attention, cross-attention over the encoder memory, then a feed-forward
    network; each wrapped by :func:`residual`.

    It is an encoder layer with a third sub-layer in the middle: it inherits the self-attention,
    the feed-forward network and their norms and dropouts (``norm1``/``dropout1`` around the
    self-attention), and adds ``cross_attn`` with ``norm2``/``dropout2``; the feed-forward network
    then uses ``norm3``/``dropout3`` (the names of ``nn.TransformerDecoderLayer``).

    Args: as :class:`~transformer_course.encoder.EncoderLayer`.

    Shape:
        x: (B, T, D) decoder states, memory: (B, S, D) encoder output,
        tgt_mask: bool broadcastable to (B, H, T, T) (causal, usually),
        memory_mask: bool broadcastable to (B, H, T, S) (source padding) → (B, T, D)

    ``cache`` (chapter 08) holds the keys and values of earlier decoding steps: its ``self_attn``
    part goes to the self-attention, its ``cross_attn`` part to the cross-attention. Then ``x``
    holds only the new positions.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        attn = self.self_attn  # a second attention of the same sizes, with weights of its own
        self.cross_attn = MultiHeadAttention(attn.d_model, attn.n_heads, attn.d_k, attn.d_v, attn.dropout)
        self.norm3 = nn.LayerNorm(attn.d_model, eps=self.norm1.eps)
        self.dropout3 = nn.Dropout(self.dropout1.p)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        *,
        cache: LayerCache | None = None,
    ) -> Tensor:
        self_cache, cross_cache = (None, None) if cache is None else (cache.self_attn, cache.cross_attn)
        ### BEGIN SOLUTION
        x = residual(
            x,
            lambda h: self.self_attn(h, h, h, tgt_mask, cache=self_cache)[0],
            self.norm1,
            self.dropout1,
            self.norm_first,
        )
        # queries from the decoder, keys and values from the encoder memory (never from x)
        x = residual(
            x,
            lambda h: self.cross_attn(h, memory, memory, memory_mask, cache=cross_cache)[0],
            self.norm2,
            self.dropout2,
            self.norm_first,
        )
        return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)  # (B, T, D)
        ### END SOLUTION

    @classmethod
    def from_torch(cls, layer: nn.TransformerDecoderLayer) -> DecoderLayer:
        """Build ours with the weights of a ``nn.TransformerDecoderLayer`` (ReLU activation)."""
        return layer_from_torch(cls, layer, {"self_attn": "self_attn", "cross_attn": "multihead_attn"})


class Decoder(LayerStack):
    """A stack of N decoder layers (see :class:`~transformer_course.encoder.LayerStack`).

    Shape:
        x: (B, T, D), memory: (B, S, D) → (B, T, D)
    """

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None,
        memory_mask: Tensor | None,
        *,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        layer_caches = [None] * len(self.layers) if cache is None else cache.layers
        for layer, layer_cache in zip(self.layers, layer_caches, strict=True):
            x = layer(x, memory, tgt_mask, memory_mask, cache=layer_cache)
        return self.norm(x)
