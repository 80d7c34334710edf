"""Checks for chapter 04 — multi-head attention.

References are independent of the package: heads cut with ``chunk`` and glued back with
``cat``, PyTorch's ``nn.MultiheadAttention``, and a loop over the heads written with plain
torch operations from the module's own weights.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import partial

import torch
from torch import Tensor, nn

from transformer_course_tools.exercises.probe.calls import call, calls_case, module

from ._tools import (
    CheckFailure,
    Mistakes,
    expect_close,
    expect_finite,
    expect_shape,
    expect_tensor,
    expect_tuple,
    matches,
    name_mistake,
)
from .case import Case, Outcome
from .ch03 import scaled_dot_product_attention  # the stand-in that ex04_3's stand-in calls
from .registry import exercise

# (B, T, D, H): odd sizes, one head, one token, so that a wrong axis cannot pass by luck
_SPLIT_SIZES = [(2, 7, 12, 3), (2, 5, 12, 6), (3, 5, 6, 1), (1, 1, 4, 4), (2, 3, 10, 2)]
_SPLIT_SIZES_LARGER = [(4, 19, 48, 8), (3, 13, 36, 12), (5, 9, 20, 1), (2, 1, 16, 16), (3, 11, 30, 5)]


def _reference_split(x: Tensor, n_heads: int) -> Tensor:
    """Head h holds the h-th block of features: (B, T, H·Dh) → (B, H, T, Dh)."""
    return torch.stack(x.chunk(n_heads, dim=-1), dim=1)


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """The stand-in: (B, T, H·Dh) → (B, H, T, Dh), head h holding the h-th block of features."""
    return torch.stack(x.chunk(n_heads, dim=-1), dim=1)


@exercise("ex04_1", "transformer_course.multihead:split_heads", "easy", standin=split_heads)
def split_heads_cases(larger: bool = False) -> Iterator[Case]:
    """split the features into heads

    Nudge: the model width is cut into equal slices, one per head, and the heads become their own axis (paper
    §3.2.2).

    Hint: view x as (B, T, H, Dh), then swap the T and H axes with transpose(1, 2).
    """
    for b, t, d, h in _SPLIT_SIZES_LARGER if larger else _SPLIT_SIZES:
        x = torch.randn(b, t, d)
        yield Case(f"x {tuple(x.shape)}, n_heads={h}", calls_case(call(x, h)), _judge_split)


def _judge_split(case: Case, got: Outcome) -> None:
    label, (x, h) = case.label, case.args()
    b, t, d = x.shape
    by_token = x.reshape(b, t, h, d // h)  # (B, T, H, Dh): the view before the transpose
    mistakes = [
        (x.reshape(b, h, t, d // h), "x.view(B, H, T, Dh) without a transpose fills each head with pieces of "
         "several tokens; view as (B, T, H, Dh), then transpose(1, 2)"),
        (x.reshape(b, t, d // h, h).permute(0, 3, 1, 2), "head i gets every H-th feature, not the contiguous "
         "block i·Dh … (i+1)·Dh - 1: view as (B, T, H, Dh), not (B, T, Dh, H)"),
        (by_token, "the heads are not moved in front of the positions: after the view (B, T, H, Dh), "
         "transpose(1, 2) to (B, H, T, Dh)"),
        (by_token.transpose(2, 3), "the wrong axes are swapped: transpose(1, 2) turns (B, T, H, Dh) into "
         "(B, H, T, Dh); transpose(2, 3) or (-1, -2) swaps H and Dh"),
        (by_token.permute(0, 2, 3, 1), "the positions and the features are swapped, (B, H, Dh, T): "
         "transpose(1, 2) alone gives (B, H, T, Dh)"),
    ]  # fmt: skip
    expect_close(got.output(), _reference_split(x, h), "heads", label, atol=0.0, rtol=0.0, mistakes=mistakes)


def merge_heads(x: Tensor) -> Tensor:
    """The stand-in: (B, H, T, Dh) → (B, T, H·Dh), the heads side by side."""
    return torch.cat(x.unbind(dim=1), dim=-1)


@exercise("ex04_2", "transformer_course.multihead:merge_heads", "medium", standin=merge_heads)
def merge_heads_cases(larger: bool = False) -> Iterator[Case]:
    """merge the heads back (concat)

    Nudge: the inverse of splitting: the heads' outputs are concatenated back into the model width (paper
    §3.2.2).

    Hint: transpose(1, 2) back to (B, T, H, Dh), then reshape to (B, T, H·Dh); view fails after a transpose,
    reshape copies when it must.
    """
    for b, t, d, h in _SPLIT_SIZES_LARGER if larger else _SPLIT_SIZES:
        for contiguous in (True, False):
            if contiguous:
                heads = torch.randn(b, h, t, d // h)
                label = f"heads {tuple(heads.shape)}"
            else:  # what split_heads returns: a transposed view
                heads = torch.randn(b, t, h, d // h).transpose(1, 2)
                label = f"heads {tuple(heads.shape)} (non-contiguous, as split_heads returns it)"
            yield Case(label, calls_case(call(heads)), _judge_merge)
    b, t, d, h = (3, 9, 40, 5) if larger else (2, 5, 12, 3)
    x = torch.randn(b, t, d)
    label = f"merge_heads(split(x)) for x {(b, t, d)}, {h} heads"
    yield Case(label, calls_case(call(_reference_split(x, h))), _judge_round_trip, {"x": x})


def _judge_merge(case: Case, got: Outcome) -> None:
    label, (heads,) = case.label, case.args()
    b, h, t, dh = heads.shape
    want = torch.cat(heads.unbind(dim=1), dim=-1)  # (B, T, H·Dh): Concat(head_1, …, head_h)
    mistakes = [
        (heads.reshape(b, t, h * dh), "reshaping (B, H, T, Dh) straight to (B, T, H·Dh) mixes tokens and heads; "
         "transpose(1, 2) first"),
        (heads.transpose(1, 2), "the heads are not merged: reshape (B, T, H, Dh) to (B, T, H·Dh) after the "
         "transpose"),
        (heads.permute(0, 2, 3, 1).reshape(b, t, h * dh), "the heads' features are interleaved: head i's Dh "
         "features must stay one block; transpose(1, 2) (not permute(0, 2, 3, 1)), then reshape"),
        (heads.transpose(2, 3).reshape(b, t, h * dh), "the positions and the features are swapped (transpose(2, 3)) "
         "before the reshape, so each row mixes positions: move the head axis behind the positions, transpose(1, 2)"),
        (heads.sum(dim=1), "the heads are summed; concatenate them: transpose(1, 2), then reshape to (B, T, H·Dh)"),
        (heads.mean(dim=1), "the heads are averaged; concatenate them: transpose(1, 2), then reshape to "
         "(B, T, H·Dh)"),
    ]  # fmt: skip
    merged = got.output()
    name_mistake(merged, want, mistakes, label, 0.0, 0.0)
    if isinstance(merged, Tensor) and tuple(merged.shape) == (b, h, t * dh) and h != t:
        raise CheckFailure(f"{label}: merged has shape {(b, h, t * dh)}, (B, H, T·Dh): the heads axis is kept and the "
                           "positions merged, as if x.shape were read as (B, T, H, Dh): it is (B, H, T, Dh)")  # fmt: skip
    expect_shape(merged, (b, t, h * dh), "merged", label)
    expect_close(merged, want, "merged", label, atol=0.0, rtol=0.0)


def _judge_round_trip(case: Case, got: Outcome) -> None:
    expect_close(got.output(), case.given["x"], "round trip", case.label, atol=0.0, rtol=0.0)


def _per_head_reference(mha: nn.Module, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None,
                        scale: float | None = None, blocked: bool = False, axis: int = -1, swap: bool = False,
                        w_q: str = "w_q", w_k: str = "w_k", w_v: str = "w_v", merged: bool = True):  # fmt: skip
    """Equations of §3.2.2 head by head, from the module's weights (no split/merge, no package code);
    a known mistake replayed: the scores times ``scale`` (not 1/√d_k), the mask's True blocking
    (``blocked``), the softmax over ``axis``, the scores k·qᵀ (``swap``), another projection for the
    queries, keys or values (``w_q``, ``w_k``, ``w_v``: a name), the heads (B, H, T, Dv) reshaped to
    (B, T, H·Dv) without moving the head axis back (``merged=False``)."""
    b, t, _ = query.shape
    s, h, d_k, d_v = key.shape[1], mha.n_heads, mha.d_k, mha.d_v

    def project(name: str, x: Tensor, size: int, i: int) -> Tensor:
        linear, rows = getattr(mha, name), slice(i * size, (i + 1) * size)
        bias = 0.0 if linear.bias is None else linear.bias[rows]
        return x @ linear.weight[rows].T + bias

    outputs, weights = [], []
    for i in range(h):
        q = project(w_q, query, d_k, i)  # (B, T, Dk)
        k = project(w_k, key, d_k, i)  # (B, S, Dk)
        v = project(w_v, value, d_v, i)  # (B, S, Dv)
        scores = k @ q.transpose(1, 2) if swap else q @ k.transpose(1, 2)  # (B, T, S); swapped (B, S, T)
        scores = scores * (1 / math.sqrt(d_k) if scale is None else scale)
        if mask is not None:
            keep = mask.expand(b, h, t, s)[:, i]  # (B, T, S)
            scores = scores.masked_fill(keep if blocked else ~keep, torch.finfo(scores.dtype).min)
        w = scores.softmax(dim=axis)
        outputs.append(w @ v)
        weights.append(w)
    concat = torch.cat(outputs, dim=-1) if merged else torch.stack(outputs, dim=1).reshape(b, t, h * d_v)
    out = concat @ mha.w_o.weight.T + (0.0 if mha.w_o.bias is None else mha.w_o.bias)
    return out, torch.stack(weights, dim=1), concat  # (B, T, D), (B, H, T, S), (B, T, H·Dv)


_FORGOT_W_O = "the output is the concatenated heads: apply the output projection W^O (self.w_o)"


def _expect_output(out: Tensor, want: Tensor, concat: Tensor, case: str) -> None:
    expect_close(out, want, "output", case, mistakes=[(concat, _FORGOT_W_O)])


def _attention_mistakes(replay: partial) -> Mistakes:
    """The output of multi-head attention with a known mistake (``replay``: the per-head reference of the case)."""
    d_model, d_k = replay.args[0].d_model, replay.args[0].d_k
    return [
        (lambda: replay(scale=1.0)[0], "the scores are not scaled: divide them by sqrt(d_k), the head size"),
        (lambda: replay(scale=d_model**-0.5)[0], f"the scores are divided by sqrt(d_model) = {d_model**0.5:.4g}; "
         f"divide by sqrt(d_k) = {d_k**0.5:.4g}, the head size"),
        (lambda: replay(blocked=True)[0], "the mask's polarity is reversed: our masks mean True = may attend "
         "(nn.MultiheadAttention's masks use the opposite polarity)"),
        (lambda: replay(mask=None)[0], "the mask is ignored: pass it on to the attention, on both paths"),
        (lambda: replay(axis=-2)[0], "the softmax runs over the queries; each query's weights over the keys sum "
         "to 1: softmax(dim=-1)"),
    ]  # fmt: skip


def _step_mistakes(replay: partial) -> Mistakes:
    """The output with a known mistake in one step of the forward (``replay``: the per-head reference of
    the case), each saying on which side of the softmax it lies: those that change the attention
    weights, then those after them."""
    mha, query, key = replay.args[0], replay.keywords["query"], replay.keywords["key"]
    mistakes = [
        (lambda: replay(w_q="w_k", w_k="w_q")[0], "w_q and w_k are swapped, so the attention weights are wrong: "
         "q = self.w_q(query), k = self.w_k(key)"),
        (lambda: replay(w_q="w_k")[0], "the queries are projected with w_k, so the attention weights are wrong: "
         "q = self.w_q(query)"),
        (lambda: replay(w_k="w_q")[0], "the keys are projected with w_q, so the attention weights are wrong: "
         "k = self.w_k(key)"),
        (lambda: replay(merged=False)[0], "the attention weights are right but the heads are merged without moving "
         "the head axis back: transpose (B, H, T, Dv) to (B, T, H, Dv) before the reshape (use merge_heads)"),
        (lambda: replay(value=key)[0], "the attention weights are right but the values are projected from the key "
         "input: v = self.w_v(value)"),
    ]  # fmt: skip
    if query.shape[1] == key.shape[1]:  # k·qᵀ is (B, S, T): it has the shape of the scores when S = T only
        mistakes.append((lambda: replay(swap=True)[0], "the scores are k·qᵀ, the transpose of q·kᵀ, so the attention "
                         "weights are wrong: scores = q @ k.transpose(-2, -1) / sqrt(d_k)"))  # fmt: skip
    if mha.d_k == mha.d_v:  # w_k gives values of the right size
        mistakes.append((lambda: replay(w_v="w_k")[0], "the attention weights are right but the values are projected "
                         "with w_k: v = self.w_v(value)"))  # fmt: skip
    return mistakes


def _locate(out: Tensor, weights: Tensor, wanted: tuple, case: str) -> None:
    """Where a wrong output goes wrong: the attention weights the forward returned (an intermediate
    result) against the reference per head; right weights put the mistake after the softmax (the
    values, the merge, W^O), wrong ones before it (the scores, the mask, the softmax)."""
    want, want_weights, concat = wanted
    if matches(out, want):
        return
    if matches(weights, want_weights):
        name_mistake(out, want, [(concat, _FORGOT_W_O)], case)
        raise CheckFailure(
            f"{case}: the attention weights are right but the output is wrong, so the mistake comes after the "
            "softmax: check the dropout on the weights (only in training mode), the values (self.w_v(value) split "
            "into heads), weights @ v, merge_heads and self.w_o"
        )
    diff = (weights.detach().double() - want_weights.double()).abs()
    worst = tuple(int(i) for i in torch.nonzero(diff == diff.max())[0])
    raise CheckFailure(
        f"{case}: the attention weights already differ (at index {worst} (batch, head, query, key) expected "
        f"{want_weights[worst].item():.6g}, got {weights[worst].item():.6g}), so the mistake comes before the "
        "values: look at the scores q·kᵀ/√d_k (q: self.w_q(query) split into heads; k: self.w_k(key) split "
        "into heads), the mask and the softmax over the keys"
    )


def _expect_forward(result: object, n_heads: int, q: Tensor, k: Tensor, mask: Tensor | None, need: bool,
                    case: str) -> tuple:  # fmt: skip
    """The (output, weights) pair of one forward call, with weights per head when they were asked for."""
    out, weights = expect_tuple(result, "output, weights", case, start="forward must return")
    if need:
        b, t, s = q.shape[0], q.shape[1], k.shape[1]
        if isinstance(weights, Tensor) and tuple(weights.shape) == (b, t, s) and n_heads > 1:
            raise CheckFailure(
                f"{case}: the weights are averaged over the heads, {(b, t, s)}: need_weights=True returns one "
                f"map per head, (B, H, T, S) = {(b, n_heads, t, s)}"
            )
        if isinstance(weights, Tensor) and tuple(weights.shape) == (b, n_heads, t, t) and s != t:
            raise CheckFailure(f"{case}: the weights are {(b, n_heads, t, t)}, over the {t} queries instead of the "
                               f"{s} keys, so the keys come from the query: project the key input with w_k and the "
                               "value input with w_v")  # fmt: skip
        expect_shape(weights, (b, n_heads, t, s), "weights", case)
        keep = None if mask is None else mask.expand_as(weights)
        if keep is not None and (weights[~keep & keep.any(-1, keepdim=True)] > 1e-6).any():
            raise CheckFailure(
                f"{case}: weights are non-zero where mask is False; our masks mean True = may attend "
                "(nn.MultiheadAttention's masks use the opposite polarity)"
            )
    elif weights is not None:
        raise CheckFailure(f"{case}: weights were returned though need_weights=False: return (output, None), with "
                           "the fast path (fast_attention) when no weights are asked for")  # fmt: skip
    return out, weights


def _forward_cases(mha: nn.Module, spec: dict, inputs: tuple, mask: Tensor | None, wanted: tuple, setting: str,
                   mask_name: str) -> list[Case]:  # fmt: skip
    """The teaching path (``need_weights=True``) and the fast path, each against the expected output
    and weights ``wanted = (output, weights, concatenated heads)``; ``spec`` describes ``mha``."""
    query, key, value = inputs
    cases = []
    for need in (True, False):
        label = (
            f"{setting}, query {tuple(query.shape)}, key/value {tuple(key.shape)}, mask {mask_name}, "
            f"need_weights={need}"
        )
        once = call(spec, query, key, value, mask=mask, need_weights=need)
        twice = not mha.training and mha.dropout > 0  # a second call shows dropout left on at evaluation
        probe = calls_case(*([once, once] if twice else [once]), no_grad=True)
        replay = partial(_per_head_reference, mha, query=query, key=key, value=value, mask=mask)
        cases.append(Case(label, probe, _judge_forward, {"n_heads": mha.n_heads, "wanted": wanted, "replay": replay}))
    return cases


def _judge_forward(case: Case, got: Outcome) -> None:
    label, (_, query, key, _), kwargs = case.label, case.args(), case.kwargs()
    want, want_weights, concat = case.given["wanted"]
    out = expect_tuple(got.output(), "output, weights", label, start="forward must return")[0]
    again = got.output(1) if len(case.probe["calls"]) > 1 else None  # the same call once more (eval mode)
    if isinstance(again, tuple) and again and isinstance(out, Tensor) and not matches(again[0], out, 0.0, 0.0):
        raise CheckFailure(f"{label}: two identical calls in eval mode give different outputs, so dropout is "
                           "applied at evaluation: drop the weights in training mode only (dropout_p = self.dropout "
                           "if self.training else 0.0)")  # fmt: skip
    replay = case.given["replay"]  # before the weights' own checks:
    name_mistake(out, want, [*_attention_mistakes(replay), *_step_mistakes(replay)], label)
    out, weights = _expect_forward(got.output(), case.given["n_heads"], query, key, kwargs["mask"],
                                   kwargs["need_weights"], label)  # fmt: skip
    expect_finite(expect_tensor(out, "output", label), "output", label)
    if kwargs["need_weights"]:  # the weights first: they say on which side of the softmax the mistake is
        _locate(out, weights, case.given["wanted"], label)
    _expect_output(out, want, concat, label)
    if kwargs["need_weights"]:
        expect_close(weights, want_weights, "weights", label)


def _randomise_biases(module: nn.Module) -> None:
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "bias" in name:
                p.normal_(0.0, 0.5)  # non-zero biases, so that a misplaced bias shows


def multi_head_attention_forward(
    self: nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    need_weights: bool = False,
    *,
    fast: bool = True,
) -> tuple[Tensor, Tensor | None]:
    """The stand-in, as a method of the learner's ``MultiHeadAttention`` (its weights)."""
    queries = split_heads(self.w_q(query), self.n_heads)  # (B, H, T, Dk)
    keys, values = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    p = self.dropout if self.training else 0.0
    heads, weights = scaled_dot_product_attention(queries, keys, values, mask, p)  # (B, H, T, Dv)
    return self.w_o(merge_heads(heads)), (weights if need_weights else None)


@exercise("ex04_3", "transformer_course.multihead:MultiHeadAttention.forward", "hard",
          needs=("ex03_3", "ex04_1", "ex04_2"), standin=multi_head_attention_forward)  # fmt: skip
def multihead_forward_cases(larger: bool = False) -> Iterator[Case]:
    """multi-head attention forward

    Nudge: project, split into heads, attend in every head at once, concatenate the heads and project again
    (paper §3.2.2).

    Hint: project the query with w_q, the key with w_k and the value with w_v, and split_heads each; run attention
    on (B, H, T, Dk) with the mask (teaching path when need_weights, else the fast path); merge_heads, then apply
    w_o.
    """
    from transformer_course.multihead import (
        MultiHeadAttention,  # the course's class: its weights and sizes describe the fixture
    )

    # 1. Against nn.MultiheadAttention with the same weights (its masks: True = blocked).
    sizes = [(3, 11, 9, 32, 4), (2, 13, 13, 24, 6), (4, 6, 10, 16, 1), (2, 1, 1, 8, 8)] if larger else []
    for b, t, s, d, h in sizes or [(2, 7, 5, 12, 3), (2, 5, 5, 12, 3), (3, 4, 6, 8, 1), (1, 1, 1, 4, 2)]:
        torch_mha = nn.MultiheadAttention(d, h, dropout=0.25, batch_first=True)
        _randomise_biases(torch_mha)
        torch_mha.eval()  # no dropout at evaluation: ours must switch it off too
        ours = MultiHeadAttention.from_torch(torch_mha).eval()
        spec = module(ours, d, h, dropout=0.25)
        query, key, value = torch.randn(b, t, d), torch.randn(b, s, d), torch.randn(b, s, d)
        if s == t:  # self-attention: the same tensor three times
            key = value = query
        padding = torch.ones(b, 1, 1, s, dtype=torch.bool)
        padding[0, ..., (s + 1) // 2 :] = False  # the first sequence is padded
        pattern = torch.ones(t, s, dtype=torch.bool).tril() if s == t else torch.rand(t, s) > 0.4
        pattern[:, 0] = True  # no fully masked row (nn.MultiheadAttention would give NaN)
        masks = [
            ("None", None, {}),
            (f"key padding {tuple(padding.shape)}", padding, {"key_padding_mask": ~padding[:, 0, 0, :]}),
            (f"{'causal' if s == t else 'pattern'} {tuple(pattern.shape)}", pattern, {"attn_mask": ~pattern}),
        ]
        for mask_name, mask, torch_masks in masks:
            with torch.no_grad():
                want, want_weights = torch_mha(
                    query, key, value, need_weights=True, average_attn_weights=False, **torch_masks
                )
                _, _, concat = _per_head_reference(ours, query, key, value, mask)
            setting = f"MultiHeadAttention(d_model={d}, n_heads={h}) vs nn.MultiheadAttention"
            wanted = (want, want_weights, concat)
            yield from _forward_cases(ours, spec, (query, key, value), mask, wanted, setting, mask_name)

    # 2. d_k != d_v (and D not divisible by H) against the head-by-head closed form.
    for d, h, d_k, d_v in [(12, 3, 5, 7), (9, 2, 4, 3)]:
        mha = MultiHeadAttention(d, h, d_k=d_k, d_v=d_v)
        _randomise_biases(mha)
        spec = module(mha, d, h, d_k=d_k, d_v=d_v)
        b, t, s = (3, 9, 13) if larger else (2, 5, 7)
        query, key, value = torch.randn(b, t, d), torch.randn(b, s, d), torch.randn(b, s, d)
        padding = torch.ones(b, 1, 1, s, dtype=torch.bool)
        padding[1, ..., 4:] = False
        full = padding.clone()
        full[0] = False  # the whole first sequence is padding: finite output, uniform weights
        for mask_name, mask in (("None", None), ("key padding (B, 1, 1, S)", padding), ("fully padded", full)):
            with torch.no_grad():
                wanted = _per_head_reference(mha, query, key, value, mask)
            setting = f"MultiHeadAttention(d_model={d}, n_heads={h}, d_k={d_k}, d_v={d_v})"
            yield from _forward_cases(mha, spec, (query, key, value), mask, wanted, setting, mask_name)

    # 3. Dropout on the attention weights is active in training mode only.
    mha = MultiHeadAttention(12, 3, dropout=0.5).train()
    x = torch.randn(2, 5, 12)
    label = "MultiHeadAttention(12, 3, dropout=0.5) in training mode"
    with torch.no_grad():
        want, _, _ = _per_head_reference(mha, x, x, x, None)
    probe = calls_case(call(module(mha, 12, 3, dropout=0.5), x, x, x, mask=None, need_weights=False), no_grad=True)
    yield Case(label, probe, _judge_dropout, {"want": want, "n_heads": 3})


def _judge_dropout(case: Case, got: Outcome) -> None:
    label, (_, x, _, _) = case.label, case.args()
    out, _ = _expect_forward(got.output(), case.given["n_heads"], x, x, None, False, label)
    expect_shape(out, tuple(case.given["want"].shape), "output", label)
    if torch.allclose(out, case.given["want"], atol=1e-5):
        raise CheckFailure(f"{label}: no dropout was applied; use dropout_p = self.dropout when self.training")
