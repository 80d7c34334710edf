"""A check tests one exercise: a wrong answer elsewhere cannot fail it, and the course's stand-ins,
which replace the other exercises while a check runs, agree with the worked solutions."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from transformer_course_tools.exercises.checks import EXERCISES, run_check
from transformer_course_tools.exercises.checks.registry import load_checks, writing_order
from transformer_course_tools.exercises.checks.standins import HEADER, job_source, standin_closure, standins
from transformer_course_tools.exercises.needs import named_exercises

from .learner_parts import per_exercise, replace_everywhere

ROOT = Path(__file__).resolve().parent.parent
load_checks()
STANDINS = standins()


def _poison(exercise_id: str):
    def poisoned(*args, **kwargs):
        raise AssertionError(f"the learner's {exercise_id} ran while another exercise was checked")

    return poisoned


@pytest.mark.complete_edition  # the checks pass on the worked answers
@pytest.mark.parametrize("exercise_id", per_exercise(EXERCISES))
def test_a_check_never_runs_another_exercise(exercise_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every other exercise is replaced by a function that fails loudly; the check must still pass."""
    for exercise in EXERCISES.values():  # import every room first, so each binding is replaced (and restored)
        exercise.resolve()
    for other in EXERCISES.values():
        if other.id != exercise_id:
            replace_everywhere(other, _poison(other.id), monkeypatch)
    result = run_check(exercise_id)
    assert result.passed, result.line()


@pytest.mark.complete_edition
def test_a_wrong_multi_head_attention_fails_ex04_3_and_nothing_else(tmp_path: Path) -> None:
    """The issue's example: MultiHeadAttention.forward without W^O, in a copy of the package."""
    package = tmp_path / "transformer_course"
    shutil.copytree(ROOT / "transformer_course", package, ignore=shutil.ignore_patterns("__pycache__"))
    multihead = package / "multihead.py"
    text = multihead.read_text(encoding="utf-8")
    right = "return self.w_o(merge_heads(heads)), weights"
    assert right in text
    multihead.write_text(text.replace(right, "return merge_heads(heads), weights  # W^O forgotten"), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-m", "transformer_course", "check", "--timeout", "0"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    rows = {line.split()[0]: line for line in run.stdout.splitlines() if line.split()[0] in EXERCISES}
    assert set(rows) == set(EXERCISES), run.stdout + run.stderr
    failed = sorted(i for i, line in rows.items() if " passed " not in line)
    assert failed == ["ex04_3"], run.stdout
    assert rows["ex04_3"].split() == ["ex04_3", "failed", "transformer_course/multihead.py"], run.stdout
    run = subprocess.run([sys.executable, "-m", "transformer_course", "check", "ex04_3"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert "apply the output projection W^O" in run.stdout, run.stdout + run.stderr


def _same(a, b) -> None:
    if isinstance(a, tuple):
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    else:
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("exercise_id", per_exercise(STANDINS))
def test_a_stand_in_passes_the_check_of_its_exercise(exercise_id: str) -> None:
    """The exercise's check holds each stand-in to what the learner's answer must do, as a grading job
    gets it (its source alone, with the module's imports and the stand-ins it calls): a new stand-in
    needs no test of its own (the comparisons below add inputs the checks do not try)."""
    namespace: dict = {}
    exec(compile(job_source([exercise_id]), "standins.py", "exec"), namespace)
    result = run_check(exercise_id, namespace["STANDINS"][exercise_id])
    assert result.passed, f"{exercise_id}'s stand-in, as a grading job gets it: {result.line()}"


def test_the_stand_ins_agree_with_the_worked_solutions() -> None:
    from transformer_course import (
        MultiHeadAttention,
        PositionwiseFeedForward,
        apply_mask,
        attention_parameters,
        attention_scores,
        dequantize_rows,
        label_smoothed_cross_entropy,
        layer_parameters,
        merge_heads,
        residual,
        scaled_dot_product_attention,
        split_heads,
    )

    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 7, 4), torch.randn(2, 3, 7, 6)
    mask = torch.rand(2, 1, 5, 7) > 0.4
    mask[0, 0, 1] = False  # a fully masked row
    _same(STANDINS["ex03_1"](q, k), attention_scores(q, k))
    _same(STANDINS["ex03_2"](q @ k.transpose(-2, -1), mask), apply_mask(q @ k.transpose(-2, -1), mask))
    _same(STANDINS["ex03_3"](q, k, v, mask), scaled_dot_product_attention(q, k, v, mask))
    x = torch.randn(2, 5, 12)
    _same(STANDINS["ex04_1"](x, 3), split_heads(x, 3))
    _same(STANDINS["ex04_2"](split_heads(x, 3)), merge_heads(split_heads(x, 3)))
    mha = MultiHeadAttention(12, 3).eval()
    memory = torch.randn(2, 7, 12)
    for need in (True, False):
        _same(STANDINS["ex04_3"](mha, x, memory, memory, mask, need), mha(x, memory, memory, mask, need))
    ffn = PositionwiseFeedForward(12, 20).eval()
    _same(STANDINS["ex05_1"](ffn, x), ffn(x))
    norm, drop, linear = nn.LayerNorm(12), nn.Identity(), nn.Linear(12, 12)
    for norm_first in (False, True):
        _same(STANDINS["ex05_2"](x, linear, norm, drop, norm_first), residual(x, linear, norm, drop, norm_first))
    for sizes in ((12, 3, None, None), (12, 3, 5, 7), (8, 1, None, None)):
        assert STANDINS["ex07_1"](*sizes) == attention_parameters(*sizes)
        assert STANDINS["ex07_1"](*sizes, bias=False) == attention_parameters(*sizes, bias=False)
        for decoder in (False, True):
            layer = (sizes[0], sizes[1], 20, *sizes[2:])
            assert STANDINS["ex07_2"](*layer, decoder=decoder) == layer_parameters(*layer, decoder=decoder)
    logits, target = torch.randn(3, 4, 9), torch.tensor([[3, 4, 0, 0], [5, 6, 7, 8], [0, 0, 0, 0]])
    for smoothing in (0.0, 0.1):
        _same(STANDINS["ex08_3"](logits, target, smoothing, 0), label_smoothed_cross_entropy(logits, target, smoothing))
    q, scale = torch.randint(-127, 128, (5, 7), dtype=torch.int8), torch.rand(5)
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        _same(STANDINS["ex16_1"](q, scale, dtype), dequantize_rows(q, scale, dtype))
    assert set(STANDINS) <= set(EXERCISES)


@pytest.mark.complete_edition
@pytest.mark.parametrize("exercise_id", per_exercise(EXERCISES))
def test_needs_are_what_the_worked_answer_calls(exercise_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``needs`` (declared in the check's registration) is what the solution calls: the other
    exercises its code names, and those whose stand-ins run while its check runs (which covers
    calls through the modules it is given, ``self.self_attn(...)``)."""
    ran: set[str] = set()

    def recording(other: str, standin):
        def call(*args, **kwargs):
            ran.add(other)
            return standin(*args, **kwargs)

        return call

    for other, standin in STANDINS.items():
        monkeypatch.setitem(EXERCISES, other, dataclasses.replace(EXERCISES[other], standin=recording(other, standin)))
    assert run_check(exercise_id).passed
    exercise = EXERCISES[exercise_id]
    called = ran | named_exercises(exercise, EXERCISES)
    assert set(exercise.needs) == called, f"{exercise_id}: declare needs={tuple(sorted(called))} in its @exercise(...)"


def test_the_writing_order_puts_each_exercise_after_those_it_needs() -> None:
    assert writing_order("ex05_3") == [
        "ex03_1", "ex03_2", "ex03_3", "ex04_1", "ex04_2", "ex04_3", "ex05_1", "ex05_2", "ex05_3"
    ]  # fmt: skip
    for exercise_id in EXERCISES:
        order = writing_order(exercise_id)
        assert order[-1] == exercise_id and len(set(order)) == len(order)
        for position, needed in enumerate(order):
            assert set(EXERCISES[needed].needs) <= set(order[:position]), (exercise_id, needed)


def test_exercises_that_need_each_other_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    looped = dataclasses.replace(EXERCISES["ex03_1"], needs=("ex03_3",))
    monkeypatch.setitem(EXERCISES, "ex03_1", looped)
    with pytest.raises(ValueError, match="exercises that need each other: ex03_3 → ex03_1 → ex03_3"):
        writing_order("ex03_3")


@pytest.mark.parametrize("exercise_id", per_exercise(EXERCISES))
def test_a_grading_job_never_gets_the_stand_in_of_its_own_exercise(exercise_id: str) -> None:
    ex = EXERCISES[exercise_id]
    assert STANDINS.get(exercise_id) is None or STANDINS[exercise_id].__name__ not in standin_closure(ex.needs)
    namespace: dict = {}
    exec(compile(job_source(ex.needs), "standins.py", "exec"), namespace)
    assert set(namespace["STANDINS"]) == set(ex.needs)
    assert exercise_id not in namespace["STANDINS"]


def test_a_grading_jobs_stand_ins_use_only_the_header_and_each_other(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in lives beside its check, but a job gets its source alone: two stand-ins of one name are
    refused in one line, and the module a job gets starts with the imports a stand-in may use."""
    everything = job_source(STANDINS)
    assert everything.startswith(HEADER)
    namespace: dict = {}
    exec(compile(everything, "standins.py", "exec"), namespace)
    assert set(namespace["STANDINS"]) == set(STANDINS)

    def attention_scores(scores, mask):  # noqa: ANN001, ANN202 - ex03_2's stand-in under ex03_1's name
        return scores

    twin = dataclasses.replace(EXERCISES["ex03_2"], standin=attention_scores)
    monkeypatch.setitem(EXERCISES, "ex03_2", twin)
    with pytest.raises(ValueError, match="two stand-ins are named attention_scores"):
        job_source(["ex03_3"])
