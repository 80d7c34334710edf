"""Beam search on a shortlist: each hypothesis's K best tokens instead of the whole vocabulary.

Chapter 09's :func:`~transformer_course.decoding.beam_step` looks at every token of the vocabulary
for each of the K hypotheses of a sentence: several passes over a (B, K, V) tensor per step, which
at opus-mt's V = 58,101 and 16 sentences take longer than the decoder itself. Only a hypothesis's K
best tokens can be among the K survivors (its candidates share its score and its length penalty,
so they rank as their log-probabilities do). So the engine hands ``beam_step`` a vocabulary of
K + 1 columns per hypothesis, its K best tokens and ``<pad>``, and maps the columns it chose back
to tokens: your ``beam_step`` still chooses, on a tensor V / (K + 1) times smaller, and chooses
the same survivors (up to ties between exactly equal scores). Even the K best of each row are
found without sorting the row (:func:`largest`).

After the choice, :func:`in_place` orders the survivors so that the cache moves little: a
hypothesis's first survivor stays in its slot, and only a second survivor's row is copied.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

Step = Callable[..., tuple[Tensor, Tensor, Tensor, Tensor, Tensor]]


def on_a_shortlist(beam_step: Step) -> Step:
    """``beam_step`` (chapter 09's signature and result) run on each hypothesis's shortlist."""

    def step(scores: Tensor, log_probs: Tensor, finished: Tensor, lengths: Tensor, eos_id: int, pad_id: int,
             alpha: float = 0.6) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:  # fmt: skip
        best = min(log_probs.shape[1:])  # k = K, or V when the vocabulary is smaller
        top, tokens = largest(log_probs, best)  # (B, K, k): each hypothesis's k best, best first
        column_of_pad = torch.full_like(top[..., :1], float("-inf"))  # a finished hypothesis's only way on
        shortlist = torch.cat([top, column_of_pad], dim=-1)  # (B, K, k+1): a vocabulary of k+1 "tokens"
        tokens = torch.cat([tokens, torch.full_like(tokens[..., :1], pad_id)], dim=-1)  # (B, K, k+1): their ids
        # eos_id = -1: no column is <eos> (the real <eos> is found below, once the columns are tokens again)
        origin, column, new_scores, new_finished, new_lengths = beam_step(
            scores, shortlist, finished, lengths, -1, best, alpha
        )
        chosen = tokens.flatten(1).gather(1, origin * (best + 1) + column)  # (B, K): the columns as tokens
        return origin, chosen, new_scores, new_finished | (chosen == eos_id), new_lengths

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
