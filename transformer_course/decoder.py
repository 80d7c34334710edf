"""Chapter 06 — the decoder layer and the decoder stack (paper §3.1)."""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn

from .encoder import LayerStack, layer_from_torch
from .feedforward import make_feed_forward
from .multihead import MultiHeadAttention
from .sublayer import Connection, norm_and_dropout, residual


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, then a feed-forward
    network; each wrapped by :func:`residual`.

    The names are those of ``nn.TransformerDecoderLayer`` (PyTorch's ``multihead_attn`` is our
    ``cross_attn``): ``norm1``/``dropout1`` go around the self-attention, ``norm2``/``dropout2``
    around the cross-attention, ``norm3``/``dropout3`` around the feed-forward network ``ffn``.

    Args and parts: as :class:`~transformer_course.encoder.EncoderLayer` (``norm`` builds the
    three normalisations).

    Shape:
        x: (B, T, D) decoder states, memory: (B, S, D) encoder output,
        tgt_mask: bool broadcastable to (B, H, T, T) (causal and target padding),
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
        *,
        feed_forward: Callable[[int, int, float], nn.Module] | None = None,
        norm: Callable[[int], nn.Module] | None = None,
        connection: Connection | None = None,
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.connection = residual if connection is None else connection
        # built in the order of the course's first decoder layer (an encoder layer plus cross_attn and
        # norm3), which is the order a seed draws the initial weights in
        self.self_attn = MultiHeadAttention(d_model, n_heads, d_k, d_v, dropout)
        self.ffn = make_feed_forward(feed_forward, d_model, d_ff, dropout)
        self.norm1, self.dropout1 = norm_and_dropout(d_model, layer_norm_eps, dropout, norm)  # around self_attn
        self.norm2, self.dropout2 = norm_and_dropout(d_model, layer_norm_eps, dropout, norm)  # around cross_attn
        self.cross_attn = MultiHeadAttention(d_model, n_heads, d_k, d_v, dropout)
        self.norm3, self.dropout3 = norm_and_dropout(d_model, layer_norm_eps, dropout, norm)  # around ffn

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
    ) -> Tensor:
        # self.connection is residual (sublayer.py) unless the layer was built with another connection
        ### BEGIN SOLUTION
        x = self.connection(
            x,
            lambda h: self.self_attn(h, h, h, tgt_mask)[0],
            self.norm1,
            self.dropout1,
            self.norm_first,
        )
        # queries from the decoder, keys and values from the encoder memory (never from x)
        x = self.connection(
            x,
            lambda h: self.cross_attn(h, memory, memory, memory_mask)[0],
            self.norm2,
            self.dropout2,
            self.norm_first,
        )
        return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)  # (B, T, D)
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

    def forward(self, x: Tensor, memory: Tensor, tgt_mask: Tensor | None, memory_mask: Tensor | None) -> Tensor:
        for layer in self.layers:
            x = layer(x, memory, tgt_mask, memory_mask)
        return self.norm(x)
