"""Running a plan: the encoder once, then one decoding step after another.

The decoding loops of chapter 09 (``greedy_decode``, ``beam_search``, ``sample``) and chapter 13
(``generate``) choose the tokens; with ``path=ENGINE`` they ask a :class:`TranslationSteps` or
a :class:`LanguageModelSteps` (chapter 09's ``Predictor``) for the logits of the next token
instead of the learner's modules.

What a step does, per layer, for B rows of one new token each (x: (B, D)):

* self-attention: one product gives q, k and v; rotary positions turn q
  and k together, as complex numbers times a table row (``e^{iθ}``); k and v are written into a
  cache allocated once per call, (B, Hkv, capacity, d); the H/Hkv queries that share a key head
  are the rows of one small product against it (grouped heads are never copied);
* cross-attention (translator): q alone; the keys and values of the encoder's output were
  projected once, for every layer at once, when the call began, and a sentence's beams read its
  keys as the rows of one product (they are never copied for each beam);
* the product that ends a sub-layer adds the residual (``addmm``); pre-LN norms carry no weights
  (folded into the next matrix, :mod:`~.read`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .parts import CrossAttention, FeedForward, Layer, Plan, SelfAttention
from .search import Step, in_place, on_a_shortlist

ACTIVATIONS = {
    "relu": torch.relu_,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "swish": lambda x: F.silu(x, inplace=True),
}


class KVBuffers:
    """The keys and values of every layer, allocated once for ``capacity`` positions: one tensor
    of keys and one of values, a row of each per sequence (so that beam search moves a row in one
    copy), seen layer by layer. Every layer's attention has one shape (every model of the course
    does; another is refused in one line).

    Shape:
        keys[i] (B, Hkv, capacity, Dk), values[i] (B, Hkv, capacity, Dv) for layer i; positions
        [0, length) filled
    """

    def __init__(self, plan: Plan, batch: int, capacity: int) -> None:
        shapes = {(layer.self_attn.n_kv_heads, layer.self_attn.d_k, layer.self_attn.d_v) for layer in plan.layers}
        if len(shapes) > 1:
            raise ValueError(f"the engine's cache wants one attention shape in every layer, got {sorted(shapes)}")
        heads, d_k, d_v = shapes.pop() if shapes else (0, 0, 0)

        def rows(features: int) -> Tensor:  # (B, N, Hkv, capacity, features) for N layers
            size = (batch, len(plan.layers), heads, capacity, features)
            return torch.empty(size, dtype=plan.dtype, device=plan.device)

        self.every_key, self.every_value = rows(d_k), rows(d_v)
        self.keys, self.values = list(self.every_key.unbind(1)), list(self.every_value.unbind(1))  # views
        self.length = 0

    def reorder(self, rows: Tensor) -> None:
        """Beam search: row i continues the earlier row ``rows[i]`` (only the filled positions move).
        On a CPU only the rows that continue another row move; on a GPU every row is gathered, so
        that the step never waits to read ``rows``."""
        filled = [buffer.narrow(3, 0, self.length) for buffer in (self.every_key, self.every_value)]
        # each (B, N, Hkv, L, ·)
        if rows.device.type != "cpu":
            for part in filled:
                part.copy_(part.index_select(0, rows))
            return
        moved = (rows != torch.arange(len(rows))).nonzero().squeeze(1)  # (M,)
        sources = rows[moved]  # (M,) the rows they continue
        if torch.isin(sources, moved).any():  # a source moves too: read every source first
            for part in filled:
                part.index_copy_(0, moved, part.index_select(0, sources))
            return
        for row, source in zip(moved.tolist(), sources.tolist(), strict=True):  # straight to its place
            for part in filled:
                part[row].copy_(part[source])


def rotation_table(base: float, d_k: int, capacity: int, device: torch.device) -> Tensor:
    """``e^{iθ}`` for every position and pair: what :func:`~transformer_course.rotary.apply_rope`
    turns pair i of a position p by (angles from the same ``rope_angles``, in float32).

    Shape:
        → (capacity, 1, d_k/2) complex64 (the 1 for the heads)
    """
    from transformer_course.rotary import rope_angles

    angles = rope_angles(torch.arange(capacity, device=device), d_k, base)  # (capacity, d_k/2)
    return torch.polar(torch.ones_like(angles), angles)[:, None]


def turn(y: Tensor, width: int, rows: Tensor, batch: int, length: int) -> None:
    """Turn the queries and keys in the first ``width`` columns of ``y`` by their positions, in
    place: pairs (2i, 2i+1) as complex numbers, times the table's rows ``e^{iθ}``. (bfloat16 has no
    complex type: its pairs are turned in float32, as ``apply_rope`` does, and written back.)

    Shape:
        y: (B·T, W), width = (H+Hkv)·Dk, rows: (T, 1, Dk/2) complex
    """
    qk = y.view(batch, length, -1)[..., :width].unflatten(-1, (-1, rows.shape[-1], 2))  # (B, T, H+Hkv, Dk/2, 2)
    if y.dtype == torch.float32 and y.shape[1] % 2 == 0:
        torch.view_as_complex(qk).mul_(rows)  # a view of y, turned where it is
    else:
        qk.copy_(torch.view_as_real(torch.view_as_complex(qk.float().contiguous()) * rows))


def self_attention(a: SelfAttention, h: Tensor, kv: KVBuffers, i: int, batch: int, table: Tensor | None) -> Tensor:
    """Layer ``i``'s self-attention for T new positions after ``kv.length`` cached ones (T = 1:
    a decoding step; T > 1 from an empty cache: a prompt, causal).

    Shape:
        h: (B·T, D) → heads (B·T, H·Dv)
    """
    start, length = kv.length, h.shape[0] // batch
    y = a.qkv(h)  # (B·T, H·Dk + Hkv·Dk + Hkv·Dv)
    if table is not None:  # rotary: queries and keys (side by side) turned by their positions
        turn(y, (a.n_heads + a.n_kv_heads) * a.d_k, table[start : start + length], batch, length)
    q, k, v = y.split([a.n_heads * a.d_k, a.n_kv_heads * a.d_k, a.n_kv_heads * a.d_v], dim=1)
    keys, values = kv.keys[i], kv.values[i]  # (B, Hkv, capacity, ·)
    group = a.n_heads // a.n_kv_heads
    if length == 1:  # one new position: written into the caches, then read with all the others
        keys.narrow(2, start, 1).copy_(k.view(batch, a.n_kv_heads, 1, a.d_k))
        values.narrow(2, start, 1).copy_(v.view(batch, a.n_kv_heads, 1, a.d_v))
        q = q.view(batch, a.n_kv_heads, group, a.d_k)  # (B, Hkv, H/Hkv, Dk): a group's queries as rows
        out = F.scaled_dot_product_attention(
            q, keys.narrow(2, 0, start + 1), values.narrow(2, 0, start + 1)
        )  # (B, Hkv, H/Hkv, Dv); narrow: one operation (torch 2.3 counts a slice per ":")
        return out.reshape(batch, a.n_heads * a.d_v)  # (B, H·Dv); a copy only where SDPA's layout needs one (torch 2.3)
    if start:
        raise ValueError("the engine feeds several positions only from an empty cache (a prompt)")
    k = k.reshape(batch, length, a.n_kv_heads, a.d_k).transpose(1, 2)  # (B, Hkv, T, Dk)
    v = v.reshape(batch, length, a.n_kv_heads, a.d_v).transpose(1, 2)  # (B, Hkv, T, Dv)
    keys[:, :, :length], values[:, :, :length] = k, v
    q = q.reshape(batch, length, a.n_heads, a.d_k).transpose(1, 2)  # (B, H, T, Dk)
    if group > 1:  # a prompt's pass, once: each key head repeated for its group
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, Dv)
    return merged(a, out)  # (B·T, H·Dv)


def merged(a: SelfAttention, heads: Tensor) -> Tensor:
    """The heads of several positions side by side, as W^O reads them: (B, H, T, Dv) → (B·T, H·Dv);
    in bfloat16 the learner's ``merge_heads``'s (B, T, H·Dv), in whatever layout it returns (see
    :class:`~.parts.SelfAttention`)."""
    if a.merge is not None:
        return a.merge(heads)
    batch, _, length, _ = heads.shape
    return heads.transpose(1, 2).reshape(batch * length, a.n_heads * a.d_v)


def cross_attention(a: CrossAttention, h: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None) -> Tensor:
    """A decoding step's attention over the encoder's output (its keys and values made once). The
    R rows of one sentence (its beams) share its keys: their queries are the rows of one product
    against them, as grouped heads share a key head.

    Shape:
        h: (B·R, D), keys (B, H, S, Dk), values (B, H, S, Dv), mask: (B, 1, 1, S) additive → heads (B·R, H·Dv)
    """
    rows, batch = h.shape[0], keys.shape[0]
    q = a.q(h).view(batch, rows // batch, a.n_heads, a.d_k).transpose(1, 2)  # (B, H, R, Dk)
    out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)  # (B, H, R, Dv)
    return out.transpose(1, 2).reshape(rows, a.n_heads * a.d_v)  # (B·R, H·Dv)


def feed_forward(f: FeedForward, h: Tensor) -> Tensor:
    """The hidden features before the second matrix. Shape: h (N, D) → (N, d_ff)"""
    up = f.up(h)  # (N, d_ff), or (N, 2·d_ff) gate and value side by side
    if f.gated:
        gate, value = up.chunk(2, dim=-1)
        return F.silu(gate).mul_(value)  # (N, d_ff)
    return ACTIVATIONS[f.activation](up)


def before(layer: Layer, k: int, x: Tensor) -> Tensor:
    """What sub-layer ``k`` reads: ``norm(x)`` in pre-LN, ``x`` in post-LN."""
    return layer.norms[k](x) if layer.norm_first else x


def after(layer: Layer, k: int, x: Tensor, out, inner: Tensor) -> Tensor:
    """The residual stream after sub-layer ``k``, whose last matrix ``out`` reads ``inner``:
    pre-LN ``x + out(inner)``, post-LN ``norm(x + out(inner))`` (the product adds the residual)."""
    y = out.add_to(x, inner)
    return y if layer.norm_first else layer.norms[k](y)


def feed_forward_block(layer: Layer, k: int, x: Tensor) -> Tensor:
    """The residual stream after the feed-forward sub-layer ``k`` (the learner's own module where the
    plan holds one: ``x + module(norm(x))``, as the modules add it)."""
    f = layer.ffn
    if f.module is None:
        return after(layer, k, x, f.down, feed_forward(f, before(layer, k, x)))
    y = x + f.module(before(layer, k, x))  # (N, D)
    return y if layer.norm_first else layer.norms[k](y)


def encoder_layer(layer: Layer, x: Tensor, batch: int, length: int, mask: Tensor | None) -> Tensor:
    """One encoder layer over every source position. Shape: x (B·S, D), mask (B, 1, 1, S) → (B·S, D)"""
    a = layer.self_attn

    def attend(h: Tensor) -> Tensor:
        q, k, v = a.qkv(h).split([a.n_heads * a.d_k, a.n_heads * a.d_k, a.n_heads * a.d_v], dim=-1)
        sizes = (a.d_k, a.d_k, a.d_v)
        heads = [t.reshape(batch, length, a.n_heads, d).transpose(1, 2) for t, d in zip((q, k, v), sizes, strict=True)]
        return merged(a, F.scaled_dot_product_attention(*heads, attn_mask=mask))  # (B·S, H·Dv)

    x = after(layer, 0, x, a.out, attend(before(layer, 0, x)))
    return feed_forward_block(layer, 1, x)


class TranslationSteps:
    """The logits of a translator's next token, step after step, for a batch of source sentences.

    The source is encoded once, and the keys and values of its encoding projected once for every
    decoder layer; ``repeat`` rows follow each sentence (its beams), reading its keys and values.

    Shape:
        src: (B, S) ids → :meth:`next_logits` (B·repeat, V) float32 at each step
    """

    def __init__(self, plan: Plan, src: Tensor, capacity: int, repeat: int = 1) -> None:
        self.plan, batch, length = plan, src.shape[0], src.shape[1]
        padding = src == plan.pad_id  # (B, S)
        mask = None
        if padding.any():  # additive: 0 where a key may be seen, the dtype's minimum where not
            mask = torch.zeros(padding.shape, dtype=plan.dtype, device=src.device)
            mask = mask.masked_fill(padding, torch.finfo(plan.dtype).min)[:, None, None, :]  # (B, 1, 1, S)
        x = plan.src_embed(src, 0)  # (B·S, D)
        for layer in plan.encoder:
            x = encoder_layer(layer, x, batch, length, mask)
        if plan.encoder_norm is not None:
            x = plan.encoder_norm(x)
        self.memory = self._memory_heads(x, batch, length)  # per layer: keys, values (B, H, S, ·)
        self.mask = mask
        self.kv = KVBuffers(plan, batch * repeat, capacity)

    def _memory_heads(self, memory: Tensor, batch: int, length: int) -> list[tuple[Tensor, Tensor]]:
        """The keys and values of the encoder's output for every decoder layer."""
        if not self.plan.layers:
            return []
        width = self.plan.memory_kv.out_features  # N·H·(Dk+Dv)
        projected = self.plan.memory_kv(memory).view(batch, length, width)  # (B, S, N·H·(Dk+Dv)); B may be 0
        heads, start = [], 0
        for layer in self.plan.layers:
            a = layer.cross_attn
            k = projected[..., start : start + a.n_heads * a.d_k]  # (B, S, H·Dk)
            v = projected[..., start + a.n_heads * a.d_k : start + a.n_heads * (a.d_k + a.d_v)]
            start += a.n_heads * (a.d_k + a.d_v)
            k = k.reshape(batch, length, a.n_heads, a.d_k).transpose(1, 2)  # (B, H, S, Dk)
            v = v.reshape(batch, length, a.n_heads, a.d_v).transpose(1, 2)  # (B, H, S, Dv)
            heads.append((k.contiguous(), v.contiguous()))  # (B, H, S, ·)
        return heads

    def next_logits(self, tokens: Tensor, new: Tensor) -> Tensor:
        """Logits (B, V) of the token after the ``new`` (B, 1) tokens, float32, the tokens never next
        forbidden (chapter 09's ``Predictor``; ``tokens``, everything so far, is what the modules'
        path without a cache reads: the engine always keeps its cache)."""
        plan, kv, batch = self.plan, self.kv, new.shape[0]
        x = plan.embed(new, kv.length)  # (B, D)
        for i, layer in enumerate(plan.layers):
            a, c, keys, values = layer.self_attn, layer.cross_attn, *self.memory[i]
            x = after(layer, 0, x, a.out, self_attention(a, before(layer, 0, x), kv, i, batch, None))
            x = after(layer, 1, x, c.out, cross_attention(c, before(layer, 1, x), keys, values, self.mask))
            x = feed_forward_block(layer, 2, x)
        kv.length += 1
        if plan.final_norm is not None:
            x = plan.final_norm(x)
        return plan.output(x).float()  # (B, V); the output layer's bias forbids the tokens never next

    def reorder(self, rows: Tensor) -> None:
        self.kv.reorder(rows)

    def survivors(self, beam_step: Step) -> Step:
        """Your ``beam_step``, given each hypothesis's shortlist (:mod:`~.search`). In bfloat16,
        whose 8-bit logits often tie, it sees the whole vocabulary: a shortlist orders tied tokens
        differently, and beam search would follow another of the tied paths than your modules do."""
        return beam_step if self.plan.dtype == torch.bfloat16 else in_place(on_a_shortlist(beam_step))


class LanguageModelSteps:
    """The logits of a language model's next token: the prompt in one pass, then one token a step.

    Shape:
        :meth:`next_logits`: new tokens (B, T) → (B, V) float32, the next token after them
    """

    def __init__(self, plan: Plan, batch: int, capacity: int) -> None:
        self.plan = plan
        self.kv = KVBuffers(plan, batch, capacity)
        a = plan.layers[0].self_attn if plan.layers else None
        rope = a is not None and a.rope_base is not None
        self.table = rotation_table(a.rope_base, a.d_k, capacity, plan.device) if rope else None

    def next_logits(self, tokens: Tensor, new: Tensor) -> Tensor:
        """Logits (B, V) of the token after ``new`` (B, T): a prompt's T tokens, then one a step."""
        plan, kv, batch, length = self.plan, self.kv, new.shape[0], new.shape[1]
        x = plan.embed(new, kv.length)  # (B·T, D)
        for i, layer in enumerate(plan.layers):
            a = layer.self_attn
            x = after(layer, 0, x, a.out, self_attention(a, before(layer, 0, x), kv, i, batch, self.table))
            x = feed_forward_block(layer, 1, x)
        kv.length += length
        x = x.view(batch, length, -1)[:, -1]  # (B, D): the last position's
        if plan.final_norm is not None:
            x = plan.final_norm(x)
        return plan.output(x).float()  # (B, V); the output layer's bias forbids the tokens never next

    def reorder(self, rows: Tensor) -> None:
        self.kv.reorder(rows)

    def survivors(self, beam_step: Step) -> Step:
        return beam_step
