"""Chapter 05 — the encoder layer and the encoder stack (paper §3.1)."""

from __future__ import annotations

from collections.abc import Callable

import torch.nn.functional as F
from torch import Tensor, nn

from .feedforward import make_feed_forward
from .multihead import MultiHeadAttention
from .sublayer import Connection, build_part, norm_and_dropout, residual


class EncoderLayer(nn.Module):
    """Self-attention then a feed-forward network, each wrapped by :func:`residual`.

    Args:
        d_model, n_heads, d_ff: sizes D, H and the hidden size of the feed-forward network.
        dropout: dropout after each sub-layer, on attention weights and inside the FFN.
        norm_first: False = post-LN (the paper), True = pre-LN.
        layer_norm_eps: epsilon of the two LayerNorms.
        d_k, d_v: per-head sizes (default D // H).

    Parts (keyword arguments; left out, the paper's):
        feed_forward: builds the feed-forward sub-layer ``self.ffn``, called as
            ``feed_forward(d_model, d_ff, dropout)``; default :class:`PositionwiseFeedForward`.
        norm: builds each normalisation (``norm1``, ``norm2``), called as ``norm(d_model)``;
            default ``nn.LayerNorm(d_model, eps=layer_norm_eps)``.
        connection: how each sub-layer is wrapped, a function with the arguments of
            :func:`residual` (the default); :func:`~transformer_course.sublayer.no_residual` drops
            the shortcuts.
        attention: builds the self-attention ``self.self_attn``, called as
            ``attention(d_model, n_heads, d_k, d_v, dropout)``; default :class:`MultiHeadAttention`
            (chapter 13 passes grouped or rotary attention).

    Shape:
        x: (B, S, D), mask: bool broadcastable to (B, H, S, S), True = may attend, usually the padding
        mask (B, 1, 1, S) → (B, S, D)
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
        attention: Callable[[int, int, int | None, int | None, float], nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.connection = residual if connection is None else connection
        attention = MultiHeadAttention if attention is None else attention
        call = "attention(d_model, n_heads, d_k, d_v, dropout)"
        self.self_attn = build_part(attention, call, d_model, n_heads, d_k, d_v, dropout)
        self.ffn = make_feed_forward(feed_forward, d_model, d_ff, dropout)
        self.norm1, self.dropout1 = norm_and_dropout(d_model, layer_norm_eps, dropout, norm)  # around self_attn
        self.norm2, self.dropout2 = norm_and_dropout(d_model, layer_norm_eps, dropout, norm)  # around ffn

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        # self.connection is residual (sublayer.py) unless the layer was built with another connection
        ### BEGIN SOLUTION
        def attend(h: Tensor) -> Tensor:
            return self.self_attn(h, h, h, mask)[0]  # (B, S, D)

        x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
        return self.connection(x, self.ffn, self.norm2, self.dropout2, self.norm_first)  # (B, S, D)
        ### END SOLUTION

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> EncoderLayer:
        """Build ours with the weights of a ``nn.TransformerEncoderLayer`` (ReLU activation)."""
        return layer_from_torch(cls, layer, {"self_attn": "self_attn"})


class LayerStack(nn.Module):
    """N layers applied one after the other, then ``final_norm`` (pre-LN needs one at the end;
    post-LN layers already end with a LayerNorm, so there it is the identity)."""

    def __init__(self, layers: list[nn.Module], final_norm: nn.Module | None = None) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.norm = final_norm if final_norm is not None else nn.Identity()


class Encoder(LayerStack):
    """A stack of N encoder layers (see :class:`LayerStack`).

    Shape:
        x: (B, S, D), mask: (B, 1, 1, S) bool → memory (B, S, D)
    """

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


def layer_from_torch(cls: type[nn.Module], layer: nn.Module, attentions: dict[str, str]) -> nn.Module:
    """Our layer class ``cls`` with the weights of PyTorch's encoder or decoder layer ``layer``.

    ``attentions`` maps our attention modules to PyTorch's (``{"cross_attn": "multihead_attn"}``);
    the feed-forward network and the LayerNorms (one per sub-layer) are copied as they are.
    """
    if not getattr(layer.self_attn, "batch_first", False):
        raise ValueError("from_torch expects a layer built with batch_first=True")
    if not (layer.activation is F.relu or isinstance(layer.activation, nn.ReLU)):
        raise ValueError("from_torch supports the ReLU activation only (the paper's)")
    if layer.linear1.bias is None or layer.norm1.bias is None:
        raise ValueError("from_torch expects a layer built with bias=True (ours always has biases)")
    attn = layer.self_attn
    ours = cls(
        attn.embed_dim, attn.num_heads, layer.linear1.out_features, layer.dropout.p, layer.norm_first, layer.norm1.eps
    )
    for name, theirs in attentions.items():
        setattr(ours, name, MultiHeadAttention.from_torch(getattr(layer, theirs)))
    # match device and dtype *before* copying, so a float64 layer is copied without rounding
    ours.to(device=layer.linear1.weight.device, dtype=layer.linear1.weight.dtype)
    ours.ffn.linear1.load_state_dict(layer.linear1.state_dict())
    ours.ffn.linear2.load_state_dict(layer.linear2.state_dict())
    for i in range(1, len(attentions) + 2):  # norm1 … one per sub-layer
        getattr(ours, f"norm{i}").load_state_dict(getattr(layer, f"norm{i}").state_dict())
    return ours
