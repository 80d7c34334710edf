"""Checks for chapter 16 — int8 weights: a scale per row, the rows made float again, the int8 layer's product.

References are independent of the package: PyTorch's own per-channel quantized tensors
(``torch.quantize_per_channel`` rounds a float matrix to qint8 with one scale per row and zero points
0, ``torch.dequantize`` makes it float again) and its per-channel observer (which finds each row's
symmetric scale), with the same written out row by row in plain Python where those are missing; the
layer's product is ``F.linear`` in float64 on those float weights. Each known mistake is replayed on
the reference, so that the message names it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer_course_tools.exercises.probe.calls import call, calls_case
from transformer_course_tools.exercises.probe.wire import kind

from ._tools import CheckFailure, Mistakes, expect_close, expect_dtype, expect_equal, expect_shape, name_mistake
from .case import Case, Outcome
from .registry import exercise

LEVELS = 127  # symmetric int8: -127 … 127


def _torch_dequantize(q: Tensor, scale: Tensor) -> Tensor:
    """``q · scale`` per row through PyTorch's per-channel quantized tensor, float64; the rows
    written out one by one where quantized tensors are missing (they are deprecated)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            zero_points = torch.zeros(len(scale), dtype=torch.long)
            quantized = torch._make_per_channel_quantized_tensor(q, scale.double(), zero_points, 0)
            return torch.dequantize(quantized).double()
    except (AttributeError, RuntimeError, NotImplementedError):
        return torch.stack([row.double() * float(s) for row, s in zip(q, scale, strict=True)])


def _int8_matrix(out: int, inp: int, seed: int) -> tuple[Tensor, Tensor]:
    """Whole numbers in [-127, 127] with ±127 in each row, and positive scales of several sizes."""
    generator = torch.Generator().manual_seed(seed)
    q = torch.randint(-LEVELS, LEVELS + 1, (out, inp), generator=generator, dtype=torch.int8)
    q[:, 0] = torch.where(torch.arange(out) % 2 == 0, LEVELS, -LEVELS).to(torch.int8)  # each row's largest
    scale = torch.rand(out, generator=generator) * 10.0 ** torch.randint(-3, 1, (out,), generator=generator)
    return q, scale + 1e-4


# -- ex16_1: int8 rows made float again --------------------------------------------------------------

# (out, in, dtype): a wide matrix, a tall one, a square one (scales per column keep its shape), float64,
# bfloat16, one row
_DEQUANTIZE = [(3, 5, None), (6, 2, None), (4, 4, None), (5, 3, torch.float64), (4, 6, torch.bfloat16), (1, 7, None)]
_DEQUANTIZE_LARGER = [(64, 96, None), (200, 17, None), (48, 48, None), (30, 20, torch.float64),
                      (32, 64, torch.bfloat16), (1, 300, None)]  # fmt: skip


def dequantize_rows(q: Tensor, scale: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """The stand-in: row r of the int8 matrix times scale[r], in ``dtype``."""
    return torch.einsum("oi,o->oi", q.to(dtype), scale.to(dtype))


@exercise("ex16_1", "transformer_course.quantize:dequantize_rows", "easy", standin=dequantize_rows)
def dequantize_rows_cases(larger: bool = False) -> Iterator[Case]:
    """int8 rows made float again

    Nudge: an int8 weight matrix stores whole numbers q from -127 to 127 and one float scale per row (per
    output feature); the weight it stands for is q times its row's scale.

    Hint: turn q into the requested dtype, turn the scales into it too, and multiply each row by its own
    scale: the scales (out,) must broadcast along the rows, so give them a trailing axis of size 1.
    """
    for seed, (out, inp, dtype) in enumerate(_DEQUANTIZE_LARGER if larger else _DEQUANTIZE):
        q, scale = _int8_matrix(out, inp, seed)
        args = (q, scale) if dtype is None else (q, scale, dtype)
        what = "" if dtype is None else f", dtype={str(dtype).removeprefix('torch.')}"
        yield Case(f"q ({out}, {inp}) int8, scale ({out},){what}", calls_case(call(*args)), _judge_dequantize)


def _judge_dequantize(case: Case, got: Outcome) -> None:
    label, args = case.label, case.args()
    q, scale = args[:2]
    dtype = args[2] if len(args) > 2 else torch.float32
    want = _torch_dequantize(q, scale)
    tolerance = (1e-2, 1e-2) if dtype == torch.bfloat16 else (1e-9, 1e-6)
    name_mistake(got.output(), want, _dequantize_mistakes(q, scale), label, *tolerance)
    out = expect_shape(got.output(), tuple(q.shape), "the float matrix", label)
    expect_dtype(out, dtype, "the float matrix", label, "turn q and scale into the dtype given")
    expect_close(out, want, "the float matrix", label, *tolerance)


def _dequantize_mistakes(q: Tensor, scale: Tensor) -> Mistakes:
    values, scales = q.double(), scale.double()
    mistakes: list[tuple[Tensor, str]] = [
        (values / scales[:, None], "each row is divided by its scale: multiply q by it (q = weight / scale)"),
        (values * scales[:, None] / LEVELS, "each row is multiplied by scale / 127, as if the scale were the row's "
         "largest magnitude: multiply by the scale itself (it is already max|row| / 127)"),
        (values, "the scales are missing: multiply each row of q by its scale"),
        (values * scales.mean(), "every row is multiplied by one scale (their mean): give each row its own"),
    ]  # fmt: skip
    if q.shape[0] == q.shape[1]:  # a square matrix: scales along the columns keep the shape
        mistakes.append((values * scales[None, :], "the scales multiply the columns (scale[j] for column j): "
                         "scale[r] multiplies row r; give the scales a trailing axis, scale[:, None]"))  # fmt: skip
    return mistakes


# -- ex16_2: a weight matrix rounded to int8, one scale per row --------------------------------------


def _weights(out: int, inp: int, seed: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """Gaussian weights of rows of several sizes; row 1 has a lone outlier, row 2 its largest value
    negative, the last row (from 4 rows on) zeros only."""
    generator = torch.Generator().manual_seed(100 + seed)
    weight = torch.randn(out, inp, generator=generator) * 10.0 ** torch.randint(-2, 2, (out, 1), generator=generator)
    if out > 1:
        weight[1, inp // 2] = 8 * weight[1].abs().max()  # a lone outlier: the other values use few levels
    if out > 2:
        weight[2, -1] = -3 * weight[2].abs().max()  # the largest magnitude is negative
    if out >= 4:
        weight[-1] = 0.0  # a row of zeros
    return weight.to(dtype)


# (out, in, dtype): a wide matrix, a tall one, a square one, float64, a single row, bfloat16 weights
_QUANTIZE = [(5, 8, torch.float32), (9, 3, torch.float32), (6, 6, torch.float32), (4, 5, torch.float64),
             (1, 6, torch.float32), (4, 10, torch.bfloat16)]  # fmt: skip
_QUANTIZE_LARGER = [(64, 96, torch.float32), (300, 20, torch.float32), (40, 40, torch.float32),
                    (24, 33, torch.float64), (1, 257, torch.float32), (16, 64, torch.bfloat16)]  # fmt: skip


@exercise("ex16_2", "transformer_course.quantize:quantize_rows", "medium")
def quantize_rows_cases(larger: bool = False) -> Iterator[Case]:
    """a weight matrix rounded to int8, one scale per row

    Nudge: symmetric absmax quantization gives each row (each output feature) its own scale, the row's
    largest magnitude divided by 127, so that the row's largest value becomes ±127 and every other value
    the nearest whole multiple of the scale; an outlier in one row then costs precision in that row only.

    Hint: work in float32; the scale of each row is the largest absolute value along dim 1 divided by
    127, and a row of zeros gets scale 1 instead of 0 (torch.where); divide each row by its scale (with a
    trailing axis), round to the nearest whole number, clamp to [-127, 127] and turn the result into int8;
    return the whole numbers and the scales.
    """
    for seed, (out, inp, dtype) in enumerate(_QUANTIZE_LARGER if larger else _QUANTIZE):
        weight = _weights(out, inp, seed, dtype)
        zeros = ", its last row zeros" if out >= 4 else ""
        label = f"weight ({out}, {inp}) {str(dtype).removeprefix('torch.')}{zeros}"
        yield Case(label, calls_case(call(weight)), _judge_quantize)


def _torch_scales(weight: Tensor) -> Tensor:
    """Each row's symmetric scale found by PyTorch's per-channel observer (quant_min -127, quant_max 127):
    max|row| / 127; a row of zeros gets 1 (the docstring's rule; the observer gives a tiny number)."""
    from torch.ao.quantization import PerChannelMinMaxObserver

    observer = PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8, qscheme=torch.per_channel_symmetric,
                                        quant_min=-LEVELS, quant_max=LEVELS)  # fmt: skip
    observer(weight.float())
    scale, _ = observer.calculate_qparams()
    return torch.where(weight.float().abs().amax(1) > 0, scale.float(), torch.ones(len(weight)))


def _torch_quantize(weight: Tensor, scale: Tensor) -> Tensor:
    """The whole numbers PyTorch's ``quantize_per_channel`` gives with these scales (zero points 0),
    clamped to [-127, 127]; Python's round row by row where quantized tensors are missing."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            zero_points = torch.zeros(len(scale), dtype=torch.long)
            q = torch.quantize_per_channel(weight.float(), scale.double(), zero_points, 0, torch.qint8).int_repr()
    except (AttributeError, RuntimeError, NotImplementedError):
        rows = [[round(float(v) / float(s)) for v in row] for row, s in zip(weight.float(), scale, strict=True)]
        q = torch.tensor(rows, dtype=torch.int8).reshape(weight.shape)
    return q.clamp(-LEVELS, LEVELS)


def _judge_quantize(case: Case, got: Outcome) -> None:
    label, (weight,) = case.label, case.args()
    result = got.output()
    if not isinstance(result, tuple | list) or len(result) != 2:
        raise CheckFailure(f"{label}: return two tensors (q, scale), got {kind(result)}")
    q, scale = result
    out, inp = weight.shape
    want_scale = _torch_scales(weight)
    if isinstance(scale, Tensor) and scale.numel() == 1 and out > 1:
        raise CheckFailure(f"{label}: scale is one number for the whole matrix: give each row its own scale, "
                           "max|row| / 127, a tensor of shape (out,)")  # fmt: skip
    if isinstance(scale, Tensor) and tuple(scale.shape) == (inp,) and inp != out:
        raise CheckFailure(f"{label}: scale has shape ({inp},), one per column: take the largest magnitude of each "
                           "row (along dim 1), one scale per output feature")  # fmt: skip
    expect_close(scale, want_scale, "scale", label, 0.0, 1e-6, mistakes=_scale_mistakes(weight, want_scale))
    expect_dtype(scale, torch.float32, "scale", label, "compute them in float32 (weight.float())")
    want_q = _torch_quantize(weight, want_scale)
    q = expect_shape(q, tuple(weight.shape), "q", label)
    if q.is_floating_point():
        name_mistake(q, want_q.double(), _rounding_mistakes(weight, want_scale), label, 0.0, 0.0)
    expect_dtype(q, torch.int8, "q", label, "turn the rounded numbers into int8 (.to(torch.int8))")
    ratio = weight.float() / want_scale[:, None]  # where a rounding is a tie (within float error), either is right
    tie = ((ratio - ratio.floor()) - 0.5).abs() < 1e-4
    q_seen = torch.where(tie & ((q.float() - ratio).abs() <= 0.5 + 1e-4), want_q, q)
    expect_equal(q_seen, want_q, "q", label, mistakes=_rounding_mistakes(weight, want_scale))


def _scale_mistakes(weight: Tensor, scale: Tensor) -> Mistakes:
    w = weight.float()
    largest = w.abs().amax(1)
    one = torch.ones_like(largest)

    def kept(value: Tensor) -> Tensor:
        return torch.where(largest > 0, value, one)

    whole = "every row has the scale of the whole matrix: take the largest magnitude of each row (dim 1)"
    inverse = "the scale is 127 / max|row|, the inverse: use max|row| / 127 (weight ≈ q · scale)"
    mistakes = [
        (kept(largest / 128), "each row's scale is max|row| / 128: divide by 127, so that the largest magnitude "
         "becomes ±127 (-128 has no positive partner)"),
        (kept(largest / 255), "each row's scale is max|row| / 255, as for 256 levels from 0: divide by 127 "
         "(symmetric int8 keeps -127 … 127, half of them negative)"),
        (kept(largest), "the scale is the row's largest magnitude: divide it by 127"),
        # a row of zeros: 127 / 0 is inf, which the answer's torch.where(scale > 0, …) keeps; or, guarded, 1
        (127 / largest, inverse),
        (kept(127 / largest), inverse),
        (kept(w.amax(1) / 127), "the scale is the row's largest value, not its largest magnitude: take abs() "
         "first, a negative value can be the largest in size"),
        (torch.where(largest > 0, largest.max() / 127, one), whole),
        (torch.full_like(largest, float(largest.max() / 127)), whole),
        (largest / 127, "a row of zeros gets scale 0 (its q would be 0 / 0): give it scale 1 (torch.where)"),
    ]  # fmt: skip
    if weight.shape[0] == weight.shape[1]:  # square: the columns' scales keep the shape
        columns = w.abs().amax(0)  # the answer's torch.where on these: a row of zeros leaves them > 0
        mistakes.append((torch.where(columns > 0, columns / 127, one), "the scales are the columns' (the largest "
                         "magnitude along dim 0): take each row's, along dim 1"))  # fmt: skip
    return mistakes


def _rounding_mistakes(weight: Tensor, scale: Tensor) -> Mistakes:
    ratio = weight.float() / scale[:, None]  # (out, in)
    return [  # the answer's clamp kept (floor, not rounded): a row's largest ratio may be 127 plus a float error
        (ratio.trunc().to(torch.int8), "q is cut towards zero (trunc or .to(torch.int8) alone): round to the nearest "
         "whole number first (torch.round)"),
        (ratio.floor().clamp(-LEVELS, LEVELS).to(torch.int8), "q is rounded down (floor): round to the nearest "
         "whole number (torch.round)"),
        (ratio.clamp(-LEVELS, LEVELS).double(), "q holds the ratios not rounded: round them to whole numbers "
         "(torch.round) and store int8"),
    ]  # fmt: skip


# -- ex16_3: the int8 layer's product ----------------------------------------------------------------

# (leading shape of x, in, out, bias, dtype of x): a batch of rows, (B, T, in), a square weight, no bias,
# float64, one token
_LINEAR = [((3,), 5, 4, True, torch.float32), ((2, 3), 4, 6, True, torch.float32),
           ((4,), 5, 5, True, torch.float32), ((2,), 6, 3, False, torch.float32),
           ((3,), 4, 7, True, torch.float64), ((1, 1), 8, 4, True, torch.float32)]  # fmt: skip
_LINEAR_LARGER = [((17,), 64, 48, True, torch.float32), ((4, 9), 32, 80, True, torch.float32),
                  ((6,), 40, 40, True, torch.float32), ((5,), 50, 30, False, torch.float32),
                  ((3, 2), 24, 36, True, torch.float64), ((1, 1), 96, 64, True, torch.float32)]  # fmt: skip


@exercise("ex16_3", "transformer_course.quantize:int8_linear", "medium", needs=("ex16_1",))
def int8_linear_cases(larger: bool = False) -> Iterator[Case]:
    """the int8 layer's product

    Nudge: a linear layer with int8 weights computes what a float linear layer computes with the weights
    q · scale: x times the transpose of the float weight, plus the bias; each output feature is a dot
    product with its row of q, scaled by that row's scale.

    Hint: make the weight float in x's dtype with your dequantize_rows (ex16_1), turn the bias (when there is
    one) into x's dtype, and let F.linear multiply x (any leading axes) by the weight's transpose and add
    the bias.
    """
    for seed, (lead, inp, out, has_bias, dtype) in enumerate(_LINEAR_LARGER if larger else _LINEAR):
        generator = torch.Generator().manual_seed(200 + seed)
        q, scale = _int8_matrix(out, inp, 300 + seed)
        x = torch.randn(*lead, inp, generator=generator).to(dtype)
        bias = torch.randn(out, generator=generator) if has_bias else None
        kind_ = "" if dtype == torch.float32 else f" {str(dtype).removeprefix('torch.')}"
        label = f"x {(*lead, inp)}{kind_}, q ({out}, {inp}), scale ({out},), bias {'(' + str(out) + ',)' if has_bias else 'None'}"
        yield Case(label, calls_case(call(x, q, scale, bias)), _judge_int8_linear)


def _judge_int8_linear(case: Case, got: Outcome) -> None:
    label, (x, q, scale, bias) = case.label, case.args()
    weight = _torch_dequantize(q, scale)  # (out, in) float64
    want = F.linear(x.double(), weight, None if bias is None else bias.double())  # (..., out)
    name_mistake(got.output(), want, _linear_mistakes(x, q, scale, bias), label, 1e-5, 1e-4)
    out = expect_shape(got.output(), tuple(want.shape), "the layer's output", label)
    expect_dtype(out, x.dtype, "the layer's output", label, "compute in x's dtype (dequantize_rows(q, scale, x.dtype))")
    expect_close(out, want, "the layer's output", label, 1e-5, 1e-4)


def _linear_mistakes(x: Tensor, q: Tensor, scale: Tensor, bias: Tensor | None) -> Mistakes:
    x, values, scales = x.double(), q.double(), scale.double()
    b = torch.zeros(len(scale), dtype=torch.float64) if bias is None else bias.double()
    weight = values * scales[:, None]  # (out, in)
    mistakes = [
        (x @ values.T + b, "the scales are missing (x times q itself): multiply each row of q by its scale first"),
        (x @ (values / scales[:, None]).T + b, "q is divided by the scales: the weight is q · scale, multiply"),
        ((x @ values.T + b) * scales, "the bias is multiplied by the scales too: scale x @ qᵀ first, then add the bias "
         "as it is (it is stored in float, not in int8)"),
        (x @ weight.T * scales + b, "the scales are applied twice (the weight made float, then the output scaled "
         "again): apply them once"),
    ]  # fmt: skip
    if bias is not None:
        mistakes.append((x @ weight.T, "the bias is left out: add it to the product"))
    if q.shape[0] == q.shape[1]:  # square: these keep the shape
        mistakes += [
            (x @ weight + b, "x is multiplied by the weight, not by its transpose: a linear layer's (out, in) weight "
             "computes x @ Wᵀ (F.linear)"),
            (x @ (values * scales[None, :]).T + b, "the scales multiply q's columns: scale[r] belongs to row r of q "
             "(output feature r); use scale[:, None]"),
        ]  # fmt: skip
    return mistakes
