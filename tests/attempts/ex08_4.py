"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from transformer_course.loss import label_smoothed_cross_entropy
from transformer_course.step import MixedPrecision

from . import wrong

# -- mutants


def _step(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision=None, *, labels="out", zero=True,
          clip_first=False, step_scheduler=True, train=True, returns="detached"):  # fmt: skip
    if train:
        model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision is not None):  # the scaler is off in the cases
        logits = model(batch.src, batch.tgt_in).float()
    target = batch.tgt_out if labels == "out" else batch.tgt_in
    loss = label_smoothed_cross_entropy(logits, target, smoothing, batch.pad_id)
    if zero:
        optimizer.zero_grad()
    if clip_first and max_grad_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    loss.backward()
    if not clip_first and max_grad_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    if scheduler is not None and step_scheduler:
        scheduler.step()
    return {"detached": loss.detach(), "float": loss.item(), "graph": loss}[returns]


@wrong("mutant", "labels not shifted (compared with tgt_in)")
def _labels_not_shifted(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, labels="in")


@wrong("mutant", "optimizer.zero_grad() forgotten")
def _no_zero_grad(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, zero=False)


@wrong("mutant", "clips before backward")
def _clips_before_backward(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, clip_first=True)


@wrong("mutant", "scheduler never stepped")
def _forgets_the_scheduler(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, step_scheduler=False)


@wrong("mutant", "model left in eval mode")
def _stays_in_eval_mode(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, train=False)


@wrong("mutant", "returns loss.item(), a float (the CPU waits for a GPU every step)")
def _returns_a_float_step(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, returns="float")


@wrong("mutant", "returns the loss with its graph (not detached)")
def _returns_the_graph(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, returns="graph")


@wrong("mutant", "smoothing ignored")
def _ignores_smoothing(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, 0.0, max_grad_norm, precision)


@wrong("mutant", "precision ignored (no autocast: float32 everywhere)")
def _ignores_precision(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm)


# -- own mistakes and alternatives


def _train(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision, order):
    model.train()
    with precision.autocast(batch.src.device) if precision else contextlib.nullcontext():
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    parts = {
        "zero": optimizer.zero_grad,
        "backward": loss.backward,
        "clip": lambda: max_grad_norm is None or nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm),
        "step": optimizer.step,
        "schedule": lambda: scheduler is None or scheduler.step(),
    }
    for part in order:
        parts[part]()
    return loss.detach()


@wrong("own", says="zero_grad() comes after loss.backward()")
def _zero_grad_after_backward(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision=None):
    order = ("backward", "zero", "clip", "step", "schedule")
    return _train(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision, order)


@wrong("own", says="the scheduler is stepped before the optimizer")
def _scheduler_first(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision=None):
    order = ("zero", "backward", "clip", "schedule", "step")
    return _train(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision, order)


@wrong("own", says="the gradients are not clipped")
def _never_clipped(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision=None):
    order = ("zero", "backward", "step", "schedule")
    return _train(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision, order)


# -- tester set 'first'


@wrong("tester", "optimizer.zero_grad() after backward (clears the new gradients)", by="first")
def ex08_4_zero_grad_after_backward(
    model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None
):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    precision.scaler.scale(loss).backward()
    optimizer.zero_grad(set_to_none=True)  # clears the gradients just computed
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


@wrong("tester", "gradient clipping after optimizer.step()", by="first")
def ex08_4_clip_after_step(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad(set_to_none=True)
    precision.scaler.scale(loss).backward()
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if max_grad_norm is not None:  # too late: the step already used the unclipped gradients
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


@wrong("tester", "forgot model.train()", by="first")
def ex08_4_no_train_mode(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad(set_to_none=True)
    precision.scaler.scale(loss).backward()
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


@wrong("tester", "scheduler.step() before optimizer.step()", by="first")
def x07_4_scheduler_before_step(
    model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None
):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    if scheduler is not None:
        scheduler.step()  # before the optimizer's step
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad(set_to_none=True)
    precision.scaler.scale(loss).backward()
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    return loss.detach()


# -- tester set 'second'


@wrong("tester", "never clears gradients (accumulate across steps)", by="second")
def ts_no_zero_grad(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    precision.scaler.scale(loss).backward()
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


@wrong("tester", "clips gradients after optimizer.step()", by="second")
def ts_clip_after_step(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad(set_to_none=True)
    precision.scaler.scale(loss).backward()
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if max_grad_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


@wrong("tester", "forgot model.train() (trains in eval mode: no dropout)", by="second")
def ts_no_train_mode(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad(set_to_none=True)
    precision.scaler.scale(loss).backward()
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


# -- tester set 'third'


@wrong("tester", "zero_grad after backward (clears the gradients before the step)", by="third")
def ts_zero_after(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    precision.scaler.scale(loss).backward()
    optimizer.zero_grad(set_to_none=True)
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


@wrong("tester", "gradients clipped after the optimizer step", by="third")
def ts_clip_after(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    model.train()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad(set_to_none=True)
    precision.scaler.scale(loss).backward()
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if max_grad_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    if scheduler is not None:
        scheduler.step()
    return loss.detach()


@wrong("tester", "model.train() forgotten (dropout stays off if the model was in eval mode)", by="third")
def ts_no_train(model, batch, optimizer, scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    precision = precision if precision is not None else MixedPrecision.off()
    with precision.autocast(batch.src.device):
        logits = model(batch.src, batch.tgt_in)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad(set_to_none=True)
    precision.scaler.scale(loss).backward()
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)
    precision.scaler.update()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()
