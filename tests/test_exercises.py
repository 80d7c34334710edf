"""The exercise system: every check passes on the solutions, rejects typical wrong answers
(mutants), and reports "not implemented" on the generated stubs — so no check is vacuous."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer_course.decoding import top_p_filter
from transformer_course.tools.checks import EXERCISES, run_check
from transformer_course.tools.checks.runner import _load_all
from transformer_course.tools.edition import region_targets, stub_package

try:
    from .mutants import all_mutants
except ImportError:  # the student edition leaves the mutants out (these tests are skipped there)
    all_mutants = dict

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "transformer_course"
_load_all()
MUTANTS = all_mutants()


def _marked(ids):
    return [pytest.param(i, marks=getattr(pytest.mark, i), id=i) for i in sorted(ids)]


@pytest.mark.parametrize("exercise_id", _marked(EXERCISES))
def test_check_passes_on_the_solution(exercise_id: str) -> None:
    result = run_check(exercise_id)
    assert result.passed, result.line()


@pytest.mark.complete_edition
@pytest.mark.parametrize("exercise_id", _marked(EXERCISES))
def test_check_rejects_every_mutant(exercise_id: str) -> None:
    mutants = MUTANTS.get(exercise_id, [])
    assert mutants, f"{exercise_id} has no mutant in tests/mutants/: a check nobody tried to fool proves little"
    for description, impl in mutants:
        result = run_check(exercise_id, impl)
        assert result.status == "failed", f"mutant '{description}' was not caught: {result.line()}"


def test_each_chapter_has_three_exercises_from_easy_to_hard() -> None:
    chapters: dict[str, list[str]] = {}
    for ex in EXERCISES.values():
        chapters.setdefault(ex.chapter, []).append(ex.difficulty)
    for chapter, levels in chapters.items():
        assert len(levels) >= 3, f"chapter {chapter} has {len(levels)} exercises"
        assert levels[0] == "easy", f"chapter {chapter} should open with an easy exercise"


@pytest.mark.complete_edition
def test_every_solution_region_is_a_registered_exercise_and_back() -> None:
    targets = []
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        targets += [t for _, _, t in region_targets(path.read_text(), module)]
    registered = sorted(target for ex in EXERCISES.values() for target in ex.targets)
    assert sorted(targets) == registered


@pytest.mark.complete_edition
def test_checks_report_not_implemented_on_the_stubs(tmp_path: Path) -> None:
    """Generate the stubbed package and run every check against it in a fresh interpreter."""
    import shutil

    shutil.copytree(PACKAGE, tmp_path / "transformer_course", ignore=shutil.ignore_patterns("__pycache__"))
    stub_package(tmp_path / "transformer_course")
    code = (
        "import json; from transformer_course.tools.checks import run_checks; "
        "print(json.dumps({r.id: [r.status, r.message] for r in run_checks()}))"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    results = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(results) == set(EXERCISES)
    for exercise_id, (status, message) in results.items():
        assert status == "not implemented", f"{exercise_id} on the stub: {status}: {message}"
        assert exercise_id in message or "not implemented yet" in message, message


# the mistakes chapter 10's issue names, and the words of the message each must get
_NAMED = {
    "ex10_1": {"_layer_norm_instead": "that is LayerNorm", "_eps_outside_the_root": "adds eps after the square root"},
    "ex10_2": {"_half_split_pairs": "half-split", "_positions_ignored": "ignores positions",
               "_rotates_backwards": "rotates the wrong way"},
    "ex10_3": {"_tiled": "the heads are tiled", "_positions_repeated": "the positions were repeated"},
    "ex10_4": {"_gate_on_w3": "the gate is on the wrong projection", "_relu_gate": "uses ReLU"},
    "ex10_5": {"_block_maximum_only": "keep the running maximum", "_no_rescaling": "the old total is not rescaled",
               "_acc_not_rescaled": "the old acc is not rescaled"},
}  # fmt: skip


# the mistakes chapter 11's issue names, and the words of the message each must get
_NAMED_11 = {
    "ex11_1": {"_global_not_per_head": "as if the 2 heads were one", "_inverse_permutation": "inverse permutation",
               "_pair_flipped": "rotates the other way"},
    "ex11_2": {"_not_transposed": "is not transposed", "_split_inputs_axis": "split along the wrong axis",
               "_reversed_order": "keep the order of the blocks"},
    "ex11_3": {"_decoder_norms_in_the_encoder": "the encoder layer has no cross-attention",
               "_norm2_norm3_swapped": "norm2 and norm3 are mixed up",
               "_cross_attention_as_self": "cross-attention is mapped to self_attn",
               "_queries_and_keys_swapped": "self-attention's W^K"},
}  # fmt: skip


# the error cases issue 30 (item 6) adds, and the message each mutant must get
_NAMED_30 = {
    "ex08_2": {"_strict_at_the_boundary": "top_p=0.75 (tokens 1 and 3 reach top_p exactly: the rest go), row 0: "
                                          "token 0 is outside the nucleus (kept tokens [1, 3])"},
    "ex09_2": {"_accumulates_into_the_first_state": "2 states of torch.float32: the states passed in were changed "
                                                    "(states[0], ['embed.weight', 'layer.bias'])",
               "_integer_buffers_not_compared": "3 states whose integer buffer norm.num_batches differs (1008, 999, "
                                                "1008): an integer buffer that differs cannot be averaged"},
}  # fmt: skip


NAMED_MISTAKES = _NAMED | _NAMED_11 | _NAMED_30  # exercise → {mutant: words its message must hold}


@pytest.mark.complete_edition
@pytest.mark.parametrize("exercise_id", sorted(NAMED_MISTAKES))
def test_checks_name_the_mistake(exercise_id: str) -> None:
    mutants = {impl.__name__: impl for _, impl in MUTANTS[exercise_id]}
    for name, words in NAMED_MISTAKES[exercise_id].items():
        result = run_check(exercise_id, mutants[name])
        assert result.status == "failed" and words in result.message, f"{name}: {result.line()}"


@pytest.mark.complete_edition
def test_the_top_p_boundary_case_is_exact_in_float32() -> None:
    """ex08_2's boundary case: float32's softmax of the logs gives the probabilities back exactly, so the
    mass before token 0 is exactly top_p and the rule (kept while the mass before is < top_p) decides."""
    probs = torch.tensor([0.125, 0.5, 0.0625, 0.25, 0.0625])
    assert torch.equal(probs.log().softmax(-1), probs)
    kept = top_p_filter(probs.log(), 0.75) > float("-inf")
    assert kept.tolist() == [False, True, False, True, False]
