"""Chapter 04 — multi-head attention (paper §3.2.2).

    MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O,  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

All heads are computed at once: one (D → H·Dk) projection is split into H heads of Dk
features, attention runs on the (B, H, T, Dk) tensor, and the heads are merged back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._validate import check_ndim
from .attention import fast_attention, scaled_dot_product_attention

if TYPE_CHECKING:
    from .cache import KVCache


def affine(x: Tensor, weight_t: Tensor | nn.Module, bias: Tensor | None) -> Tensor:
    """``x @ weight_t + bias`` in one operation. Shape: x (N, in), weight_t (in, out) → (N, out)

    ``weight_t`` may also be a layer of its own, bias included (chapter 11's int8 layers, which
    multiply with a kernel of their own): then ``weight_t(x)``."""
    if isinstance(weight_t, nn.Module):
        return weight_t(x)
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
        rotary: a part that turns queries and keys by their positions after W^Q and W^K (chapter
            10's :class:`~transformer_course.rotary.Rotary`), called as ``rotary(x, start)`` on
            (B, heads, T, Dk) whose rows are positions start … start+T-1; None (the default): the
            positions enter elsewhere (chapter 02's sinusoids), the paper's attention. It makes
            the module self-attention only.

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
                 dropout: float = 0.0, bias: bool = True, n_kv_heads: int | None = None,
                 rotary: nn.Module | None = None) -> None:  # fmt: skip
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
        if rotary is not None and self.d_k % 2:
            raise ValueError(f"rotary attention rotates pairs of features: d_k must be even, got {self.d_k}")
        self.dropout = dropout
        self.rotary = rotary  # None: no submodule, the paper's state dict; a Rotary holds no weights either
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
        self._check_inputs(query, key, value, cache)
        if cache is not None and fast and not need_weights and self._one_step(query, mask):
            return self._decode_step(query, key, value, mask, cache), None  # chapter 08's lean step
        ### BEGIN SOLUTION
        q = split_heads(self.w_q(query), self.n_heads)  # (B, H, T, Dk)
        q = self.positioned(q, cache)  # chapter 10's rotary attention turns q by its positions; else q itself
        k, v = self.keys_and_values(key, value, cache)  # (B, H, S, Dk), (B, H, S, Dv)
        dropout_p = self.dropout if self.training else 0.0
        if need_weights or not fast:
            heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)  # (B, H, T, Dv)
        else:
            heads, weights = fast_attention(q, k, v, mask, dropout_p), None
        return self.w_o(merge_heads(heads)), weights  # (B, T, D), (B, H, T, S) or None
        ### END SOLUTION

    def positioned(self, q: Tensor, cache: KVCache | None = None) -> Tensor:
        """The queries as attention compares them: turned by their positions (L … L+T-1 after the
        L positions a ``cache`` holds) where the module has a ``rotary`` part (chapter 10), else
        ``q`` itself (the paper's attention, and chapter 04's).

        Shape:
            q: (B, H, T, Dk) → (B, H, T, Dk)
        """
        return q if self.rotary is None else self.rotary(q, 0 if cache is None else len(cache))

    def _one_step(self, query: Tensor, mask: Tensor | None) -> bool:
        """Whether a cached call is one step of a decoding loop: one new position, no autograd and
        no dropout (the lean step below computes exactly what ``forward`` does then), and a mask,
        if any, shared by the heads (grouped heads fold their group into the query axis). The lean
        step stacks the projections' rows; chapter 11's int8 layers (not ``nn.Linear``) are stacked
        too, except with a rotary part (whose pair-swapped rows the step makes from float matrices)."""
        return (
            query.shape[1] == 1
            and (isinstance(self.w_q, nn.Linear) or self.rotary is None)
            and not torch.is_grad_enabled()
            and (self.dropout == 0 or not self.training)
            and (mask is None or mask.dim() < 3 or mask.shape[-3] == 1)
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
        batch = query.shape[0]
        heads = self._step_heads(query.view(batch, self.d_model), key, value, mask, cache)  # (B, H·Dv)
        w_out, b_out = cache.projections[2:]
        return affine(heads, w_out, b_out).view(batch, 1, self.d_model)  # (B, 1, D)

    def _step_heads(
        self, x: Tensor, key: Tensor | None, value: Tensor | None, mask: Tensor | None, cache: KVCache,
        fold: Tensor | None = None,
    ) -> Tensor:  # fmt: skip
        """The heads of :meth:`_decode_step`, concatenated, before W^O. ``fold`` (D,) multiplies the
        input's features first, folded into the weights once per decoding call (chapter 10's
        step passes the RMSNorm's weight there).

        Self-attention: one product gives the query and each key/value head's key and value side by
        side, stored with one copy. With a ``rotary`` part the product also gives q and k with the
        features of each pair swapped, so that turning them at position L is one product with a
        (cos | sin) row of a table made once per call and one sum, values untouched (cos 1, sin 0).
        Grouped heads are never copied: the H/Hkv queries of a group become the rows of one query
        head, (B, Hkv, H/Hkv, Dk), against its key head (B, Hkv, L, Dk); the one new token may see
        every cached position, so the rows need no mask.

        Shape:
            x (B, D) → (B, H·Dv)
        """
        batch, heads = x.shape[0], self.n_heads
        if cache.projections is None:
            cache.projections = self._fused_projections(with_keys_and_values=not cache.static, fold=fold)
        w_in, b_in = cache.projections[:2]
        if cache.static:  # cross-attention: only the query is new
            q = affine(x, w_in, b_in).view(batch, heads, 1, self.d_k)  # (B, H, 1, Dk)
            keys, values = self.keys_and_values(key, value, cache)  # the memory's: (B, H, S, Dk), (B, H, S, Dv)
            if mask is not None and cache.additive_mask is None:
                cache.additive_mask = additive_mask(mask, q.dtype)  # (B, 1, 1, S), made once per decoding call
            out = F.scaled_dot_product_attention(q, keys, values, attn_mask=cache.additive_mask)  # (B, H, 1, Dv)
        else:  # self-attention: each head's key and value come side by side, stored with one copy
            kv_heads, both = self.n_kv_heads, self.n_kv_heads * (self.d_k + self.d_v)
            y = affine(x, w_in, b_in)  # (B, W) with W = H·Dk + Hkv·(Dk+Dv); (B, 2W) with a rotary part
            if self.rotary is not None:
                width = heads * self.d_k + both
                y = (y.view(batch, 2, width) * self._rotation_row(len(cache), x, cache)).sum(dim=1)  # (B, W)
            q, kv = y.split([heads * self.d_k, both], dim=1)  # (B, H·Dk), (B, Hkv·(Dk+Dv))
            keys, values = cache.append(kv.view(batch, kv_heads, 1, self.d_k + self.d_v), self.d_k)  # (B, Hkv, L, ·)
            q = q.view(batch, kv_heads, heads // kv_heads, self.d_k)  # (B, Hkv, H/Hkv, Dk): a group's queries as rows
            out = fast_attention(q, keys, values, mask)  # (B, Hkv, H/Hkv, Dv)
        return out.reshape(batch, heads * self.d_v)  # (B, H·Dv), heads in order

    def _rotation_row(self, position: int, like: Tensor, cache: KVCache) -> Tensor:
        """(cos | sin) of ``position`` for the fused product's two halves, from a table made once
        per decoding call (grown, doubled, if the text outgrows it) and kept in the cache.

        Shape:
            → (2, W): row 0 multiplies the projections, row 1 their pair-swapped copies
        """
        table = cache.prepared.get("rotation")
        if table is None or position >= table.shape[0]:
            cos, sin = self.rotary.cos_sin(max(2 * (position + 1), 64), self.d_k, like.dtype, like.device)  # (N, Dk)
            one, zero = (
                torch.ones_like(cos[:, :1]).expand(-1, self.d_v),
                torch.zeros_like(cos[:, :1]).expand(-1, self.d_v),
            )
            groups = self.n_kv_heads
            main = torch.cat([cos.repeat(1, self.n_heads), torch.cat([cos, one], dim=1).repeat(1, groups)], dim=1)
            swapped = torch.cat([sin.repeat(1, self.n_heads), torch.cat([sin, zero], dim=1).repeat(1, groups)], dim=1)
            table = cache.prepared["rotation"] = torch.stack([main, swapped], dim=1)  # (N, 2, W)
        return table[position]  # (2, W)

    def _fused_projections(
        self, with_keys_and_values: bool, fold: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None, Tensor, Tensor | None]:
        """(W_in^T, b_in, W^O^T, b^O) for :meth:`_decode_step`. W_in is W^Q alone (cross-attention)
        or W^Q followed by each key/value head's rows of W^K and W^V side by side (self-attention),
        so that one product gives the query and each head's key and value next to each other.
        With a ``rotary`` part, W_in is followed by the same rows with each pair of features
        swapped (zero for the values): the second half of :meth:`_step_heads`'s rotation.
        ``fold`` (D,) scales W_in's columns (what the input would have been multiplied by).

        Chapter 11's int8 layers (not ``nn.Linear``) are stacked the same way, their whole numbers
        and their scales row by row, into one int8 layer of their own class, which
        :func:`affine` calls: (that layer, None, W^O's layer, None)."""
        if not isinstance(self.w_q, nn.Linear):
            if not with_keys_and_values:
                return self.w_q, None, self.w_o, None
            rows = [self._stacked(name) for name in ("weight", "scale", "bias")]  # int8, their scales, float
            return type(self.w_q)(*rows), None, self.w_o, None
        weight, bias = self.w_q.weight, self.w_q.bias  # (H·Dk, D), (H·Dk,)
        if with_keys_and_values:
            weight, bias = self._stacked("weight"), self._stacked("bias")  # (H·Dk+Hkv·(Dk+Dv), D), (…,)
            if self.rotary is not None:  # pair-swapped q and k; zeros where the values are
                weight = torch.cat([weight, self._pairs_swapped(weight)])  # (2W, D)
                bias = None if bias is None else torch.cat([bias, self._pairs_swapped(bias)])
        if fold is not None:
            weight = weight * fold  # (·, D): column j times fold[j]
        return weight.t(), bias, self.w_o.weight.t(), self.w_o.bias

    def _pairs_swapped(self, rows: Tensor) -> Tensor:
        """Rows (W, …) of the fused projection with features 2i and 2i+1 of every query and key swapped
        and the values' rows zeroed."""
        rest = rows.shape[1:]
        q, kv = rows.split([self.n_heads * self.d_k, rows.shape[0] - self.n_heads * self.d_k])
        kv = kv.reshape(self.n_kv_heads, self.d_k + self.d_v, *rest)  # (Hkv, Dk+Dv, …)
        k, v = kv.split([self.d_k, self.d_v], dim=1)
        swap = lambda x: x.reshape(-1, 2, *rest).flip(1).reshape(x.shape)  # noqa: E731 - pairs (2i, 2i+1) → (2i+1, 2i)
        kv = torch.cat([swap(k), torch.zeros_like(v)], dim=1).reshape(-1, *rest)
        return torch.cat([swap(q), kv])  # (W, …)

    def _stacked(self, name: str) -> Tensor | None:
        """W^Q's tensor ``name`` (its weight, bias, …) followed by W^K's and W^V's, head by head
        (:meth:`_per_head`); None where the layers have none."""
        rows = getattr(self.w_q, name)
        if rows is None:
            return None
        return torch.cat([rows, self._per_head(getattr(self.w_k, name), getattr(self.w_v, name))])

    def _per_head(self, keys: Tensor, values: Tensor) -> Tensor:
        """Rows of W^K (Hkv·Dk, …) and W^V (Hkv·Dv, …) regrouped head by head: (Hkv·(Dk+Dv), …)."""
        rest = keys.shape[1:]
        by_head = [keys.view(self.n_kv_heads, self.d_k, *rest), values.view(self.n_kv_heads, self.d_v, *rest)]
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

    def kv_heads(self, key: Tensor, value: Tensor, cache: KVCache | None = None) -> tuple[Tensor, Tensor]:
        """The Hkv key and value heads of every position (what a cache stores). With a ``rotary``
        part (chapter 10) each new key is turned by its own position before it is stored, so a
        cached key is never turned again.

        Shape:
            key, value: (B, S, D) → (B, Hkv, S, Dk), (B, Hkv, S, Dv)
        """
        if cache is not None and cache.static and len(cache):  # cross-attention: the memory is projected
            return cache.keys, cache.values
        k = split_heads(self.w_k(key), self.n_kv_heads)  # (B, Hkv, S, Dk)
        v = split_heads(self.w_v(value), self.n_kv_heads)  # (B, Hkv, S, Dv)
        k = self.positioned(k, cache)  # (B, Hkv, S, Dk), turned by their positions where rotary
        return (k, v) if cache is None else cache.update(k, v)

    def grouped(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Each of the Hkv key and value heads repeated for its group of query heads: (B, H, S, ·)."""
        n_rep = self.n_heads // self.n_kv_heads
        if n_rep == 1:  # the paper's attention: one key head per query head (chapter 04 never groups)
            return keys, values
        return repeat_kv(keys, n_rep), repeat_kv(values, n_rep)

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor, cache: KVCache | None = None) -> None:
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
        if self.rotary is not None and (key.shape[1] != query.shape[1] or (cache is not None and cache.static)):
            raise ValueError("rotary attention is self-attention: query, key and value are the same positions")

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
