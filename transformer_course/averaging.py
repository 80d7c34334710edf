"""Chapter 12 — checkpoint averaging (paper §6.1): the mean of the last few checkpoints' weights.

"For the base models, we used a single model obtained by averaging the last 5 checkpoints, which
were written at 10-minute intervals." Late in training the weights wander around a minimum, pushed
one way and then another by the batches; the mean of a few points of that walk tends to lie closer
to the middle than any one of them. It costs nothing but the disk space of the checkpoints: no
extra training, and the averaged model is as fast as any other.

The checkpoints must come from one run (the same architecture, late enough that they lie in one
valley): averaging two models trained separately gives nonsense, because the units of one are not
in the same order as the units of the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import torch
from torch import Tensor

from .checkpoint import Checkpoint, load_checkpoint


def average_state_dicts(states: Sequence[Mapping[str, Tensor]]) -> dict[str, Tensor]:
    """The element-wise mean of several ``state_dict`` s of one architecture.

    Floating-point tensors are averaged (summed in float64, so that the order of the checkpoints
    does not change the result, then given back their dtype); other tensors (integer counters,
    boolean buffers) cannot be averaged and must be equal in all of them: they are kept as they
    are. States of other keys, or of another shape or dtype for a key, raise ``ValueError``.

    Shape:
        N dicts of tensors with the same keys and shapes → one dict of the same keys and shapes
    """
    if not states:
        raise ValueError("states is empty: nothing to average")
    ### BEGIN SOLUTION
    keys = list(states[0])
    for i, state in enumerate(states[1:], start=1):
        if list(state) != keys:
            differ = sorted(set(state) ^ set(keys))
            raise ValueError(f"state {i} has other keys than state 0 (e.g. {differ[:3]}): not the same architecture")
    averaged = {}
    for key in keys:
        tensors = [state[key] for state in states]
        first = tensors[0]
        for i, tensor in enumerate(tensors[1:], start=1):
            if tensor.shape != first.shape or tensor.dtype != first.dtype:
                raise ValueError(
                    f"{key}: state {i} has {tuple(tensor.shape)} {tensor.dtype}, state 0 has "
                    f"{tuple(first.shape)} {first.dtype}"
                )
        if first.is_floating_point():
            total = torch.stack([t.detach().double() for t in tensors]).sum(dim=0)  # (*shape) in float64
            averaged[key] = (total / len(tensors)).to(first.dtype)
        else:
            if any(not torch.equal(t, first) for t in tensors[1:]):
                raise ValueError(f"{key} is not floating point and differs between the states: cannot average it")
            averaged[key] = first.clone()
    ### END SOLUTION
    return averaged


def average_checkpoints(paths: Sequence[str | Path], map_location: str | torch.device = "cpu") -> Checkpoint:
    """Load checkpoints of one run and average their model weights.

    Returns the *last* checkpoint (its step, vocabularies, tokenizer, ``extra``) with the averaged
    weights in its model; ``extra["averaged_steps"]`` lists the steps that were averaged. The
    optimizer and scheduler states are dropped: they belong to the last checkpoint's weights only.
    Checkpoints of another configuration or other tokens raise ``ValueError``.
    """
    if not paths:
        raise ValueError("paths is empty: give the checkpoints to average")
    checkpoints = [load_checkpoint(path, map_location) for path in paths]
    last = checkpoints[-1]
    for path, checkpoint in zip(paths, checkpoints, strict=True):
        if checkpoint.config != last.config:
            raise ValueError(f"{path} has another model configuration than {paths[-1]}: not checkpoints of one run")
        if (checkpoint.src_vocab, checkpoint.tgt_vocab, checkpoint.tokenizer) != (
            last.src_vocab,
            last.tgt_vocab,
            last.tokenizer,
        ):
            raise ValueError(f"{path} has other tokens than {paths[-1]}: not checkpoints of one run")
    last.model.load_state_dict(average_state_dicts([c.model.state_dict() for c in checkpoints]))
    last.optimizer_state = last.scheduler_state = None
    last.extra = {**last.extra, "averaged_steps": [c.step for c in checkpoints]}
    return last
