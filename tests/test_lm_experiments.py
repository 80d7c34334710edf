"""Chapter 14's experiment runner (transformer_course_tools/notebook/lm_experiments.py): the data, the metrics and the schedules."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_course.lm import DecoderOnlyConfig, DecoderOnlyLM
from transformer_course_tools.notebook.experiments import ExperimentResult, Run, VariantResult
from transformer_course_tools.notebook.lm_experiments import (
    LONG_LOSS,
    VALID_LOSS,
    LMData,
    LMSetting,
    LMVariant,
    lm_config,
    loss_by_position,
    paired_consistent,
    paired_init,
    paired_table,
    paired_verdict,
    paper_scheduler,
    plot_lm_experiment,
    run_lm_experiment,
)


@pytest.fixture(scope="module")
def data() -> LMData:
    return LMData.german(n_train=300, n_valid=20, n_long=5, per_long=3)


def test_long_texts_score_only_what_single_sentences_taught(data: LMData) -> None:
    stops = {data.vocab.token_to_id[mark] for mark in (".", "?") if mark in data.vocab}
    for ids, scored in zip(data.long, data.scored, strict=True):
        assert ids[0] == data.vocab.bos_id and ids[-1] == data.vocab.eos_id
        assert len(scored) == len(ids) - 1  # one flag per target
        assert scored[0] and not scored[-1]  # the first word after <bos>, never the final <eos>
        for t in range(1, len(ids) - 1):
            assert scored[t] == (ids[t] not in stops), f"target {t} after {ids[t]}"  # not the word after a full stop
    assert data.train_length == max(len(target) for _, target in data.train) - 1


def test_the_paper_schedule_peaks_at_the_optimizer_rate_after_the_warm_up() -> None:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
    scheduler = paper_scheduler(optimizer, warmup_steps=10, d_model=64)
    rates = []
    for _ in range(40):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert max(rates) == pytest.approx(0.5) and rates.index(max(rates)) == 9  # step 10, counted from 1
    assert rates[39] == pytest.approx(0.5 * math.sqrt(10 / 40))  # then 1/√step


def test_a_tiny_experiment_reports_every_variant_and_seed(data: LMData) -> None:
    variants = {"today": LMVariant(), "layernorm": LMVariant(overrides={"norm": "layernorm"}),
                "paper": LMVariant(schedule="paper")}  # fmt: skip
    result = run_lm_experiment(
        variants, data, LMSetting(d_model=16, n_heads=2, steps=4, warmup_steps=2, seeds=(0, 1)), show=False
    )
    assert list(result.variants) == list(variants)
    for variant in result.variants.values():
        assert len(variant.runs) == 2 and all(
            math.isfinite(v) for v in variant.values(VALID_LOSS) + variant.values(LONG_LOSS)
        )
    assert result.variants["layernorm"].model.config.norm == "layernorm"
    assert "today" in result.table() and "valid loss" in result.verdict(VALID_LOSS, "today", "paper")
    curve = loss_by_position(result.variants["today"].model, data)
    assert curve.shape == (max(len(ids) for ids in data.long) - 1,)


def test_bad_variants_are_refused(data: LMData) -> None:
    with pytest.raises(ValueError, match="schedule must be"):
        LMVariant(schedule="linear")
    with pytest.raises(ValueError, match="variants must be"):
        run_lm_experiment({"x": "rmsnorm"}, data)
    assert lm_config(data, LMSetting(), {"positional": "sinusoidal"}).positional == "sinusoidal"


def _built(seed: int, **overrides) -> DecoderOnlyLM:
    torch.manual_seed(seed)
    config = DecoderOnlyConfig.modern(50, d_model=32, n_heads=4, n_kv_heads=2, n_layers=2, **overrides)
    return paired_init(DecoderOnlyLM(config), seed)


def test_paired_variants_share_every_tensor_whose_name_and_shape_agree() -> None:
    swiglu, relu = _built(3), _built(3, feed_forward="relu", d_ff=48)  # the ReLU network built in another order
    a, b = dict(swiglu.named_parameters()), dict(relu.named_parameters())
    shared = [name for name in a if name in b and a[name].shape == b[name].shape]
    assert any(".self_attn.w_q." in name for name in shared) and "embed.embedding.weight" in shared
    for name in shared:
        assert torch.equal(a[name], b[name]), name
    other = _built(4)
    assert not torch.equal(other.layers[0].self_attn.w_q.weight, swiglu.layers[0].self_attn.w_q.weight)
    plain = []  # without paired_init, the second layer's attention differs: the networks drew other amounts
    for overrides in ({}, dict(feed_forward="relu", d_ff=48)):
        torch.manual_seed(3)
        plain.append(DecoderOnlyLM(DecoderOnlyConfig.modern(50, d_model=32, n_heads=4, n_kv_heads=2, n_layers=2,
                                                            **overrides)))  # fmt: skip
    assert not torch.equal(plain[0].layers[1].self_attn.w_q.weight, plain[1].layers[1].self_attn.w_q.weight)


def test_paired_init_keeps_each_distribution() -> None:
    model = _built(0)
    w = model.layers[0].self_attn.w_q.weight  # (32, 32): Xavier-uniform, bound √(6/64)
    assert w.abs().max() <= math.sqrt(6 / 64) and w.abs().max() > 0.9 * math.sqrt(6 / 64)
    embedding = model.embed.embedding.weight  # N(0, 1/D), the padding row zero
    assert embedding[model.config.pad_id].abs().sum() == 0
    assert abs(embedding[1:].std().item() - 32**-0.5) < 0.02


def _result(differences: list[float], base: list[float] | None = None) -> ExperimentResult:
    """Variants "a" and "b", seed by seed: b's values ``base`` (10.0 each if none), a's b's + ``differences``."""
    base = base if base is not None else [10.0] * len(differences)
    result = ExperimentResult("paired", LMSetting(), None)
    for name, values in (("a", [b + d for b, d in zip(base, differences, strict=True)]), ("b", base)):
        runs = [Run(seed, [], [], {VALID_LOSS: v}, 0.0) for seed, v in enumerate(values)]
        result.variants[name] = VariantResult(name, runs)
    return result


def test_the_paired_verdict_tells_beyond_the_spread_from_consistent_from_neither() -> None:
    apart = _result([0.02, 0.05, 0.03])  # every run of a above every run of b
    sentence = paired_verdict(apart, VALID_LOSS, "a", "b")
    assert "*a*, valid loss: higher than *b* by 0.033 nats on average, in 3 of 3 pairs" in sentence
    assert "**beyond the spread**" in sentence
    overlapping = _result([0.02, 0.05, 0.03], base=[10.0, 9.9, 10.1])  # one sign, but the runs overlap
    assert paired_consistent(overlapping, VALID_LOSS, "a", "b")
    sentence = paired_verdict(overlapping, VALID_LOSS, "a", "b")
    assert "**consistent**, within the spread" in sentence and "3 pairs agree in sign 1 time in 4" in sentence
    below = paired_verdict(_result([-0.1, -0.2, -0.1, -0.3], base=[10.0, 9.0, 10.5, 9.5]), VALID_LOSS, "a", "b")
    assert "lower than *b*" in below and "in 4 of 4 pairs" in below and "1 time in 8" in below
    mixed = _result([0.02, -0.01, 0.03])
    assert not paired_consistent(mixed, VALID_LOSS, "a", "b")
    sentence = paired_verdict(mixed, VALID_LOSS, "a", "b")
    assert "in 2 of 3 pairs" in sentence and "the pairs disagree in sign: no difference" in sentence
    assert not paired_consistent(_result([0.1, 0.2]), VALID_LOSS, "a", "b"), "two seeds: 1 in 2, never enough"


def test_the_paired_table_and_figure_show_each_seeds_difference_from_the_baseline() -> None:
    import matplotlib

    matplotlib.use("Agg")
    result = ExperimentResult("paired", LMSetting(seeds=(0, 1, 2)), None)
    for name, values in (("base", [3.0, 3.1, 3.2]), ("worse", [3.05, 3.2, 3.21])):
        runs = [Run(seed, [4.0] * 30, [], {VALID_LOSS: v, LONG_LOSS: v + 1}, 0.0) for seed, v in enumerate(values)]
        result.variants[name] = VariantResult(name, runs)
    table = paired_table(result)
    assert "base" in table.splitlines()[1] and "3.100 [3.000, 3.200]" in table
    assert "worse" in table.splitlines()[-1] and "+0.050 +0.100 +0.010" in table.splitlines()[-1]
    fig = plot_lm_experiment(result)
    differences_panel = fig.axes[1]
    dots = sorted(line.get_xdata()[0] for line in differences_panel.lines if line.get_marker() in "os^")
    assert dots == pytest.approx([0.01, 0.05, 0.1]), "one dot per seed, variant − baseline"
    assert any(list(line.get_xdata()) == [0.0, 0.0] for line in differences_panel.lines), "the line at 0"
    assert [t.get_text() for t in differences_panel.get_yticklabels()] == ["worse"], "the baseline is not a row"
