"""Chapter 08 — a key/value cache for incremental decoding.

Without a cache, choosing token t+1 runs the whole decoder again on all t tokens so far, although
the keys and values of positions 0 … t-1 are the same as one step earlier: the causal mask makes
every position independent of what comes after it. A cache keeps them:

* **self-attention** (``KVCache()``): each step projects only the new token's key and value and
  appends them to those already stored;
* **cross-attention** (``KVCache(static=True)``): the keys and values of the encoder memory do
  not change while decoding, so they are projected once, at the first step, and reused.

How it plugs in: for the duration of one call, :meth:`KVCache.attached` puts hooks on the key
and value projections ``w_k`` and ``w_v`` of a :class:`~transformer_course.MultiHeadAttention`.
The attention code itself (the exercise of chapter 04) runs unchanged: it just receives the keys
and values of every position so far from ``w_k`` / ``w_v``, while the queries come from the new
tokens only. Keys and values are stored as the projections return them, ``(B, L, H·Dk)``, before
the heads are split.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn


class _Slot:
    """The stored outputs of one projection (keys or values), rows ``[0, length)`` filled.

    Appending writes into a buffer with spare room (doubled when full) instead of concatenating,
    so a step copies only the new rows, not the whole history.
    """

    def __init__(self) -> None:
        self.buffer: Tensor | None = None  # (B, capacity, F)
        self.length = 0

    def view(self) -> Tensor:
        return self.buffer[:, : self.length]  # (B, L, F)

    def append(self, new: Tensor) -> Tensor:
        """Store ``new`` (B, T, F) after the rows already held; return all rows (B, L+T, F)."""
        end = self.length + new.shape[1]
        if torch.is_grad_enabled() and new.requires_grad:  # keep autograd happy: no in-place writes
            self.buffer = new if self.buffer is None else torch.cat([self.view(), new], dim=1)
        else:
            if self.buffer is None or end > self.buffer.shape[1]:
                self._grow(new, max(2 * end, 16))
            self.buffer[:, self.length : end] = new
        self.length = end
        return self.view()

    def _grow(self, like: Tensor, capacity: int) -> None:
        grown = like.new_empty(like.shape[0], capacity, like.shape[2])  # (B, capacity, F)
        if self.buffer is not None and self.length:
            grown[:, : self.length] = self.view()
        self.buffer = grown

    def reorder(self, indices: Tensor) -> None:
        if self.buffer is not None:
            self.buffer = self.buffer.index_select(0, indices)  # (B', capacity, F)


class KVCache:
    """Projected keys and values of one attention layer, kept from one decoding step to the next.

    Args:
        static: False (self-attention): every call appends the keys/values of the new positions.
            True (cross-attention): the first call stores the keys/values of the memory; later
            calls reuse them without projecting the memory again.

    Use it through ``MultiHeadAttention.forward(..., cache=kv_cache)`` or :meth:`attached`.
    """

    def __init__(self, static: bool = False) -> None:
        self.static = static
        self.keys = _Slot()
        self.values = _Slot()

    def __len__(self) -> int:
        """Number of key positions held."""
        return self.keys.length

    @contextmanager
    def attached(self, attention: nn.Module) -> Iterator[None]:
        """While inside the ``with`` block, ``attention.w_k`` / ``attention.w_v`` read from and
        write to this cache. The hooks are removed on exit, so the module is left as it was."""
        handles = []
        try:
            for slot, projection in ((self.keys, attention.w_k), (self.values, attention.w_v)):
                if self.static:
                    handles.append(projection.register_forward_pre_hook(self._skip_if_stored(slot)))
                handles.append(projection.register_forward_hook(self._serve(slot)))
            yield
        finally:
            for handle in handles:
                handle.remove()

    def _skip_if_stored(self, slot: _Slot):
        def pre_hook(module: nn.Module, args: tuple) -> tuple | None:
            if slot.buffer is None:
                return None  # first call: project the memory as usual
            return (args[0][:, :0],)  # (B, 0, D): nothing to project, the stored result is served

        return pre_hook

    def _serve(self, slot: _Slot):
        def hook(module: nn.Module, args: tuple, output: Tensor) -> Tensor:
            if not self.static:
                return slot.append(output)  # (B, L+T, H·Dk): every position so far
            if slot.buffer is None:
                slot.buffer, slot.length = output, output.shape[1]
            return slot.view()  # (B, S, H·Dk)

        return hook

    def reorder(self, indices: Tensor) -> None:
        """Keep the batch rows ``indices`` (B',) in that order (beam search after each step)."""
        self.keys.reorder(indices)
        self.values.reorder(indices)


@dataclass
class LayerCache:
    """The two caches of one decoder layer."""

    self_attn: KVCache = field(default_factory=KVCache)
    cross_attn: KVCache = field(default_factory=lambda: KVCache(static=True))

    @contextmanager
    def attached(self, layer: nn.Module) -> Iterator[None]:
        """Attach both caches to ``layer.self_attn`` and ``layer.cross_attn``."""
        with self.self_attn.attached(layer.self_attn), self.cross_attn.attached(layer.cross_attn):
            yield


class DecoderCache:
    """Everything incremental decoding keeps between steps: one :class:`LayerCache` per decoder
    layer, plus which earlier target tokens were padding (for the self-attention mask).

    ``Transformer.decode(new_tokens, memory, memory_mask, cache=cache)`` then takes only the new
    token(s): their positions start at :attr:`length`, the number of tokens already fed.

    Example::

        cache = DecoderCache.for_model(model)
        logits = model.decode(bos_tokens, memory, memory_mask, cache=cache)  # (B, 1, V)
        logits = model.decode(next_tokens, memory, memory_mask, cache=cache)  # position 1
    """

    def __init__(self, n_layers: int) -> None:
        if n_layers < 0:
            raise ValueError(f"n_layers must be >= 0, got {n_layers}")
        self.layers = [LayerCache() for _ in range(n_layers)]
        self.keep: Tensor | None = None  # (B, L) bool: True where a fed target token is not padding

    @classmethod
    def for_model(cls, model: nn.Module) -> DecoderCache:
        """An empty cache for a :class:`~transformer_course.Transformer`."""
        return cls(len(model.decoder.layers))

    @property
    def length(self) -> int:
        """Number of target positions fed so far (the position of the next token)."""
        return 0 if self.keep is None else self.keep.shape[1]

    def self_attention_mask(self, tgt: Tensor, pad_id: int) -> Tensor:
        """Record the new tokens and return their self-attention mask over every position so far.

        The same mask as ``target_mask`` on the full sequence, restricted to the new rows: new
        token i (at position L+i) may attend to positions 0 … L+i that are not padding.

        Shape:
            tgt: (B, T) new tokens → (B, 1, T, L+T) bool, True = may attend
        """
        keep = tgt != pad_id  # (B, T)
        if self.keep is not None:
            if self.keep.shape[0] != tgt.shape[0]:
                raise ValueError(f"the cache holds a batch of {self.keep.shape[0]} rows but tgt has {tgt.shape[0]}")
            keep = torch.cat([self.keep, keep], dim=1)  # (B, L+T)
        self.keep = keep
        length, new = keep.shape[1], tgt.shape[1]
        if new == 1:  # one new token: it may see every earlier position, so only padding is hidden
            return keep[:, None, None, :]  # (B, 1, 1, L+1)
        causal = torch.ones(new, length, dtype=torch.bool, device=tgt.device).tril(diagonal=length - new)  # (T, L+T)
        return keep[:, None, None, :] & causal  # (B, 1, T, L+T)

    def reorder(self, indices: Tensor) -> None:
        """Keep the batch rows ``indices`` (in that order) of every self-attention cache.

        Beam search calls this after each step, when each surviving hypothesis may continue a
        different earlier one. The cross-attention caches are left alone: every beam of a
        sentence has the same memory, so their rows are equal and need no reordering as long as
        ``indices`` only moves rows between the beams of one sentence.
        """
        if self.keep is not None:
            self.keep = self.keep.index_select(0, indices)
        for layer in self.layers:
            layer.self_attn.reorder(indices)
