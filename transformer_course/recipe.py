"""Chapter 14 — the training recipe of today's language models: AdamW, warm-up, cosine decay.

The paper (chapter 08) used Adam with β₂ = 0.98 and a rate that rises linearly for
``warmup_steps`` and then falls as 1/√step, forever. Language models since GPT-3 mostly use:

* **AdamW** (Loshchilov & Hutter 2019): Adam with *decoupled* weight decay, each step shrinking
  the weights by ``lr · weight_decay`` outside the adaptive update. It is applied to the weight
  matrices (and the embedding) only: biases and the gains of LayerNorm/RMSNorm are left alone,
  since pulling a gain towards 0 switches its features off;
* a **linear warm-up** to a peak rate, then a **cosine decay** to a floor (a tenth of the peak
  here) at the last step: a schedule that knows how long the run is.

:func:`adamw_step` writes out what ``torch.optim.AdamW`` does to one tensor at one step.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.optim.lr_scheduler import LambdaLR


def warmup_cosine_lr(step: int, warmup_steps: int, total_steps: int, min_ratio: float = 0.1) -> float:
    """The fraction of the peak rate at ``step`` (counted from 1, as chapter 08's schedule):
    ``step / warmup_steps`` during the warm-up, then a half cosine from 1 down to ``min_ratio`` at
    ``total_steps``, and ``min_ratio`` after it.

    Shape:
        plain numbers in, one float out (a fraction of the peak: 1 at the end of the warm-up)
    """
    if step < 1:
        raise ValueError(f"step must be >= 1, got {step}")
    if warmup_steps < 0 or total_steps < 1 or warmup_steps >= total_steps:
        raise ValueError(
            f"need 0 <= warmup_steps < total_steps, got warmup_steps={warmup_steps}, total_steps={total_steps}"
        )
    if not 0.0 <= min_ratio <= 1.0:
        raise ValueError(f"min_ratio must be in [0, 1], got {min_ratio}")
    ### BEGIN SOLUTION
    if step <= warmup_steps:
        return step / warmup_steps
    progress = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))  # 0 → 1 over the decay
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))
    ### END SOLUTION


def warmup_cosine_scheduler(
    optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int, min_ratio: float = 0.1
) -> LambdaLR:
    """:func:`warmup_cosine_lr` as a PyTorch scheduler: the optimizer's ``lr`` is the peak rate."""
    warmup_cosine_lr(1, warmup_steps, total_steps, min_ratio)  # check the arguments now, not at the first step
    return LambdaLR(optimizer, lambda count: warmup_cosine_lr(count + 1, warmup_steps, total_steps, min_ratio))


def make_adamw(
    model: nn.Module, lr: float = 1e-3, weight_decay: float = 0.1, betas: tuple[float, float] = (0.9, 0.95)
) -> torch.optim.AdamW:
    """AdamW with ``weight_decay`` on the matrices (every parameter of two or more dimensions,
    the embedding included) and none on biases and normalisation gains (one dimension).

    Shape:
        a module in, an optimizer out
    """
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    if not weight_decay >= 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    ### BEGIN SOLUTION
    matrices = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    others = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": matrices, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)
    ### END SOLUTION


def adamw_step(
    param: Tensor,
    grad: Tensor,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    step: int,
    lr: float,
    betas: tuple[float, float] = (0.9, 0.95),
    eps: float = 1e-8,
    weight_decay: float = 0.1,
) -> tuple[Tensor, Tensor, Tensor]:
    """One step of AdamW on one tensor, written out: what ``torch.optim.AdamW`` does to each parameter.

    ``exp_avg`` and ``exp_avg_sq`` are the running means of the gradient and of its square before
    this step (zeros before the first); ``step`` counts from 1. The inputs are left unchanged.

    Shape:
        param, grad, exp_avg, exp_avg_sq: four tensors of one shape in → (param, exp_avg, exp_avg_sq) after
        the step, three of that shape
    """
    for name, tensor in (("grad", grad), ("exp_avg", exp_avg), ("exp_avg_sq", exp_avg_sq)):
        if tensor.shape != param.shape:
            raise ValueError(f"{name} must have the shape of param {tuple(param.shape)}, got {tuple(tensor.shape)}")
    if step < 1:
        raise ValueError(f"step must be >= 1 (the first step is 1), got {step}")
    if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
        raise ValueError(f"betas must be two numbers in [0, 1), got {betas}")
    ### BEGIN SOLUTION
    beta1, beta2 = betas
    exp_avg = beta1 * exp_avg + (1 - beta1) * grad  # the mean of the gradient
    exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad  # the mean of its square
    mean = exp_avg / (1 - beta1**step)  # both means start at 0: the bias corrections undo that
    mean_square = exp_avg_sq / (1 - beta2**step)
    decayed = param * (1 - lr * weight_decay)  # decoupled: the decay never passes through the adaptive step
    return decayed - lr * mean / (mean_square.sqrt() + eps), exp_avg, exp_avg_sq
    ### END SOLUTION
