"""One decoding plan per model, made once and made again when the model's parameters change.

:func:`plan_for` reads a model (:mod:`~.read`) the first time the engine is asked to decode with
it, and keeps the plan (:mod:`~.parts`) while the model's parameters stay as they were.
"""

from __future__ import annotations

import weakref

import torch
from torch import nn

from .parts import Plan
from .read import read_model, room

_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model → (weights_stamp, plan)


def plan_for(model: nn.Module) -> Plan:
    """The decoding plan of ``model``: made at the first call, then reused while the model's
    parameters and buffers hold the values it was made from.

    A plan is made again when any of them may have changed since: an optimizer's step or
    ``load_state_dict`` (PyTorch counts every in-place change of a tensor), a tensor replaced or
    moved (``.to(...)``), and a write PyTorch does not count, through ``.data`` or a NumPy view
    (every tensor's bytes are summed at every call: one pass over the weights, about what one
    decoding step at batch 1 reads; :func:`weights_stamp`). The plans are kept by weak reference:
    they go when the model goes.
    """
    stamp = weights_stamp(model)
    held = _PLANS.get(model)
    if held is None or held[0] != stamp:
        held = (stamp, read_model(model))
        _PLANS[model] = held
    return held[1]


def weights_stamp(model: nn.Module) -> tuple:
    """What identifies the values of a model's tensors: each one's identity, storage, version
    counter, shape, dtype and device, and the sum of its bytes (``_validate.checksum``)."""
    tensors = [t for _, t in model.named_parameters()] + [t for _, t in model.named_buffers()]
    ids = tuple((id(t), t.data_ptr(), t._version, tuple(t.shape), t.dtype, t.device) for t in tensors)
    with torch.no_grad():
        sums = [room("_validate").checksum(t) for t in tensors if t.numel()]
        values = torch.stack(sums).tolist() if sums else []  # one read of them all
    return ids, tuple(values)
