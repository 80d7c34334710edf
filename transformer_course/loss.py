"""Chapter 08 — the training loss: cross-entropy with label smoothing (paper §5.4).

Label smoothing (ε = 0.1 in the paper): the target distribution puts 1 − ε on the right token
and spreads ε over the vocabulary, so the model is never pushed towards infinite confidence.
Padding positions take no part in the loss.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor


def smoothed_targets(target: Tensor, vocab_size: int, smoothing: float) -> Tensor:
    """The distribution label smoothing trains towards: ``(1 − ε)·one_hot + ε/V`` everywhere.

    Shape:
        target: (...,) ids → (..., V) probabilities (each row sums to 1)
    """
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"smoothing must be in [0, 1], got {smoothing}")
    one_hot = F.one_hot(target, vocab_size).float()  # (..., V)
    return (1.0 - smoothing) * one_hot + smoothing / vocab_size


def label_smoothed_cross_entropy(logits: Tensor, target: Tensor, smoothing: float = 0.1, pad_id: int = 0) -> Tensor:
    """Cross-entropy against the label-smoothed targets, averaged over the non-padding tokens.

    The same number as ``F.cross_entropy(logits.reshape(-1, V), target.reshape(-1),
    label_smoothing=smoothing, ignore_index=pad_id)``: the smoothed target is
    ``(1 − ε)·one_hot + ε/V`` (PyTorch's choice; the ε/V also lands on ``<pad>`` and on the
    right token), and a padding position contributes nothing, to the sum or to the count.

    Shape:
        logits: (B, T, V) float, target: (B, T) ids → a scalar tensor (keep it differentiable)
    """
    if logits.dim() != 3 or target.shape != logits.shape[:2]:
        raise ValueError(
            f"logits must be (B, T, V) and target (B, T), got logits {tuple(logits.shape)} and target {tuple(target.shape)}"
        )
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"smoothing must be in [0, 1], got {smoothing}")
    ### BEGIN SOLUTION
    log_probs = logits.float().log_softmax(dim=-1)  # (B, T, V)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (B, T): −log p(right token)
    uniform = -log_probs.mean(dim=-1)  # (B, T): cross-entropy with the uniform distribution
    per_token = (1.0 - smoothing) * nll + smoothing * uniform  # (B, T)
    keep = target != pad_id  # (B, T)
    return (per_token * keep).sum() / keep.sum().clamp(min=1)
    ### END SOLUTION
