"""Checks for chapter 13 — RMSNorm, rotary embeddings, grouped key/value heads, SwiGLU, the online softmax.

References are independent of the package: ``torch.nn.RMSNorm`` (PyTorch 2.4 and later) and the
formula in float64; block-diagonal rotation matrices built from explicit 2×2 blocks; a loop over the
query heads and ``F.scaled_dot_product_attention(..., enable_gqa=True)`` (PyTorch 2.5 and later);
SwiGLU with silu written out as z·σ(z); the softmax of the concatenated blocks of scores in float64.
Where a known mistake gives another answer on a case, the message names the mistake.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer_course_tools.exercises.probe.calls import call, calls_case, fixture, module
from transformer_course_tools.exercises.probe.wire import kind

from ._tools import (
    CheckFailure,
    Mistakes,
    expect_close,
    expect_dtype,
    expect_finite,
    expect_shape,
    expect_tensor,
    matches,
)
from .case import Case, Outcome
from .registry import exercise

# -- ex13_1: RMSNorm ------------------------------------------------------------------------------


def _rms_reference(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """x / √(mean(x²) + ε) · g, in float64."""
    x, weight = x.double(), weight.double()
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) / x.shape[-1] + eps) * weight


def _rms_mistakes(x: Tensor, weight: Tensor, eps: float) -> Mistakes:
    """The answers of typical mistakes on ``x`` (float64), each with what is wrong."""
    x, g = x.double(), weight.double()
    d = x.shape[-1]
    mean_square = (x * x).sum(-1, keepdim=True) / d
    centred = x - x.mean(-1, keepdim=True)
    variance = (centred * centred).sum(-1, keepdim=True) / d
    return [
        (centred / torch.sqrt(variance + eps) * g, "subtracts the mean: that is LayerNorm (chapter 05); RMSNorm "
         "divides x itself by √(mean(x²) + eps), with no mean and no shift"),
        (x / torch.sqrt(variance + eps) * g, "divides by the standard deviation (the mean is taken out inside the "
         "square root); RMSNorm divides by the root mean square √(mean(x²) + eps)"),
        (x / (torch.sqrt(mean_square) + eps) * g, "adds eps after the square root; it belongs inside: "
         "x / √(mean(x²) + eps)"),
        (x / torch.sqrt(mean_square + eps), "the learned scale self.weight (g) is never applied"),
        (x / torch.sqrt((x * x).sum(-1, keepdim=True) + eps) * g, "divides by √(sum(x²)), the length of the "
         "vector; the root *mean* square divides the sum by D first"),
        (x / torch.sqrt(mean_square + eps * eps) * g, "squares eps: add self.eps itself to the mean square"),
        (x / (mean_square + eps) * g, "forgets the square root: divide by √(mean(x²) + eps)"),
        (x / torch.sqrt(mean_square) * g, "never adds eps: x / √(mean(x²) + eps) (without it a position whose "
         "features are all zero gives NaN)"),
        (x / torch.sqrt(mean_square + eps) + g, "adds self.weight; the learned scale multiplies: x / √(mean(x²) + "
         "eps) · self.weight"),
        (x / torch.sqrt((x * x).mean() + eps) * g, "takes the mean square over every axis; take it over the last "
         "one only (each position's D features, keepdim=True)"),
        *[(x / torch.sqrt((x * x).mean(axis, keepdim=True) + eps) * g, f"takes the mean square over axis {axis}, "
           "not over the features: mean(dim=-1, keepdim=True)") for axis in range(x.dim() - 1) if x.shape[axis] > 1],
    ]  # fmt: skip


# (input shape, eps, scale of x, shift of x): a shifted input (LayerNorm would remove the shift), a
# large eps on small values (eps's place matters), extra leading axes, a single feature
_RMS_CASES = [((2, 5, 12), 1e-6, 1.0, 3.0), ((1, 1, 7), 0.5, 0.3, 0.0), ((3, 4, 2, 8), 1e-2, 2.0, -1.0),
              ((6, 16), 1e-5, 1.0, 0.5), ((4, 1), 1e-3, 1.0, 0.0)]  # fmt: skip
_RMS_CASES_LARGER = [((4, 13, 48), 1e-6, 1.0, 3.0), ((2, 1, 9), 0.5, 0.3, 0.0), ((3, 5, 4, 16), 1e-2, 2.0, -1.0),
                     ((21, 64), 1e-5, 1.0, 0.5), ((9, 1), 1e-3, 1.0, 0.0)]  # fmt: skip


@exercise("ex13_1", "transformer_course.rmsnorm:RMSNorm.forward", "easy")
def rms_norm_cases(larger: bool = False) -> Iterator[Case]:
    """RMSNorm: divide by the root mean square

    Nudge: RMSNorm rescales by the root mean square of the features only, with a learned gain: no centring, no
    bias (Zhang and Sennrich 2019, §4).

    Hint: mean of x² over the last axis (keepdim=True), add self.eps, take the square root (torch.rsqrt gives its
    inverse), multiply x by that and by self.weight; no mean subtracted, no shift.
    """
    from transformer_course.rmsnorm import RMSNorm  # the course's class: its weight describes the fixture

    for shape, eps, scale, shift in _RMS_CASES_LARGER if larger else _RMS_CASES:
        d = shape[-1]
        norm = RMSNorm(d, eps=eps)
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5)  # not all ones, so a forgotten weight shows
        x = scale * torch.randn(*shape) + shift
        label = f"x {tuple(x.shape)} (mean ≈ {shift:g}), RMSNorm({d}, eps={eps:g})"
        yield Case(label, calls_case(call(module(norm, d, eps=eps), x)), _judge_rms, {"weight": norm.weight.detach()})
    rows, d = (7, 32) if larger else (3, 6)
    norm = RMSNorm(d, eps=1e-6)
    x = torch.randn(rows, d)
    x[1] = 0.0  # a position whose features are all zero: eps keeps the division finite
    label = f"x ({rows}, {d}) whose row 1 is all zeros, RMSNorm({d}, eps=1e-06)"
    yield Case(label, calls_case(call(module(norm, d, eps=1e-6), x)), _judge_rms, {"weight": norm.weight.detach()})


def _judge_rms(case: Case, got: Outcome) -> None:
    label, (spec, x), weight = case.label, case.args(), case.given["weight"]
    eps = spec["kwargs"]["eps"]
    out = expect_shape(got.output(), tuple(x.shape), "output", label)
    zero = (x == 0).all(dim=-1)  # (...,): positions whose features are all zero
    if zero.any() and not torch.isfinite(out[zero]).all():
        raise CheckFailure(f"{label}: NaN on the all-zero row: add self.eps to the mean square before the square root")
    want = _rms_reference(x, weight, eps)
    expect_close(out, want, "output", label, mistakes=_rms_mistakes(x, weight, eps))
    if hasattr(nn, "RMSNorm"):  # PyTorch's own RMSNorm (2.4 and later), with the same weight
        theirs = nn.RMSNorm(x.shape[-1], eps=eps)
        with torch.no_grad():
            theirs.weight.copy_(weight)
            expect_close(out, theirs(x), "output (compared with torch.nn.RMSNorm)", label)


# -- ex13_2: rotary embeddings --------------------------------------------------------------------


def _rotation_matrices(positions: Tensor, d: int, base: float, pairs: str = "interleaved") -> Tensor:
    """One (d, d) matrix per position: a 2×2 rotation by p·base^(−2i/d) for each pair i, the pairs
    being features (2i, 2i+1) ("interleaved", the course's) or (i, i + d/2) ("half-split"). Float64.

    Shape:
        positions (T,) → (T, d, d)
    """
    matrices = torch.zeros(len(positions), d, d, dtype=torch.float64)
    for t, p in enumerate(positions.tolist()):
        for i in range(d // 2):
            theta = p * base ** (-2 * i / d)
            c, s = math.cos(theta), math.sin(theta)
            a, b = (2 * i, 2 * i + 1) if pairs == "interleaved" else (i, i + d // 2)
            matrices[t, a, a], matrices[t, a, b], matrices[t, b, a], matrices[t, b, b] = c, -s, s, c
    return matrices


def _rotate(x: Tensor, positions: Tensor, base: float, pairs: str = "interleaved") -> Tensor:
    """Each row t of x times its position's rotation matrix. Shape: (..., T, d) → (..., T, d) float64"""
    matrices = _rotation_matrices(positions, x.shape[-1], base, pairs)  # (T, d, d)
    return (matrices @ x.double().unsqueeze(-1)).squeeze(-1)


def _rope_variant(x: Tensor, positions: Tensor, base: float, rule: Callable) -> Tensor:
    """Rotation with the pair rule ``rule(x2i, x2i+1, cos, sin) → (new 2i, new 2i+1)``, a known mistake's
    in place of the right one; in float64, the pairs interleaved. Shape: (..., T, d) → (..., T, d)"""
    d = x.shape[-1]
    theta = positions.double()[:, None] * base ** (-2 * torch.arange(d // 2, dtype=torch.float64) / d)  # (T, d/2)
    new = rule(x.double()[..., 0::2], x.double()[..., 1::2], theta.cos(), theta.sin())
    return torch.stack(new, dim=-1).flatten(-2)


def _rope_case(x: Tensor, positions: Tensor, base: float | None, label: str, want: Tensor | None = None) -> Case:
    kwargs = {} if base is None else {"base": base}
    given = {"want": want, "base": 10000.0 if base is None else base}
    return Case(label, calls_case(call(x, positions, **kwargs)), _judge_rope, given)


@exercise("ex13_2", "transformer_course.rotary:apply_rope", "medium")
def apply_rope_cases(larger: bool = False) -> Iterator[Case]:
    """rotary position embeddings: rotate pairs of features

    Nudge: rotary embeddings rotate each pair of features by an angle proportional to the position (Su et al.,
    RoFormer, §3.2).

    Hint: angles = rope_angles(positions, d, base, dtype), (T, d/2), dtype float32 (float64 when x is float64);
    take the features 2i (x[..., 0::2]) and 2i+1 (x[..., 1::2]) in that dtype; new 2i = x2i·cos − x2i+1·sin, new 2i+1 = x2i·sin + x2i+1·cos; put each pair back in
    place (stack on a last axis, then flatten the last two) and return x's dtype.
    """
    if larger:  # the grader's hidden cases: more heads, positions and features
        x, positions = torch.randn(3, 4, 17, 32), torch.arange(17) * 7
        yield _rope_case(x, positions, None, "x (B, H, T, d) = (3, 4, 17, 32), positions 0, 7, … 112")
    else:
        x, positions = torch.randn(2, 3, 5, 8), torch.tensor([0, 1, 2, 7, 40])
        yield _rope_case(x, positions, None, "x (B, H, T, d) = (2, 3, 5, 8), positions [0, 1, 2, 7, 40]")
    x = torch.randn(4, 6)
    yield _rope_case(x, torch.arange(4), None, "x (T, d) = (4, 6), positions 0 … 3: three pairs")
    x = torch.randn(1, 2, 4, 2)
    yield _rope_case(x, torch.tensor([3, 1, 4, 1]), None, "x (1, 2, 4, 2): one pair, positions [3, 1, 4, 1]")
    x = torch.randn(2, 6, 10)
    yield _rope_case(x, torch.arange(6) * 3, 100.0, "x (2, 6, 10), positions 0, 3, … 15, base=100")
    # a cached decoding step: the new keys sit at positions 5 … 8, and must be rotated as rows 5 … 8
    # of the whole sequence are (what a KV cache stores must not depend on how the sequence was fed)
    b, h, first, d = (2, 4, 16, 16) if larger else (1, 2, 5, 8)
    x = torch.randn(b, h, first + 4, d)
    full = _rotate(x, torch.arange(first + 4), 10000.0)
    last = first + 3
    label = (f"x ({b}, {h}, 4, {d}), positions {first} … {last} (a cached step): must equal rows {first} … {last} "
             f"of rotating all {first + 4} positions")  # fmt: skip
    yield _rope_case(x[..., first:, :].clone(), torch.arange(first, first + 4), None, label, full[..., first:, :])
    x = torch.randn(2, 2, 3, 8).to(torch.bfloat16)
    yield _rope_case(x, torch.tensor([0, 5, 9]), None, "x (2, 2, 3, 8) in bfloat16, positions [0, 5, 9]")
    # a long sequence in bfloat16: its 8 bits hold position 4001 only to the nearest 16, so an angle (or its
    # cosine) computed in bfloat16 is far off; the statement says to compute in float32 and return x's dtype
    x = torch.randn(1, 2, 4, 8).to(torch.bfloat16)
    yield _rope_case(x, torch.tensor([3, 333, 2049, 4001]), None,
                     "x (1, 2, 4, 8) in bfloat16, positions [3, 333, 2049, 4001] (a long sequence)")  # fmt: skip
    x = torch.randn(1, 2, 3, 8, dtype=torch.float64)
    yield _rope_case(x, torch.tensor([1, 999, 1000]), None, "x (1, 2, 3, 8) in float64, positions [1, 999, 1000]")


def _judge_rope(case: Case, got: Outcome) -> None:
    label, (x, positions), base = case.label, case.args(), case.given["base"]
    want = case.given["want"] if case.given["want"] is not None else _rotate(x, positions, base)
    out = expect_shape(got.output(), tuple(x.shape), "output", label)
    expect_dtype(out, x.dtype, "output", label + " (compute in float32, or float64, then return x's dtype)")
    length = x.shape[-2]
    tolerance = {torch.bfloat16: 3e-2, torch.float64: 1e-10}.get(x.dtype, 1e-5)
    if (
        x.dtype == torch.float64
        and not torch.allclose(out, want, rtol=tolerance, atol=tolerance)
        and torch.allclose(out, want, rtol=1e-4, atol=1e-4)
    ):
        raise CheckFailure(f"{label}: float64 computed in float32 (the angle of position 1000 is off by ~1e-6): "
                           "compute the angles and the rotation in float64 when x is float64")  # fmt: skip
    if x.dtype == torch.bfloat16:
        _expect_float32_inside(out, want, positions, label)
    mistakes = [
        (_rotate(x, positions, base, "half-split"), "pairs feature i with feature i + d/2 (half-split, as some "
         "libraries order them); this course pairs neighbours (2i, 2i+1): x[..., 0::2] with x[..., 1::2]"),
        (_rotate(x, torch.arange(length), base), f"ignores positions and rotates the rows as positions 0 … "
         f"{length - 1}: rotate row t by positions[t]; in a cached step the new keys sit at later positions, and a "
         f"key rotated at the wrong position stays wrong in the cache"),
        (_rotate(x, -positions, base), "rotates the wrong way (by −θ): new 2i = x2i·cos θ − x2i+1·sin θ, "
         "new 2i+1 = x2i·sin θ + x2i+1·cos θ"),
        (_rotate(x, positions, 10000.0), f"ignores base={base:g}: pass it on to rope_angles"),
        (_rope_variant(x, positions, base, lambda a, b, c, s: (a * c - b * s, (a * c - b * s) * s + b * c)),
         "the new 2i is used to compute the new 2i+1: compute both from the old pair, new 2i+1 = x2i·sin + "
         "x2i+1·cos with the x2i from before the update"),
        (_rope_variant(x, positions, base, lambda a, b, c, s: (a * s - b * c, a * c + b * s)), "sin and cos are "
         "swapped: new 2i = x2i·cos − x2i+1·sin, new 2i+1 = x2i·sin + x2i+1·cos"),
        (_rope_variant(x, positions, base, lambda a, b, c, s: (a * c - b * s, b)), "only the even features are "
         "rotated: each pair changes both, new 2i+1 = x2i·sin + x2i+1·cos"),
        (torch.cat([want[..., 0::2], want[..., 1::2]], dim=-1), "puts the rotated pairs back as two halves (every "
         "new 2i, then every new 2i+1); put each pair back in place: stack the two on a new last axis, then "
         "flatten(-2)"),
    ]  # fmt: skip
    rtol = tolerance if tolerance != 1e-5 else 1e-4
    expect_close(out, want, "output", label, atol=tolerance, rtol=rtol, mistakes=mistakes)


def _expect_float32_inside(out: Tensor, want: Tensor, positions: Tensor, label: str) -> None:
    """A bfloat16 input whose rows at small positions are right and at large ones wrong: the angles or the
    rotation were computed in bfloat16 (an angle of position 4001 needs more than its 8 bits)."""
    error = (out.double() - want).abs().flatten(0, -3).amax(dim=(0, -1))  # (T,): the worst of each row
    small, wrong = positions < 64, error > 3e-2
    if wrong.any() and not wrong[small].any() and small.any():
        worst = int(error.argmax())
        what = (f"{label}: the rows at large positions are off (by up to {error[worst].item():.2g} at position "
                f"{int(positions[worst])}), the first ones right")  # fmt: skip
        fix = (
            "the angles or the rotation are computed in bfloat16, whose 8 bits hold an angle of thousands of "
            "radians only roughly: compute them in float32, then convert the result to x's dtype"
        )
        raise CheckFailure(f"{what}: {fix}", brief=what)


# -- ex13_3: grouped key/value heads --------------------------------------------------------------


def _grouped_reference(x: Tensor, n_rep: int) -> Tensor:
    """Query head h reads key/value head h // n_rep: a loop over the H query heads."""
    return torch.stack([x[:, h // n_rep] for h in range(x.shape[1] * n_rep)], dim=1)


# (B, Hkv, S, D, n_rep): grouped, one key/value head for all (multi-query), no grouping, one position
_GROUPED_CASES = [(2, 2, 5, 4, 3), (1, 1, 3, 6, 4), (2, 4, 3, 2, 1), (3, 3, 1, 5, 2), (2, 2, 4, 8, 2)]
_GROUPED_CASES_LARGER = [(3, 4, 13, 16, 3), (2, 1, 9, 32, 8), (2, 8, 7, 6, 1), (4, 3, 1, 12, 4), (3, 2, 11, 16, 4)]


@exercise("ex13_3", "transformer_course.grouped:repeat_kv", "medium")
def repeat_kv_cases(larger: bool = False) -> Iterator[Case]:
    """grouped key/value heads: one head per group of query heads

    Nudge: in grouped-query attention each key/value head serves a whole group of neighbouring query heads
    (Ainslie et al. 2023, §2.2).

    Hint: query heads h·n_rep … h·n_rep + n_rep − 1 all read key/value head h: add an axis after the heads
    (x[:, :, None]), expand it to n_rep, and reshape (B, Hkv, n_rep, S, D) to (B, Hkv·n_rep, S, D) — grouped,
    not tiled as x.repeat(1, n_rep, 1, 1) would.
    """
    for b, kv, s, d, n_rep in _GROUPED_CASES_LARGER if larger else _GROUPED_CASES:
        x = torch.randn(b, kv, s, d)
        label = f"x (B, Hkv, S, D) = {tuple(x.shape)}, n_rep={n_rep}: {kv * n_rep} query heads"
        yield Case(label, calls_case(call(x, n_rep)), _judge_grouped, {"query": torch.randn(b, kv * n_rep, 3, d)})


def _judge_grouped(case: Case, got: Outcome) -> None:
    label, (x, n_rep) = case.label, case.args()
    b, kv, s, d = x.shape
    want = _grouped_reference(x, n_rep)
    out = expect_tensor(got.output(), "output", label)
    if n_rep > 1 and out.dim() == 4 and tuple(out.shape) == (b, kv, s * n_rep, d):
        raise CheckFailure(f"{label}: the positions were repeated (axis 2); repeat the heads (axis 1)")
    mistakes = [
        (x.repeat(1, n_rep, 1, 1), f"the heads are tiled (x.repeat(1, n_rep, 1, 1) gives heads 0, 1, …, 0, 1, …): "
         f"query heads 0 … {n_rep - 1} must all read key/value head 0, the next {n_rep} head 1, … (expand a new "
         "axis after the heads, then reshape)"),
        (x.repeat_interleave(n_rep, dim=-1), "the features were repeated (the last axis); repeat the heads (axis 1)"),
        (x.repeat_interleave(n_rep, dim=2).reshape(b, kv * n_rep, s, d), "the positions were repeated (axis 2), then "
         "reshaped into heads, so each head mixes positions: repeat the heads (axis 1)"),
        (x.repeat_interleave(n_rep, dim=0), "the batch was repeated (axis 0); repeat the heads (axis 1)"),
        (x, "x is returned unchanged: each key/value head must appear n_rep times, once per query head it serves"),
    ]  # fmt: skip
    expect_close(out, want, "output", label, atol=0.0, rtol=0.0, mistakes=mistakes)
    query = case.given["query"]
    try:
        theirs = F.scaled_dot_product_attention(query, x, x, enable_gqa=True)  # PyTorch's own grouping
    except TypeError:  # PyTorch before 2.5 has no enable_gqa: the loop above is the reference
        return
    ours = F.scaled_dot_product_attention(query, out, out)
    expect_close(ours, theirs, "attention over the repeated heads (compared with enable_gqa=True)", label)


# -- ex13_4: SwiGLU -------------------------------------------------------------------------------


def _silu(z: Tensor) -> Tensor:
    return z * torch.sigmoid(z)


# (input shape, d_model, d_ff)
_SWIGLU_SIZES = [((2, 5, 12), 12, 20), ((1, 1, 7), 7, 3), ((3, 4, 2, 8), 8, 32), ((6, 16), 16, 40)]
_SWIGLU_SIZES_LARGER = [((4, 13, 32), 32, 72), ((2, 1, 9), 9, 5), ((3, 5, 4, 16), 16, 48), ((21, 48), 48, 128)]


@exercise("ex13_4", "transformer_course.swiglu:SwiGLU.forward", "easy")
def swiglu_cases(larger: bool = False) -> Iterator[Case]:
    """SwiGLU: a gated feed-forward network

    Nudge: a gated linear unit: one projection, through a Swish, gates another before the output projection
    (Shazeer 2020, §2).

    Hint: the gate is silu(self.w1(x)) (F.silu), the value self.w3(x); multiply them feature by feature, apply
    self.dropout to that product, then self.w2.
    """
    from transformer_course.swiglu import SwiGLU  # the course's class: its weights describe the fixture

    sizes = _SWIGLU_SIZES_LARGER if larger else _SWIGLU_SIZES
    for shape, d_model, d_ff in sizes:
        net = SwiGLU(d_model, d_ff).eval()
        x = 2 * torch.randn(*shape)  # scores on both sides of 0, so that silu and ReLU differ
        label = f"x {tuple(x.shape)}, SwiGLU(d_model={d_model}, d_ff={d_ff})"
        yield Case(label, calls_case(call(module(net, d_model, d_ff), x)), _judge_swiglu, {"weights": _swiglu_w(net)})
    shape, d_model, d_ff = sizes[0]
    net = SwiGLU(d_model, d_ff).eval()
    x = torch.randn(*shape)
    label = f"x {tuple(x.shape)} with self.dropout replaced by a module that halves its input"
    spec = module(net, d_model, d_ff) | {"set": {"dropout": fixture("halve")}}
    yield Case(label, calls_case(call(spec, x)), _judge_swiglu, {"weights": _swiglu_w(net), "dropout": 0.5})
    net = SwiGLU(d_model, 64, dropout=0.5).train()
    with torch.no_grad():
        without = net.eval()(x)
    label = f"x {tuple(x.shape)}, SwiGLU(d_model={d_model}, d_ff=64, dropout=0.5) in training mode"
    probe = calls_case(call(module(net.train(), d_model, 64, dropout=0.5), x), no_grad=True)
    yield Case(label, probe, _judge_swiglu_dropout, {"eval": without})


def _swiglu_w(net: nn.Module) -> tuple[Tensor, Tensor, Tensor]:
    return net.w1.weight.detach(), net.w3.weight.detach(), net.w2.weight.detach()


def _swiglu_mistakes(x: Tensor, w1: Tensor, w3: Tensor, w2: Tensor, scale: float) -> Mistakes:
    a, b = x @ w1.T, x @ w3.T  # (..., d_ff): the gate's and the value's projections

    def out(hidden: Tensor) -> Tensor:
        return (scale * hidden) @ w2.T

    return [
        (out(_silu(b) * a), "the gate is on the wrong projection: silu(w3 x) · w1 x; the gate is silu(self.w1(x)), "
         "the value self.w3(x)"),
        (out(torch.relu(a) * b), "uses ReLU; SwiGLU's gate is silu(z) = z·σ(z) (F.silu)"),
        (out(torch.sigmoid(a) * b), "uses σ(z) (that is GLU); SwiGLU's gate is silu(z) = z·σ(z) (F.silu)"),
        (out(F.gelu(a) * b), "uses GELU (that is GEGLU); SwiGLU's gate is silu(z) = z·σ(z) (F.silu)"),
        (out(_silu(a) * _silu(b)), "applies silu to the value too; only the gate self.w1(x) goes through silu"),
        (out(_silu(a * b)), "takes silu of the product; multiply silu(w1 x) by w3 x"),
        (out(_silu(a) + b), "adds the gate to the value; a gated unit multiplies them feature by feature"),
        (out(_silu(a)), "forgets the value w3 x: multiply the gate silu(w1 x) by self.w3(x)"),
        (out(_silu(a) * b) / scale, "never applies self.dropout (on the hidden features, before self.w2)"),
        ((_silu(scale * a) * b) @ w2.T, "applies self.dropout to the gate's input, before silu: apply it to the "
         "hidden features silu(w1 x) · w3 x, before self.w2"),
        ((_silu(scale * a) * scale * b) @ w2.T, "applies self.dropout to the input x: apply it to the hidden "
         "features silu(w1 x) · w3 x, before self.w2"),
    ]  # fmt: skip


def _judge_swiglu_dropout(case: Case, got: Outcome) -> None:
    label, (_, x) = case.label, case.args()
    out = expect_shape(got.output(), tuple(x.shape), "output", label)
    zeros = (out == 0).double().mean().item()
    if zeros > 0.2:
        raise CheckFailure(
            f"{label}: {zeros:.0%} of the outputs are exactly 0: dropout is applied to the output; it goes on the "
            "hidden features, before self.w2"
        )
    if matches(out, case.given["eval"]):
        raise CheckFailure(f"{label}: no dropout in training mode; apply self.dropout to the hidden features")
    expect_finite(out, "output", label)


def _judge_swiglu(case: Case, got: Outcome) -> None:
    label, (_, x), (w1, w3, w2) = case.label, case.args(), case.given["weights"]
    scale = case.given.get("dropout", 1.0)
    x, w1, w3, w2 = x.double(), w1.double(), w3.double(), w2.double()
    want = (scale * _silu(x @ w1.T) * (x @ w3.T)) @ w2.T  # W2 (silu(W1 x) ⊙ W3 x), dropout as a scale
    expect_close(got.output(), want, "output", label, mistakes=_swiglu_mistakes(x, w1, w3, w2, scale))


# -- ex13_5: the online softmax -------------------------------------------------------------------

_LOWEST = torch.finfo(torch.float32).min  # a masked score, as blocked_attention writes it


def _softmax_state(scores: Tensor, values: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(top, total, acc) of all the keys at once, in float64: the maximum of the scores, the sum of
    exp(score − top), and that sum weighting the values.

    Shape:
        scores (..., T, S), values (..., S, Dv) → (..., T, 1), (..., T, 1), (..., T, Dv)
    """
    scores, values = scores.double(), values.double()
    top = scores.max(dim=-1, keepdim=True).values
    weights = torch.exp(scores - top)
    return top, weights.sum(-1, keepdim=True), torch.einsum("...ts,...sd->...td", weights, values)


def _online_case(seen: list[Tensor], new: Tensor, values: Tensor, label: str) -> Case:
    """One update: the state of the blocks ``seen`` (the keys before, none for the first block, in
    float64 then float32), then the block ``new`` of scores (..., T, Sb) with ``values``
    (..., S_seen + Sb, Dv), the last Sb rows being the block's."""
    block = new.shape[-1]
    if seen:
        earlier = torch.cat(seen, dim=-1)
        top, total, acc = (t.float() for t in _softmax_state(earlier, values[..., :-block, :]))
    else:  # the state blocked_attention starts from: no key seen yet
        top = torch.full((*new.shape[:-1], 1), _LOWEST)
        total, acc = torch.zeros_like(top), torch.zeros(*new.shape[:-1], values.shape[-1])
    every = torch.cat([*seen, new], dim=-1)
    probe = calls_case(call(top, total, acc, new, values[..., -block:, :]))
    return Case(label, probe, _judge_online, {"want": _softmax_state(every, values)})


@exercise("ex13_5", "transformer_course.blocked:online_softmax_update", "hard")
def online_softmax_cases(larger: bool = False) -> Iterator[Case]:
    """the online softmax: fold one block of keys into running sums

    Nudge: the online softmax keeps a running maximum and rescales the running sums whenever it grows (Milakov
    and Gimelshein 2018, §3; FlashAttention, §3.1).

    Hint: new_top = torch.maximum(top, the block's largest score per row, keepdim=True); rescale = exp(top −
    new_top) brings the old total and acc to the new maximum; the block's weights are exp(scores − new_top);
    total = total·rescale + their sum over the block; acc = acc·rescale + weights @ values; return (new_top,
    total, acc), not normalised.
    """
    (b, h, t, s, dv), cut = ((3, 4, 9, 24, 16), 10) if larger else ((2, 3, 5, 10, 4), 4)  # larger: hidden cases
    values = torch.randn(b, h, s, dv)
    scores = torch.randn(b, h, t, s)  # (B, H, T, S)
    label = f"a block of {s - cut} keys after one of {cut} (B, H, T = {b}, {h}, {t}; Dv = {dv})"
    yield _online_case([scores[..., :cut]], scores[..., cut:], values, label)
    label = f"the first block ({cut} keys) from the empty state (top at float32's minimum, total and acc 0)"
    yield _online_case([], scores[..., :cut], values[..., :cut, :], label)
    earlier, new = torch.randn(4, 3) - 3.0, torch.randn(4, 5) + 3.0
    label = "a block whose scores are larger than every earlier one (the maximum grows: old sums rescaled)"
    yield _online_case([earlier], new, torch.randn(8, 6), label)
    earlier, new = 30 * torch.randn(3, 4) + 60.0, 30 * torch.randn(3, 2) - 60.0
    label = "a block of much smaller scores (≈ −60) after larger ones (≈ +60): the maximum stays"
    yield _online_case([earlier], new, torch.randn(6, 5), label)
    blocks = [torch.randn(4, 2) for _ in range(3)]
    label = "the fourth block of 2 keys after three others (T = 4)"
    yield _online_case(blocks, torch.randn(4, 2) * 2, torch.randn(8, 3), label)
    earlier, new = torch.randn(3, 4), torch.full((3, 3), _LOWEST)
    label = "a block whose keys are all masked (scores at float32's minimum) after a real block"
    yield _online_case([earlier], new, torch.randn(7, 2), label)
    new = torch.randn(3, 4)
    new[1] = _LOWEST  # a row with nothing to attend to yet: its weights stay uniform, as blocked_attention's
    yield _online_case([], new, torch.randn(4, 2), "the first block, row 1 fully masked (uniform weights)")


def _expect_state(result: object, label: str) -> tuple[Tensor, Tensor, Tensor]:
    if not (isinstance(result, tuple | list) and len(result) == 3):
        raise CheckFailure(f"{label}: return a tuple (top, total, acc), got {kind(result)}")
    return tuple(result)


def _judge_online(case: Case, got: Outcome) -> None:
    label, inputs = case.label, tuple(t.double() for t in case.args())
    new_top, new_total, new_acc = _expect_state(got.output(), label)
    want_top, want_total, want_acc = case.given["want"]
    for what, value, want in (("top", new_top, want_top), ("total", new_total, want_total), ("acc", new_acc, want_acc)):
        expect_shape(value, tuple(want.shape), what, label)
    top_mistakes, total_mistakes, acc_mistakes = _online_mistakes(inputs, case.given["want"])
    expect_close(new_top, want_top, "top (the largest score of every key so far)", label, mistakes=top_mistakes)
    expect_close(new_total, want_total, "total (the sum of exp(score − top) over every key so far)", label,
                 mistakes=total_mistakes)  # fmt: skip
    expect_close(new_acc, want_acc, "acc (exp(score − top) · value summed over every key so far)", label,
                 mistakes=acc_mistakes)  # fmt: skip


def _online_mistakes(inputs: tuple, want: tuple) -> tuple[Mistakes, Mistakes, Mistakes]:
    """The known wrong tops, totals and accs (``inputs``: top, total, acc, scores, values in float64)."""
    top, total, acc, scores, values = inputs
    want_top, want_total, want_acc = want
    rescale, weights = torch.exp(top - want_top), torch.exp(scores - want_top)  # (..., T, 1), (..., T, Sb)
    block_total, block_acc = weights.sum(-1, keepdim=True), weights @ values
    tops = [
        (scores.max(dim=-1, keepdim=True).values, "top is the block's own maximum; keep the running maximum, "
         "torch.maximum(top, the block's): an earlier block may hold larger scores (and exp(old top − new top) "
         "then overflows)"),
        *[(torch.maximum(top, scores.amax(dim=(axis, -1), keepdim=True)), f"the block's maximum is also taken over "
           f"axis {axis}, not over the keys alone: each query row keeps its own maximum, amax(dim=-1, keepdim=True)")
          for axis in range(-2, -scores.dim() - 1, -1) if scores.shape[axis] > 1],
        (top, "top is returned unchanged; return the new running maximum, and subtract it from the scores before "
         "exp (exp of a raw score overflows float32 past ≈ 88)"),
    ]  # fmt: skip
    totals = [
        (total + block_total, "the old total is not rescaled: multiply it by exp(top − new_top) when the maximum "
         "grows (it was summed under the old maximum)"),
        (total / rescale + block_total, "the rescaling is inverted: the old sums are multiplied by exp(top − "
         "new_top) (≤ 1), not exp(new_top − top)"),
        (total * rescale + torch.exp(scores - top).sum(-1, keepdim=True), "the block's weights use the old "
         "maximum; take exp(scores − new_top)"),
        (block_total, "total holds the block's sum only; add the old total, rescaled by exp(top − new_top)"),
    ]  # fmt: skip
    accs = [
        (acc + block_acc, "the old acc is not rescaled: multiply it by exp(top − new_top), as the total"),
        (want_acc / want_total, "acc is normalised (divided by total); keep the plain weighted sum: "
         "blocked_attention divides acc by total once, after the last block"),
        (acc / rescale + block_acc, "the rescaling of acc is inverted: multiply it by exp(top − new_top) (≤ 1)"),
        (block_acc, "acc holds the block's weighted values only; add the old acc, rescaled by exp(top − new_top)"),
    ]  # fmt: skip
    return tops, totals, accs
