"""Chapter 14 — the training recipe of today's language models: AdamW, warm-up, cosine decay.

The paper (chapter 08) used Adam with β₂ = 0.98 and a rate that rises linearly for
``warmup_steps`` and then falls as 1/√step, forever. Language models since GPT-3 mostly use:

* **AdamW** (Loshchilov & Hutter 2019): Adam with *decoupled* weight decay, each step shrinking
  the weights by ``lr · weight_decay`` outside the adaptive update. It is applied to the weight
  matrices (and the embedding) only: biases and the gains of LayerNorm/RMSNorm are left alone,
  since pulling a gain towards 0 switches its features off;
* a **linear warm-up** to a peak rate, then a **cosine decay** to a floor (a tenth of the peak
  here) at the last step: a schedule that knows how long the run is.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR


def warmup_cosine_lr(step: int, warmup_steps: int, total_steps: int, min_ratio: float = 0.1) -> float:
    """The fraction of the peak rate at ``step`` (counted from 1, as chapter 08's schedule):
    ``step / warmup_steps`` during the warm-up, then a half cosine from 1 down to ``min_ratio`` at
    ``total_steps``, and ``min_ratio`` after it."""
    if step < 1:
        raise ValueError(f"step must be >= 1, got {step}")
    if warmup_steps < 0 or total_steps < 1 or warmup_steps >= total_steps:
        raise ValueError(
            f"need 0 <= warmup_steps < total_steps, got warmup_steps={warmup_steps}, total_steps={total_steps}"
        )
    if not 0.0 <= min_ratio <= 1.0:
        raise ValueError(f"min_ratio must be in [0, 1], got {min_ratio}")
    if step <= warmup_steps:
        return step / warmup_steps
    progress = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))  # 0 → 1 over the decay
    return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))


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
    the embedding included) and none on biases and normalisation gains (one dimension)."""
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    if not weight_decay >= 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    matrices = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    others = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": matrices, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)
