"""Chapter 07 — one training step: forward with teacher forcing, loss, backward, clip, update.

Gradient clipping is not in the paper; it makes short, aggressive runs safe. On a GPU the step
can run in mixed precision (bfloat16, or float16 with a gradient scaler on older GPUs).

The step returns the loss as a tensor, not a number: reading a GPU tensor's value makes the CPU
wait for the GPU, so the training loop reads the losses only when it logs them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.optim.lr_scheduler import LambdaLR

from .batching import Batch
from .loss import label_smoothed_cross_entropy


def train_step(
    model: nn.Module,
    batch: Batch,
    optimizer: torch.optim.Optimizer,
    scheduler: LambdaLR | None = None,
    smoothing: float = 0.1,
    max_grad_norm: float | None = 1.0,
) -> Tensor:
    """One update: forward with teacher forcing, loss, backward, clip, step.

    ``model(batch.src, batch.tgt_in)`` gives logits (B, T, V) that are compared with
    ``batch.tgt_out`` (the targets shifted by one, see :func:`~transformer_course.batching.teacher_forcing`).
    Gradients of the previous step are cleared first; the gradient norm is clipped to
    ``max_grad_norm`` (None: no clipping) before the optimizer step; then the scheduler steps.

    Returns:
        the loss as a 0-dimensional tensor detached from the graph (``loss.detach()``): the caller
        reads its value (``.item()``) only when it logs it, so the CPU does not wait for a GPU at every step.
    """
    ### BEGIN SOLUTION
    model.train()
    logits = model(batch.src, batch.tgt_in)  # (B, T, V)
    loss = label_smoothed_cross_entropy(logits, batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if max_grad_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()  # a tensor: reading it (.item()) would make the CPU wait for a GPU
    ### END SOLUTION


@dataclass
class MixedPrecision:
    """How a GPU step runs in lower precision: ``dtype`` for autocast, and a gradient scaler
    (only needed for float16, whose small range lets tiny gradients underflow to zero)."""

    dtype: torch.dtype
    scaler: torch.amp.GradScaler

    @classmethod
    def for_device(cls, device: torch.device | str) -> MixedPrecision | None:
        """bfloat16 on GPUs that have it (A100, H100, L4…), float16 + scaler on older ones (T4);
        None (plain float32) on the CPU and on MPS."""
        device = torch.device(device)
        if device.type != "cuda":
            return None
        if torch.cuda.get_device_capability(device) >= (8, 0):  # bfloat16 in hardware, not emulated
            return cls(torch.bfloat16, torch.amp.GradScaler("cuda", enabled=False))
        return cls(torch.float16, torch.amp.GradScaler("cuda"))


def train_step_mixed_precision(
    model: nn.Module,
    batch: Batch,
    optimizer: torch.optim.Optimizer,
    precision: MixedPrecision,
    scheduler: LambdaLR | None = None,
    smoothing: float = 0.1,
    max_grad_norm: float | None = 1.0,
) -> Tensor:
    """:func:`train_step` with autocast and a gradient scaler; the differences are marked ``# AMP``.

    Part of exercise ex07_4 (it would show the answer of ``train_step`` otherwise); used on CUDA only.
    """
    ### BEGIN SOLUTION
    model.train()
    with torch.autocast(batch.src.device.type, dtype=precision.dtype):  # AMP: matmuls in low precision
        logits = model(batch.src, batch.tgt_in)  # precision.dtype, (B, T, V)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad()
    precision.scaler.scale(loss).backward()  # AMP: scale the loss up so float16 gradients do not vanish
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)  # AMP: clip the true gradients, not the scaled ones
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)  # AMP: skips the step if a gradient overflowed
    precision.scaler.update()
    if scheduler is not None:
        scheduler.step()
    return loss.detach()  # a tensor: reading it (.item()) would make the CPU wait for a GPU
    ### END SOLUTION
