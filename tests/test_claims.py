"""The checks a chapter makes of its claims about a training run (transformer_course_tools/notebook/claims.py): they pass and
print the measured value in a bracket that the notebook tests replace, and fail loudly otherwise."""

from __future__ import annotations

import math

import pytest

from transformer_course_tools.notebook.claims import (
    ClaimNotMet,
    expect,
    expect_above,
    expect_at_least,
    expect_at_most,
    expect_between,
)

from .sanitize import sanitized


def test_a_claim_that_holds_prints_the_claim_and_the_measured_value(capsys) -> None:
    expect_at_least("exact match on the test split", 99.72, 97, "%")
    expect_at_most("largest difference", 1.9e-06, 1e-4)
    expect_between("loss", 2.5, 2, 3)
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "✓ exact match on the test split ≥ 97 % (measured: 99.72 %)",
        "✓ largest difference ≤ 0.0001 (measured: 1.9e-06)",
        "✓ loss in [2, 3] (measured: 2.5)",
    ]


@pytest.mark.parametrize(
    "call",
    [
        lambda: expect_at_least("exact match", 96.9, 97, "%"),
        lambda: expect_at_least("exact match", math.nan, 97, "%"),
        lambda: expect_at_most("difference", 2e-4, 1e-4),
        lambda: expect_between("loss", 3.5, 2, 3),
        lambda: expect_above("a above b", [50, 60], [55, 40]),
        lambda: expect_above("a above b by 10", [50, 60], [45, 40], margin=10),
        lambda: expect_above("a above b", [50, math.nan], [45, 40]),
        lambda: expect("anything", False, "1"),
    ],
)
def test_a_claim_that_does_not_hold_stops_the_chapter_and_names_it(call) -> None:
    with pytest.raises(ClaimNotMet, match="✗ .*measured: .*does not show what the chapter says"):
        call()


def test_the_notebook_tests_compare_the_claim_but_not_the_measured_value() -> None:
    here = "✓ exact match on the test split ≥ 97 % (measured: 99.72 %)"
    elsewhere = "✓ exact match on the test split ≥ 97 % (measured: 98.17 %)"
    assert sanitized(here) == sanitized(elsewhere)
    assert sanitized(here) != sanitized("✓ exact match on the test split ≥ 90 % (measured: 99.72 %)")


def test_a_comparison_names_its_two_groups_and_the_notebook_tests_replace_them(capsys) -> None:
    expect_above("the course beats the default", [50.33, 55.3], [0.7, 3.0], margin=20, unit="%",
                 names=("the course", "PyTorch's default"))  # fmt: skip
    line = capsys.readouterr().out.strip()
    assert line == (
        "✓ the course beats the default (measured: the course: lowest run 50.33 %; PyTorch's default: highest run 3 %)"
    )
    assert sanitized(line) == "✓ the course beats the default (measured: …)"
    with pytest.raises(ValueError, match="no '\\)'"):
        expect_above("a above b", [2], [1], names=("N(0, 1)", "b"))
