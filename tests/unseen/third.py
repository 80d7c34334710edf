"""Learner mistakes (changed copies of the reference solutions) and correct alternatives (a third tester).

MISTAKES = {exercise_id: [(impl, "short description"), ...]}
ALTERNATIVES = {exercise_id: [impl, ...]}
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from transformer_course._validate import check_ndim, check_token_dtype, check_token_ids
from transformer_course.attention import _check_qkv, apply_mask, attention_scores, fast_attention
from transformer_course.attention import scaled_dot_product_attention as _sdpa
from transformer_course.decoding import gnmt_length_penalty
from transformer_course.loss import label_smoothed_cross_entropy
from transformer_course.multihead import merge_heads, split_heads
from transformer_course.positional import check_positions
from transformer_course.rotary import rope_angles
from transformer_course.step import MixedPrecision
from transformer_course.subwords import _check_words

MISTAKES: dict = {}
ALTERNATIVES: dict = {}


def mistake(ex, desc):
    def reg(f):
        MISTAKES.setdefault(ex, []).append((f, desc))
        return f

    return reg


def alternative(ex):
    def reg(f):
        ALTERNATIVES.setdefault(ex, []).append(f)
        return f

    return reg


# ---------------------------------------------------------------- ex01_1 Vocab.encode
def _enc_guard(tokens):
    if isinstance(tokens, str):
        raise TypeError("encode expects a list of tokens, not a string: call tokenize(text) first")


@mistake("ex01_1", "<bos> appended at the end instead of inserted at the front")
def encode_bos_at_end(self, tokens, add_bos=False, add_eos=False):
    _enc_guard(tokens)
    ids = [self.token_to_id.get(token, self.unk_id) for token in tokens]
    if add_bos:
        ids.append(self.bos_id)
    if add_eos:
        ids.append(self.eos_id)
    return ids


@mistake("ex01_1", "unknown tokens mapped to pad_id instead of unk_id")
def encode_unk_is_pad(self, tokens, add_bos=False, add_eos=False):
    _enc_guard(tokens)
    ids = [self.token_to_id.get(token, self.pad_id) for token in tokens]
    if add_bos:
        ids.insert(0, self.bos_id)
    if add_eos:
        ids.append(self.eos_id)
    return ids


@mistake("ex01_1", "elif: with add_bos and add_eos both True only <bos> is added")
def encode_elif(self, tokens, add_bos=False, add_eos=False):
    _enc_guard(tokens)
    ids = [self.token_to_id.get(token, self.unk_id) for token in tokens]
    if add_bos:
        ids.insert(0, self.bos_id)
    elif add_eos:
        ids.append(self.eos_id)
    return ids


@alternative("ex01_1")
def encode_alt(self, tokens, add_bos=False, add_eos=False):
    _enc_guard(tokens)
    body = []
    for token in tokens:
        body.append(self.token_to_id[token] if token in self.token_to_id else self.unk_id)
    return [self.bos_id] * bool(add_bos) + body + [self.eos_id] * bool(add_eos)


# ---------------------------------------------------------------- ex01_2 TokenEmbedding.forward
@mistake("ex01_2", "divides by sqrt(d_model) instead of multiplying")
def tokemb_divide(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) / math.sqrt(self.d_model)


@mistake("ex01_2", "multiplies by d_model (forgot the square root)")
def tokemb_no_sqrt(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) * self.d_model


@mistake("ex01_2", "scales by sqrt(vocab_size) instead of sqrt(d_model)")
def tokemb_vocab(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) * math.sqrt(self.vocab_size)


@alternative("ex01_2")
def tokemb_alt(self, tokens):
    check_token_dtype(tokens)
    return F.embedding(tokens, self.embedding.weight, padding_idx=self.embedding.padding_idx) * self.d_model**0.5


# ---------------------------------------------------------------- ex01_3 one_hot_lookup
def _oh_guard(tokens, weight):
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise ValueError(f"weight must be a (V, D) matrix, got shape {tuple(getattr(weight, 'shape', ()))}")
    check_token_ids(tokens, weight.shape[0])


@mistake("ex01_3", "F.one_hot without num_classes (width = max id + 1, not V)")
def onehot_no_num_classes(tokens, weight):
    _oh_guard(tokens, weight)
    one_hot = F.one_hot(tokens).to(weight.dtype)
    return one_hot @ weight


@mistake("ex01_3", "num_classes=weight.shape[1] (D instead of V)")
def onehot_num_classes_d(tokens, weight):
    _oh_guard(tokens, weight)
    one_hot = F.one_hot(tokens, num_classes=weight.shape[1]).to(weight.dtype)
    return one_hot @ weight


@mistake("ex01_3", ".float() instead of .to(weight.dtype): result float32 for a float64 weight")
def onehot_float(tokens, weight):
    _oh_guard(tokens, weight)
    one_hot = F.one_hot(tokens, num_classes=weight.shape[0]).float()
    return one_hot @ weight.float()


@alternative("ex01_3")
def onehot_alt(tokens, weight):
    _oh_guard(tokens, weight)
    eye = torch.eye(weight.shape[0], dtype=weight.dtype, device=weight.device)
    return torch.einsum("...v,vd->...d", eye[tokens], weight)


# ---------------------------------------------------------------- ex02_1 sinusoidal_positional_encoding
def _pe_guard(max_len, d_model):
    if max_len < 1 or d_model < 1:
        raise ValueError(f"max_len and d_model must be >= 1, got max_len={max_len}, d_model={d_model}")


@mistake("ex02_1", "sin and cos swapped (cos on even columns, sin on odd)")
def pe_swapped(max_len, d_model):
    _pe_guard(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.cos(angle)
    table[:, 1::2] = torch.sin(angle[:, : d_model // 2])
    return table


@mistake("ex02_1", "exponent i/d_model instead of 2i/d_model")
def pe_i_not_2i(max_len, d_model):
    _pe_guard(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    i = torch.arange(0, (d_model + 1) // 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table


@mistake("ex02_1", "cos of every angle assigned to the odd columns: breaks for odd d_model")
def pe_odd_crash(max_len, d_model):
    _pe_guard(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


@alternative("ex02_1")
def pe_alt(max_len, d_model):
    _pe_guard(max_len, d_model)
    table = torch.empty(max_len, d_model, dtype=torch.float64)
    pos = torch.arange(max_len, dtype=torch.float64)
    for col in range(d_model):
        two_i = col - col % 2
        angle = pos / (10000.0 ** (two_i / d_model))
        table[:, col] = torch.sin(angle) if col % 2 == 0 else torch.cos(angle)
    return table.float()


# ---------------------------------------------------------------- ex02_2 PositionalEncoding.forward
@mistake("ex02_2", "seq_len read from x.shape[0] (the batch axis)")
def posenc_batch_axis(self, x, offset=0):
    check_positions(x, offset, self.d_model, self.max_len)
    seq_len = x.shape[0]
    table = self.pe[offset : offset + seq_len]
    return self.dropout(x + table.to(x.dtype))


@mistake("ex02_2", "offset ignored: always rows 0…T-1")
def posenc_no_offset(self, x, offset=0):
    check_positions(x, offset, self.d_model, self.max_len)
    seq_len = x.shape[1]
    table = self.pe[:seq_len]
    return self.dropout(x + table.to(x.dtype))


@mistake("ex02_2", "dropout forgotten")
def posenc_no_dropout(self, x, offset=0):
    check_positions(x, offset, self.d_model, self.max_len)
    seq_len = x.shape[1]
    table = self.pe[offset : offset + seq_len]
    return x + table.to(x.dtype)


# ---------------------------------------------------------------- ex02_3 relative_position_map
def _rel_guard(d_model):
    if d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be even and >= 2, got {d_model}")


@mistake("ex02_3", "rotation transposed (signs of the sin entries swapped: M_{-k})")
def rel_transposed(k, d_model):
    _rel_guard(d_model)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(-sin)
    m[1::2, 0::2] = torch.diag(sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()


@mistake("ex02_3", "frequency exponent uses i instead of 2i")
def rel_i(k, d_model):
    _rel_guard(d_model)
    i = torch.arange(0, d_model // 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(sin)
    m[1::2, 0::2] = torch.diag(-sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()


@mistake("ex02_3", "blocks laid out as halves (sin block / cos block) instead of interleaved pairs")
def rel_halves(k, d_model):
    _rel_guard(d_model)
    h = d_model // 2
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[:h, :h] = torch.diag(cos)
    m[:h, h:] = torch.diag(sin)
    m[h:, :h] = torch.diag(-sin)
    m[h:, h:] = torch.diag(cos)
    return m.float()


# ---------------------------------------------------------------- ex03_1 attention_scores
@mistake("ex03_1", "scaled by sqrt of the key length S instead of sqrt(d_k)")
def scores_sqrt_s(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(k.shape[-2])


@mistake("ex03_1", "k.transpose(0, 1) instead of the last two axes")
def scores_transpose01(q, k):
    d_k = q.shape[-1]
    return q @ k.transpose(0, 1) / math.sqrt(d_k)


@mistake("ex03_1", "divides by d_k, not sqrt(d_k)")
def scores_no_sqrt(q, k):
    d_k = q.shape[-1]
    return q @ k.transpose(-2, -1) / d_k


@alternative("ex03_1")
def scores_alt(q, k):
    return torch.einsum("...td,...sd->...ts", q * q.shape[-1] ** -0.5, k)


# ---------------------------------------------------------------- ex03_2 apply_mask
from transformer_course._validate import check_mask  # noqa: E402


@mistake("ex03_2", "mask not inverted: fills where mask is True")
def mask_inverted(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    return scores.masked_fill(mask, torch.finfo(scores.dtype).min)


@mistake("ex03_2", "fills -1e9 instead of the dtype's minimum")
def mask_minus_1e9(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    return scores.masked_fill(~mask, -1e9)


@mistake("ex03_2", "in-place masked_fill_: modifies the input scores")
def mask_inplace(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    return scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)


@alternative("ex03_2")
def mask_alt(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    low = torch.full((), torch.finfo(scores.dtype).min, dtype=scores.dtype, device=scores.device)
    return torch.where(mask, scores, low)


# ---------------------------------------------------------------- ex03_3 scaled_dot_product_attention
@mistake("ex03_3", "softmax over dim=-2 (the query axis)")
def sdpa_dim(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    scores = apply_mask(attention_scores(q, k), mask)
    weights = scores.softmax(dim=-2)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


@mistake("ex03_3", "mask ignored")
def sdpa_no_mask(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    scores = attention_scores(q, k)
    weights = scores.softmax(dim=-1)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


@mistake("ex03_3", "returns (weights, output) instead of (output, weights)")
def sdpa_order(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    scores = apply_mask(attention_scores(q, k), mask)
    weights = scores.softmax(dim=-1)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return weights, dropped @ v


@alternative("ex03_3")
def sdpa_alt(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    scores = attention_scores(q, k)
    scores = apply_mask(scores, mask)
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    weights = e / e.sum(dim=-1, keepdim=True)
    out = torch.matmul(F.dropout(weights, p=dropout_p, training=dropout_p > 0), v)
    return out, weights


# ---------------------------------------------------------------- ex04_1 split_heads
def _split_guard(x, n_heads):
    if x.shape[-1] % n_heads:
        raise ValueError(f"the last dimension of x ({x.shape[-1]}) is not divisible by n_heads={n_heads}")


@mistake("ex04_1", "view straight to (B, H, T, Dh) without a transpose")
def split_view_direct(x, n_heads):
    _split_guard(x, n_heads)
    batch, length, features = x.shape
    return x.view(batch, n_heads, length, features // n_heads)


@mistake("ex04_1", "view as (B, T, Dh, H): heads interleaved across the features")
def split_interleaved(x, n_heads):
    _split_guard(x, n_heads)
    batch, length, features = x.shape
    x = x.view(batch, length, features // n_heads, n_heads)
    return x.permute(0, 3, 1, 2)


@mistake("ex04_1", "transpose forgotten: returns (B, T, H, Dh)")
def split_no_transpose(x, n_heads):
    _split_guard(x, n_heads)
    batch, length, features = x.shape
    return x.view(batch, length, n_heads, features // n_heads)


@alternative("ex04_1")
def split_alt(x, n_heads):
    _split_guard(x, n_heads)
    return torch.stack(x.chunk(n_heads, dim=-1), dim=1)


# ---------------------------------------------------------------- ex04_2 merge_heads
@mistake("ex04_2", "reshape without moving the head axis back first")
def merge_no_transpose(x):
    batch, n_heads, length, head_dim = x.shape
    return x.reshape(batch, length, n_heads * head_dim)


@mistake("ex04_2", ".view after transpose (non-contiguous tensor)")
def merge_view(x):
    batch, n_heads, length, head_dim = x.shape
    x = x.transpose(1, 2)
    return x.view(batch, length, n_heads * head_dim)


@mistake("ex04_2", "permute(0, 2, 3, 1): features ordered (Dh, H), heads interleaved")
def merge_interleaved(x):
    batch, n_heads, length, head_dim = x.shape
    return x.permute(0, 2, 3, 1).reshape(batch, length, n_heads * head_dim)


@alternative("ex04_2")
def merge_alt(x):
    return torch.cat(x.unbind(dim=1), dim=-1)


# ---------------------------------------------------------------- ex04_3 MultiHeadAttention.forward
def _mha_pre(self, query, key, value, mask, need_weights, cache, fast):
    self._check_inputs(query, key, value, cache)
    return None


@mistake("ex04_3", "queries projected with w_k instead of w_q")
def mha_wk_for_q(self, query, key, value, mask=None, need_weights=False, *, cache=None, fast=True):
    early = _mha_pre(self, query, key, value, mask, need_weights, cache, fast)
    if early is not None:
        return early
    q = split_heads(self.w_k(query), self.n_heads)
    q = self.positioned(q, cache)
    k, v = self.keys_and_values(key, value, cache)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = _sdpa(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return self.w_o(merge_heads(heads)), weights


@mistake("ex04_3", "mask not passed on to attention")
def mha_no_mask(self, query, key, value, mask=None, need_weights=False, *, cache=None, fast=True):
    early = _mha_pre(self, query, key, value, mask, need_weights, cache, fast)
    if early is not None:
        return early
    q = split_heads(self.w_q(query), self.n_heads)
    q = self.positioned(q, cache)
    k, v = self.keys_and_values(key, value, cache)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = _sdpa(q, k, v, None, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, None, dropout_p), None
    return self.w_o(merge_heads(heads)), weights


@mistake("ex04_3", "output projection w_o forgotten")
def mha_no_wo(self, query, key, value, mask=None, need_weights=False, *, cache=None, fast=True):
    early = _mha_pre(self, query, key, value, mask, need_weights, cache, fast)
    if early is not None:
        return early
    q = split_heads(self.w_q(query), self.n_heads)
    q = self.positioned(q, cache)
    k, v = self.keys_and_values(key, value, cache)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = _sdpa(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return merge_heads(heads), weights


# ---------------------------------------------------------------- ex05_1 PositionwiseFeedForward.forward
@mistake("ex05_1", "activation also applied after linear2")
def ffn_act_output(self, x):
    hidden = self.dropout(self.activation(self.linear1(x)))
    return self.activation(self.linear2(hidden))


@mistake("ex05_1", "dropout on the output instead of the hidden layer")
def ffn_dropout_output(self, x):
    hidden = self.activation(self.linear1(x))
    return self.dropout(self.linear2(hidden))


@mistake("ex05_1", "hard-coded F.relu instead of self.activation")
def ffn_relu(self, x):
    hidden = self.dropout(F.relu(self.linear1(x)))
    return self.linear2(hidden)


@alternative("ex05_1")
def ffn_alt(self, x):
    h = F.linear(x, self.linear1.weight, self.linear1.bias)
    h = self.dropout(self.activation(h))
    return F.linear(h, self.linear2.weight, self.linear2.bias)


# ---------------------------------------------------------------- ex05_2 residual
@mistake("ex05_2", "norm_first meaning inverted (pre-LN and post-LN swapped)")
def residual_swapped(x, sublayer, norm, dropout, norm_first):
    if not norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


@mistake("ex05_2", "dropout forgotten in the post-LN branch")
def residual_post_no_dropout(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + sublayer(x))


@mistake("ex05_2", "pre-LN adds the normalised x (h = norm(x); h + sublayer(h))")
def residual_pre_adds_normed(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        x = norm(x)
        return x + dropout(sublayer(x))
    return norm(x + dropout(sublayer(x)))


@alternative("ex05_2")
def residual_alt(x, sublayer, norm, dropout, norm_first):
    inp = norm(x) if norm_first else x
    out = x + dropout(sublayer(inp))
    return out if norm_first else norm(out)


# ---------------------------------------------------------------- ex05_3 EncoderLayer.forward
@mistake("ex05_3", "norm1 used for both sub-layers (norm2 never used)")
def enc_norm1_twice(self, x, mask=None, cache=None):
    def attend(h):
        return self.self_attn(h, h, h, mask, cache=cache)[0]

    x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm1, self.dropout2, self.norm_first)


@mistake("ex05_3", "mask not passed to self-attention")
def enc_no_mask(self, x, mask=None, cache=None):
    def attend(h):
        return self.self_attn(h, h, h, cache=cache)[0]

    x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


@mistake("ex05_3", "feed-forward sub-layer applied to the layer input (attention result discarded)")
def enc_reuses_input(self, x, mask=None, cache=None):
    def attend(h):
        return self.self_attn(h, h, h, mask, cache=cache)[0]

    y = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)  # noqa: F841
    return self.connection(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


# ---------------------------------------------------------------- ex06_1 causal_mask
def _cm_guard(size):
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")


@mistake("ex06_1", "triu instead of tril (attends to the future)")
def causal_triu(size, device=None):
    _cm_guard(size)
    return torch.ones(size, size, dtype=torch.bool, device=device).triu()


@mistake("ex06_1", "device argument ignored")
def causal_no_device(size, device=None):
    _cm_guard(size)
    return torch.ones(size, size, dtype=torch.bool).tril()


@mistake("ex06_1", "tril(diagonal=-1): a position may not attend to itself")
def causal_strict(size, device=None):
    _cm_guard(size)
    return torch.ones(size, size, dtype=torch.bool, device=device).tril(diagonal=-1)


@alternative("ex06_1")
def causal_alt(size, device=None):
    _cm_guard(size)
    idx = torch.arange(size, device=device)
    return idx[:, None] >= idx[None, :]


# ---------------------------------------------------------------- ex06_2 padding_mask
@mistake("ex06_2", "== pad_id instead of != (True at padding)")
def pad_inverted(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return (tokens == pad_id)[:, None, None, :]


@mistake("ex06_2", "shaped (B, 1, S, 1) instead of (B, 1, 1, S)")
def pad_wrong_axis(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return (tokens != pad_id)[:, None, :, None]


@mistake("ex06_2", "only one unsqueeze: shape (B, 1, S)")
def pad_one_unsqueeze(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return (tokens != pad_id).unsqueeze(1)


@alternative("ex06_2")
def pad_alt(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return tokens.ne(pad_id).reshape(tokens.shape[0], 1, 1, tokens.shape[1])


# ---------------------------------------------------------------- ex06_3 DecoderLayer.forward
def _dec_caches(cache):
    return (None, None) if cache is None else (cache.self_attn, cache.cross_attn)


@mistake("ex06_3", "cross-attention done with self.self_attn instead of self.cross_attn")
def dec_self_for_cross(self, x, memory, tgt_mask=None, memory_mask=None, *, cache=None):
    self_cache, cross_cache = _dec_caches(cache)
    x = self.connection(
        x, lambda h: self.self_attn(h, h, h, tgt_mask, cache=self_cache)[0], self.norm1, self.dropout1, self.norm_first
    )
    x = self.connection(
        x,
        lambda h: self.self_attn(h, memory, memory, memory_mask, cache=cross_cache)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@mistake("ex06_3", "tgt_mask and memory_mask swapped")
def dec_masks_swapped(self, x, memory, tgt_mask=None, memory_mask=None, *, cache=None):
    self_cache, cross_cache = _dec_caches(cache)
    x = self.connection(
        x,
        lambda h: self.self_attn(h, h, h, memory_mask, cache=self_cache)[0],
        self.norm1,
        self.dropout1,
        self.norm_first,
    )
    x = self.connection(
        x,
        lambda h: self.cross_attn(h, memory, memory, tgt_mask, cache=cross_cache)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@mistake("ex06_3", "norm2 and norm3 swapped (norm3 around cross-attention, norm2 around the FFN)")
def dec_norms_swapped(self, x, memory, tgt_mask=None, memory_mask=None, *, cache=None):
    self_cache, cross_cache = _dec_caches(cache)
    x = self.connection(
        x, lambda h: self.self_attn(h, h, h, tgt_mask, cache=self_cache)[0], self.norm1, self.dropout1, self.norm_first
    )
    x = self.connection(
        x,
        lambda h: self.cross_attn(h, memory, memory, memory_mask, cache=cross_cache)[0],
        self.norm3,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm2, self.dropout3, self.norm_first)


# ---------------------------------------------------------------- ex07_1 transformer_lr
def _lr_guard(step, d_model, warmup_steps):
    if step < 1:
        raise ValueError(f"step must be >= 1 (the paper counts steps from 1), got {step}")
    if d_model < 1 or warmup_steps < 1:
        raise ValueError(f"d_model and warmup_steps must be >= 1, got {d_model} and {warmup_steps}")


@mistake("ex07_1", "max instead of min")
def lr_max(step, d_model, warmup_steps, scale=1.0):
    _lr_guard(step, d_model, warmup_steps)
    return scale * d_model**-0.5 * max(step**-0.5, step * warmup_steps**-1.5)


@mistake("ex07_1", "warm-up term step / warmup_steps (exponent -1 instead of -1.5)")
def lr_exponent(step, d_model, warmup_steps, scale=1.0):
    _lr_guard(step, d_model, warmup_steps)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1)


@mistake("ex07_1", "scale argument ignored")
def lr_no_scale(step, d_model, warmup_steps, scale=1.0):
    _lr_guard(step, d_model, warmup_steps)
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@alternative("ex07_1")
def lr_alt(step, d_model, warmup_steps, scale=1.0):
    _lr_guard(step, d_model, warmup_steps)
    if step < warmup_steps:
        value = step / (warmup_steps * math.sqrt(warmup_steps))
    else:
        value = 1.0 / math.sqrt(step)
    return scale * value / math.sqrt(d_model)


# ---------------------------------------------------------------- ex07_2 teacher_forcing
def _tf_guard(tgt):
    if tgt.dim() != 2 or tgt.shape[1] < 2:
        raise ValueError(f"tgt must have shape (B, T+1) with T+1 >= 2 (<bos> ... <eos>), got {tuple(tgt.shape)}")


@mistake("ex07_2", "returns (labels, decoder input): order swapped")
def tf_swapped(tgt):
    _tf_guard(tgt)
    return tgt[:, 1:], tgt[:, :-1]


@mistake("ex07_2", "slices the batch axis: tgt[:-1], tgt[1:]")
def tf_batch_axis(tgt):
    _tf_guard(tgt)
    return tgt[:-1], tgt[1:]


@mistake("ex07_2", "off by one: drops two columns (tgt[:, :-2], tgt[:, 1:-1])")
def tf_off_by_one(tgt):
    _tf_guard(tgt)
    return tgt[:, :-2], tgt[:, 1:-1]


# ---------------------------------------------------------------- ex07_3 label_smoothed_cross_entropy
def _ls_guard(logits, target, smoothing):
    if logits.dim() != 3 or target.shape != logits.shape[:2]:
        raise ValueError(
            f"logits must be (B, T, V) and target (B, T), got logits {tuple(logits.shape)} and target {tuple(target.shape)}"
        )
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"smoothing must be in [0, 1], got {smoothing}")


@mistake("ex07_3", "averaged over all positions, padding included")
def ls_mean_all(logits, target, smoothing=0.1, pad_id=0):
    _ls_guard(logits, target, smoothing)
    log_probs = logits.float().log_softmax(dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = (1.0 - smoothing) * nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).mean()


@mistake("ex07_3", "smoothing mass eps/(V-1) spread over the wrong tokens only (not PyTorch's eps/V)")
def ls_v_minus_1(logits, target, smoothing=0.1, pad_id=0):
    _ls_guard(logits, target, smoothing)
    vocab = logits.shape[-1]
    log_probs = logits.float().log_softmax(dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    others = -(log_probs.sum(dim=-1) - (-nll)) / (vocab - 1)
    per_token = (1.0 - smoothing) * nll + smoothing * others
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


@alternative("ex07_3")  # no clamp on the count: NaN for a batch of padding only, as F.cross_entropy gives
def ls_no_clamp(logits, target, smoothing=0.1, pad_id=0):
    _ls_guard(logits, target, smoothing)
    log_probs = logits.float().log_softmax(dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = (1.0 - smoothing) * nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum()


@alternative("ex07_3")
def ls_alt(logits, target, smoothing=0.1, pad_id=0):
    _ls_guard(logits, target, smoothing)
    vocab = logits.shape[-1]
    log_probs = F.log_softmax(logits.float(), dim=-1)
    dist = torch.full_like(log_probs, smoothing / vocab)
    dist.scatter_add_(-1, target.unsqueeze(-1), torch.full_like(log_probs[..., :1], 1.0 - smoothing))
    per_token = -(dist * log_probs).sum(dim=-1)
    keep = (target != pad_id).float()
    n = keep.sum()
    return (per_token * keep).sum() / torch.clamp(n, min=1.0)


# ---------------------------------------------------------------- ex07_4 train_step
@mistake("ex07_4", "zero_grad after backward (clears the gradients before the step)")
def ts_zero_after(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    precision.scaler.scale(loss).backward()
    optimizer.zero_grad(set_to_none=True)
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


@mistake("ex07_4", "gradients clipped after the optimizer step")
def ts_clip_after(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad(set_to_none=True)
    precision.scaler.scale(loss).backward()
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if max_grad_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


@mistake("ex07_4", "model.train() forgotten (dropout stays off if the model was in eval mode)")
def ts_no_train(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad(set_to_none=True)
    precision.scaler.scale(loss).backward()
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


# ---------------------------------------------------------------- ex08_1 greedy_step
@mistake("ex08_1", "finished = (next == eos): rows finished earlier become unfinished")
def greedy_forget_finished(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1)
    next_tokens = next_tokens.masked_fill(finished, pad_id)
    return next_tokens, next_tokens == eos_id


@mistake("ex08_1", "updates finished in place (finished |= ...)")
def greedy_inplace(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1)
    next_tokens = next_tokens.masked_fill(finished, pad_id)
    finished |= next_tokens == eos_id
    return next_tokens, finished


@mistake("ex08_1", "argmax over dim=0 (the batch axis)")
def greedy_dim0(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=0)
    next_tokens = next_tokens.masked_fill(finished, pad_id)
    return next_tokens, finished | (next_tokens == eos_id)


@alternative("ex08_1")
def greedy_alt(logits, finished, eos_id, pad_id):
    best = logits.max(dim=-1).indices
    tokens = torch.where(finished, torch.full_like(best, pad_id), best)
    return tokens, torch.logical_or(finished, tokens.eq(eos_id))


# ---------------------------------------------------------------- ex08_2 top_p_filter
def _tp_guard(top_p):
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")


@mistake("ex08_2", "cumsum including the token itself: drops the token that crosses top_p")
def topp_inclusive(logits, top_p):
    _tp_guard(top_p)
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    drop_sorted = probs.cumsum(dim=-1) > top_p
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


@mistake("ex08_2", "mask in sorted order applied to unsorted logits (never scattered back)")
def topp_no_unsort(logits, top_p):
    _tp_guard(top_p)
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    drop_sorted = before >= top_p
    return logits.masked_fill(drop_sorted, float("-inf"))


@mistake("ex08_2", "gather instead of scatter to undo the sort (inverse permutation)")
def topp_gather(logits, top_p):
    _tp_guard(top_p)
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    drop_sorted = before >= top_p
    drop = drop_sorted.gather(-1, order)
    return logits.masked_fill(drop, float("-inf"))


# ---------------------------------------------------------------- ex08_3 beam_step
@mistake("ex08_3", "ranks by the raw summed log-probability (length penalty forgotten)")
def beam_no_penalty(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    flat = candidates.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


@mistake("ex08_3", "returns the penalised score instead of the summed log-probability")
def beam_penalised_scores(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = ranked.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


@mistake("ex08_3", "lengths returned without following the origin (new_lengths not gathered)")
def beam_lengths_not_gathered(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths


# ---------------------------------------------------------------- ex09_1 pack
def _pack_core(order, src_lengths, tgt_lengths, max_tokens, *, strict=False, src_only=False, keep_last=True):
    batches, batch = [], []
    longest_src = longest_tgt = 0
    for i in order:
        s, t = src_lengths[i], tgt_lengths[i]
        if max(s, t) > max_tokens:
            raise ValueError(
                f"example {i} has {s} source and {t} target tokens, more than max_tokens={max_tokens}: "
                "raise max_tokens or drop long examples first"
            )
        grown = len(batch) + 1
        too_src = grown * max(longest_src, s)
        too_tgt = 0 if src_only else grown * max(longest_tgt, t)
        over = (
            (too_src >= max_tokens or too_tgt >= max_tokens)
            if strict
            else (too_src > max_tokens or too_tgt > max_tokens)
        )
        if batch and over:
            batches.append(batch)
            batch, longest_src, longest_tgt = [], 0, 0
        batch.append(i)
        longest_src, longest_tgt = max(longest_src, s), max(longest_tgt, t)
    if batch and keep_last:
        batches.append(batch)
    return batches


@mistake("ex09_1", ">= instead of >: a batch of exactly max_tokens slots is cut")
def pack_strict(order, src_lengths, tgt_lengths, max_tokens):
    return _pack_core(order, src_lengths, tgt_lengths, max_tokens, strict=True)


@mistake("ex09_1", "only the source lengths are budgeted (targets ignored)")
def pack_src_only(order, src_lengths, tgt_lengths, max_tokens):
    return _pack_core(order, src_lengths, tgt_lengths, max_tokens, src_only=True)


@mistake("ex09_1", "the last, not full batch is never appended")
def pack_drop_last(order, src_lengths, tgt_lengths, max_tokens):
    return _pack_core(order, src_lengths, tgt_lengths, max_tokens, keep_last=False)


@alternative("ex09_1")
def pack_alt(order, src_lengths, tgt_lengths, max_tokens):
    out = []
    for i in order:
        if src_lengths[i] > max_tokens or tgt_lengths[i] > max_tokens:
            raise ValueError(f"example {i} is longer than max_tokens={max_tokens}")
        if out:
            cand = out[-1] + [i]
            n = len(cand)
            if (
                n * max(src_lengths[j] for j in cand) <= max_tokens
                and n * max(tgt_lengths[j] for j in cand) <= max_tokens
            ):
                out[-1] = cand
                continue
        out.append([i])
    return out


# ---------------------------------------------------------------- ex09_2 average_state_dicts
def _avg_core(states, *, dtype_sum=True, average_ints=False, check_keys=True):
    if not states:
        raise ValueError("states is empty: nothing to average")
    keys = list(states[0])
    if check_keys:
        for i, state in enumerate(states[1:], start=1):
            if list(state) != keys:
                differ = sorted(set(state) ^ set(keys))
                raise ValueError(
                    f"state {i} has other keys than state 0 (e.g. {differ[:3]}): not the same architecture"
                )
    averaged = {}
    for key in keys:
        tensors = [state[key] for state in states]
        first = tensors[0]
        for i, tensor in enumerate(tensors[1:], start=1):
            if tensor.shape != first.shape or tensor.dtype != first.dtype:
                raise ValueError(
                    f"{key}: state {i} has {tuple(tensor.shape)} {tensor.dtype}, state 0 has "
                    f"{tuple(first.shape)} {first.dtype}"
                )
        if average_ints:
            averaged[key] = torch.stack([t.detach().double() for t in tensors]).mean(dim=0).float()
            if first.is_floating_point():
                averaged[key] = averaged[key].to(first.dtype)
        elif first.is_floating_point():
            if dtype_sum:
                total = torch.stack([t.detach().double() for t in tensors]).sum(dim=0)
                averaged[key] = (total / len(tensors)).to(first.dtype)
            else:
                total = tensors[0].detach().clone()
                for t in tensors[1:]:
                    total = total + t.detach()
                averaged[key] = total / len(tensors)
        else:
            if any(not torch.equal(t, first) for t in tensors[1:]):
                raise ValueError(f"{key} is not floating point and differs between the states: cannot average it")
            averaged[key] = first.clone()
    return averaged


@mistake("ex09_2", "summed in the tensors' own dtype (float16 loses precision / depends on order)")
def avg_low_precision(states):
    return _avg_core(states, dtype_sum=False)


@mistake("ex09_2", "every tensor averaged, integer buffers included (they come back float32)")
def avg_ints(states):
    return _avg_core(states, average_ints=True)


@mistake("ex09_2", "keys of the other states never compared with state 0's")
def avg_no_key_check(states):
    return _avg_core(states, check_keys=False)


@alternative("ex09_2")
def avg_alt(states):
    if not states:
        raise ValueError("states is empty: nothing to average")
    ref = states[0]
    for i, s in enumerate(states):
        if set(s) != set(ref) or len(s) != len(ref):
            raise ValueError(f"state {i} has other keys")
    result = {}
    for key, first in ref.items():
        for i, s in enumerate(states):
            if s[key].shape != first.shape or s[key].dtype != first.dtype:
                raise ValueError(f"{key}: state {i} differs in shape or dtype")
        if torch.is_floating_point(first):
            acc = torch.zeros(first.shape, dtype=torch.float64)
            for s in states:
                acc += s[key].detach().to(torch.float64)
            result[key] = (acc / len(states)).to(first.dtype)
        else:
            for s in states:
                if not torch.equal(s[key], first):
                    raise ValueError(f"{key}: not floating point and differs")
            result[key] = first.clone()
    return result


# ---------------------------------------------------------------- ex09_3 bpe_merges
def _bpe_core(words, n_merges, *, weighted=True, tie_age=True, stop=True):
    _check_words(words, n_merges)
    segmented = {word: list(word) for word in words}
    age = {char: ord(char) for word in words for char in word}
    merges = []
    while len(merges) < n_merges:
        counts = {}
        for word, symbols in segmented.items():
            for pair in zip(symbols[:-1], symbols[1:], strict=False):
                counts[pair] = counts.get(pair, 0) + (words[word] if weighted else 1)
        if stop and not counts:
            break
        if tie_age:
            best = min(counts, key=lambda pair: (-counts[pair], age[pair[0]], age[pair[1]]))
        else:
            best = max(counts, key=counts.get)
        joined = best[0] + best[1]
        age.setdefault(joined, 0x110000 + len(merges))
        merges.append(best)
        for symbols in segmented.values():
            i = 0
            while i < len(symbols) - 1:
                if (symbols[i], symbols[i + 1]) == best:
                    symbols[i : i + 2] = [joined]
                i += 1
    return merges


@mistake("ex09_3", "pairs counted once per word, not weighted by the word's count")
def bpe_unweighted(words, n_merges):
    return _bpe_core(words, n_merges, weighted=False)


@mistake("ex09_3", "ties broken by first-seen pair (max(counts, key=counts.get))")
def bpe_first_seen(words, n_merges):
    return _bpe_core(words, n_merges, tie_age=False)


@mistake("ex09_3", "no early stop when no pair is left (min of an empty dict)")
def bpe_no_stop(words, n_merges):
    return _bpe_core(words, n_merges, stop=False)


# ---------------------------------------------------------------- ex10_1 RMSNorm.forward
def _rms_guard(self, x):
    if x.shape[-1] != self.weight.shape[0]:
        raise ValueError(f"x must have last dimension d_model={self.weight.shape[0]}, got {tuple(x.shape)}")


@mistake("ex10_1", "mean without keepdim=True")
def rms_no_keepdim(self, x):
    _rms_guard(self, x)
    mean_square = x.pow(2).mean(dim=-1)
    return x * torch.rsqrt(mean_square + self.eps) * self.weight


@mistake("ex10_1", "eps added outside the square root")
def rms_eps_outside(self, x):
    _rms_guard(self, x)
    mean_square = x.pow(2).mean(dim=-1, keepdim=True)
    return x / (torch.sqrt(mean_square) + self.eps) * self.weight


@mistake("ex10_1", "subtracts the mean first (LayerNorm's variance, not the mean square)")
def rms_centered(self, x):
    _rms_guard(self, x)
    centered = x - x.mean(dim=-1, keepdim=True)
    var = centered.pow(2).mean(dim=-1, keepdim=True)
    return centered * torch.rsqrt(var + self.eps) * self.weight


@alternative("ex10_1")
def rms_alt(self, x):
    _rms_guard(self, x)
    d = x.shape[-1]
    rms = torch.sqrt((x * x).sum(dim=-1, keepdim=True) / d + self.eps)
    return self.weight * (x / rms)


# ---------------------------------------------------------------- ex10_2 apply_rope
def _rope_guard(x, positions):
    if not isinstance(positions, torch.Tensor) or positions.dim() != 1 or positions.dtype.is_floating_point:
        raise ValueError(
            f"positions must be an integer tensor of shape (T,), got {getattr(positions, 'shape', positions)}"
        )
    if x.dim() < 2 or x.shape[-2] != positions.shape[0]:
        raise ValueError(
            f"x must have shape (..., T, d) with T = len(positions) = {positions.shape[0]}, got {tuple(x.shape)}"
        )


@mistake("ex10_2", "pairs taken as halves (i, i + d/2), Llama's layout, not (2i, 2i+1)")
def rope_halves(x, positions, base=10000.0):
    _rope_guard(x, positions)
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    h = x.shape[-1] // 2
    first, second = x[..., :h].to(dtype), x[..., h:].to(dtype)
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1).to(x.dtype)


@mistake("ex10_2", "rotates the wrong way (sign of sin flipped)")
def rope_wrong_sign(x, positions, base=10000.0):
    _rope_guard(x, positions)
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)
    rotated = torch.stack([even * cos + odd * sin, -even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2).to(x.dtype)


@mistake("ex10_2", "base argument ignored (always 10000)")
def rope_no_base(x, positions, base=10000.0):
    _rope_guard(x, positions)
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], 10000.0, dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2).to(x.dtype)


@alternative("ex10_2")
def rope_alt(x, positions, base=10000.0):
    _rope_guard(x, positions)
    d = x.shape[-1]
    if x.dtype == torch.float64:
        cdt, rdt = torch.complex128, torch.float64
    else:
        cdt, rdt = torch.complex64, torch.float32
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=rdt, device=x.device) / d))
    ang = positions.to(rdt)[:, None] * inv
    rot = torch.polar(torch.ones_like(ang), ang).to(cdt)
    xc = torch.view_as_complex(x.to(rdt).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    out = torch.view_as_real(xc * rot).reshape(x.shape)
    return out.to(x.dtype)


# ---------------------------------------------------------------- ex10_3 repeat_kv
def _rkv_guard(x, n_rep):
    check_ndim(x, 4, "x", "(B, Hkv, S, D)")
    if not isinstance(n_rep, int) or n_rep < 1:
        raise ValueError(f"n_rep must be an integer >= 1, got {n_rep!r}")


@mistake("ex10_3", "x.repeat(1, n_rep, 1, 1): tiles the heads (0,1,0,1) instead of grouping (0,0,1,1)")
def rkv_tile(x, n_rep):
    _rkv_guard(x, n_rep)
    return x.repeat(1, n_rep, 1, 1)


@mistake("ex10_3", "repeat_interleave on dim=2 (the sequence axis)")
def rkv_wrong_dim(x, n_rep):
    _rkv_guard(x, n_rep)
    return x.repeat_interleave(n_rep, dim=2)


@mistake("ex10_3", ".view after expand (needs a copy: reshape)")
def rkv_view(x, n_rep):
    _rkv_guard(x, n_rep)
    batch, kv_heads, length, features = x.shape
    x = x[:, :, None].expand(batch, kv_heads, n_rep, length, features)
    return x.view(batch, kv_heads * n_rep, length, features)


@alternative("ex10_3")
def rkv_alt(x, n_rep):
    _rkv_guard(x, n_rep)
    return torch.repeat_interleave(x, n_rep, dim=1)


# ---------------------------------------------------------------- ex10_4 SwiGLU.forward
@mistake("ex10_4", "gate on the wrong projection: silu(w3(x)) * w1(x)")
def swiglu_swapped(self, x):
    hidden = F.silu(self.w3(x)) * self.w1(x)
    return self.w2(self.dropout(hidden))


@mistake("ex10_4", "sigmoid instead of silu (GLU, not SwiGLU)")
def swiglu_sigmoid(self, x):
    hidden = torch.sigmoid(self.w1(x)) * self.w3(x)
    return self.w2(self.dropout(hidden))


@mistake("ex10_4", "dropout after w2 instead of before")
def swiglu_dropout_after(self, x):
    hidden = F.silu(self.w1(x)) * self.w3(x)
    return self.dropout(self.w2(hidden))


# ---------------------------------------------------------------- ex10_5 online_softmax_update
@mistake("ex10_5", "acc not rescaled by exp(old max - new max)")
def online_no_acc_rescale(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc + weights @ values
    return new_top, total, acc


@mistake("ex10_5", "rescale inverted: exp(new_top - top)")
def online_inverted(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(new_top - top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


@mistake("ex10_5", "block sum without keepdim: (..., T) does not broadcast against (..., T, 1)")
def online_sum_no_keepdim(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


@alternative("ex10_5")
def online_alt(top, total, acc, scores, values):
    block_max = scores.max(dim=-1, keepdim=True).values
    new_top = torch.where(block_max > top, block_max, top)
    old = (top - new_top).exp()
    p = (scores - new_top).exp()
    return new_top, old * total + p.sum(-1, keepdim=True), old * acc + torch.matmul(p, values)


# ---------------------------------------------------------------- ex11_1 rope_halves_to_interleaved
def _r11_guard(weight, n_heads):
    if weight.dim() < 1 or weight.shape[0] % n_heads or (weight.shape[0] // n_heads) % 2:
        raise ValueError(
            f"weight must have n_heads={n_heads} heads of an even number of rows, got shape {tuple(weight.shape)}"
        )
    return weight.shape[0] // n_heads, weight.shape[1:]


@mistake("ex11_1", "inverse permutation (interleaved → halves): reshape (H, d/2, 2) then transpose")
def r11_inverse(weight, n_heads):
    head_dim, rest = _r11_guard(weight, n_heads)
    pairs = weight.reshape(n_heads, head_dim // 2, 2, *rest)
    return pairs.transpose(1, 2).reshape(weight.shape).clone()


@mistake("ex11_1", "heads ignored: the halves of the whole matrix, not of each head")
def r11_no_heads(weight, n_heads):
    head_dim, rest = _r11_guard(weight, n_heads)
    total = weight.shape[0]
    halves = weight.reshape(2, total // 2, *rest)
    return halves.transpose(0, 1).reshape(weight.shape).clone()


@mistake("ex11_1", "reshape as (2, H, d/2): head axis and halves axis in the wrong order")
def r11_axis_order(weight, n_heads):
    head_dim, rest = _r11_guard(weight, n_heads)
    halves = weight.reshape(2, n_heads, head_dim // 2, *rest)
    return halves.permute(1, 2, 0, *range(3, 3 + len(rest))).reshape(weight.shape).clone()


@alternative("ex11_1")
def r11_alt(weight, n_heads):
    head_dim, rest = _r11_guard(weight, n_heads)
    half = head_dim // 2
    index = []
    for h in range(n_heads):
        for i in range(half):
            index += [h * head_dim + i, h * head_dim + half + i]
    return weight[torch.tensor(index, device=weight.device)]


# ---------------------------------------------------------------- ex11_2 split_conv1d
def _sc_guard(weight, bias, parts):
    if weight.dim() != 2 or bias.shape != (weight.shape[1],) or weight.shape[1] % parts:
        raise ValueError(
            f"weight must be (in, {parts}·out) and bias (out·{parts},), got {tuple(weight.shape)} and {tuple(bias.shape)}"
        )


@mistake("ex11_2", "weight not transposed (kept as (in, out))")
def sc_no_transpose(weight, bias, parts):
    _sc_guard(weight, bias, parts)
    out = weight.shape[1] // parts
    return [(w.contiguous(), b.clone()) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=False)]


@mistake("ex11_2", "weight split along dim 0 (the input axis)")
def sc_split_dim0(weight, bias, parts):
    _sc_guard(weight, bias, parts)
    out = weight.shape[1] // parts
    ws = weight.t().contiguous().split(weight.shape[0] // parts, dim=1)
    return [(w.contiguous(), b.clone()) for w, b in zip(ws, bias.split(out), strict=False)]


@mistake("ex11_2", "reshape(out, in) instead of a transpose")
def sc_reshape(weight, bias, parts):
    _sc_guard(weight, bias, parts)
    out = weight.shape[1] // parts
    return [
        (w.reshape(out, weight.shape[0]).clone(), b.clone())
        for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=False)
    ]


@alternative("ex11_2")
def sc_alt(weight, bias, parts):
    _sc_guard(weight, bias, parts)
    out = weight.shape[1] // parts
    wt = weight.T
    return [(wt[i * out : (i + 1) * out].clone(), bias[i * out : (i + 1) * out].clone()) for i in range(parts)]


# ---------------------------------------------------------------- ex11_3 marian_layer_names
def _marian(decoder, *, swap_norms=False, weights_only=False, o_proj=False):
    modules = {"norm1": "self_attn_layer_norm", "ffn.linear1": "fc1", "ffn.linear2": "fc2"}
    attentions = {"self_attn": "self_attn"}
    if decoder:
        attentions["cross_attn"] = "encoder_attn"
        if swap_norms:
            modules |= {"norm2": "final_layer_norm", "norm3": "encoder_attn_layer_norm"}
        else:
            modules |= {"norm2": "encoder_attn_layer_norm", "norm3": "final_layer_norm"}
    else:
        modules["norm2"] = "final_layer_norm"
    projections = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "o_proj" if o_proj else "out_proj"}
    for ours, theirs in attentions.items():
        modules |= {f"{ours}.{p}": f"{theirs}.{q}" for p, q in projections.items()}
    kinds = ("weight",) if weights_only else ("weight", "bias")
    return {f"{ours}.{t}": f"{theirs}.{t}" for ours, theirs in modules.items() for t in kinds}


@mistake("ex11_3", "decoder: norm2 and norm3 targets swapped")
def marian_swap(decoder):
    return _marian(decoder, swap_norms=True)


@mistake("ex11_3", "bias entries forgotten (weights only)")
def marian_no_bias(decoder):
    return _marian(decoder, weights_only=True)


@mistake("ex11_3", "w_o mapped to 'o_proj' (Llama's name) instead of 'out_proj'")
def marian_o_proj(decoder):
    return _marian(decoder, o_proj=True)
