"""Checks for chapter 04 — multi-head attention.

References are independent of the package: heads cut with ``chunk`` and glued back with
``cat``, PyTorch's ``nn.MultiheadAttention``, and a loop over the heads written with plain
torch operations from the module's own weights.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from ._tools import CheckFailure, call, expect_close, expect_finite, expect_shape
from .registry import exercise

# (B, T, D, H): odd sizes, one head, one token, so that a wrong axis cannot pass by luck
_SPLIT_SIZES = [(2, 7, 12, 3), (2, 5, 12, 6), (3, 5, 6, 1), (1, 1, 4, 4), (2, 3, 10, 2)]


def _reference_split(x: Tensor, n_heads: int) -> Tensor:
    """Head h holds the h-th block of features: (B, T, H·Dh) → (B, H, T, Dh)."""
    return torch.stack(x.chunk(n_heads, dim=-1), dim=1)


@exercise("ex04_1", "transformer_course.multihead:split_heads", "easy")
def check_split_heads(impl: Callable) -> int:
    """split the features into heads

    Hint: view x as (B, T, H, Dh), then swap the T and H axes with transpose(1, 2).
    """
    for b, t, d, h in _SPLIT_SIZES:
        x = torch.randn(b, t, d)
        case = f"x {tuple(x.shape)}, n_heads={h}"
        want = _reference_split(x, h)
        got = expect_shape(call(impl, x, h, case=case), tuple(want.shape), "heads", case)
        if h > 1 and t > 1:
            if torch.equal(got, x.reshape(b, h, t, d // h)):
                raise CheckFailure(
                    f"{case}: x.view(B, H, T, Dh) without a transpose fills each head with pieces of "
                    "several tokens; view as (B, T, H, Dh), then transpose(1, 2)"
                )
            if torch.equal(got, x.reshape(b, t, d // h, h).permute(0, 3, 1, 2)):
                raise CheckFailure(
                    f"{case}: head i must get the contiguous block of features i·Dh … (i+1)·Dh - 1, "
                    "not every H-th feature: view as (B, T, H, Dh), not (B, T, Dh, H)"
                )
        expect_close(got, want, "heads", case, atol=0.0, rtol=0.0)
    return len(_SPLIT_SIZES)


@exercise("ex04_2", "transformer_course.multihead:merge_heads", "medium")
def check_merge_heads(impl: Callable) -> int:
    """merge the heads back (concat)

    Hint: transpose(1, 2) back to (B, T, H, Dh), then reshape to (B, T, H·Dh); view fails after a transpose,
    reshape copies when it must.
    """
    cases = 0
    for b, t, d, h in _SPLIT_SIZES:
        for contiguous in (True, False):
            if contiguous:
                heads = torch.randn(b, h, t, d // h)
                case = f"heads {tuple(heads.shape)}"
            else:  # what split_heads returns: a transposed view
                heads = torch.randn(b, t, h, d // h).transpose(1, 2)
                case = f"heads {tuple(heads.shape)} (non-contiguous, as split_heads returns it)"
            want = torch.cat(heads.unbind(dim=1), dim=-1)  # (B, T, H·Dh): Concat(head_1, …, head_h)
            got = expect_shape(call(impl, heads, case=case), (b, t, d), "merged", case)
            if h > 1 and t > 1 and torch.equal(got, heads.reshape(b, t, d)):
                raise CheckFailure(
                    f"{case}: reshaping (B, H, T, Dh) straight to (B, T, H·Dh) mixes tokens and heads; "
                    "transpose(1, 2) first"
                )
            expect_close(got, want, "merged", case, atol=0.0, rtol=0.0)
            cases += 1
    x = torch.randn(2, 5, 12)
    case = "merge_heads(split(x)) for x (2, 5, 12), 3 heads"
    expect_close(call(impl, _reference_split(x, 3), case=case), x, "round trip", case, atol=0.0, rtol=0.0)
    return cases + 1


def _per_head_reference(mha: nn.Module, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None):
    """Equations of §3.2.2 head by head, from the module's weights (no split/merge, no package code)."""
    b, t, _ = query.shape
    s, h, d_k, d_v = key.shape[1], mha.n_heads, mha.d_k, mha.d_v

    def project(linear: nn.Linear, x: Tensor, rows: slice) -> Tensor:
        bias = 0.0 if linear.bias is None else linear.bias[rows]
        return x @ linear.weight[rows].T + bias

    outputs, weights = [], []
    for i in range(h):
        q = project(mha.w_q, query, slice(i * d_k, (i + 1) * d_k))  # (B, T, Dk)
        k = project(mha.w_k, key, slice(i * d_k, (i + 1) * d_k))  # (B, S, Dk)
        v = project(mha.w_v, value, slice(i * d_v, (i + 1) * d_v))  # (B, S, Dv)
        scores = q @ k.transpose(1, 2) / math.sqrt(d_k)  # (B, T, S)
        if mask is not None:
            keep = mask.expand(b, h, t, s)[:, i]  # (B, T, S)
            scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
        w = scores.softmax(dim=-1)
        outputs.append(w @ v)
        weights.append(w)
    concat = torch.cat(outputs, dim=-1)  # (B, T, H·Dv)
    out = concat @ mha.w_o.weight.T + (0.0 if mha.w_o.bias is None else mha.w_o.bias)
    return out, torch.stack(weights, dim=1), concat  # (B, T, D), (B, H, T, S), (B, T, H·Dv)


def _expect_output(out: Tensor, want: Tensor, concat: Tensor, case: str) -> None:
    if isinstance(out, Tensor) and out.shape == concat.shape and torch.allclose(out, concat, atol=1e-5):
        raise CheckFailure(f"{case}: the output is the concatenated heads: apply the output projection W^O (self.w_o)")
    expect_close(out, want, "output", case)


def _forward(
    impl: Callable,
    mha: nn.Module,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    need: bool,
    case: str,
    **cache: object,
):
    result = call(impl, mha, q, k, v, mask=mask, need_weights=need, case=case, **cache)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise CheckFailure(f"{case}: forward must return a tuple (output, weights), got {type(result).__name__}")
    out, weights = result
    if need:
        b, t, s = q.shape[0], q.shape[1], k.shape[1]
        if isinstance(weights, Tensor) and tuple(weights.shape) == (b, t, s) and mha.n_heads > 1:
            raise CheckFailure(
                f"{case}: need_weights=True must return one map per head, (B, H, T, S) = "
                f"{(b, mha.n_heads, t, s)}, not the average over heads {(b, t, s)}"
            )
        expect_shape(weights, (b, mha.n_heads, t, s), "weights", case)
        keep = None if mask is None else mask.expand_as(weights)
        if keep is not None and (weights[~keep & keep.any(-1, keepdim=True)] > 1e-6).any():
            raise CheckFailure(
                f"{case}: weights are non-zero where mask is False; our masks mean True = may attend "
                "(nn.MultiheadAttention's masks use the opposite polarity)"
            )
    return out, weights


def _both_paths(impl: Callable, mha: nn.Module, inputs: tuple, mask: Tensor | None, wanted: tuple, setting: str,
                mask_name: str) -> int:  # fmt: skip
    """Compare the teaching path (``need_weights=True``) and the fast path with the expected output
    and weights ``wanted = (output, weights, concatenated heads)``."""
    query, key, value = inputs
    want, want_weights, concat = wanted
    for need in (True, False):
        case = (
            f"{setting}, query {tuple(query.shape)}, key/value {tuple(key.shape)}, mask {mask_name}, "
            f"need_weights={need}"
        )
        out, weights = _forward(impl, mha, query, key, value, mask, need, case)
        expect_finite(out, "output", case)
        _expect_output(out, want, concat, case)
        if need:
            expect_close(weights, want_weights, "weights", case)
    return 2


def _randomise_biases(module: nn.Module) -> None:
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "bias" in name:
                p.normal_(0.0, 0.5)  # non-zero biases, so that a misplaced bias shows


@exercise(
    "ex04_3", "transformer_course.multihead:MultiHeadAttention.forward", "hard", needs=("ex03_3", "ex04_1", "ex04_2")
)
def check_multihead_forward(impl: Callable) -> int:
    """multi-head attention forward

    Hint: project the query with w_q and split_heads it; get the keys and values from self.keys_and_values(key,
    value, cache); run attention on (B, H, T, Dk) with the mask (teaching path when need_weights, else the fast
    path); merge_heads, then apply w_o.
    """
    from ...multihead import MultiHeadAttention  # the module class only: its forward is `impl`

    cases = 0
    # 1. Against nn.MultiheadAttention with the same weights (its masks: True = blocked).
    for b, t, s, d, h in [(2, 7, 5, 12, 3), (2, 5, 5, 12, 3), (3, 4, 6, 8, 1), (1, 1, 1, 4, 2)]:
        torch_mha = nn.MultiheadAttention(d, h, dropout=0.25, batch_first=True)
        _randomise_biases(torch_mha)
        torch_mha.eval()  # no dropout at evaluation: ours must switch it off too
        ours = MultiHeadAttention.from_torch(torch_mha).eval()
        query, key, value = torch.randn(b, t, d), torch.randn(b, s, d), torch.randn(b, s, d)
        if s == t:  # self-attention: the same tensor three times
            key = value = query
        padding = torch.ones(b, 1, 1, s, dtype=torch.bool)
        padding[0, ..., (s + 1) // 2 :] = False  # the first sequence is padded
        pattern = torch.ones(t, s, dtype=torch.bool).tril() if s == t else torch.rand(t, s) > 0.4
        pattern[:, 0] = True  # no fully masked row (nn.MultiheadAttention would give NaN)
        masks = [
            ("None", None, {}),
            (f"key padding {tuple(padding.shape)}", padding, {"key_padding_mask": ~padding[:, 0, 0, :]}),
            (f"{'causal' if s == t else 'pattern'} {tuple(pattern.shape)}", pattern, {"attn_mask": ~pattern}),
        ]
        for mask_name, mask, torch_masks in masks:
            with torch.no_grad():
                want, want_weights = torch_mha(
                    query, key, value, need_weights=True, average_attn_weights=False, **torch_masks
                )
                _, _, concat = _per_head_reference(ours, query, key, value, mask)
            setting = f"MultiHeadAttention(d_model={d}, n_heads={h}) vs nn.MultiheadAttention"
            cases += _both_paths(
                impl, ours, (query, key, value), mask, (want, want_weights, concat), setting, mask_name
            )

    # 2. d_k != d_v (and D not divisible by H) against the head-by-head closed form.
    for d, h, d_k, d_v in [(12, 3, 5, 7), (9, 2, 4, 3)]:
        mha = MultiHeadAttention(d, h, d_k=d_k, d_v=d_v)
        _randomise_biases(mha)
        b, t, s = 2, 5, 7
        query, key, value = torch.randn(b, t, d), torch.randn(b, s, d), torch.randn(b, s, d)
        padding = torch.ones(b, 1, 1, s, dtype=torch.bool)
        padding[1, ..., 4:] = False
        full = padding.clone()
        full[0] = False  # the whole first sequence is padding: finite output, uniform weights
        for mask_name, mask in (("None", None), ("key padding (B, 1, 1, S)", padding), ("fully padded", full)):
            with torch.no_grad():
                want, want_weights, concat = _per_head_reference(mha, query, key, value, mask)
            setting = f"MultiHeadAttention(d_model={d}, n_heads={h}, d_k={d_k}, d_v={d_v})"
            cases += _both_paths(impl, mha, (query, key, value), mask, (want, want_weights, concat), setting, mask_name)

    # 3. Dropout on the attention weights is active in training mode only.
    mha = MultiHeadAttention(12, 3, dropout=0.5).train()
    x = torch.randn(2, 5, 12)
    case = "MultiHeadAttention(12, 3, dropout=0.5) in training mode"
    with torch.no_grad():
        want, _, _ = _per_head_reference(mha, x, x, x, None)
    out, _ = _forward(impl, mha, x, x, x, None, False, case)
    expect_shape(out, tuple(want.shape), "output", case)
    if torch.allclose(out, want, atol=1e-5):
        raise CheckFailure(f"{case}: no dropout was applied; use dropout_p = self.dropout when self.training")
    return cases + 1 + _check_cache(impl)


def _check_cache(impl: Callable) -> int:
    """Chapter 08's cache goes through ``self.keys_and_values(key, value, cache)``: a second call
    with a cache must attend to the keys and values of the first call too."""
    from ...cache import KVCache
    from ...multihead import MultiHeadAttention

    mha = MultiHeadAttention(12, 3).eval()
    _randomise_biases(mha)
    first, new = torch.randn(2, 3, 12), torch.randn(2, 2, 12)
    cache = KVCache()
    case = "a self-attention cache: 3 positions, then 2 new ones attending to all 5 (chapter 08)"
    with torch.no_grad():
        _forward(impl, mha, first, first, first, None, False, case, cache=cache)
        out, _ = _forward(impl, mha, new, new, new, None, False, case, cache=cache)
        everything = torch.cat([first, new], dim=1)
        want, _, concat = _per_head_reference(mha, new, everything, everything, None)
    if len(cache) != 5:
        raise CheckFailure(
            f"{case}: the cache holds {len(cache)} positions, expected 5: pass `cache` on to "
            "self.keys_and_values(key, value, cache)"
        )
    _expect_output(out, want, concat, case)
    memory, queries = torch.randn(2, 4, 12), torch.randn(2, 1, 12)
    cache = KVCache(static=True)
    case = "a cross-attention cache (static): the memory's keys and values are kept after the first call"
    with torch.no_grad():
        _forward(impl, mha, queries, memory, memory, None, False, case, cache=cache)
        out, _ = _forward(impl, mha, queries, memory, memory, None, False, case, cache=cache)
        want, _, concat = _per_head_reference(mha, queries, memory, memory, None)
    if len(cache) != 4:
        raise CheckFailure(f"{case}: the cache holds {len(cache)} positions, expected the 4 of the memory")
    _expect_output(out, want, concat, case)
    return 2
