"""Chapter 10's experiment runner (tools/lm_experiments.py): the data, the metrics and the schedules."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_course.tools.lm_experiments import (
    LONG_LOSS,
    VALID_LOSS,
    LMData,
    LMSetting,
    LMVariant,
    lm_config,
    loss_by_position,
    paper_scheduler,
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
