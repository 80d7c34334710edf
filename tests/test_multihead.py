"""Multi-head attention (chapter 04, paper §3.2.2).

Heads split and merged, equality with ``nn.MultiheadAttention`` (whose masks mean True =
*blocked*) through ``MultiHeadAttention.from_torch`` on both paths, d_k != d_v, padding and
fully padded sequences, gradients, parameter count and input errors. Odd sizes: B=2, T=7,
S=5, D=12, H=3.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from transformer_course.multihead import MultiHeadAttention, merge_heads, split_heads

B, T, S, D, H = 2, 7, 5, 12, 3


def _torch_pair(bias: bool = True, dropout: float = 0.0) -> tuple[nn.MultiheadAttention, MultiHeadAttention]:
    torch_mha = nn.MultiheadAttention(D, H, dropout=dropout, bias=bias, batch_first=True)
    if bias:
        with torch.no_grad():  # PyTorch starts its biases at zero: make them matter
            torch_mha.in_proj_bias.normal_()
            torch_mha.out_proj.bias.normal_()
    torch_mha.eval()
    return torch_mha, MultiHeadAttention.from_torch(torch_mha).eval()


def _padding(s: int = S) -> torch.Tensor:
    """(B, 1, 1, S), True = real token: the first sequence ends with two padding positions."""
    mask = torch.ones(B, 1, 1, s, dtype=torch.bool)
    mask[0, ..., -2:] = False
    return mask


def _forward(ours: MultiHeadAttention, path: str, query, key, value, mask=None):
    if path == "teaching":
        return ours(query, key, value, mask, need_weights=True)
    return ours(query, key, value, mask, fast=path == "fast")  # "forced teaching": fast=False, no weights asked


PATHS = ["teaching", "fast", "forced teaching"]


# --- split and merge ------------------------------------------------------------------------


def test_split_heads_gives_each_head_its_block_of_features() -> None:
    x = torch.randn(B, T, D)
    heads = split_heads(x, H)
    assert heads.shape == (B, H, T, D // H)
    for i in range(H):
        assert torch.equal(heads[:, i], x[..., i * (D // H) : (i + 1) * (D // H)])


def test_merge_heads_is_the_inverse_of_split_heads() -> None:
    x = torch.randn(B, T, D)
    assert torch.equal(merge_heads(split_heads(x, H)), x)
    heads = torch.randn(B, H, T, 5)
    merged = merge_heads(heads)
    assert merged.shape == (B, T, H * 5)
    assert torch.equal(merged, torch.cat(heads.unbind(1), dim=-1))  # Concat(head_1, …, head_h)


def test_split_heads_rejects_a_size_that_does_not_divide() -> None:
    with pytest.raises(ValueError, match="not divisible by n_heads=5"):
        split_heads(torch.randn(B, T, D), 5)


# --- equal to nn.MultiheadAttention ----------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("masks", ["none", "key padding", "causal", "padding and causal"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
def test_self_attention_equals_torch(masks, path, bias) -> None:
    torch_mha, ours = _torch_pair(bias)
    x = torch.randn(B, T, D)
    padding = _padding(T) if "padding" in masks else None  # (B, 1, 1, T)
    causal = torch.ones(T, T, dtype=torch.bool).tril() if "causal" in masks else None  # (T, T)
    mask = padding if causal is None else causal if padding is None else padding & causal
    with torch.no_grad():
        want, want_weights = torch_mha(
            x, x, x,
            key_padding_mask=None if padding is None else ~padding[:, 0, 0],  # PyTorch: True = blocked
            attn_mask=None if causal is None else ~causal,
            average_attn_weights=False,
        )  # fmt: skip
        out, weights = _forward(ours, path, x, x, x, mask)
    torch.testing.assert_close(out, want)
    if path == "fast":
        assert weights is None, "the fast path computes no weights"
    else:
        torch.testing.assert_close(weights, want_weights)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("masks", ["none", "key padding"])
def test_cross_attention_equals_torch(masks, path) -> None:
    torch_mha, ours = _torch_pair()
    query, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    mask = _padding() if masks == "key padding" else None
    with torch.no_grad():
        want, want_weights = torch_mha(
            query, memory, memory, key_padding_mask=None if mask is None else ~mask[:, 0, 0], average_attn_weights=False
        )
        out, weights = _forward(ours, path, query, memory, memory, mask)
    assert out.shape == (B, T, D)
    torch.testing.assert_close(out, want)
    if path != "fast":
        assert weights.shape == (B, H, T, S)
        torch.testing.assert_close(weights, want_weights)


def test_from_torch_copies_every_weight() -> None:
    torch_mha, ours = _torch_pair()
    w_q, w_k, w_v = torch_mha.in_proj_weight.chunk(3)
    for got, want in ((ours.w_q.weight, w_q), (ours.w_k.weight, w_k), (ours.w_v.weight, w_v),
                      (ours.w_o.weight, torch_mha.out_proj.weight), (ours.w_o.bias, torch_mha.out_proj.bias)):  # fmt: skip
        assert torch.equal(got, want)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in torch_mha.parameters())


def test_from_torch_rejects_separate_key_and_value_sizes() -> None:
    with pytest.raises(ValueError, match="kdim == vdim == embed_dim"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(D, H, kdim=5, vdim=7, batch_first=True))


# --- behaviour ------------------------------------------------------------------------------


def test_teaching_path_equals_fast_path_with_a_fully_padded_sequence() -> None:
    mha = MultiHeadAttention(D, H).eval()
    query, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    mask = _padding()
    mask[1] = False  # the second sequence is all padding
    with torch.no_grad():
        teaching, weights = mha(query, memory, memory, mask, need_weights=True)
        fast, _ = mha(query, memory, memory, mask)
    assert torch.isfinite(teaching).all() and torch.isfinite(fast).all()
    torch.testing.assert_close(fast, teaching)
    torch.testing.assert_close(weights[1], torch.full((H, T, S), 1 / S))  # nothing to attend to: uniform


@pytest.mark.parametrize("path", PATHS)
def test_padded_keys_change_nothing(path) -> None:
    mha = MultiHeadAttention(D, H).eval()
    query, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    mask = _padding()
    changed = memory.clone()
    changed[0, -2:] = torch.randn(2, D) * 100  # overwrite the padding positions of sequence 0
    with torch.no_grad():
        before, _ = _forward(mha, path, query, memory, memory, mask)
        after, _ = _forward(mha, path, query, changed, changed, mask)
        unmasked, _ = _forward(mha, path, query, changed, changed, None)
    torch.testing.assert_close(after, before)
    assert not torch.allclose(unmasked[0], before[0]), "without the mask the padding must matter"


def test_rows_of_weights_sum_to_one() -> None:
    mha = MultiHeadAttention(D, H)
    _, weights = mha(torch.randn(B, T, D), torch.randn(B, S, D), torch.randn(B, S, D), _padding(), need_weights=True)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T))
    assert (weights[0, ..., -2:] == 0).all()


@pytest.mark.parametrize("path", PATHS)
def test_gradients_reach_every_parameter_and_input(path) -> None:
    mha = MultiHeadAttention(D, H)
    query, memory = torch.randn(B, T, D, requires_grad=True), torch.randn(B, S, D, requires_grad=True)
    out, _ = _forward(mha, path, query, memory, memory, _padding())
    out.pow(2).sum().backward()
    for name, p in [*mha.named_parameters(), ("query", query), ("memory", memory)]:
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


def test_dropout_only_in_training() -> None:
    mha = MultiHeadAttention(D, H, dropout=0.5)
    x = torch.randn(B, T, D)
    mha.eval()
    with torch.no_grad():
        first, second = mha(x, x, x)[0], mha(x, x, x)[0]
        mha.train()
        trained = mha(x, x, x)[0]
    assert torch.equal(first, second)
    assert not torch.allclose(trained, first)


def test_separate_dk_and_dv_match_a_head_by_head_computation() -> None:
    mha = MultiHeadAttention(D, H, d_k=5, d_v=7)
    with torch.no_grad():
        for linear in (mha.w_q, mha.w_k, mha.w_v, mha.w_o):
            linear.bias.normal_()
    assert (mha.w_q.out_features, mha.w_k.out_features, mha.w_v.out_features) == (15, 15, 21)
    assert (mha.w_o.in_features, mha.w_o.out_features) == (21, D)
    query, memory, mask = torch.randn(B, T, D), torch.randn(B, S, D), _padding()
    heads = []
    for i in range(H):  # §3.2.2: head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)
        q = query @ mha.w_q.weight[5 * i : 5 * i + 5].T + mha.w_q.bias[5 * i : 5 * i + 5]  # (B, T, 5)
        k = memory @ mha.w_k.weight[5 * i : 5 * i + 5].T + mha.w_k.bias[5 * i : 5 * i + 5]  # (B, S, 5)
        v = memory @ mha.w_v.weight[7 * i : 7 * i + 7].T + mha.w_v.bias[7 * i : 7 * i + 7]  # (B, S, 7)
        scores = (q @ k.transpose(1, 2) / math.sqrt(5)).masked_fill(~mask[:, 0], float("-inf"))  # (B, T, S)
        heads.append(scores.softmax(-1) @ v)  # (B, T, 7)
    want = mha.w_o(torch.cat(heads, dim=-1))  # Concat(head_1, …, head_h) W^O
    with torch.no_grad():
        for path in PATHS:
            torch.testing.assert_close(_forward(mha, path, query, memory, memory, mask)[0], want)


@pytest.mark.parametrize(("d_k", "d_v"), [(None, None), (5, 7)])
def test_parameter_count_matches_the_formula(d_k, d_v) -> None:
    mha = MultiHeadAttention(D, H, d_k=d_k, d_v=d_v)
    dk, dv = d_k or D // H, d_v or D // H
    weights = 2 * D * H * dk + D * H * dv + H * dv * D  # W^Q, W^K, W^V, W^O
    biases = 2 * H * dk + H * dv + D
    assert sum(p.numel() for p in mha.parameters()) == weights + biases
    if d_k is None:
        assert weights + biases == 4 * D * D + 4 * D


# --- clear errors ---------------------------------------------------------------------------


def test_d_model_must_be_divisible_by_n_heads() -> None:
    with pytest.raises(ValueError, match="d_model=12 is not divisible by n_heads=5"):
        MultiHeadAttention(12, 5)
    MultiHeadAttention(12, 5, d_k=3, d_v=3)  # explicit head sizes need no divisibility


@pytest.mark.parametrize("kwargs", [{"d_k": 0}, {"d_v": -1}, {"dropout": 1.0}, {"n_heads": 0}])
def test_bad_sizes_and_dropout_are_errors(kwargs) -> None:
    with pytest.raises(ValueError, match="d_k and d_v|dropout|n_heads"):
        MultiHeadAttention(**{"d_model": D, "n_heads": H, **kwargs})


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("shape", [(B, 1, 1, S + 1), (B, S + 1), (B + 1, 1, 1, S), (T + 1, S)])
def test_mask_of_the_wrong_shape_is_an_error(path, shape) -> None:
    mha = MultiHeadAttention(D, H)
    with pytest.raises(ValueError, match=r"mask has shape .* does not broadcast to \(2, 3, 7, 5\)"):
        _forward(mha, path, torch.randn(B, T, D), torch.randn(B, S, D), torch.randn(B, S, D),
                 torch.ones(shape, dtype=torch.bool))  # fmt: skip


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_mask_must_be_boolean(path, dtype) -> None:
    mha = MultiHeadAttention(D, H)
    x = torch.randn(B, T, D)
    with pytest.raises(ValueError, match="mask must be a bool tensor"):
        _forward(mha, path, x, x, x, torch.ones(B, 1, 1, T, dtype=dtype))


def test_query_and_key_batches_must_match() -> None:
    mha = MultiHeadAttention(D, H)
    with pytest.raises(ValueError, match="same batch size"):
        mha(torch.randn(B, T, D), torch.randn(B + 1, S, D), torch.randn(B + 1, S, D))


def test_key_and_value_lengths_must_match() -> None:
    mha = MultiHeadAttention(D, H)
    with pytest.raises(ValueError, match="key and value must have the same length S"):
        mha(torch.randn(B, T, D), torch.randn(B, S, D), torch.randn(B, S + 1, D))


@pytest.mark.parametrize("shape", [(B, T, D + 1), (T, D)])
def test_inputs_must_be_batch_first_with_d_model_features(shape) -> None:
    mha = MultiHeadAttention(D, H)
    with pytest.raises(ValueError, match="query must"):
        mha(torch.randn(shape), torch.randn(B, S, D), torch.randn(B, S, D))
