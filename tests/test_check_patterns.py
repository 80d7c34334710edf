"""The patterns ``expect_close`` and ``expect_equal`` name when values differ (issue 30, item 2): each
only when it holds exactly, never for a difference it does not explain."""

from __future__ import annotations

import pytest
import torch

from transformer_course_tools.exercises.checks._tools import (
    CheckFailure,
    expect_close,
    expect_equal,
    expect_finite,
    matches,
    mistakes_met,
    name_mistake,
    pattern,
)

WANT = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0))  # (B, T, S)


def _message(check, *args, **kwargs) -> str:
    with pytest.raises(CheckFailure) as failure:
        check(*args, **kwargs)
    return str(failure.value)


def test_a_constant_ratio_is_said_and_named_by_the_numbers_the_case_knows() -> None:
    message = _message(expect_close, WANT * 4, WANT, "scores", "case", names={"sqrt(d_k)": 2.0, "d_k": 4.0})
    assert message.startswith("case: scores has 24 wrong value(s) out of 24; at index")  # the existing message first
    assert message.endswith(
        "; every value is 4 × the expected one (4 = d_k): is a scale multiplied instead of divided, or left out?"
    )
    assert "(0.5 = 1/sqrt(d_k))" in _message(expect_close, WANT / 2, WANT, "scores", "case", names={"sqrt(d_k)": 2.0})
    # no name fits: the number alone, no guess at a cause (÷ √S for ÷ √d_k is not "multiplied instead of divided")
    assert pattern(WANT * 3, WANT, 1e-5, 1e-4) == "every value is 3 × the expected one"


def test_a_sign_flip() -> None:
    assert _message(expect_close, -WANT, WANT, "x", "case").endswith(
        "; every value is −1 × the expected one: a sign is flipped"
    )


def test_a_transposed_result_whether_its_shape_differs_or_not() -> None:
    square = torch.randn(2, 4, 4)  # (B, T, T)
    assert _message(expect_close, square.transpose(-1, -2), square, "x", "case").endswith(
        "; it is the expected result transposed (its last two dimensions swapped)"
    )
    assert _message(expect_close, WANT.transpose(-1, -2), WANT, "x", "case") == (
        "case: x should have shape (2, 3, 4), got (2, 4, 3); "
        "it is the expected result transposed (its last two dimensions swapped)"
    )


def test_values_shifted_by_one_position() -> None:
    later = torch.cat([torch.zeros(2, 3, 1), WANT[..., :-1]], dim=-1)  # got[..., 1:] == want[..., :-1]
    assert pattern(later, WANT, 1e-5, 1e-4) == (
        "the values are shifted one position later along dimension 2: got[..., 1:] equals the expected[..., :-1]"
    )
    earlier = torch.cat([WANT[:, 1:], torch.zeros(2, 1, 4)], dim=1)
    assert pattern(earlier, WANT) == (
        "the values are shifted one position earlier along dimension 1: got[:, :-1] equals the expected[:, 1:]"
    )
    causal = torch.ones(4, 4, dtype=torch.bool).tril()  # a mask one diagonal off: an exact shift (expect_equal)
    assert _message(expect_equal, torch.ones(4, 4, dtype=torch.bool).tril(1), causal, "mask", "case").endswith(
        "; the values are shifted one position earlier along dimension 0: got[:-1] equals the expected[1:]"
    )  # (and later along dimension 1: the first dimension that explains it is named)


def test_nan_only_in_fully_masked_rows_is_said_and_nan_elsewhere_is_not() -> None:
    out = torch.ones(1, 3, 4)  # (B, T, D)
    out[0, 1] = float("nan")
    empty = torch.tensor([False, True, False])  # (T,): row 1 has every position masked
    assert _message(expect_finite, out, "output", "case", empty_rows=empty) == (
        "case: output contains 4 NaN and 0 infinite values; rows with every position masked give NaN: "
        "use torch.finfo(dtype).min or handle empty rows"
    )
    out[0, 2, 0] = float("nan")  # a row with positions left: not the empty-row mistake
    assert _message(expect_finite, out, "output", "case", empty_rows=empty) == (
        "case: output contains 5 NaN and 0 infinite values"
    )


def test_a_difference_no_pattern_explains_adds_no_sentence() -> None:
    noise = WANT + 0.1 * torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(1))
    message = _message(expect_close, noise, WANT, "x", "case")
    assert message.endswith(")") and "; every" not in message and "shifted" not in message, message
    assert pattern(noise, WANT, 1e-5, 1e-4) == ""
    assert pattern(WANT * 4 + 1e-2, WANT, 1e-5, 1e-4) == ""  # almost a ratio is no ratio
    assert pattern(torch.zeros(2, 3), torch.ones(2, 3)) == ""  # a constant want: no shift, a ratio of 0 says nothing
    assert pattern(torch.tensor(3.4), torch.tensor(4.25)) == ""  # one value: any ratio would "hold"
    assert pattern(torch.tensor([0.0, 3.0]), torch.tensor([3.0, 5.0])) == ""  # a shift seen at one value only
    ids = torch.tensor([[5, 6, 7, 8]])
    assert _message(expect_equal, torch.tensor([[5, 6, 9, 8]]), ids, "ids", "case") == (
        "case: ids differs at 1 position(s); at (0, 2) expected 7, got 9"
    )


def test_a_known_wrong_answer_is_named_and_only_where_it_differs_from_the_right_one() -> None:
    """name_mistake (issue 30, item 1): the first known mistake that gives the learner's answer is said;
    a mistake that gives the right answer on this case says nothing; a right answer raises nothing."""
    mistakes = [(WANT * 2, "the scale is doubled"), (lambda: WANT.flip(-1), "the keys are reversed")]
    assert _message(name_mistake, WANT.flip(-1), WANT, mistakes, "case") == "case: the keys are reversed"
    assert _message(expect_close, WANT * 2, WANT, "x", "case", mistakes=mistakes) == "case: the scale is doubled"
    name_mistake(WANT, WANT, mistakes, "case")  # the right answer
    name_mistake(WANT + 1, WANT, [(WANT, "no mistake on this case")], "case")  # a wrong answer no mistake explains
    same = [(WANT + 0, "a mistake this case cannot show"), (WANT + 1, "one it can")]
    assert _message(name_mistake, WANT + 1, WANT, same, "case") == "case: one it can"


def test_the_mistakes_a_judge_is_given_are_listed_as_met_whatever_the_answer() -> None:
    """mistakes_met (what tests/test_attempts.py reads to find a mistake no wrong answer reaches): each
    mistake of each call, whether the case tells it from the right answer, and whether it was named."""
    mistakes = [(WANT * 2, "the scale is doubled"), (WANT + 0, "a mistake this case cannot show")]
    with mistakes_met() as met:
        name_mistake(WANT, WANT, mistakes, "case")  # the right answer: listed, named for nothing
        with pytest.raises(CheckFailure):
            expect_close(WANT * 2, WANT, "x", "case", mistakes=mistakes)
    assert met == [("case", "the scale is doubled", True, False), ("case", "a mistake this case cannot show", False, False),
                   ("case", "the scale is doubled", True, True), ("case", "a mistake this case cannot show", False, False)]  # fmt: skip
    name_mistake(WANT, WANT, mistakes, "case")  # outside it, nothing is listed
    assert len(met) == 4


def test_mistakes_that_give_the_same_answer_on_a_case_are_all_said() -> None:
    both = [(WANT * 2, "the scale is doubled"), (WANT + WANT, "x is added twice"), (WANT * 2, "the scale is doubled")]
    assert _message(name_mistake, WANT * 2, WANT, both, "case") == (
        "case: 2 known mistakes give this answer on this case: the scale is doubled; or x is added twice"
    )


def test_known_wrong_answers_may_be_numbers_tuples_and_plain_data() -> None:
    assert matches(0.5000001, 0.5, 0.0, 1e-6) and not matches(0.51, 0.5, 0.0, 1e-6)
    assert matches((WANT, 3.0), (WANT.clone(), 3.0)) and not matches((WANT, 3.0), (WANT, 4.0))
    assert not matches((WANT,), (WANT, WANT)) and not matches(WANT, (WANT,))
    assert matches([[0, 1], [2]], [[0, 1], [2]]) and not matches([[0], [1, 2]], [[0, 1], [2]])
    batches = [([[0, 1, 2]], "the budget is the sum")]
    assert _message(name_mistake, [[0, 1, 2]], [[0, 1], [2]], batches, "case") == "case: the budget is the sum"


def test_a_case_that_cannot_tell_mistakes_apart_gives_way_to_a_later_case_that_names_one() -> None:
    """The message names one mistake wherever a case can: the first failing case names two, a later one
    names one of them alone, and the check says the later one (a learner then reads one diagnosis)."""
    from types import SimpleNamespace

    from transformer_course_tools.exercises.checks import get_exercise
    from transformer_course_tools.exercises.checks.runner import verdict

    both = [(WANT * 2, "the scale is doubled: divide by 2"), (WANT + WANT, "x is added twice: add it once")]

    def case(label: str, mistakes: list) -> SimpleNamespace:
        return SimpleNamespace(label=label, judge=lambda c, o: name_mistake(WANT * 2, WANT, mistakes, label))

    probed = {"calls": [], "report": {}}  # what the probe returned: these judges do not read it
    judged = [(case("a", both), probed), (case("b", both[:1]), probed)]
    judged.append((SimpleNamespace(label="c", judge=lambda c, o: None), probed))
    result = verdict(get_exercise("ex03_2"), judged)
    assert result.message == "b: the scale is doubled: divide by 2 (1 of 3 cases passed)"
    alone = verdict(get_exercise("ex03_2"), judged[:1])  # no case tells them apart: both are said
    assert alone.message.startswith("a: 2 known mistakes give this answer on this case: the scale is doubled")


def test_a_check_run_with_a_timeout_lists_the_mistakes_it_meets_too() -> None:
    """run_check(..., timeout=...) judges in a thread of its own, which sees the caller's mistakes_met."""
    from transformer_course_tools.exercises.checks import run_check

    with mistakes_met() as met:
        assert run_check("ex03_1", timeout=60).passed
    assert met
