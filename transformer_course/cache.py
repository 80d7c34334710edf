"""Chapter 09 — a key/value cache for incremental decoding.

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
calls :meth:`KVCache.update`. Your attention code (chapter 04) is what runs at every step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn


class KVCache:
    """Keys (B, H, L, Dk) and values (B, H, L, Dv) of one attention layer, kept between decoding steps.

    Args:
        static: False (self-attention): every :meth:`update` appends the new positions.
            True (cross-attention): the first update stores the memory's keys and values;
            ``keys_and_values`` then returns them without projecting the memory again.
    """

    def __init__(self, static: bool = False) -> None:
        self.static = static
        self.keys: Tensor | None = None  # (B, H, L, Dk)
        self.values: Tensor | None = None  # (B, H, L, Dv)

    def __len__(self) -> int:
        """Number of key positions held."""
        return 0 if self.keys is None else self.keys.shape[2]

    def nbytes(self) -> int:
        """Bytes of the keys and values held."""
        if self.keys is None:
            return 0
        return self.keys.numel() * self.keys.element_size() + self.values.numel() * self.values.element_size()

    def update(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Add the keys and values of new positions; return those of every position so far.

        Shape:
            keys (B, H, T, Dk), values (B, H, T, Dv) → (B, H, L+T, Dk), (B, H, L+T, Dv)
        """
        if self.keys is None:
            self.keys, self.values = keys, values
        elif self.static:
            raise ValueError("a static (cross-attention) cache is filled once: its keys and values never change")
        else:
            self.keys = torch.cat([self.keys, keys], dim=2)  # (B, H, L+T, Dk)
            self.values = torch.cat([self.values, values], dim=2)  # (B, H, L+T, Dv)
        return self.keys, self.values

    def reorder(self, indices: Tensor) -> None:
        """Keep the batch rows ``indices`` (B',) in that order (beam search after each step)."""
        if self.keys is not None:
            self.keys, self.values = self.keys.index_select(0, indices), self.values.index_select(0, indices)


@dataclass
class LayerCache:
    """The two caches of one decoder layer: its self-attention's and its cross-attention's."""

    self_attn: KVCache = field(default_factory=KVCache)
    cross_attn: KVCache = field(default_factory=lambda: KVCache(static=True))


class DecoderCache:
    """Everything incremental decoding keeps between steps: one :class:`LayerCache` per decoder
    layer, plus the target tokens fed so far (the self-attention mask reads their padding).

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
        self.fed: Tensor | None = None  # (B, L): the target tokens fed so far
        self._pad_id = 0

    @classmethod
    def for_model(cls, model: nn.Module) -> DecoderCache:
        """An empty cache for a :class:`~transformer_course.model.Transformer`."""
        return cls(len(model.decoder.layers))

    @property
    def length(self) -> int:
        """Number of target positions fed so far (the position of the next token)."""
        return 0 if self.fed is None else self.fed.shape[1]

    def record(self, tgt: Tensor, pad_id: int) -> None:
        """Remember the new tokens: the one call that changes :attr:`length`.

        ``Transformer.decode(..., cache=cache)`` calls it once per step, before asking for
        :meth:`self_attention_mask`; the layers then append the new keys and values.

        Shape:
            tgt: (B, T) new tokens
        """
        if self.fed is not None and self.fed.shape[0] != tgt.shape[0]:
            raise ValueError(f"the cache holds a batch of {self.fed.shape[0]} rows but tgt has {tgt.shape[0]}")
        self.fed = tgt if self.fed is None else torch.cat([self.fed, tgt], dim=1)  # (B, L+T)
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
        keep = self.fed != self._pad_id  # (B, L+T): True where a fed token is not padding
        keep[:, 0] = True  # position 0 holds the start token, even where its id is the pad's (Marian)
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
        self.fed = None if self.fed is None else self.fed.index_select(0, indices)
        for layer in self.layers:
            layer.self_attn.reorder(indices)
