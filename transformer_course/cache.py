"""Chapter 09 — a key/value cache for incremental decoding.

Without a cache, choosing token t+1 runs the whole decoder again on all t tokens so far, although
the keys and values of positions 0 … t-1 are the same as one step earlier: the causal mask makes
every position independent of what comes after it. A cache keeps them:

* **self-attention** (``KVCache()``): each step projects only the new token's key and value and
  appends them to those already kept;
* **cross-attention** (``KVCache(static=True)``): the keys and values of the encoder memory do
  not change while decoding, so they are projected once, at the first step, and reused.

Nothing in the model changes. :func:`with_cache` gives an attention a copy of itself, with the same
weights, whose W^K and W^V remember what they projected (:class:`Remembering`): each returns the
kept positions followed by the new ones. Your attention code (chapter 04) then runs unchanged at
every step: its queries are the new positions, its keys and values every position so far.
:class:`DecoderCache` does this for every attention of a translator's decoder, and its
:meth:`~DecoderCache.decode` takes only the new tokens.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from .model import check_decoder_inputs


class KVCache:
    """The keys (B, L, Hkv·Dk) and values (B, L, Hkv·Dv) of one attention layer, as W^K and W^V
    gave them (before the split into heads), kept between decoding steps.

    Args:
        static: False (self-attention): every step appends the new positions.
            True (cross-attention): the first step keeps the memory's keys and values; later
            steps return them without projecting the memory again.
    """

    def __init__(self, static: bool = False) -> None:
        self.static = static
        self.keys: Tensor | None = None  # (B, L, Hkv·Dk)
        self.values: Tensor | None = None  # (B, L, Hkv·Dv)

    def __len__(self) -> int:
        """Number of key positions held."""
        return 0 if self.keys is None else self.keys.shape[1]

    def nbytes(self) -> int:
        """Bytes of the keys and values held."""
        held = [t for t in (self.keys, self.values) if t is not None]
        return sum(t.numel() * t.element_size() for t in held)

    def remember(self, which: str, x: Tensor, projection: nn.Module) -> Tensor:
        """Project the new positions ``x`` with ``projection`` and return every position kept.

        ``which`` is ``"keys"`` or ``"values"``. A static cache projects only at the first step.

        Shape:
            x: (B, T, D) → (B, L+T, out)
        """
        kept = getattr(self, which)
        if self.static and kept is not None:
            return kept  # cross-attention: the memory was projected at the first step
        new = projection(x)  # (B, T, out)
        kept = new if kept is None else torch.cat([kept, new], dim=1)  # (B, L+T, out)
        setattr(self, which, kept)
        return kept

    def reorder(self, indices: Tensor) -> None:
        """Keep the batch rows ``indices`` (B',) in that order (beam search after each step)."""
        if self.keys is not None:
            self.keys = self.keys.index_select(0, indices)
        if self.values is not None:
            self.values = self.values.index_select(0, indices)


class Remembering(nn.Module):
    """W^K or W^V of an attention while it decodes: it projects the new positions only and
    returns them after those the cache kept. Its weights are the projection's own.

    Shape:
        x: (B, T, D) → (B, L+T, out)
    """

    def __init__(self, projection: nn.Module, cache: KVCache, which: str) -> None:
        super().__init__()
        if which not in ("keys", "values"):
            raise ValueError(f"which must be 'keys' or 'values', got {which!r}")
        self.projection, self.cache, self.which = projection, cache, which

    def forward(self, x: Tensor) -> Tensor:
        return self.cache.remember(self.which, x, self.projection)


def swapped(module: nn.Module, **parts: nn.Module) -> nn.Module:
    """A copy of ``module`` that shares its weights, with the sub-modules ``parts`` put in place
    of those of the same names. ``module`` itself is left as it was."""
    twin = copy.copy(module)  # a new object whose attributes are the same tensors and modules
    twin._modules = {**module._modules, **parts}  # its own table of sub-modules
    return twin


def with_cache(attention: nn.Module, cache: KVCache) -> nn.Module:
    """``attention`` (any of the course's, from chapter 04 on) with its W^K and W^V reading
    through ``cache``: called like ``attention``, on the new positions only."""
    keys = Remembering(attention.w_k, cache, "keys")
    values = Remembering(attention.w_v, cache, "values")
    return swapped(attention, w_k=keys, w_v=values)


@dataclass
class LayerCache:
    """The two caches of one decoder layer: its self-attention's and its cross-attention's."""

    self_attn: KVCache = field(default_factory=KVCache)
    cross_attn: KVCache = field(default_factory=lambda: KVCache(static=True))


class DecoderCache:
    """Everything incremental decoding of a translator (chapter 06's ``Transformer``) keeps
    between steps: one :class:`LayerCache` per decoder layer, a copy of the decoder whose
    attentions read through them (the same weights), and the target tokens fed so far (the
    self-attention mask reads their padding).

    :meth:`decode` then takes only the new token(s): their positions start at :attr:`length`, the
    number of tokens already fed.

    Example::

        cache = DecoderCache(model)
        logits = cache.decode(bos_tokens, memory, memory_mask)  # (B, 1, V), position 0
        logits = cache.decode(next_tokens, memory, memory_mask)  # position 1
    """

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.layers = [LayerCache() for _ in model.decoder.layers]
        cached = [
            swapped(layer, self_attn=with_cache(layer.self_attn, c.self_attn),
                    cross_attn=with_cache(layer.cross_attn, c.cross_attn))
            for layer, c in zip(model.decoder.layers, self.layers, strict=True)
        ]  # fmt: skip
        self.decoder = swapped(model.decoder, layers=nn.ModuleList(cached))
        self.fed: Tensor | None = None  # (B, L): the target tokens fed so far

    @property
    def length(self) -> int:
        """Number of target positions fed so far (the position of the next token)."""
        return 0 if self.fed is None else self.fed.shape[1]

    def decode(self, tgt: Tensor, memory: Tensor, memory_mask: Tensor | None = None) -> Tensor:
        """New target ids (B, T), after the :attr:`length` fed before, and the memory (B, S, D) →
        their logits (B, T, V_tgt): what ``model.decode`` gives for these positions of the whole
        target so far.

        ``memory_mask`` is the source padding mask (B, 1, 1, S); pass the one ``encode`` used.
        """
        model, offset = self.model, self.length
        check_decoder_inputs(tgt, memory, model.config, offset)
        self.record(tgt)  # the cache now holds offset+T positions
        x = model.positional(model.tgt_embed(tgt), offset=offset)  # (B, T, D), positions offset … offset+T-1
        x = self.decoder(x, memory, self.self_attention_mask(tgt.shape[1]), memory_mask)  # (B, T, D)
        return model.output(x)  # (B, T, V)

    def record(self, tgt: Tensor) -> None:
        """Remember the new tokens: the one call that changes :attr:`length`.

        :meth:`decode` calls it once per step, before asking for :meth:`self_attention_mask`; the
        attentions then append the new keys and values.

        Shape:
            tgt: (B, T) new tokens
        """
        if self.fed is not None and self.fed.shape[0] != tgt.shape[0]:
            raise ValueError(f"the cache holds a batch of {self.fed.shape[0]} rows but tgt has {tgt.shape[0]}")
        self.fed = tgt if self.fed is None else torch.cat([self.fed, tgt], dim=1)  # (B, L+T)

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
        keep = self.fed != self.model.config.pad_id  # (B, L+T): True where a fed token is not padding
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
