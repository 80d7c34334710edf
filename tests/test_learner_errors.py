"""An exception from the learner's code is reported with the learner's line and the inputs that
went in (issue 30, item 4): never a bare "raised TypeError: …"."""

from __future__ import annotations

import linecache

import pytest
import torch

from transformer_course_tools.exercises.checks import run_check
from transformer_course_tools.exercises.checks.case import raised
from transformer_course_tools.exercises.probe.calls import call, calls_case, run_case
from transformer_course_tools.exercises.probe.wire import MalformedResult, checked_case


def encode(self, tokens, add_bos=False, add_eos=False):  # no <unk>: an unknown word raises KeyError
    ids = [self.token_to_id[t] for t in tokens]
    return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos


def scores(q, k):
    return q @ k / 2.0  # k not transposed: torch raises, from this line


def test_the_learners_file_line_source_and_inputs_are_named() -> None:
    result = run_check("ex01_1", encode)
    assert result.message.startswith(
        "case encode(['the', 'robot', 'paints', 'a', 'zebra'], add_bos=False, add_eos=False): raised KeyError: "
        f"'zebra' at test_learner_errors.py:{encode.__code__.co_firstlineno + 1} (ids = [self.token_to_id[t] for t in "
        "tokens]); inputs: tokens list of 5"
    ), result.message


def test_the_innermost_learner_frame_is_named_not_torchs_and_shapes_in_the_label_are_not_repeated() -> None:
    result = run_check("ex03_1", scores)
    line = scores.__code__.co_firstlineno + 1
    assert f" at test_learner_errors.py:{line} (return q @ k / 2.0  # k not" in result.message, result.message
    assert "inputs:" not in result.message  # the label "q (2, 3, 4), k (2, 5, 4)" gives the shapes


def test_code_with_no_file_is_named_by_its_function_and_line() -> None:
    namespace: dict = {}
    exec("def my_mask(size, device=None):\n    raise ValueError('no')\n", namespace)  # noqa: S102 - a notebook cell
    result = run_check("ex06_1", namespace["my_mask"], hints="none")
    assert (
        result.message == "causal_mask(5): raised ValueError: no in your function my_mask, line 2 (0 of 5 cases passed)"
    )


def test_a_notebook_cells_comprehension_is_named_by_its_function() -> None:
    cell = "def encode_cell(self, tokens, add_bos=False, add_eos=False):\n    return [self.token_to_id[t] for t in tokens]\n"
    name = "/tmp/ipykernel_0/cell.py"  # what ipykernel names a cell's code (no such file)
    linecache.cache[name] = (len(cell), None, cell.splitlines(True), name)
    namespace: dict = {"__name__": "__main__"}
    exec(compile(cell, name, "exec"), namespace)  # noqa: S102
    message = run_check("ex01_1", namespace["encode_cell"]).message
    assert " in your function encode_cell, line 2 (return [self.token_to_id[t] for t in tokens]); " in message


def test_tensor_inputs_give_their_shape_and_dtype_unless_the_label_does() -> None:
    def odd(x, mask=None):
        raise RuntimeError("bad")

    result = checked_case(run_case(odd, calls_case(call(torch.zeros(2, 3), mask=torch.ones(3, dtype=torch.bool)))))
    error = result["calls"][0]["error"]
    assert error["inputs"] == ["x (2, 3) float32", "mask (3,) bool"]
    assert error["at"].startswith("in your function odd, line") or error["at"].startswith("at test_learner_errors.py")
    assert raised(error, "a case").endswith("; inputs: x (2, 3) float32, mask (3,) bool")
    assert raised(error, "x (2, 3)").endswith("; inputs: mask (3,) bool")


def test_an_error_outside_the_learners_code_names_no_line() -> None:
    result = checked_case(run_case(torch.ones, calls_case(call("not a size"))))
    error = result["calls"][0]["error"]
    assert error["at"] == "" and error["type"] == "TypeError"
    assert raised(error, "case").startswith("raised TypeError: ")


@pytest.mark.parametrize(
    "change",
    [lambda e: e.pop("at"), lambda e: e.update(at=3), lambda e: e.update(inputs=[1]), lambda e: e.update(inputs="x"),
     lambda e: e.update(extra="")],
)  # fmt: skip
def test_the_wire_checks_the_error_record_strictly(change) -> None:
    result = run_case(encode, calls_case(call(None, ["x"])))
    change(result["calls"][0]["error"])
    with pytest.raises(MalformedResult, match="a call's error"):
        checked_case(result)
