"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from transformer_course.decoding import gnmt_length_penalty
from transformer_course.decoding import gnmt_length_penalty as _lp

from . import right, wrong

# -- mutants


def _beam_step(scores, log_probs, finished, lengths, eos_id, pad_id, alpha, *, freeze=True, grow_finished=False,
               penalty=True, return_penalised=False, keep_finished=True, swap_div_mod=False, old_lengths=False):  # fmt: skip
    batch, beams, vocab = log_probs.shape
    step = log_probs
    if freeze:
        frozen = torch.full_like(log_probs, float("-inf"))
        frozen[..., pad_id] = 0.0
        step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + 1 if grow_finished else lengths + (~finished).long()
    lp = gnmt_length_penalty(lengths if old_lengths else new_lengths, alpha) if penalty else torch.ones(1)
    ranked = candidates / lp[..., None]
    top = ranked.reshape(batch, -1).topk(beams, dim=-1)
    flat = top.indices
    origin, tokens = (flat % vocab, flat // vocab) if swap_div_mod else (flat // vocab, flat % vocab)
    origin = origin.clamp(max=beams - 1)
    new_scores = top.values if return_penalised else candidates.reshape(batch, -1).gather(1, flat)
    was_finished = finished.gather(1, origin) if keep_finished else torch.zeros_like(finished)
    return origin, tokens, new_scores, was_finished | (tokens == eos_id), new_lengths.gather(1, origin)


@wrong("mutant", "best token inside each beam")
def _best_token_per_beam(scores, log_probs, finished, lengths, eos_id, pad_id, alpha):
    best, tokens = log_probs.max(-1)  # one candidate per hypothesis: greedy inside each beam
    origin = torch.arange(scores.shape[1]).expand_as(scores)
    return origin, tokens, scores + best, finished | (tokens == eos_id), lengths + 1


_finished_hypotheses_extended_by_every_to = wrong("mutant", "finished hypotheses extended by every token")(
    lambda *a: _beam_step(*a, freeze=False)
)
_finished_hypotheses_keep_growing_in_leng = wrong("mutant", "finished hypotheses keep growing in length")(
    lambda *a: _beam_step(*a, grow_finished=True)
)
_no_length_penalty = wrong("mutant", "no length penalty")(lambda *a: _beam_step(*a, penalty=False))
_returns_penalised_scores = wrong("mutant", "returns penalised scores")(
    lambda *a: _beam_step(*a, return_penalised=True)
)
_finished_flag_not_carried_over = wrong("mutant", "finished flag not carried over")(
    lambda *a: _beam_step(*a, keep_finished=False)
)
_origin_and_token_swapped_and = wrong("mutant", "origin and token swapped (% and //)")(
    lambda *a: _beam_step(*a, swap_div_mod=True)
)
_penalty_with_the_old_lengths = wrong("mutant", "penalty with the old lengths")(
    lambda *a: _beam_step(*a, old_lengths=True)
)


# -- own mistakes and alternatives


def _beam(scores, log_probs, finished, lengths, eos_id, pad_id, alpha, gather=None, multiply=False):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    candidates = scores[..., None] + torch.where(finished[..., None], frozen, log_probs)
    new_lengths = lengths + (~finished).long()
    penalty = gnmt_length_penalty(new_lengths, alpha)[..., None]
    ranked = candidates * penalty if multiply else candidates / penalty
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_lengths = new_lengths.gather(1, origin) if gather is None else gather(new_lengths, origin)
    return origin, tokens, new_scores, finished.gather(1, origin) | (tokens == eos_id), new_lengths


@wrong("own", says="the new lengths are not reordered")
def _beam_lengths_in_place(scores, log_probs, finished, lengths, eos_id, pad_id, alpha):
    return _beam(scores, log_probs, finished, lengths, eos_id, pad_id, alpha, gather=lambda n, o: n)


@wrong("own", says="the finished flags are not reordered")
def _beam_finished_in_place(scores, log_probs, finished, lengths, eos_id, pad_id, alpha):
    origin, tokens, new_scores, _, new_lengths = _beam(scores, log_probs, finished, lengths, eos_id, pad_id, alpha)
    return origin, tokens, new_scores, finished | (tokens == eos_id), new_lengths


@wrong("own", says="multiplied by the length penalty")
def _beam_penalty_multiplied(scores, log_probs, finished, lengths, eos_id, pad_id, alpha):
    return _beam(scores, log_probs, finished, lengths, eos_id, pad_id, alpha, multiply=True)


@wrong("own", says="normalised again")
def _beam_normalised_again(scores, log_probs, finished, lengths, eos_id, pad_id, alpha):
    return _beam(scores, log_probs.log_softmax(-1), finished, lengths, eos_id, pad_id, alpha)


@right("own")
def beam_step_sorted_and_checked(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    """Checks its ids first, freezes finished rows with masked_fill, ranks with a stable sort."""
    batch, beams, vocab = log_probs.shape
    if not (0 <= eos_id < vocab and 0 <= pad_id < vocab):
        raise ValueError(f"eos_id={eos_id} and pad_id={pad_id} must be token ids in [0, {vocab})")
    step = log_probs.masked_fill(finished[..., None], float("-inf"))
    step[..., pad_id] = torch.where(finished, 0.0, step[..., pad_id])  # a finished hypothesis: pad, for free
    candidates = (scores[..., None] + step).reshape(batch, beams * vocab)
    new_lengths = lengths + (~finished).long()
    penalty = ((5.0 + new_lengths.float()) / 6.0) ** alpha  # (B, K)
    ranked = candidates / penalty.repeat_interleave(vocab, dim=1)
    flat = ranked.sort(dim=1, descending=True, stable=True).indices[:, :beams]
    origin, tokens = flat.div(vocab, rounding_mode="floor"), flat.remainder(vocab)
    ended = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, candidates.gather(1, flat), ended, new_lengths.gather(1, origin)


@right("own")
def beam_step_one_sentence_at_a_time(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    """A loop over the sentences, each ranked with topk over its K·V candidates."""
    rows = []
    for b in range(log_probs.shape[0]):
        beams, vocab = log_probs.shape[1:]
        step = log_probs[b].clone()  # (K, V)
        step[finished[b]] = float("-inf")
        step[finished[b], pad_id] = 0.0
        grown = lengths[b] + (~finished[b]).long()  # (K,)
        total = scores[b][:, None] + step  # (K, V)
        best = (total / gnmt_length_penalty(grown, alpha)[:, None]).flatten().topk(beams).indices  # (K,)
        origin, token = best // vocab, best % vocab
        rows.append((origin, token, total.flatten()[best], finished[b][origin] | (token == eos_id), grown[origin]))
    return tuple(torch.stack(parts) for parts in zip(*rows, strict=True))


# -- tester set 'first'


@wrong("tester", "ranks candidates by raw score, no length penalty", by="first")
def ex09_3_no_penalty(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    flat = candidates.reshape(batch, beams * vocab).topk(beams, dim=-1).indices  # raw scores ranked
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


@wrong("tester", "finished hypotheses extended like the others (no freezing)", by="first")
def ex09_3_finished_extended(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    candidates = scores[..., None] + log_probs  # finished hypotheses extended like the others
    new_lengths = lengths + 1
    ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


@wrong("tester", "lengths not gathered by origin", by="first")
def ex09_3_lengths_not_reordered(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths  # not gathered by origin


@wrong("tester", "length penalty of the old lengths, not the new ones", by="first")
def x08_3_penalty_old_lengths(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    ranked = candidates / _lp(lengths, alpha)[..., None]  # penalty of the old lengths
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


# -- tester set 'second'


@wrong("tester", "ranks by raw scores: length penalty ignored", by="second")
def beam_no_penalty(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    flat = candidates.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


@wrong("tester", "lengths + 1 for every hypothesis, finished ones too", by="second")
def beam_finished_grow(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + 1
    ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


@wrong("tester", "origin/token from flat index with // beams, % beams instead of vocab", by="second")
def beam_divmod_beams(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // beams, flat % beams
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    origin = origin.clamp(max=beams - 1)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


# -- tester set 'third'


@wrong("tester", "ranks by the raw summed log-probability (length penalty forgotten)", by="third")
def beam_no_penalty_third(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    flat = candidates.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


@wrong("tester", "returns the penalised score instead of the summed log-probability", by="third")
def beam_penalised_scores(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = ranked.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)


@wrong("tester", "lengths returned without following the origin (new_lengths not gathered)", by="third")
def beam_lengths_not_gathered(scores, log_probs, finished, lengths, eos_id, pad_id, alpha=0.6):
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))
    frozen[..., pad_id] = 0.0
    step = torch.where(finished[..., None], frozen, log_probs)
    candidates = scores[..., None] + step
    new_lengths = lengths + (~finished).long()
    ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices
    origin, tokens = flat // vocab, flat % vocab
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)
    return origin, tokens, new_scores, new_finished, new_lengths
