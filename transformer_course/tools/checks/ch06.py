"""Checks for chapter 06 — the causal mask, the padding mask, the decoder layer.

References are independent of the package: masks written element by element from index
comparisons, and PyTorch's own ``nn.TransformerDecoderLayer`` (loaded into ours with
``from_torch``; its masks use the opposite polarity, True = blocked).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from ._tools import CheckFailure, call, expect_close, expect_equal, expect_shape, expect_tensor
from .ch05 import _randomise_norms
from .registry import exercise


def _lower_triangle(size: int) -> Tensor:
    """``[t, s]`` is True when s <= t: query t may see keys 0…t (built from indices, not tril)."""
    rows = torch.arange(size)[:, None]  # (T, 1) query positions
    cols = torch.arange(size)[None, :]  # (1, T) key positions
    return cols <= rows  # (T, T)


def _expect_bool(got: Tensor, case: str) -> None:
    if got.dtype != torch.bool:
        raise CheckFailure(f"{case}: return a bool mask (True = may attend), got dtype {got.dtype}")


@exercise("ex06_1", "transformer_course.masks:causal_mask", "easy")
def check_causal_mask(impl: Callable) -> int:
    """causal mask (no peeking at the future)

    Hint: a (size, size) bool tensor created on `device`, True on and below the diagonal (see torch.tril).
    """
    cases = 0
    for size in (5, 1, 2, 7):  # the first case is big enough for a precise diagnosis
        case = f"causal_mask({size})"
        got = expect_tensor(call(impl, size, case=case), "mask", case)
        expect_shape(got, (size, size), "mask", case)
        _expect_bool(got, case)
        want = _lower_triangle(size)
        if size > 1 and torch.equal(got, want.T):
            raise CheckFailure(
                f"{case}: the mask is transposed (upper triangle): row t is query t and may see columns 0…t, the past"
            )
        if size > 1 and torch.equal(got, ~want):
            raise CheckFailure(
                f"{case}: the polarity is reversed (True = blocked is nn.MultiheadAttention's "
                "convention); in this course True means *may attend*"
            )
        if torch.equal(got, want & ~torch.eye(size, dtype=torch.bool)):
            raise CheckFailure(f"{case}: the diagonal is False, but a position may attend to itself")
        expect_equal(got, want, "mask", case)
        cases += 1
    case = "causal_mask(3, device='meta')"
    got = expect_tensor(call(impl, 3, device="meta", case=case), "mask", case)
    if got.device.type != "meta":
        raise CheckFailure(f"{case}: the mask should be created on the requested device, got {got.device}")
    return cases + 1


# (tokens, pad_id): padding at the end, a sequence without padding, a fully padded sequence,
# a pad id that is not 0, a single token, a square batch (B == S) so a wrong axis cannot hide
_PADDING_CASES = [
    ([[5, 6, 7, 0, 0], [4, 4, 4, 4, 4]], 0),
    ([[1, 8, 3, 3], [3, 3, 3, 3], [9, 9, 9, 3]], 3),
    ([[7]], 0),
    ([[2, 0, 0], [2, 2, 0], [2, 2, 2]], 0),
]


@exercise("ex06_2", "transformer_course.masks:padding_mask", "medium")
def check_padding_mask(impl: Callable) -> int:
    """padding mask (B, 1, 1, S)

    Hint: True where tokens != pad_id, then insert two axes so the result is (B, 1, 1, S): it must broadcast
    over heads and query positions, not over keys.
    """
    for rows, pad_id in _PADDING_CASES:
        tokens = torch.tensor(rows)
        batch, length = tokens.shape
        case = f"tokens {tuple(tokens.shape)} = {rows}, pad_id={pad_id}"
        got = expect_tensor(call(impl, tokens, pad_id, case=case), "mask", case)
        wrong_shape = tuple(got.shape) != (batch, 1, 1, length)
        if wrong_shape and tuple(got.shape) == (batch, length):
            raise CheckFailure(
                f"{case}: shape (B, S) lines up with the last two axes of the (B, H, T, S) scores, so B "
                "would be matched with the query axis T; return (B, 1, 1, S)"
            )
        if wrong_shape and tuple(got.shape) == (batch, 1, length, 1):
            raise CheckFailure(f"{case}: shape (B, 1, S, 1) masks query positions; mask the keys: (B, 1, 1, S)")
        expect_shape(got, (batch, 1, 1, length), "mask", case)
        _expect_bool(got, case)
        want = torch.tensor([[[[token != pad_id for token in row]]] for row in rows])  # (B, 1, 1, S)
        if torch.equal(got, ~want):
            raise CheckFailure(
                f"{case}: the polarity is reversed: True marks a real token (may attend), False marks padding"
            )
        expect_equal(got, want, "mask", case)
    return len(_PADDING_CASES)


# (d_model, n_heads, d_ff, batch, target length T, source length S, target lengths, source lengths)
_DECODER_SIZES = [
    (12, 3, 20, 2, 7, 5, (4, 7), (3, 5)),
    (8, 2, 16, 1, 1, 1, (1,), (1,)),
    (16, 4, 24, 3, 4, 6, (4, 2, 3), (6, 1, 4)),
]


def _decoder_masks(tgt_lengths: tuple[int, ...], src_lengths: tuple[int, ...], t: int, s: int):
    """Ours (True = may attend) and PyTorch's (True = blocked) masks for one batch."""
    tgt_keep = torch.arange(t) < torch.tensor(tgt_lengths)[:, None]  # (B, T)
    src_keep = torch.arange(s) < torch.tensor(src_lengths)[:, None]  # (B, S)
    ours = (tgt_keep[:, None, None, :] & _lower_triangle(t), src_keep[:, None, None, :])  # (B,1,T,T), (B,1,1,S)
    theirs = dict(tgt_mask=~_lower_triangle(t), tgt_key_padding_mask=~tgt_keep, memory_key_padding_mask=~src_keep)
    return ours, theirs


@exercise("ex06_3", "transformer_course.decoder:DecoderLayer.forward", "hard", needs=("ex04_3", "ex05_1", "ex05_2"))
def check_decoder_layer(impl: Callable) -> int:
    """decoder layer (masked self-attention, cross-attention, FFN)

    Hint: three residual() blocks: self-attention of x with tgt_mask (and cache=self_cache); cross-attention
    with queries from x and keys/values from memory, with memory_mask (and cache=cross_cache); then self.ffn.
    Use norm1/2/3 and dropout1/2/3.
    """
    from ...decoder import DecoderLayer

    cases = 0
    for norm_first in (False, True):
        for d_model, n_heads, d_ff, batch, t, s, tgt_lengths, src_lengths in _DECODER_SIZES:
            reference = nn.TransformerDecoderLayer(
                d_model, n_heads, d_ff, dropout=0.0, batch_first=True, norm_first=norm_first
            )
            _randomise_norms(reference)
            ours = DecoderLayer.from_torch(reference).eval()
            reference.train()  # dropout is 0; training mode keeps PyTorch on its reference path
            x, memory = torch.randn(batch, t, d_model), torch.randn(batch, s, d_model)
            sizes = (
                f"x {tuple(x.shape)}, memory {tuple(memory.shape)}, D={d_model}, H={n_heads}, norm_first={norm_first}"
            )
            cases += _probe_memory_is_used(impl, ours, x, memory, sizes)
            cases += _probe_no_future_leak(impl, ours, x, memory, sizes)
            (tgt_mask, memory_mask), theirs = _decoder_masks(tgt_lengths, src_lengths, t, s)
            for use_masks in (False, True):
                with torch.no_grad():
                    want = reference(x, memory, **(theirs if use_masks else {}))
                for training in (False, True):  # the same numbers in both modes when dropout is 0
                    ours.train(training)
                    masks = "causal+padding tgt_mask and padding memory_mask" if use_masks else "no masks"
                    case = f"{sizes}, {masks}, {'training' if training else 'eval'} mode"
                    args = (tgt_mask, memory_mask) if use_masks else (None, None)
                    with torch.no_grad():
                        got = call(impl, ours, x, memory, *args, case=case)
                    expect_close(got, want, "decoder layer output", case)
                    cases += 1
            cases += _probe_cache(impl, ours, x, memory, sizes)
    return cases


def _probe_memory_is_used(impl: Callable, layer: nn.Module, x: Tensor, memory: Tensor, sizes: str) -> int:
    """Changing the encoder memory must change the output (cross-attention reads the memory)."""
    layer.eval()
    case = f"{sizes}, eval mode: the same x with two different memories"
    with torch.no_grad():
        first = expect_tensor(call(impl, layer, x, memory, None, None, case=case), "output", case)
        second = expect_tensor(
            call(impl, layer, x, memory + torch.randn_like(memory), None, None, case=case), "output", case
        )
    if torch.allclose(first, second):
        raise CheckFailure(
            f"{case}: the output does not depend on memory: cross-attention must take its keys "
            "and values from memory (the encoder output), not from the decoder states"
        )
    return 1


def _probe_no_future_leak(impl: Callable, layer: nn.Module, x: Tensor, memory: Tensor, sizes: str) -> int:
    """With a causal tgt_mask, changing x at positions >= t leaves the outputs before t unchanged."""
    t = x.shape[1]
    if t < 2:
        return 0
    cut = t // 2
    changed = x.clone()
    changed[:, cut:] += torch.randn_like(changed[:, cut:])
    causal = _lower_triangle(t)  # (T, T)
    count = 0
    for training in (False, True):
        layer.train(training)
        case = f"{sizes}, causal tgt_mask, {'training' if training else 'eval'} mode: x changed at positions >= {cut}"
        with torch.no_grad():
            before = call(impl, layer, x, memory, causal, None, case=case)
            after = call(impl, layer, changed, memory, causal, None, case=case)
        before = expect_shape(before, tuple(x.shape), "output", case)
        after = expect_shape(after, tuple(x.shape), "output", case)
        if not torch.allclose(before[:, :cut], after[:, :cut], atol=1e-5):
            raise CheckFailure(
                f"{case}: the outputs at positions < {cut} changed, so the future leaks: "
                "pass tgt_mask to the self-attention (in every mode)"
            )
        count += 1
    layer.eval()
    return count


def _probe_cache(impl: Callable, layer: nn.Module, x: Tensor, memory: Tensor, sizes: str) -> int:
    """Fed one position at a time with a cache (chapter 08), the layer gives what one causal pass gives."""
    from ...cache import LayerCache

    layer.eval()
    t = x.shape[1]
    causal = _lower_triangle(t)  # (T, T)
    cache = LayerCache()
    case = f"{sizes}, eval mode: one position at a time with a LayerCache, against one pass with a causal tgt_mask"
    with torch.no_grad():
        whole = expect_shape(call(impl, layer, x, memory, causal, None, case=case), tuple(x.shape), "output", case)
        steps = [call(impl, layer, x[:, i : i + 1], memory, None, None, cache=cache, case=case) for i in range(t)]
    if len(cache.self_attn) != t:
        raise CheckFailure(
            f"{case}: the self-attention cache holds {len(cache.self_attn)} positions after {t} steps: "
            "pass cache=self_cache to self.self_attn"
        )
    if len(cache.cross_attn) != memory.shape[1]:
        raise CheckFailure(
            f"{case}: the cross-attention cache is empty: pass cache=cross_cache to self.cross_attn, so that "
            "the memory's keys and values are computed once"
        )
    stepwise = torch.cat([expect_shape(out, (x.shape[0], 1, x.shape[2]), "output", case) for out in steps], dim=1)
    expect_close(stepwise, whole, "the outputs of the cached steps", case)
    return 1
