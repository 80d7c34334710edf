"""Chapter 08 — a key/value cache for incremental decoding.

Without a cache, choosing token t+1 runs the whole decoder again on all t tokens so far, although
the keys and values of positions 0 … t-1 are the same as one step earlier: the causal mask makes
every position independent of what comes after it. A cache keeps them:

* **self-attention** (``KVCache()``): each step projects only the new token's key and value and
  appends them to those already stored;
* **cross-attention** (``KVCache(static=True)``): the keys and values of the encoder memory do
  not change while decoding, so they are projected once, at the first step, and reused.

The cache is plain data that the caller passes in and gets back: ``Transformer.decode(new_tokens,
memory, memory_mask, cache=cache)`` records the new tokens (:meth:`DecoderCache.record`, the one
call that makes it longer), asks for their mask (:meth:`DecoderCache.self_attention_mask`, a pure
function), and hands each decoder layer its :class:`LayerCache`; the layer hands each attention
its :class:`KVCache`, and :meth:`~transformer_course.multihead.MultiHeadAttention.keys_and_values`
calls :meth:`KVCache.update`. Your attention code (chapter 04) is what runs when several positions
come at once or autograd is on. The decoding loops feed one position at a time without autograd:
then the attention takes a lean step of its own (one product for Q, K and V, with the weights
side by side, transposed once per decoding call and kept in :attr:`KVCache.projections`), which
gives the same numbers in fewer operations (the tests compare the two).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn


class _Rows:
    """A growing tensor along dimension ``dim``: rows ``[0, length)`` of a buffer with spare room.

    Appending writes into the spare room (doubled when full) instead of concatenating, so a
    decoding step copies only its new rows, not the whole history.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.buffer: Tensor | None = None
        self.length = 0

    def view(self) -> Tensor:
        return self.buffer.narrow(self.dim, 0, self.length)

    def append(self, new: Tensor) -> Tensor:
        """Store ``new`` after the rows already held; return all rows."""
        self.write(new)
        return self.view()

    def write(self, new: Tensor) -> None:
        """Store ``new`` after the rows already held."""
        end = self.length + new.shape[self.dim]
        if new.requires_grad:  # autograd must see every step: concatenate instead of writing in place
            self.buffer = new if self.buffer is None else torch.cat([self.view(), new], dim=self.dim)
        else:
            if self.buffer is None or end > self.buffer.shape[self.dim]:
                self._grow(new, max(2 * end, 16))
            self.buffer.narrow(self.dim, self.length, new.shape[self.dim]).copy_(new)
        self.length = end

    def _grow(self, like: Tensor, capacity: int) -> None:
        shape = list(like.shape)
        shape[self.dim] = capacity
        grown = like.new_empty(shape)
        if self.buffer is not None and self.length:
            grown.narrow(self.dim, 0, self.length).copy_(self.view())
        self.buffer = grown

    def reorder(self, indices: Tensor) -> None:
        """Keep the batch rows ``indices`` (dimension 0), in that order."""
        if self.buffer is not None:
            self.buffer = self.buffer.index_select(0, indices)


class KVCache:
    """Keys (B, H, L, Dk) and values (B, H, L, Dv) of one attention layer, kept between decoding steps.

    Args:
        static: False (self-attention): every :meth:`update` appends the new positions.
            True (cross-attention): the first update stores the memory's keys and values;
            ``keys_and_values`` then returns them without projecting the memory again.
    """

    def __init__(self, static: bool = False) -> None:
        self.static = static
        self._both = _Rows(dim=2)  # self-attention: keys and values side by side (B, H, L, Dk+Dv), growing
        self._d_k = 0
        self._memory: tuple[Tensor, Tensor] | None = None  # cross-attention: stored once, as given
        # W^Q (and, for self-attention, W^K and W^V) side by side and W^O, transposed: made by
        # MultiHeadAttention at the first one-position step of a decoding call, kept for the others.
        self.projections: tuple[Tensor, Tensor | None, Tensor, Tensor | None] | None = None
        # cross-attention: the memory's padding mask as numbers to add to the scores, made at the first step
        self.additive_mask: Tensor | None = None
        # what chapter 10's lean step makes once per decoding call besides: the rotation table of a
        # rotary attention ("rotation"), the feed-forward network's fused weights ("feed_forward")
        self.prepared: dict[str, object] = {}

    def __len__(self) -> int:
        """Number of key positions held."""
        if self.static:
            return 0 if self._memory is None else self._memory[0].shape[2]
        return self._both.length

    def nbytes(self, allocated: bool = False) -> int:
        """Bytes of the keys and values held, or (``allocated=True``) of the buffer behind them,
        which grows by doubling and so has room for up to twice as many positions."""
        if len(self) == 0:
            return 0
        if allocated and not self.static:
            return self._both.buffer.numel() * self._both.buffer.element_size()
        return (self.keys.numel() + self.values.numel()) * self.keys.element_size()

    @property
    def keys(self) -> Tensor:
        return self._memory[0] if self.static else self._both.view()[..., : self._d_k]  # (B, H, L, Dk)

    @property
    def values(self) -> Tensor:
        return self._memory[1] if self.static else self._both.view()[..., self._d_k :]  # (B, H, L, Dv)

    def update(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Add the keys and values of new positions; return those of every position so far.

        Shape:
            keys (B, H, T, Dk), values (B, H, T, Dv) → (B, H, L+T, Dk), (B, H, L+T, Dv)
        """
        if self.static:
            if len(self):
                raise ValueError("a static (cross-attention) cache is filled once: its keys and values never change")
            self._memory = keys, values
            return keys, values
        return self.append(torch.cat([keys, values], dim=-1), keys.shape[-1])

    def append(self, keys_and_values: Tensor, d_k: int) -> tuple[Tensor, Tensor]:
        """Self-attention: add new positions whose keys and values come side by side, as one
        projection makes them (one copy instead of two); return the keys and values of every
        position so far.

        Shape:
            keys_and_values (B, H, T, Dk+Dv) → (B, H, L+T, Dk), (B, H, L+T, Dv)
        """
        if self.static:
            raise ValueError("append is for self-attention: a static (cross-attention) cache is filled by update")
        both = self._both.append(keys_and_values)  # (B, H, L+T, Dk+Dv)
        self._d_k = d_k
        keys, values = both.split([d_k, both.shape[-1] - d_k], dim=-1)
        return keys, values

    def reorder(self, indices: Tensor) -> None:
        """Keep the batch rows ``indices`` (B',) in that order (beam search after each step)."""
        if self._memory is not None:
            self._memory = self._memory[0].index_select(0, indices), self._memory[1].index_select(0, indices)
        self._both.reorder(indices)


@dataclass
class LayerCache:
    """The two caches of one decoder layer: its self-attention's and its cross-attention's."""

    self_attn: KVCache = field(default_factory=KVCache)
    cross_attn: KVCache = field(default_factory=lambda: KVCache(static=True))


class DecoderCache:
    """Everything incremental decoding keeps between steps: one :class:`LayerCache` per decoder
    layer, plus which earlier target tokens were padding (for the self-attention mask).

    ``Transformer.decode(new_tokens, memory, memory_mask, cache=cache)`` then takes only the new
    token(s): their positions start at :attr:`length`, the number of tokens already fed.

    Example::

        cache = DecoderCache.for_model(model)
        logits = model.decode(bos_tokens, memory, memory_mask, cache=cache)  # (B, 1, V), position 0
        logits = model.decode(next_tokens, memory, memory_mask, cache=cache)  # position 1
    """

    def __init__(self, n_layers: int) -> None:
        if n_layers < 0:
            raise ValueError(f"n_layers must be >= 0, got {n_layers}")
        self.layers = [LayerCache() for _ in range(n_layers)]
        self.output: tuple[Tensor, Tensor | None] | None = None  # the output layer's W^T and b, made once
        self._fed = _Rows(dim=1)  # (B, L): the target tokens fed so far (the mask reads their padding)
        self._pad_id = 0

    @classmethod
    def for_model(cls, model: nn.Module) -> DecoderCache:
        """An empty cache for a :class:`~transformer_course.model.Transformer`."""
        return cls(len(model.decoder.layers))

    @property
    def length(self) -> int:
        """Number of target positions fed so far (the position of the next token)."""
        return self._fed.length

    def record(self, tgt: Tensor, pad_id: int) -> None:
        """Remember the new tokens (which of them are padding): the one call that changes :attr:`length`.

        ``Transformer.decode(..., cache=cache)`` calls it once per step, before asking for
        :meth:`self_attention_mask`; the layers then append the new keys and values.

        Shape:
            tgt: (B, T) new tokens
        """
        if self.length and self._fed.buffer.shape[0] != tgt.shape[0]:
            raise ValueError(f"the cache holds a batch of {self._fed.buffer.shape[0]} rows but tgt has {tgt.shape[0]}")
        self._fed.write(tgt)  # (B, L+T): a copy of the ids; padding is looked for when a mask is asked for
        self._pad_id = pad_id

    def self_attention_mask(self, new: int) -> Tensor:
        """The self-attention mask of the ``new`` tokens recorded last, over every recorded position.

        The same mask as ``target_mask`` on the full sequence, restricted to the new rows: new
        token i (at position L+i) may attend to positions 0 … L+i that are not padding. A pure
        function of what :meth:`record` stored: asking twice gives the same mask.

        Shape:
            → (B, 1, new, L+new) bool, True = may attend
        """
        if not 1 <= new <= self.length:
            raise ValueError(f"new must be between 1 and the {self.length} recorded positions, got {new}")
        keep = self._fed.view() != self._pad_id  # (B, L+T): True where a fed token is not padding
        keep[:, 0] = True  # position 0 holds the start token, even where its id is the pad's (Marian)
        if new == 1:  # one new token: it may see every earlier position, so only padding is hidden
            return keep[:, None, None, :]  # (B, 1, 1, L+1)
        length = keep.shape[1]
        causal = torch.ones(new, length, dtype=torch.bool, device=keep.device).tril(diagonal=length - new)  # (T, L+T)
        return keep[:, None, None, :] & causal  # (B, 1, T, L+T)

    def reorder(self, indices: Tensor) -> None:
        """Keep the batch rows ``indices`` (in that order) of every self-attention cache.

        Beam search calls this after each step, when each surviving hypothesis may continue a
        different earlier one. The cross-attention caches are left alone: every beam of a
        sentence has the same memory, so their rows are equal and need no reordering as long as
        ``indices`` only moves rows between the beams of one sentence.
        """
        self._fed.reorder(indices)
        for layer in self.layers:
            layer.self_attn.reorder(indices)
