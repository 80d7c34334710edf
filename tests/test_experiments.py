"""The experiments learners run (tools/experiments.py): each variant is built from the outside and
does what it says, and every experiment runs end to end at a tiny size."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from transformer_course import Transformer, TransformerConfig
from transformer_course.tools.experiments import (
    EXPERIMENTS,
    FINAL_LOSS,
    ExperimentResult,
    Run,
    Setting,
    VariantResult,
    calibration_error,
    learned_positions,
    plot_experiment,
    reverse_task,
    run_experiment,
    schedule,
    unit_init_scaled,
    without_residuals,
    without_scale,
)


def _config(**overrides) -> TransformerConfig:
    settings = dict(d_model=8, n_heads=2, d_ff=16, n_encoder_layers=2, n_decoder_layers=2, dropout=0.0, max_len=16)
    return TransformerConfig(14, 14, **(settings | overrides))


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randint(4, 14, (3, 6), generator=g), torch.randint(4, 14, (3, 5), generator=g)


def test_without_scale_divides_the_factor_back_out() -> None:
    torch.manual_seed(0)
    plain = Transformer(_config())
    torch.manual_seed(0)
    unscaled = without_scale(_config())  # the same weights, drawn from the same seed
    tokens = torch.tensor([[5, 6, 7]])
    torch.testing.assert_close(unscaled.src_embed(tokens) * 8**0.5, plain.src_embed(tokens))
    assert unscaled.tgt_embed.inner.weight is unscaled.output.weight, "the tied output layer stays tied"


def test_unit_init_draws_the_embeddings_from_a_standard_normal() -> None:
    torch.manual_seed(0)
    model = unit_init_scaled(_config(d_model=64, n_heads=4))
    weight = model.src_embed.weight[1:]  # without the padding row
    assert 0.9 < weight.std().item() < 1.1 and (model.src_embed.weight[0] == 0).all()


def test_without_residuals_is_layernorm_of_the_sublayer_alone() -> None:
    torch.manual_seed(0)
    model = without_residuals(_config(n_encoder_layers=1, n_decoder_layers=1)).eval()
    layer, x = model.encoder.layers[0], torch.randn(2, 5, 8)
    attention = layer.self_attn.inner(x, x, x)[0]  # the wrapped module, called directly
    h = layer.norm1(attention)  # LayerNorm(f(x)): no "x +"
    torch.testing.assert_close(layer(x), layer.norm2(layer.ffn.inner(h)))
    with pytest.raises(ValueError, match="post-LN without dropout"):
        without_residuals(_config(norm_first=True))


def test_learned_positions_replace_the_sinusoids_and_serve_cached_decoding() -> None:
    from transformer_course.decoding import greedy_decode

    torch.manual_seed(0)
    model = learned_positions(_config()).eval()
    assert "embedding.weight" in dict(model.positional.named_parameters())
    src, _ = _inputs()
    torch.testing.assert_close(greedy_decode(model, src, 6), greedy_decode(model, src, 6, use_cache=False))


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


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_experiment_runs_at_a_tiny_size(name: str) -> None:
    tiny = dict(steps=6, n_train=64, n_test=8, batch_size=8, d_model=16, n_heads=2, d_ff=16, seeds=(0, 1))
    if name == "positions":
        tiny["test_lengths"] = (12,)
    result = run_experiment(name, show=False, **tiny)
    assert list(result.variants) == [v.name for v in EXPERIMENTS[name].variants]
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
    tiny = dict(steps=4, n_train=64, n_test=8, batch_size=8, d_model=16, n_heads=2, d_ff=16, seeds=(0, 1, 0))
    result = run_experiment("residuals", show=False, **tiny)
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
    from transformer_course.tools.experiments import BASE, Variant, exact_match, model_config, train_variant
    from transformer_course.training import FitOptions, fit

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
    assert "*a* above *b*, **beyond the spread" in result.verdict("exact match %", "b", "a")
    assert "differ by less than the spread" in result.verdict("exact match %", "a", "c")
    assert "55.0 [50.0, 60.0]" in result.verdict("exact match %", "a", "c")
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
        run_experiment("astrology")


def test_an_unknown_setting_is_named() -> None:
    with pytest.raises(ValueError, match="unknown setting.*stpes.*choose among.*steps"):
        run_experiment("warm-up", stpes=10)
