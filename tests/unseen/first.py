"""Plausible learner mistakes (and correct alternatives) for every exercise of transformer_course.

Each mistake is a changed copy of the reference solution. ``MISTAKES[id]`` is a list of
``(impl, description)``; ``ALTERNATIVES[id]`` is a list of correct implementations written
differently. For methods, ``impl`` takes ``self`` first.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from transformer_course._validate import check_token_dtype
from transformer_course.attention import apply_mask, attention_scores, fast_attention, scaled_dot_product_attention
from transformer_course.decoding import gnmt_length_penalty
from transformer_course.loss import label_smoothed_cross_entropy
from transformer_course.multihead import merge_heads, split_heads
from transformer_course.rotary import rope_angles
from transformer_course.step import MixedPrecision
from transformer_course.sublayer import residual
from transformer_course.vocab import BOS

# ---------------------------------------------------------------- ex01_1 Vocab.encode


def ex01_1_unk_is_pad(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id.get(token, self.pad_id) for token in tokens]
    if add_bos:
        ids.insert(0, self.bos_id)
    if add_eos:
        ids.append(self.eos_id)
    return ids


def ex01_1_keyerror(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id[token] for token in tokens]
    if add_bos:
        ids.insert(0, self.bos_id)
    if add_eos:
        ids.append(self.eos_id)
    return ids


def ex01_1_mutates_input(self, tokens, add_bos=False, add_eos=False):
    if add_bos:
        tokens.insert(0, BOS)
    ids = [self.token_to_id.get(token, self.unk_id) for token in tokens]
    if add_eos:
        ids.append(self.eos_id)
    return ids


# ---------------------------------------------------------------- ex01_2 TokenEmbedding.forward


def ex01_2_no_scale(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens)


def ex01_2_divide(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) / math.sqrt(self.d_model)


def ex01_2_times_d(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) * self.d_model


def ex01_2_alt_functional(self, tokens):
    check_token_dtype(tokens)
    return F.embedding(tokens, self.embedding.weight, self.embedding.padding_idx) * self.d_model**0.5


# ---------------------------------------------------------------- ex01_3 one_hot_lookup


def ex01_3_inferred_classes(tokens, weight):
    one_hot = F.one_hot(tokens).to(weight.dtype)  # num_classes inferred from the largest id
    return one_hot @ weight


def ex01_3_float32(tokens, weight):
    one_hot = F.one_hot(tokens, num_classes=weight.shape[0]).float()
    return one_hot @ weight.float()


def ex01_3_classes_is_d(tokens, weight):
    one_hot = F.one_hot(tokens, num_classes=weight.shape[1]).to(weight.dtype)
    return one_hot @ weight


def ex01_3_alt_einsum(tokens, weight):
    return torch.einsum("...v,vd->...d", F.one_hot(tokens, weight.shape[0]).to(weight.dtype), weight)


# ---------------------------------------------------------------- ex02_1 sinusoidal table


def ex02_1_i_not_2i(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    i = torch.arange(0, (d_model + 1) // 2, dtype=torch.float32)  # i instead of 2i
    frequency = torch.exp(-math.log(10000.0) * i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table


def ex02_1_sin_cos_swapped(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.cos(angle)
    table[:, 1::2] = torch.sin(angle[:, : d_model // 2])
    return table


def ex02_1_odd_d_crash(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)
    angle = position * frequency
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)  # shape error when d_model is odd
    return table


def ex02_1_alt_pow(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    denom = torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angle = pos / denom
    table = torch.empty(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = angle.sin()
    table[:, 1::2] = angle.cos()[:, : d_model // 2]
    return table.float()


# ---------------------------------------------------------------- ex02_2 PositionalEncoding.forward


def ex02_2_batch_axis(self, x, offset=0):
    seq_len = x.shape[0]  # batch axis taken as positions
    table = self.pe[offset : offset + seq_len]
    return self.dropout(x + table.to(x.dtype))


def ex02_2_ignores_offset(self, x, offset=0):
    seq_len = x.shape[1]
    table = self.pe[:seq_len]
    return self.dropout(x + table.to(x.dtype))


def ex02_2_dropout_before_add(self, x, offset=0):
    seq_len = x.shape[1]
    table = self.pe[offset : offset + seq_len]
    return self.dropout(x) + table.to(x.dtype)


# ---------------------------------------------------------------- ex02_3 relative_position_map


def ex02_3_inverse_rotation(k, d_model):
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(-sin)  # signs of sin swapped: M_{-k}
    m[1::2, 0::2] = torch.diag(sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()


def ex02_3_float64(k, d_model):
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(sin)
    m[1::2, 0::2] = torch.diag(-sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m  # forgot .float()


def ex02_3_halves_blocks(k, d_model):
    half = d_model // 2
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[:half, :half] = torch.diag(cos)  # sin features assumed in the first half
    m[:half, half:] = torch.diag(sin)
    m[half:, :half] = torch.diag(-sin)
    m[half:, half:] = torch.diag(cos)
    return m.float()


# ---------------------------------------------------------------- ex03_1 attention_scores


def ex03_1_no_scale(q, k):
    return q @ k.transpose(-2, -1)


def ex03_1_scale_by_s(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(k.shape[-2])


def ex03_1_dot_T(q, k):
    return q @ k.T / math.sqrt(q.shape[-1])


def ex03_1_alt_einsum(q, k):
    return torch.einsum("...td,...sd->...ts", q, k) * q.shape[-1] ** -0.5


# ---------------------------------------------------------------- ex03_2 apply_mask


def ex03_2_polarity(scores, mask):
    if mask is None:
        return scores
    return scores.masked_fill(mask, torch.finfo(scores.dtype).min)


def ex03_2_neg_inf(scores, mask):
    if mask is None:
        return scores
    return scores.masked_fill(~mask, float("-inf"))


def ex03_2_in_place(scores, mask):
    if mask is None:
        return scores
    scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)
    return scores


def ex03_2_alt_where(scores, mask):
    if mask is None:
        return scores
    low = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype, device=scores.device)
    return torch.where(mask, scores, low)


# ---------------------------------------------------------------- ex03_3 scaled_dot_product_attention


def ex03_3_softmax_dim(q, k, v, mask=None, dropout_p=0.0):
    scores = apply_mask(attention_scores(q, k), mask)
    weights = scores.softmax(dim=-2)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


def ex03_3_returns_dropped(q, k, v, mask=None, dropout_p=0.0):
    scores = apply_mask(attention_scores(q, k), mask)
    weights = scores.softmax(dim=-1)
    weights = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return weights @ v, weights


def ex03_3_mask_after_softmax(q, k, v, mask=None, dropout_p=0.0):
    weights = attention_scores(q, k).softmax(dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


def ex03_3_alt_where(q, k, v, mask=None, dropout_p=0.0):
    scores = torch.einsum("...td,...sd->...ts", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    out = torch.einsum("...ts,...sd->...td", F.dropout(weights, dropout_p) if dropout_p else weights, v)
    return out, weights


# ---------------------------------------------------------------- ex04_1 split_heads


def ex04_1_view_no_transpose(x, n_heads):
    batch, length, features = x.shape
    return x.view(batch, n_heads, length, features // n_heads)


def ex04_1_strided_heads(x, n_heads):
    batch, length, features = x.shape
    x = x.view(batch, length, features // n_heads, n_heads)
    return x.permute(0, 3, 1, 2)


def ex04_1_forgot_transpose(x, n_heads):
    batch, length, features = x.shape
    return x.view(batch, length, n_heads, features // n_heads)


def ex04_1_alt_unflatten(x, n_heads):
    return x.unflatten(-1, (n_heads, -1)).permute(0, 2, 1, 3)


# ---------------------------------------------------------------- ex04_2 merge_heads


def ex04_2_no_transpose(x):
    batch, n_heads, length, head_dim = x.shape
    return x.reshape(batch, length, n_heads * head_dim)


def ex04_2_view_noncontiguous(x):
    batch, n_heads, length, head_dim = x.shape
    return x.transpose(1, 2).view(batch, length, n_heads * head_dim)


def ex04_2_head_minor(x):
    batch, n_heads, length, head_dim = x.shape
    return x.permute(0, 2, 3, 1).reshape(batch, length, n_heads * head_dim)


def ex04_2_alt_cat(x):
    return torch.cat(x.unbind(dim=1), dim=-1)


# ---------------------------------------------------------------- ex04_3 MultiHeadAttention.forward


def _mha_prefix(self, query, key, value, mask, need_weights, cache, fast):
    self._check_inputs(query, key, value, cache)
    return None


def ex04_3_no_w_o(self, query, key, value, mask=None, need_weights=False, *, cache=None, fast=True):
    early = _mha_prefix(self, query, key, value, mask, need_weights, cache, fast)
    if early is not None:
        return early
    q = split_heads(self.w_q(query), self.n_heads)
    q = self.positioned(q, cache)
    k, v = self.keys_and_values(key, value, cache)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return merge_heads(heads), weights  # forgot W^O


def ex04_3_dropout_in_eval(self, query, key, value, mask=None, need_weights=False, *, cache=None, fast=True):
    early = _mha_prefix(self, query, key, value, mask, need_weights, cache, fast)
    if early is not None:
        return early
    q = split_heads(self.w_q(query), self.n_heads)
    q = self.positioned(q, cache)
    k, v = self.keys_and_values(key, value, cache)
    dropout_p = self.dropout  # also in eval mode
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return self.w_o(merge_heads(heads)), weights


def ex04_3_kv_from_query(self, query, key, value, mask=None, need_weights=False, *, cache=None, fast=True):
    early = _mha_prefix(self, query, key, value, mask, need_weights, cache, fast)
    if early is not None:
        return early
    q = split_heads(self.w_q(query), self.n_heads)
    q = self.positioned(q, cache)
    k, v = self.keys_and_values(query, query, cache)  # self-attention only
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, mask, dropout_p), None
    return self.w_o(merge_heads(heads)), weights


# ---------------------------------------------------------------- ex05_1 PositionwiseFeedForward.forward


def ex05_1_dropout_on_output(self, x):
    hidden = self.activation(self.linear1(x))
    return self.dropout(self.linear2(hidden))


def ex05_1_always_relu(self, x):
    hidden = self.dropout(F.relu(self.linear1(x)))
    return self.linear2(hidden)


def ex05_1_no_activation(self, x):
    return self.linear2(self.dropout(self.linear1(x)))


def ex05_1_alt_functional(self, x):
    h = F.linear(x, self.linear1.weight, self.linear1.bias)
    h = self.dropout(self.activation(h))
    return F.linear(h, self.linear2.weight, self.linear2.bias)


# ---------------------------------------------------------------- ex05_2 residual


def ex05_2_post_ln_norm_on_branch(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return x + norm(dropout(sublayer(x)))


def ex05_2_orders_swapped(x, sublayer, norm, dropout, norm_first):
    if not norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


def ex05_2_pre_ln_adds_normed(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        h = norm(x)
        return h + dropout(sublayer(h))
    return norm(x + dropout(sublayer(x)))


# ---------------------------------------------------------------- ex05_3 EncoderLayer.forward


def ex05_3_mask_dropped(self, x, mask=None, cache=None):
    def attend(h):
        return self.self_attn(h, h, h, cache=cache)[0]

    x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


def ex05_3_norm1_twice(self, x, mask=None, cache=None):
    def attend(h):
        return self.self_attn(h, h, h, mask, cache=cache)[0]

    x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm1, self.dropout1, self.norm_first)


def ex05_3_residual_not_connection(self, x, mask=None, cache=None):
    def attend(h):
        return self.self_attn(h, h, h, mask, cache=cache)[0]

    x = residual(x, attend, self.norm1, self.dropout1, self.norm_first)  # ignores self.connection
    return residual(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


# ---------------------------------------------------------------- ex06_1 causal_mask


def ex06_1_triu(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).triu()


def ex06_1_no_diagonal(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).tril(diagonal=-1)


def ex06_1_float(size, device=None):
    return torch.ones(size, size, device=device).tril()


def ex06_1_alt_arange(size, device=None):
    i = torch.arange(size, device=device)
    return i[:, None] >= i[None, :]


# ---------------------------------------------------------------- ex06_2 padding_mask


def ex06_2_polarity(tokens, pad_id):
    return (tokens == pad_id)[:, None, None, :]


def ex06_2_three_dims(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(1)


def ex06_2_pad_zero(tokens, pad_id):
    return (tokens != 0)[:, None, None, :]


def ex06_2_alt_ne(tokens, pad_id):
    return tokens.ne(pad_id).unsqueeze(1).unsqueeze(2)


# ---------------------------------------------------------------- ex06_3 DecoderLayer.forward


def ex06_3_cross_kv_from_x(self, x, memory, tgt_mask=None, memory_mask=None, *, cache=None):
    self_cache, cross_cache = (None, None) if cache is None else (cache.self_attn, cache.cross_attn)
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


def ex06_3_masks_swapped(self, x, memory, tgt_mask=None, memory_mask=None, *, cache=None):
    self_cache, cross_cache = (None, None) if cache is None else (cache.self_attn, cache.cross_attn)
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


def ex06_3_no_cross_cache(self, x, memory, tgt_mask=None, memory_mask=None, *, cache=None):
    self_cache = None if cache is None else cache.self_attn
    x = self.connection(
        x, lambda h: self.self_attn(h, h, h, tgt_mask, cache=self_cache)[0], self.norm1, self.dropout1, self.norm_first
    )
    x = self.connection(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, self.norm_first
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


# ---------------------------------------------------------------- ex07_1 transformer_lr


def ex07_1_warmup_half(step, d_model, warmup_steps, scale=1.0):
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-0.5)


def ex07_1_max(step, d_model, warmup_steps, scale=1.0):
    return scale * d_model**-0.5 * max(step**-0.5, step * warmup_steps**-1.5)


def ex07_1_no_scale(step, d_model, warmup_steps, scale=1.0):
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def ex07_1_alt_piecewise(step, d_model, warmup_steps, scale=1.0):
    if step < warmup_steps:
        factor = step / warmup_steps**1.5
    else:
        factor = 1 / math.sqrt(step)
    return scale * factor / math.sqrt(d_model)


# ---------------------------------------------------------------- ex07_2 teacher_forcing


def ex07_2_swapped(tgt):
    return tgt[:, 1:], tgt[:, :-1]


def ex07_2_labels_not_shifted(tgt):
    return tgt[:, :-1], tgt[:, :-1]


def ex07_2_batch_axis(tgt):
    return tgt[:-1], tgt[1:]


def ex07_2_alt_narrow(tgt):
    n = tgt.shape[1] - 1
    return tgt.narrow(1, 0, n), tgt.narrow(1, 1, n)


# ---------------------------------------------------------------- ex07_3 label_smoothed_cross_entropy


def ex07_3_mean_with_padding(logits, target, smoothing=0.1, pad_id=0):
    log_probs = logits.float().log_softmax(dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = (1.0 - smoothing) * nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).mean()  # divides by every position, padding included


def ex07_3_spread_over_others(logits, target, smoothing=0.1, pad_id=0):
    log_probs = logits.float().log_softmax(dim=-1)
    vocab = logits.shape[-1]
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    others = (-log_probs.sum(dim=-1) - nll) / (vocab - 1)  # eps spread over the V-1 wrong tokens
    per_token = (1.0 - smoothing) * nll + smoothing * others
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


def ex07_3_no_one_minus_eps(logits, target, smoothing=0.1, pad_id=0):
    log_probs = logits.float().log_softmax(dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


def ex07_3_alt_cross_entropy(logits, target, smoothing=0.1, pad_id=0):
    vocab = logits.shape[-1]
    total = F.cross_entropy(
        logits.float().reshape(-1, vocab),
        target.reshape(-1),
        reduction="sum",
        label_smoothing=smoothing,
        ignore_index=pad_id,
    )
    return total / (target != pad_id).sum().clamp(min=1)


# ---------------------------------------------------------------- ex07_4 train_step


def ex07_4_zero_grad_after_backward(
    model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None
):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    precision.scaler.scale(loss).backward()
    optimizer.zero_grad(set_to_none=True)  # clears the gradients just computed
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


def ex07_4_clip_after_step(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad(set_to_none=True)
    precision.scaler.scale(loss).backward()
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if max_grad_norm is not None:  # too late: the step already used the unclipped gradients
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


def ex07_4_no_train_mode(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
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


def ex08_1_forgets_finished(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1).masked_fill(finished, pad_id)
    return next_tokens, next_tokens == eos_id


def ex08_1_argmax_dim0(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=0).masked_fill(finished, pad_id)
    return next_tokens, finished | (next_tokens == eos_id)


def ex08_1_in_place(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1).masked_fill(finished, pad_id)
    finished |= next_tokens == eos_id
    return next_tokens, finished


def ex08_1_alt_where(logits, finished, eos_id, pad_id):
    best = torch.max(logits, dim=-1).indices
    tokens = torch.where(finished, torch.full_like(best, pad_id), best)
    return tokens, torch.logical_or(finished, tokens.eq(eos_id))


# ---------------------------------------------------------------- ex08_2 top_p_filter


def ex08_2_no_shift(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    drop_sorted = probs.cumsum(dim=-1) > top_p  # includes the token itself
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def ex08_2_sorted_order(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    return sorted_logits.masked_fill(before >= top_p, float("-inf"))  # never put back in vocabulary order


def ex08_2_gather_unsort(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    drop_sorted = before >= top_p
    drop = drop_sorted.gather(-1, order)  # gather with the forward permutation instead of its inverse
    return logits.masked_fill(drop, float("-inf"))


def ex08_2_alt_argsort(logits, top_p):
    order = logits.argsort(dim=-1, descending=True)
    probs = logits.softmax(dim=-1).gather(-1, order)
    before = torch.cumsum(probs, dim=-1) - probs
    inverse = order.argsort(dim=-1)
    drop = (before >= top_p).gather(-1, inverse)
    return torch.where(drop, torch.full_like(logits, float("-inf")), logits)


# ---------------------------------------------------------------- ex08_3 beam_step


def ex08_3_no_penalty(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    flat = candidates.reshape(batch, beams * vocab).topk(beams, dim=-1).indices  # raw scores ranked
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


def ex08_3_finished_extended(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    candidates = scores[..., None] + log_probs  # finished hypotheses extended like the others
    new_lengths = lengths + 1
    ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


def ex08_3_lengths_not_reordered(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
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
    return origin, tokens, new_scores, new_finished, new_lengths  # not gathered by origin


# ---------------------------------------------------------------- ex09_1 pack


def ex09_1_forgets_last(order, src_lengths, tgt_lengths, max_tokens):
    batches, batch = [], []
    longest_src = longest_tgt = 0
    for i in order:
        s, t = src_lengths[i], tgt_lengths[i]
        if max(s, t) > max_tokens:
            raise ValueError(f"example {i} is longer than max_tokens={max_tokens}")
        grown = len(batch) + 1
        if batch and (grown * max(longest_src, s) > max_tokens or grown * max(longest_tgt, t) > max_tokens):
            batches.append(batch)
            batch, longest_src, longest_tgt = [], 0, 0
        batch.append(i)
        longest_src, longest_tgt = max(longest_src, s), max(longest_tgt, t)
    return batches  # the last, partial batch is lost


def ex09_1_strict_budget(order, src_lengths, tgt_lengths, max_tokens):
    batches, batch = [], []
    longest_src = longest_tgt = 0
    for i in order:
        s, t = src_lengths[i], tgt_lengths[i]
        if max(s, t) > max_tokens:
            raise ValueError(f"example {i} is longer than max_tokens={max_tokens}")
        grown = len(batch) + 1
        if batch and (grown * max(longest_src, s) >= max_tokens or grown * max(longest_tgt, t) >= max_tokens):
            batches.append(batch)
            batch, longest_src, longest_tgt = [], 0, 0
        batch.append(i)
        longest_src, longest_tgt = max(longest_src, s), max(longest_tgt, t)
    if batch:
        batches.append(batch)
    return batches


def ex09_1_source_only(order, src_lengths, tgt_lengths, max_tokens):
    batches, batch = [], []
    longest_src = 0
    for i in order:
        s = src_lengths[i]
        if s > max_tokens:
            raise ValueError(f"example {i} is longer than max_tokens={max_tokens}")
        grown = len(batch) + 1
        if batch and grown * max(longest_src, s) > max_tokens:
            batches.append(batch)
            batch, longest_src = [], 0
        batch.append(i)
        longest_src = max(longest_src, s)
    if batch:
        batches.append(batch)
    return batches


# ---------------------------------------------------------------- ex09_2 average_state_dicts


def ex09_2_averages_integers(states):
    keys = list(states[0])
    for i, state in enumerate(states[1:], start=1):
        if list(state) != keys:
            raise ValueError(f"state {i} has other keys than state 0")
    averaged = {}
    for key in keys:
        tensors = [state[key] for state in states]
        first = tensors[0]
        for i, tensor in enumerate(tensors[1:], start=1):
            if tensor.shape != first.shape or tensor.dtype != first.dtype:
                raise ValueError(f"{key}: state {i} differs in shape or dtype")
        averaged[key] = (
            torch.stack([t.detach().double() for t in tensors])
            .mean(dim=0)
            .to(first.dtype if first.is_floating_point() else torch.float32)
        )
    return averaged


def ex09_2_stays_float64(states):
    keys = list(states[0])
    for i, state in enumerate(states[1:], start=1):
        if list(state) != keys:
            raise ValueError(f"state {i} has other keys than state 0")
    averaged = {}
    for key in keys:
        tensors = [state[key] for state in states]
        first = tensors[0]
        for i, tensor in enumerate(tensors[1:], start=1):
            if tensor.shape != first.shape or tensor.dtype != first.dtype:
                raise ValueError(f"{key}: state {i} differs in shape or dtype")
        if first.is_floating_point():
            total = torch.stack([t.detach().double() for t in tensors]).sum(dim=0)
            averaged[key] = total / len(tensors)  # forgot .to(first.dtype)
        else:
            if any(not torch.equal(t, first) for t in tensors[1:]):
                raise ValueError(f"{key} differs between the states")
            averaged[key] = first.clone()
    return averaged


def ex09_2_no_validation(states):
    averaged = {}
    for key in states[0]:
        tensors = [state[key] for state in states]  # KeyError / stack error instead of ValueError
        first = tensors[0]
        if first.is_floating_point():
            averaged[key] = (torch.stack([t.detach().double() for t in tensors]).sum(dim=0) / len(tensors)).to(
                first.dtype
            )
        else:
            averaged[key] = first.clone()
    return averaged


# ---------------------------------------------------------------- ex09_3 bpe_merges


def _bpe(words, n_merges, weighted=True, tie=None, extra=0):
    segmented = {word: list(word) for word in words}
    age = {char: ord(char) for word in words for char in word}
    merges = []
    while len(merges) < n_merges + extra:
        counts = {}
        for word, symbols in segmented.items():
            for pair in zip(symbols[:-1], symbols[1:], strict=True):
                counts[pair] = counts.get(pair, 0) + (words[word] if weighted else 1)
        if not counts:
            break
        if tie is None:
            best = min(counts, key=lambda pair: (-counts[pair], age[pair[0]], age[pair[1]]))
        else:
            best = min(counts, key=lambda pair: (-counts[pair], pair))
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


def ex09_3_unweighted(words, n_merges):
    return _bpe(words, n_merges, weighted=False)


def ex09_3_alphabetical_ties(words, n_merges):
    return _bpe(words, n_merges, tie="alpha")


def ex09_3_one_extra(words, n_merges):
    return _bpe(words, n_merges, extra=1)  # while len(merges) <= n_merges


# ---------------------------------------------------------------- ex10_1 RMSNorm.forward


def ex10_1_eps_outside(self, x):
    rms = x.pow(2).mean(dim=-1, keepdim=True).sqrt()
    return x / (rms + self.eps) * self.weight


def ex10_1_variance(self, x):
    var = x.var(dim=-1, keepdim=True, unbiased=False)  # subtracts the mean, as LayerNorm
    return x * torch.rsqrt(var + self.eps) * self.weight


def ex10_1_no_keepdim(self, x):
    mean_square = x.pow(2).mean(dim=-1)
    return x * torch.rsqrt(mean_square + self.eps) * self.weight


def ex10_1_alt_sqrt(self, x):
    return self.weight * (x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps))


# ---------------------------------------------------------------- ex10_2 apply_rope


def ex10_2_inverse_rotation(x, positions, base=10000.0):
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)
    rotated = torch.stack([even * cos + odd * sin, -even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2).to(x.dtype)


def ex10_2_halves(x, positions, base=10000.0):
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    half = x.shape[-1] // 2
    first, second = x[..., :half].to(dtype), x[..., half:].to(dtype)  # Llama's rotate_half pairing
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1).to(x.dtype)


def ex10_2_ignores_positions(x, positions, base=10000.0):
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    positions = torch.arange(x.shape[-2], device=x.device)  # always 0 … T-1
    angles = rope_angles(positions, x.shape[-1], base, dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2).to(x.dtype)


def ex10_2_alt_complex(x, positions, base=10000.0):
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    d = x.shape[-1]
    freq = 1.0 / base ** (torch.arange(0, d, 2, dtype=dtype, device=x.device) / d)
    angles = positions.to(dtype)[:, None] * freq
    z = torch.view_as_complex(x.to(dtype).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    out = torch.view_as_real(z * torch.polar(torch.ones_like(angles), angles))
    return out.reshape(x.shape).to(x.dtype)


# ---------------------------------------------------------------- ex10_3 repeat_kv


def ex10_3_tiles(x, n_rep):
    return x.repeat(1, n_rep, 1, 1)  # heads 0,1,0,1 instead of 0,0,1,1


def ex10_3_wrong_axis(x, n_rep):
    return x.repeat_interleave(n_rep, dim=2)


def ex10_3_view_expand(x, n_rep):
    batch, kv_heads, length, features = x.shape
    x = x[:, :, None].expand(batch, kv_heads, n_rep, length, features)
    return x.view(batch, kv_heads * n_rep, length, features)


def ex10_3_alt_interleave(x, n_rep):
    return torch.repeat_interleave(x, n_rep, dim=1)


# ---------------------------------------------------------------- ex10_4 SwiGLU.forward


def ex10_4_gate_swapped(self, x):
    hidden = F.silu(self.w3(x)) * self.w1(x)
    return self.w2(self.dropout(hidden))


def ex10_4_sigmoid(self, x):
    hidden = torch.sigmoid(self.w1(x)) * self.w3(x)
    return self.w2(self.dropout(hidden))


def ex10_4_dropout_on_output(self, x):
    hidden = F.silu(self.w1(x)) * self.w3(x)
    return self.dropout(self.w2(hidden))


def ex10_4_alt_manual(self, x):
    gate = x @ self.w1.weight.T
    hidden = gate * torch.sigmoid(gate) * (x @ self.w3.weight.T)
    return self.dropout(hidden) @ self.w2.weight.T


# ---------------------------------------------------------------- ex10_5 online_softmax_update


def ex10_5_acc_not_rescaled(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc + weights @ values
    return new_top, total, acc


def ex10_5_block_max_only(top, total, acc, scores, values):
    new_top = scores.amax(dim=-1, keepdim=True)  # forgets the running maximum
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


def ex10_5_rescale_inverted(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(new_top - top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


def ex10_5_alt_cat(top, total, acc, scores, values):
    new_top = torch.cat([top, scores], dim=-1).max(dim=-1, keepdim=True).values
    old = (top - new_top).exp()
    p = (scores - new_top).exp()
    return (
        new_top,
        torch.addcmul(p.sum(-1, keepdim=True), total, old),
        acc * old + torch.einsum("...ts,...sd->...td", p, values),
    )


# ---------------------------------------------------------------- ex11_1 rope_halves_to_interleaved


def ex11_1_whole_matrix(weight, n_heads):
    rest = weight.shape[1:]
    halves = weight.reshape(2, weight.shape[0] // 2, *rest)  # halves of all heads, not of each head
    return halves.transpose(0, 1).reshape(weight.shape).clone()


def ex11_1_inverse(weight, n_heads):
    head_dim, rest = weight.shape[0] // n_heads, weight.shape[1:]
    pairs = weight.reshape(n_heads, head_dim // 2, 2, *rest)  # interleaved → halves, the other way round
    return pairs.transpose(1, 2).reshape(weight.shape).clone()


def ex11_1_matrix_only(weight, n_heads):
    head_dim = weight.shape[0] // n_heads
    halves = weight.view(n_heads, 2, head_dim // 2, weight.shape[1])  # fails on a bias (1-D)
    return halves.transpose(1, 2).reshape(weight.shape).clone()


def ex11_1_alt_index(weight, n_heads):
    d = weight.shape[0] // n_heads
    within = torch.stack([torch.arange(d // 2), torch.arange(d // 2) + d // 2], dim=1).flatten()
    index = (torch.arange(n_heads)[:, None] * d + within).flatten()
    return weight[index.to(weight.device)]


# ---------------------------------------------------------------- ex11_2 split_conv1d


def ex11_2_no_transpose(weight, bias, parts):
    out = weight.shape[1] // parts
    return [(w.contiguous(), b.clone()) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=True)]


def ex11_2_split_rows(weight, bias, parts):
    return [(w.t().contiguous(), b.clone()) for w, b in zip(weight.chunk(parts, dim=0), bias.chunk(parts), strict=True)]


def ex11_2_bias_not_split(weight, bias, parts):
    out = weight.shape[1] // parts
    return [(w.t().contiguous(), bias.clone()) for w in weight.split(out, dim=1)]


def ex11_2_alt_chunk_first(weight, bias, parts):
    return list(zip(weight.t().contiguous().chunk(parts, dim=0), bias.clone().chunk(parts), strict=True))


# ---------------------------------------------------------------- ex11_3 marian_layer_names


def _marian(decoder, swap_norms=False, cross="encoder_attn", bias=True):
    modules = {"norm1": "self_attn_layer_norm", "ffn.linear1": "fc1", "ffn.linear2": "fc2"}
    attentions = {"self_attn": "self_attn"}
    if decoder:
        attentions["cross_attn"] = cross
        if swap_norms:
            modules |= {"norm2": "final_layer_norm", "norm3": "encoder_attn_layer_norm"}
        else:
            modules |= {"norm2": "encoder_attn_layer_norm", "norm3": "final_layer_norm"}
    else:
        modules["norm2"] = "final_layer_norm"
    projections = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "out_proj"}
    for ours, theirs in attentions.items():
        modules |= {f"{ours}.{p}": f"{theirs}.{q}" for p, q in projections.items()}
    kinds = ("weight", "bias") if bias else ("weight",)
    return {f"{ours}.{t}": f"{theirs}.{t}" for ours, theirs in modules.items() for t in kinds}


def ex11_3_decoder_norms_swapped(decoder):
    return _marian(decoder, swap_norms=True)


def ex11_3_cross_attn_name(decoder):
    return _marian(decoder, cross="cross_attn")


def ex11_3_no_biases(decoder):
    return _marian(decoder, bias=False)


# ---------------------------------------------------------------- the tables

MISTAKES = {
    "ex01_1": [
        (ex01_1_unk_is_pad, "unknown tokens mapped to pad_id instead of unk_id"),
        (ex01_1_keyerror, "token_to_id[token]: KeyError on an unknown token"),
        (ex01_1_mutates_input, "add_bos inserts '<bos>' into the caller's token list (mutates the input)"),
    ],
    "ex01_2": [
        (ex01_2_no_scale, "forgot the √d_model scaling"),
        (ex01_2_divide, "divides by √d_model instead of multiplying"),
        (ex01_2_times_d, "multiplies by d_model instead of √d_model"),
    ],
    "ex01_3": [
        (ex01_3_inferred_classes, "F.one_hot without num_classes (V inferred from the largest id)"),
        (ex01_3_float32, "one-hot and weight cast to float32: output float32 whatever weight's dtype"),
        (ex01_3_classes_is_d, "num_classes=weight.shape[1] (D instead of V)"),
    ],
    "ex02_1": [
        (ex02_1_i_not_2i, "exponent uses i instead of 2i (frequencies 10000^(i/D))"),
        (ex02_1_sin_cos_swapped, "cos in the even columns, sin in the odd ones"),
        (ex02_1_odd_d_crash, "cos assigned to all of angle: shape error for odd d_model"),
    ],
    "ex02_2": [
        (ex02_2_batch_axis, "seq_len = x.shape[0] (batch axis taken as positions)"),
        (ex02_2_ignores_offset, "ignores offset (always rows 0…T-1)"),
        (ex02_2_dropout_before_add, "dropout applied to x before adding the table, not to the sum"),
    ],
    "ex02_3": [
        (ex02_3_inverse_rotation, "sin signs swapped: builds M_{-k} (the inverse rotation)"),
        (ex02_3_float64, "returns float64 (forgot .float())"),
        (ex02_3_halves_blocks, "rotation blocks laid out as halves (sin first half, cos second)"),
    ],
    "ex03_1": [
        (ex03_1_no_scale, "forgot to divide by √d_k"),
        (ex03_1_scale_by_s, "divides by √S (k.shape[-2]) instead of √d_k"),
        (ex03_1_dot_T, "q @ k.T (reverses every axis of a batched k)"),
    ],
    "ex03_2": [
        (ex03_2_polarity, "mask polarity inverted (fills where mask is True)"),
        (ex03_2_neg_inf, "fills with -inf instead of finfo(dtype).min"),
        (ex03_2_in_place, "masked_fill_ in place: modifies the caller's scores"),
    ],
    "ex03_3": [
        (ex03_3_softmax_dim, "softmax over dim=-2 (queries) instead of keys"),
        (ex03_3_returns_dropped, "returns the weights after dropout"),
        (
            ex03_3_mask_after_softmax,
            "mask applied after the softmax (masked weights set to 0, rows no longer sum to 1)",
        ),
    ],
    "ex04_1": [
        (ex04_1_view_no_transpose, "view(B, H, T, Dh) directly (no transpose)"),
        (ex04_1_strided_heads, "view(B, T, Dh, H) + permute: heads take strided features"),
        (ex04_1_forgot_transpose, "forgot the transpose: returns (B, T, H, Dh)"),
    ],
    "ex04_2": [
        (ex04_2_no_transpose, "reshape without transposing heads back"),
        (ex04_2_view_noncontiguous, "transpose(1, 2).view(...): view of a non-contiguous tensor raises"),
        (ex04_2_head_minor, "permute(0, 2, 3, 1): features ordered Dh-major (heads interleaved)"),
    ],
    "ex04_3": [
        (ex04_3_no_w_o, "forgot the output projection W^O"),
        (ex04_3_dropout_in_eval, "attention dropout also in eval mode (ignores self.training)"),
        (ex04_3_kv_from_query, "keys and values projected from query (breaks cross-attention)"),
    ],
    "ex05_1": [
        (ex05_1_dropout_on_output, "dropout on the output instead of the hidden features"),
        (ex05_1_always_relu, "hard-coded F.relu (ignores self.activation)"),
        (ex05_1_no_activation, "forgot the activation"),
    ],
    "ex05_2": [
        (ex05_2_post_ln_norm_on_branch, "post-LN as x + norm(dropout(sublayer(x))) (norm on the branch only)"),
        (ex05_2_orders_swapped, "norm_first branches swapped (post-LN for True, pre-LN for False)"),
        (ex05_2_pre_ln_adds_normed, "pre-LN adds the normalised input as the shortcut"),
    ],
    "ex05_3": [
        (ex05_3_mask_dropped, "mask not passed to self-attention"),
        (ex05_3_norm1_twice, "FFN wrapped with norm1/dropout1 (norm2 never used)"),
        (ex05_3_residual_not_connection, "calls residual() directly, ignoring self.connection"),
    ],
    "ex06_1": [
        (ex06_1_triu, "triu: upper triangle (sees the future, not the past)"),
        (ex06_1_no_diagonal, "tril(diagonal=-1): a position cannot see itself"),
        (ex06_1_float, "float mask instead of bool"),
    ],
    "ex06_2": [
        (ex06_2_polarity, "polarity inverted: True at padding"),
        (ex06_2_three_dims, "shape (B, 1, S) instead of (B, 1, 1, S)"),
        (ex06_2_pad_zero, "hard-coded pad id 0 (ignores pad_id)"),
    ],
    "ex06_3": [
        (ex06_3_cross_kv_from_x, "cross-attention keys/values from the decoder states, not memory"),
        (ex06_3_masks_swapped, "tgt_mask and memory_mask swapped"),
        (ex06_3_no_cross_cache, "cross-attention not given its cache"),
    ],
    "ex07_1": [
        (ex07_1_warmup_half, "warmup_steps**-0.5 instead of **-1.5"),
        (ex07_1_max, "max instead of min"),
        (ex07_1_no_scale, "forgot the scale factor"),
    ],
    "ex07_2": [
        (ex07_2_swapped, "input and labels swapped"),
        (ex07_2_labels_not_shifted, "labels not shifted (labels = decoder input)"),
        (ex07_2_batch_axis, "shift along the batch axis (tgt[:-1], tgt[1:])"),
    ],
    "ex07_3": [
        (ex07_3_mean_with_padding, "mean over all positions (padding counted in the denominator)"),
        (ex07_3_spread_over_others, "ε spread over the V-1 wrong tokens (ε/(V-1)), not ε/V over all"),
        (ex07_3_no_one_minus_eps, "forgot the (1-ε) factor on the right token's NLL"),
    ],
    "ex07_4": [
        (ex07_4_zero_grad_after_backward, "optimizer.zero_grad() after backward (clears the new gradients)"),
        (ex07_4_clip_after_step, "gradient clipping after optimizer.step()"),
        (ex07_4_no_train_mode, "forgot model.train()"),
    ],
    "ex08_1": [
        (ex08_1_forgets_finished, "finished = (next == eos) only: forgets rows already finished"),
        (ex08_1_argmax_dim0, "argmax over dim=0 (batch) instead of the vocabulary"),
        (ex08_1_in_place, "updates finished in place (finished |= ...)"),
    ],
    "ex08_2": [
        (ex08_2_no_shift, "drop where cumsum (including the token) > top_p: drops the token that crosses"),
        (ex08_2_sorted_order, "returns the logits in sorted order (never unsorted)"),
        (ex08_2_gather_unsort, "unsorts with gather(order) instead of scatter (wrong inverse permutation)"),
    ],
    "ex08_3": [
        (ex08_3_no_penalty, "ranks candidates by raw score, no length penalty"),
        (ex08_3_finished_extended, "finished hypotheses extended like the others (no freezing)"),
        (ex08_3_lengths_not_reordered, "lengths not gathered by origin"),
    ],
    "ex09_1": [
        (ex09_1_forgets_last, "forgets to append the last, partial batch"),
        (ex09_1_strict_budget, "budget treated as strict (a batch of exactly max_tokens is cut)"),
        (ex09_1_source_only, "only the source lengths count toward the budget"),
    ],
    "ex09_2": [
        (ex09_2_averages_integers, "averages integer tensors too (turned to float32)"),
        (ex09_2_stays_float64, "forgot to cast back: float tensors come back float64"),
        (ex09_2_no_validation, "no key/shape/dtype validation (raises KeyError/RuntimeError, or silently averages)"),
    ],
    "ex09_3": [
        (ex09_3_unweighted, "pairs counted once per word (ignores the word counts)"),
        (ex09_3_alphabetical_ties, "ties broken alphabetically, not by symbol age"),
        (ex09_3_one_extra, "off by one: learns n_merges + 1 merges"),
    ],
    "ex10_1": [
        (ex10_1_eps_outside, "eps added outside the square root"),
        (ex10_1_variance, "uses the variance (subtracts the mean) like LayerNorm"),
        (ex10_1_no_keepdim, "mean without keepdim: broadcasts against the wrong axis"),
    ],
    "ex10_2": [
        (ex10_2_inverse_rotation, "rotates the wrong way (sin signs flipped)"),
        (ex10_2_halves, "pairs feature i with i + d/2 (Llama's halves) instead of (2i, 2i+1)"),
        (ex10_2_ignores_positions, "ignores positions, always uses 0…T-1"),
    ],
    "ex10_3": [
        (ex10_3_tiles, "x.repeat(1, n_rep, 1, 1): heads tiled 0,1,0,1 instead of 0,0,1,1"),
        (ex10_3_wrong_axis, "repeat_interleave along dim 2 (positions) instead of heads"),
        (ex10_3_view_expand, "view on an expanded tensor: raises"),
    ],
    "ex10_4": [
        (ex10_4_gate_swapped, "silu on W3 x, W1 x as value (gate and value swapped)"),
        (ex10_4_sigmoid, "sigmoid instead of silu (plain GLU)"),
        (ex10_4_dropout_on_output, "dropout on the output instead of the hidden features"),
    ],
    "ex10_5": [
        (ex10_5_acc_not_rescaled, "forgot to rescale acc by exp(top - new_top)"),
        (ex10_5_block_max_only, "new maximum from the block only (forgets the running max)"),
        (ex10_5_rescale_inverted, "rescale inverted: exp(new_top - top)"),
    ],
    "ex11_1": [
        (ex11_1_whole_matrix, "halves taken over the whole matrix, not per head"),
        (ex11_1_inverse, "applies the inverse permutation (interleaved → halves)"),
        (ex11_1_matrix_only, "view with weight.shape[1]: fails on a 1-D bias"),
    ],
    "ex11_2": [
        (ex11_2_no_transpose, "forgot to transpose (returns (in, out) weights)"),
        (ex11_2_split_rows, "splits along dim 0 (the input axis) instead of the outputs"),
        (ex11_2_bias_not_split, "gives the whole bias to every part"),
    ],
    "ex11_3": [
        (ex11_3_decoder_norms_swapped, "decoder norm2/norm3 swapped (final_layer_norm vs encoder_attn_layer_norm)"),
        (ex11_3_cross_attn_name, "cross_attn mapped to 'cross_attn' instead of Marian's 'encoder_attn'"),
        (ex11_3_no_biases, "only the weights, no bias entries"),
    ],
}

ALTERNATIVES = {
    "ex01_2": [ex01_2_alt_functional],
    "ex01_3": [ex01_3_alt_einsum],
    "ex02_1": [ex02_1_alt_pow],
    "ex03_1": [ex03_1_alt_einsum],
    "ex03_2": [ex03_2_alt_where],
    "ex03_3": [ex03_3_alt_where],
    "ex04_1": [ex04_1_alt_unflatten],
    "ex04_2": [ex04_2_alt_cat],
    "ex05_1": [ex05_1_alt_functional],
    "ex06_1": [ex06_1_alt_arange],
    "ex06_2": [ex06_2_alt_ne],
    "ex07_1": [ex07_1_alt_piecewise],
    "ex07_2": [ex07_2_alt_narrow],
    "ex07_3": [ex07_3_alt_cross_entropy],
    "ex08_1": [ex08_1_alt_where],
    "ex08_2": [ex08_2_alt_argsort],
    "ex10_1": [ex10_1_alt_sqrt],
    "ex10_2": [ex10_2_alt_complex],
    "ex10_3": [ex10_3_alt_interleave],
    "ex10_4": [ex10_4_alt_manual],
    "ex10_5": [ex10_5_alt_cat],
    "ex11_1": [ex11_1_alt_index],
    "ex11_2": [ex11_2_alt_chunk_first],
}


# ================================================================ a fourth, subtler mistake per exercise
# (kept apart from MISTAKES, which holds exactly three per exercise)

from transformer_course.decoding import gnmt_length_penalty as _lp  # noqa: E402


def x01_1_drops_unknown(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id[t] for t in tokens if t in self.token_to_id]  # unknown tokens silently dropped
    if add_bos:
        ids.insert(0, self.bos_id)
    if add_eos:
        ids.append(self.eos_id)
    return ids


def x01_2_scales_weight_in_place(self, tokens):
    check_token_dtype(tokens)
    with torch.no_grad():
        self.embedding.weight.mul_(math.sqrt(self.d_model))  # every call scales the stored weights again
    return self.embedding(tokens)


def x01_3_detached_weight(tokens, weight):
    one_hot = F.one_hot(tokens, num_classes=weight.shape[0]).to(weight.dtype)
    return one_hot @ weight.detach()


def x02_1_positions_from_1(max_len, d_model):
    position = torch.arange(1, max_len + 1, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    angle = position * torch.exp(-math.log(10000.0) * two_i / d_model)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table


def x02_2_adds_in_place(self, x, offset=0):
    x += self.pe[offset : offset + x.shape[1]].to(x.dtype)  # modifies the caller's x
    return self.dropout(x)


def x02_3_both_plus_sin(k, d_model):
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(sin)
    m[1::2, 0::2] = torch.diag(sin)  # sign forgotten: not a rotation
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()


def x03_1_dk_from_axis2(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(2))  # axis 2 is T for (B, H, T, Dk)


def x03_2_minus_1e9(scores, mask):
    if mask is None:
        return scores
    return scores.masked_fill(~mask, -1e9)


def x03_3_scaled_twice(q, k, v, mask=None, dropout_p=0.0):
    scores = apply_mask(attention_scores(q, k) / math.sqrt(q.shape[-1]), mask)  # attention_scores already scales
    weights = scores.softmax(dim=-1)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


def x04_1_permute_wrong(x, n_heads):
    batch, length, features = x.shape
    return x.view(batch, length, n_heads, features // n_heads).permute(0, 2, 3, 1)  # (B, H, Dh, T)


def x04_2_shape_unpacked_wrong(x):
    batch, length, n_heads, head_dim = x.shape  # names in the wrong order
    return x.transpose(1, 2).reshape(batch, length, n_heads * head_dim)


def x04_3_fast_path_no_mask(self, query, key, value, mask=None, need_weights=False, *, cache=None, fast=True):
    early = _mha_prefix(self, query, key, value, mask, need_weights, cache, fast)
    if early is not None:
        return early
    q = self.positioned(split_heads(self.w_q(query), self.n_heads), cache)
    k, v = self.keys_and_values(key, value, cache)
    dropout_p = self.dropout if self.training else 0.0
    if need_weights or not fast:
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)
    else:
        heads, weights = fast_attention(q, k, v, None, dropout_p), None  # mask forgotten on the fast path
    return self.w_o(merge_heads(heads)), weights


def x05_1_dropout_before_activation(self, x):
    return self.linear2(self.activation(self.dropout(self.linear1(x))))


def x05_2_dropout_on_sum(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return dropout(x + sublayer(norm(x)))
    return norm(dropout(x + sublayer(x)))


def x05_3_attends_outer_x(self, x, mask=None, cache=None):
    outer = x

    def attend(h):
        return self.self_attn(outer, outer, outer, mask, cache=cache)[0]  # ignores h (the normalised input)

    x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


def x06_1_four_dims(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()[None, None]  # (1, 1, T, T)


def x06_2_wrong_axes(tokens, pad_id):
    return (tokens != pad_id)[:, None, :, None]  # (B, 1, S, 1)


def x06_3_cross_query_outer_x(self, x, memory, tgt_mask=None, memory_mask=None, *, cache=None):
    self_cache, cross_cache = (None, None) if cache is None else (cache.self_attn, cache.cross_attn)
    x = self.connection(
        x, lambda h: self.self_attn(h, h, h, tgt_mask, cache=self_cache)[0], self.norm1, self.dropout1, self.norm_first
    )
    outer = x
    x = self.connection(
        x,
        lambda h: self.cross_attn(outer, memory, memory, memory_mask, cache=cross_cache)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


def x07_1_step_plus_one(step, d_model, warmup_steps, scale=1.0):
    step = step + 1  # "the paper counts from 1", applied to a step that already does
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def x07_2_labels_minus_100(tgt):
    labels = tgt[:, 1:].masked_fill(tgt[:, 1:] == 0, -100)  # Hugging Face habit
    return tgt[:, :-1], labels


def x07_3_log_softmax_time_axis(logits, target, smoothing=0.1, pad_id=0):
    log_probs = logits.float().log_softmax(dim=1)  # over T, not V
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = (1.0 - smoothing) * nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


def x07_4_scheduler_before_step(
    model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None
):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    if scheduler is not None:
        scheduler.step()  # before the optimizer's step
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
    return loss.detach()


def x08_1_finished_get_eos(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1).masked_fill(finished, eos_id)  # eos again instead of pad
    return next_tokens, finished | (next_tokens == eos_id)


def x08_2_strict_greater(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    drop_sorted = before > top_p  # keeps the token whose predecessors reach exactly top_p
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def x08_3_penalty_old_lengths(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    ranked = candidates / _lp(lengths, alpha)[..., None]  # penalty of the old lengths
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


def x09_1_src_longest_not_reset(order, src_lengths, tgt_lengths, max_tokens):
    batches, batch = [], []
    longest_src = longest_tgt = 0
    for i in order:
        s, t = src_lengths[i], tgt_lengths[i]
        if max(s, t) > max_tokens:
            raise ValueError(f"example {i} is longer than max_tokens={max_tokens}")
        grown = len(batch) + 1
        if batch and (grown * max(longest_src, s) > max_tokens or grown * max(longest_tgt, t) > max_tokens):
            batches.append(batch)
            batch, longest_tgt = [], 0  # longest_src not reset
        batch.append(i)
        longest_src, longest_tgt = max(longest_src, s), max(longest_tgt, t)
    if batch:
        batches.append(batch)
    return batches


def x09_2_own_dtype_sum(states):
    keys = list(states[0])
    for i, state in enumerate(states[1:], start=1):
        if list(state) != keys:
            raise ValueError(f"state {i} has other keys than state 0")
    averaged = {}
    for key in keys:
        tensors = [state[key] for state in states]
        first = tensors[0]
        for i, tensor in enumerate(tensors[1:], start=1):
            if tensor.shape != first.shape or tensor.dtype != first.dtype:
                raise ValueError(f"{key}: state {i} differs in shape or dtype")
        if first.is_floating_point():
            total = tensors[0].detach().clone()
            for t in tensors[1:]:
                total += t.detach()  # summed in the tensors' own dtype, in the order given
            averaged[key] = total / len(tensors)
        else:
            if any(not torch.equal(t, first) for t in tensors[1:]):
                raise ValueError(f"{key} differs between the states")
            averaged[key] = first.clone()
    return averaged


def x09_3_first_occurrence_only(words, n_merges):
    segmented = {word: list(word) for word in words}
    age = {char: ord(char) for word in words for char in word}
    merges = []
    while len(merges) < n_merges:
        counts = {}
        for word, symbols in segmented.items():
            for pair in zip(symbols[:-1], symbols[1:], strict=True):
                counts[pair] = counts.get(pair, 0) + words[word]
        if not counts:
            break
        best = min(counts, key=lambda pair: (-counts[pair], age[pair[0]], age[pair[1]]))
        joined = best[0] + best[1]
        age.setdefault(joined, 0x110000 + len(merges))
        merges.append(best)
        for symbols in segmented.values():
            for i in range(len(symbols) - 1):
                if (symbols[i], symbols[i + 1]) == best:
                    symbols[i : i + 2] = [joined]
                    break  # only the first occurrence in each word
    return merges


def x10_1_global_mean(self, x):
    mean_square = x.pow(2).mean()  # over every entry, not per position
    return x * torch.rsqrt(mean_square + self.eps) * self.weight


def x10_2_angles_in_x_dtype(x, positions, base=10000.0):
    dtype = x.dtype  # cos/sin and rotation in x's dtype; angles from float32
    angles = rope_angles(positions, x.shape[-1], base, torch.float32).to(dtype)
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)


def x10_3_forgot_reshape(x, n_rep):
    batch, kv_heads, length, features = x.shape
    return x[:, :, None].expand(batch, kv_heads, n_rep, length, features)  # still 5-D


def x10_4_dropout_on_gate(self, x):
    hidden = F.silu(self.dropout(self.w1(x))) * self.w3(x)
    return self.w2(hidden)


def x10_5_weights_old_top(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - top)  # the old maximum (−inf at the first block)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


def x11_1_columns(weight, n_heads):
    if weight.dim() == 1:
        return ex11_1_inverse(weight, n_heads)
    d = weight.shape[1]  # permutes the columns (the input features) instead of the rows
    halves = weight.reshape(weight.shape[0], 2, d // 2)
    return halves.transpose(1, 2).reshape(weight.shape).clone()


def x11_2_block_from_in(weight, bias, parts):
    out = weight.shape[0] // parts  # in/parts instead of (parts·out)/parts
    return [(w.t().contiguous(), b.clone()) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=False)]


def x11_3_o_proj(decoder):
    names = _marian(decoder)
    return {ours: theirs.replace("out_proj", "o_proj") for ours, theirs in names.items()}  # Llama's name


EXTRA_MISTAKES = {
    "ex01_1": [(x01_1_drops_unknown, "unknown tokens silently dropped instead of mapped to <unk>")],
    "ex01_2": [(x01_2_scales_weight_in_place, "scales the embedding weight in place at every call")],
    "ex01_3": [(x01_3_detached_weight, "weight.detach(): no gradient reaches the weight")],
    "ex02_1": [(x02_1_positions_from_1, "positions counted from 1 instead of 0")],
    "ex02_2": [(x02_2_adds_in_place, "x += table: modifies the caller's x")],
    "ex02_3": [(x02_3_both_plus_sin, "both off-diagonal terms +sin (not a rotation)")],
    "ex03_1": [(x03_1_dk_from_axis2, "d_k read as q.size(2) (T for 4-D inputs)")],
    "ex03_2": [(x03_2_minus_1e9, "fills with -1e9 (overflows to -inf in float16)")],
    "ex03_3": [(x03_3_scaled_twice, "divides by √d_k again after attention_scores")],
    "ex04_1": [(x04_1_permute_wrong, "permute(0, 2, 3, 1): returns (B, H, Dh, T)")],
    "ex04_2": [(x04_2_shape_unpacked_wrong, "shape unpacked as (B, T, H, Dh): output (B, H, T·Dh)")],
    "ex04_3": [(x04_3_fast_path_no_mask, "fast path called without the mask")],
    "ex05_1": [(x05_1_dropout_before_activation, "dropout before the activation (same for ReLU, not for swish/GELU)")],
    "ex05_2": [(x05_2_dropout_on_sum, "dropout on the sum x + sublayer(x), not on the sub-layer's output")],
    "ex05_3": [
        (x05_3_attends_outer_x, "attention closure reads the outer x, not its argument h (pre-LN norm bypassed)")
    ],
    "ex06_1": [(x06_1_four_dims, "returns (1, 1, T, T) instead of (T, T)")],
    "ex06_2": [(x06_2_wrong_axes, "returns (B, 1, S, 1): keys on the query axis")],
    "ex06_3": [(x06_3_cross_query_outer_x, "cross-attention query from the outer x, not the normalised h (pre-LN)")],
    "ex07_1": [(x07_1_step_plus_one, "uses step + 1 (steps already count from 1)")],
    "ex07_2": [(x07_2_labels_minus_100, "label padding replaced by -100 (Hugging Face habit)")],
    "ex07_3": [(x07_3_log_softmax_time_axis, "log_softmax over dim=1 (positions) instead of the vocabulary")],
    "ex07_4": [(x07_4_scheduler_before_step, "scheduler.step() before optimizer.step()")],
    "ex08_1": [(x08_1_finished_get_eos, "finished rows get eos_id again instead of pad_id")],
    "ex08_2": [(x08_2_strict_greater, "drop where before > top_p (strict) instead of >=")],
    "ex08_3": [(x08_3_penalty_old_lengths, "length penalty of the old lengths, not the new ones")],
    "ex09_1": [(x09_1_src_longest_not_reset, "longest source length not reset when a batch is cut")],
    "ex09_2": [(x09_2_own_dtype_sum, "sums in the tensors' own dtype, in the given order (not float64)")],
    "ex09_3": [(x09_3_first_occurrence_only, "merges only the first occurrence of the pair in each word")],
    "ex10_1": [(x10_1_global_mean, "mean square over the whole tensor, not per position")],
    "ex10_2": [
        (
            x10_2_angles_in_x_dtype,
            "angles made in float32, cos/sin and the rotation in x's dtype (float16 stays float16; float64 gets float32-precision angles)",
        )
    ],
    "ex10_3": [(x10_3_forgot_reshape, "forgot the reshape: returns (B, Hkv, n_rep, S, D)")],
    "ex10_4": [(x10_4_dropout_on_gate, "dropout on the gate's pre-activation only")],
    "ex10_5": [(x10_5_weights_old_top, "block weights exp(scores - top) with the old top")],
    "ex11_1": [(x11_1_columns, "reorders the columns (input features) instead of the rows")],
    "ex11_2": [(x11_2_block_from_in, "block size from the input size (weight.shape[0] // parts)")],
    "ex11_3": [(x11_3_o_proj, "w_o mapped to 'o_proj' (Llama's name) instead of 'out_proj'")],
}


# ================================================================ more correct alternatives

from collections import Counter  # noqa: E402


def alt01_1_concat(self, tokens, add_bos=False, add_eos=False):
    unk = self.unk_id
    return [self.bos_id] * add_bos + [self.token_to_id.get(t, unk) for t in tokens] + [self.eos_id] * add_eos


def alt02_2_type_as(self, x, offset=0):
    return self.dropout(x + self.pe[offset : offset + x.size(1)].unsqueeze(0).type_as(x))


def alt02_3_block_diag(k, d_model):
    blocks = []
    for i in range(0, d_model, 2):
        a = k / 10000.0 ** (i / d_model)
        c, s = math.cos(a), math.sin(a)
        blocks.append(torch.tensor([[c, s], [-s, c]], dtype=torch.float64))
    return torch.block_diag(*blocks).float()


def alt05_2_branch(x, sublayer, norm, dropout, norm_first):
    inner = norm(x) if norm_first else x
    out = x + dropout(sublayer(inner))
    return out if norm_first else norm(out)


def alt07_4_zero_first(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision or MixedPrecision.off()
    optimizer.zero_grad()
    model.train()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing=smoothing, pad_id=batch.pad_id)
    precision.scaler.scale(loss).backward()
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(list(model.parameters()), max_norm=max_grad_norm)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


def alt08_3_masked(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    b, kk, v = log_probs.shape
    step = log_probs.masked_fill(finished[..., None], float("-inf"))
    pad_col = torch.where(finished, torch.zeros_like(scores), step[..., pad_id])
    step = torch.cat([step[..., :pad_id], pad_col[..., None], step[..., pad_id + 1 :]], dim=-1)
    total = scores.unsqueeze(-1) + step
    new_len = torch.where(finished, lengths, lengths + 1)
    penalty = ((5.0 + new_len.float()) / 6.0) ** alpha
    _, idx = (total / penalty.unsqueeze(-1)).view(b, -1).topk(kk, dim=1)
    origin = torch.div(idx, v, rounding_mode="floor")
    tokens = idx - origin * v
    return (
        origin,
        tokens,
        total.view(b, -1).gather(1, idx),
        torch.gather(finished, 1, origin) | tokens.eq(eos_id),
        torch.gather(new_len, 1, origin),
    )


def alt09_1_tentative(order, src_lengths, tgt_lengths, max_tokens):
    batches, batch = [], []
    for i in order:
        if src_lengths[i] > max_tokens or tgt_lengths[i] > max_tokens:
            raise ValueError(f"example {i} does not fit in max_tokens={max_tokens}")
        trial = batch + [i]
        fits = all(len(trial) * max(lengths[j] for j in trial) <= max_tokens for lengths in (src_lengths, tgt_lengths))
        if fits:
            batch = trial
        else:
            batches.append(batch)
            batch = [i]
    if batch:
        batches.append(batch)
    return batches


def alt09_2_mean64(states):
    first = states[0]
    for n, state in enumerate(states):
        if set(state) != set(first) or list(state) != list(first):
            raise ValueError(f"state {n} has other keys")
        for key, t in state.items():
            if t.shape != first[key].shape or t.dtype != first[key].dtype:
                raise ValueError(f"{key}: state {n} has another shape or dtype")
    out = {}
    for key, t0 in first.items():
        if t0.is_floating_point():
            out[key] = torch.stack([s[key].detach().to(torch.float64) for s in states]).mean(0).to(t0.dtype)
        elif all(torch.equal(s[key], t0) for s in states):
            out[key] = t0.clone()
        else:
            raise ValueError(f"{key} differs and cannot be averaged")
    return out


def alt09_3_counter(words, n_merges):
    splits = {w: tuple(w) for w in words}
    rank = {c: ord(c) for w in words for c in w}
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for w, syms in splits.items():
            for a, b in zip(syms, syms[1:], strict=False):
                pairs[a, b] += words[w]
        if not pairs:
            break
        top = max(pairs.values())
        best = min((p for p, c in pairs.items() if c == top), key=lambda p: (rank[p[0]], rank[p[1]]))
        merges.append(best)
        new = best[0] + best[1]
        rank.setdefault(new, 10**7 + len(merges))
        for w, syms in splits.items():
            out, i = [], 0
            while i < len(syms):
                if i + 1 < len(syms) and (syms[i], syms[i + 1]) == best:
                    out.append(new)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            splits[w] = tuple(out)
    return merges


def alt11_3_loops(decoder):
    pairs = [("self_attn", "self_attn")] + ([("cross_attn", "encoder_attn")] if decoder else [])
    names = {}
    for ours, theirs in pairs:
        for p, q in zip(("w_q", "w_k", "w_v", "w_o"), ("q_proj", "k_proj", "v_proj", "out_proj"), strict=True):
            for t in ("weight", "bias"):
                names[f"{ours}.{p}.{t}"] = f"{theirs}.{q}.{t}"
    norms = ["self_attn_layer_norm"] + (["encoder_attn_layer_norm"] if decoder else []) + ["final_layer_norm"]
    for n, theirs in enumerate(norms, start=1):
        for t in ("weight", "bias"):
            names[f"norm{n}.{t}"] = f"{theirs}.{t}"
    for ours, theirs in (("ffn.linear1", "fc1"), ("ffn.linear2", "fc2")):
        for t in ("weight", "bias"):
            names[f"{ours}.{t}"] = f"{theirs}.{t}"
    return names


for _ex, _fn in [
    ("ex01_1", alt01_1_concat),
    ("ex02_2", alt02_2_type_as),
    ("ex02_3", alt02_3_block_diag),
    ("ex05_2", alt05_2_branch),
    ("ex07_4", alt07_4_zero_first),
    ("ex08_3", alt08_3_masked),
    ("ex09_1", alt09_1_tentative),
    ("ex09_2", alt09_2_mean64),
    ("ex09_3", alt09_3_counter),
    ("ex11_3", alt11_3_loops),
]:
    ALTERNATIVES.setdefault(_ex, []).append(_fn)
