"""Grouped-query attention (chapter 13: ``GroupedQueryAttention(..., n_kv_heads=Hkv)``) against
independent references: PyTorch's ``scaled_dot_product_attention(..., enable_gqa=True)`` and a loop
over the heads in float64; ``n_kv_heads=None`` is chapter 04's module, bit for bit."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_course import grouped
from transformer_course.cache import KVCache, with_cache
from transformer_course.grouped import GroupedQueryAttention, repeat_kv
from transformer_course.multihead import MultiHeadAttention

# B=2, T=5 queries, S=7 keys, D=24, H=6 query heads: groups of 2 (Hkv=3), 3 (Hkv=2), 6 (Hkv=1)
B, T, S, D, H = 2, 5, 7, 24, 6
TORCH_HAS_GQA = tuple(int(part) for part in torch.__version__.split(".")[:2]) >= (2, 5)


def _mha(n_kv_heads: int | None, seed: int = 0, **kwargs) -> GroupedQueryAttention:
    torch.manual_seed(seed)
    module = GroupedQueryAttention(D, H, n_kv_heads=n_kv_heads, **kwargs).eval()
    with torch.no_grad():  # non-zero biases, so a bias on the wrong heads shows
        for linear in (module.w_q, module.w_k, module.w_v, module.w_o):
            if linear.bias is not None:
                linear.bias.normal_()
    return module


def _inputs(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    q, kv = torch.randn(B, T, D, generator=generator), torch.randn(B, S, D, generator=generator)
    mask = torch.rand(B, 1, T, S, generator=generator) > 0.3  # (B, 1, T, S)
    mask[..., 0] = True  # no empty row
    return q, kv, mask


def _per_head_loop(module: MultiHeadAttention, query, key, value, mask) -> torch.Tensor:  # noqa: ANN001
    """Query head h reads key/value head h // (H / Hkv), head by head, in float64."""
    d_k, d_v, group = module.d_k, module.d_v, module.n_heads // module.n_kv_heads
    q = query.double() @ module.w_q.weight.double().T + module.w_q.bias.double()  # (B, T, H·Dk)
    k = key.double() @ module.w_k.weight.double().T + module.w_k.bias.double()  # (B, S, Hkv·Dk)
    v = value.double() @ module.w_v.weight.double().T + module.w_v.bias.double()  # (B, S, Hkv·Dv)
    heads = []
    for h in range(module.n_heads):
        g = h // group
        scores = q[..., h * d_k : (h + 1) * d_k] @ k[..., g * d_k : (g + 1) * d_k].transpose(1, 2) / math.sqrt(d_k)
        scores = scores.masked_fill(~mask[:, 0], -math.inf)  # (B, T, S)
        heads.append(scores.softmax(-1) @ v[..., g * d_v : (g + 1) * d_v])  # (B, T, Dv)
    return (torch.cat(heads, -1) @ module.w_o.weight.double().T + module.w_o.bias.double()).float()  # (B, T, D)


# -- n_kv_heads=None is the paper's module ------------------------------------------------------------


def _seeded(cls: type = GroupedQueryAttention, **kwargs) -> MultiHeadAttention:
    torch.manual_seed(0)
    return cls(D, H, **kwargs).eval()


def test_n_kv_heads_none_is_chapter_04s_module_bit_for_bit() -> None:
    plain, default, explicit = _seeded(MultiHeadAttention), _seeded(n_kv_heads=None), _seeded(n_kv_heads=H)
    keys = ["w_q.weight", "w_q.bias", "w_k.weight", "w_k.bias", "w_v.weight", "w_v.bias", "w_o.weight", "w_o.bias"]
    assert list(plain.state_dict()) == list(default.state_dict()) == list(explicit.state_dict()) == keys
    assert default.n_kv_heads == H and default.w_k.weight.shape == default.w_v.weight.shape == (D, D)
    for name, tensor in plain.state_dict().items():
        assert torch.equal(tensor, default.state_dict()[name]) and torch.equal(tensor, explicit.state_dict()[name])
    query, kv, mask = _inputs()
    for kwargs in (dict(), dict(need_weights=True), dict(fast=False)):
        out, weights = plain(query, kv, kv, mask, **kwargs)
        for other in (default, explicit):
            same, same_weights = other(query, kv, kv, mask, **kwargs)
            assert torch.equal(out, same)
            assert (weights is None and same_weights is None) or torch.equal(weights, same_weights)


# -- sizes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n_kv_heads", "d_k", "d_v"), [(3, None, None), (2, None, None), (1, None, None), (2, 6, 10)])
def test_the_key_and_value_projections_have_n_kv_heads_heads(n_kv_heads: int, d_k: int | None, d_v: int | None):
    module = GroupedQueryAttention(D, H, d_k, d_v, n_kv_heads=n_kv_heads)
    d_k, d_v = d_k or D // H, d_v or D // H
    assert (module.w_q.in_features, module.w_q.out_features) == (D, H * d_k)
    assert (module.w_k.in_features, module.w_k.out_features) == (D, n_kv_heads * d_k)
    assert (module.w_v.in_features, module.w_v.out_features) == (D, n_kv_heads * d_v)
    assert (module.w_o.in_features, module.w_o.out_features) == (H * d_v, D)
    full = sum(p.numel() for p in MultiHeadAttention(D, H, d_k, d_v).parameters())
    saved = (H - n_kv_heads) * (d_k + d_v) * (D + 1)  # weights and biases of the dropped key/value heads
    assert sum(p.numel() for p in module.parameters()) == full - saved


@pytest.mark.parametrize("n_kv_heads", [0, 4, 12, -2, 2.0, "2"])
def test_n_kv_heads_must_divide_n_heads(n_kv_heads) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="n_kv_heads must be a divisor of n_heads=6"):
        GroupedQueryAttention(D, H, n_kv_heads=n_kv_heads)


def test_repeat_kv_gives_each_group_of_query_heads_its_own_head() -> None:
    x = torch.randn(2, 3, 4, 5)  # (B, Hkv, S, D)
    assert torch.equal(repeat_kv(x, 2), x.repeat_interleave(2, dim=1))  # heads 0, 0, 1, 1, 2, 2
    assert torch.equal(repeat_kv(x, 1), x)
    assert not torch.equal(repeat_kv(x, 2), x.repeat(1, 2, 1, 1))  # 0, 1, 2, 0, 1, 2 is another model


# -- the computation -----------------------------------------------------------------------------


@pytest.mark.parametrize("n_kv_heads", [H, 3, 2, 1])
@pytest.mark.parametrize("path", ["fast", "teaching"])
def test_grouped_attention_equals_a_loop_over_the_heads(n_kv_heads: int, path: str) -> None:
    module = _mha(n_kv_heads)
    query, kv, mask = _inputs()
    out, _ = module(query, kv, kv, mask, fast=path == "fast")
    torch.testing.assert_close(out, _per_head_loop(module, query, kv, kv, mask), atol=1e-5, rtol=1e-5)


def test_the_loop_reference_can_tell_the_groupings_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pairing query head h with key head h % Hkv (instead of h // (H/Hkv)) gives another result."""
    module = _mha(2)
    query, kv, mask = _inputs()
    monkeypatch.setattr(grouped, "repeat_kv", lambda x, n_rep: x.repeat(1, n_rep, 1, 1))  # 0, 1, 0, 1, 0, 1
    wrong, _ = module(query, kv, kv, mask)
    monkeypatch.undo()
    assert not torch.allclose(wrong, _per_head_loop(module, query, kv, kv, mask), atol=1e-3)


@pytest.mark.skipif(not TORCH_HAS_GQA, reason="scaled_dot_product_attention(enable_gqa=True) needs PyTorch 2.5")
@pytest.mark.parametrize("n_kv_heads", [3, 2, 1])
def test_grouped_attention_equals_pytorchs_enable_gqa(n_kv_heads: int) -> None:
    module = _mha(n_kv_heads)
    query, kv, mask = _inputs()
    q = module.w_q(query).view(B, T, H, -1).transpose(1, 2)  # (B, H, T, Dk)
    k = module.w_k(kv).view(B, S, n_kv_heads, -1).transpose(1, 2)  # (B, Hkv, S, Dk)
    v = module.w_v(kv).view(B, S, n_kv_heads, -1).transpose(1, 2)  # (B, Hkv, S, Dv)
    heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)  # (B, H, T, Dv)
    expected = module.w_o(heads.transpose(1, 2).reshape(B, T, -1))
    out, _ = module(query, kv, kv, mask)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("n_kv_heads", [3, 1])
def test_the_weights_path_equals_the_fast_path(n_kv_heads: int) -> None:
    module = _mha(n_kv_heads)
    query, kv, mask = _inputs()
    fast, none = module(query, kv, kv, mask)
    slow, weights = module(query, kv, kv, mask, need_weights=True)
    assert none is None and weights.shape == (B, H, T, S)
    torch.testing.assert_close(slow, fast, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T))
    assert (weights.masked_select(~mask.expand(B, H, T, S)) == 0).all()
    group = H // n_kv_heads  # heads of one group see the same keys but ask other queries
    assert not torch.allclose(weights[:, 0], weights[:, group - 1]) or group == 1


# -- the cache ------------------------------------------------------------------------------------


def _decode_in_pieces(module: MultiHeadAttention, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
    """Self-attention over x (B, L, D) with a causal mask, fed as a chunk of 3, then one by one."""
    length = x.shape[1]
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    out = [with_cache(module, cache)(x[:, :3], x[:, :3], x[:, :3], causal[:3, :3])[0]]
    for t in range(3, length):
        out.append(
            with_cache(module, cache)(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], causal[t : t + 1, : t + 1])[0]
        )
    return torch.cat(out, dim=1)  # (B, L, D)


@pytest.mark.parametrize("grad", [False, True], ids=["no-grad", "autograd"])
@pytest.mark.parametrize("n_kv_heads", [H, 2, 1])
def test_the_cache_holds_n_kv_heads_heads_and_gives_the_uncached_result(n_kv_heads: int, grad: bool) -> None:
    module, x = _mha(n_kv_heads), torch.randn(B, 8, D)
    causal = torch.ones(8, 8, dtype=torch.bool).tril()
    cache = KVCache()
    with torch.set_grad_enabled(grad):
        expected, _ = module(x, x, x, causal)
        pieces = _decode_in_pieces(module, x, cache)
    torch.testing.assert_close(pieces, expected, atol=1e-5, rtol=1e-5)
    assert cache.keys.shape == (B, 8, n_kv_heads * D // H) and cache.values.shape == (B, 8, n_kv_heads * D // H)


def test_the_cache_shrinks_by_h_over_hkv() -> None:
    x = torch.randn(B, 8, D)
    held = {}
    for n_kv_heads in (H, 3, 2, 1):
        cache = KVCache()
        with torch.no_grad():
            _decode_in_pieces(_mha(n_kv_heads), x, cache)
        held[n_kv_heads] = cache.keys.nbytes + cache.values.nbytes
        assert held[n_kv_heads] == 2 * B * n_kv_heads * 8 * (D // H) * 4  # keys and values, float32
    assert [held[H] / held[kv] for kv in (H, 3, 2, 1)] == [1, 2, 3, 6]
