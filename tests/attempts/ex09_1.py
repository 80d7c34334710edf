"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from . import right, wrong

# -- mutants


@wrong("mutant", "keeps generating after <eos>", says="nothing is generated after <eos>")
def _keeps_generating_after_eos(logits, finished, eos_id, pad_id):
    tokens = logits.argmax(-1)
    return tokens, finished | (tokens == eos_id)


@wrong("mutant", "finished rows become unfinished", says="must stay finished")
def _forgets_finished_rows(logits, finished, eos_id, pad_id):
    tokens = logits.argmax(-1).masked_fill(finished, pad_id)
    return tokens, tokens == eos_id  # a finished row becomes unfinished again


@wrong("mutant", "pad and eos ids hard-coded to 0 and 2")
def _hard_coded_ids(logits, finished, eos_id, pad_id):
    tokens = logits.argmax(-1).masked_fill(finished, 0)
    return tokens, finished | (tokens == 2)


@wrong("mutant", "updates finished in place")
def _updates_finished_in_place(logits, finished, eos_id, pad_id):
    tokens = logits.argmax(-1).masked_fill(finished, pad_id)
    finished |= tokens == eos_id
    return tokens, finished


@wrong("mutant", "argmax over the batch axis")
def _softmax_then_argmax_over_batch(logits, finished, eos_id, pad_id):
    tokens = logits.softmax(0).argmax(0)[: logits.shape[0]]
    return tokens.masked_fill(finished, pad_id), finished | (tokens == eos_id)


# -- own mistakes and alternatives


@wrong("own", says="argmin")
def _greedy_argmin(logits, finished, eos_id, pad_id):
    tokens = logits.argmin(dim=-1).masked_fill(finished, pad_id)
    return tokens, finished | (tokens == eos_id)


@wrong("own", says="is replaced by pad_id")
def _greedy_eos_padded(logits, finished, eos_id, pad_id):
    tokens = logits.argmax(dim=-1)
    tokens = tokens.masked_fill(finished | (tokens == eos_id), pad_id)
    return tokens, finished | (logits.argmax(dim=-1) == eos_id)


@wrong("own", says="its next token must be pad_id")
def _greedy_finished_get_eos(logits, finished, eos_id, pad_id):
    tokens = logits.argmax(dim=-1).masked_fill(finished, eos_id)
    return tokens, finished | (tokens == eos_id)


# -- tester set 'first'


@wrong("tester", "finished = (next == eos) only: forgets rows already finished", by="first")
def ex09_1_forgets_finished(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1).masked_fill(finished, pad_id)
    return next_tokens, next_tokens == eos_id


@wrong("tester", "argmax over dim=0 (batch) instead of the vocabulary", by="first")
def ex09_1_argmax_dim0(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=0).masked_fill(finished, pad_id)
    return next_tokens, finished | (next_tokens == eos_id)


@wrong("tester", "updates finished in place (finished |= ...)", by="first")
def ex09_1_in_place(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1).masked_fill(finished, pad_id)
    finished |= next_tokens == eos_id
    return next_tokens, finished


@right("tester", by="first")
def ex09_1_alt_where(logits, finished, eos_id, pad_id):
    best = torch.max(logits, dim=-1).indices
    tokens = torch.where(finished, torch.full_like(best, pad_id), best)
    return tokens, torch.logical_or(finished, tokens.eq(eos_id))


@wrong("tester", "finished rows get eos_id again instead of pad_id", by="first")
def x08_1_finished_get_eos(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1).masked_fill(finished, eos_id)  # eos again instead of pad
    return next_tokens, finished | (next_tokens == eos_id)


# -- tester set 'second'


@wrong("tester", "argmax over dim=0 (batch) instead of vocabulary", by="second")
def greedy_argmax_dim0(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=0)
    next_tokens = next_tokens.masked_fill(finished, pad_id)
    return next_tokens, finished | (next_tokens == eos_id)


@wrong("tester", "new finished = (token == eos) only: forgets rows already finished", by="second")
def greedy_forgets_finished(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1)
    next_tokens = next_tokens.masked_fill(finished, pad_id)
    return next_tokens, next_tokens == eos_id


@wrong("tester", "updates finished in place (|=) and returns it", by="second")
def greedy_mutates_finished(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1)
    next_tokens = next_tokens.masked_fill(finished, pad_id)
    finished |= next_tokens == eos_id
    return next_tokens, finished


# -- tester set 'third'


@wrong("tester", "finished = (next == eos): rows finished earlier become unfinished", by="third")
def greedy_forget_finished(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1)
    next_tokens = next_tokens.masked_fill(finished, pad_id)
    return next_tokens, next_tokens == eos_id


@wrong("tester", "updates finished in place (finished |= ...)", by="third")
def greedy_inplace(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1)
    next_tokens = next_tokens.masked_fill(finished, pad_id)
    finished |= next_tokens == eos_id
    return next_tokens, finished


@wrong("tester", "argmax over dim=0 (the batch axis)", by="third")
def greedy_dim0(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=0)
    next_tokens = next_tokens.masked_fill(finished, pad_id)
    return next_tokens, finished | (next_tokens == eos_id)


@right("tester", by="third")
def greedy_alt(logits, finished, eos_id, pad_id):
    best = logits.max(dim=-1).indices
    tokens = torch.where(finished, torch.full_like(best, pad_id), best)
    return tokens, torch.logical_or(finished, tokens.eq(eos_id))
