"""Chapter 08 — the learning-rate schedule and the optimizer of the paper (§5.3).

* **Adam** with β₁ = 0.9, β₂ = 0.98, ε = 1e-9;
* the **learning rate** of equation (3): a linear warm-up for ``warmup_steps`` steps, then a decay
  with the inverse square root of the step number, scaled by d_model^-0.5.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR


def transformer_lr(step: int, d_model: int, warmup_steps: int, scale: float = 1.0) -> float:
    """Equation (3) of the paper: ``scale · d_model^-0.5 · min(step^-0.5, step · warmup_steps^-1.5)``.

    It rises linearly for ``warmup_steps`` steps, peaks at ``step == warmup_steps`` with
    ``scale · (d_model · warmup_steps)^-0.5``, then falls as ``1/√step``. Steps count from 1.
    """
    if step < 1:
        raise ValueError(f"step must be >= 1 (the paper counts steps from 1), got {step}")
    if d_model < 1 or warmup_steps < 1:
        raise ValueError(f"d_model and warmup_steps must be >= 1, got {d_model} and {warmup_steps}")
    ### BEGIN SOLUTION
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)
    ### END SOLUTION


def transformer_scheduler(
    optimizer: torch.optim.Optimizer, d_model: int, warmup_steps: int, scale: float = 1.0
) -> LambdaLR:
    """The schedule as a PyTorch scheduler: call ``scheduler.step()`` after each ``optimizer.step()``.

    ``LambdaLR`` multiplies each group's initial ``lr`` by the function's value, so make the
    optimizer with ``lr=1.0`` (see :func:`make_optimizer`). It counts from 0 and the paper from 1:
    the first update uses ``transformer_lr(1, …)``.
    """
    return LambdaLR(optimizer, lambda count: transformer_lr(count + 1, d_model, warmup_steps, scale))


def make_optimizer(model: nn.Module) -> torch.optim.Adam:
    """Adam with the paper's β₁ = 0.9, β₂ = 0.98, ε = 1e-9 and ``lr=1.0`` (the scheduler sets the rate)."""
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
