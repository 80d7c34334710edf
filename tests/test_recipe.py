"""The training recipe of chapter 14 (chapter 13's room): warm-up + cosine decay against closed-form values, and AdamW that
decays the matrices only (one step on zero gradients shrinks each matrix by lr · weight_decay)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from transformer_course.lm import DecoderOnlyConfig, DecoderOnlyLM
from transformer_course.recipe import make_adamw, warmup_cosine_lr, warmup_cosine_scheduler

WARMUP, TOTAL, FLOOR = 10, 110, 0.1


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        (1, 0.1),  # the first step: 1/10 of the peak
        (5, 0.5),
        (10, 1.0),  # end of the warm-up: the peak
        (11, FLOOR + (1 - FLOOR) * 0.5 * (1 + math.cos(math.pi * 1 / 100))),  # just after it
        (60, 0.55),  # half-way through the decay: (1 + 0.1) / 2
        (85, FLOOR + (1 - FLOOR) * 0.5 * (1 + math.cos(math.pi * 0.75))),
        (110, FLOOR),  # the last step: the floor
        (111, FLOOR),  # after the end it stays there
        (10_000, FLOOR),
    ],
)
def test_warmup_cosine_lr_closed_form(step: int, expected: float) -> None:
    assert warmup_cosine_lr(step, WARMUP, TOTAL, FLOOR) == pytest.approx(expected, abs=1e-12)


def test_warmup_cosine_lr_edge_settings() -> None:
    assert warmup_cosine_lr(1, 0, 100) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi / 100)))  # no warm-up
    assert warmup_cosine_lr(100, 0, 100, min_ratio=0.0) == pytest.approx(0.0, abs=1e-12)  # down to zero
    assert warmup_cosine_lr(50, 10, 100, min_ratio=1.0) == 1.0  # a floor of 1: constant after the warm-up
    rates = [warmup_cosine_lr(s, WARMUP, TOTAL) for s in range(1, 130)]
    assert rates[:WARMUP] == sorted(rates[:WARMUP]) and rates[WARMUP - 1 :] == sorted(rates[WARMUP - 1 :], reverse=True)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, 10, 100), "step must be >= 1"),
        ((1, 100, 100), "need 0 <= warmup_steps < total_steps"),
        ((1, -1, 100), "need 0 <= warmup_steps < total_steps"),
        ((1, 0, 0), "need 0 <= warmup_steps < total_steps"),
        ((1, 10, 100, 1.5), "min_ratio must be in"),
        ((1, 10, 100, -0.1), "min_ratio must be in"),
    ],
)
def test_warmup_cosine_lr_rejects_bad_arguments(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        warmup_cosine_lr(*args)


def test_the_scheduler_drives_the_optimizers_rate() -> None:
    parameter = nn.Parameter(torch.zeros(3))
    optimizer = torch.optim.SGD([parameter], lr=0.5)
    scheduler = warmup_cosine_scheduler(optimizer, WARMUP, TOTAL, FLOOR)
    seen = []
    for _ in range(130):
        seen.append(optimizer.param_groups[0]["lr"])  # the rate of the coming step
        optimizer.step()
        scheduler.step()
    expected = [0.5 * warmup_cosine_lr(step, WARMUP, TOTAL, FLOOR) for step in range(1, 131)]
    assert seen == pytest.approx(expected, abs=1e-12)
    assert seen[0] == pytest.approx(0.05) and seen[WARMUP - 1] == pytest.approx(0.5) and seen[-1] == pytest.approx(0.05)


def test_the_scheduler_checks_its_arguments_when_made() -> None:
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1)
    with pytest.raises(ValueError, match="need 0 <= warmup_steps < total_steps"):
        warmup_cosine_scheduler(optimizer, 50, 10)
    with pytest.raises(ValueError, match="min_ratio must be in"):
        warmup_cosine_scheduler(optimizer, 5, 10, min_ratio=2.0)


# -- AdamW ------------------------------------------------------------------------------------------


def _model() -> DecoderOnlyLM:
    torch.manual_seed(0)
    return DecoderOnlyLM(DecoderOnlyConfig(31, d_model=16, n_heads=4, n_layers=2, d_ff=24, max_len=16))


def test_make_adamw_decays_matrices_and_leaves_biases_and_gains() -> None:
    """AdamW's update on a zero gradient is zero: what is left of one step is the decay alone,
    p ← p · (1 − lr · weight_decay), on the ≥ 2-dimensional parameters only."""
    model, lr, weight_decay = _model(), 0.01, 0.5
    with torch.no_grad():  # biases and gains away from 0 and 1, so a decay on them would show
        for p in model.parameters():
            if p.dim() == 1:
                p.uniform_(0.5, 1.5)
    optimizer = make_adamw(model, lr=lr, weight_decay=weight_decay)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    matrices = 0
    for name, p in model.named_parameters():
        if p.dim() >= 2:
            matrices += 1
            torch.testing.assert_close(p.detach(), before[name] * (1 - lr * weight_decay), rtol=1e-6, atol=1e-7)
        else:
            assert torch.equal(p.detach(), before[name]), f"{name} must not decay"
    assert matrices == 1 + 2 * (4 + 2)  # the tied embedding, then per block W^Q, W^K, W^V, W^O and 2 linears


def test_make_adamw_puts_every_parameter_in_exactly_one_group() -> None:
    model = _model()
    optimizer = make_adamw(model, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95))
    decayed, kept = optimizer.param_groups
    assert decayed["weight_decay"] == 0.1 and kept["weight_decay"] == 0.0
    assert decayed["lr"] == kept["lr"] == 1e-3 and decayed["betas"] == (0.9, 0.95)
    ids = [id(p) for group in optimizer.param_groups for p in group["params"]]
    assert sorted(ids) == sorted(id(p) for p in model.parameters()) and len(ids) == len(set(ids))
    assert all(p.dim() >= 2 for p in decayed["params"]) and all(p.dim() == 1 for p in kept["params"])
    assert any(p is model.embed.weight for p in decayed["params"])  # the tied matrix, once


def test_make_adamw_skips_frozen_parameters() -> None:
    model = _model()
    model.embed.weight.requires_grad_(False)
    optimizer = make_adamw(model)
    assert all(p is not model.embed.weight for group in optimizer.param_groups for p in group["params"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(lr=0.0), "lr must be > 0"),
        (dict(lr=-1e-3), "lr must be > 0"),
        (dict(lr=float("nan")), "lr must be > 0"),
        (dict(weight_decay=-0.1), "weight_decay must be >= 0"),
        (dict(weight_decay=float("nan")), "weight_decay must be >= 0"),
    ],
)
def test_make_adamw_rejects_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_adamw(_model(), **kwargs)
