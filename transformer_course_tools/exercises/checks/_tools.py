"""Helpers that turn a wrong answer into a message a student can act on."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple

import torch
from torch import Tensor

from transformer_course_tools.exercises.probe.wire import kind


class CheckFailure(AssertionError):
    """A check found a wrong answer; the message says on which input and how. ``brief``: the message
    without the fix (what a check at hint level "none" shows); None: the message is "case: what: fix"
    or "case: what; fix" (see :func:`split_fix`). ``named``: how many known mistakes give this answer
    on this case (:func:`name_mistake`; 0: none is named)."""

    def __init__(self, message: str, brief: str | None = None, named: int = 0) -> None:
        super().__init__(message)
        self.brief = brief
        self.named = named


def split_fix(text: str) -> tuple[str, str]:
    """(what is wrong, how to fix it): a mistake's text is written "what: fix" or "what; fix" (the
    first separator outside brackets); a text with neither is all "what"."""
    depth = 0
    for i, char in enumerate(text):
        depth += (char in "([{") - (char in ")]}")
        if depth == 0 and text[i : i + 2] in (": ", "; "):
            return text[:i], text[i + 2 :]
    return text, ""


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


def expect_device(got: Any, device: str, what: str, case: str) -> Tensor:
    """``got`` is a tensor on a device of type ``device`` ("meta": a case that asks for it)."""
    got = expect_tensor(got, what, case)
    if got.device.type != device:
        raise CheckFailure(f"{case}: the {what} is on {got.device}: create it on the requested device")
    return got


def expect_dtype(got: Tensor, dtype: torch.dtype, what: str, case: str, fix: str = "") -> None:
    """``got`` has ``dtype``; else a failure naming both, and ``fix`` after them when given."""
    if got.dtype != dtype:
        raise CheckFailure(f"{case}: {what} should have dtype {dtype}, got {got.dtype}" + (f": {fix}" if fix else ""))


def expect_finite(got: Tensor, what: str, case: str, empty_rows: Tensor | None = None) -> None:
    """No NaN nor infinity; ``empty_rows`` (bool, ``got.shape[:-1]``): the rows whose every position
    is masked, named when the non-finite values lie in those rows only."""
    if got.is_floating_point() and not torch.isfinite(got).all():
        n_nan = int(torch.isnan(got).sum())
        n_inf = int(torch.isinf(got).sum())
        hint = ""
        if empty_rows is not None and not (~torch.isfinite(got).all(-1) & ~empty_rows).any():
            hint = "; rows with every position masked give NaN: use torch.finfo(dtype).min or handle empty rows"
        message = f"{case}: {what} contains {n_nan} NaN and {n_inf} infinite values"
        raise CheckFailure(message + hint, brief=message + hint.split(":")[0])


Mistakes = Iterable[tuple[Any, str]]
"""Known wrong answers of a case: (the wrong answer or a function computing it, such as the
reference replayed with the mistake; what is wrong and how to fix it)."""


class Met(NamedTuple):
    """A known mistake as one case met it: the case, the mistake's text, whether its replay differs from
    the right answer there (else the case cannot name it), and whether the answer judged is that mistake's."""

    case: str
    what: str
    differs: bool
    named: bool


_MET: ContextVar[list[Met] | None] = ContextVar("mistakes met", default=None)


@contextmanager
def mistakes_met() -> Iterator[list[Met]]:
    """Within it, every known mistake a judge is given (:func:`name_mistake`) is listed as it is met:
    what the attempts' test reads to find a mistake that no wrong answer reaches."""
    met: list[Met] = []
    token = _MET.set(met)
    try:
        yield met
    finally:
        _MET.reset(token)


def matches(got: Any, want: Any, atol: float = 1e-5, rtol: float = 1e-4) -> bool:
    """``got`` is a tensor of ``want``'s shape whose every value is within the tolerance, a number
    within it of the float ``want``, a tuple whose each item matches, or equals ``want`` when that
    is other plain data (a list of batches, say)."""
    if isinstance(want, tuple):  # several outputs: each matches
        same_length = isinstance(got, tuple) and len(got) == len(want)
        return same_length and all(matches(g, w, atol, rtol) for g, w in zip(got, want, strict=False))
    if isinstance(want, float):
        return isinstance(got, int | float) and math.isclose(got, want, rel_tol=rtol, abs_tol=atol)
    if not isinstance(want, Tensor):
        return not isinstance(got, Tensor) and bool(got == want)
    if not isinstance(got, Tensor) or got.shape != want.shape:
        return False
    return bool(torch.allclose(got.detach().double(), want.detach().double(), atol=atol, rtol=rtol))


def name_mistake(got: Any, want: Any, mistakes: Mistakes, case: str, atol: float = 1e-5,
                 rtol: float = 1e-4) -> None:  # fmt: skip
    """When ``got`` is not ``want`` but matches a known wrong answer that differs from ``want`` on
    this case, raise saying which mistake it is and how to fix it; where several mistakes give this
    answer on this case, each is said (the case cannot tell them apart). Within :func:`mistakes_met`,
    each mistake is listed as met."""
    met = _MET.get()
    right = matches(got, want, atol, rtol)
    if right and met is None:
        return
    found: list[str] = []
    for wrong, what in mistakes:
        wrong = wrong() if callable(wrong) else wrong
        differs = not matches(want, wrong, atol, rtol)
        named = not right and differs and matches(got, wrong, atol, rtol)
        if met is not None:
            met.append(Met(case, what, differs, named))
        if what not in found and named:
            found.append(what)
    whats = [split_fix(what)[0] for what in found]
    if len(found) == 1:
        raise CheckFailure(f"{case}: {found[0]}", brief=f"{case}: {whats[0]}", named=1)
    if found:
        several = f"{case}: {len(found)} known mistakes give this answer on this case: "
        raise CheckFailure(several + "; or ".join(found), brief=several + "; or ".join(whats), named=len(found))


def _close(got: Tensor, want: Tensor, atol: float, rtol: float) -> bool:
    """Same shape, two values at least (one value matches anything it is divided by), and every
    value within the tolerance (float64 tensors)."""
    return got.shape == want.shape and got.numel() > 1 and bool(((got - want).abs() <= atol + rtol * want.abs()).all())


def pattern(got: Tensor, want: Tensor, atol: float = 0.0, rtol: float = 0.0, names: dict | None = None) -> str:
    """What relates a wrong ``got`` to ``want`` when it holds exactly (within the tolerance): the
    result transposed, a constant ratio (a sign flip; ``names``: numbers the case knows, such as
    ``{"sqrt(d_k)": 2.0}``, that the ratio may be), values shifted one position along a dimension.
    ``""`` when none holds: a sentence is added only for what is certain, never guessed."""
    got, want = got.detach().double(), want.detach().double()
    if got.dim() >= 2 and _close(got.transpose(-1, -2), want, atol, rtol):
        return "it is the expected result transposed (its last two dimensions swapped)"
    ratio = _ratio(got, want)
    if ratio is not None and _close(got / ratio, want, atol, rtol):
        if ratio == -1.0:
            return "every value is −1 × the expected one: a sign is flipped"
        named = _named(ratio, names or {})
        scale = f"every value is {ratio:.4g} × the expected one{named}"
        return f"{scale}: is a scale multiplied instead of divided, or left out?" if named else scale
    for dim in range(got.dim()):
        n = got.shape[dim]
        if n < 2 or _close(want.narrow(dim, 1, n - 1), want.narrow(dim, 0, n - 1), atol, rtol):
            continue  # want is the same at every position along dim: a shift would explain nothing
        at = "[..., " if dim == got.dim() - 1 else "[" + ":, " * dim  # the index up to dim
        if _close(got.narrow(dim, 1, n - 1), want.narrow(dim, 0, n - 1), atol, rtol):
            return f"the values are shifted one position later along dimension {dim}: got{at}1:] equals the expected{at}:-1]"
        if _close(got.narrow(dim, 0, n - 1), want.narrow(dim, 1, n - 1), atol, rtol):
            return f"the values are shifted one position earlier along dimension {dim}: got{at}:-1] equals the expected{at}1:]"
    return ""


def _ratio(got: Tensor, want: Tensor) -> float | None:
    """got / want where want is largest, to 6 significant digits; None where that says nothing
    (want has fewer than two non-zero values, the ratio is 0, 1 or not finite)."""
    if int((want.abs() > 0).sum()) < 2:  # a ratio seen at one value only says nothing
        return None
    largest = int(want.abs().argmax())
    ratio = float(f"{(got.flatten()[largest] / want.flatten()[largest]).item():.6g}")
    return None if ratio in (0.0, 1.0) or not math.isfinite(ratio) else ratio


def _named(ratio: float, names: dict) -> str:
    """ " (2 = sqrt(d_k))" or " (0.5 = 1/sqrt(d_k))" when the ratio is one of ``names``' numbers or its inverse."""
    for name, value in names.items():
        if math.isclose(ratio, value, rel_tol=1e-4):
            return f" ({ratio:.4g} = {name})"
        if math.isclose(ratio * value, 1.0, rel_tol=1e-4):
            return f" ({ratio:.4g} = 1/{name})"
    return ""


def _with_pattern(message: str, got: Tensor, want: Tensor, atol: float = 0.0, rtol: float = 0.0,
                  names: dict | None = None) -> CheckFailure:  # fmt: skip
    """The failure: ``message`` and the :func:`pattern` found, if any (its question left out of the brief)."""
    found = pattern(got, want, atol, rtol, names)
    if not found:
        return CheckFailure(message, brief=message)
    return CheckFailure(f"{message}; {found}", brief=f"{message}; {split_fix(found)[0]}")


def _expect_shape_of(got: Any, want: Tensor, what: str, case: str, atol: float = 0.0, rtol: float = 0.0) -> Tensor:
    """:func:`expect_shape`, saying when a wrong shape is the expected result transposed."""
    got = expect_tensor(got, what, case)
    if got.shape != want.shape and got.dim() >= 2 and _close(got.transpose(-1, -2).double(), want.double(), atol, rtol):
        message = f"{case}: {what} should have shape {tuple(want.shape)}, got {tuple(got.shape)}"
        transposed = "; it is the expected result transposed (its last two dimensions swapped)"
        raise CheckFailure(message + transposed, brief=message + transposed)
    return expect_shape(got, tuple(want.shape), what, case)


def expect_close(got: Any, want: Tensor, what: str, case: str, atol: float = 1e-5, rtol: float = 1e-4,
                 names: dict | None = None, mistakes: Mistakes = ()) -> None:  # fmt: skip
    """The known ``mistakes`` first (:func:`name_mistake`), then shape, finiteness and values; on a
    mismatch name the worst index and both values, and the :func:`pattern` that explains the
    difference, if one does (``names``: numbers a ratio may be)."""
    name_mistake(got, want, mistakes, case, atol, rtol)
    got = _expect_shape_of(got, want, what, case, atol, rtol)
    expect_finite(got, what, case)
    got_f, want_f = got.detach().double(), want.detach().double()
    diff = (got_f - want_f).abs()
    bad = diff > atol + rtol * want_f.abs()
    if bad.any():
        worst = tuple(int(i) for i in torch.nonzero(diff == diff.max())[0])
        message = (
            f"{case}: {what} has {int(bad.sum())} wrong value(s) out of {bad.numel()}; "
            f"at index {worst} expected {want_f[worst].item():.6g}, got {got_f[worst].item():.6g} "
            f"(max abs difference {diff.max().item():.3g})"
        )
        raise _with_pattern(message, got_f, want_f, atol, rtol, names)


def expect_equal(got: Any, want: Any, what: str, case: str, mistakes: Mistakes = ()) -> None:
    if isinstance(want, Tensor):
        name_mistake(got, want, mistakes, case, 0.0, 0.0)
        got = _expect_shape_of(got, want, what, case)
        if got.dtype != want.dtype:
            raise CheckFailure(f"{case}: {what} should have dtype {want.dtype}, got {got.dtype}")
        if not torch.equal(got, want):
            wrong = torch.nonzero(got != want)
            first = tuple(int(i) for i in wrong[0])
            message = (
                f"{case}: {what} differs at {len(wrong)} position(s); at {first} expected "
                f"{want[first].item()}, got {got[first].item()}"
            )
            raise _with_pattern(message, got, want)
    elif got != want:
        raise CheckFailure(f"{case}: {what} should be {want!r}, got {got!r}")


def expect_tuple(got: Any, names: str, case: str, start: str = "return") -> tuple:
    """``got`` is a tuple of as many values as ``names`` lists ("output, weights")."""
    if not (isinstance(got, tuple) and len(got) == len(names.split(", "))):
        raise CheckFailure(f"{case}: {start} a tuple ({names}), got {kind(got)}")
    return got
