"""How many operations a computation asks of PyTorch: ``CountOps``.

Every call that reaches PyTorch's dispatcher (a matrix product, an addition, a view, a copy) is
one ATen operation. A decoding step of one sentence does little arithmetic, so the number of its
operations, each with a fixed cost of a few microseconds, weighs as much as their size. Chapter 09
counts them for the learner's modules and for the inference engine; ``tests/test_engine_ops.py``
holds the engine to at most 45 per layer.
"""

from __future__ import annotations

from collections import Counter

from torch.utils._python_dispatch import TorchDispatchMode


class CountOps(TorchDispatchMode):
    """Counts the ATen operations run inside its ``with`` block, by name (``self.ops``)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - PyTorch's signature
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))
