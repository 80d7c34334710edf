"""Chapter 08 — one training step: forward with teacher forcing, loss, backward, clip, update.

Gradient clipping is not in the paper; it makes short, aggressive runs safe. On a GPU the step
can run in mixed precision (bfloat16, or float16 with a gradient scaler on older GPUs): the same
step, with the lines marked ``# AMP`` doing their part. Without mixed precision those lines do
nothing: autocast is switched off and the scaler passes the loss and the optimizer step through.

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


@dataclass
class MixedPrecision:
    """How a step runs in lower precision: ``dtype`` for autocast, and a gradient scaler
    (only needed for float16, whose small range lets tiny gradients underflow to zero)."""

    dtype: torch.dtype
    scaler: torch.amp.GradScaler
    enabled: bool = True  # False: float32 everywhere, the scaler switched off too (see :meth:`off`)

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

    @classmethod
    def off(cls) -> MixedPrecision:
        """Plain float32: autocast does nothing, and the disabled scaler passes everything through
        (``scale(loss)`` is ``loss``, ``step(optimizer)`` is ``optimizer.step()``)."""
        return cls(torch.float32, torch.amp.GradScaler("cpu", enabled=False), enabled=False)

    def autocast(self, device: torch.device) -> torch.autocast:
        """The context in which the forward pass runs: ``dtype`` matmuls, or nothing when off."""
        return torch.autocast(device.type, dtype=self.dtype, enabled=self.enabled)


def train_step(
    model: nn.Module,
    batch: Batch,
    optimizer: torch.optim.Optimizer,
    scheduler: LambdaLR | None = None,
    smoothing: float = 0.1,
    max_grad_norm: float | None = 1.0,
    precision: MixedPrecision | None = None,
) -> Tensor:
    """One update: forward with teacher forcing, loss, backward, clip, step.

    ``model(batch.src, batch.tgt_in)`` gives logits (B, T, V) that are compared with
    ``batch.tgt_out`` (the targets shifted by one, see :func:`~transformer_course.batching.teacher_forcing`).
    Gradients of the previous step are cleared first; the gradient norm is clipped to
    ``max_grad_norm`` (None: no clipping) before the optimizer step; then the scheduler steps.

    ``precision`` (a GPU's :meth:`MixedPrecision.for_device`) runs the forward pass under autocast
    and lets its gradient scaler scale the loss, unscale the gradients before clipping, and make
    the optimizer step; None is plain float32, where the lines marked ``# AMP`` change nothing.

    Returns:
        the loss as a 0-dimensional tensor detached from the graph (``loss.detach()``): the caller
        reads its value (``.item()``) only when it logs it, so the CPU does not wait for a GPU at every step.
    """
    precision = precision if precision is not None else MixedPrecision.off()
    ### BEGIN SOLUTION
    model.train()
    with precision.autocast(batch.src.device):  # AMP: matmuls in low precision
        logits = model(batch.src, batch.tgt_in)  # (B, T, V), in precision.dtype
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)  # ()
    optimizer.zero_grad(set_to_none=True)
    precision.scaler.scale(loss).backward()  # AMP: scale the loss up so float16 gradients do not vanish
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)  # AMP: clip the true gradients, not the scaled ones
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)  # AMP: skips the step if a gradient overflowed
    precision.scaler.update()  # AMP
    if scheduler is not None:
        scheduler.step()
    return loss.detach()  # a tensor: reading it (.item()) would make the CPU wait for a GPU
    ### END SOLUTION
