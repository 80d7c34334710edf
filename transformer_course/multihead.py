"""Chapter 04 — multi-head attention (paper §3.2.2).

    MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O,  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

All heads are computed at once: one (D → H·Dk) projection is split into H heads of Dk
features, attention runs on the (B, H, T, Dk) tensor, and the heads are merged back.
"""

from __future__ import annotations

from torch import Tensor, nn

from ._validate import check_ndim
from .attention import fast_attention, scaled_dot_product_attention


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """Cut the feature axis into ``n_heads`` heads and move the head axis forward.

    Shape:
        x: (B, T, H·Dh) → (B, H, T, Dh), where head ``i`` holds features ``i·Dh … (i+1)·Dh − 1`` of every token
    """
    if x.shape[-1] % n_heads:
        raise ValueError(f"the last dimension of x ({x.shape[-1]}) is not divisible by n_heads={n_heads}")
    ### BEGIN SOLUTION
    batch, length, features = x.shape
    x = x.view(batch, length, n_heads, features // n_heads)  # (B, T, H, Dh)
    return x.transpose(1, 2)  # (B, H, T, Dh)
    ### END SOLUTION


def merge_heads(x: Tensor) -> Tensor:
    """Inverse of :func:`split_heads`: concatenate the heads along the feature axis.

    Shape:
        x: (B, H, T, Dh) → (B, T, H·Dh); ``merge_heads(split_heads(x, H))`` gives ``x`` back
    """
    ### BEGIN SOLUTION
    batch, n_heads, length, head_dim = x.shape
    x = x.transpose(1, 2)  # (B, T, H, Dh)
    return x.reshape(batch, length, n_heads * head_dim)  # (B, T, H·Dh)
    ### END SOLUTION


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate query/key/value projections and an output projection.

    Args:
        d_model: model size D (input and output features).
        n_heads: number of heads H.
        d_k: features per head for queries and keys (default D // H, as in the paper).
        d_v: features per head for values (default D // H).
        dropout: dropout on the attention weights.
        bias: whether the four projections have a bias (the paper's equations have none;
            ``nn.MultiheadAttention`` has one, so it is on by default).

    Shape:
        query: (B, T, D), key, value: (B, S, D) (S ≠ T in cross-attention), mask: bool broadcastable to
        (B, H, T, S), True = may attend → ``(output (B, T, D), weights (B, H, T, S) or None)``

    ``need_weights=True`` takes the teaching path and returns the weights; otherwise the fast
    path (``F.scaled_dot_product_attention``) runs and ``weights`` is None. ``fast=False`` takes
    the teaching path without asking for the weights.
    """

    def __init__(self, d_model: int, n_heads: int, d_k: int | None = None, d_v: int | None = None,
                 dropout: float = 0.0, bias: bool = True) -> None:  # fmt: skip
        super().__init__()
        if d_model < 1 or n_heads < 1:
            raise ValueError(f"d_model and n_heads must be >= 1, got d_model={d_model}, n_heads={n_heads}")
        if (d_k is None or d_v is None) and d_model % n_heads:
            raise ValueError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}: "
                "choose sizes that divide, or give d_k and d_v explicitly"
            )
        if (d_k is not None and d_k < 1) or (d_v is not None and d_v < 1):
            raise ValueError(f"d_k and d_v must be >= 1 (or None for d_model // n_heads), got d_k={d_k}, d_v={d_v}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.d_model, self.n_heads = d_model, n_heads
        self.d_k = d_k if d_k is not None else d_model // n_heads
        self.d_v = d_v if d_v is not None else d_model // n_heads
        self.dropout = dropout
        self.w_q = nn.Linear(d_model, n_heads * self.d_k, bias=bias)  # W^Q of all heads, side by side
        self.w_k = nn.Linear(d_model, n_heads * self.d_k, bias=bias)  # W^K
        self.w_v = nn.Linear(d_model, n_heads * self.d_v, bias=bias)  # W^V
        self.w_o = nn.Linear(n_heads * self.d_v, d_model, bias=bias)  # W^O
        for linear in (self.w_q, self.w_k, self.w_v, self.w_o):
            nn.init.xavier_uniform_(linear.weight)
            if bias:
                nn.init.zeros_(linear.bias)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        need_weights: bool = False,
        *,
        fast: bool = True,
    ) -> tuple[Tensor, Tensor | None]:
        self._check_inputs(query, key, value)
        ### BEGIN SOLUTION
        q = split_heads(self.w_q(query), self.n_heads)  # (B, H, T, Dk)
        k = split_heads(self.w_k(key), self.n_heads)  # (B, H, S, Dk)
        v = split_heads(self.w_v(value), self.n_heads)  # (B, H, S, Dv)
        dropout_p = self.dropout if self.training else 0.0
        if need_weights or not fast:
            heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)  # (B, H, T, Dv)
        else:
            heads, weights = fast_attention(q, k, v, mask, dropout_p), None
        return self.w_o(merge_heads(heads)), weights  # (B, T, D), (B, H, T, S) or None
        ### END SOLUTION

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        for name, x in (("query", query), ("key", key), ("value", value)):
            check_ndim(x, 3, name, "(B, length, d_model)")
            if x.shape[-1] != self.d_model:
                raise ValueError(f"{name} must have last dimension d_model={self.d_model}, got {tuple(x.shape)}")
        if not query.shape[0] == key.shape[0] == value.shape[0]:
            raise ValueError(
                f"query, key and value must have the same batch size, got {query.shape[0]}, {key.shape[0]}, {value.shape[0]}"
            )
        if key.shape[1] != value.shape[1]:
            raise ValueError(f"key and value must have the same length S, got {key.shape[1]} and {value.shape[1]}")

    @classmethod
    def from_torch(cls, torch_mha: nn.MultiheadAttention) -> MultiHeadAttention:
        """Build ours with the same weights as a ``nn.MultiheadAttention``.

        PyTorch packs W^Q, W^K, W^V into one ``in_proj_weight`` of shape (3D, D) when the three
        inputs share the size D; we split it into the three projections. (Its ``attn_mask`` and
        ``key_padding_mask`` use True = *blocked*, the opposite of ours.)
        """
        if not torch_mha._qkv_same_embed_dim:
            raise ValueError("from_torch supports nn.MultiheadAttention with kdim == vdim == embed_dim only")
        if torch_mha.bias_k is not None or torch_mha.add_zero_attn:
            raise ValueError("from_torch does not support add_bias_kv or add_zero_attn")
        has_bias = torch_mha.in_proj_bias is not None
        ours = cls(torch_mha.embed_dim, torch_mha.num_heads, dropout=torch_mha.dropout, bias=has_bias)
        ours.to(device=torch_mha.in_proj_weight.device, dtype=torch_mha.in_proj_weight.dtype)
        projections = (ours.w_q, ours.w_k, ours.w_v)
        for linear, weight in zip(projections, torch_mha.in_proj_weight.detach().chunk(3), strict=True):
            linear.weight.data.copy_(weight)
        ours.w_o.weight.data.copy_(torch_mha.out_proj.weight.detach())
        if has_bias:
            for linear, bias in zip(projections, torch_mha.in_proj_bias.detach().chunk(3), strict=True):
                linear.bias.data.copy_(bias)
            ours.w_o.bias.data.copy_(torch_mha.out_proj.bias.detach())
        return ours
