"""Beam search's choice of survivors, as the engine makes it: from K candidates per hypothesis.

Chapter 08's :func:`~transformer_course.decoding.beam_step` extends each of the K hypotheses of a
sentence by every token of the vocabulary and keeps the K best of the K·V candidates: several
passes over a (B, K, V) tensor per step, which at opus-mt's V = 58,101 and 16 sentences take
longer than the decoder itself. Only a hypothesis's K best tokens can be among the K survivors
(its candidates share its score and its length penalty, so they rank as their log-probabilities
do). So the engine takes those K first, one pass over the vocabulary, and chooses among the K·K:
the same survivors, in the same order, as :func:`~transformer_course.decoding.beam_step` (up to
ties between exactly equal scores).
"""

from __future__ import annotations

import torch
from torch import Tensor


def beam_step(
    scores: Tensor,
    log_probs: Tensor,
    finished: Tensor,
    lengths: Tensor,
    eos_id: int,
    pad_id: int,
    alpha: float = 0.6,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """:func:`~transformer_course.decoding.beam_step`'s arguments and result.

    Shape:
        scores (B, K), log_probs (B, K, V), finished (B, K), lengths (B, K) → five (B, K) tensors
    """
    from ..decoding import gnmt_length_penalty

    batch, beams, vocab = log_probs.shape
    best = min(beams, vocab)
    top, tokens = log_probs.topk(best, dim=-1)  # (B, K, k): each hypothesis's k best tokens, best first
    frozen = torch.full((best,), float("-inf"), device=top.device)  # a finished hypothesis: pad for free,
    frozen[0] = 0.0  # and nothing else
    top = torch.where(finished[..., None], frozen, top)  # (B, K, k)
    tokens = tokens.masked_fill(finished[..., None], pad_id)  # (B, K, k)
    candidates = scores[..., None] + top  # (B, K, k) summed log-probabilities
    new_lengths = lengths + (~finished).long()  # (B, K): finished ones do not grow
    ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]  # (B, K, k)
    flat = ranked.reshape(batch, beams * best).topk(beams, dim=-1).indices  # (B, K) in K·k
    origin = flat // best  # (B, K): the hypothesis each survivor extends
    chosen = tokens.reshape(batch, beams * best).gather(1, flat)  # (B, K)
    new_scores = candidates.reshape(batch, beams * best).gather(1, flat)  # (B, K)
    new_finished = finished.gather(1, origin) | (chosen == eos_id)  # (B, K)
    return origin, chosen, new_scores, new_finished, new_lengths.gather(1, origin)
