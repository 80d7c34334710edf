"""Wrong answers for chapter 04: the ways a multi-head attention goes wrong while the shapes
still look right."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from transformer_course.attention import fast_attention, scaled_dot_product_attention
from transformer_course.multihead import merge_heads, split_heads

# ex04_1 — split_heads


def _view_without_transpose(x, n_heads):
    b, t, d = x.shape
    return x.view(b, n_heads, t, d // n_heads)  # (B, H, T, Dh) but each head holds pieces of several tokens


def _interleaved_heads(x, n_heads):
    b, t, d = x.shape
    return x.view(b, t, d // n_heads, n_heads).permute(0, 3, 1, 2)  # head i = every H-th feature


def _heads_last(x, n_heads):
    b, t, d = x.shape
    return x.view(b, t, n_heads, d // n_heads)  # forgot to move the head axis forward


# ex04_2 — merge_heads


def _reshape_without_transpose(x):
    b, h, t, dh = x.shape
    return x.reshape(b, t, h * dh)  # mixes tokens and heads


def _view_after_transpose(x):
    b, h, t, dh = x.shape
    return x.transpose(1, 2).view(b, t, h * dh)  # RuntimeError: view on a non-contiguous tensor


def _features_interleaved(x):
    b, h, t, dh = x.shape
    return x.permute(0, 2, 3, 1).reshape(b, t, h * dh)  # (B, T, Dh, H): features of the heads interleaved


# ex04_3 — MultiHeadAttention.forward


def _attend(self, q, k, v, mask, need_weights):
    dropout_p = self.dropout if self.training else 0.0
    if need_weights:
        return scaled_dot_product_attention(q, k, v, mask, dropout_p)
    return fast_attention(q, k, v, mask, dropout_p), None


def _forgets_w_o(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return merge_heads(heads), weights  # the concatenated heads, never mixed by W^O


def _cache_not_passed(self, query, key, value, mask=None, need_weights=False, cache=None):
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = self.keys_and_values(key, value)  # the cache (chapter 08) is never used
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return self.w_o(merge_heads(heads)), weights


def _queries_not_positioned(self, query, key, value, mask=None, need_weights=False, cache=None, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)  # never passed through self.positioned: rotary models
    k, v = self.keys_and_values(key, value, cache)  # turn their keys but not their queries
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return self.w_o(merge_heads(heads)), weights


def _query_as_key(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(query), self.n_heads)  # cross-attention bug: keys from the query side
    v = split_heads(self.w_v(value), self.n_heads)
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return self.w_o(merge_heads(heads)), weights


def _reversed_polarity(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    mask = None if mask is None else ~mask  # nn.MultiheadAttention's polarity (True = blocked)
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return self.w_o(merge_heads(heads)), weights


def _heads_mixed(self, query, key, value, mask=None, need_weights=False, **kwargs):
    def split(x, d):
        b, t, _ = x.shape
        return x.view(b, self.n_heads, t, d)  # view without transpose

    q, k, v = split(self.w_q(query), self.d_k), split(self.w_k(key), self.d_k), split(self.w_v(value), self.d_v)
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    return self.w_o(merge_heads(heads)), weights


def _scaled_by_d_model(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_model)  # should be sqrt(d_k), the head size
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = F.dropout(scores.softmax(-1), self.dropout if self.training else 0.0)
    return self.w_o(merge_heads(weights @ v)), (weights if need_weights else None)


def _dropout_at_eval(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    if need_weights:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout)  # ignores self.training
    else:
        heads, weights = fast_attention(q, k, v, mask, self.dropout), None
    return self.w_o(merge_heads(heads)), weights


def _no_dropout(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    heads, weights = scaled_dot_product_attention(q, k, v, mask)
    return self.w_o(merge_heads(heads)), (weights if need_weights else None)


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


def _weights_averaged(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    heads, weights = _attend(self, q, k, v, mask, need_weights)
    if weights is not None:
        weights = weights.mean(dim=1)  # nn.MultiheadAttention's default: averaged over heads
    return self.w_o(merge_heads(heads)), weights


MUTANTS = {
    "ex04_1": [
        ("view without transpose (mixes tokens into heads)", _view_without_transpose),
        ("heads made of every H-th feature", _interleaved_heads),
        ("head axis left in place (B, T, H, Dh)", _heads_last),
    ],
    "ex04_2": [
        ("reshape without transpose (mixes heads)", _reshape_without_transpose),
        ("view after transpose (non-contiguous)", _view_after_transpose),
        ("features of the heads interleaved", _features_interleaved),
    ],
    "ex04_3": [
        ("forgets W^O", _forgets_w_o),
        ("cache not passed to keys_and_values", _cache_not_passed),
        ("queries not passed through self.positioned", _queries_not_positioned),
        ("cross-attention keys computed from the query", _query_as_key),
        ("mask polarity reversed", _reversed_polarity),
        ("heads split with view and no transpose", _heads_mixed),
        ("scores scaled by sqrt(d_model) instead of sqrt(d_k)", _scaled_by_d_model),
        ("dropout applied at evaluation", _dropout_at_eval),
        ("dropout never applied", _no_dropout),
        ("mask not passed on the fast path", _mask_lost_on_fast_path),
        ("weights averaged over heads", _weights_averaged),
    ],
}
