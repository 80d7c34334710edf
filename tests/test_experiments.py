"""The experiments learners run (transformer_course_tools/notebook/experiments.py): the runner takes the chapters' variants
(build functions or Variants), and every experiment runs end to end at a tiny size."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from transformer_course import LearnedPositionalEmbedding, PositionalEncoding, Transformer
from transformer_course_tools.notebook.experiments import (
    EXPERIMENTS,
    FINAL_LOSS,
    ExperimentResult,
    Run,
    Setting,
    Variant,
    VariantResult,
    calibration_error,
    plot_experiment,
    reverse_task,
    run_experiment,
    schedule,
)

TINY = dict(steps=6, n_train=64, n_test=8, batch_size=8, d_model=16, n_heads=2, d_ff=16, seeds=(0, 1))
# what the chapters pass, in small: a build function, a Variant changing the training, another part
TINY_VARIANTS = {
    "the paper's": Transformer,
    "pre-LN, no warm-up": Variant(norm_first=True, warmup=False),
    "learned positions": lambda config: Transformer(config, positional=LearnedPositionalEmbedding),
}


def test_the_variants_are_named_by_their_keys_and_built_as_given() -> None:
    result = run_experiment("warm-up", TINY_VARIANTS, show=False, **(TINY | {"seeds": (0,)}))
    assert list(result.variants) == list(TINY_VARIANTS)
    models = [v.model for v in result.variants.values()]
    assert isinstance(models[0].positional, PositionalEncoding) and not models[0].encoder.layers[0].norm_first
    assert models[1].encoder.layers[0].norm_first and result.variants["pre-LN, no warm-up"].runs[0].lrs[0] > 0
    assert isinstance(models[2].positional, LearnedPositionalEmbedding)


def test_a_setting_of_ones_own_runs_with_its_measure() -> None:
    setting = Setting(**(TINY | {"seeds": (0,)}))
    result = run_experiment(setting, {"plain": Transformer}, show=False, measure=lambda model, task: {"one": 1.0})
    assert result.name == "experiment" and result.variants["plain"].runs[0].metrics["one"] == 1.0


@pytest.mark.parametrize(
    ("variants", "message"),
    [(None, "non-empty dict"), ({}, "non-empty dict"), ([Transformer], "non-empty dict"),
     ({"x": 3}, "variant 'x' must be a function that builds the model or a Variant")],
)  # fmt: skip
def test_variants_must_be_a_dict_of_builders(variants, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run_experiment("positions", variants, show=False)


def test_the_schedule_without_warmup_starts_at_the_peak_and_then_decays_alike() -> None:
    setting = Setting(d_model=64, warmup_steps=100, lr_scale=0.5)
    warm, cold = schedule(setting, True), schedule(setting, False)
    assert cold(0) == cold(99) == pytest.approx(warm(99)) and warm(0) < warm(99) / 50
    assert [cold(n) for n in (150, 400)] == [warm(n) for n in (150, 400)]


def test_calibration_error_is_zero_for_a_calibrated_model_and_the_gap_otherwise() -> None:
    confidence = torch.tensor([0.9] * 10)
    assert calibration_error(confidence, torch.tensor([True] * 9 + [False])) == pytest.approx(0.0, abs=1e-6)
    assert calibration_error(confidence, torch.tensor([True] * 10)) == pytest.approx(0.1)


def test_the_reverse_task_holds_the_asked_lengths() -> None:
    task = reverse_task(Setting(n_train=50, n_test=4, min_len=3, max_len=5, test_lengths=(8,)))
    assert {len(s) for s, _ in task.train} <= {3, 4, 5} and all(t == s[::-1] for s, t in task.train)
    assert sorted({len(s) for s, _ in task.test}) == [3, 4, 5, 6, 7, 8]
    train = {tuple(s) for s, _ in task.train}
    assert not {tuple(s) for s, _ in task.valid + task.test} & train, "validation and test strings are held out"


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_experiment_runs_at_a_tiny_size(name: str) -> None:
    tiny = TINY | ({"test_lengths": (12,)} if name == "positions" else {})
    variants = dict(list(TINY_VARIANTS.items())[:2])
    result = run_experiment(name, variants, show=False, **tiny)
    assert list(result.variants) == list(variants)
    for variant in result.variants.values():
        assert [run.seed for run in variant.runs] == [0, 1]
        for run in variant.runs:
            assert len(run.losses) == 6 and len(run.lrs) == 6 and run.metrics
            assert run.metrics[FINAL_LOSS] == pytest.approx(sum(run.losses) / 6)  # fewer than 50 steps: all
    table = result.table()
    assert all(v in table for v in result.variants) and "2 seeds: mean [lowest, highest]" in table
    fig = plot_experiment(result)
    assert fig.axes[0].get_title() == "Training loss" and fig.axes[1].get_title()
    plt.close(fig)


def test_the_seeds_draw_different_runs_on_the_same_data() -> None:
    tiny = TINY | {"steps": 4, "seeds": (0, 1, 0)}
    result = run_experiment("residuals", {"with residual connections": Transformer}, show=False, **tiny)
    runs = result.variants["with residual connections"].runs
    assert runs[0].losses == runs[2].losses, "the same seed gives the same run"
    assert runs[0].losses != runs[1].losses, "another seed draws other weights and batches"


def test_a_variant_trains_as_the_run_written_out_by_hand() -> None:
    """train_variant goes through prepare_training with the variant's model and schedule: the same
    losses as seed → model → optimizer → scheduler → batches written out (the experiments' numbers
    do not depend on how the run is put together)."""
    from dataclasses import replace

    from torch.optim.lr_scheduler import LambdaLR

    from transformer_course.batching import batch_stream, encode_pairs
    from transformer_course.schedule import make_optimizer
    from transformer_course.training import FitOptions, fit
    from transformer_course_tools.notebook.experiments import BASE, Variant, exact_match, model_config, train_variant

    setting = replace(BASE, steps=5, n_train=64, n_test=8, batch_size=8, d_model=16, n_heads=2, d_ff=16)
    task, variant = reverse_task(setting), Variant("pre-LN, no warm-up", norm_first=True, warmup=False, smoothing=0.1)
    ours = train_variant(variant, task, setting, exact_match, seed=3)

    torch.manual_seed(3)
    model = Transformer(model_config(task, setting, norm_first=True))
    optimizer = make_optimizer(model)
    scheduler = LambdaLR(optimizer, schedule(setting, warmup=False))
    batches = batch_stream(encode_pairs(task.train, task.src_vocab, task.tgt_vocab), 8, task.tgt_vocab.pad_id, 3)
    options = FitOptions(smoothing=0.1, max_grad_norm=setting.max_grad_norm, progress=False)
    history = fit(model, batches, optimizer, scheduler, setting.steps, options=options)
    assert ours.losses == history.losses and ours.lrs == history.lrs


def _result_with(values: dict[str, list[float]]) -> ExperimentResult:
    result = ExperimentResult("warm-up", Setting(seeds=(0, 1, 2)), task=None)
    for name, scores in values.items():
        runs = [Run(seed, [], [], {"exact match %": v}, 0.0) for seed, v in enumerate(scores)]
        result.variants[name] = VariantResult(name, runs)
    return result


def test_a_difference_counts_only_beyond_the_spread_of_the_seeds() -> None:
    result = _result_with({"a": [50.0, 55.0, 60.0], "b": [40.0, 45.0, 49.0], "c": [48.0, 52.0, 70.0]})
    assert result.beyond_spread("exact match %", "a", "b") and not result.beyond_spread("exact match %", "b", "a")
    assert not result.beyond_spread("exact match %", "a", "c") and not result.beyond_spread("exact match %", "c", "a")
    assert result.verdict("exact match %", "b", "a").endswith("Every run of a is above every run of b.")
    assert "The ranges overlap" in result.verdict("exact match %", "a", "c")
    assert "a 50.0–60.0, c 48.0–70.0." in result.verdict("exact match %", "a", "c")
    assert result.variants["c"].mean("exact match %") == pytest.approx(170 / 3)


def test_paired_differences_compare_the_two_runs_of_each_seed() -> None:
    result = _result_with({"a": [1.2, 1.5, 1.3], "b": [1.1, 1.45, 1.0]})
    assert not result.beyond_spread("exact match %", "a", "b")  # the ranges overlap ...
    pairs = result.paired_differences("exact match %", "a", "b")
    assert pairs == pytest.approx([0.1, 0.05, 0.3])  # ... the pairs do not


def test_a_diverged_seed_is_no_evidence() -> None:
    result = _result_with({"a": [50.0, 55.0, 60.0], "b": [40.0, 45.0, 49.0]})
    result.variants["a"].runs[1] = Run(1, [], [], {}, 0.0, diverged=True)
    assert not result.beyond_spread("exact match %", "a", "b")
    assert "1 of 3 runs diverged" in result.table()


def test_unknown_experiment() -> None:
    with pytest.raises(ValueError, match="choose one of"):
        run_experiment("astrology", {"plain": Transformer})


def test_an_unknown_setting_is_named() -> None:
    with pytest.raises(ValueError, match="unknown setting.*stpes.*choose among.*steps"):
        run_experiment("warm-up", {"plain": Transformer}, stpes=10)
