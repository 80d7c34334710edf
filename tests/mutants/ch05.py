"""Wrong answers for chapter 05 (feed-forward network, residual connections, encoder layer)."""

from __future__ import annotations

import torch.nn.functional as F

from transformer_course.sublayer import residual

# -- ex05_1: PositionwiseFeedForward.forward ----------------------------------------------------


def _ffn_no_relu(self, x):
    return self.linear2(self.dropout(self.linear1(x)))


def _ffn_gelu(self, x):
    return self.linear2(self.dropout(F.gelu(self.linear1(x))))


def _ffn_relu_at_the_end_too(self, x):
    return self.linear2(self.dropout(self.linear1(x).relu())).relu()


def _ffn_dropout_on_output(self, x):
    return self.dropout(self.linear2(self.linear1(x).relu()))


def _ffn_no_dropout(self, x):
    return self.linear2(self.linear1(x).relu())


def _ffn_relu_on_input(self, x):
    return self.linear2(self.dropout(self.linear1(x.relu())))


# -- ex05_2: residual ----------------------------------------------------------------------------


def _always_post_ln(x, sublayer, norm, dropout, norm_first):
    return norm(x + dropout(sublayer(x)))


def _always_pre_ln(x, sublayer, norm, dropout, norm_first):
    return x + dropout(sublayer(norm(x)))


def _flag_inverted(x, sublayer, norm, dropout, norm_first):
    if not norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


def _norm_on_the_branch(x, sublayer, norm, dropout, norm_first):
    # the norm put on the sub-layer's output instead of the sum (or the input)
    return x + dropout(norm(sublayer(x)))


def _pre_ln_normalising_the_sum_too(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return norm(x + dropout(sublayer(norm(x))))
    return norm(x + dropout(sublayer(x)))


def _no_residual(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return dropout(sublayer(norm(x)))
    return norm(dropout(sublayer(x)))


def _dropout_on_the_sum(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return dropout(x + sublayer(norm(x)))
    return norm(dropout(x + sublayer(x)))


def _no_dropout(x, sublayer, norm, dropout, norm_first):
    if norm_first:
        return x + sublayer(norm(x))
    return norm(x + sublayer(x))


# -- ex05_3: EncoderLayer.forward ----------------------------------------------------------------


def _enc_mask_ignored(self, x, mask=None):
    x = residual(x, lambda h: self.self_attn(h, h, h)[0], self.norm1, self.dropout1, self.norm_first)
    return residual(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


def _enc_cache_ignored(self, x, mask=None, cache=None):
    x = residual(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm1, self.dropout1, self.norm_first)
    return residual(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


def _enc_ffn_first(self, x, mask=None):
    x = residual(x, self.ffn, self.norm1, self.dropout1, self.norm_first)
    return residual(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm2, self.dropout2, self.norm_first)


def _enc_always_post_ln(self, x, mask=None):
    x = residual(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm1, self.dropout1, False)
    return residual(x, self.ffn, self.norm2, self.dropout2, False)


def _enc_one_norm_for_both(self, x, mask=None):
    x = residual(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm1, self.dropout1, self.norm_first)
    return residual(x, self.ffn, self.norm1, self.dropout1, self.norm_first)


def _enc_no_ffn(self, x, mask=None):
    return residual(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm1, self.dropout1, self.norm_first)


def _enc_mask_only_in_training(self, x, mask=None):
    used = mask if self.training else None
    x = residual(x, lambda h: self.self_attn(h, h, h, used)[0], self.norm1, self.dropout1, self.norm_first)
    return residual(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


def _enc_attention_on_unnormalised_input(self, x, mask=None):
    # pre-LN written by hand with the norm applied to the query only
    if not self.norm_first:
        x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, mask)[0]))
        return self.norm2(x + self.dropout2(self.ffn(x)))
    x = x + self.dropout1(self.self_attn(self.norm1(x), x, x, mask)[0])
    return x + self.dropout2(self.ffn(self.norm2(x)))


MUTANTS = {
    "ex05_1": [
        ("ReLU missing", _ffn_no_relu),
        ("GELU instead of ReLU", _ffn_gelu),
        ("a second ReLU after linear2", _ffn_relu_at_the_end_too),
        ("dropout on the output instead of after the ReLU", _ffn_dropout_on_output),
        ("dropout never applied", _ffn_no_dropout),
        ("ReLU applied to the input", _ffn_relu_on_input),
    ],
    "ex05_2": [
        ("always post-LN (norm_first ignored)", _always_post_ln),
        ("always pre-LN (norm_first ignored)", _always_pre_ln),
        ("norm_first inverted", _flag_inverted),
        ("norm on the sub-layer's output", _norm_on_the_branch),
        ("pre-LN that also normalises the sum", _pre_ln_normalising_the_sum_too),
        ("residual connection missing", _no_residual),
        ("dropout on the sum", _dropout_on_the_sum),
        ("dropout missing", _no_dropout),
    ],
    "ex05_3": [
        ("padding mask ignored", _enc_mask_ignored),
        ("KV cache not handed to the self-attention", _enc_cache_ignored),
        ("FFN before self-attention", _enc_ffn_first),
        ("always post-LN", _enc_always_post_ln),
        ("norm1 used for both sub-layers", _enc_one_norm_for_both),
        ("FFN sub-layer missing", _enc_no_ffn),
        ("mask applied only in training", _enc_mask_only_in_training),
        ("keys/values not normalised in pre-LN", _enc_attention_on_unnormalised_input),
    ],
}
