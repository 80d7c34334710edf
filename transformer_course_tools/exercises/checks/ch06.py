"""Checks for chapter 06 — the causal mask, the padding mask, the decoder layer.

References are independent of the package: masks written element by element from index
comparisons, and PyTorch's own ``nn.TransformerDecoderLayer`` (loaded into ours with
``from_torch``; its masks use the opposite polarity, True = blocked).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

import torch
from torch import Tensor, nn

from transformer_course_tools.exercises.probe.calls import call, calls_case, module, ref, train

from ._tools import (
    CheckFailure,
    Mistakes,
    expect_device,
    expect_equal,
    expect_shape,
    expect_tensor,
    name_mistake,
)
from .case import Case, Outcome
from .ch05 import (
    _ORDERS,
    _alone,
    _feed_forward,
    _judge_layer,
    _layer_mistakes,
    _randomise_norms,
    connection_case,
    unnormed,
)
from .registry import exercise


def _lower_triangle(size: int) -> Tensor:
    """``[t, s]`` is True when s <= t: query t may see keys 0…t (built from indices, not tril)."""
    rows = torch.arange(size)[:, None]  # (T, 1) query positions
    cols = torch.arange(size)[None, :]  # (1, T) key positions
    return cols <= rows  # (T, T)


def _expect_bool(got: Tensor, case: str) -> None:
    if got.dtype != torch.bool:
        raise CheckFailure(f"{case}: the mask has dtype {got.dtype}: return a bool mask (True = may attend)")


@exercise("ex06_1", "transformer_course.masks:causal_mask", "easy")
def causal_mask_cases(larger: bool = False) -> list[Case]:
    """causal mask (no peeking at the future)

    Nudge: a position may attend to itself and to the positions before it, never to later ones (paper §3.1 and
    §3.2.3).

    Hint: a (size, size) bool tensor created on `device`, True on and below the diagonal (see torch.tril).
    """
    sizes = (12, 4, 6, 33) if larger else (5, 1, 2, 7)  # larger: the grader's hidden cases
    cases = [Case(f"causal_mask({size})", calls_case(call(size)), _judge_causal) for size in sizes]
    # the first case is big enough for a precise diagnosis
    return cases + [Case("causal_mask(3, device='meta')", calls_case(call(3, device="meta")), _judge_device)]


def _judge_causal(case: Case, got: Outcome) -> None:
    label, (size,) = case.label, case.args()
    mask = expect_tensor(got.output(), "mask", label)
    expect_shape(mask, (size, size), "mask", label)
    _expect_bool(mask, label)
    want = _lower_triangle(size)
    mistakes = [
        (want.T, "the mask is transposed (upper triangle): row t is query t and may see columns 0…t, the past"),
        (~want, "the polarity is reversed (True = blocked is nn.MultiheadAttention's convention); in this course "
         "True means *may attend*"),
        (want & ~torch.eye(size, dtype=torch.bool), "the diagonal is False, but a position may attend to itself"),
        (torch.ones(size, size, dtype=torch.bool).tril(1), "the diagonal is off by one: query t may also see key "
         "t+1, the future; keep torch.tril's diagonal=0"),
        (torch.ones(size, size, dtype=torch.bool), "every position may attend everywhere: keep the lower triangle "
         "only (torch.tril)"),
        (torch.eye(size, dtype=torch.bool), "only the diagonal is True: query t may see every key up to t, "
         "the whole lower triangle"),
    ]  # fmt: skip
    expect_equal(mask, want, "mask", label, mistakes=mistakes)


def _judge_device(case: Case, got: Outcome) -> None:
    expect_device(got.output(), "meta", "mask", case.label)


# (tokens, pad_id): padding at the end, a sequence without padding, a fully padded sequence,
# a pad id that is not 0, a single token, a square batch (B == S) so a wrong axis cannot hide
_PADDING_CASES = [
    ([[5, 6, 7, 0, 0], [4, 4, 4, 4, 4]], 0),
    ([[1, 8, 3, 3], [3, 3, 3, 3], [9, 9, 9, 3]], 3),
    ([[7]], 0),
    ([[2, 0, 0], [2, 2, 0], [2, 2, 2]], 0),
]


@exercise("ex06_2", "transformer_course.masks:padding_mask", "medium")
def padding_mask_cases(larger: bool = False) -> list[Case]:
    """padding mask (B, 1, 1, S)

    Nudge: keys that are padding must never be attended to, whatever the head or the query (paper §3.2.3).

    Hint: True where tokens != pad_id, then insert two axes so the result is (B, 1, 1, S): it must broadcast
    over heads and query positions, not over keys.
    """
    return [
        Case(f"tokens {tuple(torch.tensor(rows).shape)} = {rows}, pad_id={pad_id}",
             calls_case(call(torch.tensor(rows), pad_id)), _judge_padding)
        for rows, pad_id in (_larger_padding_cases() if larger else _PADDING_CASES)
    ]  # fmt: skip


def _larger_padding_cases() -> list[tuple[list[list[int]], int]]:
    """The grader's hidden cases: longer random batches padded at the end (the first row unpadded), a
    square batch, a single token, a pad id that is not 0."""
    cases = []
    for batch, length, pad_id in ((6, 17, 0), (5, 5, 7), (1, 1, 0), (9, 9, 3)):
        lengths = torch.randint(0, length + 1, (batch,))
        lengths[0] = length
        ids = torch.randint(1, 50, (batch, length))
        ids[ids == pad_id] = pad_id + 1
        ids[torch.arange(length) >= lengths[:, None]] = pad_id
        cases.append((ids.tolist(), pad_id))
    return cases


def _judge_padding(case: Case, got: Outcome) -> None:
    label, (tokens, pad_id) = case.label, case.args()
    batch, length = tokens.shape
    mask = expect_tensor(got.output(), "mask", label)
    wrong_shape = tuple(mask.shape) != (batch, 1, 1, length)
    if wrong_shape and tuple(mask.shape) == (batch, length):
        raise CheckFailure(
            f"{label}: shape (B, S) lines up with the last two axes of the (B, H, T, S) scores, so B "
            "would be matched with the query axis T; return (B, 1, 1, S)"
        )
    if wrong_shape and tuple(mask.shape) == (batch, 1, length, 1):
        raise CheckFailure(f"{label}: shape (B, 1, S, 1) masks query positions; mask the keys: (B, 1, 1, S)")
    want = torch.tensor([[[[token != pad_id for token in row]]] for row in tokens.tolist()])  # (B, 1, 1, S)
    keep = want[:, 0, 0]  # (B, S)
    mistakes = [
        (~want, "the polarity is reversed: True marks a real token (may attend), False marks padding"),
        ((tokens != 0)[:, None, None, :], f"the pad id is taken as 0; compare the tokens with pad_id={pad_id}"),
        ((tokens > pad_id)[:, None, None, :], "the tokens are compared with > pad_id: an id below pad_id is a real "
         "token too; use tokens != pad_id"),
    ]  # fmt: skip
    shapes = [
        (keep[:, None, :, None] & keep[:, None, None, :], "the padded queries are masked too, (B, 1, S, S); mask "
         "the keys only: (B, 1, 1, S) broadcasts over the heads and the queries"),
        (keep[:, :, None, None], "the two axes are inserted after S, (B, S, 1, 1); insert them after B: "
         "(B, 1, 1, S)"),
        (keep[:, None, :], "one axis is missing: (B, 1, S) lines B up with the heads of the (B, H, T, S) scores; "
         "return (B, 1, 1, S)"),
    ]  # fmt: skip
    name_mistake(mask, want, shapes, label, 0.0, 0.0)
    expect_shape(mask, (batch, 1, 1, length), "mask", label)
    _expect_bool(mask, label)
    expect_equal(mask, want, "mask", label, mistakes=mistakes)


# (d_model, n_heads, d_ff, batch, target length T, source length S, target lengths, source lengths)
_DECODER_SIZES = [
    (12, 3, 20, 2, 7, 5, (4, 7), (3, 5)),
    (8, 2, 16, 1, 1, 1, (1,), (1,)),
    (16, 4, 24, 3, 4, 6, (4, 2, 3), (6, 1, 4)),
]
_DECODER_SIZES_LARGER = [
    (24, 4, 40, 3, 11, 9, (11, 5, 8), (9, 3, 6)),
    (12, 3, 20, 2, 1, 1, (1, 1), (1, 1)),
    (32, 8, 48, 4, 6, 13, (6, 2, 4, 1), (13, 1, 7, 10)),
]


def _decoder_masks(tgt_lengths: tuple[int, ...], src_lengths: tuple[int, ...], t: int, s: int):
    """Ours (True = may attend) and PyTorch's (True = blocked) masks for one batch."""
    tgt_keep = torch.arange(t) < torch.tensor(tgt_lengths)[:, None]  # (B, T)
    src_keep = torch.arange(s) < torch.tensor(src_lengths)[:, None]  # (B, S)
    ours = (tgt_keep[:, None, None, :] & _lower_triangle(t), src_keep[:, None, None, :])  # (B,1,T,T), (B,1,1,S)
    theirs = dict(tgt_mask=~_lower_triangle(t), tgt_key_padding_mask=~tgt_keep, memory_key_padding_mask=~src_keep)
    return ours, theirs


@exercise("ex06_3", "transformer_course.decoder:DecoderLayer.forward", "hard", needs=("ex04_3", "ex05_1", "ex05_2"))
def decoder_layer_cases(larger: bool = False) -> Iterator[Case]:
    """decoder layer (masked self-attention, cross-attention, FFN)

    Nudge: a decoder layer has three sub-layers: masked self-attention, attention over the encoder's output,
    then the feed-forward network, each in the residual connection (paper §3.1).

    Hint: three self.connection() blocks (residual, unless the layer was built with another connection):
    self-attention of x with tgt_mask; cross-attention with queries from x and keys/values from memory, with
    memory_mask; then self.ffn. Use norm1/2/3 and dropout1/2/3.
    """
    from transformer_course.decoder import DecoderLayer  # the course's class: its weights describe the fixture

    for norm_first in (False, True):
        for d_model, n_heads, d_ff, batch, t, s, tgt_lengths, src_lengths in (
            _DECODER_SIZES_LARGER if larger else _DECODER_SIZES
        ):
            reference = nn.TransformerDecoderLayer(
                d_model, n_heads, d_ff, dropout=0.0, batch_first=True, norm_first=norm_first
            )
            _randomise_norms(reference)
            ours = DecoderLayer.from_torch(reference).eval()
            reference.train()  # dropout is 0; training mode keeps PyTorch on its reference path
            alone = _alone(ours, reference, _DECODER_SUBLAYERS)
            constructor = ((d_model, n_heads, d_ff), {"dropout": 0.0, "norm_first": norm_first})
            alone_layers = {name: module(one, *constructor[0], **constructor[1]) for name, one, _ in alone}
            x, memory = torch.randn(batch, t, d_model), torch.randn(batch, s, d_model)
            sizes = (
                f"x {tuple(x.shape)}, memory {tuple(memory.shape)}, D={d_model}, H={n_heads}, norm_first={norm_first}"
            )
            layer = {"layer": module(ours, d_model, n_heads, d_ff, dropout=0.0, norm_first=norm_first)}
            yield _memory_is_used_case(layer, x, memory, sizes)
            yield from _no_future_leak_cases(layer, x, memory, sizes)
            (tgt_mask, memory_mask), theirs = _decoder_masks(tgt_lengths, src_lengths, t, s)
            for use_masks in (False, True):
                with torch.no_grad():
                    want = reference(x, memory, **(theirs if use_masks else {}))
                for training in (False, True):  # the same numbers in both modes when dropout is 0
                    masks = "causal+padding tgt_mask and padding memory_mask" if use_masks else "no masks"
                    label = f"{sizes}, {masks}, {'training' if training else 'eval'} mode"
                    args = (tgt_mask, memory_mask) if use_masks else (None, None)
                    their_masks = theirs if use_masks else {}
                    isolated = [call(ref(name), x, memory, *args) | train(training) for name in alone_layers]
                    probe = calls_case(call(ref("layer"), x, memory, *args) | train(training), *isolated,
                                       objects=layer | alone_layers, no_grad=True)  # fmt: skip
                    mistakes = partial(_decoder_mistakes, reference, (x, memory), their_masks, norm_first)
                    alone_given = [(name, partial(one, x, memory, **their_masks),
                                    partial(_decoder_mistakes, one, (x, memory), their_masks, norm_first,
                                            only="unmasked")) for name, _, one in alone]  # fmt: skip
                    given = {"want": want, "what": "decoder layer output", "mistakes": mistakes,
                             "alone": alone_given, "sublayers": _DECODER_SUBLAYERS}  # fmt: skip
                    yield Case(label, probe, _judge_layer, given)
    yield _decoder_connection_case(DecoderLayer, d_model, n_heads, d_ff, x, memory)  # the loop's last sizes, inputs


def _decoder_connection_case(layer_class: type, d_model: int, n_heads: int, d_ff: int, x: Tensor,
                             memory: Tensor) -> Case:  # fmt: skip
    """ch05's :func:`connection_case` for the decoder layer: self-attention, cross-attention, feed-forward."""
    reference = nn.TransformerDecoderLayer(d_model, n_heads, d_ff, dropout=0.0, batch_first=True)
    _randomise_norms(reference)
    ours = layer_class.from_torch(reference).eval()
    reference.train()  # dropout is 0; training mode keeps PyTorch's attention off its fast path
    blocks = [(lambda h: reference.self_attn(h, h, h, need_weights=False)[0], reference.norm1),
              (lambda h: reference.multihead_attn(h, memory, memory, need_weights=False)[0], reference.norm2),
              (_feed_forward(reference), reference.norm3)]  # fmt: skip
    spec = module(ours, d_model, n_heads, d_ff, dropout=0.0, norm_first=False)
    return connection_case(spec, (x, memory), blocks, "decoder layer output")


# sub-layer → (how it is written, the path of our output projection, the path of PyTorch's); see ch05's
# _ENCODER_SUBLAYERS
_DECODER_SUBLAYERS = {
    "masked self-attention": ("self.self_attn(h, h, h, tgt_mask) attends from h, the sub-layer's input, to itself "
                              "with tgt_mask, wrapped by self.connection with self.norm1 and self.dropout1",
                              "self_attn.w_o", "self_attn.out_proj"),
    "cross-attention": ("self.cross_attn(h, memory, memory, memory_mask) takes its queries from h, the sub-layer's "
                        "input, and its keys and values from memory as it is, wrapped by self.connection with "
                        "self.norm2 and self.dropout2", "cross_attn.w_o", "multihead_attn.out_proj"),
    "feed-forward": ("self.ffn(h) on the sub-layer's input h, wrapped by self.connection with self.norm3 and "
                     "self.dropout3, after the cross-attention block", "ffn.linear2", "linear2"),
}  # fmt: skip


def _decoder_mistakes(layer: nn.Module, inputs: tuple[Tensor, Tensor], masks: dict, norm_first: bool,
                      only: str | None = None) -> Mistakes:  # fmt: skip
    """Typical mistakes of a decoder layer, replayed with ``layer``'s (nn.TransformerDecoderLayer) parts;
    ``masks``: PyTorch's (True = blocked); ``only``: as ch05's ``_layer_mistakes``."""
    x, memory = inputs

    def attend(causal: bool = True) -> Callable[[Tensor], Tensor]:
        tgt, padding = (masks.get("tgt_mask"), masks.get("tgt_key_padding_mask")) if causal else (None, None)
        return lambda h: layer.self_attn(h, h, h, attn_mask=tgt, key_padding_mask=padding, need_weights=False)[0]

    def cross(masked: bool = True, attention: nn.Module | None = None) -> Callable[[Tensor], Tensor]:
        padding, attention = masks.get("memory_key_padding_mask") if masked else None, attention or layer.multihead_attn
        return lambda h: attention(h, memory, memory, key_padding_mask=padding, need_weights=False)[0]

    ffn, n1, n2, n3 = _feed_forward(layer), layer.norm1, layer.norm2, layer.norm3
    blocks = {"self": (attend(), n1), "cross": (cross(), n2), "ffn": (ffn, n3), "self, unmasked": (attend(False), n1),
              "cross, unmasked": (cross(False), n2), "cross, norm3": (cross(), n3), "ffn, norm2": (ffn, n2),
              "cross, norm1": (cross(), n1), "ffn, norm1": (ffn, n1), "self, norm2": (attend(), n2),
              "self, no norm": (attend(), nn.Identity()), "cross, no norm": (cross(), nn.Identity()),
              "ffn, no norm": (ffn, nn.Identity()), "cross, self_attn": (cross(attention=layer.self_attn), n2)}  # fmt: skip
    cross_first = "the cross-attention comes before the self-attention; attend to the decoder's own positions first"
    wrong = [
        (["self", "cross", "ffn"], not norm_first, f"this is the other order; norm_first={norm_first} means "
         f"{_ORDERS[norm_first]} for each sub-layer"),
        (["self, unmasked", "cross", "ffn"], norm_first, "tgt_mask is not passed on to the self-attention"),
        (["self", "cross, unmasked", "ffn"], norm_first, "memory_mask is not passed on to the cross-attention"),
        (["self", "cross, norm3", "ffn, norm2"], norm_first, "norm2 and norm3 are mixed up: norm2 goes with the "
         "cross-attention, norm3 with the feed-forward network"),
        (["self", "cross, norm1", "ffn, norm1"], norm_first, "norm1 is used for every sub-layer; the cross-attention "
         "has its own norm2 and the feed-forward network norm3"),
        (["cross", "ffn"], norm_first, "the masked self-attention sub-layer is missing: the decoder attends to "
         "itself first, then to the memory"),
        (["self", "ffn"], norm_first, "the cross-attention sub-layer is missing: the second block attends to the "
         "memory"),
        (["self", "cross"], norm_first, "the feed-forward sub-layer is missing: the third block is self.ffn with "
         "self.norm3"),
        (["cross", "self", "ffn"], norm_first, cross_first),
        (["cross, norm1", "self, norm2", "ffn"], norm_first, cross_first),
        (["self, no norm", "cross", "ffn"], norm_first, unnormed("masked self-attention", "norm1", norm_first)),
        (["self", "cross, no norm", "ffn"], norm_first, unnormed("cross-attention", "norm2", norm_first)),
        (["self", "cross, self_attn", "ffn"], norm_first, "the cross-attention runs self.self_attn, the "
         "self-attention's weights: it has its own, self.cross_attn(h, memory, memory, memory_mask)"),
        (["self", "cross", "ffn, no norm"], norm_first, unnormed("feed-forward network", "norm3", norm_first)),
    ]  # fmt: skip
    return _layer_mistakes(layer, x, blocks, norm_first, wrong, only)


def _memory_is_used_case(layer: dict, x: Tensor, memory: Tensor, sizes: str) -> Case:
    """Changing the encoder memory must change the output (cross-attention reads the memory)."""
    label = f"{sizes}, eval mode: the same x with two different memories"
    other = memory + torch.randn_like(memory)
    probe = calls_case(*(call(ref("layer"), x, m, None, None) | train(False) for m in (memory, other)), objects=layer,
                       no_grad=True)  # fmt: skip
    return Case(label, probe, _judge_memory_is_used)


def _judge_memory_is_used(case: Case, got: Outcome) -> None:
    first, second = (expect_tensor(got.output(i), "output", case.label) for i in (0, 1))
    if first.shape == second.shape and torch.allclose(first, second):
        raise CheckFailure(
            f"{case.label}: the output does not depend on memory: cross-attention must take its keys "
            "and values from memory (the encoder output), not from the decoder states"
        )


def _no_future_leak_cases(layer: dict, x: Tensor, memory: Tensor, sizes: str) -> list[Case]:
    """With a causal tgt_mask, changing x at positions >= t leaves the outputs before t unchanged."""
    t = x.shape[1]
    if t < 2:
        return []
    cut = t // 2
    changed = x.clone()
    changed[:, cut:] += torch.randn_like(changed[:, cut:])
    causal = _lower_triangle(t)  # (T, T)
    cases = []
    for training in (False, True):
        label = f"{sizes}, causal tgt_mask, {'training' if training else 'eval'} mode: x changed at positions >= {cut}"
        probe = calls_case(*(call(ref("layer"), inputs, memory, causal, None) | train(training) for inputs in (x, changed)),
                           objects=layer, no_grad=True)  # fmt: skip
        cases.append(Case(label, probe, _judge_no_future_leak, {"cut": cut}))
    return cases


def _judge_no_future_leak(case: Case, got: Outcome) -> None:
    label, cut, (_, x, _, _, _) = case.label, case.given["cut"], case.args()
    before = expect_shape(got.output(0), tuple(x.shape), "output", label)
    after = expect_shape(got.output(1), tuple(x.shape), "output", label)
    if not torch.allclose(before[:, :cut], after[:, :cut], atol=1e-5):
        raise CheckFailure(
            f"{label}: the outputs at positions < {cut} changed, so the future leaks: "
            "pass tgt_mask to the self-attention (in every mode)"
        )
