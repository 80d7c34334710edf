"""Checks for chapter 02 — positional encoding (paper §3.5).

The reference table is computed here entry by entry with ``math.sin`` / ``math.cos`` from the
paper's formula, independently of the package; the rotation blocks likewise.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from ._tools import CheckFailure, call, expect_close, expect_dtype, expect_shape
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
            else:
                angle = pos * _frequency(j, d_model)
            use_sin = j % 2 == 0
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
    "i for 2i": "the exponent is 2i/d_model where 2i is the even column index (0, 2, 4, …), not the pair "
    "index i (0, 1, 2, …)",
    "from 1": "the positions start at 1; the first row is position 0 (sin 0 = 0, cos 0 = 1)",
}


# (max_len, d_model, absolute tolerance): odd sizes, a single position, a single column
_TABLE_CASES = [(10, 8, 1e-5), (7, 5, 1e-5), (1, 4, 1e-6), (4, 1, 1e-5), (3, 2, 1e-5), (100, 64, 1e-4)]


@exercise("ex02_1", "transformer_course.positional:sinusoidal_positional_encoding", "easy")
def check_sinusoidal_table(impl: Callable) -> int:
    """the sinusoidal table PE (max_len, d_model)

    Hint: angle = pos / 10000^(2i/d_model) for pos in 0..max_len-1 and 2i = 0, 2, 4, …; put sin(angle) in the
    even columns and cos(angle) in the odd ones. With an odd d_model there is one more sine than cosine.
    """
    for max_len, d_model, atol in _TABLE_CASES:
        case = f"case max_len={max_len}, d_model={d_model}"
        try:
            got = call(impl, max_len, d_model, case=case)
        except CheckFailure as failure:
            if d_model % 2 == 0:
                raise
            odd = f"d_model is odd: {(d_model + 1) // 2} sine columns, {d_model // 2} cosine"
            raise CheckFailure(f"{failure} ({odd})") from failure
        want = _reference_table(max_len, d_model)
        got = expect_shape(got, (max_len, d_model), "the table", case)
        if got.shape == want.shape and not torch.allclose(got.double(), want, atol=atol):
            for variant, explanation in _WRONG_TABLES.items():
                if torch.allclose(got.double(), _reference_table(max_len, d_model, variant), atol=atol):
                    raise CheckFailure(f"{case}: {explanation}")
        expect_close(got, want, "the table", case, atol=atol)
        expect_dtype(got, torch.float32, "the table", case)
    return len(_TABLE_CASES)


def _pe_module(table: torch.Tensor, dropout: float = 0.0) -> nn.Module:
    """A PositionalEncoding holding ``table``, built without calling its __init__ (so that this
    exercise does not depend on the one that writes the sinusoidal table)."""
    from ...positional import PositionalEncoding

    module = PositionalEncoding.__new__(PositionalEncoding)
    nn.Module.__init__(module)
    module.max_len, module.d_model = table.shape
    module.dropout = nn.Dropout(dropout)
    module.register_buffer("pe", table, persistent=False)
    return module


# (B, T, D, max_len, dtype); the first case has a batch of one, where indexing the table with
# x.size(0) does not crash but silently gives every position the same vector.
_FORWARD_CASES = [
    (1, 6, 8, 10, torch.float32),
    (3, 5, 6, 12, torch.float32),
    (2, 1, 4, 5, torch.float32),  # a sequence of length 1
    (2, 7, 5, 7, torch.float64),  # T == max_len, odd d_model
    (2, 3, 4, 6, torch.float16),
]


@exercise("ex02_2", "transformer_course.positional:PositionalEncoding.forward", "medium")
def check_positional_encoding_forward(impl: Callable) -> int:
    """PositionalEncoding.forward: x + PE[offset : offset+T] (batch-first)

    Hint: x is (B, T, D): the length is x.shape[1], not x.size(0). Add the rows offset … offset+T-1 of self.pe
    (converted to x.dtype), then apply self.dropout; do not change x in place.
    """
    for batch, length, d_model, max_len, dtype in _FORWARD_CASES:
        table = torch.randn(max_len, d_model)  # any table will do; random rows are all different
        module = _pe_module(table).eval()
        x = torch.randn(batch, length, d_model).to(dtype)
        case = f"case x of shape {(batch, length, d_model)} {dtype}, table ({max_len}, {d_model})"
        got = expect_shape(call(impl, module, x, case=case), (batch, length, d_model), "the output", case)
        want = x.double() + table[:length].double()[None]  # (B, T, D)
        added = got.detach().double() - x.double()  # (B, T, D)
        if torch.allclose(added, torch.zeros_like(added)):
            raise CheckFailure(f"{case}: the output equals x: the positional table was not added")
        if length > 1 and torch.allclose(added, added[:, :1].expand_as(added), atol=1e-3):
            raise CheckFailure(
                f"{case}: every position of a sequence got the same positional vector; x is batch-first "
                f"(B, T, D), so the length is x.size(1) = {length} (x.size(0) = {batch} is the batch size)"
            )
        expect_dtype(got, dtype, "the output (keep x's dtype: convert the table with .to(x.dtype))", case)
        tolerance = 1e-2 if dtype == torch.float16 else 1e-5
        expect_close(got, want, "the output", case, atol=tolerance, rtol=tolerance)
    # Dropout (§5.4) applies to the sum x + PE: in training each entry is 0 or 2·(x + PE) with p = 0.5.
    table = torch.randn(20, 16)
    module = _pe_module(table, dropout=0.5).train()
    x = torch.randn(4, 8, 16)
    case = "case x of shape (4, 8, 16) in training mode with dropout p=0.5"
    got = expect_shape(call(impl, module, x, case=case), (4, 8, 16), "the output", case).detach()
    total = x + table[:8]  # (B, T, D)
    dropped = got == 0
    if not dropped.any() and torch.allclose(got, total, atol=1e-5):
        raise CheckFailure(f"{case}: nothing was dropped: return self.dropout(x + PE) (paper §5.4)")
    if not dropped.any():
        raise CheckFailure(f"{case}: no entry is zero: apply self.dropout to the sum x + PE, not to a part of it")
    share = dropped.float().mean().item()
    if not 0.3 < share < 0.7:
        raise CheckFailure(f"{case}: {share:.0%} of the entries are zero; expected about 50%")
    expect_close(got[~dropped], 2 * total[~dropped], "the entries that were not dropped", case)
    return len(_FORWARD_CASES) + 1 + _check_offsets(impl)


def _check_offsets(impl: Callable) -> int:
    """With ``offset=L`` the T rows of x are the positions L … L+T-1 (incremental decoding)."""
    cases = [(2, 3, 6, 12, 5), (3, 1, 4, 9, 8), (1, 4, 5, 10, 1)]  # (B, T, D, max_len, offset); the last row used
    for batch, length, d_model, max_len, offset in cases:
        table = torch.randn(max_len, d_model)
        module = _pe_module(table).eval()
        x = torch.randn(batch, length, d_model)
        case = f"case x of shape {(batch, length, d_model)} with offset={offset}, table ({max_len}, {d_model})"
        got = expect_shape(
            call(impl, module, x, offset=offset, case=case), (batch, length, d_model), "the output", case
        )
        want = x + table[offset : offset + length]  # (B, T, D)
        if torch.allclose(got, x + table[:length], atol=1e-5):
            raise CheckFailure(
                f"{case}: the rows 0 … T-1 of the table were added; x holds the positions offset … offset+T-1, "
                "so add self.pe[offset : offset + T]"
            )
        expect_close(got, want, "the output", case)
    return len(cases)


def _rotation_blocks(k: int, d_model: int) -> torch.Tensor:
    """M_k written out from the angle-addition formulas, one 2×2 block per frequency."""
    m = torch.zeros((d_model, d_model), dtype=torch.float64)
    for two_i in range(0, d_model, 2):
        c, s = math.cos(k * _frequency(two_i, d_model)), math.sin(k * _frequency(two_i, d_model))
        # sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b - sin a sin b
        m[two_i, two_i], m[two_i, two_i + 1] = c, s
        m[two_i + 1, two_i], m[two_i + 1, two_i + 1] = -s, c
    return m


_SHIFT_CASES = [(1, 4), (3, 8), (0, 6), (-2, 4), (7, 2), (25, 16), (2, 64)]


@exercise("ex02_3", "transformer_course.positional:relative_position_map", "hard")
def check_relative_position_map(impl: Callable) -> int:
    """relative positions: the rotation M_k with PE[pos+k] = M_k PE[pos]

    Hint: one 2×2 block per (sin, cos) pair with frequency w = 1/10000^(2i/d_model): [[cos wk, sin wk], [-sin
    wk, cos wk]] at rows and columns 2i, 2i+1; zeros elsewhere.
    """
    for k, d_model in _SHIFT_CASES:
        case = f"case k={k}, d_model={d_model}"
        got = expect_shape(call(impl, k, d_model, case=case), (d_model, d_model), "M_k", case)
        want = _rotation_blocks(k, d_model)
        if k != 0 and torch.allclose(got.double(), want.T, atol=1e-5):
            raise CheckFailure(f"{case}: M_k turns the wrong way (this is M_(-k)); check the signs of the sin terms")
        # the property itself, on an independently computed table: PE[pos + k] = M_k PE[pos]
        first, n = max(0, -k), 40
        table = _reference_table(first + n + abs(k), d_model)
        moved = table[first : first + n] @ got.detach().double().T  # row vectors: (M PE[pos])ᵀ = PE[pos]ᵀ Mᵀ
        expect_close(moved, table[first + k : first + k + n], f"M_k @ PE[pos] for pos = {first}..{first + n - 1}",
                     case, atol=1e-4)  # fmt: skip
        expect_close(got, want, "M_k", case, atol=1e-5)
        expect_dtype(got, torch.float32, "M_k", case)
    return len(_SHIFT_CASES)
