"""How much memory a computation needs at its peak: ``peak_memory_mib(fn)``.

Chapter 13 compares attention that builds the whole (T, S) matrix of weights with attention that
reads the keys one block at a time. What differs is the *peak*: the most memory held at once while
the call runs, not what is left at the end.

* On a CUDA GPU, PyTorch's allocator keeps the count itself: ``torch.cuda.max_memory_allocated``.
* On the CPU there is no such counter, and the memory of the process (its resident set size) moves
  with everything else the process does. So :class:`TensorMemory` watches the tensors instead: every
  operation that reaches PyTorch's dispatcher is seen by a ``TorchDispatchMode``, each new storage it
  returns is added to the count, and a finaliser subtracts it when the storage is freed. The peak of
  that count is the most the tensors of ``fn`` held at once. Scratch memory that a kernel allocates
  and frees inside one operation (without returning it as a tensor) is not seen; everything a model
  keeps is. ``benchmarks/memory.py`` checks it against the profiler's allocator events and the peak
  resident set size of a fresh process.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

MIB = 2**20


class TensorMemory(TorchDispatchMode):
    """Inside ``with TensorMemory() as memory:``, ``memory.live`` is the number of bytes held by the
    storages created in the block and not freed yet, and ``memory.peak`` the most it has been."""

    def __init__(self) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self._sizes: dict[int, int] = {}  # storage (its C pointer) → bytes, while it lives

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 - PyTorch's signature
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs = {x.untyped_storage()._cdata for x in tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)}
        for x in tree_leaves(out):
            if isinstance(x, torch.Tensor):
                self._count(x.untyped_storage(), inputs)
        return out

    def _count(self, storage: torch.UntypedStorage, inputs: set[int]) -> None:
        """Count ``storage`` if it is new: not an input of the operation (a view, an in-place result)
        and not counted already."""
        key = storage._cdata
        if key in inputs or key in self._sizes:
            return
        self._sizes[key] = storage.nbytes()
        self.live += storage.nbytes()
        self.peak = max(self.peak, self.live)
        weakref.finalize(storage, self._free, key)

    def _free(self, key: int) -> None:
        self.live -= self._sizes.pop(key, 0)


def peak_memory_mib(fn: Callable[[], object], device: torch.device | str = "cpu") -> float:
    """The most memory ``fn()`` holds at once while it runs, in MiB (2²⁰ bytes), above what was held
    when it started; what ``fn`` returns counts while it exists (it is dropped at the end).

    ``device``: where ``fn`` computes. On CUDA the allocator's own peak
    (``torch.cuda.max_memory_allocated``); elsewhere the peak of the tensors ``fn`` creates
    (:class:`TensorMemory`).

    Example::

        q = k = v = torch.randn(1, 4, 2048, 64)
        peak_memory_mib(lambda: blocked_attention(q, k, v))  # a few MiB, against ~130 for the full matrix
    """
    if not callable(fn):
        raise ValueError(f"fn must be a function of no arguments, got {type(fn).__name__}")
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        start = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn()
        torch.cuda.synchronize(device)
        return (torch.cuda.max_memory_allocated(device) - start) / MIB
    with TensorMemory() as memory:
        fn()
    return memory.peak / MIB
