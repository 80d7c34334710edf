"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from . import right, wrong

# -- mutants


@wrong("mutant", "drops the token that crosses top_p")
def _drops_the_token_that_crosses_top_p(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    drop_sorted = sorted_logits.softmax(-1).cumsum(-1) > top_p
    drop_sorted[..., 0] = False
    return logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf"))


@wrong("mutant", "accumulates in vocabulary order (no sort)")
def _no_sorting(logits, top_p):
    probs = logits.softmax(-1)
    drop = probs.cumsum(-1) - probs >= top_p  # accumulates in vocabulary order
    return logits.masked_fill(drop, float("-inf"))


@wrong("mutant", "returns the logits in sorted order")
def _not_scattered_back(logits, top_p):
    sorted_logits, _ = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(-1)
    return sorted_logits.masked_fill(probs.cumsum(-1) - probs >= top_p, float("-inf"))  # sorted order


@wrong("mutant", "cumulative sum of logits, not probabilities")
def _cumsum_of_logits(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    drop_sorted = sorted_logits.cumsum(-1) - sorted_logits >= top_p
    return logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf"))


@wrong("mutant", "sorted ascending")
def _ascending(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1)
    probs = sorted_logits.softmax(-1)
    drop_sorted = probs.cumsum(-1) - probs >= top_p
    return logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf"))


@wrong(
    "mutant",
    "keeps the token whose tokens before it reach top_p exactly",
    says="top_p=0.75 (tokens 1 and 3 reach top_p exactly: the rest go), row 0: token 0 is outside the nucleus (kept tokens [1, 3])",
)
def _strict_at_the_boundary(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(-1)
    drop_sorted = probs.cumsum(-1) - probs > top_p  # keeps a token whose tokens before it reach top_p exactly
    return logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf"))


# -- own mistakes and alternatives


def _top_p(logits, top_p, fill=float("-inf"), invert=False):
    probs, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
    drop = probs.cumsum(dim=-1) - probs >= top_p
    drop = ~drop if invert else drop
    return logits.masked_fill(drop.scatter(-1, order, drop), fill)


@wrong("own", says="set to 0")
def _top_p_zero_fill(logits, top_p):
    return _top_p(logits, top_p, fill=0.0)


@right("own")  # the course's rule (ex03_2): a masked logit has probability 0, whatever fills it
def _top_p_lowest_fill(logits, top_p):
    return _top_p(logits, top_p, fill=torch.finfo(logits.dtype).min)


@right("own")  # log-probabilities of the nucleus: the same distribution for sampling
def _top_p_log_probabilities(logits, top_p):
    return _top_p(logits, top_p).log_softmax(dim=-1)


@wrong("own", says="the nucleus is dropped")
def _top_p_inverted(logits, top_p):
    return _top_p(logits, top_p, invert=True)


# -- tester set 'first'


@wrong("tester", "drop where cumsum (including the token) > top_p: drops the token that crosses", by="first")
def ex09_2_no_shift(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    drop_sorted = probs.cumsum(dim=-1) > top_p  # includes the token itself
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


@wrong("tester", "returns the logits in sorted order (never unsorted)", by="first")
def ex09_2_sorted_order(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    return sorted_logits.masked_fill(before >= top_p, float("-inf"))  # never put back in vocabulary order


@wrong("tester", "unsorts with gather(order) instead of scatter (wrong inverse permutation)", by="first")
def ex09_2_gather_unsort(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    drop_sorted = before >= top_p
    drop = drop_sorted.gather(-1, order)  # gather with the forward permutation instead of its inverse
    return logits.masked_fill(drop, float("-inf"))


@right("tester", by="first")
def ex09_2_alt_argsort(logits, top_p):
    order = logits.argsort(dim=-1, descending=True)
    probs = logits.softmax(dim=-1).gather(-1, order)
    before = torch.cumsum(probs, dim=-1) - probs
    inverse = order.argsort(dim=-1)
    drop = (before >= top_p).gather(-1, inverse)
    return torch.where(drop, torch.full_like(logits, float("-inf")), logits)


@wrong("tester", "drop where before > top_p (strict) instead of >=", by="first")
def x08_2_strict_greater(logits, top_p):
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    drop_sorted = before > top_p  # keeps the token whose predecessors reach exactly top_p
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


# -- tester set 'second'


def _topp_pre(top_p):
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")


@wrong("tester", "drops where the inclusive cumsum >= top_p (drops the crossing token)", by="second")
def topp_inclusive_cumsum(logits, top_p):
    _topp_pre(top_p)
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    drop_sorted = probs.cumsum(dim=-1) >= top_p
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


@wrong("tester", "sorted-order mask applied without scattering back to vocabulary order", by="second")
def topp_no_unsort(logits, top_p):
    _topp_pre(top_p)
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    drop = before >= top_p
    return logits.masked_fill(drop, float("-inf"))


@wrong("tester", "sorts ascending (keeps the least probable)", by="second")
def topp_ascending(logits, top_p):
    _topp_pre(top_p)
    sorted_logits, order = logits.sort(dim=-1)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    drop_sorted = before >= top_p
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


@right("tester", by="second")
def topp_alt(logits, top_p):
    _topp_pre(top_p)
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    p = torch.softmax(sorted_logits, dim=-1)
    keep_sorted = torch.cumsum(p, dim=-1) - p < top_p
    keep = keep_sorted.gather(-1, order.argsort(dim=-1))
    return torch.where(keep, logits, torch.full_like(logits, float("-inf")))


# -- tester set 'third'


def _tp_guard(top_p):
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")


@wrong("tester", "cumsum including the token itself: drops the token that crosses top_p", by="third")
def topp_inclusive(logits, top_p):
    _tp_guard(top_p)
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    drop_sorted = probs.cumsum(dim=-1) > top_p
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


@wrong("tester", "mask in sorted order applied to unsorted logits (never scattered back)", by="third")
def topp_no_unsort_third(logits, top_p):
    _tp_guard(top_p)
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    drop_sorted = before >= top_p
    return logits.masked_fill(drop_sorted, float("-inf"))


@wrong("tester", "gather instead of scatter to undo the sort (inverse permutation)", by="third")
def topp_gather(logits, top_p):
    _tp_guard(top_p)
    sorted_logits, order = logits.sort(dim=-1, descending=True)
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs
    drop_sorted = before >= top_p
    drop = drop_sorted.gather(-1, order)
    return logits.masked_fill(drop, float("-inf"))
