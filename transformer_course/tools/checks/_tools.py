"""Helpers that turn a wrong answer into a message a student can act on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor


class CheckFailure(AssertionError):
    """A check found a wrong answer; the message says on which input and how."""


def call(impl: Callable, *args: Any, case: str, **kwargs: Any) -> Any:
    """Call the student's code; any exception but NotImplementedError becomes a CheckFailure
    naming the case. Tensor arguments are compared before/after to catch in-place changes."""
    before = [a.detach().clone() for a in args if isinstance(a, Tensor)]
    try:
        result = impl(*args, **kwargs)
    except NotImplementedError:
        raise
    except CheckFailure:
        raise
    except Exception as error:  # the student's bug, reported with the input that caused it
        raise CheckFailure(f"{case}: raised {type(error).__name__}: {error}") from error
    after = [a for a in args if isinstance(a, Tensor)]
    for i, (old, new) in enumerate(zip(before, after, strict=True)):
        if old.shape != new.shape or not torch.equal(old, new):
            raise CheckFailure(f"{case}: tensor argument #{i + 1} was modified in place; return a new tensor instead")
    return result


def expect_tensor(got: Any, what: str, case: str) -> Tensor:
    if not isinstance(got, Tensor):
        raise CheckFailure(f"{case}: {what} should be a torch.Tensor, got {type(got).__name__}")
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
