"""Wrong answers for chapter 07: schedules, shifts, losses and training steps that look right."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from transformer_course.loss import label_smoothed_cross_entropy

# ex07_1 — transformer_lr


def _max_instead_of_min(step, d_model, warmup_steps, scale=1.0):
    return scale * d_model**-0.5 * max(step**-0.5, step * warmup_steps**-1.5)


def _warmup_power_wrong(step, d_model, warmup_steps, scale=1.0):
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-0.5)


def _no_d_model(step, d_model, warmup_steps, scale=1.0):
    return scale * min(step**-0.5, step * warmup_steps**-1.5)


def _scale_ignored(step, d_model, warmup_steps, scale=1.0):
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def _counts_from_zero(step, d_model, warmup_steps, scale=1.0):
    step = max(step - 1, 1)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


# ex07_2 — teacher_forcing


def _not_shifted(tgt):
    return tgt, tgt


def _swapped(tgt):
    return tgt[:, 1:], tgt[:, :-1]


def _shifts_the_batch_axis(tgt):
    return tgt[:-1], tgt[1:]


def _rolls_instead_of_cutting(tgt):
    return tgt, tgt.roll(-1, dims=1)


# ex07_3 — label_smoothed_cross_entropy


def _counts_padding(logits, target, smoothing=0.1, pad_id=0):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), label_smoothing=smoothing)


def _no_smoothing(logits, target, smoothing=0.1, pad_id=0):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=pad_id)


def _smooths_over_the_other_tokens(logits, target, smoothing=0.1, pad_id=0):
    # ε/(V−1) on every wrong token instead of ε/V on every token
    log_probs = logits.log_softmax(-1)
    vocab = logits.shape[-1]
    q = torch.full_like(log_probs, smoothing / (vocab - 1)).scatter(-1, target.unsqueeze(-1), 1 - smoothing)
    per_token = -(q * log_probs).sum(-1)
    keep = target != pad_id
    return per_token[keep].mean()


def _padding_zeroed_but_counted(logits, target, smoothing=0.1, pad_id=0):
    log_probs = logits.log_softmax(-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * nll - smoothing * log_probs.mean(-1)
    return (per_token * (target != pad_id)).mean()


def _returns_a_float(logits, target, smoothing=0.1, pad_id=0):
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), target.reshape(-1), label_smoothing=smoothing, ignore_index=pad_id
    )
    return torch.tensor(loss.item())


# ex07_4 — train_step


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


def _labels_not_shifted(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, labels="in")


def _no_zero_grad(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, zero=False)


def _clips_before_backward(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, clip_first=True)


def _forgets_the_scheduler(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, step_scheduler=False)


def _stays_in_eval_mode(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, train=False)


def _returns_a_float_step(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, returns="float")


def _returns_the_graph(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm, precision, returns="graph")


def _ignores_smoothing(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, 0.0, max_grad_norm, precision)


def _ignores_precision(m, b, o, s=None, smoothing=0.1, max_grad_norm=1.0, precision=None):
    return _step(m, b, o, s, smoothing, max_grad_norm)


MUTANTS = {
    "ex07_1": [
        ("max instead of min", _max_instead_of_min),
        ("warmup_steps**-0.5 instead of **-1.5", _warmup_power_wrong),
        ("no d_model**-0.5 factor", _no_d_model),
        ("scale ignored", _scale_ignored),
        ("off by one step", _counts_from_zero),
    ],
    "ex07_2": [
        ("target not shifted", _not_shifted),
        ("input and labels swapped", _swapped),
        ("shifts along the batch axis", _shifts_the_batch_axis),
        ("roll wraps <bos> round to the end", _rolls_instead_of_cutting),
    ],
    "ex07_3": [
        ("padding counted in the mean", _counts_padding),
        ("no label smoothing", _no_smoothing),
        ("ε/(V−1) on the wrong tokens only", _smooths_over_the_other_tokens),
        ("padding zeroed but still in the denominator", _padding_zeroed_but_counted),
        ("detached from the graph", _returns_a_float),
    ],
    "ex07_4": [
        ("labels not shifted (compared with tgt_in)", _labels_not_shifted),
        ("optimizer.zero_grad() forgotten", _no_zero_grad),
        ("clips before backward", _clips_before_backward),
        ("scheduler never stepped", _forgets_the_scheduler),
        ("model left in eval mode", _stays_in_eval_mode),
        ("returns loss.item(), a float (the CPU waits for a GPU every step)", _returns_a_float_step),
        ("returns the loss with its graph (not detached)", _returns_the_graph),
        ("smoothing ignored", _ignores_smoothing),
        ("precision ignored (no autocast: float32 everywhere)", _ignores_precision),
    ],
}
