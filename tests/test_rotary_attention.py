"""Chapter 13's rotary self-attention (``RotaryAttention``) against a by-hand reference (2×2
rotations in float64, a loop over the heads), and its defining property: after any W^Q and W^K, what
a query takes from a key depends on their distance, not on where the pair sits."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_course.cache import KVCache, swapped, with_cache
from transformer_course.multihead import MultiHeadAttention
from transformer_course.rotary import RotaryAttention

# B=2, D=24, H=6 query heads of 4 features, T=9 positions
B, D, H, L = 2, 24, 6, 9
D_K = D // H
BASE = 10000.0


def _rotary(n_kv_heads: int | None = None, seed: int = 0, **kwargs) -> RotaryAttention:
    torch.manual_seed(seed)
    module = RotaryAttention(D, H, n_kv_heads=n_kv_heads, **kwargs).eval()
    with torch.no_grad():
        for linear in (module.w_q, module.w_k, module.w_v, module.w_o):
            linear.bias.normal_()
    return module


def _causal(length: int) -> torch.Tensor:
    return torch.ones(length, length, dtype=torch.bool).tril()


def _rotate_by_hand(x: torch.Tensor, positions: list[int], base: float = BASE) -> torch.Tensor:
    """Pair (2i, 2i+1) of the row at position p turned by p · base^(−2i/d), one 2×2 matrix at a time.

    Shape: x (B, T, d) float64 → (B, T, d)"""
    out, d = x.clone(), x.shape[-1]
    for t, p in enumerate(positions):
        for i in range(d // 2):
            angle = p * base ** (-2 * i / d)
            c, s = math.cos(angle), math.sin(angle)
            even, odd = x[:, t, 2 * i], x[:, t, 2 * i + 1]
            out[:, t, 2 * i], out[:, t, 2 * i + 1] = c * even - s * odd, s * even + c * odd
    return out


def _by_hand(module: RotaryAttention, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Rotary self-attention head by head in float64: rotate q and k by their positions, then the paper's
    attention; query head h reads key/value head h // (H / Hkv)."""
    length, group = x.shape[1], module.n_heads // module.n_kv_heads
    x = x.double()

    def project(linear: torch.nn.Linear) -> torch.Tensor:
        return x @ linear.weight.double().T + linear.bias.double()

    q, k, v = project(module.w_q), project(module.w_k), project(module.w_v)
    heads = []
    for h in range(module.n_heads):
        g = h // group
        q_h = _rotate_by_hand(q[..., h * D_K : (h + 1) * D_K], list(range(length)), module.base)  # (B, T, Dk)
        k_g = _rotate_by_hand(k[..., g * D_K : (g + 1) * D_K], list(range(length)), module.base)
        scores = (q_h @ k_g.transpose(1, 2) / math.sqrt(D_K)).masked_fill(~mask, -math.inf)  # (B, T, T)
        heads.append(scores.softmax(-1) @ v[..., g * D_K : (g + 1) * D_K])
    return (torch.cat(heads, -1) @ module.w_o.weight.double().T + module.w_o.bias.double()).float()


@pytest.mark.parametrize("n_kv_heads", [None, 3, 1])
@pytest.mark.parametrize("path", ["fast", "teaching"])
def test_rotary_attention_equals_rotations_by_hand(n_kv_heads: int | None, path: str) -> None:
    module, x = _rotary(n_kv_heads), torch.randn(B, L, D)
    out, weights = module(x, x, x, _causal(L), fast=path == "fast")
    torch.testing.assert_close(out, _by_hand(module, x, _causal(L)), atol=1e-5, rtol=1e-5)
    assert (weights is None) == (path == "fast")


def test_rotation_changes_the_result_and_makes_equal_tokens_tell_positions_apart() -> None:
    """With the same weights, plain attention gives every position of a text of identical tokens the
    same output; rotary attention does not (the scores depend on the distances)."""
    rotary = _rotary()
    plain = MultiHeadAttention(D, H).eval()
    plain.load_state_dict(rotary.state_dict())
    x = torch.randn(1, 1, D).expand(B, L, D)  # the same token everywhere
    _, uniform = plain(x, x, x, need_weights=True)
    _, rotated = rotary(x, x, x, need_weights=True)
    torch.testing.assert_close(uniform, torch.full_like(uniform, 1 / L))
    assert (rotated - 1 / L).abs().max() > 1e-3


@pytest.mark.parametrize("shift", [1, 5, 40])
@pytest.mark.parametrize("n_kv_heads", [None, 2])
def test_what_a_query_takes_from_a_key_depends_only_on_their_distance(shift: int, n_kv_heads: int | None) -> None:
    """The text at positions shift … shift+T-1 (after ``shift`` other tokens, hidden from it) gives
    the same weights and outputs as at positions 0 … T-1: every score depends on p − p' only."""
    module, x = _rotary(n_kv_heads), torch.randn(B, L, D)
    plain_out, plain_weights = module(x, x, x, _causal(L), need_weights=True)
    cache = KVCache()
    before = torch.randn(B, shift, D)
    with_cache(module, cache)(before, before, before, _causal(shift))  # positions 0 … shift-1
    hidden = torch.cat([torch.zeros(L, shift, dtype=torch.bool), _causal(L)], dim=1)  # (T, shift+T)
    out, weights = with_cache(module, cache)(x, x, x, hidden, need_weights=True)  # positions shift … shift+T-1
    torch.testing.assert_close(weights[..., shift:], plain_weights, atol=1e-5, rtol=1e-5)
    assert (weights[..., :shift] == 0).all()
    torch.testing.assert_close(out, plain_out, atol=1e-5, rtol=1e-5)


class KeysNeverTurned(RotaryAttention):
    """The bug: only the queries are turned (one key/value head per query head)."""

    def as_multi_head(self) -> torch.nn.Module:
        inner = super().as_multi_head()
        return swapped(inner, w_k=inner.w_k.projection)  # W^K as it projects, never turned


def test_the_shift_test_fails_without_rotated_keys() -> None:
    """Rotating only the queries makes the scores depend on where the query is: the test above sees it."""
    module, x = _rotary(), torch.randn(B, L, D)
    plain_out, _ = module(x, x, x, _causal(L))
    module.__class__ = KeysNeverTurned
    cache = KVCache()
    before = torch.randn(B, 5, D)
    with_cache(module, cache)(before, before, before, _causal(5))
    hidden = torch.cat([torch.zeros(L, 5, dtype=torch.bool), _causal(L)], dim=1)
    out, _ = with_cache(module, cache)(x, x, x, hidden)
    assert not torch.allclose(out, plain_out, atol=1e-3)


@pytest.mark.parametrize("grad", [False, True], ids=["no-grad", "autograd"])
@pytest.mark.parametrize("n_kv_heads", [None, 2, 1])
def test_cached_rotary_attention_equals_the_uncached_pass(n_kv_heads: int | None, grad: bool) -> None:
    """A chunk of 3, one token at a time, then a chunk of 3: the cache keeps the keys as W^K gave
    them, and every step turns each key by its own position."""
    module, x = _rotary(n_kv_heads), torch.randn(B, L, D)
    causal, cache = _causal(L), KVCache()
    with torch.set_grad_enabled(grad):
        expected, _ = module(x, x, x, causal)
        pieces = [with_cache(module, cache)(x[:, :3], x[:, :3], x[:, :3], causal[:3, :3])[0]]
        for t in range(3, 6):
            step = x[:, t : t + 1]
            pieces.append(with_cache(module, cache)(step, step, step, None)[0])  # one new token sees every key
        pieces.append(with_cache(module, cache)(x[:, 6:], x[:, 6:], x[:, 6:], causal[6:])[0])
    torch.testing.assert_close(torch.cat(pieces, 1), expected, atol=1e-5, rtol=1e-5)
    kv = n_kv_heads or H
    assert cache.keys.shape == (B, L, kv * module.d_k)
    torch.testing.assert_close(cache.keys, module.w_k(x), atol=1e-6, rtol=1e-6)  # (B, T, Hkv·Dk), not turned
    torch.testing.assert_close(cache.values, module.w_v(x), atol=1e-6, rtol=1e-6)


def test_rotary_attention_is_self_attention_only() -> None:
    module = _rotary()
    x, memory = torch.randn(B, 4, D), torch.randn(B, 7, D)
    with pytest.raises(ValueError, match="rotary attention is self-attention"):
        module(x, memory, memory)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(d_model=15, n_heads=5), "d_k must be even, got 3"),
        (dict(d_model=24, n_heads=6, d_k=5), "d_k must be even, got 5"),
        (dict(d_model=24, n_heads=6, base=1.0), "base must be > 1"),
        (dict(d_model=24, n_heads=6, n_kv_heads=4), "n_kv_heads must be a divisor of n_heads=6"),
    ],
)
def test_rotary_attention_rejects_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RotaryAttention(**kwargs)


def test_the_base_sets_the_wavelengths() -> None:
    x = torch.randn(B, L, D)
    slow, fast = _rotary(base=10000.0), _rotary(base=100.0)
    torch.testing.assert_close(fast(x, x, x, _causal(L))[0], _by_hand(fast, x, _causal(L)), atol=1e-5, rtol=1e-5)
    assert not torch.allclose(slow(x, x, x, _causal(L))[0], fast(x, x, x, _causal(L))[0], atol=1e-3)
