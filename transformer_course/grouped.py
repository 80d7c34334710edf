"""Chapter 13 — grouped-query attention (Ainslie et al. 2023; Llama 2 70B, Llama 3, Mistral).

A decoding step reads the keys and values of every earlier position from the KV cache (chapter
09), H heads of them per layer. Grouped-query attention keeps fewer key/value heads, Hkv, and lets
each group of H/Hkv query heads share one: W^K and W^V have Hkv·Dk and Hkv·Dv outputs, the cache
holds Hkv heads, and H/Hkv times fewer bytes are read per step. Hkv = H is the paper's multi-head
attention; Hkv = 1 is multi-query attention (Shazeer 2019).
"""

from __future__ import annotations

from torch import Tensor, nn

from ._validate import check_ndim
from .cache import swapped
from .multihead import MultiHeadAttention, merge_heads, split_heads


def repeat_kv(x: Tensor, n_rep: int) -> Tensor:
    """Give each of the H = Hkv·n_rep query heads its group's key or value head: query heads
    0 … n_rep-1 share key/value head 0, the next n_rep head 1, …

    Shape:
        x: (B, Hkv, S, D) → (B, Hkv·n_rep, S, D); with n_rep = 1, ``x`` as it is
    """
    check_ndim(x, 4, "x", "(B, Hkv, S, D)")
    if not isinstance(n_rep, int) or n_rep < 1:
        raise ValueError(f"n_rep must be an integer >= 1, got {n_rep!r}")
    ### BEGIN SOLUTION
    batch, kv_heads, length, features = x.shape
    x = x[:, :, None].expand(batch, kv_heads, n_rep, length, features)  # (B, Hkv, n_rep, S, D), no copy yet
    return x.reshape(batch, kv_heads * n_rep, length, features)  # (B, H, S, D): each group's head n_rep times
    ### END SOLUTION


class GroupedQueryAttention(MultiHeadAttention):
    """:class:`~transformer_course.multihead.MultiHeadAttention` whose H query heads share
    ``n_kv_heads`` key/value heads, H/Hkv query heads to a group.

    Args: those of ``MultiHeadAttention``, then ``n_kv_heads`` (Hkv, a divisor of H; None = H, the
    paper's attention).

    Shape: as ``MultiHeadAttention``; a KV cache holds the keys and values of Hkv heads.

    The forward is chapter 04's, run on :meth:`as_multi_head`: a copy with the same weights whose
    W^K and W^V repeat each key and value head for its group (:class:`Repeated`).
    """

    def __init__(self, d_model: int, n_heads: int, d_k: int | None = None, d_v: int | None = None,
                 dropout: float = 0.0, bias: bool = True, n_kv_heads: int | None = None) -> None:  # fmt: skip
        super().__init__(d_model, n_heads, d_k, d_v, dropout, bias)
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if not isinstance(n_kv_heads, int) or n_kv_heads < 1 or n_heads % n_kv_heads:
            raise ValueError(
                f"n_kv_heads must be a divisor of n_heads={n_heads} (or None for {n_heads}), got {n_kv_heads!r}"
            )
        self.n_kv_heads = n_kv_heads
        if n_kv_heads != n_heads:  # smaller W^K and W^V: Hkv heads of Dk and Dv features
            self.w_k = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
            self.w_v = nn.Linear(d_model, n_kv_heads * self.d_v, bias=bias)
            for linear in (self.w_k, self.w_v):
                nn.init.xavier_uniform_(linear.weight)
                if bias:
                    nn.init.zeros_(linear.bias)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None,
                need_weights: bool = False, *, fast: bool = True) -> tuple[Tensor, Tensor | None]:  # fmt: skip
        return MultiHeadAttention.forward(self.as_multi_head(), query, key, value, mask, need_weights, fast=fast)

    def as_multi_head(self) -> nn.Module:
        """This attention as chapter 04's forward reads it: a copy with the same weights whose W^K and
        W^V give every query head its group's key and value head."""
        n_rep = self.n_heads // self.n_kv_heads
        if n_rep == 1:  # one key and value head per query head: the paper's attention
            return self
        keys, values = Repeated(self.w_k, self.n_kv_heads, n_rep), Repeated(self.w_v, self.n_kv_heads, n_rep)
        return swapped(self, w_k=keys, w_v=values)


class Repeated(nn.Module):
    """W^K or W^V of grouped-query attention as chapter 04's attention reads it: the Hkv heads that
    ``projection`` gives, each repeated for its group of ``n_rep`` query heads.

    Shape:
        x: (B, S, D) → (B, S, Hkv·n_rep·d), query head h reading key/value head h // n_rep
    """

    def __init__(self, projection: nn.Module, n_kv_heads: int, n_rep: int) -> None:
        super().__init__()
        self.projection, self.n_kv_heads, self.n_rep = projection, n_kv_heads, n_rep

    def forward(self, x: Tensor) -> Tensor:
        heads = split_heads(self.projection(x), self.n_kv_heads)  # (B, Hkv, S, d)
        return merge_heads(repeat_kv(heads, self.n_rep))  # (B, S, H·d)
