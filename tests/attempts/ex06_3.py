"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

from transformer_course.sublayer import residual

from . import wrong

# -- mutants


def _self_attention(self, tgt_mask):
    return lambda h: self.self_attn(h, h, h, tgt_mask)[0]


@wrong("mutant", "cross-attention on the decoder's own states")
def _dec_cross_attends_to_itself(self, x, memory, tgt_mask=None, memory_mask=None):
    x = residual(x, _self_attention(self, tgt_mask), self.norm1, self.dropout1, self.norm_first)
    x = residual(x, lambda h: self.cross_attn(h, h, h, tgt_mask)[0], self.norm2, self.dropout2, self.norm_first)
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("mutant", "causal mask not used")
def _dec_no_causal_mask(self, x, memory, tgt_mask=None, memory_mask=None):
    x = residual(x, _self_attention(self, None), self.norm1, self.dropout1, self.norm_first)
    x = residual(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, self.norm_first
    )
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("mutant", "causal mask applied only in training")
def _dec_causal_only_in_training(self, x, memory, tgt_mask=None, memory_mask=None):
    used = tgt_mask if self.training else None
    x = residual(x, _self_attention(self, used), self.norm1, self.dropout1, self.norm_first)
    x = residual(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, self.norm_first
    )
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("mutant", "memory padding mask ignored")
def _dec_memory_mask_ignored(self, x, memory, tgt_mask=None, memory_mask=None):
    x = residual(x, _self_attention(self, tgt_mask), self.norm1, self.dropout1, self.norm_first)
    x = residual(x, lambda h: self.cross_attn(h, memory, memory)[0], self.norm2, self.dropout2, self.norm_first)
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("mutant", "cross-attention before self-attention")
def _dec_cross_before_self(self, x, memory, tgt_mask=None, memory_mask=None):
    x = residual(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm1, self.dropout1, self.norm_first
    )
    x = residual(x, _self_attention(self, tgt_mask), self.norm2, self.dropout2, self.norm_first)
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("mutant", "memory normalised in pre-LN")
def _dec_memory_normalised_too(self, x, memory, tgt_mask=None, memory_mask=None):
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


@wrong("mutant", "always post-LN")
def _dec_always_post_ln(self, x, memory, tgt_mask=None, memory_mask=None):
    x = residual(x, _self_attention(self, tgt_mask), self.norm1, self.dropout1, False)
    x = residual(x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, False)
    return residual(x, self.ffn, self.norm3, self.dropout3, False)


@wrong("mutant", "tgt_mask and memory_mask swapped")
def _dec_masks_swapped(self, x, memory, tgt_mask=None, memory_mask=None):
    x = residual(x, _self_attention(self, memory_mask), self.norm1, self.dropout1, self.norm_first)
    x = residual(
        x, lambda h: self.cross_attn(h, memory, memory, tgt_mask)[0], self.norm2, self.dropout2, self.norm_first
    )
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("mutant", "FFN sub-layer missing")
def _dec_no_ffn(self, x, memory, tgt_mask=None, memory_mask=None):
    x = residual(x, _self_attention(self, tgt_mask), self.norm1, self.dropout1, self.norm_first)
    return residual(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, self.norm_first
    )


@wrong("mutant", "always pre-LN", says="this is the other order; norm_first=False")
def _dec_always_pre_ln(self, x, memory, tgt_mask=None, memory_mask=None):
    x = residual(x, _self_attention(self, tgt_mask), self.norm1, self.dropout1, True)
    x = residual(x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, True)
    return residual(x, self.ffn, self.norm3, self.dropout3, True)


@wrong("mutant", "self-attention sub-layer missing", says="the masked self-attention sub-layer is missing")
def _dec_no_self_attention(self, x, memory, tgt_mask=None, memory_mask=None):
    x = residual(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, self.norm_first
    )
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


def _dec_by_hand(self, x, memory, tgt_mask, memory_mask, post_norms):
    """The layer written out; post-LN normalises each sum with ``post_norms`` (a norm left out: identity)."""
    if self.norm_first:
        h = self.norm1(x)
        x = x + self.dropout1(self.self_attn(h, h, h, tgt_mask)[0])
        x = x + self.dropout2(self.cross_attn(self.norm2(x), memory, memory, memory_mask)[0])
        return x + self.dropout3(self.ffn(self.norm3(x)))
    n1, n2, n3 = post_norms
    x = n1(x + self.dropout1(self.self_attn(x, x, x, tgt_mask)[0]))
    x = n2(x + self.dropout2(self.cross_attn(x, memory, memory, memory_mask)[0]))
    return n3(x + self.dropout3(self.ffn(x)))


@wrong("mutant", "post-LN written out, norm1 forgotten", says="norm1 is not applied after the masked self-attention")
def _dec_post_ln_without_norm1(self, x, memory, tgt_mask=None, memory_mask=None):
    return _dec_by_hand(self, x, memory, tgt_mask, memory_mask, (lambda t: t, self.norm2, self.norm3))


@wrong("mutant", "post-LN written out, norm2 forgotten", says="norm2 is not applied after the cross-attention")
def _dec_post_ln_without_norm2(self, x, memory, tgt_mask=None, memory_mask=None):
    return _dec_by_hand(self, x, memory, tgt_mask, memory_mask, (self.norm1, lambda t: t, self.norm3))


@wrong("mutant", "post-LN written out, norm3 forgotten", says="norm3 is not applied after the feed-forward network")
def _dec_post_ln_without_norm3(self, x, memory, tgt_mask=None, memory_mask=None):
    return _dec_by_hand(self, x, memory, tgt_mask, memory_mask, (self.norm1, self.norm2, lambda t: t))


@wrong("mutant", "the self-attention's function reads x, not h", says="the masked self-attention reads x")
def _dec_self_attention_reads_x(self, x, memory, tgt_mask=None, memory_mask=None):
    x = residual(x, lambda h: self.self_attn(x, x, x, tgt_mask)[0], self.norm1, self.dropout1, self.norm_first)
    x = residual(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, self.norm_first
    )
    return residual(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("mutant", "the FFN's function reads x, not h", says="the feed-forward network reads x")
def _dec_ffn_reads_x(self, x, memory, tgt_mask=None, memory_mask=None):
    x = residual(x, _self_attention(self, tgt_mask), self.norm1, self.dropout1, self.norm_first)
    x = residual(
        x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2, self.norm_first
    )
    return residual(x, lambda h: self.ffn(x), self.norm3, self.dropout3, self.norm_first)


# -- own mistakes and alternatives


def _decoder(self, x, memory, tgt_mask, memory_mask, norms, blocks=("self", "cross", "ffn")):
    parts = {
        "self": lambda h: self.self_attn(h, h, h, tgt_mask)[0],
        "cross": lambda h: self.cross_attn(h, memory, memory, memory_mask)[0],
        "ffn": self.ffn,
    }
    for part, norm in zip(blocks, norms, strict=True):
        x = self.connection(x, parts[part], norm, self.dropout1, self.norm_first)
    return x


@wrong("own", says="the cross-attention sub-layer is wrong")
def _decoder_memory_normed(self, x, memory, tgt_mask=None, memory_mask=None):
    x = self.connection(x, lambda h: self.self_attn(h, h, h, tgt_mask)[0], self.norm1, self.dropout1,
                        self.norm_first)  # fmt: skip
    memory = self.norm2(memory)  # the memory is normalised like the queries
    x = self.connection(x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0], self.norm2, self.dropout2,
                        self.norm_first)  # fmt: skip
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("own", says="norm2 and norm3 are mixed up")
def _decoder_norm2_norm3_swapped(self, x, memory, tgt_mask=None, memory_mask=None):
    return _decoder(self, x, memory, tgt_mask, memory_mask, (self.norm1, self.norm3, self.norm2))


@wrong("own", says="norm1 is used for every sub-layer")
def _decoder_one_norm(self, x, memory, tgt_mask=None, memory_mask=None):
    return _decoder(self, x, memory, tgt_mask, memory_mask, (self.norm1,) * 3)


@wrong("own", says="does not depend on memory")
def _decoder_no_cross_attention(self, x, memory, tgt_mask=None, memory_mask=None):
    return _decoder(self, x, memory, tgt_mask, memory_mask, (self.norm1, self.norm3), ("self", "ffn"))


@wrong("own", says="take the output with [0]")
def _decoder_attention_tuple_kept(self, x, memory, tgt_mask=None, memory_mask=None):
    x = self.connection(x, lambda h: self.self_attn(h, h, h, tgt_mask), self.norm1,
                        self.dropout1, self.norm_first)  # fmt: skip
    x = self.connection(x, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0],
                        self.norm2, self.dropout2, self.norm_first)  # fmt: skip
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


# -- tester set 'first'


@wrong("tester", "cross-attention keys/values from the decoder states, not memory", by="first")
def ex06_3_cross_kv_from_x(self, x, memory, tgt_mask=None, memory_mask=None):
    x = self.connection(x, lambda h: self.self_attn(h, h, h, tgt_mask)[0], self.norm1, self.dropout1, self.norm_first)
    x = self.connection(
        x,
        lambda h: self.cross_attn(h, h, h, memory_mask)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("tester", "tgt_mask and memory_mask swapped", by="first")
def ex06_3_masks_swapped(self, x, memory, tgt_mask=None, memory_mask=None):
    x = self.connection(
        x,
        lambda h: self.self_attn(h, h, h, memory_mask)[0],
        self.norm1,
        self.dropout1,
        self.norm_first,
    )
    x = self.connection(
        x,
        lambda h: self.cross_attn(h, memory, memory, tgt_mask)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("tester", "cross-attention query from the outer x, not the normalised h (pre-LN)", by="first")
def x06_3_cross_query_outer_x(self, x, memory, tgt_mask=None, memory_mask=None):
    x = self.connection(x, lambda h: self.self_attn(h, h, h, tgt_mask)[0], self.norm1, self.dropout1, self.norm_first)
    outer = x
    x = self.connection(
        x,
        lambda h: self.cross_attn(outer, memory, memory, memory_mask)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


# -- tester set 'second'


@wrong("tester", "self-attention without tgt_mask (peeks at the future)", by="second")
def dec_no_tgt_mask(self, x, memory, tgt_mask=None, memory_mask=None):
    x = self.connection(x, lambda h: self.self_attn(h, h, h, None)[0], self.norm1, self.dropout1, self.norm_first)
    x = self.connection(
        x,
        lambda h: self.cross_attn(h, memory, memory, memory_mask)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("tester", "cross-attention keys/values from the decoder state, not memory", by="second")
def dec_cross_kv_from_x(self, x, memory, tgt_mask=None, memory_mask=None):
    x = self.connection(x, lambda h: self.self_attn(h, h, h, tgt_mask)[0], self.norm1, self.dropout1, self.norm_first)
    x = self.connection(
        x,
        lambda h: self.cross_attn(h, h, h, memory_mask)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("tester", "cross-attention before self-attention (wrong order)", by="second")
def dec_cross_first(self, x, memory, tgt_mask=None, memory_mask=None):
    x = self.connection(
        x,
        lambda h: self.cross_attn(h, memory, memory, memory_mask)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    x = self.connection(x, lambda h: self.self_attn(h, h, h, tgt_mask)[0], self.norm1, self.dropout1, self.norm_first)
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


# -- tester set 'third'


@wrong("tester", "cross-attention done with self.self_attn instead of self.cross_attn", by="third")
def dec_self_for_cross(self, x, memory, tgt_mask=None, memory_mask=None):
    x = self.connection(x, lambda h: self.self_attn(h, h, h, tgt_mask)[0], self.norm1, self.dropout1, self.norm_first)
    x = self.connection(
        x,
        lambda h: self.self_attn(h, memory, memory, memory_mask)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("tester", "tgt_mask and memory_mask swapped", by="third")
def dec_masks_swapped(self, x, memory, tgt_mask=None, memory_mask=None):
    x = self.connection(
        x,
        lambda h: self.self_attn(h, h, h, memory_mask)[0],
        self.norm1,
        self.dropout1,
        self.norm_first,
    )
    x = self.connection(
        x,
        lambda h: self.cross_attn(h, memory, memory, tgt_mask)[0],
        self.norm2,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


@wrong("tester", "norm2 and norm3 swapped (norm3 around cross-attention, norm2 around the FFN)", by="third")
def dec_norms_swapped(self, x, memory, tgt_mask=None, memory_mask=None):
    x = self.connection(x, lambda h: self.self_attn(h, h, h, tgt_mask)[0], self.norm1, self.dropout1, self.norm_first)
    x = self.connection(
        x,
        lambda h: self.cross_attn(h, memory, memory, memory_mask)[0],
        self.norm3,
        self.dropout2,
        self.norm_first,
    )
    return self.connection(x, self.ffn, self.norm2, self.dropout3, self.norm_first)
