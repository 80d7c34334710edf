"""Checks of what a chapter says about a training run, with tolerances that hold on every machine.

A trained model is not the same on two computers: another CPU adds its floats in another order
(another vector width, another matrix kernel), and training amplifies the last-bit difference into
a different model. So a chapter never compares a trained result digit for digit, and never quotes
one in its prose. It prints the result in a cell the notebook tests do not compare
(tagged ``nbval-ignore-output``), then checks the claim it makes, with a margin measured over seeds and
CPU paths::

    expect_at_least("exact match on the test split", scores["exact_match"], 95, "%")
    # ✓ exact match on the test split ≥ 95 % (measured: 99.7 %)

The part in brackets is the one thing that differs between machines; the notebook tests replace it
before comparing (``nbval_sanitize.cfg``). A claim that does not hold stops the chapter with
:class:`ClaimNotMet`, which names the claim and the measured value: a broken model fails there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MEASURED = "measured: "  # the bracket nbval_sanitize.cfg replaces before comparing


class ClaimNotMet(AssertionError):
    """A chapter's claim about a training run did not hold on this run."""


def expect(claim: str, holds: bool, measured: str) -> None:
    """Print ``✓ claim (measured: …)``, or raise :class:`ClaimNotMet` if the claim does not hold."""
    if not holds:
        raise ClaimNotMet(
            f"✗ {claim} ({MEASURED}{measured}): this run does not show what the chapter says. "
            "If you changed the course's code, the change broke training; if not, please report it."
        )
    print(f"✓ {claim} ({MEASURED}{measured})")


def expect_at_least(what: str, value: float, bound: float, unit: str = "") -> None:
    """``value >= bound`` (and not NaN)."""
    expect(f"{what} ≥ {bound:g}{_space(unit)}", value >= bound, f"{value:.4g}{_space(unit)}")


def expect_at_most(what: str, value: float, bound: float, unit: str = "") -> None:
    """``value <= bound`` (and not NaN)."""
    expect(f"{what} ≤ {bound:g}{_space(unit)}", value <= bound, f"{value:.4g}{_space(unit)}")


def expect_between(what: str, value: float, low: float, high: float, unit: str = "") -> None:
    """``low <= value <= high`` (and not NaN)."""
    expect(f"{what} in [{low:g}, {high:g}]{_space(unit)}", low <= value <= high, f"{value:.4g}{_space(unit)}")


def expect_above(
    what: str,
    higher: Sequence[float],
    lower: Sequence[float],
    margin: float = 0.0,
    unit: str = "",
    names: tuple[str, str] = ("the higher", "the lower"),
) -> None:
    """Every value of ``higher`` (one per seed) beats every value of ``lower`` by more than ``margin``:
    the difference lies beyond the spread of the seeds. ``names`` name the two groups in the measured
    text, ``(measured: the course: lowest run 50.3 %; PyTorch's default: highest run 3 %)``; a name
    holds no bracket (the notebook tests replace the measured text up to the first ``)``)."""
    if any(")" in name for name in names):
        raise ValueError(f"a name of expect_above holds no ')': {names!r}")
    gap = min(higher) - max(lower)
    holds = not any(math.isnan(v) for v in (*higher, *lower)) and gap > margin
    u = _space(unit)
    expect(what, holds, f"{names[0]}: lowest run {min(higher):.4g}{u}; {names[1]}: highest run {max(lower):.4g}{u}")


def _space(unit: str) -> str:
    return f" {unit}" if unit else ""
