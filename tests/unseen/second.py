"""Independent tester's set of learner mistakes (unseen2). Each is a changed copy of the reference."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer_course._validate import check_mask, check_ndim, check_token_dtype, check_token_ids
from transformer_course.attention import (
    _check_qkv,
    apply_mask,
    attention_scores,
    fast_attention,
    scaled_dot_product_attention,
)
from transformer_course.decoding import gnmt_length_penalty
from transformer_course.loss import label_smoothed_cross_entropy
from transformer_course.multihead import merge_heads, split_heads
from transformer_course.positional import check_positions
from transformer_course.rotary import rope_angles
from transformer_course.step import MixedPrecision

# ---------------------------------------------------------------- ex01_1 Vocab.encode


def encode_unk_pad(self, tokens, add_bos=False, add_eos=False):
    if isinstance(tokens, str):
        raise TypeError("encode expects a list of tokens, not a string: call tokenize(text) first")
    ids = [self.token_to_id.get(token, self.pad_id) for token in tokens]
    if add_bos:
        ids.insert(0, self.bos_id)
    if add_eos:
        ids.append(self.eos_id)
    return ids


def encode_bos_eos_swapped(self, tokens, add_bos=False, add_eos=False):
    if isinstance(tokens, str):
        raise TypeError("encode expects a list of tokens, not a string: call tokenize(text) first")
    ids = [self.token_to_id.get(token, self.unk_id) for token in tokens]
    if add_bos:
        ids.insert(0, self.eos_id)
    if add_eos:
        ids.append(self.bos_id)
    return ids


def encode_mutates_input(self, tokens, add_bos=False, add_eos=False):
    if isinstance(tokens, str):
        raise TypeError("encode expects a list of tokens, not a string: call tokenize(text) first")
    if add_bos:
        tokens.insert(0, "<bos>")
    if add_eos:
        tokens.append("<eos>")
    return [self.token_to_id.get(token, self.unk_id) for token in tokens]


def encode_alt(self, tokens, add_bos=False, add_eos=False):
    if isinstance(tokens, str):
        raise TypeError("encode expects a list of tokens, not a string: call tokenize(text) first")
    body = [self.token_to_id[t] if t in self.token_to_id else self.unk_id for t in tokens]
    return ([self.bos_id] if add_bos else []) + body + ([self.eos_id] if add_eos else [])


# ---------------------------------------------------------------- ex01_2 TokenEmbedding.forward


def emb_divides(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) / math.sqrt(self.d_model)


def emb_times_d(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) * self.d_model


def emb_sqrt_of_T(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) * math.sqrt(tokens.shape[-1])


# ---------------------------------------------------------------- ex01_3 one_hot_lookup


def _onehot_pre(tokens, weight):
    if not isinstance(weight, Tensor) or weight.dim() != 2:
        raise ValueError(f"weight must be a (V, D) matrix, got shape {tuple(getattr(weight, 'shape', ()))}")
    check_token_ids(tokens, weight.shape[0])


def onehot_no_cast(tokens, weight):
    _onehot_pre(tokens, weight)
    one_hot = F.one_hot(tokens, num_classes=weight.shape[0])
    return one_hot @ weight


def onehot_float32(tokens, weight):
    _onehot_pre(tokens, weight)
    one_hot = F.one_hot(tokens, num_classes=weight.shape[0]).float()
    return one_hot @ weight.float()


def onehot_no_num_classes(tokens, weight):
    _onehot_pre(tokens, weight)
    one_hot = F.one_hot(tokens).to(weight.dtype)
    return one_hot @ weight


def onehot_alt(tokens, weight):
    _onehot_pre(tokens, weight)
    rows = weight.index_select(0, tokens.reshape(-1))
    return rows.reshape(*tokens.shape, weight.shape[1])


# ---------------------------------------------------------------- ex02_1 sinusoidal_positional_encoding


def _pe_pre(max_len, d_model):
    if max_len < 1 or d_model < 1:
        raise ValueError(f"max_len and d_model must be >= 1, got max_len={max_len}, d_model={d_model}")


def pe_i_not_2i(max_len, d_model):
    _pe_pre(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    i = torch.arange(0, (d_model + 1) // 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table


def pe_sin_cos_swapped(max_len, d_model):
    _pe_pre(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.cos(angle)
    table[:, 1::2] = torch.sin(angle[:, : d_model // 2])
    return table


def pe_odd_crash(max_len, d_model):
    _pe_pre(max_len, d_model)
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table


def pe_alt(max_len, d_model):
    _pe_pre(max_len, d_model)
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    denom = torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    ang = pos / denom
    out = torch.empty(max_len, d_model, dtype=torch.float64)
    out[:, 0::2] = ang.sin()
    out[:, 1::2] = ang.cos()[:, : d_model // 2]
    return out.float()


# ---------------------------------------------------------------- ex02_2 PositionalEncoding.forward


def posenc_batch_axis(self, x, offset=0):
    check_positions(x, offset, self.d_model, self.max_len)
    seq_len = x.shape[0]
    table = self.pe[offset : offset + seq_len]
    return self.dropout(x + table.to(x.dtype))


def posenc_offset_ignored(self, x, offset=0):
    check_positions(x, offset, self.d_model, self.max_len)
    seq_len = x.shape[1]
    table = self.pe[:seq_len]
    return self.dropout(x + table.to(x.dtype))


def posenc_no_dtype(self, x, offset=0):
    check_positions(x, offset, self.d_model, self.max_len)
    seq_len = x.shape[1]
    table = self.pe[offset : offset + seq_len]
    return self.dropout(x + table)


# ---------------------------------------------------------------- ex02_3 relative_position_map


def _rel_pre(d_model):
    if d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be even and >= 2, got {d_model}")


def rel_sin_sign(k, d_model):
    _rel_pre(d_model)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(-sin)
    m[1::2, 0::2] = torch.diag(sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()


def rel_i_not_2i(k, d_model):
    _rel_pre(d_model)
    i = torch.arange(0, d_model // 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(sin)
    m[1::2, 0::2] = torch.diag(-sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()


def rel_halves_blocks(k, d_model):
    _rel_pre(d_model)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    h = d_model // 2
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[:h, :h] = torch.diag(cos)
    m[:h, h:] = torch.diag(sin)
    m[h:, :h] = torch.diag(-sin)
    m[h:, h:] = torch.diag(cos)
    return m.float()


def rel_alt(k, d_model):
    _rel_pre(d_model)
    blocks = []
    for i in range(d_model // 2):
        w = 1.0 / (10000.0 ** (2 * i / d_model))
        c, s = math.cos(w * k), math.sin(w * k)
        blocks.append(torch.tensor([[c, s], [-s, c]], dtype=torch.float64))
    return torch.block_diag(*blocks).float()


# ---------------------------------------------------------------- ex03_1 attention_scores


def scores_transpose_12(q, k):
    d_k = q.shape[-1]
    return q @ k.transpose(1, 2) / math.sqrt(d_k)


def scores_div_dk(q, k):
    d_k = q.shape[-1]
    return q @ k.transpose(-2, -1) / d_k


def scores_dk_from_k_rows(q, k):
    d_k = k.shape[-2]
    return q @ k.transpose(-2, -1) / math.sqrt(d_k)


def scores_alt(q, k):
    return torch.einsum("...td,...sd->...ts", q, k) * q.shape[-1] ** -0.5


# ---------------------------------------------------------------- ex03_2 apply_mask


def mask_inverted(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    return scores.masked_fill(mask, torch.finfo(scores.dtype).min)


def mask_minus_1e9(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    return scores.masked_fill(~mask, -1e9)


def mask_in_place(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    return scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)


def mask_alt(scores, mask):
    if mask is None:
        return scores
    check_mask(mask, tuple(scores.shape))
    low = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype, device=scores.device)
    return torch.where(mask, scores, low)


# ---------------------------------------------------------------- ex03_3 scaled_dot_product_attention


def sdpa_softmax_dim2(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    scores = apply_mask(attention_scores(q, k), mask)
    weights = scores.softmax(dim=-2)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


def sdpa_returns_dropped(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    scores = apply_mask(attention_scores(q, k), mask)
    weights = scores.softmax(dim=-1)
    weights = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return weights @ v, weights


def sdpa_mask_after_softmax(q, k, v, mask=None, dropout_p=0.0):
    _check_qkv(q, k, v)
    weights = attention_scores(q, k).softmax(dim=-1)
    if mask is not None:
        weights = weights * mask
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


# ---------------------------------------------------------------- ex04_1 split_heads


def _split_pre(x, n_heads):
    if x.shape[-1] % n_heads:
        raise ValueError(f"the last dimension of x ({x.shape[-1]}) is not divisible by n_heads={n_heads}")


def split_dh_first(x, n_heads):
    _split_pre(x, n_heads)
    batch, length, features = x.shape
    x = x.view(batch, length, features // n_heads, n_heads)
    return x.permute(0, 3, 1, 2)


def split_view_no_transpose(x, n_heads):
    _split_pre(x, n_heads)
    batch, length, features = x.shape
    return x.reshape(batch, n_heads, length, features // n_heads)


def split_forgot_transpose(x, n_heads):
    _split_pre(x, n_heads)
    batch, length, features = x.shape
    return x.view(batch, length, n_heads, features // n_heads)


# ---------------------------------------------------------------- ex04_2 merge_heads


def merge_no_transpose(x):
    batch, n_heads, length, head_dim = x.shape
    return x.reshape(batch, length, n_heads * head_dim)


def merge_view_error(x):
    batch, n_heads, length, head_dim = x.shape
    return x.transpose(1, 2).view(batch, length, n_heads * head_dim)


def merge_transpose_23(x):
    batch, n_heads, length, head_dim = x.shape
    return x.transpose(2, 3).reshape(batch, length, n_heads * head_dim)


def merge_alt(x):
    return torch.cat(x.unbind(dim=1), dim=-1)


# ---------------------------------------------------------------- ex04_3 MultiHeadAttention.forward


def mha_dropout_in_eval(self, query, key, value, mask=None, need_weights=False, *, cache=None, fast=True):
    self._check_inputs(query, key, value, cache)
    q = split_heads(self.w_q(query), self.n_heads)
    q = self.positioned(q, cache)
    k, v = self.keys_and_values(key, value, cache)
    dropout_p = self.dropout
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return self.w_o(merge_heads(heads)), weights


def mha_kv_from_query(self, query, key, value, mask=None, need_weights=False, *, cache=None, fast=True):
    self._check_inputs(query, key, value, cache)
    q = split_heads(self.w_q(query), self.n_heads)
    q = self.positioned(q, cache)
    k, v = self.keys_and_values(query, query, cache)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return self.w_o(merge_heads(heads)), weights


def mha_no_w_o(self, query, key, value, mask=None, need_weights=False, *, cache=None, fast=True):
    self._check_inputs(query, key, value, cache)
    q = split_heads(self.w_q(query), self.n_heads)
    q = self.positioned(q, cache)
    k, v = self.keys_and_values(key, value, cache)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return merge_heads(heads), weights


def mha_alt(self, query, key, value, mask=None, need_weights=False, *, cache=None, fast=True):
    self._check_inputs(query, key, value, cache)
    k, v = self.keys_and_values(key, value, cache)
    q = self.positioned(split_heads(self.w_q(query), self.n_heads), cache)
    heads, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout if self.training else 0.0)
    out = self.w_o(merge_heads(heads))
    return out, (weights if (need_weights or not fast) else None)


# ---------------------------------------------------------------- ex05_1 PositionwiseFeedForward.forward


def ffn_dropout_after_out(self, x):
    hidden = self.activation(self.linear1(x))
    return self.dropout(self.linear2(hidden))


def ffn_activation_twice(self, x):
    hidden = self.dropout(self.activation(self.linear1(x)))
    return self.activation(self.linear2(hidden))


def ffn_hardcoded_relu(self, x):
    hidden = self.dropout(F.relu(self.linear1(x)))
    return self.linear2(hidden)


# ---------------------------------------------------------------- ex05_2 residual


def residual_swapped(x, sublayer, norm, dropout, norm_first):
    if not norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


def residual_prenorm_on_output(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + dropout(norm(sublayer(x)))
    return norm(x + dropout(sublayer(x)))


def residual_dropout_on_sum(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(dropout(x + sublayer(x)))


def residual_alt(x, sublayer, norm, dropout, norm_first):
    inner = norm(x) if norm_first else x
    out = x + dropout(sublayer(inner))
    return out if norm_first else norm(out)


# ---------------------------------------------------------------- ex05_3 EncoderLayer.forward


def enc_no_mask(self, x, mask=None, cache=None):
    def attend(h):
        return self.self_attn(h, h, h, None, cache=cache)[0]

    x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


def enc_norms_swapped(self, x, mask=None, cache=None):
    def attend(h):
        return self.self_attn(h, h, h, mask, cache=cache)[0]

    x = self.connection(x, attend, self.norm2, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm1, self.dropout2, self.norm_first)


def enc_closure_reads_x(self, x, mask=None, cache=None):
    def attend(h):
        return self.self_attn(x, x, x, mask, cache=cache)[0]

    y = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(y, self.ffn, self.norm2, self.dropout2, self.norm_first)


# ---------------------------------------------------------------- ex06_1 causal_mask


def causal_triu(size, device=None):
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    return torch.ones(size, size, dtype=torch.bool, device=device).triu()


def causal_no_diagonal(size, device=None):
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    return torch.ones(size, size, dtype=torch.bool, device=device).tril(-1)


def causal_float(size, device=None):
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    return torch.tril(torch.ones(size, size, device=device))


def causal_alt(size, device=None):
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    r = torch.arange(size, device=device)
    return r[:, None] >= r[None, :]


# ---------------------------------------------------------------- ex06_2 padding_mask


def pad_inverted(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return (tokens == pad_id)[:, None, None, :]


def pad_wrong_shape(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return (tokens != pad_id)[:, None, :, None]


def pad_ignores_pad_id(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return (tokens != 0)[:, None, None, :]


# ---------------------------------------------------------------- ex06_3 DecoderLayer.forward


def _dec_caches(cache):
    return (None, None) if cache is None else (cache.self_attn, cache.cross_attn)


def dec_no_tgt_mask(self, x, memory, tgt_mask=None, memory_mask=None, *, cache=None):
    self_cache, cross_cache = _dec_caches(cache)
    x = self.connection(
        x, lambda h: self.self_attn(h, h, h, None, cache=self_cache)[0], self.norm1, self.dropout1, self.norm_first
    )
    x = self.connection(
        x,
        lambda h: self.cross_attn(h, memory, memory, memory_mask, cache=cross_cache)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


def dec_cross_kv_from_x(self, x, memory, tgt_mask=None, memory_mask=None, *, cache=None):
    self_cache, cross_cache = _dec_caches(cache)
    x = self.connection(
        x, lambda h: self.self_attn(h, h, h, tgt_mask, cache=self_cache)[0], self.norm1, self.dropout1, self.norm_first
    )
    x = self.connection(
        x,
        lambda h: self.cross_attn(h, h, h, memory_mask, cache=cross_cache)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


def dec_cross_first(self, x, memory, tgt_mask=None, memory_mask=None, *, cache=None):
    self_cache, cross_cache = _dec_caches(cache)
    x = self.connection(
        x,
        lambda h: self.cross_attn(h, memory, memory, memory_mask, cache=cross_cache)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    x = self.connection(
        x, lambda h: self.self_attn(h, h, h, tgt_mask, cache=self_cache)[0], self.norm1, self.dropout1, self.norm_first
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


# ---------------------------------------------------------------- ex07_1 transformer_lr


def _lr_pre(step, d_model, warmup_steps):
    if step < 1:
        raise ValueError(f"step must be >= 1 (the paper counts steps from 1), got {step}")
    if d_model < 1 or warmup_steps < 1:
        raise ValueError(f"d_model and warmup_steps must be >= 1, got {d_model} and {warmup_steps}")


def lr_max(step, d_model, warmup_steps, scale=1.0):
    _lr_pre(step, d_model, warmup_steps)
    return scale * d_model**-0.5 * max(step**-0.5, step * warmup_steps**-1.5)


def lr_warmup_exp(step, d_model, warmup_steps, scale=1.0):
    _lr_pre(step, d_model, warmup_steps)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-0.5)


def lr_scale_ignored(step, d_model, warmup_steps, scale=1.0):
    _lr_pre(step, d_model, warmup_steps)
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def lr_alt(step, d_model, warmup_steps, scale=1.0):
    _lr_pre(step, d_model, warmup_steps)
    if step <= warmup_steps:
        return scale * step / (math.sqrt(d_model) * warmup_steps**1.5)
    return scale / math.sqrt(d_model * step)


# ---------------------------------------------------------------- ex07_2 teacher_forcing


def _tf_pre(tgt):
    if tgt.dim() != 2 or tgt.shape[1] < 2:
        raise ValueError(f"tgt must have shape (B, T+1) with T+1 >= 2 (<bos> ... <eos>), got {tuple(tgt.shape)}")


def tf_swapped(tgt):
    _tf_pre(tgt)
    return tgt[:, 1:], tgt[:, :-1]


def tf_batch_axis(tgt):
    _tf_pre(tgt)
    return tgt[:-1], tgt[1:]


def tf_input_not_cut(tgt):
    _tf_pre(tgt)
    return tgt, tgt[:, 1:]


# ---------------------------------------------------------------- ex07_3 label_smoothed_cross_entropy


def _ls_pre(logits, target, smoothing):
    if logits.dim() != 3 or target.shape != logits.shape[:2]:
        raise ValueError("logits must be (B, T, V) and target (B, T)")
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"smoothing must be in [0, 1], got {smoothing}")


def ls_mean_includes_pad(logits, target, smoothing=0.1, pad_id=0):
    _ls_pre(logits, target, smoothing)
    log_probs = logits.float().log_softmax(dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = (1.0 - smoothing) * nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).mean()


def ls_smooth_over_v_minus_1(logits, target, smoothing=0.1, pad_id=0):
    _ls_pre(logits, target, smoothing)
    log_probs = logits.float().log_softmax(dim=-1)
    V = logits.shape[-1]
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    others = (-log_probs.sum(dim=-1) - nll) / (V - 1)
    per_token = (1.0 - smoothing) * nll + smoothing * others
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


def ls_log_softmax_dim1(logits, target, smoothing=0.1, pad_id=0):
    _ls_pre(logits, target, smoothing)
    log_probs = logits.float().log_softmax(dim=1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = (1.0 - smoothing) * nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


def ls_alt(logits, target, smoothing=0.1, pad_id=0):
    _ls_pre(logits, target, smoothing)
    if not (target != pad_id).any():
        return logits.float().sum() * 0.0
    V = logits.shape[-1]
    return F.cross_entropy(
        logits.float().reshape(-1, V), target.reshape(-1), label_smoothing=smoothing, ignore_index=pad_id
    )


# ---------------------------------------------------------------- ex07_4 train_step


def ts_no_zero_grad(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    precision.scaler.scale(loss).backward()
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


def ts_clip_after_step(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad(set_to_none=True)
    precision.scaler.scale(loss).backward()
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if max_grad_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


def ts_no_train_mode(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
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


def greedy_argmax_dim0(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=0)
    next_tokens = next_tokens.masked_fill(finished, pad_id)
    return next_tokens, finished | (next_tokens == eos_id)


def greedy_forgets_finished(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1)
    next_tokens = next_tokens.masked_fill(finished, pad_id)
    return next_tokens, next_tokens == eos_id


def greedy_mutates_finished(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1)
    next_tokens = next_tokens.masked_fill(finished, pad_id)
    finished |= next_tokens == eos_id
    return next_tokens, finished


# ---------------------------------------------------------------- ex08_2 top_p_filter


def _topp_pre(top_p):
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")


def topp_inclusive_cumsum(logits, top_p):
    _topp_pre(top_p)
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    drop_sorted = probs.cumsum(dim=-1) >= top_p
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def topp_no_unsort(logits, top_p):
    _topp_pre(top_p)
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    drop = before >= top_p
    return logits.masked_fill(drop, float("-inf"))


def topp_ascending(logits, top_p):
    _topp_pre(top_p)
    sorted_logits, order = logits.sort(dim=-1)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    drop_sorted = before >= top_p
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def topp_alt(logits, top_p):
    _topp_pre(top_p)
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    p = torch.softmax(sorted_logits, dim=-1)
    keep_sorted = torch.cumsum(p, dim=-1) - p < top_p
    keep = keep_sorted.gather(-1, order.argsort(dim=-1))
    return torch.where(keep, logits, torch.full_like(logits, float("-inf")))


# ---------------------------------------------------------------- ex08_3 beam_step


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


def beam_finished_grow(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + 1
    ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


def beam_divmod_beams(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // beams, flat % beams
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    origin = origin.clamp(max=beams - 1)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


# ---------------------------------------------------------------- ex09_1 pack


def _pack(order, src_lengths, tgt_lengths, max_tokens, fits):
    batches, batch = [], []
    for i in order:
        s, t = src_lengths[i], tgt_lengths[i]
        if max(s, t) > max_tokens:
            raise ValueError(f"example {i} has {s} source and {t} target tokens, more than max_tokens={max_tokens}")
        if batch and not fits(batch + [i]):
            batches.append(batch)
            batch = []
        batch.append(i)
    if batch:
        batches.append(batch)
    return batches


def pack_strict_budget(order, src_lengths, tgt_lengths, max_tokens):
    def fits(b):
        n = len(b)
        return n * max(src_lengths[j] for j in b) < max_tokens and n * max(tgt_lengths[j] for j in b) < max_tokens

    return _pack(order, src_lengths, tgt_lengths, max_tokens, fits)


def pack_source_only(order, src_lengths, tgt_lengths, max_tokens):
    def fits(b):
        return len(b) * max(src_lengths[j] for j in b) <= max_tokens

    return _pack(order, src_lengths, tgt_lengths, max_tokens, fits)


def pack_sum_not_padded(order, src_lengths, tgt_lengths, max_tokens):
    def fits(b):
        return sum(src_lengths[j] for j in b) <= max_tokens and sum(tgt_lengths[j] for j in b) <= max_tokens

    return _pack(order, src_lengths, tgt_lengths, max_tokens, fits)


# ---------------------------------------------------------------- ex09_2 average_state_dicts


def _avg_checks(states):
    if not states:
        raise ValueError("states is empty: nothing to average")
    keys = list(states[0])
    for i, state in enumerate(states[1:], start=1):
        if list(state) != keys:
            differ = sorted(set(state) ^ set(keys))
            raise ValueError(f"state {i} has other keys than state 0 (e.g. {differ[:3]}): not the same architecture")
    for key in keys:
        first = states[0][key]
        for i, state in enumerate(states[1:], start=1):
            tensor = state[key]
            if tensor.shape != first.shape or tensor.dtype != first.dtype:
                raise ValueError(
                    f"{key}: state {i} has {tuple(tensor.shape)} {tensor.dtype}, state 0 has "
                    f"{tuple(first.shape)} {first.dtype}"
                )
    return keys


def avg_native_dtype(states):
    keys = _avg_checks(states)
    averaged = {}
    for key in keys:
        tensors = [s[key] for s in states]
        first = tensors[0]
        if first.is_floating_point():
            averaged[key] = torch.stack([t.detach() for t in tensors]).sum(dim=0) / len(tensors)
        else:
            if any(not torch.equal(t, first) for t in tensors[1:]):
                raise ValueError(f"{key} is not floating point and differs between the states: cannot average it")
            averaged[key] = first.clone()
    return averaged


def avg_integers_too(states):
    keys = _avg_checks(states)
    return {key: torch.stack([s[key].detach().double() for s in states]).mean(dim=0).float() for key in keys}


def avg_accumulates_into_first(states):
    keys = _avg_checks(states)
    averaged = {}
    for key in keys:
        first = states[0][key]
        if first.is_floating_point():
            total = first.detach()
            for s in states[1:]:
                total += s[key].detach()
            total /= len(states)
            averaged[key] = total
        else:
            if any(not torch.equal(s[key], first) for s in states[1:]):
                raise ValueError(f"{key} is not floating point and differs between the states: cannot average it")
            averaged[key] = first.clone()
    return averaged


# ---------------------------------------------------------------- ex09_3 bpe_merges

from transformer_course.subwords import _check_words  # noqa: E402


def _bpe(words, n_merges, choose, weighted=True, distinct=False):
    _check_words(words, n_merges)
    segmented = {word: list(word) for word in words}
    age = {char: ord(char) for word in words for char in word}
    merges = []
    while len(merges) < n_merges:
        counts = {}
        for word, symbols in segmented.items():
            pairs = list(zip(symbols[:-1], symbols[1:], strict=False))
            if distinct:
                pairs = list(dict.fromkeys(pairs))
            for pair in pairs:
                counts[pair] = counts.get(pair, 0) + (words[word] if weighted else 1)
        if not counts:
            break
        best = choose(counts, age)
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


def _by_age(counts, age):
    return min(counts, key=lambda pair: (-counts[pair], age[pair[0]], age[pair[1]]))


def bpe_alphabetical_ties(words, n_merges):
    return _bpe(words, n_merges, lambda counts, age: min(counts, key=lambda p: (-counts[p], p)))


def bpe_unweighted(words, n_merges):
    return _bpe(words, n_merges, _by_age, weighted=False)


def bpe_distinct_pairs(words, n_merges):
    return _bpe(words, n_merges, _by_age, distinct=True)


# ---------------------------------------------------------------- ex10_1 RMSNorm.forward


def _rms_pre(self, x):
    if x.shape[-1] != self.weight.shape[0]:
        raise ValueError(f"x must have last dimension d_model={self.weight.shape[0]}, got {tuple(x.shape)}")


def rms_eps_outside(self, x):
    _rms_pre(self, x)
    return x / (x.pow(2).mean(dim=-1, keepdim=True).sqrt() + self.eps) * self.weight


def rms_dim0(self, x):
    _rms_pre(self, x)
    mean_square = x.pow(2).mean(dim=0, keepdim=True)
    return x * torch.rsqrt(mean_square + self.eps) * self.weight


def rms_variance(self, x):
    _rms_pre(self, x)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return x * torch.rsqrt(var + self.eps) * self.weight


# ---------------------------------------------------------------- ex10_2 apply_rope


def _rope_pre(x, positions):
    if not isinstance(positions, Tensor) or positions.dim() != 1 or positions.dtype.is_floating_point:
        raise ValueError("positions must be an integer tensor of shape (T,)")
    if x.dim() < 2 or x.shape[-2] != positions.shape[0]:
        raise ValueError("x must have shape (..., T, d) with T = len(positions)")


def rope_inverse_rotation(x, positions, base=10000.0):
    _rope_pre(x, positions)
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)
    rotated = torch.stack([even * cos + odd * sin, -even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2).to(x.dtype)


def rope_halves_pairs(x, positions, base=10000.0):
    _rope_pre(x, positions)
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    h = x.shape[-1] // 2
    a, b = x[..., :h].to(dtype), x[..., h:].to(dtype)
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1).to(x.dtype)


def rope_positions_ignored(x, positions, base=10000.0):
    _rope_pre(x, positions)
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(torch.arange(x.shape[-2], device=x.device), x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2).to(x.dtype)


def rope_alt(x, positions, base=10000.0):
    _rope_pre(x, positions)
    real = torch.float64 if x.dtype == torch.float64 else torch.float32
    cplx = torch.complex128 if real == torch.float64 else torch.complex64
    d = x.shape[-1]
    freqs = 1.0 / (base ** (torch.arange(0, d, 2, dtype=real, device=x.device) / d))
    angles = positions.to(real)[:, None] * freqs
    rot = torch.polar(torch.ones_like(angles), angles).to(cplx)
    z = torch.view_as_complex(x.to(real).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * rot).reshape(x.shape).to(x.dtype)


# ---------------------------------------------------------------- ex10_3 repeat_kv


def _rkv_pre(x, n_rep):
    check_ndim(x, 4, "x", "(B, Hkv, S, D)")
    if not isinstance(n_rep, int) or n_rep < 1:
        raise ValueError(f"n_rep must be an integer >= 1, got {n_rep!r}")


def rkv_tiled(x, n_rep):
    _rkv_pre(x, n_rep)
    return x.repeat(1, n_rep, 1, 1)


def rkv_interleave_seq_axis(x, n_rep):
    _rkv_pre(x, n_rep)
    b, h, s, d = x.shape
    return x.repeat_interleave(n_rep, dim=2).reshape(b, h * n_rep, s, d)


def rkv_view_of_expand(x, n_rep):
    _rkv_pre(x, n_rep)
    b, h, s, d = x.shape
    return x[:, :, None].expand(b, h, n_rep, s, d).view(b, h * n_rep, s, d)


def rkv_alt(x, n_rep):
    _rkv_pre(x, n_rep)
    return torch.repeat_interleave(x, n_rep, dim=1)


# ---------------------------------------------------------------- ex10_4 SwiGLU.forward


def swiglu_gate_swapped(self, x):
    hidden = self.w1(x) * F.silu(self.w3(x))
    return self.w2(self.dropout(hidden))


def swiglu_sigmoid(self, x):
    hidden = torch.sigmoid(self.w1(x)) * self.w3(x)
    return self.w2(self.dropout(hidden))


def swiglu_dropout_after_w2(self, x):
    hidden = F.silu(self.w1(x)) * self.w3(x)
    return self.dropout(self.w2(hidden))


# ---------------------------------------------------------------- ex10_5 online_softmax_update


def online_acc_not_rescaled(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc + weights @ values
    return new_top, total, acc


def online_rescale_inverted(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(new_top - top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


def online_max_wrong_axis(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-2, keepdim=True).amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


# ---------------------------------------------------------------- ex11_1 rope_halves_to_interleaved


def _r11_pre(weight, n_heads):
    if weight.dim() < 1 or weight.shape[0] % n_heads or (weight.shape[0] // n_heads) % 2:
        raise ValueError(f"weight must have n_heads={n_heads} heads of an even number of rows")
    return weight.shape[0] // n_heads, weight.shape[1:]


def r11_inverse_perm(weight, n_heads):
    head_dim, rest = _r11_pre(weight, n_heads)
    pairs = weight.reshape(n_heads, head_dim // 2, 2, *rest)
    return pairs.transpose(1, 2).reshape(weight.shape).clone()


def r11_ignores_heads(weight, n_heads):
    head_dim, rest = _r11_pre(weight, n_heads)
    halves = weight.reshape(2, weight.shape[0] // 2, *rest)
    return halves.transpose(0, 1).reshape(weight.shape).clone()


def r11_assumes_2d(weight, n_heads):
    head_dim, rest = _r11_pre(weight, n_heads)
    halves = weight.reshape(n_heads, 2, head_dim // 2, weight.shape[1])
    return halves.transpose(1, 2).reshape(weight.shape).clone()


def r11_alt(weight, n_heads):
    head_dim, rest = _r11_pre(weight, n_heads)
    half = head_dim // 2
    index = []
    for h in range(n_heads):
        for i in range(half):
            index += [h * head_dim + i, h * head_dim + half + i]
    return weight[torch.tensor(index, device=weight.device)]


# ---------------------------------------------------------------- ex11_2 split_conv1d


def _c1d_pre(weight, bias, parts):
    if weight.dim() != 2 or bias.shape != (weight.shape[1],) or weight.shape[1] % parts:
        raise ValueError("weight must be (in, parts·out) and bias (parts·out,)")


def c1d_split_dim0(weight, bias, parts):
    _c1d_pre(weight, bias, parts)
    out = weight.shape[1] // parts
    return [
        (w.t().contiguous(), b.clone()) for w, b in zip(weight.t().split(out, dim=1), bias.split(out), strict=False)
    ]


def c1d_reshape_not_transpose(weight, bias, parts):
    _c1d_pre(weight, bias, parts)
    out = weight.shape[1] // parts
    return [
        (w.reshape(out, -1).contiguous(), b.clone())
        for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=False)
    ]


def c1d_views(weight, bias, parts):
    _c1d_pre(weight, bias, parts)
    out = weight.shape[1] // parts
    return [(w.t(), b) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=False)]


def c1d_alt(weight, bias, parts):
    _c1d_pre(weight, bias, parts)
    ws = torch.chunk(weight.T, parts, dim=0)
    bs = torch.chunk(bias, parts)
    return [(w.clone(memory_format=torch.contiguous_format), b.clone()) for w, b in zip(ws, bs, strict=False)]


# ---------------------------------------------------------------- ex11_3 marian_layer_names


def _marian(decoder, norms, proj, with_bias=True):
    modules = {"norm1": "self_attn_layer_norm", "ffn.linear1": "fc1", "ffn.linear2": "fc2"}
    attentions = {"self_attn": "self_attn"}
    if decoder:
        attentions["cross_attn"] = "encoder_attn"
    modules |= norms(decoder)
    for ours, theirs in attentions.items():
        modules |= {f"{ours}.{p}": f"{theirs}.{q}" for p, q in proj.items()}
    kinds = ("weight", "bias") if with_bias else ("weight",)
    return {f"{o}.{t}": f"{th}.{t}" for o, th in modules.items() for t in kinds}


_PROJ = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "out_proj"}


def _norms_ok(decoder):
    if decoder:
        return {"norm2": "encoder_attn_layer_norm", "norm3": "final_layer_norm"}
    return {"norm2": "final_layer_norm"}


def marian_norms_swapped(decoder):
    if decoder:
        return _marian(decoder, lambda d: {"norm2": "final_layer_norm", "norm3": "encoder_attn_layer_norm"}, _PROJ)
    return _marian(decoder, _norms_ok, _PROJ)


def marian_no_bias(decoder):
    return _marian(decoder, _norms_ok, _PROJ, with_bias=False)


def marian_o_proj(decoder):
    return _marian(decoder, _norms_ok, {**_PROJ, "w_o": "o_proj"})


def marian_alt(decoder):
    names = {
        "self_attn.w_q": "self_attn.q_proj",
        "self_attn.w_k": "self_attn.k_proj",
        "self_attn.w_v": "self_attn.v_proj",
        "self_attn.w_o": "self_attn.out_proj",
        "norm1": "self_attn_layer_norm",
        "ffn.linear1": "fc1",
        "ffn.linear2": "fc2",
    }
    if decoder:
        names.update(
            {
                "cross_attn.w_q": "encoder_attn.q_proj",
                "cross_attn.w_k": "encoder_attn.k_proj",
                "cross_attn.w_v": "encoder_attn.v_proj",
                "cross_attn.w_o": "encoder_attn.out_proj",
                "norm2": "encoder_attn_layer_norm",
                "norm3": "final_layer_norm",
            }
        )
    else:
        names["norm2"] = "final_layer_norm"
    out = {}
    for ours, theirs in names.items():
        out[ours + ".weight"] = theirs + ".weight"
        out[ours + ".bias"] = theirs + ".bias"
    return out


# ================================================================ tables

MISTAKES = {
    "ex01_1": [
        (encode_unk_pad, "unknown tokens map to pad_id instead of unk_id"),
        (encode_bos_eos_swapped, "add_bos inserts eos_id and add_eos appends bos_id (ids swapped)"),
        (encode_mutates_input, "inserts '<bos>'/'<eos>' into the caller's token list (mutates input)"),
    ],
    "ex01_2": [
        (emb_divides, "divides by sqrt(d_model) instead of multiplying"),
        (emb_times_d, "multiplies by d_model (forgot the square root)"),
        (emb_sqrt_of_T, "scales by sqrt(tokens.shape[-1]) (sequence length) instead of sqrt(d_model)"),
    ],
    "ex01_3": [
        (onehot_no_cast, "one-hot not cast to weight dtype (long @ float)"),
        (onehot_float32, "casts to float32 always: output dtype not the weight's"),
        (onehot_no_num_classes, "F.one_hot without num_classes (width from the largest id)"),
    ],
    "ex02_1": [
        (pe_i_not_2i, "exponent uses i instead of 2i (frequencies too low)"),
        (pe_sin_cos_swapped, "cos on even features, sin on odd (swapped)"),
        (pe_odd_crash, "cos(angle) not cut for odd d_model (shape error for odd D)"),
    ],
    "ex02_2": [
        (posenc_batch_axis, "sequence length read from x.shape[0] (batch axis)"),
        (posenc_offset_ignored, "offset argument ignored (always rows 0..T-1)"),
        (posenc_no_dtype, "table not cast to x's dtype (half input becomes float32)"),
    ],
    "ex02_3": [
        (rel_sin_sign, "sin signs swapped: rotates the wrong way (M_{-k})"),
        (rel_i_not_2i, "frequency uses i instead of 2i"),
        (rel_halves_blocks, "rotation blocks laid out in halves (i, i+D/2) instead of pairs (2i, 2i+1)"),
    ],
    "ex03_1": [
        (scores_transpose_12, "k.transpose(1, 2) instead of the last two axes"),
        (scores_div_dk, "divides by d_k instead of sqrt(d_k)"),
        (scores_dk_from_k_rows, "d_k read from k.shape[-2] (the key length S)"),
    ],
    "ex03_2": [
        (mask_inverted, "mask polarity inverted (fills where True)"),
        (mask_minus_1e9, "fills with -1e9 instead of finfo(dtype).min"),
        (mask_in_place, "masked_fill_ in place: modifies the input scores"),
    ],
    "ex03_3": [
        (sdpa_softmax_dim2, "softmax over dim=-2 (queries) instead of keys"),
        (sdpa_returns_dropped, "returns the weights after dropout"),
        (sdpa_mask_after_softmax, "mask multiplied into the weights after softmax (rows no longer sum to 1)"),
    ],
    "ex04_1": [
        (split_dh_first, "view(B, T, Dh, H) then permute: features of heads interleaved"),
        (split_view_no_transpose, "reshape straight to (B, H, T, Dh) without transpose (mixes positions)"),
        (split_forgot_transpose, "forgot the transpose: returns (B, T, H, Dh)"),
    ],
    "ex04_2": [
        (merge_no_transpose, "reshape (B, H, T, Dh) to (B, T, H*Dh) without transposing"),
        (merge_view_error, ".view after transpose (non-contiguous: RuntimeError)"),
        (merge_transpose_23, "transposes axes 2, 3 (T and Dh) instead of 1, 2"),
    ],
    "ex04_3": [
        (mha_dropout_in_eval, "attention dropout applied in eval mode too (ignores self.training)"),
        (mha_kv_from_query, "keys and values projected from query instead of key/value (cross-attention broken)"),
        (mha_no_w_o, "forgot the output projection w_o"),
    ],
    "ex05_1": [
        (ffn_dropout_after_out, "dropout after linear2 instead of on the hidden layer"),
        (ffn_activation_twice, "activation applied after linear2 as well"),
        (ffn_hardcoded_relu, "hard-coded F.relu, ignoring the configured self.activation"),
    ],
    "ex05_2": [
        (residual_swapped, "norm_first inverted (pre-LN and post-LN swapped)"),
        (residual_prenorm_on_output, "pre-LN normalises the sub-layer's output instead of its input"),
        (residual_dropout_on_sum, "post-LN: dropout applied to the residual sum x + sublayer(x)"),
    ],
    "ex05_3": [
        (enc_no_mask, "mask not passed to self-attention"),
        (enc_norms_swapped, "norm1 and norm2 swapped between the sub-layers"),
        (enc_closure_reads_x, "closure attends over the outer x instead of its argument h (pre-LN skips the norm)"),
    ],
    "ex06_1": [
        (causal_triu, "triu instead of tril (sees the future, not the past)"),
        (causal_no_diagonal, "tril(-1): a position cannot attend to itself"),
        (causal_float, "float mask (torch.tril(torch.ones)) instead of bool"),
    ],
    "ex06_2": [
        (pad_inverted, "polarity inverted (True at padding)"),
        (pad_wrong_shape, "shape (B, 1, S, 1) instead of (B, 1, 1, S)"),
        (pad_ignores_pad_id, "pad_id ignored: compares with 0"),
    ],
    "ex06_3": [
        (dec_no_tgt_mask, "self-attention without tgt_mask (peeks at the future)"),
        (dec_cross_kv_from_x, "cross-attention keys/values from the decoder state, not memory"),
        (dec_cross_first, "cross-attention before self-attention (wrong order)"),
    ],
    "ex07_1": [
        (lr_max, "max instead of min"),
        (lr_warmup_exp, "warmup_steps**-0.5 instead of **-1.5"),
        (lr_scale_ignored, "scale argument ignored"),
    ],
    "ex07_2": [
        (tf_swapped, "returns (labels, input) swapped"),
        (tf_batch_axis, "slices the batch axis (tgt[:-1], tgt[1:])"),
        (tf_input_not_cut, "decoder input keeps the last column (length T+1)"),
    ],
    "ex07_3": [
        (ls_mean_includes_pad, "mean over all positions, padding included in the count"),
        (ls_smooth_over_v_minus_1, "smoothing spread over the V-1 wrong classes, not V"),
        (ls_log_softmax_dim1, "log_softmax over dim=1 (time) instead of the vocabulary"),
    ],
    "ex07_4": [
        (ts_no_zero_grad, "never clears gradients (accumulate across steps)"),
        (ts_clip_after_step, "clips gradients after optimizer.step()"),
        (ts_no_train_mode, "forgot model.train() (trains in eval mode: no dropout)"),
    ],
    "ex08_1": [
        (greedy_argmax_dim0, "argmax over dim=0 (batch) instead of vocabulary"),
        (greedy_forgets_finished, "new finished = (token == eos) only: forgets rows already finished"),
        (greedy_mutates_finished, "updates finished in place (|=) and returns it"),
    ],
    "ex08_2": [
        (topp_inclusive_cumsum, "drops where the inclusive cumsum >= top_p (drops the crossing token)"),
        (topp_no_unsort, "sorted-order mask applied without scattering back to vocabulary order"),
        (topp_ascending, "sorts ascending (keeps the least probable)"),
    ],
    "ex08_3": [
        (beam_no_penalty, "ranks by raw scores: length penalty ignored"),
        (beam_finished_grow, "lengths + 1 for every hypothesis, finished ones too"),
        (beam_divmod_beams, "origin/token from flat index with // beams, % beams instead of vocab"),
    ],
    "ex09_1": [
        (pack_strict_budget, "budget check strict (< max_tokens): exactly max_tokens splits"),
        (pack_source_only, "only source lengths considered"),
        (pack_sum_not_padded, "counts summed lengths, not n x longest (padding ignored)"),
    ],
    "ex09_2": [
        (avg_native_dtype, "sums in the tensors' own dtype (no float64), e.g. float16 overflow/rounding"),
        (avg_integers_too, "averages every tensor, integers too, and returns float32"),
        (avg_accumulates_into_first, "accumulates in place into state 0's tensors (mutates the input)"),
    ],
    "ex09_3": [
        (bpe_alphabetical_ties, "ties broken alphabetically instead of by symbol age"),
        (bpe_unweighted, "pair counts not weighted by word counts"),
        (bpe_distinct_pairs, "each pair counted once per word ('aaa' has (a,a) once)"),
    ],
    "ex10_1": [
        (rms_eps_outside, "eps added outside the square root"),
        (rms_dim0, "mean square over dim 0 instead of the feature axis"),
        (rms_variance, "divides by the standard deviation (variance, centred) instead of RMS"),
    ],
    "ex10_2": [
        (rope_inverse_rotation, "rotates by -angle (sin sign flipped)"),
        (rope_halves_pairs, "pairs (i, i+d/2) (halves layout) instead of (2i, 2i+1)"),
        (rope_positions_ignored, "positions argument ignored: uses arange(T)"),
    ],
    "ex10_3": [
        (rkv_tiled, "x.repeat(1, n_rep, 1, 1): heads tiled 0,1,0,1 instead of 0,0,1,1"),
        (rkv_interleave_seq_axis, "repeat_interleave on the sequence axis then reshape (mixes positions)"),
        (rkv_view_of_expand, ".view on an expanded tensor (RuntimeError)"),
    ],
    "ex10_4": [
        (swiglu_gate_swapped, "silu applied to w3 instead of w1 (gate swapped)"),
        (swiglu_sigmoid, "sigmoid gate instead of silu (GLU, not SwiGLU)"),
        (swiglu_dropout_after_w2, "dropout after w2 instead of on the hidden layer"),
    ],
    "ex10_5": [
        (online_acc_not_rescaled, "acc not rescaled by exp(top - new_top)"),
        (online_rescale_inverted, "rescale exp(new_top - top) (inverted)"),
        (online_max_wrong_axis, "block max taken over queries too (dim=-2 then -1): shared max across rows"),
    ],
    "ex11_1": [
        (r11_inverse_perm, "inverse permutation (interleaved -> halves)"),
        (r11_ignores_heads, "halves taken across the whole matrix, ignoring heads"),
        (r11_assumes_2d, "reshape uses weight.shape[1]: crashes on a 1-D bias"),
    ],
    "ex11_2": [
        (c1d_split_dim0, "transposes first, then splits along dim 1 (the input axis)"),
        (c1d_reshape_not_transpose, "reshape(out, in) instead of transpose (mixes data)"),
    ],
    "ex11_3": [
        (marian_norms_swapped, "decoder: norm2 -> final_layer_norm, norm3 -> encoder_attn_layer_norm (swapped)"),
        (marian_no_bias, "only .weight entries, biases missing"),
        (marian_o_proj, "w_o mapped to o_proj (Llama's name) instead of out_proj"),
    ],
}

ALTERNATIVES = {
    "ex01_1": [encode_alt],
    "ex01_3": [onehot_alt],
    "ex02_1": [pe_alt],
    "ex02_3": [rel_alt],
    "ex03_1": [scores_alt],
    "ex03_2": [mask_alt],
    "ex04_2": [merge_alt],
    "ex04_3": [mha_alt],
    "ex05_2": [residual_alt],
    "ex06_1": [causal_alt],
    "ex07_1": [lr_alt],
    "ex07_3": [ls_alt],
    "ex08_2": [topp_alt],
    "ex10_2": [rope_alt],
    "ex10_3": [rkv_alt],
    "ex11_1": [r11_alt],
    "ex11_2": [c1d_alt, c1d_views],  # c1d_views returns views of the input: the docstring does not ask for copies
    "ex11_3": [marian_alt],
}
