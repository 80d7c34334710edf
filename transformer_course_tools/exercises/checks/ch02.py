"""Checks for chapter 02 — positional encoding (paper §3.5).

The reference table is computed here entry by entry with ``math.sin`` / ``math.cos`` from the
paper's formula, independently of the package; the rotation blocks likewise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import torch

from transformer_course_tools.course import PACKAGE
from transformer_course_tools.exercises.probe.calls import call, calls_case, fixture

from ._tools import CheckFailure, Mistakes, expect_close, expect_dtype, expect_shape, name_mistake
from .case import Case, Outcome
from .registry import exercise


def _frequency(column: int, d_model: int) -> float:
    """1 / 10000^(2i / d_model) for the pair 2i, 2i+1 that ``column`` belongs to."""
    return 1.0 / 10000.0 ** ((column - column % 2) / d_model)


def _reference_table(max_len: int, d_model: int, variant: str = "paper") -> torch.Tensor:
    """The table of §3.5, one entry at a time, and the wrong tables students often write."""
    rows = []
    for pos in range(max_len):
        row = []
        for j in range(d_model):
            if variant == "column exponent":  # j / d_model in the exponent for every column
                angle = pos / 10000.0 ** (j / d_model)
            elif variant == "i for 2i":  # the pair index i instead of the even column 2i
                angle = pos / 10000.0 ** ((j // 2) / d_model)
            elif variant == "from 1":
                angle = (pos + 1) * _frequency(j, d_model)
            elif variant == "base 1000":
                angle = pos / 1000.0 ** ((j - j % 2) / d_model)
            elif variant == "positive exponent":  # pos · 10000^(2i/d_model)
                angle = pos / _frequency(j, d_model)
            else:
                angle = pos * _frequency(j, d_model)
            use_sin = j % 2 == 0 or variant == "sines only"
            if variant == "swapped":
                use_sin = not use_sin
            if variant == "halves":  # [sin of every frequency | cos of every frequency]
                half = (d_model + 1) // 2
                i = j if j < half else j - half
                angle, use_sin = pos * _frequency(2 * i, d_model), j < half
            row.append(math.sin(angle) if use_sin else math.cos(angle))
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64).reshape(max_len, d_model)


_WRONG_TABLES = {
    "swapped": "sines and cosines are swapped: even columns 2i hold sin, odd columns 2i+1 hold cos",
    "halves": "the sines fill the first half and the cosines the second half; the paper interleaves them "
    "(column 2i is a sine, column 2i+1 the cosine of the same frequency)",
    "column exponent": "the exponent uses the column index j; both columns 2i and 2i+1 use 2i/d_model "
    "(a sine and its cosine share one frequency)",
    "i for 2i": "the exponent uses the pair index i (0, 1, 2, …): it is 2i/d_model, with 2i the even column "
    "index (0, 2, 4, …)",
    "from 1": "the positions start at 1; the first row is position 0 (sin 0 = 0, cos 0 = 1)",
    "positive exponent": "the positions are multiplied by 10000^(2i/d_model); divide them by it: angle = pos / "
    "10000^(2i/d_model)",
    "base 1000": "the base is 1000; the paper's frequencies are 1/10000^(2i/d_model)",
    "sines only": "every column holds a sine; the odd columns 2i+1 hold the cosine of the same angle",
}


# (max_len, d_model, absolute tolerance): odd sizes, a single position, a single column
_TABLE_CASES = [(10, 8, 1e-5), (7, 5, 1e-5), (1, 4, 1e-6), (4, 1, 1e-5), (3, 2, 1e-5), (100, 64, 1e-4)]
_TABLE_CASES_LARGER = [(40, 32, 1e-5), (23, 17, 1e-5), (2, 6, 1e-6), (9, 1, 1e-5), (11, 2, 1e-5), (200, 96, 1e-4)]


@exercise("ex02_1", "transformer_course.positional:sinusoidal_positional_encoding", "easy")
def sinusoidal_table_cases(larger: bool = False) -> list[Case]:
    """the sinusoidal table PE (max_len, d_model)

    Nudge: each pair of features is a sine and a cosine of the position at its own wavelength, the wavelengths
    forming a geometric progression (paper §3.5).

    Hint: angle = pos / 10000^(2i/d_model) for pos in 0..max_len-1 and 2i = 0, 2, 4, …; put sin(angle) in the
    even columns and cos(angle) in the odd ones. With an odd d_model there is one more sine than cosine.
    """
    return [
        Case(f"case max_len={max_len}, d_model={d_model}", calls_case(call(max_len, d_model)), _judge_table,
             {"atol": atol})
        for max_len, d_model, atol in (_TABLE_CASES_LARGER if larger else _TABLE_CASES)
    ]  # fmt: skip


def _judge_table(case: Case, got: Outcome) -> None:
    label, (max_len, d_model), atol = case.label, case.args(), case.given["atol"]
    try:
        table = got.output()
    except CheckFailure as failure:
        if d_model % 2 == 0:
            raise
        odd = f"d_model is odd: {(d_model + 1) // 2} sine columns, {d_model // 2} cosine"
        raise CheckFailure(f"{failure} ({odd})", brief=failure.brief and f"{failure.brief} ({odd})") from failure
    want = _reference_table(max_len, d_model)
    mistakes = [
        (lambda v=variant: _reference_table(max_len, d_model, v), what) for variant, what in _WRONG_TABLES.items()
    ]
    mistakes.append((want.T, "the table is transposed: one row per position, (max_len, d_model)"))
    expect_close(table, want, "the table", label, atol=atol, mistakes=mistakes)
    expect_dtype(table, torch.float32, "the table", label)


def _pe_module(table: torch.Tensor, dropout: float = 0.0, training: bool = False) -> dict:
    """A learner's PositionalEncoding holding ``table``, built without its __init__ (so that this
    exercise does not depend on the one that writes the sinusoidal table)."""
    return fixture("positional_encoding", package=PACKAGE, table=table, dropout=dropout, training=training)


# (B, T, D, max_len, dtype); the first case has a batch of one, where indexing the table with
# x.size(0) does not crash but silently gives every position the same vector.
_FORWARD_CASES = [
    (1, 6, 8, 10, torch.float32),
    (3, 5, 6, 12, torch.float32),
    (2, 1, 4, 5, torch.float32),  # a sequence of length 1
    (2, 7, 5, 7, torch.float64),  # T == max_len, odd d_model
    (2, 3, 4, 6, torch.float16),
]
_FORWARD_CASES_LARGER = [
    (1, 24, 32, 40, torch.float32),
    (4, 17, 20, 30, torch.float32),
    (3, 1, 12, 8, torch.float32),
    (3, 19, 13, 19, torch.float64),
    (4, 9, 16, 12, torch.float16),
]


@exercise("ex02_2", "transformer_course.positional:PositionalEncoding.forward", "medium")
def positional_encoding_forward_cases(larger: bool = False) -> Iterator[Case]:
    """PositionalEncoding.forward: x + PE[offset : offset+T] (batch-first)

    Nudge: the encoding is added to the embeddings of the positions the sequence occupies, then dropout (paper
    §3.5 and §5.4).

    Hint: x is (B, T, D): the length is x.shape[1], not x.size(0). Add the rows offset … offset+T-1 of self.pe
    (converted to x.dtype), then apply self.dropout; do not change x in place.
    """
    for batch, length, d_model, max_len, dtype in _FORWARD_CASES_LARGER if larger else _FORWARD_CASES:
        table = torch.randn(max_len, d_model)  # any table will do; random rows are all different
        x = torch.randn(batch, length, d_model).to(dtype)
        label = f"case x of shape {(batch, length, d_model)} {dtype}, table ({max_len}, {d_model})"
        yield Case(label, calls_case(call(_pe_module(table), x)), _judge_forward, {"table": table})
    # Dropout (§5.4) applies to the sum x + PE: in training each entry is 0 or 2·(x + PE) with p = 0.5.
    table, x = torch.randn(20, 16), torch.randn(4, 8, 16)
    label = "case x of shape (4, 8, 16) in training mode with dropout p=0.5"
    probe = calls_case(call(_pe_module(table, dropout=0.5, training=True), x))
    yield Case(label, probe, _judge_dropout, {"table": table})
    yield from _offset_cases(larger)


def _judge_forward(case: Case, got: Outcome) -> None:
    label, (_, x), table = case.label, case.args(), case.given["table"]
    batch, length, d_model = x.shape
    out = expect_shape(got.output(), (batch, length, d_model), "the output", label)
    want = x.double() + table[:length].double()[None]  # (B, T, D)
    added = out.double() - x.double()  # (B, T, D)
    if torch.allclose(added, torch.zeros_like(added)):
        raise CheckFailure(f"{label}: the output equals x: the positional table was not added")
    if length > 1 and torch.allclose(added, added[:, :1].expand_as(added), atol=1e-3):
        raise CheckFailure(
            f"{label}: every position of a sequence got the same positional vector; x is batch-first "
            f"(B, T, D), so the length is x.size(1) = {length} (x.size(0) = {batch} is the batch size)"
        )
    expect_dtype(out, x.dtype, "the output", label, fix="keep x's dtype (convert the table with .to(x.dtype))")
    tolerance = 1e-2 if x.dtype == torch.float16 else 1e-5
    rows = table[:length].double()[None]  # (1, T, D)
    mistakes = [
        (rows.expand_as(want), "the output is the positional table alone; return x + PE (then dropout)"),
        (x.double() - rows, "the table is subtracted; add it: x + PE"),
        (x.double() * math.sqrt(d_model) + rows, "x is multiplied by sqrt(d_model); TokenEmbedding scales the "
         "embeddings already: add the table to x as it is"),
        (x.double() + rows * math.sqrt(d_model), "the table is multiplied by sqrt(d_model); add its rows as they "
         "are"),
    ]  # fmt: skip
    if length < len(table):  # rows 1 … T exist
        mistakes.append((x.double() + table[1 : length + 1].double()[None], "the rows 1 … T of the table were "
                         "added: position 0 is row 0, so add self.pe[:T]"))  # fmt: skip
    expect_close(out, want, "the output", label, atol=tolerance, rtol=tolerance, mistakes=mistakes)


def _judge_dropout(case: Case, got: Outcome) -> None:
    label, (_, x), table = case.label, case.args(), case.given["table"]
    out = expect_shape(got.output(), tuple(x.shape), "the output", label)
    total = x + table[: x.shape[1]]  # (B, T, D)
    dropped = out == 0
    if not dropped.any() and torch.allclose(out, total, atol=1e-5):
        raise CheckFailure(f"{label}: nothing was dropped: return self.dropout(x + PE) (paper §5.4)")
    if not dropped.any():
        raise CheckFailure(f"{label}: no entry is zero: apply self.dropout to the sum x + PE, not to a part of it")
    share = dropped.float().mean().item()
    if not 0.3 < share < 0.7:
        raise CheckFailure(f"{label}: {share:.0%} of the entries are zero; expected about 50%")
    expect_close(out[~dropped], 2 * total[~dropped], "the entries that were not dropped", label)


def _offset_cases(larger: bool = False) -> Iterator[Case]:
    """With ``offset=L`` the T rows of x are the positions L … L+T-1 (incremental decoding)."""
    sizes = [(4, 9, 16, 40, 23), (3, 1, 8, 30, 29), (2, 12, 11, 30, 7)] if larger else []
    for batch, length, d_model, max_len, offset in sizes or [(2, 3, 6, 12, 5), (3, 1, 4, 9, 8), (1, 4, 5, 10, 1)]:
        table = torch.randn(max_len, d_model)  # the last case uses the table's last row
        x = torch.randn(batch, length, d_model)
        label = f"case x of shape {(batch, length, d_model)} with offset={offset}, table ({max_len}, {d_model})"
        probe = calls_case(call(_pe_module(table), x, offset=offset))
        yield Case(label, probe, _judge_offset, {"table": table})


def _judge_offset(case: Case, got: Outcome) -> None:
    label, (_, x), table, offset = case.label, case.args(), case.given["table"], case.kwargs()["offset"]
    out = expect_shape(got.output(), tuple(x.shape), "the output", label)
    want = x + table[offset : offset + x.shape[1]]  # (B, T, D)
    if torch.allclose(out, x + table[: x.shape[1]], atol=1e-5):
        raise CheckFailure(
            f"{label}: the rows 0 … T-1 of the table were added; x holds the positions offset … offset+T-1, "
            "so add self.pe[offset : offset + T]"
        )
    expect_close(out, want, "the output", label)


def _rotation_blocks(k: int, d_model: int, frequency: Callable[[int, int], float] = _frequency,
                     swap: bool = False) -> torch.Tensor:  # fmt: skip
    """M_k written out from the angle-addition formulas, one 2×2 block per frequency; a known mistake
    replayed: another ``frequency``, or cos and sin swapped in each block (``swap``)."""
    m = torch.zeros((d_model, d_model), dtype=torch.float64)
    for two_i in range(0, d_model, 2):
        c, s = math.cos(k * frequency(two_i, d_model)), math.sin(k * frequency(two_i, d_model))
        c, s = (s, c) if swap else (c, s)
        # sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b - sin a sin b
        m[two_i, two_i], m[two_i, two_i + 1] = c, s
        m[two_i + 1, two_i], m[two_i + 1, two_i + 1] = -s, c
    return m


_SHIFT_CASES = [(1, 4), (3, 8), (0, 6), (-2, 4), (7, 2), (25, 16), (2, 64)]
_SHIFT_CASES_LARGER = [(5, 12), (11, 32), (0, 10), (-7, 16), (30, 2), (60, 64), (3, 128)]


@exercise("ex02_3", "transformer_course.positional:relative_position_map", "hard")
def relative_position_map_cases(larger: bool = False) -> list[Case]:
    """relative positions: the rotation M_k with PE[pos+k] = M_k PE[pos]

    Nudge: a fixed offset in position rotates each sine/cosine pair by an angle that depends on its frequency
    only (paper §3.5).

    Hint: one 2×2 block per (sin, cos) pair with frequency w = 1/10000^(2i/d_model): [[cos wk, sin wk], [-sin
    wk, cos wk]] at rows and columns 2i, 2i+1; zeros elsewhere.
    """
    return [Case(f"case k={k}, d_model={d_model}", calls_case(call(k, d_model)), _judge_rotation)
            for k, d_model in (_SHIFT_CASES_LARGER if larger else _SHIFT_CASES)]  # fmt: skip


def _layout_mistakes(want: torch.Tensor) -> Mistakes:
    """M_k with its blocks laid out as halves, or with the signs of its sin terms wrong."""
    d_model = want.shape[0]
    halves = torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])  # feature 2i → i, 2i+1 → d/2 + i
    plus, minus = want.clone(), want.clone()
    plus[1::2, 0::2] *= -1  # [[cos, sin], [sin, cos]]
    minus[0::2, 1::2] *= -1  # [[cos, -sin], [-sin, cos]]
    return [
        (want[halves][:, halves], "the blocks are laid out as halves (the sines in the first d_model/2 features): "
         "PE interleaves them, so the pair of frequency w sits at rows and columns 2i, 2i+1"),
        (plus, "both sin terms are +sin, so the block is not a rotation: [[cos wk, sin wk], [-sin wk, cos wk]]"),
        (minus, "both sin terms are -sin, so the block is not a rotation: [[cos wk, sin wk], [-sin wk, cos wk]]"),
    ]  # fmt: skip


def _judge_rotation(case: Case, got: Outcome) -> None:
    label, (k, d_model) = case.label, case.args()
    m = expect_shape(got.output(), (d_model, d_model), "M_k", label)
    want = _rotation_blocks(k, d_model)
    mistakes = [
        (want.T, "M_k turns the wrong way (this is M_(-k)); check the signs of the sin terms"),
        (torch.eye(d_model, dtype=torch.float64), "M_k is the identity: each 2×2 block turns by the angle k·w"),
        (_rotation_blocks(k, d_model, swap=True), "cos and sin are swapped in each block: [[cos wk, sin wk], "
         "[-sin wk, cos wk]]"),
        (_rotation_blocks(1, d_model), f"k is ignored (this is M_1); each block turns by k·w with k={k}"),
        (_rotation_blocks(k, d_model, lambda j, d: 1 / _frequency(j, d)), "the frequency is 10000^(2i/d_model); "
         "it is its inverse, w = 1/10000^(2i/d_model)"),
        (_rotation_blocks(k, d_model, lambda j, d: 1 / 10000.0 ** (j / 2 / d)), "the frequency uses the pair "
         "index i; w = 1/10000^(2i/d_model) with 2i the even column index"),
        (_rotation_blocks(k, d_model) * torch.eye(d_model, dtype=torch.float64), "the sin terms are missing: each "
         "block is [[cos wk, sin wk], [-sin wk, cos wk]]"),
    ]  # fmt: skip
    name_mistake(m, want, mistakes + _layout_mistakes(want), label)
    # the property itself, on an independently computed table: PE[pos + k] = M_k PE[pos]
    first, n = max(0, -k), 40
    table = _reference_table(first + n + abs(k), d_model)
    moved = table[first : first + n] @ m.double().T  # row vectors: (M PE[pos])ᵀ = PE[pos]ᵀ Mᵀ
    expect_close(moved, table[first + k : first + k + n], f"M_k @ PE[pos] for pos = {first}..{first + n - 1}",
                 label, atol=1e-4)  # fmt: skip
    expect_close(m, want, "M_k", label, atol=1e-5)
    expect_dtype(m, torch.float32, "M_k", label)
