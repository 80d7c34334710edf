"""Wrong answers for chapter 06 (masks and the decoder layer)."""

from __future__ import annotations

import torch

from transformer_course.sublayer import residual

# -- ex06_1: causal_mask ---------------------------------------------------------------------------


def _upper_triangle(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).triu()


def _torch_polarity(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).triu(1)  # True = blocked


def _no_diagonal(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).tril(-1)


def _float_mask(size, device=None):
    return torch.ones(size, size, device=device).tril()


def _device_ignored(size, device=None):
    return torch.ones(size, size, dtype=torch.bool).tril()


def _batched_shape(size, device=None):
    return torch.ones(1, 1, size, size, dtype=torch.bool, device=device).tril()


# -- ex06_2: padding_mask --------------------------------------------------------------------------


def _pad_polarity(tokens, pad_id):
    return (tokens == pad_id)[:, None, None, :]


def _pad_2d(tokens, pad_id):
    return tokens != pad_id  # (B, S): broadcasts B against the query axis


def _pad_masks_queries(tokens, pad_id):
    return (tokens != pad_id)[:, None, :, None]


def _pad_id_hard_coded(tokens, pad_id):
    return (tokens != 0)[:, None, None, :]


def _pad_int_mask(tokens, pad_id):
    return (tokens != pad_id)[:, None, None, :].long()


def _pad_3d(tokens, pad_id):
    return (tokens != pad_id)[:, None, :]  # (B, 1, S): B lines up with the head axis


# -- ex06_3: DecoderLayer.forward ------------------------------------------------------------------


def _self_attention(self, tgt_mask):
    return lambda h: self.self_attn(h, h, h, tgt_mask)[0]


def _dec_cross_attends_to_itself(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    x = residual(x, _self_attention(self, tgt_mask), self.norm1, self.dropout1, self.norm_first)
    x = residual(x, lambda h: self.cross_attn(h, h, h, tgt_mask)[0], self.norm2, self.dropout2, self.norm_first)
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


def _dec_no_causal_mask(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    x = residual(x, _self_attention(self, None), self.norm1, self.dropout1, self.norm_first)
    x = residual(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, self.norm_first
    )
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


def _dec_causal_only_in_training(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    used = tgt_mask if self.training else None
    x = residual(x, _self_attention(self, used), self.norm1, self.dropout1, self.norm_first)
    x = residual(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, self.norm_first
    )
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


def _dec_memory_mask_ignored(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    x = residual(x, _self_attention(self, tgt_mask), self.norm1, self.dropout1, self.norm_first)
    x = residual(x, lambda h: self.cross_attn(h, memory, memory)[0], self.norm2, self.dropout2, self.norm_first)
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


def _dec_cross_before_self(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    x = residual(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm1, self.dropout1, self.norm_first
    )
    x = residual(x, _self_attention(self, tgt_mask), self.norm2, self.dropout2, self.norm_first)
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


def _dec_memory_normalised_too(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    # pre-LN written by hand, normalising the memory with the decoder's norm2 as well
    if not self.norm_first:
        x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, tgt_mask)[0]))
        x = self.norm2(x + self.dropout2(self.cross_attn(x, memory, memory, memory_mask)[0]))
        return self.norm3(x + self.dropout3(self.ffn(x)))
    h = self.norm1(x)
    x = x + self.dropout1(self.self_attn(h, h, h, tgt_mask)[0])
    h, m = self.norm2(x), self.norm2(memory)
    x = x + self.dropout2(self.cross_attn(h, m, m, memory_mask)[0])
    return x + self.dropout3(self.ffn(self.norm3(x)))


def _dec_always_post_ln(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    x = residual(x, _self_attention(self, tgt_mask), self.norm1, self.dropout1, False)
    x = residual(x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, False)
    return residual(x, self.ffn, self.norm3, self.dropout3, False)


def _dec_masks_swapped(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    x = residual(x, _self_attention(self, memory_mask), self.norm1, self.dropout1, self.norm_first)
    x = residual(
        x, lambda h: self.cross_attn(h, memory, memory, tgt_mask)[0], self.norm2, self.dropout2, self.norm_first
    )
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


def _dec_no_ffn(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    x = residual(x, _self_attention(self, tgt_mask), self.norm1, self.dropout1, self.norm_first)
    return residual(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, self.norm_first
    )


def _dec_caches_not_passed(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    x = residual(x, _self_attention(self, tgt_mask), self.norm1, self.dropout1, self.norm_first)
    x = residual(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, self.norm_first
    )
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


def _dec_cross_cache_not_passed(self, x, memory, tgt_mask=None, memory_mask=None, cache=None):
    own = None if cache is None else cache.self_attn
    x = residual(
        x, lambda h: self.self_attn(h, h, h, tgt_mask, cache=own)[0], self.norm1, self.dropout1, self.norm_first
    )
    x = residual(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, self.norm_first
    )
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


MUTANTS = {
    "ex06_1": [
        ("upper triangle (transposed)", _upper_triangle),
        ("PyTorch's polarity (True = blocked)", _torch_polarity),
        ("diagonal excluded", _no_diagonal),
        ("float 0/1 mask", _float_mask),
        ("device argument ignored", _device_ignored),
        ("(1, 1, T, T) instead of (T, T)", _batched_shape),
    ],
    "ex06_2": [
        ("polarity reversed (True = padding)", _pad_polarity),
        ("shape (B, S)", _pad_2d),
        ("shape (B, 1, S, 1): masks queries", _pad_masks_queries),
        ("pad id 0 hard-coded", _pad_id_hard_coded),
        ("int mask", _pad_int_mask),
        ("shape (B, 1, S)", _pad_3d),
    ],
    "ex06_3": [
        ("cross-attention on the decoder's own states", _dec_cross_attends_to_itself),
        ("causal mask not used", _dec_no_causal_mask),
        ("causal mask applied only in training", _dec_causal_only_in_training),
        ("memory padding mask ignored", _dec_memory_mask_ignored),
        ("cross-attention before self-attention", _dec_cross_before_self),
        ("memory normalised in pre-LN", _dec_memory_normalised_too),
        ("always post-LN", _dec_always_post_ln),
        ("tgt_mask and memory_mask swapped", _dec_masks_swapped),
        ("FFN sub-layer missing", _dec_no_ffn),
        ("caches never passed to the attentions", _dec_caches_not_passed),
        ("cross-attention cache not passed", _dec_cross_cache_not_passed),
    ],
}
