"""Helpers that turn a wrong answer into a message a student can act on."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..probe.wire import kind


class CheckFailure(AssertionError):
    """A check found a wrong answer; the message says on which input and how."""


def same_tensor(got: Any, want: Tensor) -> bool:
    """``got`` is a tensor equal to ``want`` (same shape, same values)."""
    return isinstance(got, Tensor) and got.shape == want.shape and torch.equal(got, want)


def expect_tensor(got: Any, what: str, case: str) -> Tensor:
    if not isinstance(got, Tensor):
        raise CheckFailure(f"{case}: {what} should be a torch.Tensor, got {kind(got)}")
    return got


def expect_shape(got: Any, shape: tuple[int, ...], what: str, case: str) -> Tensor:
    got = expect_tensor(got, what, case)
    if tuple(got.shape) != tuple(shape):
        raise CheckFailure(f"{case}: {what} should have shape {tuple(shape)}, got {tuple(got.shape)}")
    return got


def expect_dtype(got: Tensor, dtype: torch.dtype, what: str, case: str) -> None:
    if got.dtype != dtype:
        raise CheckFailure(f"{case}: {what} should have dtype {dtype}, got {got.dtype}")


def expect_finite(got: Tensor, what: str, case: str) -> None:
    if got.is_floating_point() and not torch.isfinite(got).all():
        n_nan = int(torch.isnan(got).sum())
        n_inf = int(torch.isinf(got).sum())
        raise CheckFailure(f"{case}: {what} contains {n_nan} NaN and {n_inf} infinite values")


def expect_close(got: Any, want: Tensor, what: str, case: str, atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """Shape, finiteness, then values; on a mismatch name the worst index and both values."""
    got = expect_shape(got, tuple(want.shape), what, case)
    expect_finite(got, what, case)
    got_f, want_f = got.detach().double(), want.detach().double()
    diff = (got_f - want_f).abs()
    bad = diff > atol + rtol * want_f.abs()
    if bad.any():
        worst = tuple(int(i) for i in torch.nonzero(diff == diff.max())[0])
        raise CheckFailure(
            f"{case}: {what} has {int(bad.sum())} wrong value(s) out of {bad.numel()}; "
            f"at index {worst} expected {want_f[worst].item():.6g}, got {got_f[worst].item():.6g} "
            f"(max abs difference {diff.max().item():.3g})"
        )


def expect_equal(got: Any, want: Any, what: str, case: str) -> None:
    if isinstance(want, Tensor):
        got = expect_shape(got, tuple(want.shape), what, case)
        if got.dtype != want.dtype:
            raise CheckFailure(f"{case}: {what} should have dtype {want.dtype}, got {got.dtype}")
        if not torch.equal(got, want):
            wrong = torch.nonzero(got != want)
            first = tuple(int(i) for i in wrong[0])
            raise CheckFailure(
                f"{case}: {what} differs at {len(wrong)} position(s); at {first} expected "
                f"{want[first].item()}, got {got[first].item()}"
            )
    elif got != want:
        raise CheckFailure(f"{case}: {what} should be {want!r}, got {got!r}")


def expect_tuple(got: Any, names: str, case: str, start: str = "return") -> tuple:
    """``got`` is a tuple of as many values as ``names`` lists ("output, weights")."""
    if not (isinstance(got, tuple) and len(got) == len(names.split(", "))):
        raise CheckFailure(f"{case}: {start} a tuple ({names}), got {kind(got)}")
    return got
