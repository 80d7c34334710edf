"""Checks for chapter 07 — training.

References are independent of the package: the paper's equation (3) written out with
``math``, plain tensor slicing, PyTorch's own ``F.cross_entropy(label_smoothing=…,
ignore_index=…)``, and a hand-written training step on a small stand-in model.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._tools import CheckFailure, call, expect_close, expect_equal, expect_finite, expect_shape
from .registry import exercise

# -- ex07_1: the learning-rate schedule ---------------------------------------------------------


def _paper_lr(step: int, d_model: int, warmup: int, scale: float) -> float:
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


@exercise("ex07_1", "transformer_course.schedule:transformer_lr", "easy")
def check_transformer_lr(impl: Callable) -> int:
    """the warm-up / inverse-square-root learning rate

    Hint: scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5).
    """
    cases = 0
    for d_model, warmup, scale in ((512, 4000, 1.0), (128, 300, 0.5), (64, 1, 2.0), (1, 10, 1.0)):
        for step in sorted({1, 2, warmup // 2 or 1, warmup - 1 or 1, warmup, warmup + 1, 4 * warmup, 100_000}):
            case = f"step={step}, d_model={d_model}, warmup_steps={warmup}, scale={scale}"
            got = call(impl, step, d_model, warmup, scale, case=case)
            if isinstance(got, Tensor):
                got = got.item()
            if not isinstance(got, int | float):
                raise CheckFailure(f"{case}: return a float, got {type(got).__name__}")
            want = _paper_lr(step, d_model, warmup, scale)
            if math.isclose(
                got, scale * d_model**-0.5 * max(step**-0.5, step * warmup**-1.5), rel_tol=1e-6
            ) and not math.isclose(got, want, rel_tol=1e-6):
                raise CheckFailure(
                    f"{case}: got {got:.6g}, the larger of the two terms; the schedule takes the smaller (min)"
                )
            if not math.isclose(got, want, rel_tol=1e-6):
                raise CheckFailure(f"{case}: expected {want:.6g}, got {got:.6g}")
            cases += 1
    return cases


# -- ex07_2: teacher forcing -------------------------------------------------------------------


@exercise("ex07_2", "transformer_course.batching:teacher_forcing", "easy")
def check_teacher_forcing(impl: Callable) -> int:
    """teacher forcing: shift the target by one

    Hint: the decoder input is every column but the last, the labels every column but the first: tgt[:, :-1] and
    tgt[:, 1:].
    """
    bos, eos, pad = 1, 2, 0
    rows = [[bos, 5, 6, 7, eos], [bos, 8, eos, pad, pad], [bos, eos, pad, pad, pad]]
    tensors = [torch.tensor(rows), torch.tensor([[bos, 9, eos]]), torch.tensor([[bos, eos]])]
    tensors.append(torch.randint(3, 20, (4, 9)))
    for tgt in tensors:
        case = f"tgt {tgt.tolist() if tgt.numel() <= 15 else tuple(tgt.shape)}"
        result = call(impl, tgt, case=case)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise CheckFailure(f"{case}: return a tuple (decoder_input, labels), got {type(result).__name__}")
        decoder_in, labels = result
        b, t = tgt.shape[0], tgt.shape[1] - 1
        expect_shape(decoder_in, (b, t), "decoder input", case)
        expect_shape(labels, (b, t), "labels", case)
        if torch.equal(decoder_in, tgt[:, 1:]) and torch.equal(labels, tgt[:, :-1]):
            raise CheckFailure(f"{case}: the two are swapped: the decoder input starts with <bos>, the labels do not")
        if t > 1 and torch.equal(decoder_in, labels):
            raise CheckFailure(
                f"{case}: decoder input and labels are the same: the model would be asked to copy its input"
            )
        expect_equal(decoder_in, tgt[:, :-1], "decoder input", case)
        expect_equal(labels, tgt[:, 1:], "labels", case)
    return len(tensors)


# -- ex07_3: label-smoothed cross-entropy -------------------------------------------------------


@exercise("ex07_3", "transformer_course.loss:label_smoothed_cross_entropy", "medium")
def check_label_smoothed_cross_entropy(impl: Callable) -> int:
    """label-smoothed cross-entropy that ignores padding

    Hint: per token: (1 - ε)·(−log p[target]) + ε·mean over the vocabulary of (−log p); then average over the
    positions where target != pad_id only.
    """
    cases = 0
    for (b, t, v), smoothing, pad_id in (
        ((2, 5, 7), 0.1, 0),
        ((3, 4, 11), 0.0, 0),
        ((1, 6, 5), 0.3, 3),
        ((4, 1, 13), 0.1, 0),
    ):
        logits = torch.randn(b, t, v) * 2
        target = torch.randint(0, v, (b, t))
        target[target == pad_id] = (pad_id + 1) % v
        if t > 2:
            target[0, t - 2 :] = pad_id  # padding at the end of the first sentence
        if b > 2:
            target[1] = pad_id  # a sentence that is all padding (it must not count)
        case = f"logits {tuple(logits.shape)}, smoothing={smoothing}, pad_id={pad_id}, {int((target == pad_id).sum())} padding positions"
        got = call(impl, logits, target, smoothing, pad_id, case=case)
        got = expect_shape(got, (), "loss", case)
        want = F.cross_entropy(
            logits.reshape(-1, v), target.reshape(-1), label_smoothing=smoothing, ignore_index=pad_id
        )
        mean_all = F.cross_entropy(logits.reshape(-1, v), target.reshape(-1), label_smoothing=smoothing)
        if (
            (target == pad_id).any()
            and torch.allclose(got, mean_all, atol=1e-5)
            and not torch.allclose(mean_all, want, atol=1e-5)
        ):
            raise CheckFailure(f"{case}: the padding positions are counted; average over target != pad_id only")
        if smoothing and torch.allclose(
            got, F.cross_entropy(logits.reshape(-1, v), target.reshape(-1), ignore_index=pad_id), atol=1e-5
        ):
            raise CheckFailure(f"{case}: no smoothing was applied (the result is the plain cross-entropy)")
        expect_close(got, want, "loss", case, atol=1e-5)
        cases += 1
    # gradients flow, and the padding positions get none
    logits = torch.randn(2, 4, 6, requires_grad=True)
    target = torch.tensor([[3, 4, 2, 0], [5, 2, 0, 0]])
    case = "gradient of the loss with respect to the logits"
    loss = call(impl, logits, target, 0.1, 0, case=case)
    if not isinstance(loss, Tensor) or not loss.requires_grad:
        raise CheckFailure(f"{case}: the loss must be a tensor connected to the logits (do not call .item())")
    loss.backward()
    expect_finite(logits.grad, "gradient", case)
    if logits.grad[target == 0].abs().max() > 0:
        raise CheckFailure(f"{case}: padding positions received a gradient; they must not take part in the loss")
    return cases + 1


# -- ex07_4: one training step ---------------------------------------------------------------


class _StandIn(nn.Module):
    """A small model with the Transformer's interface: ``model(src, tgt_in) → logits (B, T, V)``."""

    def __init__(self, vocab: int = 9, d: int = 6) -> None:
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d)
        self.tgt_embed = nn.Embedding(vocab, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        context = self.src_embed(src).mean(1, keepdim=True)  # (B, 1, d)
        return self.out(torch.tanh(self.tgt_embed(tgt) + context))  # (B, T, V)


def _reference_step(model, batch, optimizer, scheduler, smoothing, max_grad_norm) -> float:
    logits = model(batch.src, batch.tgt_in)
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]),
        batch.tgt_out.reshape(-1),
        label_smoothing=smoothing,
        ignore_index=batch.pad_id,
    )
    optimizer.zero_grad()
    loss.backward()
    if max_grad_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_grad_norm)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item()


def _batch():
    from ...batching import Batch  # a plain container (src, tgt_in, tgt_out, pad_id), no exercise inside

    tgt = torch.tensor([[1, 4, 5, 6, 2], [1, 7, 2, 0, 0], [1, 3, 8, 2, 0]])
    return Batch(torch.tensor([[4, 5, 6], [7, 0, 0], [3, 8, 0]]), tgt[:, :-1], tgt[:, 1:], 0)


@exercise(
    "ex07_4", "transformer_course.step:train_step", "hard", also=("train_step_mixed_precision",), needs=("ex07_3",)
)
def check_train_step(impl: Callable) -> int:
    """one training step

    Hint: model.train(); logits = model(batch.src, batch.tgt_in); loss against batch.tgt_out with your
    label_smoothed_cross_entropy; optimizer.zero_grad(); loss.backward(); clip_grad_norm_ (if max_grad_norm is
    not None); optimizer.step(); scheduler.step() (if any); return loss.detach().
    """
    cases = 0
    settings = [
        ("SGD with momentum, no clipping", lambda p: torch.optim.SGD(p, lr=0.5, momentum=0.9), None, 0.1, None),
        ("Adam, clipping at 0.05", lambda p: torch.optim.Adam(p, lr=0.01), None, 0.1, 0.05),
        ("Adam with a scheduler, smoothing 0", lambda p: torch.optim.Adam(p, lr=0.01), True, 0.0, 1.0),
    ]
    for name, make_optimizer, with_scheduler, smoothing, max_norm in settings:
        torch.manual_seed(cases)
        ours = _StandIn()
        theirs = copy.deepcopy(ours)
        opt_ours, opt_ref = make_optimizer(ours.parameters()), make_optimizer(theirs.parameters())
        sch_ours = torch.optim.lr_scheduler.LambdaLR(opt_ours, lambda s: 1.0 / (s + 1)) if with_scheduler else None
        sch_ref = torch.optim.lr_scheduler.LambdaLR(opt_ref, lambda s: 1.0 / (s + 1)) if with_scheduler else None
        ours.eval()  # train_step must switch the model to training mode itself
        batch = _batch()
        for step in (1, 2, 3):  # several steps: stale gradients or a missing scheduler step show up
            case = f"{name}, step {step}"
            with torch.no_grad():  # the loss a model comparing with the unshifted target would report
                logits = ours(batch.src, batch.tgt_in).reshape(-1, 9)
                unshifted = F.cross_entropy(logits, batch.tgt_in.reshape(-1), label_smoothing=smoothing, ignore_index=0)
            got = call(impl, ours, batch, opt_ours, sch_ours, smoothing, max_norm, case=case)
            want = _reference_step(theirs, batch, opt_ref, sch_ref, smoothing, max_norm)
            if isinstance(got, float):
                raise CheckFailure(
                    f"{case}: return the loss as a tensor (loss.detach()), not a float: .item() makes the CPU "
                    "wait for a GPU at every step; the training loop reads the losses when it logs them"
                )
            got = expect_shape(got, (), "the returned loss", case)
            if got.requires_grad:
                raise CheckFailure(f"{case}: return loss.detach(): the returned loss still holds the graph of the step")
            got = got.item()
            if not ours.training:
                raise CheckFailure(f"{case}: the model is still in evaluation mode: call model.train()")
            if not math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-6):
                shifted = math.isclose(got, unshifted.item(), rel_tol=1e-5)
                hint = " (it is the loss against batch.tgt_in: compare with batch.tgt_out)" if shifted else ""
                raise CheckFailure(f"{case}: the returned loss is {got:.6g}, expected {want:.6g}{hint}")
            for (pname, p), q in zip(ours.named_parameters(), theirs.parameters(), strict=True):
                if not torch.allclose(p, q, atol=1e-5, rtol=1e-4):
                    reason = (
                        "were the old gradients cleared (optimizer.zero_grad())?"
                        if step > 1 and not with_scheduler and max_norm is None
                        else "clip after backward and before optimizer.step(); step the scheduler after the optimizer"
                    )
                    raise CheckFailure(f"{case}: parameter {pname} differs from the reference after the step: {reason}")
            if with_scheduler and sch_ours.last_epoch != step:
                raise CheckFailure(f"{case}: the scheduler was stepped {sch_ours.last_epoch} times after {step} steps")
            cases += 1
    return cases
