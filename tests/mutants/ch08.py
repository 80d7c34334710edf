"""Wrong answers for chapter 08: decoding steps that look plausible and are not."""

from __future__ import annotations

import torch

from transformer_course.decoding import gnmt_length_penalty

# ex08_1 — greedy_step


def _keeps_generating_after_eos(logits, finished, eos_id, pad_id):
    tokens = logits.argmax(-1)
    return tokens, finished | (tokens == eos_id)


def _forgets_finished_rows(logits, finished, eos_id, pad_id):
    tokens = logits.argmax(-1).masked_fill(finished, pad_id)
    return tokens, tokens == eos_id  # a finished row becomes unfinished again


def _hard_coded_ids(logits, finished, eos_id, pad_id):
    tokens = logits.argmax(-1).masked_fill(finished, 0)
    return tokens, finished | (tokens == 2)


def _updates_finished_in_place(logits, finished, eos_id, pad_id):
    tokens = logits.argmax(-1).masked_fill(finished, pad_id)
    finished |= tokens == eos_id
    return tokens, finished


def _softmax_then_argmax_over_batch(logits, finished, eos_id, pad_id):
    tokens = logits.softmax(0).argmax(0)[: logits.shape[0]]
    return tokens.masked_fill(finished, pad_id), finished | (tokens == eos_id)


# ex08_2 — top_p_filter


def _drops_the_token_that_crosses_top_p(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    drop_sorted = sorted_logits.softmax(-1).cumsum(-1) > top_p
    drop_sorted[..., 0] = False
    return logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf"))


def _no_sorting(logits, top_p):
    probs = logits.softmax(-1)
    drop = probs.cumsum(-1) - probs >= top_p  # accumulates in vocabulary order
    return logits.masked_fill(drop, float("-inf"))


def _not_scattered_back(logits, top_p):
    sorted_logits, _ = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(-1)
    return sorted_logits.masked_fill(probs.cumsum(-1) - probs >= top_p, float("-inf"))  # sorted order


def _cumsum_of_logits(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    drop_sorted = sorted_logits.cumsum(-1) - sorted_logits >= top_p
    return logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf"))


def _ascending(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1)
    probs = sorted_logits.softmax(-1)
    drop_sorted = probs.cumsum(-1) - probs >= top_p
    return logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf"))


def _strict_at_the_boundary(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(-1)
    drop_sorted = probs.cumsum(-1) - probs > top_p  # keeps a token whose tokens before it reach top_p exactly
    return logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf"))


# ex08_3 — beam_step


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


def _best_token_per_beam(scores, log_probs, finished, lengths, eos_id, pad_id, alpha):
    best, tokens = log_probs.max(-1)  # one candidate per hypothesis: greedy inside each beam
    origin = torch.arange(scores.shape[1]).expand_as(scores)
    return origin, tokens, scores + best, finished | (tokens == eos_id), lengths + 1


MUTANTS = {
    "ex08_1": [
        ("keeps generating after <eos>", _keeps_generating_after_eos),
        ("finished rows become unfinished", _forgets_finished_rows),
        ("pad and eos ids hard-coded to 0 and 2", _hard_coded_ids),
        ("updates finished in place", _updates_finished_in_place),
        ("argmax over the batch axis", _softmax_then_argmax_over_batch),
    ],
    "ex08_2": [
        ("drops the token that crosses top_p", _drops_the_token_that_crosses_top_p),
        ("accumulates in vocabulary order (no sort)", _no_sorting),
        ("returns the logits in sorted order", _not_scattered_back),
        ("cumulative sum of logits, not probabilities", _cumsum_of_logits),
        ("sorted ascending", _ascending),
        ("keeps the token whose tokens before it reach top_p exactly", _strict_at_the_boundary),
    ],
    "ex08_3": [
        ("finished hypotheses extended by every token", lambda *a: _beam_step(*a, freeze=False)),
        ("finished hypotheses keep growing in length", lambda *a: _beam_step(*a, grow_finished=True)),
        ("no length penalty", lambda *a: _beam_step(*a, penalty=False)),
        ("returns penalised scores", lambda *a: _beam_step(*a, return_penalised=True)),
        ("finished flag not carried over", lambda *a: _beam_step(*a, keep_finished=False)),
        ("origin and token swapped (% and //)", lambda *a: _beam_step(*a, swap_div_mod=True)),
        ("penalty with the old lengths", lambda *a: _beam_step(*a, old_lengths=True)),
        ("best token inside each beam", _best_token_per_beam),
    ],
}
