"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from transformer_course.attention import (
    fast_attention,
    scaled_dot_product_attention,
)
from transformer_course.attention import scaled_dot_product_attention as _sdpa
from transformer_course.multihead import merge_heads, split_heads

from . import right, wrong

# -- mutants


def _attend(self, q, k, v, mask, need_weights):
    dropout_p = self.dropout if self.training else 0.0
    if need_weights:
        return scaled_dot_product_attention(q, k, v, mask, dropout_p)
    return fast_attention(q, k, v, mask, dropout_p), None


@wrong("mutant", "forgets W^O")
def _forgets_w_o(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return merge_heads(heads), weights  # the concatenated heads, never mixed by W^O


@wrong("mutant", "cross-attention keys computed from the query")
def _query_as_key(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(query), self.n_heads)  # cross-attention bug: keys from the query side
    v = split_heads(self.w_v(value), self.n_heads)
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return self.w_o(merge_heads(heads)), weights


@wrong("mutant", "w_q and w_k swapped", says="w_q and w_k are swapped")
def _w_q_and_w_k_swapped(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_k(query), self.n_heads)  # the two projections swapped
    k = split_heads(self.w_q(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return self.w_o(merge_heads(heads)), weights


@wrong("mutant", "keys projected with w_q", says="the keys are projected with w_q")
def _keys_with_w_q(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_q(key), self.n_heads)  # copied from the line above
    v = split_heads(self.w_v(value), self.n_heads)
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return self.w_o(merge_heads(heads)), weights


@wrong("mutant", "values projected from the key input", says="the values are projected from the key input")
def _values_from_key(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(key), self.n_heads)  # key, not value
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return self.w_o(merge_heads(heads)), weights


@wrong("mutant", "values projected with w_k", says="the values are projected with w_k")
def _values_with_w_k(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_k(value), self.n_heads)  # w_k, not w_v
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return self.w_o(merge_heads(heads)), weights


# crashes first on a cross-attention case (S != T); the self-attention cases name the mistake
@wrong("mutant", "scores k·qᵀ instead of q·kᵀ", says="check which operand is transposed")
def _scores_transposed(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    scores = k @ q.transpose(-2, -1) / math.sqrt(self.d_k)  # should be q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = F.dropout(scores.softmax(-1), self.dropout if self.training else 0.0)
    return self.w_o(merge_heads(weights @ v)), (weights if need_weights else None)


@wrong("mutant", "mask polarity reversed")
def _reversed_polarity(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    mask = None if mask is None else ~mask  # nn.MultiheadAttention's polarity (True = blocked)
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return self.w_o(merge_heads(heads)), weights


@wrong("mutant", "heads split with view and no transpose")
def _heads_mixed(self, query, key, value, mask=None, need_weights=False, **kwargs):
    def split(x, d):
        b, t, _ = x.shape
        return x.view(b, self.n_heads, t, d)  # view without transpose

    q, k, v = split(self.w_q(query), self.d_k), split(self.w_k(key), self.d_k), split(self.w_v(value), self.d_v)
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return self.w_o(merge_heads(heads)), weights


@wrong("mutant", "scores scaled by sqrt(d_model) instead of sqrt(d_k)")
def _scaled_by_d_model(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_model)  # should be sqrt(d_k), the head size
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = F.dropout(scores.softmax(-1), self.dropout if self.training else 0.0)
    return self.w_o(merge_heads(weights @ v)), (weights if need_weights else None)


@wrong("mutant", "dropout applied at evaluation")
def _dropout_at_eval(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    if need_weights:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout)  # ignores self.training
    else:
        heads, weights = fast_attention(q, k, v, mask, self.dropout), None
    return self.w_o(merge_heads(heads)), weights


@wrong("mutant", "dropout never applied")
def _no_dropout(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    heads, weights = scaled_dot_product_attention(q, k, v, mask)
    return self.w_o(merge_heads(heads)), (weights if need_weights else None)


@wrong("mutant", "mask not passed on the fast path")
def _mask_lost_on_fast_path(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, None, dropout_p), None  # forgot to pass the mask
    return self.w_o(merge_heads(heads)), weights


@wrong("mutant", "weights averaged over heads")
def _weights_averaged(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    if weights is not None:
        weights = weights.mean(dim=1)  # nn.MultiheadAttention's default: averaged over heads
    return self.w_o(merge_heads(heads)), weights


# -- own mistakes and alternatives


def _mha(self, query, key, value, mask, need_weights, scale=None, dim=-1, use_mask=True):
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    scores = q @ k.transpose(-2, -1) * (self.d_k**-0.5 if scale is None else scale)
    if mask is not None and use_mask:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=dim)
    return self.w_o(merge_heads(weights @ v)), (weights if need_weights else None)


@wrong("own", says="the scores are not scaled")
def _mha_unscaled(self, query, key, value, mask=None, need_weights=False, **kwargs):
    return _mha(self, query, key, value, mask, need_weights, scale=1.0)


@wrong("own", says="over the queries")
def _mha_softmax_over_queries(self, query, key, value, mask=None, need_weights=False, **kwargs):
    return _mha(self, query, key, value, mask, need_weights, dim=2)


@wrong("own", says="the mask is ignored")
def _mha_mask_forgotten(self, query, key, value, mask=None, need_weights=False, **kwargs):
    return _mha(self, query, key, value, mask, need_weights, use_mask=False)


@wrong("own", says="the attention weights are right but the heads are merged without moving the head axis back")
def _mha_heads_not_moved_back(self, query, key, value, mask=None, need_weights=False, **kwargs):
    out, weights = _mha(self, query, key, value, mask, True)
    heads = weights @ split_heads(self.w_v(value), self.n_heads)  # (B, H, T, Dv)
    return self.w_o(heads.reshape(query.shape[0], query.shape[1], -1)), (weights if need_weights else None)


@wrong("own", says="the attention weights are right but the output is wrong")
def _mha_heads_doubled(self, query, key, value, mask=None, need_weights=False, **kwargs):
    out, weights = _mha(self, query, key, value, mask, need_weights)
    return out + (out - self.w_o.bias), weights  # the merged heads counted twice before W^O's bias


@wrong("own", says="the attention weights already differ")
def _mha_masked_after_the_softmax(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    weights = (q @ k.transpose(-2, -1) / math.sqrt(self.d_k)).softmax(dim=-1)
    weights = weights if mask is None else weights * mask  # the rows no longer sum to 1
    return self.w_o(merge_heads(weights @ v)), (weights if need_weights else None)


def _mha_always_weights(self, query, key, value, mask, need_weights):
    """The forward with the teaching path taken whatever need_weights says."""
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    dropout_p = self.dropout if self.training else 0.0
    heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    return self.w_o(merge_heads(heads)), weights


@wrong("own", says="weights were returned though need_weights=False")
def _mha_always_the_teaching_path(self, query, key, value, mask=None, need_weights=False, **kwargs):
    return _mha_always_weights(self, query, key, value, mask, need_weights)


@right("own")
def _mha_einsum(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    scores = torch.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = F.dropout(scores.softmax(dim=-1), self.dropout if self.training else 0.0)
    heads = torch.einsum("bhts,bhsd->bthd", weights, v)  # the heads already behind the positions
    return self.w_o(heads.reshape(*query.shape[:2], -1)), (weights if need_weights else None)


# -- tester set 'first'


def _mha_prefix(self, query, key, value, mask, need_weights, fast):
    self._check_inputs(query, key, value)
    return None


@wrong("tester", "forgot the output projection W^O", by="first")
def ex04_3_no_w_o(self, query, key, value, mask=None, need_weights=False, fast=True):
    early = _mha_prefix(self, query, key, value, mask, need_weights, fast)
    if early is not None:
        return early
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return merge_heads(heads), weights  # forgot W^O


@wrong("tester", "attention dropout also in eval mode (ignores self.training)", by="first")
def ex04_3_dropout_in_eval(self, query, key, value, mask=None, need_weights=False, fast=True):
    early = _mha_prefix(self, query, key, value, mask, need_weights, fast)
    if early is not None:
        return early
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    dropout_p = self.dropout  # also in eval mode
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return self.w_o(merge_heads(heads)), weights


@wrong("tester", "keys and values projected from query (breaks cross-attention)", by="first")
def ex04_3_kv_from_query(self, query, key, value, mask=None, need_weights=False, fast=True):
    early = _mha_prefix(self, query, key, value, mask, need_weights, fast)
    if early is not None:
        return early
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(query), self.n_heads), split_heads(self.w_v(query), self.n_heads)  # self-attention only
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return self.w_o(merge_heads(heads)), weights


@wrong("tester", "fast path called without the mask", by="first")
def x04_3_fast_path_no_mask(self, query, key, value, mask=None, need_weights=False, fast=True):
    early = _mha_prefix(self, query, key, value, mask, need_weights, fast)
    if early is not None:
        return early
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, None, dropout_p), None  # mask forgotten on the fast path
    return self.w_o(merge_heads(heads)), weights


# -- tester set 'second'


@wrong("tester", "attention dropout applied in eval mode too (ignores self.training)", by="second")
def mha_dropout_in_eval(self, query, key, value, mask=None, need_weights=False, fast=True):
    self._check_inputs(query, key, value)
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    dropout_p = self.dropout
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return self.w_o(merge_heads(heads)), weights


@wrong("tester", "keys and values projected from query instead of key/value (cross-attention broken)", by="second")
def mha_kv_from_query(self, query, key, value, mask=None, need_weights=False, fast=True):
    self._check_inputs(query, key, value)
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(query), self.n_heads), split_heads(self.w_v(query), self.n_heads)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return self.w_o(merge_heads(heads)), weights


@wrong("tester", "forgot the output projection w_o", by="second")
def mha_no_w_o(self, query, key, value, mask=None, need_weights=False, fast=True):
    self._check_inputs(query, key, value)
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return merge_heads(heads), weights


# the keys and values before the queries, and the teaching path always: right
@right("tester", by="second")
def mha_alt(self, query, key, value, mask=None, need_weights=False, fast=True):
    self._check_inputs(query, key, value)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    q = split_heads(self.w_q(query), self.n_heads)
    heads, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout if self.training else 0.0)
    out = self.w_o(merge_heads(heads))
    return out, (weights if (need_weights or not fast) else None)


# -- tester set 'third'


def _mha_pre(self, query, key, value, mask, need_weights, fast):
    self._check_inputs(query, key, value)
    return None


@wrong("tester", "queries projected with w_k instead of w_q", by="third")
def mha_wk_for_q(self, query, key, value, mask=None, need_weights=False, fast=True):
    early = _mha_pre(self, query, key, value, mask, need_weights, fast)
    if early is not None:
        return early
    q = split_heads(self.w_k(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = _sdpa(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return self.w_o(merge_heads(heads)), weights


@wrong("tester", "mask not passed on to attention", by="third")
def mha_no_mask(self, query, key, value, mask=None, need_weights=False, fast=True):
    early = _mha_pre(self, query, key, value, mask, need_weights, fast)
    if early is not None:
        return early
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = _sdpa(q, k, v, None, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, None, dropout_p), None
    return self.w_o(merge_heads(heads)), weights


@wrong("tester", "output projection w_o forgotten", by="third")
def mha_no_wo(self, query, key, value, mask=None, need_weights=False, fast=True):
    early = _mha_pre(self, query, key, value, mask, need_weights, fast)
    if early is not None:
        return early
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = _sdpa(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return merge_heads(heads), weights
