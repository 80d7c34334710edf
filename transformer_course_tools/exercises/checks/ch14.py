"""Checks for chapter 14 — today's training recipe: the warm-up and cosine schedule, AdamW's groups, its step.

References are independent of the package: the schedule written out piece by piece with ``math`` (a
straight line up to the peak, half a period of a cosine down to the floor, then the floor); the
groups a ``torch.optim.AdamW`` must hold, read by name from a small model with every kind of
parameter; PyTorch's own ``torch.optim.AdamW`` stepped once from the same state. Each known mistake
is replayed on the reference, so that the message names it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
from torch import Tensor

from transformer_course_tools.exercises.probe.calls import call, calls_case, custom_case
from transformer_course_tools.exercises.probe.wire import kind

from ._tools import CheckFailure, Mistakes, expect_close, expect_shape, name_mistake
from .case import Case, Outcome
from .registry import exercise

# -- ex14_1: warm-up, then cosine decay ---------------------------------------------------------


def _reference_rate(step: int, warmup: int, total: int, floor: float) -> float:
    """The fraction of the peak at ``step``: step / warmup up to the peak, then a half cosine from 1
    at ``warmup`` to ``floor`` at ``total``, then ``floor``."""
    if step <= warmup:
        return step / warmup
    if step >= total:
        return floor
    angle = math.pi * (step - warmup) / (total - warmup)  # 0 at the peak, π at the last step
    return floor + (1.0 - floor) * (1.0 + math.cos(angle)) / 2


@exercise("ex14_1", "transformer_course.recipe:warmup_cosine_lr", "easy")
def warmup_cosine_lr_cases(larger: bool = False) -> list[Case]:
    """the warm-up and cosine learning-rate schedule

    Nudge: the rate climbs in a straight line to its peak, then follows half a period of a cosine down to a
    floor at the last step of the run, and stays there (the schedule of GPT-3 and Llama).

    Hint: during the warm-up the fraction is step divided by warmup_steps; after it, measure how far the decay
    has gone, from 0 at warmup_steps to 1 at total_steps, held at 1 beyond; the cosine of π times that
    distance runs from 1 to −1, so one plus it, halved, runs from 1 to 0: scale that by the distance from the
    peak to the floor and add the floor.
    """
    settings = ((10, 100, 0.1), (300, 3000, 0.1), (0, 50, 0.1), (4, 20, 0.0), (5, 40, 0.5))
    if larger:  # the grader's hidden cases: other warm-ups, runs and floors
        settings = ((20, 1000, 0.1), (2000, 60000, 0.05), (0, 7, 0.25), (1, 2, 0.0), (37, 400, 0.3))
    cases = []
    for warmup, total, floor in settings:
        middle = (warmup + total) // 2
        for step in sorted({1, max(warmup - 1, 1), max(warmup, 1), warmup + 1, middle, total - 1, total, total + 5}):
            label = f"step={step}, warmup_steps={warmup}, total_steps={total}, min_ratio={floor}"
            cases.append(Case(label, calls_case(call(step, warmup, total, floor)), _judge_rate))
    return cases


def _judge_rate(case: Case, got: Outcome) -> None:
    label, (step, warmup, total, floor) = case.label, case.args()
    rate = got.output()
    if isinstance(rate, Tensor) and rate.numel() == 1:
        rate = rate.item()
    if not isinstance(rate, int | float) or isinstance(rate, bool):
        raise CheckFailure(f"{label}: return a float (a fraction of the peak rate), got {kind(rate)}")
    want = _reference_rate(step, warmup, total, floor)
    name_mistake(float(rate), want, _rate_mistakes(step, warmup, total, floor), label, 1e-9, 1e-6)
    if not math.isclose(rate, want, rel_tol=1e-6, abs_tol=1e-9):
        raise CheckFailure(f"{label}: expected {want:.6g}, got {rate:.6g}")


def _rate_mistakes(step: int, warmup: int, total: int, floor: float) -> Mistakes:
    def decay(done: float, low: float = floor, span: float = 1.0 - floor, period: float = math.pi) -> float:
        return low + span * (1.0 + math.cos(period * done)) / 2

    def rate(at: int = step, **kwargs: float) -> float:
        if at <= warmup:
            return at / warmup
        return decay(min(1.0, (at - warmup) / (total - warmup)), **kwargs)

    unclipped = (step - warmup) / (total - warmup)
    return [
        (
            lambda: rate(span=1.0, low=0.0),
            "the rate falls to 0, not to min_ratio: scale the cosine by (1 − min_ratio) and add min_ratio",
        ),
        (
            lambda: rate(span=1.0),
            "the floor is added to a cosine that falls from 1 to 0, so the peak is 1 + "
            "min_ratio: scale the cosine by (1 − min_ratio) before adding min_ratio",
        ),
        (
            lambda: step / warmup if step <= warmup else decay(min(1.0, step / total)),
            "the decay is measured from "
            "step 0, not from the end of the warm-up: use (step − warmup_steps) / (total_steps − warmup_steps)",
        ),
        (
            lambda: step / warmup if step <= warmup else decay(unclipped),
            "after total_steps the cosine turns "
            "and the rate rises again: hold it at min_ratio (clip the decay's progress at 1)",
        ),
        (
            lambda: rate(period=2 * math.pi),
            "a whole period of the cosine goes down and back up: use half a period, cos(π · progress)",
        ),
        (
            lambda: rate(at=max(step - 1, 1)),
            "the steps are counted from 0; the first step is step=1: use step as it is given",
        ),
        (
            lambda: min(1.0, step / warmup) if warmup else 1.0,
            "the rate never decays after the warm-up: follow "
            "the half cosine from 1 at warmup_steps down to min_ratio at total_steps",
        ),
    ]


# -- ex14_2: AdamW's two groups ----------------------------------------------------------------


@exercise("ex14_2", "transformer_course.recipe:make_adamw", "medium")
def make_adamw_cases(larger: bool = False) -> Iterator[Case]:
    """AdamW with weight decay on the matrices only

    Nudge: AdamW shrinks the weights at every step, apart from the gradient; the matrices are decayed, while
    biases and the gains of the norms are not, since a gain pulled to 0 switches its feature off (Loshchilov
    & Hutter 2019).

    Hint: walk over the model's parameters that require a gradient and sort them by their number of dimensions
    (two or more: a matrix, the embedding included; one: a bias or a gain); give torch.optim.AdamW two parameter
    groups, each a dict with its "params" and its "weight_decay" (the argument for the matrices, 0 for the
    rest), and pass lr and betas to it.
    """
    settings = [{}, {"lr": 3e-4, "weight_decay": 0.05, "betas": (0.8, 0.99)}, {"lr": 0.01, "weight_decay": 0.2}]
    if larger:  # the grader's hidden cases: other settings, a deeper model
        settings = [{"lr": 6e-4, "weight_decay": 0.1, "betas": (0.9, 0.98)}, {"weight_decay": 0.3}, {}]
    layers = 3 if larger else 1
    model = f"a model with {layers} linear layer{'s' if layers > 1 else ''}"
    for options in settings:
        label = "defaults" if not options else ", ".join(f"{key}={value}" for key, value in options.items())
        probe = custom_case("adamw_groups", options=options, layers=layers)
        yield Case(f"make_adamw(model, {label}) on {model}", probe, _judge_groups)


_DEFAULTS = {"lr": 1e-3, "weight_decay": 0.1, "betas": (0.9, 0.95)}


def _judge_groups(case: Case, got: Outcome) -> None:
    label, options = case.label, _DEFAULTS | case.probe["inputs"]["options"]
    got.output()  # the learner's error, if any, first
    kind_, groups = got.report("class"), got.report("groups")
    if got.report("adam"):
        raise CheckFailure(
            f"{label}: returns torch.optim.Adam, whose weight_decay adds λ·w to the gradient (L2), "
            "which the adaptive step then rescales: use torch.optim.AdamW (the decay apart)"
        )
    if groups is None or not got.report("adamw"):
        raise CheckFailure(f"{label}: returns {kind_}: return the torch.optim.AdamW you built")
    shapes, trainable = got.report("shapes"), got.report("trainable")
    given = [name for group in groups for name in group["names"]]
    if any(name not in shapes for name in given):
        raise CheckFailure(f"{label}: a group holds tensors that are not the model's parameters: build the groups "
                           "from model.parameters() only")  # fmt: skip
    for name in sorted(set(given)):
        if given.count(name) > 1:
            raise CheckFailure(f"{label}: {name} is in {given.count(name)} groups: give each parameter to one group")
    for group in groups:
        _judge_group(label, group | {"names": [n for n in group["names"] if n in trainable]}, shapes, options)
    missing = [name for name in trainable if name not in given]
    if missing:
        raise CheckFailure(f"{label}: {', '.join(missing)} not in any group: give every trainable parameter to one")
    frozen = [name for name in given if name not in trainable]
    if frozen:
        raise CheckFailure(
            f"{label}: {', '.join(frozen)} given to the optimizer, but frozen (requires_grad=False): "
            "keep only the parameters that require a gradient"
        )


def _judge_group(label: str, group: dict, shapes: dict, options: dict) -> None:
    matrices = [name for name in group["names"] if len(shapes[name]) >= 2]
    others = [name for name in group["names"] if len(shapes[name]) < 2]
    if others and group["weight_decay"] != 0:
        raise CheckFailure(
            f"{label}: {', '.join(others)} (one dimension: biases and gains) decayed by "
            f"{group['weight_decay']:g}: put them in a group with weight_decay 0"
        )
    if matrices and not math.isclose(group["weight_decay"], options["weight_decay"]):
        what = "the embedding too is a matrix" if "embed.weight" in matrices else "two or more dimensions"
        raise CheckFailure(
            f"{label}: {', '.join(matrices)} decayed by {group['weight_decay']:g}, not by "
            f"weight_decay={options['weight_decay']:g}: give it to every matrix ({what})"
        )
    if not math.isclose(group["lr"], options["lr"]):
        raise CheckFailure(f"{label}: a group's rate is {group['lr']:g}: pass lr={options['lr']:g} to AdamW")
    if group["betas"] != [float(b) for b in options["betas"]]:
        raise CheckFailure(
            f"{label}: a group's betas are {tuple(group['betas'])}: pass betas={options['betas']} "
            "to AdamW (its default is (0.9, 0.999), the recipe's (0.9, 0.95))"
        )


# -- ex14_3: one step of AdamW, written out ------------------------------------------------------


def _torch_adamw(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, step: int, lr: float,
                 betas: tuple[float, float], eps: float, weight_decay: float) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """PyTorch's own AdamW, one step from the given state (its step counter at ``step - 1``)."""
    weight = param.detach().clone().requires_grad_()
    optimizer = torch.optim.AdamW([weight], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=False)
    optimizer.state[weight] = {"step": torch.tensor(float(step - 1)), "exp_avg": exp_avg.clone(),
                               "exp_avg_sq": exp_avg_sq.clone()}  # fmt: skip
    weight.grad = grad.clone()
    optimizer.step()
    state = optimizer.state[weight]
    return weight.detach(), state["exp_avg"], state["exp_avg_sq"]


@exercise("ex14_3", "transformer_course.recipe:adamw_step", "hard")
def adamw_step_cases(larger: bool = False) -> Iterator[Case]:
    """one step of AdamW, written out

    Nudge: Adam divides a running mean of the gradient by the root of a running mean of its square, each
    corrected for starting at 0; AdamW then shrinks the weight by the rate times the decay, on its own, outside
    that division (Loshchilov & Hutter 2019, Algorithm 2).

    Hint: update the two running means with betas[0] and betas[1] (the second from the squared gradient); divide
    each by one minus its beta to the power step; the step is lr times the first over the square root of the
    second plus eps; subtract it from the parameter multiplied by one minus lr times weight_decay; return the
    three new tensors without changing the inputs in place.
    """
    settings = [  # (shape, step, lr, betas, eps, weight_decay)
        ((5,), 1, 0.1, (0.9, 0.95), 1e-8, 0.1),
        ((2, 3), 2, 0.05, (0.9, 0.95), 1e-8, 0.1),
        ((4,), 10, 0.01, (0.8, 0.999), 1e-3, 0.5),
        ((3, 2), 1000, 0.1, (0.9, 0.95), 1e-8, 0.0),
        ((6,), 3, 0.2, (0.5, 0.7), 0.1, 0.2),
    ]
    if larger:  # the grader's hidden cases: larger tensors, other settings
        settings = [((9, 7), step, lr, betas, eps, wd) for _, step, lr, betas, eps, wd in settings]
    for shape, step, lr, betas, eps, weight_decay in settings:
        generator = torch.Generator().manual_seed(step)
        param, grad = torch.randn(shape, generator=generator, dtype=torch.float64), torch.randn(
            shape, generator=generator, dtype=torch.float64)  # fmt: skip
        if step == 1:  # the state before the first step
            exp_avg, exp_avg_sq = torch.zeros_like(param), torch.zeros_like(param)
        else:
            exp_avg = 0.1 * torch.randn(shape, generator=generator, dtype=torch.float64)
            exp_avg_sq = 0.1 * torch.rand(shape, generator=generator, dtype=torch.float64)
        label = (f"param {tuple(shape)}, step={step}, lr={lr}, betas={betas}, eps={eps}, "
                 f"weight_decay={weight_decay}")  # fmt: skip
        args = (param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps, weight_decay)
        yield Case(label, calls_case(call(*args)), _judge_adamw_step)


def _judge_adamw_step(case: Case, got: Outcome) -> None:
    label, args = case.label, case.args()
    result = got.output()
    if not isinstance(result, tuple | list) or len(result) != 3:
        raise CheckFailure(f"{label}: return three tensors (param, exp_avg, exp_avg_sq), got {kind(result)}")
    want = _torch_adamw(*args)
    for name, value, reference in zip(("exp_avg", "exp_avg_sq"), result[1:], want[1:], strict=True):
        value = expect_shape(value, tuple(reference.shape), f"the returned {name}", label)
        expect_close(value, reference, f"the returned {name}", label, 1e-9, 1e-7, mistakes=_state_mistakes(name, *args))
    param = expect_shape(result[0], tuple(want[0].shape), "the returned param", label)
    expect_close(param, want[0], "the returned param", label, 1e-9, 1e-7, mistakes=_step_mistakes(*args))


def _state_mistakes(name: str, param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, step: int,
                    lr: float, betas: tuple[float, float], eps: float, weight_decay: float) -> Mistakes:  # fmt: skip
    b1, b2 = betas  # the weights of the two running means
    if name == "exp_avg":
        return [
            (b2 * exp_avg + (1 - b2) * grad, "the mean of the gradient uses betas[1]: use betas[0] for it "
             "(betas[1] is for the mean of the square)"),
            ((1 - b1) * exp_avg + b1 * grad, "the weights of the running mean are swapped: keep betas[0] of the "
             "old mean and add (1 − betas[0]) of the gradient"),
            (b1 * exp_avg + (1 - b1) * (grad + weight_decay * param), "the gradient includes weight_decay · param "
             "(L2, as Adam's weight_decay does): keep the decay out of the means"),
        ]  # fmt: skip
    return [
        (b1 * exp_avg_sq + (1 - b1) * grad * grad, "the mean of the square uses betas[0]: use betas[1]"),
        (b2 * exp_avg_sq + (1 - b2) * grad.abs(), "the mean of |grad|, not of its square: add (1 − betas[1]) · "
         "grad · grad"),
        ((1 - b2) * exp_avg_sq + b2 * grad * grad, "the weights of the running mean are swapped: keep betas[1] of "
         "the old mean and add (1 − betas[1]) of the squared gradient"),
    ]  # fmt: skip


def _step_mistakes(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, step: int, lr: float,
                   betas: tuple[float, float], eps: float, weight_decay: float) -> Mistakes:  # fmt: skip
    b1, b2 = betas  # the weights of the two running means

    def step_with(at: int = step, decay: float = lr * weight_decay, corrected: bool = True, eps_inside: bool = False,
                  after: bool = False) -> Tensor:  # fmt: skip
        m, v = b1 * exp_avg + (1 - b1) * grad, b2 * exp_avg_sq + (1 - b2) * grad * grad
        if corrected:
            m, v = m / (1 - b1**at), v / (1 - b2**at)
        update = lr * m / ((v + eps).sqrt() if eps_inside else v.sqrt() + eps)
        return (param - update) * (1 - decay) if after else param * (1 - decay) - update

    return [
        (step_with(decay=weight_decay), "the weight shrinks by weight_decay, not by lr · weight_decay: multiply "
         "param by (1 − lr · weight_decay)"),
        (step_with(decay=0.0), "the weight decay is missing: multiply param by (1 − lr · weight_decay)"),
        (step_with(corrected=False), "the bias corrections are missing: divide the means by (1 − betas[0]^step) "
         "and (1 − betas[1]^step)"),
        (step_with(at=step + 1), "the bias corrections use step + 1: use step as it is given (the first is 1)"),
        (step_with(eps_inside=True), "eps is added under the square root: add it after, √(mean square) + eps"),
        (step_with(after=True), "the decay shrinks the weight after the Adam step: shrink the weight before it, "
         "param · (1 − lr · weight_decay) − the step"),
    ]  # fmt: skip
