"""Known wrong answers, named (issue 30, item 9): plausible mistakes that are not the mutants of
``tests/mutants``, each written as a learner would write it (a changed copy of the solution), run
through its exercise's check, whose message must name the mistake. Left out of the student edition
with the mutants (the mistakes are close to the solutions)."""

from __future__ import annotations

import contextlib
import math
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer_course.decoding import gnmt_length_penalty
from transformer_course.loss import label_smoothed_cross_entropy
from transformer_course.multihead import merge_heads, split_heads
from transformer_course.tools.checks import run_check

from .mutants.ch09 import _replace_all  # a pair merged left to right, every place it occurs

# -- chapter 01 -----------------------------------------------------------------------------------


def _encode(self, tokens, add_bos, add_eos, unknown=None, bos_last=False):
    ids = [self.token_to_id.get(t, self.unk_id if unknown is None else unknown) for t in tokens]
    if add_bos:
        ids = ids + [self.bos_id] if bos_last else [self.bos_id] + ids
    return ids + [self.eos_id] if add_eos else ids


def _unknown_minus_one(self, tokens, add_bos=False, add_eos=False):
    return _encode(self, tokens, add_bos, add_eos, unknown=-1)


def _unknown_past_the_end(self, tokens, add_bos=False, add_eos=False):
    return _encode(self, tokens, add_bos, add_eos, unknown=len(self.token_to_id))


def _bos_appended(self, tokens, add_bos=False, add_eos=False):
    return _encode(self, tokens, add_bos, add_eos, bos_last=True)


def _embedding_over_d_model(self, tokens):
    return self.embedding(tokens) / self.d_model


def _embedding_root_of_length(self, tokens):
    return self.embedding(tokens) * math.sqrt(tokens.shape[-1])


def _embedding_plus_root(self, tokens):
    return self.embedding(tokens) + math.sqrt(self.d_model)


def _lookup_transposed(tokens, weight):
    one_hot = F.one_hot(tokens, weight.shape[0]).to(weight.dtype)
    return weight.T @ one_hot.transpose(-1, -2)


def _lookup_bag_of_words(tokens, weight):
    return F.one_hot(tokens, weight.shape[0]).to(weight.dtype).sum(dim=-2) @ weight


def _lookup_scaled(tokens, weight):
    return F.one_hot(tokens, weight.shape[0]).to(weight.dtype) @ weight * math.sqrt(weight.shape[1])


def _lookup_row_before(tokens, weight):
    return F.one_hot(tokens - 1, weight.shape[0]).to(weight.dtype) @ weight


# -- chapter 02 -----------------------------------------------------------------------------------


def _sinusoids(max_len, d_model, exponent_sign=-1.0, sines_only=False):
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    frequency = 10000.0 ** (exponent_sign * torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    angles = position * frequency  # (max_len, ceil(d/2))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = (torch.sin if sines_only else torch.cos)(angles)[:, : d_model // 2]
    return table


def _table_positive_exponent(max_len, d_model):
    return _sinusoids(max_len, d_model, exponent_sign=1.0)


def _table_sines_only(max_len, d_model):
    return _sinusoids(max_len, d_model, sines_only=True)


def _table_transposed(max_len, d_model):
    return _sinusoids(max_len, d_model).T


def _forward_table_only(self, x, offset=0):
    return self.dropout(self.pe[offset : offset + x.size(1)].to(x.dtype).expand_as(x))


def _forward_rescaled(self, x, offset=0):
    return self.dropout(x * math.sqrt(x.size(-1)) + self.pe[offset : offset + x.size(1)].to(x.dtype))


def _forward_subtracted(self, x, offset=0):
    return self.dropout(x - self.pe[offset : offset + x.size(1)].to(x.dtype))


def _rotation(k, d_model, angle, swap=False):
    m = torch.zeros(d_model, d_model)
    for two_i in range(0, d_model, 2):
        c, s = math.cos(angle(k, two_i, d_model)), math.sin(angle(k, two_i, d_model))
        c, s = (s, c) if swap else (c, s)
        m[two_i : two_i + 2, two_i : two_i + 2] = torch.tensor([[c, s], [-s, c]])
    return m


def _rotation_swapped(k, d_model):
    return _rotation(k, d_model, lambda k, j, d: k / 10000 ** (j / d), swap=True)


def _rotation_k_ignored(k, d_model):
    return _rotation(k, d_model, lambda k, j, d: 1 / 10000 ** (j / d))


def _rotation_inverse_frequency(k, d_model):
    return _rotation(k, d_model, lambda k, j, d: k * 10000 ** (j / d))


# -- chapter 03 -----------------------------------------------------------------------------------


def _scores_times_sqrt(q, k):
    return q @ k.transpose(-2, -1) * math.sqrt(q.shape[-1])


def _scores_over_sqrt_t(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(1 if q.dim() == 3 else -2))


def _scores_k_first(q, k):
    return k @ q.transpose(-2, -1) / math.sqrt(q.shape[-1])


def _scores_softmaxed(q, k):
    return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1)


def _mask_multiplied(scores, mask):
    return scores * mask


def _mask_float32_lowest(scores, mask):
    return scores.masked_fill(~mask, torch.finfo(torch.float32).min)


def _mask_forgotten(scores, mask):
    return scores.clone()


def _attention(q, k, v, mask, scale, dim=-1, keep=True):
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask if keep else mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=dim)
    return weights @ v, weights


def _attention_unscaled(q, k, v, mask=None):
    return _attention(q, k, v, mask, 1.0)


def _attention_over_d_k(q, k, v, mask=None):
    return _attention(q, k, v, mask, 1 / q.shape[-1])


def _attention_mask_flipped(q, k, v, mask=None):
    return _attention(q, k, v, mask, q.shape[-1] ** -0.5, keep=False)


# -- chapter 04 -----------------------------------------------------------------------------------


def _split_not_transposed(x, n_heads):
    b, t, d = x.shape
    return x.view(b, t, n_heads, d // n_heads)


def _split_wrong_axes(x, n_heads):
    b, t, d = x.shape
    return x.view(b, t, n_heads, d // n_heads).transpose(-1, -2)


def _split_positions_last(x, n_heads):
    b, t, d = x.shape
    return x.view(b, t, n_heads, d // n_heads).permute(0, 2, 3, 1)


def _merge_transposed_only(x):
    return x.transpose(1, 2).contiguous()


def _merge_summed(x):
    return x.sum(dim=1)


def _merge_averaged(x):
    return x.mean(1)


def _mha(self, query, key, value, mask, need_weights, scale=None, dim=-1, use_mask=True):
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    scores = q @ k.transpose(-2, -1) * (self.d_k**-0.5 if scale is None else scale)
    if mask is not None and use_mask:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=dim)
    return self.w_o(merge_heads(weights @ v)), (weights if need_weights else None)


def _mha_unscaled(self, query, key, value, mask=None, need_weights=False, **kwargs):
    return _mha(self, query, key, value, mask, need_weights, scale=1.0)


def _mha_softmax_over_queries(self, query, key, value, mask=None, need_weights=False, **kwargs):
    return _mha(self, query, key, value, mask, need_weights, dim=2)


def _mha_mask_forgotten(self, query, key, value, mask=None, need_weights=False, **kwargs):
    return _mha(self, query, key, value, mask, need_weights, use_mask=False)


def _mha_heads_not_moved_back(self, query, key, value, mask=None, need_weights=False, **kwargs):
    out, weights = _mha(self, query, key, value, mask, True)
    heads = weights @ split_heads(self.w_v(value), self.n_heads)  # (B, H, T, Dv)
    return self.w_o(heads.reshape(query.shape[0], query.shape[1], -1)), (weights if need_weights else None)


def _mha_heads_doubled(self, query, key, value, mask=None, need_weights=False, **kwargs):
    out, weights = _mha(self, query, key, value, mask, need_weights)
    return out + (out - self.w_o.bias), weights  # the merged heads counted twice before W^O's bias


def _mha_masked_after_the_softmax(self, query, key, value, mask=None, need_weights=False, **kwargs):
    q = split_heads(self.w_q(query), self.n_heads)
    k, v = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    weights = (q @ k.transpose(-2, -1) / math.sqrt(self.d_k)).softmax(dim=-1)
    weights = weights if mask is None else weights * mask  # the rows no longer sum to 1
    return self.w_o(merge_heads(weights @ v)), (weights if need_weights else None)


# -- chapter 05 -----------------------------------------------------------------------------------


def _ffn_relu_last(self, x):
    return self.linear2(self.dropout(self.linear1(x))).relu()


def _ffn_plus_x(self, x):
    return x + self.linear2(self.dropout(self.activation(self.linear1(x))))


def _ffn_no_biases(self, x):
    hidden = self.dropout(self.activation(F.linear(x, self.linear1.weight)))
    return F.linear(hidden, self.linear2.weight)


def _ffn_dropout_on_x(self, x):
    return self.linear2(self.activation(self.linear1(self.dropout(x))))


def _residual_from_the_normed_x(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        x = norm(x)
        return x + dropout(sublayer(x))
    return norm(x + dropout(sublayer(x)))


def _post_ln_without_norm(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return x + dropout(sublayer(x))


def _dropout_after_the_norm(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return dropout(norm(x + sublayer(x)))


def _encoder(self, x, mask, cache, blocks):
    parts = {"attention": lambda h: self.self_attn(h, h, h, mask, cache=cache)[0], "ffn": self.ffn}
    norms = {"norm1": self.norm1, "norm2": self.norm2}
    for part, norm, first in blocks:
        x = self.connection(x, parts[part], norms[norm], self.dropout1, first)
    return x


def _encoder_norms_swapped(self, x, mask=None, cache=None):
    return _encoder(self, x, mask, cache, [("attention", "norm2", self.norm_first), ("ffn", "norm1", self.norm_first)])


def _encoder_attention_missing(self, x, mask=None, cache=None):
    return _encoder(self, x, mask, cache, [("ffn", "norm2", self.norm_first)])


def _encoder_flag_inverted(self, x, mask=None, cache=None):
    inverted = not self.norm_first
    return _encoder(self, x, mask, cache, [("attention", "norm1", inverted), ("ffn", "norm2", inverted)])


def _encoder_ffn_on_the_input(self, x, mask=None, cache=None):
    h = self.connection(x, lambda h: self.self_attn(h, h, h, mask, cache=cache)[0], self.norm1, self.dropout1,
                        self.norm_first)  # fmt: skip
    if self.norm_first:
        return h + self.dropout2(self.ffn(self.norm2(h)))
    return self.norm2(h + self.dropout2(self.ffn(x)))  # post-LN: the feed-forward network reads the layer's input


def _encoder_pre_ln_ffn_on_the_input(self, x, mask=None, cache=None):
    h = self.connection(x, lambda h: self.self_attn(h, h, h, mask, cache=cache)[0], self.norm1, self.dropout1,
                        self.norm_first)  # fmt: skip
    if self.norm_first:
        return h + self.dropout2(self.ffn(self.norm2(x)))  # reads x, not h: each block alone is right
    return self.connection(h, self.ffn, self.norm2, self.dropout2, self.norm_first)


# -- chapter 06 -----------------------------------------------------------------------------------


def _causal_one_ahead(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).tril(diagonal=1)


def _causal_all_true(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device)


def _causal_diagonal_only(size, device=None):
    return torch.eye(size, dtype=torch.bool, device=device)


def _padding_both_sides(tokens, pad_id):
    keep = tokens != pad_id
    return keep[:, None, :, None] & keep[:, None, None, :]


def _padding_axes_at_the_end(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(-1).unsqueeze(-1)


def _padding_greater_than(tokens, pad_id):
    return (tokens > pad_id)[:, None, None, :]


def _decoder(self, x, memory, tgt_mask, memory_mask, cache, norms, blocks=("self", "cross", "ffn")):
    self_cache, cross_cache = (None, None) if cache is None else (cache.self_attn, cache.cross_attn)
    parts = {
        "self": lambda h: self.self_attn(h, h, h, tgt_mask, cache=self_cache)[0],
        "cross": lambda h: self.cross_attn(h, memory, memory, memory_mask, cache=cross_cache)[0],
        "ffn": self.ffn,
    }
    for part, norm in zip(blocks, norms, strict=True):
        x = self.connection(x, parts[part], norm, self.dropout1, self.norm_first)
    return x


def _decoder_memory_normed(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    x = self.connection(x, lambda h: self.self_attn(h, h, h, tgt_mask)[0], self.norm1, self.dropout1,
                        self.norm_first)  # fmt: skip
    memory = self.norm2(memory)  # the memory is normalised like the queries
    x = self.connection(x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2,
                        self.norm_first)  # fmt: skip
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


def _decoder_norm2_norm3_swapped(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    return _decoder(self, x, memory, tgt_mask, memory_mask, cache, (self.norm1, self.norm3, self.norm2))


def _decoder_one_norm(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    return _decoder(self, x, memory, tgt_mask, memory_mask, cache, (self.norm1,) * 3)


def _decoder_no_cross_attention(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    return _decoder(self, x, memory, tgt_mask, memory_mask, cache, (self.norm1, self.norm3), ("self", "ffn"))


# -- chapter 07 -----------------------------------------------------------------------------------


def _lr_root_d_model(step, d_model, warmup_steps, scale=1.0):
    return scale * d_model**0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def _lr_decay_power(step, d_model, warmup_steps, scale=1.0):
    return scale * d_model**-0.5 * min(step**0.5, step * warmup_steps**-1.5)


def _lr_warmup_power_positive(step, d_model, warmup_steps, scale=1.0):
    return scale / math.sqrt(d_model) * min(1 / math.sqrt(step), step * warmup_steps**1.5)


def _same_cut(tgt):
    return tgt[:, :-1], tgt[:, :-1]


def _both_from_one(tgt):
    return tgt[:, 1:], tgt[:, 1:]


def _shifted_by_two(tgt):
    return tgt[:, :-2], tgt[:, 2:]


def _per_token(logits, target, smoothing, target_weight=None):
    log_p = logits.log_softmax(dim=-1)
    nll = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    return (1 - smoothing if target_weight is None else target_weight) * nll - smoothing * log_p.mean(-1)


def _loss_summed(logits, target, smoothing=0.1, pad_id=0):
    return _per_token(logits, target, smoothing)[target != pad_id].sum()


def _loss_target_unweighted(logits, target, smoothing=0.1, pad_id=0):
    return _per_token(logits, target, smoothing, target_weight=1.0)[target != pad_id].mean()


def _loss_from_raw_logits(logits, target, smoothing=0.1, pad_id=0):
    nll = -logits.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # the logit, not its log-probability
    per_token = (1 - smoothing) * nll - smoothing * logits.log_softmax(dim=-1).mean(-1)
    return per_token[target != pad_id].mean()


def _loss_smoothing_on_probabilities(logits, target, smoothing=0.1, pad_id=0):
    log_p = logits.log_softmax(dim=-1)
    nll = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * nll - smoothing * log_p.exp().mean(-1)  # mean of p, not of −log p
    return per_token[target != pad_id].mean()


def _loss_ids_above_pad(logits, target, smoothing=0.1, pad_id=0):
    return _per_token(logits, target, smoothing)[target > pad_id].mean()  # drops the ids below pad_id too


def _loss_sentence_means(logits, target, smoothing=0.1, pad_id=0):
    keep = (target != pad_id).float()
    per_sentence = (_per_token(logits, target, smoothing) * keep).sum(1) / keep.sum(1)
    return per_sentence[keep.sum(1) > 0].mean()


def _train(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision, order):
    model.train()
    with precision.autocast(batch.src.device) if precision else contextlib.nullcontext():
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    parts = {
        "zero": optimizer.zero_grad,
        "backward": loss.backward,
        "clip": lambda: max_grad_norm is None or nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm),
        "step": optimizer.step,
        "schedule": lambda: scheduler is None or scheduler.step(),
    }
    for part in order:
        parts[part]()
    return loss.detach()


def _zero_grad_after_backward(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision=None):
    order = ("backward", "zero", "clip", "step", "schedule")
    return _train(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision, order)


def _scheduler_first(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision=None):
    order = ("zero", "backward", "clip", "schedule", "step")
    return _train(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision, order)


def _never_clipped(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision=None):
    order = ("zero", "backward", "step", "schedule")
    return _train(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision, order)


# -- chapter 08 -----------------------------------------------------------------------------------


def _greedy_argmin(logits, finished, eos_id, pad_id):
    tokens = logits.argmin(dim=-1).masked_fill(finished, pad_id)
    return tokens, finished | (tokens == eos_id)


def _greedy_eos_padded(logits, finished, eos_id, pad_id):
    tokens = logits.argmax(dim=-1)
    tokens = tokens.masked_fill(finished | (tokens == eos_id), pad_id)
    return tokens, finished | (logits.argmax(dim=-1) == eos_id)


def _greedy_finished_get_eos(logits, finished, eos_id, pad_id):
    tokens = logits.argmax(dim=-1).masked_fill(finished, eos_id)
    return tokens, finished | (tokens == eos_id)


def _top_p(logits, top_p, fill=float("-inf"), invert=False):
    probs, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
    drop = probs.cumsum(dim=-1) - probs >= top_p
    drop = ~drop if invert else drop
    return logits.masked_fill(drop.scatter(-1, order, drop), fill)


def _top_p_zero_fill(logits, top_p):
    return _top_p(logits, top_p, fill=0.0)


def _top_p_lowest_fill(logits, top_p):
    return _top_p(logits, top_p, fill=torch.finfo(logits.dtype).min)


def _top_p_inverted(logits, top_p):
    return _top_p(logits, top_p, invert=True)


def _beam(scores, log_probs, finished, lengths, eos_id, pad_id, alpha, gather=None, multiply=False):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    candidates = scores[..., None] + torch.where(finished[..., None], frozen, log_probs)
    new_lengths = lengths + (~finished).long()
    penalty = gnmt_length_penalty(new_lengths, alpha)[..., None]
    ranked = candidates * penalty if multiply else candidates / penalty
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_lengths = new_lengths.gather(1, origin) if gather is None else gather(new_lengths, origin)
    return origin, tokens, new_scores, finished.gather(1, origin) | (tokens == eos_id), new_lengths


def _beam_lengths_in_place(scores, log_probs, finished, lengths, eos_id, pad_id, alpha):
    return _beam(scores, log_probs, finished, lengths, eos_id, pad_id, alpha, gather=lambda n, o: n)


def _beam_finished_in_place(scores, log_probs, finished, lengths, eos_id, pad_id, alpha):
    origin, tokens, new_scores, _, new_lengths = _beam(scores, log_probs, finished, lengths, eos_id, pad_id, alpha)
    return origin, tokens, new_scores, finished | (tokens == eos_id), new_lengths


def _beam_penalty_multiplied(scores, log_probs, finished, lengths, eos_id, pad_id, alpha):
    return _beam(scores, log_probs, finished, lengths, eos_id, pad_id, alpha, multiply=True)


# -- chapter 09 -----------------------------------------------------------------------------------


def _pack(order, src_lengths, tgt_lengths, max_tokens, too_big):
    batches, batch = [], []
    for i in order:
        if batch and too_big(batch, i):
            batches.append(batch)
            batch = []
        batch.append(i)
    return batches + [batch] if batch else batches


def _pack_old_longest(order, src_lengths, tgt_lengths, max_tokens):
    def too_big(batch, i):  # the longest of the batch so far, the new example's length left out
        longest = max(max(src_lengths[j], tgt_lengths[j]) for j in batch)
        return (len(batch) + 1) * longest > max_tokens

    return _pack(order, src_lengths, tgt_lengths, max_tokens, too_big)


def _pack_old_count(order, src_lengths, tgt_lengths, max_tokens):
    def too_big(batch, i):  # the count before the new example
        grown = [*batch, i]
        return any(len(batch) * max(n[j] for j in grown) > max_tokens for n in (src_lengths, tgt_lengths))

    return _pack(order, src_lengths, tgt_lengths, max_tokens, too_big)


def _pack_source_only(order, src_lengths, tgt_lengths, max_tokens):
    def too_big(batch, i):
        return (len(batch) + 1) * max(src_lengths[j] for j in [*batch, i]) > max_tokens

    return _pack(order, src_lengths, tgt_lengths, max_tokens, too_big)


def _average(states, combine):
    for key in states[0]:
        if any(set(state) != set(states[0]) for state in states):
            raise ValueError("the states have different keys")
        if not states[0][key].is_floating_point() and any(not torch.equal(s[key], states[0][key]) for s in states):
            raise ValueError(f"the integer buffer {key} differs")
    return {
        key: combine([state[key].double() for state in states]).to(first.dtype) if first.is_floating_point() else first
        for key, first in states[0].items()
    }


def _average_first_only(states):
    return _average(states, lambda tensors: tensors[0].clone())


def _average_last_only(states):
    return _average(states, lambda tensors: tensors[-1].clone())


def _average_over_n_minus_one(states):
    return _average(states, lambda tensors: sum(tensors) / (len(tensors) - 1))


def _bpe_learner(words, n_merges, pick, merge):
    symbols_of = {word: list(word) for word in words}
    age = {c: ord(c) for word in words for c in word}
    merges = []
    for _ in range(n_merges):
        counts = {}
        for word, symbols in symbols_of.items():
            for pair in zip(symbols[:-1], symbols[1:], strict=True):
                counts[pair] = counts.get(pair, 0) + words[word]
        if not counts:
            break
        best = pick(counts, age)
        age.setdefault(best[0] + best[1], 0x110000 + len(merges))
        merges.append(best)
        symbols_of = {word: merge(symbols, best) for word, symbols in symbols_of.items()}
    return merges


def _merge_right(symbols, pair):
    out, i = [], len(symbols) - 1
    while i >= 0:
        if i > 0 and (symbols[i - 1], symbols[i]) == pair:
            out.insert(0, pair[0] + pair[1])
            i -= 2
        else:
            out.insert(0, symbols[i])
            i -= 1
    return out


def _older(counts, age):
    return min(counts, key=lambda p: (-counts[p], age[p[0]], age[p[1]]))


def _bpe_newer_ties(words, n_merges):
    return _bpe_learner(words, n_merges, lambda c, age: min(c, key=lambda p: (-c[p], -age[p[0]], -age[p[1]])),
                        _replace_all)  # fmt: skip


def _bpe_last_seen_ties(words, n_merges):
    return _bpe_learner(words, n_merges, lambda c, age: sorted(c.items(), key=lambda kv: kv[1])[-1][0], _replace_all)


def _bpe_merged_from_the_right(words, n_merges):
    return _bpe_learner(words, n_merges, _older, _merge_right)


# -- chapter 10 -----------------------------------------------------------------------------------


def _rms_eps_squared(self, x):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps**2) * self.weight


def _rms_no_root(self, x):
    return x / (x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def _rms_weight_added(self, x):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) + self.weight


def _rope(x, positions, base, rule):
    d = x.shape[-1]
    theta = positions.double()[:, None] * base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    cos, sin = theta.cos(), theta.sin()
    even, odd = x.double()[..., 0::2], x.double()[..., 1::2]
    return torch.stack(rule(even, odd, cos, sin), dim=-1).flatten(-2).to(x.dtype)


def _rope_sequential(x, positions, base=10000.0):
    def rule(even, odd, cos, sin):
        even = even * cos - odd * sin  # overwrites x2i before the second line reads it
        return even, even * sin + odd * cos

    return _rope(x, positions, base, rule)


def _rope_sin_cos_swapped(x, positions, base=10000.0):
    return _rope(x, positions, base, lambda e, o, c, s: (e * s - o * c, e * c + o * s))


def _rope_even_only(x, positions, base=10000.0):
    return _rope(x, positions, base, lambda e, o, c, s: (e * c - o * s, o))


def _features_repeated(x, n_rep):
    return x.repeat_interleave(n_rep, dim=-1)


def _batch_repeated(x, n_rep):
    return x.repeat_interleave(n_rep, dim=0)


def _n_rep_ignored(x, n_rep):
    return x


def _geglu(self, x):
    return self.w2(self.dropout(F.gelu(self.w1(x)) * self.w3(x)))


def _silu_of_the_product(self, x):
    return self.w2(self.dropout(F.silu(self.w1(x) * self.w3(x))))


def _value_forgotten(self, x):
    return self.w2(self.dropout(F.silu(self.w1(x))))


def _online(top, total, acc, scores, values, fold):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    return new_top, *fold(total, acc, rescale, weights.sum(-1, keepdim=True), weights @ values)


def _old_total_dropped(top, total, acc, scores, values):
    return _online(top, total, acc, scores, values, lambda t, a, r, bt, ba: (bt, a * r + ba))


def _old_acc_dropped(top, total, acc, scores, values):
    return _online(top, total, acc, scores, values, lambda t, a, r, bt, ba: (t * r + bt, ba))


def _acc_rescale_inverted(top, total, acc, scores, values):
    return _online(top, total, acc, scores, values, lambda t, a, r, bt, ba: (t * r + bt, a / r + ba))


# -- chapter 11 -----------------------------------------------------------------------------------


def _rope_shape_kept(weight, n_heads):
    d = weight.shape[0] // n_heads
    halves = weight.reshape(n_heads, 2, d // 2, *weight.shape[1:])
    return halves.transpose(1, 2).clone()  # (H, d/2, 2, ...), never reshaped back


def _rope_heads_and_halves_swapped(weight, n_heads):
    d = weight.shape[0] // n_heads
    halves = weight.reshape(n_heads, 2, d // 2, *weight.shape[1:])
    return halves.transpose(0, 1).reshape(weight.shape).clone()


def _rope_columns_folded(weight, n_heads):
    halves = weight.reshape(n_heads, 2, -1)  # the -1 takes the columns too
    return halves.transpose(1, 2).reshape(weight.shape).clone()


def _conv1d(weight, bias, parts, transpose, swap=False):
    out = weight.shape[1] // parts
    pairs = [(transpose(w), b.clone()) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=True)]
    return [(b, w) for w, b in pairs] if swap else pairs


def _conv1d_reshaped(weight, bias, parts):
    return _conv1d(weight, bias, parts, lambda w: w.reshape(w.shape[1], w.shape[0]))


def _conv1d_bias_first(weight, bias, parts):
    return _conv1d(weight, bias, parts, lambda w: w.t().contiguous(), swap=True)


def _conv1d_reshaped_into_parts(weight, bias, parts):
    out = weight.shape[1] // parts
    blocks = weight.reshape(parts, weight.shape[0], out)  # not the column blocks
    return [(w.t().contiguous(), b.clone()) for w, b in zip(blocks, bias.split(out), strict=True)]


def _marian(decoder, projections, cross="encoder_attn", up_down=("fc1", "fc2")):
    modules = {"norm1": "self_attn_layer_norm", "ffn.linear1": up_down[0], "ffn.linear2": up_down[1]}
    attentions = {"self_attn": "self_attn"}
    if decoder:
        attentions["cross_attn"] = cross
        modules |= {"norm2": "encoder_attn_layer_norm", "norm3": "final_layer_norm"}
    else:
        modules["norm2"] = "final_layer_norm"
    for ours, theirs in attentions.items():
        modules |= {f"{ours}.{p}": f"{theirs}.{q}" for p, q in projections.items()}
    return {f"{ours}.{t}": f"{theirs}.{t}" for ours, theirs in modules.items() for t in ("weight", "bias")}


_QKVO = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "out_proj"}


def _marian_o_proj(decoder):
    return _marian(decoder, _QKVO | {"w_o": "o_proj"})  # Llama's name


def _marian_cross_attn_kept(decoder):
    return _marian(decoder, _QKVO, cross="cross_attn")


def _marian_fc_swapped(decoder):
    return _marian(decoder, _QKVO, up_down=("fc2", "fc1"))


def _marian_keys_and_values_swapped(decoder):
    return _marian(decoder, _QKVO | {"w_k": "v_proj", "w_v": "k_proj"})


# exercise → (a learner's mistake, words its message must hold)
OWN_MISTAKES = {
    "ex01_1": [(_unknown_minus_one, "unknown tokens become -1"), (_unknown_past_the_end, "one past the last id"),
               (_bos_appended, "<bos> is put at the end")],
    "ex01_2": [(_embedding_over_d_model, "divided by d_model"), (_embedding_root_of_length, "number of tokens"),
               (_embedding_plus_root, "is added")],
    "ex01_3": [(_lookup_transposed, "transposed"), (_lookup_bag_of_words, "a bag of words"),
               (_lookup_scaled, "scaled by sqrt(D)"), (_lookup_row_before, "the row before")],
    "ex02_1": [(_table_positive_exponent, "multiplied by 10000"), (_table_sines_only, "every column holds a sine"),
               (_table_transposed, "the table is transposed")],
    "ex02_2": [(_forward_table_only, "the positional table alone"), (_forward_rescaled, "x is multiplied by"),
               (_forward_subtracted, "the table is subtracted")],
    "ex02_3": [(_rotation_swapped, "cos and sin are swapped"), (_rotation_k_ignored, "k is ignored"),
               (_rotation_inverse_frequency, "it is its inverse")],
    "ex03_1": [(_scores_times_sqrt, "multiplied by sqrt(d_k)"), (_scores_over_sqrt_t, "number of queries"),
               (_scores_k_first, "k @ q.transpose"), (_scores_softmaxed, "went through a softmax")],
    "ex03_2": [(_mask_multiplied, "multiplied by the mask"), (_mask_float32_lowest, "float32's lowest"),
               (_mask_forgotten, "returned unchanged")],
    "ex03_3": [(_attention_unscaled, "not scaled"), (_attention_over_d_k, "divided by d_k"),
               (_attention_mask_flipped, "polarity is reversed")],
    "ex04_1": [(_split_not_transposed, "not moved in front of the positions"),
               (_split_wrong_axes, "the wrong axes are swapped"), (_split_positions_last, "features are swapped")],
    "ex04_2": [(_merge_transposed_only, "the heads are not merged"), (_merge_summed, "the heads are summed"),
               (_merge_averaged, "the heads are averaged")],
    "ex04_3": [(_mha_unscaled, "the scores are not scaled"), (_mha_softmax_over_queries, "over the queries"),
               (_mha_mask_forgotten, "the mask is ignored"),
               (_mha_heads_not_moved_back, "the attention weights are right but the heads are merged without moving "
                                           "the head axis back"),
               (_mha_heads_doubled, "the attention weights are right but the output is wrong"),
               (_mha_masked_after_the_softmax, "the attention weights already differ")],
    "ex05_1": [(_ffn_relu_last, "after the second linear layer"), (_ffn_plus_x, "x is added to the output"),
               (_ffn_no_biases, "biases are left out"), (_ffn_dropout_on_x, "dropout is applied to the input")],
    "ex05_2": [(_residual_from_the_normed_x, "the norm is applied in the wrong place"),
               (_post_ln_without_norm, "the norm is applied in the wrong place"),
               (_dropout_after_the_norm, "apply it to the sub-layer's output only")],
    "ex05_3": [(_encoder_norms_swapped, "norm1 and norm2 are swapped"),
               (_encoder_attention_missing, "the self-attention sub-layer is missing"),
               (_encoder_flag_inverted, "this is the other order"),
               (_encoder_ffn_on_the_input, "the feed-forward sub-layer is wrong"),
               (_encoder_pre_ln_ffn_on_the_input, "each sub-layer is right alone")],
    "ex06_1": [(_causal_one_ahead, "off by one"), (_causal_all_true, "every position may attend everywhere"),
               (_causal_diagonal_only, "only the diagonal is True")],
    "ex06_2": [(_padding_both_sides, "the padded queries are masked too"),
               (_padding_axes_at_the_end, "inserted after S"), (_padding_greater_than, "compared with > pad_id")],
    "ex06_3": [(_decoder_norm2_norm3_swapped, "norm2 and norm3 are mixed up"),
               (_decoder_one_norm, "norm1 is used for every sub-layer"),
               (_decoder_no_cross_attention, "does not depend on memory"),
               (_decoder_memory_normed, "the cross-attention sub-layer is wrong")],
    "ex07_1": [(_lr_root_d_model, "d_model is raised to 0.5"), (_lr_decay_power, "the decay term is step^-0.5"),
               (_lr_warmup_power_positive, "the power is negative")],
    "ex07_2": [(_same_cut, "are the same"), (_both_from_one, "are the same"), (_shifted_by_two, "shifted by two")],
    "ex07_3": [(_loss_summed, "summed over the tokens"), (_loss_target_unweighted, "not weighted by (1 − ε)"),
               (_loss_sentence_means, "each sentence is averaged first"),
               (_loss_from_raw_logits, "the −log p[target] term is wrong"),
               (_loss_smoothing_on_probabilities, "the smoothing term is wrong"),
               (_loss_ids_above_pad, "the padding is not left out right")],
    "ex07_4": [(_zero_grad_after_backward, "zero_grad() comes after loss.backward()"),
               (_scheduler_first, "the scheduler is stepped before the optimizer"),
               (_never_clipped, "the gradients are not clipped")],
    "ex08_1": [(_greedy_argmin, "argmin"), (_greedy_eos_padded, "is replaced by pad_id"),
               (_greedy_finished_get_eos, "its next token must be pad_id")],
    "ex08_2": [(_top_p_zero_fill, "set to 0"), (_top_p_lowest_fill, "the dtype's lowest value"),
               (_top_p_inverted, "the nucleus is dropped")],
    "ex08_3": [(_beam_lengths_in_place, "the new lengths are not reordered"),
               (_beam_finished_in_place, "the finished flags are not reordered"),
               (_beam_penalty_multiplied, "multiplied by the length penalty")],
    "ex09_1": [(_pack_old_longest, "longest before the new example"),
               (_pack_old_count, "count before the new example"), (_pack_source_only, "only the source side")],
    "ex09_2": [(_average_first_only, "the first state is returned"), (_average_last_only, "the last state"),
               (_average_over_n_minus_one, "divided by n − 1")],
    "ex09_3": [(_bpe_newer_ties, "ties go to the newer symbols"), (_bpe_last_seen_ties, "the pair seen last"),
               (_bpe_merged_from_the_right, "merged from the right")],
    "ex10_1": [(_rms_eps_squared, "squares eps"), (_rms_no_root, "forgets the square root"),
               (_rms_weight_added, "adds self.weight")],
    "ex10_2": [(_rope_sequential, "the new 2i is used"), (_rope_sin_cos_swapped, "sin and cos are swapped"),
               (_rope_even_only, "only the even features")],
    "ex10_3": [(_features_repeated, "the features were repeated"), (_batch_repeated, "the batch was repeated"),
               (_n_rep_ignored, "returned unchanged")],
    "ex10_4": [(_geglu, "uses GELU"), (_silu_of_the_product, "silu of the product"),
               (_value_forgotten, "forgets the value")],
    "ex10_5": [(_old_total_dropped, "total holds the block's sum only"),
               (_old_acc_dropped, "acc holds the block's weighted values only"),
               (_acc_rescale_inverted, "the rescaling of acc is inverted")],
    "ex11_1": [(_rope_shape_kept, "reshape it back to weight's shape"),
               (_rope_heads_and_halves_swapped, "swaps the axes 0 and 1"),
               (_rope_columns_folded, "folds the trailing axes into the rows")],
    "ex11_2": [(_conv1d_reshaped, "is reshaped to (out, in), not transposed"),
               (_conv1d_bias_first, "is (bias, weight)"),
               (_conv1d_reshaped_into_parts, "weight.reshape(parts, in, out)")],
    "ex11_3": [(_marian_o_proj, "o_proj is Llama's name"), (_marian_cross_attn_kept, "named cross_attn"),
               (_marian_fc_swapped, "fc1 and fc2 are swapped"),
               (_marian_keys_and_values_swapped, "the keys and values are swapped")],
}  # fmt: skip


@pytest.mark.complete_edition
@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")  # a learner's mistake
@pytest.mark.parametrize("exercise_id", sorted(OWN_MISTAKES))
def test_the_check_names_a_learners_own_mistake(exercise_id: str) -> None:
    for impl, words in OWN_MISTAKES[exercise_id]:
        result = run_check(exercise_id, impl)
        assert result.status == "failed" and words in result.message, f"{impl.__name__}: {result.line()}"


@pytest.mark.complete_edition
def test_three_mistakes_per_exercise_none_of_them_a_mutant() -> None:
    mutants = pytest.importorskip("tests.mutants").all_mutants()
    for exercise_id, mistakes in OWN_MISTAKES.items():
        assert len(mistakes) >= 3, exercise_id
        names = {impl.__name__ for _, impl in mutants.get(exercise_id, [])}
        assert not names & {impl.__name__ for impl, _ in mistakes}, exercise_id


# the first word of a fix ("use …", "return …"): at hint level "none" a message says what is wrong only
_INSTRUCTION = re.compile(
    r"(?:^|: |; )(use|return|apply|keep|call|put|fill|divide|multiply|take|scatter|compare|run|convert|add|"
    r"swap|move|pass|make|set|do|compute)\b",
    re.IGNORECASE,
)


@pytest.mark.complete_edition
@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")  # a learner's mistake
@pytest.mark.parametrize("exercise_id", sorted(OWN_MISTAKES))
def test_at_hint_level_none_the_message_says_what_is_wrong_without_the_fix(exercise_id: str) -> None:
    mutants = pytest.importorskip("tests.mutants").all_mutants().get(exercise_id, [])
    for impl in [impl for impl, _ in OWN_MISTAKES[exercise_id]] + [impl for _, impl in mutants]:
        full, none = (run_check(exercise_id, impl, hints=level).message for level in ("full", "none"))
        assert len(none) <= len(full), (impl.__name__, none)
        if " raised " not in none:  # what the learner's code raised is shown whole
            assert not _INSTRUCTION.search(re.sub(r" \(\d+ of \d+ cases? passed\)$", "", none)), (impl.__name__, none)


# -- correct answers written another way: the checks of intermediate results must pass them -------


def _mha_einsum(self, query, key, value, mask=None, need_weights=False, cache=None, **kwargs):
    q = self.positioned(split_heads(self.w_q(query), self.n_heads), cache)
    k, v = self.keys_and_values(key, value, cache)
    scores = torch.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = F.dropout(scores.softmax(dim=-1), self.dropout if self.training else 0.0)
    heads = torch.einsum("bhts,bhsd->bthd", weights, v)  # the heads already behind the positions
    return self.w_o(heads.reshape(*query.shape[:2], -1)), (weights if need_weights else None)


def _loss_pytorch(logits, target, smoothing=0.1, pad_id=0):
    return F.cross_entropy(logits.transpose(1, 2), target, label_smoothing=smoothing, ignore_index=pad_id)


def _encoder_written_out(self, x, mask=None, cache=None):
    def attend(h):
        return self.self_attn(h, h, h, mask, cache=cache)[0]

    for sublayer, norm, dropout in ((attend, self.norm1, self.dropout1), (self.ffn, self.norm2, self.dropout2)):
        x = self.connection(x, sublayer, norm, dropout, self.norm_first)
    return x


ALTERNATIVES = {"ex04_3": _mha_einsum, "ex07_3": _loss_pytorch, "ex05_3": _encoder_written_out}


@pytest.mark.parametrize("exercise_id", sorted(ALTERNATIVES))
def test_a_correct_answer_written_another_way_passes(exercise_id: str) -> None:
    result = run_check(exercise_id, ALTERNATIVES[exercise_id])
    assert result.passed, result.line()
