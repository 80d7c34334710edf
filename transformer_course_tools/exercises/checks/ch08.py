"""Checks for chapter 08 — training.

References are independent of the package: the paper's equation (3) written out with
``math``, plain tensor slicing, PyTorch's own ``F.cross_entropy(label_smoothing=…,
ignore_index=…)``, and a hand-written training step on a small stand-in model.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer_course_tools.course import PACKAGE
from transformer_course_tools.exercises.probe.calls import (
    StandInModel,
    call,
    calls_case,
    custom_case,
    grad_of_sum,
    leaf,
    ref,
    training_run,
)
from transformer_course_tools.exercises.probe.wire import kind

from ._tools import (
    CheckFailure,
    Mistakes,
    expect_equal,
    expect_finite,
    expect_shape,
    expect_tuple,
    matches,
    name_mistake,
)
from .case import Case, Outcome
from .registry import exercise

# -- ex08_1: the learning-rate schedule ---------------------------------------------------------


def _paper_lr(step: int, d_model: int, warmup: int, scale: float) -> float:
    """The paper's rate (§5.3) from its peak at step = warmup: a straight line up to it, then the peak
    times sqrt(warmup / step) (the two pieces of the formula's min, written independently of it)."""
    peak = scale / math.sqrt(d_model * warmup)
    if step <= warmup:
        return peak * step / warmup
    return peak * math.sqrt(warmup / step)


@exercise("ex08_1", "transformer_course.schedule:transformer_lr", "easy")
def transformer_lr_cases(larger: bool = False) -> list[Case]:
    """the warm-up / inverse-square-root learning rate

    Nudge: the rate grows linearly during the warm-up steps, then decays with the inverse square root of the
    step (paper §5.3, equation 3).

    Hint: the rate is scale divided by the square root of d_model, times the smaller of two terms: the decay,
    one over the square root of step, and the warm-up, step divided by warmup_steps to the power 1.5 (the two
    meet at step = warmup_steps); plain Python numbers will do (the ** operator, or math.sqrt).
    """
    cases = []
    settings = ((512, 4000, 1.0), (128, 300, 0.5), (64, 1, 2.0), (1, 10, 1.0))
    last = 100_000
    if larger:  # the grader's hidden cases: other (larger) models, warm-ups and steps
        settings, last = ((1024, 8000, 1.0), (256, 700, 0.5), (32, 3, 3.0), (2, 25, 1.0)), 1_000_000
    for d_model, warmup, scale in settings:
        for step in sorted({1, 2, warmup // 2 or 1, warmup - 1 or 1, warmup, warmup + 1, 4 * warmup, last}):
            label = f"step={step}, d_model={d_model}, warmup_steps={warmup}, scale={scale}"
            cases.append(Case(label, calls_case(call(step, d_model, warmup, scale)), _judge_lr))
    return cases


def _judge_lr(case: Case, got: Outcome) -> None:
    label, (step, d_model, warmup, scale) = case.label, case.args()
    lr = got.output()
    if isinstance(lr, Tensor) and lr.numel() == 1:
        lr = lr.item()
    if not isinstance(lr, int | float) or isinstance(lr, bool):
        raise CheckFailure(f"{label}: return a float, got {kind(lr)}")
    want = _paper_lr(step, d_model, warmup, scale)
    name_mistake(float(lr), want, _lr_mistakes(step, d_model, warmup, scale, lr), label, 0.0, 1e-6)
    if not math.isclose(lr, want, rel_tol=1e-6):
        raise CheckFailure(f"{label}: expected {want:.6g}, got {lr:.6g}")


def _lr_mistakes(step: int, d_model: int, warmup: int, scale: float, lr: float) -> Mistakes:
    def lr_with(decay: float = -0.5, warm: float = -1.5, size: float = -0.5, factor: float = scale, at: int = step):
        return factor * d_model**size * min(at**decay, at * warmup**warm)

    return [
        (scale * d_model**-0.5 * max(step**-0.5, step * warmup**-1.5), f"got {lr:.6g}, the larger of the two terms; "
         "the schedule takes the smaller (min)"),
        (lr_with(warm=-0.5), "the warm-up term uses warmup_steps^-0.5: it is step · warmup_steps^-1.5"),
        (lr_with(warm=-1.0), "the warm-up term uses warmup_steps^-1: it is step · warmup_steps^-1.5"),
        (lr_with(warm=1.5), "the warm-up term is step · warmup_steps^-1.5: the power is negative"),
        (lr_with(decay=0.5), "the decay term is step^-0.5 (1/√step): the power is negative"),
        (lr_with(size=0.0), "the factor d_model^-0.5 is missing"),
        (lr_with(size=0.5), "d_model is raised to 0.5; the factor is d_model^-0.5 (1/√d_model)"),
        (lr_with(factor=1.0), f"scale={scale:g} is not applied: multiply the whole rate by it"),
        (lr_with(at=max(step - 1, 1)), "the steps are counted from 0; the first step is step=1 (the schedule is "
         "never called with 0)"),
        (lr_with(at=step + 1), "the rate is computed at step + 1: use step as it is given (the first step is "
         "step=1)"),
    ]  # fmt: skip


# -- ex08_2: teacher forcing -------------------------------------------------------------------


@exercise("ex08_2", "transformer_course.batching:teacher_forcing", "easy")
def teacher_forcing_cases(larger: bool = False) -> list[Case]:
    """teacher forcing: shift the target by one

    Nudge: the decoder reads the target shifted right and learns to predict the next token at every position
    (paper §3.1).

    Hint: the decoder input is every column of tgt but the last, the labels every column but the first: slice
    the second axis (the positions) twice, keeping every row, and return the two slices in that order.
    """
    bos, eos, pad = 1, 2, 0
    rows = [[bos, 5, 6, 7, eos], [bos, 8, eos, pad, pad], [bos, eos, pad, pad, pad]]
    tensors = [torch.tensor(rows), torch.tensor([[bos, 9, eos]]), torch.tensor([[bos, eos]])]
    tensors.append(torch.randint(3, 20, (8, 33) if larger else (4, 9)))  # larger: the grader's hidden cases
    return [
        Case(f"tgt {tgt.tolist() if tgt.numel() <= 15 else tuple(tgt.shape)}", calls_case(call(tgt)), _judge_shift)
        for tgt in tensors
    ]


def _judge_shift(case: Case, got: Outcome) -> None:
    label, (tgt,) = case.label, case.args()
    decoder_in, labels = expect_tuple(got.output(), "decoder_input, labels", label)
    b, t = tgt.shape[0], tgt.shape[1] - 1
    same = "decoder input and labels are the same: the model would be asked to copy its input"
    mistakes = [
        ((tgt[:, 1:], tgt[:, :-1]), "the two are swapped: the decoder input starts with <bos>, the labels do not"),
        ((tgt[:, :-1], tgt[:, :-1]), same),
        ((tgt[:, 1:], tgt[:, 1:]), same),
        ((tgt, tgt.roll(-1, dims=1)), "the labels are rolled, so the last one wraps around to <bos>; cut instead: "
         "tgt[:, :-1] and tgt[:, 1:]"),
        ((tgt[:-1], tgt[1:]), "the batch axis is shifted (tgt[:-1], tgt[1:]); shift the time axis: tgt[:, :-1], "
         "tgt[:, 1:]"),
        ((tgt[:, :-2], tgt[:, 2:]), "shifted by two positions; the labels are the decoder input one position later"),
        ((tgt[:, :-1], tgt[:, 1:].masked_fill(tgt[:, 1:] == 0, -100)), "the padded labels are set to -100 "
         "(PyTorch's ignore_index): keep them <pad> = 0; the loss leaves the pad_id tokens out itself"),
    ]  # fmt: skip
    name_mistake((decoder_in, labels), (tgt[:, :-1], tgt[:, 1:]), mistakes, label, 0.0, 0.0)
    widths = [f"the {what} {'has' if what == 'decoder input' else 'have'} {got.shape[1]}"
              for what, got in (("decoder input", decoder_in), ("labels", labels))
              if isinstance(got, Tensor) and got.dim() == 2 and got.shape[1] != t]  # fmt: skip
    if widths:  # tgt uncut, or cut twice
        raise CheckFailure(f"{label}: of tgt's {t + 1} columns, {' and '.join(widths)}: each drops exactly one, "
                           "the decoder input tgt[:, :-1] (the last), the labels tgt[:, 1:] (the first)")  # fmt: skip
    expect_shape(decoder_in, (b, t), "decoder input", label)
    expect_shape(labels, (b, t), "labels", label)
    expect_equal(decoder_in, tgt[:, :-1], "decoder input", label)
    expect_equal(labels, tgt[:, 1:], "labels", label)


# -- ex08_3: label-smoothed cross-entropy -------------------------------------------------------


def _cross_entropy(logits: Tensor, target: Tensor, smoothing: float = 0.0, pad_id: int | None = None) -> Tensor:
    """PyTorch's own label-smoothed cross-entropy over every position (B, T, V), (B, T) → ()."""
    ignore = -100 if pad_id is None else pad_id
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), label_smoothing=smoothing,
                           ignore_index=ignore)  # fmt: skip


def label_smoothed_cross_entropy(logits: Tensor, target: Tensor, smoothing: float = 0.1, pad_id: int = 0) -> Tensor:
    """The stand-in, through PyTorch's own cross-entropy (a batch of padding only gives 0, not NaN)."""
    summed = F.cross_entropy(
        logits.float().flatten(0, 1), target.flatten(), ignore_index=pad_id, label_smoothing=smoothing, reduction="sum"
    )
    return summed / (target != pad_id).sum().clamp(min=1)


@exercise(
    "ex08_3", "transformer_course.loss:label_smoothed_cross_entropy", "medium", standin=label_smoothed_cross_entropy
)
def label_smoothed_cross_entropy_cases(larger: bool = False) -> Iterator[Case]:
    """label-smoothed cross-entropy that ignores padding

    Nudge: mix the one-hot target with a uniform distribution over the vocabulary, and leave padding out of the
    average (paper §5.4).

    Hint: per token: (1 - ε)·(−log p[target]) + ε·mean over the vocabulary of (−log p); then average over the
    positions where target != pad_id only.
    """
    sizes = (((2, 5, 7), 0.1, 0), ((3, 4, 11), 0.0, 0), ((1, 6, 5), 0.3, 3), ((4, 1, 13), 0.1, 0))
    if larger:  # the grader's hidden cases (still small: a loss over a few sentences)
        sizes = (((4, 12, 30), 0.1, 0), ((6, 9, 50), 0.0, 0), ((2, 17, 9), 0.3, 3), ((8, 1, 40), 0.1, 0))
    for (b, t, v), smoothing, pad_id in sizes:
        logits = torch.randn(b, t, v) * 2
        target = torch.randint(0, v, (b, t))
        target[target == pad_id] = (pad_id + 1) % v
        if t > 2:
            target[0, t - 2 :] = pad_id  # padding at the end of the first sentence
        if b > 2:
            target[1] = pad_id  # a sentence that is all padding (it must not count)
        label = (f"logits {tuple(logits.shape)}, smoothing={smoothing}, pad_id={pad_id}, "
                 f"{int((target == pad_id).sum())} padding positions")  # fmt: skip
        # the loss's terms one at a time before the whole: the same tokens with the padding replaced by a
        # real token and pad_id=-1 (no id), without then with smoothing (−log p[target], then the smoothing term)
        unpadded = target.masked_fill(target == pad_id, (pad_id + 1) % v)
        terms = [call(logits, unpadded, 0.0, -1), call(logits, unpadded, smoothing, -1)]
        yield Case(label, calls_case(*terms, call(logits, target, smoothing, pad_id)), _judge_loss)
    # a batch of padding only: no token to learn from, so the loss is 0 (the statement says so), not the NaN
    # of a mean over no tokens (PyTorch's own cross-entropy with ignore_index gives NaN here)
    padding = torch.full((2, 3), 0)
    probe = calls_case(call(torch.randn(2, 3, 5), padding, 0.1, 0))
    yield Case("logits (2, 3, 5), a batch whose every target position is padding (pad_id=0)", probe, _judge_no_tokens)
    # gradients flow, and the padding positions get none
    target = torch.tensor([[3, 4, 2, 0], [5, 2, 0, 0]])
    probe = calls_case(call(ref("logits"), target, 0.1, 0) | grad_of_sum("logits"),
                       objects={"logits": leaf(torch.randn(2, 4, 6))})  # fmt: skip
    yield Case("gradient of the loss with respect to the logits", probe, _judge_loss_gradient)


# the loss's terms in the order the case's calls check them: (what the call leaves out, the term it checks
# and how to get it right)
_TERMS = (
    ("smoothing=0 and no padding (pad_id=-1), the plain cross-entropy", "the −log p[target] term is wrong",
     "take log_softmax over the vocabulary (the last axis), pick each position's target entry (gather) and "
     "average −log p[target] over the tokens"),
    ("smoothing={smoothing} and no padding (pad_id=-1)", "the smoothing term is wrong",
     "per token (1 − ε)·(−log p[target]) + ε·mean over the vocabulary of (−log p)"),
    ("the loss is right without padding", "the padding is not left out right",
     "leave the positions where target == pad_id out of the sum and out of the count: the mean is over the real "
     "tokens of the whole batch"),
)  # fmt: skip


def _judge_loss(case: Case, got: Outcome) -> None:
    """The terms first (calls 0 and 1: no padding, without then with smoothing), then the whole loss."""
    label = case.label
    for i, (where, what, fix) in enumerate(_TERMS):
        logits, target, smoothing, pad_id = case.args(i)
        loss = expect_shape(got.output(i), (), "loss", label)
        want = _cross_entropy(logits, target, smoothing, pad_id)
        expect_finite(loss, "loss", label)
        name_mistake(loss, want, _loss_mistakes(logits, target, smoothing, pad_id), label, atol=1e-5)
        if not matches(loss, want, atol=1e-5):
            where = where.format(smoothing=smoothing)
            raise CheckFailure(f"{label}: {what} ({where}: expected {want.item():.6g}, got {loss.item():.6g}): {fix}")


def _loss_mistakes(logits: Tensor, target: Tensor, smoothing: float, pad_id: int) -> Mistakes:
    log_p = logits.double().log_softmax(-1)  # (B, T, V)
    nll, uniform = -log_p.gather(-1, target[..., None])[..., 0], -log_p.mean(-1)  # (B, T) each
    keep, v = target != pad_id, logits.shape[-1]
    per_token = (1 - smoothing) * nll + smoothing * uniform
    sentences = keep.any(-1)
    per_sentence = (per_token * keep).sum(-1)[sentences] / keep.sum(-1)[sentences]
    over_time = logits.double().log_softmax(1)  # (B, T, V) normalised over the positions
    per_token_time = -(1 - smoothing) * over_time.gather(-1, target[..., None])[..., 0] - smoothing * over_time.mean(-1)
    return [
        (per_token_time[keep].mean(), "the log-softmax runs over the positions (dim=1): the probabilities are over "
         "the vocabulary, log_softmax(dim=-1)"),
        (_cross_entropy(logits, target, smoothing), "the padding positions are counted; average over target != "
         "pad_id only"),
        (_cross_entropy(logits, target, pad_id=pad_id), "no smoothing was applied (the result is the plain "
         "cross-entropy)"),
        ((per_token * keep).mean(), "the padding positions are zeroed but still counted in the mean: divide by "
         "the number of real tokens"),
        (((1 - smoothing) * nll + smoothing * (v * uniform - nll) / (v - 1))[keep].mean(), "ε is spread over the "
         "V − 1 other tokens; this smoothing gives ε/V to every token, the target included (as F.cross_entropy's "
         "label_smoothing does)"),
        (per_token[keep].sum(), "the loss is summed over the tokens; average it over the real (non-padding) tokens"),
        ((nll + smoothing * uniform)[keep].mean(), "the target's term is not weighted by (1 − ε): (1 − ε)·(−log "
         "p[target]) + ε·mean(−log p)"),
        (((1 - smoothing) * nll - smoothing * log_p.sum(-1))[keep].mean(), "ε multiplies the sum of −log p over "
         "the vocabulary; take the mean over the vocabulary (ε/V for each token)"),
        (per_sentence.mean(), "each sentence is averaged first; average over every real token of the batch at once "
         "(a short sentence must not weigh more than a long one)"),
    ]  # fmt: skip


def _judge_no_tokens(case: Case, got: Outcome) -> None:
    label = case.label
    loss = expect_shape(got.output(), (), "loss", label)
    value = float(loss.detach())
    if not math.isfinite(value):
        what = f"{label}: the loss is {value}, not 0"
        raise CheckFailure(
            f"{what}: with no real token the mean divides 0 by 0; divide the sum over the real tokens "
            "by their number taken as at least 1, so that a batch of padding gives 0",
            brief=what,
        )
    if value != 0.0:
        raise CheckFailure(f"{label}: the loss is {value:.6g}, not 0: padding positions add nothing to the sum")


def _judge_loss_gradient(case: Case, got: Outcome) -> None:
    label, (_, target, _, _) = case.label, case.args()
    loss, grad = got.output(), got.grad()
    if not isinstance(loss, Tensor) or not got.requires_grad() or not isinstance(grad, Tensor):
        raise CheckFailure(f"{label}: the loss is not a tensor connected to the logits: do not call .item()")
    expect_shape(grad, (*target.shape, grad.shape[-1]), "gradient", label)
    expect_finite(grad, "gradient", label)
    if grad[target == 0].abs().max() > 0:
        raise CheckFailure(f"{label}: padding positions received a gradient; they must not take part in the loss")


# -- ex08_4: one training step ---------------------------------------------------------------


_ORDER = ("zero_grad", "backward", "clip", "step", "schedule")  # the parts of a step, in their order


def _reference_step(model, batch, optimizer, scheduler, smoothing, max_grad_norm, bf16=False, order=_ORDER) -> float:
    """One step; ``order``: its parts in the order they run (a known mistake's order, or one left out)."""
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):  # mixed precision on the CPU
        logits = model(batch["src"], batch["tgt_in"])  # (B, T, V), bfloat16 under autocast
    loss = _cross_entropy(logits.float(), batch["tgt_out"], smoothing, batch["pad_id"])
    parts = {
        "zero_grad": optimizer.zero_grad,
        "backward": loss.backward,
        "clip": lambda: max_grad_norm is None or nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_grad_norm),
        "step": optimizer.step,
        "schedule": lambda: scheduler is None or scheduler.step(),
    }
    for part in order:
        parts[part]()
    return loss.item()


def _batch(larger: bool = False) -> dict:
    """A batch as plain data; the probe makes the learner's Batch (a plain container) of it. ``larger``:
    the grader's hidden cases, more and longer sentences (ids below the stand-in model's 9)."""
    tgt = torch.tensor([[1, 4, 5, 6, 2], [1, 7, 2, 0, 0], [1, 3, 8, 2, 0]])
    src = torch.tensor([[4, 5, 6], [7, 0, 0], [3, 8, 0]])
    if larger:
        tgt = torch.tensor([[1, 4, 5, 6, 7, 8, 3, 2], [1, 7, 2, 0, 0, 0, 0, 0], [1, 3, 8, 5, 4, 2, 0, 0],
                            [1, 6, 6, 6, 6, 6, 6, 2], [1, 2, 0, 0, 0, 0, 0, 0], [1, 8, 7, 6, 5, 4, 3, 2]])  # fmt: skip
        src = torch.tensor([[4, 5, 6, 7, 8, 3], [7, 0, 0, 0, 0, 0], [3, 8, 5, 4, 0, 0], [6, 6, 6, 6, 6, 6],
                            [5, 0, 0, 0, 0, 0], [8, 7, 6, 5, 4, 3]])  # fmt: skip
    return {"src": src, "tgt_in": tgt[:, :-1], "tgt_out": tgt[:, 1:], "pad_id": 0}


_STEPS = 3  # several steps: stale gradients or a missing scheduler step show up


@exercise("ex08_4", "transformer_course.step:train_step", "hard", needs=("ex08_3",))
def train_step_cases(larger: bool = False) -> Iterator[Case]:
    """one training step

    Nudge: one optimisation step: forward pass, loss, gradients from scratch, optional clipping, parameter
    update, schedule (paper §5.3).

    Hint: model.train(); logits = model(batch.src, batch.tgt_in); loss against batch.tgt_out with your
    label_smoothed_cross_entropy; optimizer.zero_grad(); loss.backward(); clip_grad_norm_ (if max_grad_norm is
    not None); optimizer.step(); scheduler.step() (if any); return loss.detach(). With precision: the forward pass
    under `with precision.autocast(batch.src.device):`, the loss on logits.float(), and precision.scaler's
    scale(loss).backward(), unscale_(optimizer) before clipping, step(optimizer) and update().
    """
    settings = [
        ("SGD with momentum, no clipping", "SGD", {"lr": 0.5, "momentum": 0.9}, False, 0.1, None, False),
        ("Adam, clipping at 0.05", "Adam", {"lr": 0.01}, False, 0.1, 0.05, False),
        ("Adam with a scheduler, smoothing 0", "Adam", {"lr": 0.01}, True, 0.0, 1.0, False),
        ("Adam, bfloat16 autocast (mixed precision on the CPU)", "Adam", {"lr": 0.01}, True, 0.1, 0.05, True),
    ]
    for seed, (name, optimizer, options, scheduler, smoothing, max_norm, bf16) in enumerate(settings):
        torch.manual_seed(seed * _STEPS)
        state = {key: value.detach().clone() for key, value in StandInModel().state_dict().items()}
        for steps in range(1, _STEPS + 1):  # step k: k steps from the same start, the last one judged
            probe = custom_case("train_steps", package=PACKAGE, state=state, optimizer=optimizer, options=options,
                                scheduler=scheduler, smoothing=smoothing, max_norm=max_norm, batch=_batch(larger),
                                steps=steps, bf16=bf16)  # fmt: skip
            size = ", a batch (6, 7)" if larger else ""  # the local batch is (3, 4)
            yield Case(f"{name}{size}, step {steps}", probe, _judge_step)


def _judge_step(case: Case, got: Outcome) -> None:
    """Replay the steps with the hand-written reference; compare the last loss and the parameters."""
    inputs, label = case.probe["inputs"], case.label
    smoothing, max_norm, batch, step = inputs["smoothing"], inputs["max_norm"], inputs["batch"], inputs["steps"]
    bf16 = inputs.get("bf16", False)
    with torch.random.fork_rng():  # a judge leaves the random numbers of the probes alone
        theirs, optimizer, scheduler = training_run(inputs["state"], inputs["optimizer"], inputs["options"],
                                                    inputs["scheduler"])  # fmt: skip
    for _ in range(step - 1):
        _reference_step(theirs, batch, optimizer, scheduler, smoothing, max_norm, bf16)
    with torch.no_grad():  # the loss a model comparing with the unshifted target would report
        unshifted = _cross_entropy(theirs(batch["src"], batch["tgt_in"]), batch["tgt_in"], smoothing, 0)
    loss = got.output(step - 1)
    want = _reference_step(theirs, batch, optimizer, scheduler, smoothing, max_norm, bf16)
    if isinstance(loss, float):
        raise CheckFailure(
            f"{label}: the loss is returned as a float: return it as a tensor (loss.detach()); .item() makes "
            "the CPU wait for a GPU at every step, and the training loop reads the losses when it logs them"
        )
    loss = expect_shape(loss, (), "the returned loss", label)
    if got.requires_grad(step - 1):
        raise CheckFailure(f"{label}: the returned loss still holds the graph of the step: return loss.detach()")
    if got.report("training") is not True:
        raise CheckFailure(f"{label}: the model is still in evaluation mode: call model.train()")
    if not math.isclose(loss.item(), want, rel_tol=1e-5, abs_tol=1e-6):
        _expect_no_known_step_mistake(inputs, loss.item(), got.report("parameters"), label)
        shifted = math.isclose(loss.item(), unshifted.item(), rel_tol=1e-5)
        hint = ", the loss against batch.tgt_in: compare with batch.tgt_out" if shifted else ""
        if bf16 and not shifted:
            hint = (
                ": run the forward pass under `with precision.autocast(batch.src.device):`, the loss on logits.float()"
            )
        raise CheckFailure(f"{label}: the returned loss is {loss.item():.6g}, expected {want:.6g}{hint}")
    parameters = got.report("parameters")
    name = _differing(parameters, theirs)
    if name is not None:
        _expect_no_known_step_mistake(inputs, loss.item(), parameters, label)
        raise CheckFailure(
            f"{label}: parameter {name} differs from the reference after the step: {_order_hint(inputs)}"
        )
    if inputs["scheduler"] and got.report("scheduler_steps") != step:
        raise CheckFailure(
            f"{label}: the scheduler was stepped {got.report('scheduler_steps')} times after {step} steps"
        )


def _differing(parameters: object, model: nn.Module) -> str | None:
    """The first of ``model``'s parameters that ``parameters`` (name → tensor) lacks or holds with other values."""
    for name, q in model.named_parameters():
        p = parameters.get(name) if isinstance(parameters, dict) else None
        if not (isinstance(p, Tensor) and p.shape == q.shape and torch.allclose(p, q, atol=1e-5, rtol=1e-4)):
            return name
    return None


def _same_run(loss: float, parameters: object, run: tuple[float, nn.Module]) -> bool:
    """The last loss and the parameters are those of ``run`` (a replay's loss and model)."""
    return math.isclose(loss, run[0], rel_tol=1e-5, abs_tol=1e-6) and _differing(parameters, run[1]) is None


def _order_hint(inputs: dict) -> str:
    """What the order of a step must be, in this case's setting only (no clipping or scheduler it lacks)."""
    hint = ["were the old gradients cleared (optimizer.zero_grad() before loss.backward())?"]
    if inputs["max_norm"] is not None:
        hint.append("clip after backward and before optimizer.step()")
    if inputs["scheduler"]:
        hint.append("step the scheduler after the optimizer")
    return "; ".join(hint)


# known mistakes of a training step, replayed: what changes in the reference, and what is wrong
_STEP_MISTAKES = [
    ({"order": ("backward", "zero_grad", "clip", "step", "schedule")}, "optimizer.zero_grad() comes after "
     "loss.backward(): it clears the gradients before optimizer.step() can use them; call it before backward"),
    ({"order": ("backward", "clip", "step", "schedule")}, "the old gradients are never cleared, so they add up from "
     "step to step: call optimizer.zero_grad() before loss.backward()"),
    ({"order": ("zero_grad", "backward", "step", "schedule")}, "the gradients are not clipped before "
     "optimizer.step(): call clip_grad_norm_(model.parameters(), max_grad_norm) after backward and before the step"),
    ({"order": ("zero_grad", "backward", "clip", "schedule", "step")}, "the scheduler is stepped before the "
     "optimizer: the step then uses the next step's learning rate; call scheduler.step() after optimizer.step()"),
    ({"order": ("zero_grad", "backward", "clip", "step")}, "the scheduler is never stepped: call scheduler.step() "
     "after optimizer.step() when a scheduler is given"),
    ({"smoothing": 0.0}, "the loss has no label smoothing: pass smoothing on to label_smoothed_cross_entropy"),
    ({"pad_id": -100}, "the padding positions are counted in the loss: pass batch.pad_id on to "
     "label_smoothed_cross_entropy"),
]  # fmt: skip


def _expect_no_known_step_mistake(inputs: dict, loss: float, parameters: object, label: str) -> None:
    """Replay the steps with each known mistake; name the one whose loss and parameters the learner's match."""
    right = _replay(inputs, {})
    for change, what in _STEP_MISTAKES:
        wrong = _replay(inputs, change)
        if _same_run(loss, parameters, wrong) and not _same_run(right[0], dict(right[1].named_parameters()), wrong):
            raise CheckFailure(f"{label}: {what}")


def _replay(inputs: dict, change: dict) -> tuple[float, nn.Module]:
    """The last loss and the model after the case's steps, with ``change`` made to the reference."""
    with torch.random.fork_rng():
        model, optimizer, scheduler = training_run(inputs["state"], inputs["optimizer"], inputs["options"],
                                                   inputs["scheduler"])  # fmt: skip
    batch = inputs["batch"] | {"pad_id": change.get("pad_id", inputs["batch"]["pad_id"])}
    smoothing, order = change.get("smoothing", inputs["smoothing"]), change.get("order", _ORDER)
    with warnings.catch_warnings():  # PyTorch warns of a scheduler stepped before the optimizer: a replayed mistake
        warnings.simplefilter("ignore")
        for _ in range(inputs["steps"]):
            loss = _reference_step(model, batch, optimizer, scheduler, smoothing, inputs["max_norm"],
                                   inputs.get("bf16", False), order)  # fmt: skip
    return loss, model
