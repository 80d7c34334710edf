"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from . import right, wrong

# -- mutants


@wrong("mutant", "the block's maximum only", says="keep the running maximum")
def _block_maximum_only(top, total, acc, scores, values):
    new_top = scores.amax(dim=-1, keepdim=True)  # the running maximum forgotten
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    return new_top, total * rescale + weights.sum(dim=-1, keepdim=True), acc * rescale + weights @ values


@wrong("mutant", "old sums never rescaled", says="the old total is not rescaled")
def _no_rescaling(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    weights = torch.exp(scores - new_top)
    return new_top, total + weights.sum(dim=-1, keepdim=True), acc + weights @ values  # old sums kept as they were


@wrong("mutant", "acc never rescaled", says="the old acc is not rescaled")
def _acc_not_rescaled(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    return new_top, total * rescale + weights.sum(dim=-1, keepdim=True), acc + weights @ values


@wrong("mutant", "rescale by exp(new − old)")
def _rescale_inverted(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(new_top - top)
    weights = torch.exp(scores - new_top)
    return new_top, total * rescale + weights.sum(dim=-1, keepdim=True), acc * rescale + weights @ values


@wrong("mutant", "the block's weights under the old maximum")
def _weights_under_the_old_maximum(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - top)
    return new_top, total * rescale + weights.sum(dim=-1, keepdim=True), acc * rescale + weights @ values


@wrong("mutant", "acc normalised at every block")
def _returns_the_normalised_output(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    new_total = total * rescale + weights.sum(dim=-1, keepdim=True)
    return new_top, new_total, (acc * rescale + weights @ values) / new_total


@wrong("mutant", "no maximum at all")
def _no_maximum_at_all(top, total, acc, scores, values):
    weights = torch.exp(scores)  # overflows once a score passes ≈ 88 in float32
    return top, total + weights.sum(dim=-1, keepdim=True), acc + weights @ values


@wrong("mutant", "the scores changed in place")
def _in_place(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = scores.sub_(new_top).exp_()  # the caller's scores overwritten
    return new_top, total * rescale + weights.sum(dim=-1, keepdim=True), acc * rescale + weights @ values


# -- own mistakes and alternatives


def _online(top, total, acc, scores, values, fold):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    return new_top, *fold(total, acc, rescale, weights.sum(-1, keepdim=True), weights @ values)


@wrong("own", says="total holds the block's sum only")
def _old_total_dropped(top, total, acc, scores, values):
    return _online(top, total, acc, scores, values, lambda t, a, r, bt, ba: (bt, a * r + ba))


@wrong("own", says="acc holds the block's weighted values only")
def _old_acc_dropped(top, total, acc, scores, values):
    return _online(top, total, acc, scores, values, lambda t, a, r, bt, ba: (t * r + bt, ba))


@wrong("own", says="the rescaling of acc is inverted")
def _acc_rescale_inverted(top, total, acc, scores, values):
    return _online(top, total, acc, scores, values, lambda t, a, r, bt, ba: (t * r + bt, a / r + ba))


# -- tester set 'first'


@wrong("tester", "forgot to rescale acc by exp(top - new_top)", by="first")
def ex13_5_acc_not_rescaled(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc + weights @ values
    return new_top, total, acc


@wrong("tester", "new maximum from the block only (forgets the running max)", by="first")
def ex13_5_block_max_only(top, total, acc, scores, values):
    new_top = scores.amax(dim=-1, keepdim=True)  # forgets the running maximum
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


@wrong("tester", "rescale inverted: exp(new_top - top)", by="first")
def ex13_5_rescale_inverted(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(new_top - top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


@right("tester", by="first")
def ex13_5_alt_cat(top, total, acc, scores, values):
    new_top = torch.cat([top, scores], dim=-1).max(dim=-1, keepdim=True).values
    old = (top - new_top).exp()
    p = (scores - new_top).exp()
    return (
        new_top,
        torch.addcmul(p.sum(-1, keepdim=True), total, old),
        acc * old + torch.einsum("...ts,...sd->...td", p, values),
    )


@wrong("tester", "block weights exp(scores - top) with the old top", by="first")
def x10_5_weights_old_top(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - top)  # the old maximum (−inf at the first block)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


# -- tester set 'second'


@wrong("tester", "acc not rescaled by exp(top - new_top)", by="second")
def online_acc_not_rescaled(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc + weights @ values
    return new_top, total, acc


@wrong("tester", "rescale exp(new_top - top) (inverted)", by="second")
def online_rescale_inverted(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(new_top - top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


@wrong("tester", "block max taken over queries too (dim=-2 then -1): shared max across rows", by="second")
def online_max_wrong_axis(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-2, keepdim=True).amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


# -- tester set 'third'


@wrong("tester", "acc not rescaled by exp(old max - new max)", by="third")
def online_no_acc_rescale(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc + weights @ values
    return new_top, total, acc


@wrong("tester", "rescale inverted: exp(new_top - top)", by="third")
def online_inverted(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(new_top - top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1, keepdim=True)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


@wrong("tester", "block sum without keepdim: (..., T) does not broadcast against (..., T, 1)", by="third")
def online_sum_no_keepdim(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    total = total * rescale + weights.sum(dim=-1)
    acc = acc * rescale + weights @ values
    return new_top, total, acc


@right("tester", by="third")
def online_alt(top, total, acc, scores, values):
    block_max = scores.max(dim=-1, keepdim=True).values
    new_top = torch.where(block_max > top, block_max, top)
    old = (top - new_top).exp()
    p = (scores - new_top).exp()
    return new_top, old * total + p.sum(-1, keepdim=True), old * acc + torch.matmul(p, values)
