"""A check's cases and what its judge reads: the course's side of a probe (see ``tools/probe``).

A check module registers, per exercise, a function that builds its cases::

    @exercise("ex03_1", "transformer_course.attention:attention_scores", "easy")
    def attention_scores_cases() -> list[Case]:
        return [Case("q (2, 3, 4), k (2, 5, 4)", calls_case(call(q, k)), _judge_scores), ...]

Each :class:`Case` holds what the probe runs (plain data: it may travel to a grading child), the
judge that compares the probe's answer with the course's reference, and ``given``: what the judge
needs besides the inputs (the course's own modules, say), which never leaves the course's process.
A judge reads the probe's answer through an :class:`Outcome` and raises :class:`CheckFailure`
saying what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch import Tensor

from transformer_course_tools.exercises.probe.wire import MalformedResult

from ._tools import CheckFailure


@dataclass
class Case:
    label: str  # the case as messages name it: "q (2, 3, 4), k (2, 5, 4)"
    probe: dict  # calls_case(...) or custom_case(...): plain data, run where the learner's code runs
    judge: Callable[[Case, Outcome], None]  # raises CheckFailure (or NotImplementedError) on a wrong answer
    given: dict = field(default_factory=dict)  # for the judge only; never sent to a grading child

    def args(self, i: int = 0) -> list:
        """The positional arguments of call ``i``, as the course built them."""
        return self.probe["calls"][i]["args"]

    def kwargs(self, i: int = 0) -> dict:
        return self.probe["calls"][i]["kwargs"]


class Outcome:
    """The probe's answer for one case: each call's output, error, changes and gradient, and the
    reports read after the calls. Reading a call first raises what went wrong in it or before it:
    the learner's exception (as a CheckFailure naming the case), a stub's NotImplementedError, or
    a tensor argument changed in place."""

    def __init__(self, case: Case, result: dict) -> None:
        self.case, self.calls, self.reports = case, result["calls"], result["report"]

    def output(self, i: int = 0) -> Any:
        return self._call(i)["output"]

    def requires_grad(self, i: int = 0) -> bool | None:
        return self._call(i)["requires_grad"]

    def grad(self, i: int = 0) -> Any:
        return self._call(i)["grad"]

    def changed(self, i: int = 0) -> list[int]:
        """Positions of the positional arguments (tensors and lists) that call ``i`` changed."""
        return self._call(i)["changed"]

    def report(self, key: str) -> Any:
        for i in range(len(self.case.probe.get("calls", self.calls))):
            self._call(i)
        if key not in self.reports:
            raise MalformedResult(f"the report {key!r} is missing")
        return self.reports[key]

    def _call(self, i: int) -> dict:
        for j in range(i + 1):
            if j >= len(self.calls):
                raise MalformedResult(f"call {j + 1} of the case is missing")
            self._raise_problem(j)
        return self.calls[i]

    def _raise_problem(self, j: int) -> None:
        label, record = self.case.label, self.calls[j]
        error = record["error"]
        if error is not None and error["stub"]:
            raise NotImplementedError(error["message"])
        if error is not None:
            message = f"{label}: {raised(error, label)}"
            meaning = error_meaning(error["message"])
            raise CheckFailure(f"{message}; {meaning}" if meaning else message, brief=message)  # brief: no fix
        args = self.case.args(j) if "calls" in self.case.probe else []
        tensors = [k for k, arg in enumerate(args) if isinstance(arg, Tensor)]
        for number, position in enumerate(tensors, start=1):
            if position in record["changed"]:
                raise CheckFailure(
                    f"{label}: tensor argument #{number} was modified in place; return a new tensor instead"
                )


# what PyTorch's common errors mean, and where to look: (a pattern of the error's message, "what: fix")
_ERROR_MEANINGS = [
    (r"same dtype|expected scalar type", "two tensors of different dtypes meet on this line (F.one_hot and "
     "comparisons give int64 or bool tensors): convert one with .to(the other's dtype)"),
    (r"shapes cannot be multiplied", "the inner sizes of this matrix product differ: the last axis of the left "
     "operand must equal the second-to-last axis of the right one"),
    (r"batch2 tensor|batch1 and batch2", "the operands of this batched matrix product do not line up: check which "
     "operand is transposed, and that only its last two axes are swapped, transpose(-2, -1)"),
    (r"must match the size of tensor b", "two operands on this line have shapes that do not broadcast: compare "
     "their shapes axis by axis from the right (a sum or mean without keepdim=True drops its axis)"),
    (r"Class values must be smaller than num_classes", "F.one_hot got a num_classes not above the largest id: "
     "num_classes is the number of rows to pick from, the vocabulary size"),
    (r"arg is an empty sequence", "min() or max() of an empty sequence: stop before nothing is left to choose "
     "from"),
    (r"view size is not compatible", "view needs memory laid out in order, which a transpose, permute or expand "
     "breaks: use .reshape(...)"),
    (r"[Dd]imension out of range|tuple index out of range", "an axis past the end of a tensor's shape: count "
     "the axes this tensor has here"),
    (r"must be Tensor, not tuple|'tuple' object has no attribute|for [^:]*: '(Tensor' and 'tuple|tuple' and "
     r"'Tensor)'", "a tuple was used where a tensor goes (attention returns (output, weights)): take the output "
     "with [0]"),
    (r"shape of the mask .* does not match the shape of the indexed tensor", "a boolean index does not broadcast "
     "(it must have the indexed tensor's shape): masked_fill and torch.where broadcast the mask, "
     "scores.masked_fill(~mask, value)"),
]  # fmt: skip


def error_meaning(message: str) -> str:
    """What a common PyTorch error means ("what: fix"), or "" for any other."""
    return next((meaning for pattern, meaning in _ERROR_MEANINGS if re.search(pattern, message)), "")


def raised(error: dict, label: str) -> str:
    """A call's error as a message says it: "raised KeyError: 'zebra' at vocab.py:57 (ids = ...);
    inputs: tokens list of 5", leaving out the inputs whose shape ``label`` already gives."""
    where = "" if error["where"] == "calling the function" else f" while {error['where']}"
    at = f" {error['at']}" if error["at"] else ""
    shown = [text for text in error["inputs"] if (shape := re.search(r"\(.*\)", text)) is None or shape[0] not in label]
    inputs = f"; inputs: {', '.join(shown)}" if shown else ""
    return f"raised {error['type']}{where}: {error['message']}{at}{inputs}"
