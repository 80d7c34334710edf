"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

from transformer_course.sublayer import residual

from . import right, wrong

# -- mutants


@wrong("mutant", "padding mask ignored")
def _enc_mask_ignored(self, x, mask=None):
    x = residual(x, lambda h: self.self_attn(h, h, h)[0], self.norm1, self.dropout1, self.norm_first)
    return residual(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


@wrong("mutant", "FFN before self-attention")
def _enc_ffn_first(self, x, mask=None):
    x = residual(x, self.ffn, self.norm1, self.dropout1, self.norm_first)
    return residual(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm2, self.dropout2, self.norm_first)


@wrong("mutant", "always post-LN")
def _enc_always_post_ln(self, x, mask=None):
    x = residual(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm1, self.dropout1, False)
    return residual(x, self.ffn, self.norm2, self.dropout2, False)


@wrong("mutant", "norm1 used for both sub-layers")
def _enc_one_norm_for_both(self, x, mask=None):
    x = residual(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm1, self.dropout1, self.norm_first)
    return residual(x, self.ffn, self.norm1, self.dropout1, self.norm_first)


@wrong("mutant", "FFN sub-layer missing")
def _enc_no_ffn(self, x, mask=None):
    return residual(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm1, self.dropout1, self.norm_first)


@wrong("mutant", "mask applied only in training")
def _enc_mask_only_in_training(self, x, mask=None):
    used = mask if self.training else None
    x = residual(x, lambda h: self.self_attn(h, h, h, used)[0], self.norm1, self.dropout1, self.norm_first)
    return residual(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


@wrong("mutant", "keys/values not normalised in pre-LN")
def _enc_attention_on_unnormalised_input(self, x, mask=None):
    # pre-LN written by hand with the norm applied to the query only
    if not self.norm_first:
        x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, mask)[0]))
        return self.norm2(x + self.dropout2(self.ffn(x)))
    x = x + self.dropout1(self.self_attn(self.norm1(x), x, x, mask)[0])
    return x + self.dropout2(self.ffn(self.norm2(x)))


@wrong("mutant", "post-LN written out, norm1 forgotten", says="norm1 is not applied after the self-attention")
def _enc_post_ln_without_norm1(self, x, mask=None):
    if self.norm_first:
        x = x + self.dropout1(self.self_attn(self.norm1(x), self.norm1(x), self.norm1(x), mask)[0])
        return x + self.dropout2(self.ffn(self.norm2(x)))
    x = x + self.dropout1(self.self_attn(x, x, x, mask)[0])  # the sum is never normalised
    return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("mutant", "post-LN written out, norm2 forgotten", says="norm2 is not applied after the feed-forward network")
def _enc_post_ln_without_norm2(self, x, mask=None):
    if self.norm_first:
        x = x + self.dropout1(self.self_attn(self.norm1(x), self.norm1(x), self.norm1(x), mask)[0])
        return x + self.dropout2(self.ffn(self.norm2(x)))
    x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, mask)[0]))
    return x + self.dropout2(self.ffn(x))  # the sum is never normalised


@wrong("mutant", "the FFN's function reads x, not h", says="the feed-forward network reads x, not its argument h")
def _enc_ffn_reads_x(self, x, mask=None):
    x = self.connection(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, lambda h: self.ffn(x), self.norm2, self.dropout2, self.norm_first)  # x, not h


# -- own mistakes and alternatives


def _encoder(self, x, mask, blocks):
    parts = {"attention": lambda h: self.self_attn(h, h, h, mask)[0], "ffn": self.ffn}
    norms = {"norm1": self.norm1, "norm2": self.norm2}
    for part, norm, first in blocks:
        x = self.connection(x, parts[part], norms[norm], self.dropout1, first)
    return x


@wrong("own", says="norm1 and norm2 are swapped")
def _encoder_norms_swapped(self, x, mask=None):
    return _encoder(self, x, mask, [("attention", "norm2", self.norm_first), ("ffn", "norm1", self.norm_first)])


@wrong("own", says="the self-attention sub-layer is missing")
def _encoder_attention_missing(self, x, mask=None):
    return _encoder(self, x, mask, [("ffn", "norm2", self.norm_first)])


@wrong("own", says="this is the other order")
def _encoder_flag_inverted(self, x, mask=None):
    inverted = not self.norm_first
    return _encoder(self, x, mask, [("attention", "norm1", inverted), ("ffn", "norm2", inverted)])


@wrong("own", says="the feed-forward sub-layer is wrong")
def _encoder_ffn_on_the_input(self, x, mask=None):
    h = self.connection(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm1, self.dropout1,
                        self.norm_first)  # fmt: skip
    if self.norm_first:
        return h + self.dropout2(self.ffn(self.norm2(h)))
    return self.norm2(h + self.dropout2(self.ffn(x)))  # post-LN: the feed-forward network reads the layer's input


@wrong("own", says="each sub-layer is right alone")
def _encoder_pre_ln_ffn_on_the_input(self, x, mask=None):
    h = self.connection(x, lambda h: self.self_attn(h, h, h, mask)[0], self.norm1, self.dropout1,
                        self.norm_first)  # fmt: skip
    if self.norm_first:
        return h + self.dropout2(self.ffn(self.norm2(x)))  # reads x, not h: each block alone is right
    return self.connection(h, self.ffn, self.norm2, self.dropout2, self.norm_first)


@right("own")
def _encoder_written_out(self, x, mask=None):
    def attend(h):
        return self.self_attn(h, h, h, mask)[0]

    for sublayer, norm, dropout in ((attend, self.norm1, self.dropout1), (self.ffn, self.norm2, self.dropout2)):
        x = self.connection(x, sublayer, norm, dropout, self.norm_first)
    return x


# -- tester set 'first'


@wrong("tester", "mask not passed to self-attention", by="first")
def ex05_3_mask_dropped(self, x, mask=None):
    def attend(h):
        return self.self_attn(h, h, h)[0]

    x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


@wrong("tester", "FFN wrapped with norm1/dropout1 (norm2 never used)", by="first")
def ex05_3_norm1_twice(self, x, mask=None):
    def attend(h):
        return self.self_attn(h, h, h, mask)[0]

    x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm1, self.dropout1, self.norm_first)


@wrong("tester", "calls residual() directly, ignoring self.connection", by="first")
def ex05_3_residual_not_connection(self, x, mask=None):
    def attend(h):
        return self.self_attn(h, h, h, mask)[0]

    x = residual(x, attend, self.norm1, self.dropout1, self.norm_first)  # ignores self.connection
    return residual(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


@wrong("tester", "attention closure reads the outer x, not its argument h (pre-LN norm bypassed)", by="first")
def x05_3_attends_outer_x(self, x, mask=None):
    outer = x

    def attend(h):
        return self.self_attn(outer, outer, outer, mask)[0]  # ignores h (the normalised input)

    x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


# -- tester set 'second'


@wrong("tester", "mask not passed to self-attention", by="second")
def enc_no_mask(self, x, mask=None):
    def attend(h):
        return self.self_attn(h, h, h, None)[0]

    x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


@wrong("tester", "norm1 and norm2 swapped between the sub-layers", by="second")
def enc_norms_swapped(self, x, mask=None):
    def attend(h):
        return self.self_attn(h, h, h, mask)[0]

    x = self.connection(x, attend, self.norm2, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm1, self.dropout2, self.norm_first)


@wrong("tester", "closure attends over the outer x instead of its argument h (pre-LN skips the norm)", by="second")
def enc_closure_reads_x(self, x, mask=None):
    def attend(h):
        return self.self_attn(x, x, x, mask)[0]

    y = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(y, self.ffn, self.norm2, self.dropout2, self.norm_first)


# -- tester set 'third'


@wrong("tester", "norm1 used for both sub-layers (norm2 never used)", by="third")
def enc_norm1_twice(self, x, mask=None):
    def attend(h):
        return self.self_attn(h, h, h, mask)[0]

    x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm1, self.dropout2, self.norm_first)


@wrong("tester", "mask not passed to self-attention", by="third")
def enc_no_mask_third(self, x, mask=None):
    def attend(h):
        return self.self_attn(h, h, h)[0]

    x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm2, self.dropout2, self.norm_first)


@wrong("tester", "feed-forward sub-layer applied to the layer input (attention result discarded)", by="third")
def enc_reuses_input(self, x, mask=None):
    def attend(h):
        return self.self_attn(h, h, h, mask)[0]

    y = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)  # noqa: F841
    return self.connection(x, self.ffn, self.norm2, self.dropout2, self.norm_first)
