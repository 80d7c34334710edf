"""Beam search on a shortlist: each hypothesis's K best tokens instead of the whole vocabulary.

Chapter 09's :func:`~transformer_course.decoding.beam_step` looks at every token of the vocabulary
for each of the K hypotheses of a sentence: several passes over a (B, K, V) tensor per step, which
at opus-mt's V = 58,101 and 16 sentences take longer than the decoder itself. Only a hypothesis's K
best tokens can be among the K survivors (its candidates share its score and its length penalty,
so they rank as their log-probabilities do). So the engine hands ``beam_step`` a vocabulary of
K + 2 columns per hypothesis, its K best tokens, then ``<eos>`` and ``<pad>`` (with their own
log-probabilities), and maps the columns it chose back to tokens: your ``beam_step`` still
chooses, on a tensor V / (K + 2) times smaller, and chooses the same survivors (up to ties
between exactly equal scores). The call is one ``beam_step``'s docstring allows: ``eos_id`` and
``pad_id`` are columns of the shortlist (K and K + 1), and its rows are log-probabilities that sum
to less than 1. Even the K best of each row are found without sorting the row (:func:`largest`).

After the choice, :func:`in_place` orders the survivors so that the cache moves little: a
hypothesis's first survivor stays in its slot, and only a second survivor's row is copied.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

Step = Callable[..., tuple[Tensor, Tensor, Tensor, Tensor, Tensor]]


def on_a_shortlist(beam_step: Step) -> Step:
    """``beam_step`` (chapter 09's signature and result) run on each hypothesis's shortlist; a
    vocabulary of at most K + 2 tokens is handed over as it is."""

    def step(scores: Tensor, log_probs: Tensor, finished: Tensor, lengths: Tensor, eos_id: int, pad_id: int,
             alpha: float = 0.6) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:  # fmt: skip
        beams, vocab = log_probs.shape[1:]
        if vocab <= beams + 2:  # no shorter list than the vocabulary itself
            return beam_step(scores, log_probs, finished, lengths, eos_id, pad_id, alpha)
        top, tokens = largest(log_probs, beams)  # (B, K, K): each hypothesis's K best, best first
        top = top.masked_fill((tokens == eos_id) | (tokens == pad_id), float("-inf"))  # they have columns of their own
        eos, pad = (log_probs.narrow(-1, i, 1) for i in (eos_id, pad_id))  # (B, K, 1) each
        shortlist = torch.cat([top, eos, pad], dim=-1)  # (B, K, K+2): K tokens, <eos>, <pad>
        origin, column, *rest = beam_step(scores, shortlist, finished, lengths, beams, beams + 1, alpha)
        specials = torch.tensor([eos_id, pad_id], device=tokens.device).expand(*tokens.shape[:2], 2)  # (B, K, 2)
        tokens = torch.cat([tokens, specials], dim=-1)  # (B, K, K+2): each column's token
        chosen = tokens.flatten(1).gather(1, origin * (beams + 2) + column)  # (B, K): the columns as tokens
        return origin, chosen, *rest

    return step


def in_place(beam_step: Step) -> Step:
    """``beam_step`` (chapter 09's signature and result) with its survivors put where the cache
    need not move: a hypothesis's first survivor takes its slot, and the other survivors of a
    sentence take the slots of the hypotheses that had none. The survivors are the same; only
    their order in the beam changes. A cache row then moves only for a second survivor of a
    hypothesis (:meth:`~.run.KVBuffers.reorder` copies only the rows that move)."""

    def step(*args, **kwargs) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:  # noqa: ANN002, ANN003
        origin, *rest = beam_step(*args, **kwargs)  # each (B, K), best first
        slot = slots(origin)  # (B, K): where each survivor goes
        return tuple(torch.empty_like(t).scatter_(1, slot, t) for t in (origin, *rest))

    return step


def slots(origin: Tensor) -> Tensor:
    """The slot of each survivor: its hypothesis's slot for the first survivor that continues it,
    else the free slots (of hypotheses no survivor continues) in order.

    Shape:
        origin: (B, K), the hypothesis each survivor continues → (B, K), a permutation per row
    """
    beams = origin.shape[1]
    same = origin[:, :, None] == origin[:, None, :]  # (B, K, K): survivors i and j continue one hypothesis
    earlier = torch.ones(beams, beams, dtype=torch.bool, device=origin.device).tril(-1)  # (K, K): j < i
    first = ~(same & earlier).any(dim=-1)  # (B, K): i is the first survivor of its hypothesis
    continued = torch.zeros_like(first).scatter_(1, origin, True)  # (B, K): slots a survivor continues
    free = continued.long().argsort(dim=1, stable=True)  # (B, K): the free slots first, in order
    later = ((~first).long().cumsum(dim=1) - 1).clamp(min=0)  # (B, K): the n-th later survivor takes free slot n
    return torch.where(first, origin, free.gather(1, later))


def largest(x: Tensor, k: int, block: int = 256) -> tuple[Tensor, Tensor]:
    """``x.topk(k, dim=-1)``, found block by block: a row's k largest values lie in the k blocks
    whose maxima are largest (a block outside them has k larger values, one in each of them). So
    a row costs one pass of ``amax`` and a ``topk`` of a few blocks, not a ``topk`` of V values:
    at opus-mt's V = 58,101 and 64 rows, 14 ms where ``topk`` took 220 (one beam search).

    Shape:
        x: (..., V) → values (..., k) largest first, their indices (..., k)
    """
    n = x.shape[-1] // block  # whole blocks; the last V - n·block values are candidates as they are
    if n <= k:
        return x.topk(k, dim=-1)
    blocks = x[..., : n * block].unflatten(-1, (n, block))  # (..., n, block)
    chosen = blocks.amax(dim=-1).topk(k, dim=-1).indices  # (..., k): the blocks with the largest maxima
    columns = (chosen[..., None] * block + torch.arange(block, device=x.device)).flatten(-2)  # (..., k·block)
    rest = torch.arange(n * block, x.shape[-1], device=x.device).expand(*x.shape[:-1], -1)  # (..., V - n·block)
    columns = torch.cat([columns, rest], dim=-1)  # (..., C): every candidate's column
    values, where = x.gather(-1, columns).topk(k, dim=-1)  # (..., k) among the C candidates
    return values, columns.gather(-1, where)
