"""Chapter 04 — multi-head attention (paper §3.2.2).

    MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O,  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

All heads are computed at once: one (D → H·Dk) projection is split into H heads of Dk
features, attention runs on the (B, H, T, Dk) tensor, and the heads are merged back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._validate import check_ndim
from .attention import fast_attention, scaled_dot_product_attention

if TYPE_CHECKING:
    from .cache import KVCache


def affine(x: Tensor, weight_t: Tensor, bias: Tensor | None) -> Tensor:
    """``x @ weight_t + bias`` in one operation. Shape: x (N, in), weight_t (in, out) → (N, out)"""
    return x.mm(weight_t) if bias is None else torch.addmm(bias, x, weight_t)


def additive_mask(mask: Tensor, dtype: torch.dtype) -> Tensor:
    """A boolean mask (True = may attend) as numbers to add to the scores: 0 where a key may be
    seen, the dtype's minimum where not (as :func:`~transformer_course.attention.apply_mask` sets
    them). A row with nothing to attend to then gets equal scores, so uniform weights, with no
    check: one tensor made once and added at every decoding step.

    Shape:
        mask: bool (..., T, S) → the same shape, ``dtype``
    """
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, torch.finfo(dtype).min)


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """Cut the feature axis into ``n_heads`` heads and move the head axis forward.

    Shape:
        x: (B, T, H·Dh) → (B, H, T, Dh)
    """
    if x.shape[-1] % n_heads:
        raise ValueError(f"the last dimension of x ({x.shape[-1]}) is not divisible by n_heads={n_heads}")
    ### BEGIN SOLUTION
    batch, length, features = x.shape
    x = x.view(batch, length, n_heads, features // n_heads)  # (B, T, H, Dh)
    return x.transpose(1, 2)  # (B, H, T, Dh)
    ### END SOLUTION


def repeat_kv(x: Tensor, n_rep: int) -> Tensor:
    """Grouped-query attention (chapter 10): give each of the H = Hkv·n_rep query heads its group's
    key or value head. Query heads 0 … n_rep-1 share key/value head 0, the next n_rep head 1, …

    Shape:
        x: (B, Hkv, S, D) → (B, Hkv·n_rep, S, D)
    """
    check_ndim(x, 4, "x", "(B, Hkv, S, D)")
    if not isinstance(n_rep, int) or n_rep < 1:
        raise ValueError(f"n_rep must be an integer >= 1, got {n_rep!r}")
    ### BEGIN SOLUTION
    batch, kv_heads, length, features = x.shape
    x = x[:, :, None].expand(batch, kv_heads, n_rep, length, features)  # (B, Hkv, n_rep, S, D), no copy yet
    return x.reshape(batch, kv_heads * n_rep, length, features)  # (B, H, S, D): each group's head n_rep times
    ### END SOLUTION


def merge_heads(x: Tensor) -> Tensor:
    """Inverse of :func:`split_heads`: concatenate the heads along the feature axis.

    Shape:
        x: (B, H, T, Dh) → (B, T, H·Dh)
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
        n_kv_heads: grouped-query attention (chapter 10): the number of key/value heads Hkv, a
            divisor of H; each group of H/Hkv query heads shares one key head and one value head,
            so W^K and W^V have Hkv·Dk and Hkv·Dv outputs and a KV cache holds Hkv heads.
            None (the default) means H: the paper's multi-head attention.

    Shape:
        query (B, T, D), key (B, S, D), value (B, S, D), mask bool broadcastable to
        (B, H, T, S) with True = may attend → ``(output (B, T, D), weights (B, H, T, S) or None)``

    ``forward(..., need_weights=True)`` takes the teaching path and returns the weights;
    otherwise the fast path (``F.scaled_dot_product_attention``) is used and ``weights`` is
    None. ``forward(..., fast=False)`` takes the teaching path (and returns its weights) without
    asking for them: the path is an argument of each call, the module keeps no switch.

    ``forward(..., cache=KVCache())`` (chapter 08) keeps the keys and values between decoding
    steps: :meth:`keys_and_values` projects only the new positions and asks the cache for all of them.
    """

    def __init__(self, d_model: int, n_heads: int, d_k: int | None = None, d_v: int | None = None,
                 dropout: float = 0.0, bias: bool = True, n_kv_heads: int | None = None) -> None:  # fmt: skip
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
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if not isinstance(n_kv_heads, int) or n_kv_heads < 1 or n_heads % n_kv_heads:
            raise ValueError(
                f"n_kv_heads must be a divisor of n_heads={n_heads} (or None for {n_heads}), got {n_kv_heads!r}"
            )
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.d_k = d_k if d_k is not None else d_model // n_heads
        self.d_v = d_v if d_v is not None else d_model // n_heads
        self.dropout = dropout
        self.w_q = nn.Linear(d_model, n_heads * self.d_k, bias=bias)  # W^Q of all heads, side by side
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)  # Hkv = H unless grouped (chapter 10)
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_v, bias=bias)
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
        cache: KVCache | None = None,
        fast: bool = True,
    ) -> tuple[Tensor, Tensor | None]:
        self._check_inputs(query, key, value)
        if cache is not None and fast and not need_weights and self._one_step(query):
            return self._decode_step(query, key, value, mask, cache), None  # chapter 08's lean step
        ### BEGIN SOLUTION
        q = split_heads(self.w_q(query), self.n_heads)  # (B, H, T, Dk)
        k, v = self.keys_and_values(key, value, cache)  # (B, H, S, Dk), (B, H, S, Dv)
        dropout_p = self.dropout if self.training else 0.0
        if need_weights or not fast:
            heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)  # (B, H, T, Dv)
        else:
            heads, weights = fast_attention(q, k, v, mask, dropout_p), None
        return self.w_o(merge_heads(heads)), weights  # (B, T, D), (B, H, T, S) or None
        ### END SOLUTION

    def _one_step(self, query: Tensor) -> bool:
        """Whether a cached call is one step of a decoding loop: one new position, no autograd and
        no dropout (the lean step below computes exactly what ``forward`` does then), and one key
        head per query head (grouped heads take the general path). The lean step reads the
        projections' float matrices: chapter 11's int8 layers are not ``nn.Linear`` and are called."""
        return (
            self.n_kv_heads == self.n_heads
            and isinstance(self.w_q, nn.Linear)
            and query.shape[1] == 1
            and not torch.is_grad_enabled()
            and (self.dropout == 0 or not self.training)
        )

    def _decode_step(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, cache: KVCache) -> Tensor:
        """``forward`` for one new position with a cache (chapter 08), in fewer operations.

        A decoding step is too small to keep the processor busy: its time goes into the number of
        operations, not their size. So self-attention projects Q, K and V with *one* matrix product
        (W^Q, W^K and W^V side by side), and the four projections use matrices transposed once per
        decoding call and kept in the cache (``cache.projections``): the module's parameters and
        its state dict stay as they are. The attention itself is the fast path's.

        Shape:
            query (B, 1, D) → (B, 1, D)
        """
        batch, heads = query.shape[0], self.n_heads
        if cache.projections is None:
            cache.projections = self._fused_projections(with_keys_and_values=not cache.static)
        w_in, b_in, w_out, b_out = cache.projections
        x = query.view(batch, self.d_model)  # (B, D)
        if cache.static:  # cross-attention: only the query is new
            q = affine(x, w_in, b_in).view(batch, heads, 1, self.d_k)  # (B, H, 1, Dk)
            keys, values = self.keys_and_values(key, value, cache)  # the memory's: (B, H, S, Dk), (B, H, S, Dv)
            if mask is not None and cache.additive_mask is None:
                cache.additive_mask = additive_mask(mask, q.dtype)  # (B, 1, 1, S), made once per decoding call
            out = F.scaled_dot_product_attention(q, keys, values, attn_mask=cache.additive_mask)  # (B, H, 1, Dv)
        else:  # self-attention: each head's key and value come side by side, stored with one copy
            both = heads * (self.d_k + self.d_v)
            q, kv = affine(x, w_in, b_in).split([heads * self.d_k, both], dim=1)  # (B, H·Dk), (B, H·(Dk+Dv))
            keys, values = cache.append(kv.view(batch, heads, 1, self.d_k + self.d_v), self.d_k)  # (B, H, L, ·)
            q = q.view(batch, heads, 1, self.d_k)  # (B, H, 1, Dk)
            out = fast_attention(q, keys, values, mask)  # (B, H, 1, Dv)
        return affine(out.reshape(batch, heads * self.d_v), w_out, b_out).view(batch, 1, self.d_model)  # (B, 1, D)

    def _fused_projections(self, with_keys_and_values: bool) -> tuple[Tensor, Tensor | None, Tensor, Tensor | None]:
        """(W_in^T, b_in, W^O^T, b^O) for :meth:`_decode_step`. W_in is W^Q alone (cross-attention)
        or W^Q followed by each head's rows of W^K and W^V side by side (self-attention), so that
        one product gives the query and each head's key and value next to each other."""
        weight, bias = self.w_q.weight, self.w_q.bias  # (H·Dk, D), (H·Dk,)
        if with_keys_and_values:
            weight = torch.cat([weight, self._per_head(self.w_k.weight, self.w_v.weight)])  # (H·(2Dk+Dv), D)
            if bias is not None:
                bias = torch.cat([bias, self._per_head(self.w_k.bias, self.w_v.bias)])
        return weight.t(), bias, self.w_o.weight.t(), self.w_o.bias

    def _per_head(self, keys: Tensor, values: Tensor) -> Tensor:
        """Rows of W^K (H·Dk, …) and W^V (H·Dv, …) regrouped head by head: (H·(Dk+Dv), …)."""
        rest = keys.shape[1:]
        by_head = [keys.view(self.n_heads, self.d_k, *rest), values.view(self.n_heads, self.d_v, *rest)]
        return torch.cat(by_head, dim=1).reshape(-1, *rest)

    def keys_and_values(self, key: Tensor, value: Tensor, cache: KVCache | None = None) -> tuple[Tensor, Tensor]:
        """Project ``key`` and ``value`` with W^K and W^V and split them into heads.

        With a ``cache`` (chapter 08) the keys and values of earlier decoding steps are kept there:
        self-attention projects only the new positions and gets every position so far back;
        cross-attention projects the encoder memory once, at the first step, and reuses it.

        With grouped heads (``n_kv_heads`` < H, chapter 10) the cache holds the Hkv heads, and each
        is repeated for its group of query heads (:func:`repeat_kv`) only when they are returned.

        Shape:
            key, value: (B, S, D) → (keys (B, H, S, Dk), values (B, H, S, Dv)), S counting every
            position the cache holds
        """
        return self.grouped(*self.kv_heads(key, value, cache))

    def kv_heads(
        self, key: Tensor, value: Tensor, cache: KVCache | None = None, rotate: Callable[[Tensor], Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        """The Hkv key and value heads of every position (what a cache stores). ``rotate`` turns the
        new keys by their positions before they are stored (rotary attention, chapter 10).

        Shape:
            key, value: (B, S, D) → (B, Hkv, S, Dk), (B, Hkv, S, Dv)
        """
        if cache is not None and cache.static and len(cache):  # cross-attention: the memory is projected
            return cache.keys, cache.values
        k = split_heads(self.w_k(key), self.n_kv_heads)  # (B, Hkv, S, Dk)
        v = split_heads(self.w_v(value), self.n_kv_heads)  # (B, Hkv, S, Dv)
        if rotate is not None:
            k = rotate(k)  # (B, Hkv, S, Dk), each new key turned by its own position
        return (k, v) if cache is None else cache.update(k, v)

    def grouped(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Each of the Hkv key and value heads repeated for its group of query heads: (B, H, S, ·)."""
        n_rep = self.n_heads // self.n_kv_heads
        if n_rep == 1:  # the paper's attention: one key head per query head (chapter 04 never groups)
            return keys, values
        return repeat_kv(keys, n_rep), repeat_kv(values, n_rep)

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
        inputs share the size D; we split it into the three projections. (Remember that its
        ``attn_mask`` / ``key_padding_mask`` use True = *blocked*, the opposite of ours.)
        """
        if not torch_mha._qkv_same_embed_dim:
            raise ValueError("from_torch supports nn.MultiheadAttention with kdim == vdim == embed_dim only")
        if torch_mha.bias_k is not None or torch_mha.add_zero_attn:
            raise ValueError("from_torch does not support add_bias_kv or add_zero_attn")
        has_bias = torch_mha.in_proj_bias is not None
        ours = cls(torch_mha.embed_dim, torch_mha.num_heads, dropout=torch_mha.dropout, bias=has_bias)
        ours.to(device=torch_mha.in_proj_weight.device, dtype=torch_mha.in_proj_weight.dtype)
        w_q, w_k, w_v = torch_mha.in_proj_weight.detach().chunk(3, dim=0)
        ours.w_q.weight.data.copy_(w_q)
        ours.w_k.weight.data.copy_(w_k)
        ours.w_v.weight.data.copy_(w_v)
        ours.w_o.weight.data.copy_(torch_mha.out_proj.weight.detach())
        if has_bias:
            b_q, b_k, b_v = torch_mha.in_proj_bias.detach().chunk(3)
            ours.w_q.bias.data.copy_(b_q)
            ours.w_k.bias.data.copy_(b_k)
            ours.w_v.bias.data.copy_(b_v)
            ours.w_o.bias.data.copy_(torch_mha.out_proj.bias.detach())
        return ours
