"""Checks for chapter 01 — vocabulary, embedding lookup and the √d_model scale.

References are independent of the package's answers: ids worked out from the word list in
this file, PyTorch's ``F.embedding`` / ``nn.Embedding`` and ``math.sqrt``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer_course_tools.course import PACKAGE
from transformer_course_tools.exercises.probe.calls import call, calls_case, grad_of_sum, leaf, module, new, ref
from transformer_course_tools.exercises.probe.wire import kind

from ._tools import CheckFailure, Mistakes, expect_close, expect_dtype, expect_shape, name_mistake, same_tensor
from .case import Case, Outcome
from .registry import exercise

# The check's own copy of the id layout: the four special tokens, then the words in order.
_SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
_WORDS = ["the", "robot", "paints", "a", "blue", "door", "."]
_VOCAB = f"{PACKAGE}.vocab:Vocab"  # built where the probe runs, with the learner's class


def _expected_ids(tokens: list[str], add_bos: bool, add_eos: bool) -> list[int]:
    table = {token: i for i, token in enumerate(_SPECIALS + _WORDS)}
    ids = [table[t] if t in table else _SPECIALS.index("<unk>") for t in tokens]
    return [1] * add_bos + ids + [2] * add_eos


@exercise("ex01_1", "transformer_course.vocab:Vocab.encode", "easy")
def vocab_encode_cases(larger: bool = False) -> list[Case]:
    """Vocab.encode: tokens → ids, with <unk>, <bos>, <eos>

    Nudge: a vocabulary maps each token to its id, with a reserved id for unknown tokens and optional markers at
    the start and end of a sentence.

    Hint: look each token up in self.token_to_id, falling back to self.unk_id; then put self.bos_id in front if
    add_bos and self.eos_id at the end if add_eos.
    """
    cases = [
        (["the", "robot", "paints", "a", "door", "."], False, False),
        (["the", "robot", "paints", "a", "zebra"], False, False),  # one unknown word
        (["the", "blue", "door"], True, False),
        (["the", "blue", "door"], False, True),
        (["a", "robot", "."], True, True),
        (["The", "Robot"], False, False),  # encode does not lower-case: these are unknown
        (["zebra", "unicorn", "the"], True, True),  # unknown words at the start
        ([], False, False),  # an empty sentence
        ([], True, True),
        (["<eos>", "robot", "<pad>"], False, False),  # special tokens written out are ordinary look-ups
        (("paints", "door"), True, False),  # a tuple is a sequence of tokens too
    ]
    if larger:  # the grader's hidden cases: the same sentences, six times as long
        cases = [(tokens * 6, add_bos, add_eos) for tokens, add_bos, add_eos in cases]
    return [
        Case(f"case encode({list(tokens)!r}, add_bos={add_bos}, add_eos={add_eos})",
             calls_case(call(new(_VOCAB, _WORDS), tokens, add_bos=add_bos, add_eos=add_eos)), _judge_ids)
        for tokens, add_bos, add_eos in cases
    ]  # fmt: skip


def _judge_ids(case: Case, got: Outcome) -> None:
    label, (_, tokens) = case.label, case.args()
    add_bos, add_eos = case.kwargs()["add_bos"], case.kwargs()["add_eos"]
    try:
        ids = got.output()
    except CheckFailure as error:  # the learner's encode raised: a KeyError on an unknown word is the usual one
        raised = got.calls[0]["error"] or {}
        unknown = [t for t in tokens if t not in _SPECIALS + _WORDS]
        if raised.get("type") != "KeyError" or not unknown or error.brief is None:
            raise
        fix = "a token the vocabulary does not know raises KeyError: give it <unk> (self.unk_id) instead"
        raise CheckFailure(f"{error.brief}; {fix}", brief=error.brief) from None
    want = _expected_ids(list(tokens), add_bos, add_eos)
    if 1 in got.changed():
        raise CheckFailure(f"{label}: the list of tokens was modified; build a new list of ids instead")
    if not isinstance(ids, list):
        raise CheckFailure(f"{label}: should return a list of ints, got {kind(ids)}")
    if not all(type(i) is int for i in ids):
        kinds = sorted({kind(i) for i in ids})
        raise CheckFailure(f"{label}: every id should be a Python int, got {', '.join(kinds)}")
    if ids != want:
        mistakes = _id_mistakes(list(tokens), add_bos, add_eos)
        name_mistake(ids, want, mistakes, f"{label}: expected ids {want}, got {ids}")
        raise CheckFailure(f"{label}: {_explain_ids(ids, want, list(tokens), add_bos, add_eos)}")


def _id_mistakes(tokens: list[str], add_bos: bool, add_eos: bool) -> Mistakes:
    """The ids of typical mistakes in encode, replayed."""
    table = {token: i for i, token in enumerate(_SPECIALS + _WORDS)}
    unknown = [t for t in tokens if t not in table]

    def ids(unk: int = 3, lower: bool = False) -> list[int]:
        return [table.get(t.lower() if lower else t, unk) for t in tokens]

    def wrapped(core: list[int], bos: int = 1, eos: int = 2) -> list[int]:
        return [bos] * add_bos + core + [eos] * add_eos

    to_unk = f"unknown tokens {unknown} must become <unk> = id 3 (self.unk_id)"
    return [
        (wrapped([table[t] for t in tokens if t in table]), f"unknown tokens are dropped: {to_unk}"),
        (wrapped(ids(0)), f"unknown tokens become <pad> = 0; {to_unk}"),
        (wrapped(ids(-1)), f"unknown tokens become -1; {to_unk}"),
        (wrapped(ids(len(table))), f"unknown tokens become {len(table)}, one past the last id; {to_unk}"),
        (wrapped(ids(lower=True)), "the tokens are lower-cased: encode looks each token up as it is written"),
        (wrapped(ids(), bos=2, eos=1), "<bos> and <eos> are swapped: <bos> = 1 goes first, "
         "<eos> = 2 last"),
        (ids() + [1] * add_bos + [2] * add_eos, "<bos> is put at the end; it goes in front of the ids"),
        (ids(), "add_bos and add_eos are ignored: put <bos> = 1 in front when add_bos, <eos> = 2 at the end when "
         "add_eos"),
        ([1, *ids(), 2], "<bos> and <eos> are added whatever add_bos and add_eos say"),
    ]  # fmt: skip


def _explain_ids(got: list[int], want: list[int], tokens: list[str], add_bos: bool, add_eos: bool) -> str:
    message = f"expected ids {want}, got {got}"
    unknown = [t for t in tokens if t not in _SPECIALS + _WORDS]
    if unknown and len(got) < len(want):
        return f"{message} (unknown tokens {unknown} are dropped; they must become <unk> = id 3)"
    if unknown and 3 not in got:
        return f"{message} (unknown tokens {unknown} must become <unk> = id 3)"
    if add_bos and (not got or got[0] != 1):
        return f"{message} (add_bos=True: the first id must be <bos> = 1)"
    if add_eos and (not got or got[-1] != 2):
        return f"{message} (add_eos=True: the last id must be <eos> = 2)"
    if not add_bos and got[:1] == [1] and want[:1] != [1]:
        return f"{message} (add_bos=False: no <bos> at the start)"
    if not add_eos and got[-1:] == [2] and want[-1:] != [2]:
        return f"{message} (add_eos=False: no <eos> at the end)"
    return message


# (vocab size V, d_model D, shape of the batch of ids, padding_idx)
_EMBED_CASES = [(11, 8, (2, 5), None), (13, 7, (3, 4), 0), (5, 1, (1, 1), None), (20, 12, (6,), 0)]
_EMBED_CASES_LARGER = [(50, 32, (4, 16), None), (37, 24, (8, 12), 0), (9, 3, (2, 3), None), (64, 48, (40,), 0)]


@exercise("ex01_2", "transformer_course.embeddings:TokenEmbedding.forward", "easy")
def token_embedding_cases(larger: bool = False) -> Iterator[Case]:
    """TokenEmbedding.forward: lookup × √d_model

    Nudge: an embedding is a table lookup, scaled up by the square root of the model width (paper §3.4).

    Hint: look the ids up in the layer's table, self.embedding, then multiply the vectors by the square root of
    the model width, self.d_model, as a Python float (math.sqrt), not a tensor (paper §3.4).
    """
    from transformer_course.embeddings import TokenEmbedding

    for vocab_size, d_model, shape, padding_idx in _EMBED_CASES_LARGER if larger else _EMBED_CASES:
        embedding = TokenEmbedding(vocab_size, d_model, padding_idx=padding_idx)
        tokens = torch.randint(0, vocab_size, shape)
        tokens.view(-1)[0] = vocab_size - 1  # the last row is used too
        probe = calls_case(
            call(ref("embedding"), tokens) | grad_of_sum("embedding", "embedding", "weight"),
            objects={"embedding": module(embedding, vocab_size, d_model, padding_idx=padding_idx)},
            report={"weight": ["embedding", "embedding", "weight"]},
        )
        label = f"case V={vocab_size}, d_model={d_model}, tokens of shape {shape}"
        yield (Case(label, probe, _judge_embedding, {"weight": embedding.embedding.weight.detach().clone(),
                                                           "tokens": tokens, "padding_idx": padding_idx}))  # fmt: skip


def _judge_embedding(case: Case, got: Outcome) -> None:
    label, weight, tokens = case.label, case.given["weight"], case.given["tokens"]
    vocab_size, d_model = weight.shape
    out = got.output()
    if not same_tensor(got.report("weight"), weight):
        raise CheckFailure(f"{label}: the embedding weight was changed; scale the looked-up vectors, not the table")
    want = F.embedding(tokens, weight) * math.sqrt(d_model)  # (*shape, D)
    out = expect_shape(out, tuple(want.shape), "the output", label)
    looked_up, root = F.embedding(tokens, weight), math.sqrt(d_model)
    mistakes = [
        (looked_up, f"the vectors are not scaled: multiply by sqrt(d_model) = {root:.4g}"),
        (looked_up * d_model, "the vectors are multiplied by d_model; multiply by sqrt(d_model) instead"),
        (looked_up / root, "the vectors are divided by sqrt(d_model); multiply by it instead"),
        (looked_up / d_model, "the vectors are divided by d_model; multiply by sqrt(d_model) instead"),
        (looked_up * math.sqrt(vocab_size), f"the vectors are multiplied by sqrt(vocab_size) = "
         f"{math.sqrt(vocab_size):.4g}; the scale is sqrt(d_model) = {root:.4g}"),
        (looked_up * math.sqrt(tokens.shape[-1]), f"the vectors are multiplied by the square root of the number "
         f"of tokens per row ({tokens.shape[-1]}); the scale is sqrt(d_model) = {root:.4g}"),
        (looked_up + root, f"sqrt(d_model) = {root:.4g} is added; multiply the vectors by it"),
    ]  # fmt: skip
    expect_close(out, want, "the output", label, mistakes=mistakes)
    # The output must stay connected to the weight, or training would never update it.
    if not got.requires_grad() or got.grad() is None:
        raise CheckFailure(f"{label}: the output does not depend on the weight through autograd (no .data / no_grad)")
    counts = torch.bincount(tokens.flatten(), minlength=vocab_size).to(weight.dtype)  # (V,)
    want_grad = counts[:, None].repeat(1, d_model) * math.sqrt(d_model)  # (V, D)
    if case.given["padding_idx"] is not None:
        want_grad[case.given["padding_idx"]] = 0.0  # nn.Embedding gives the padding row no gradient
    expect_close(got.grad(), want_grad, "the gradient of output.sum() with respect to the weight", label)


@exercise("ex01_3", "transformer_course.embeddings:one_hot_lookup", "medium")
def one_hot_lookup_cases(larger: bool = False) -> Iterator[Case]:
    """embedding lookup as one_hot(tokens) @ weight

    Nudge: looking a row up is the same as multiplying a one-hot vector by the table (paper §3.4).

    Hint: F.one_hot(tokens, num_classes=V) gives integer one-hot rows (..., V); convert them to weight.dtype and
    multiply by weight (V, D).
    """
    sizes = [
        ((2, 5), 10, 4, torch.float32, True),
        ((1, 1), 3, 6, torch.float32, True),
        ((7,), 9, 5, torch.float32, False),  # 1-D ids; the largest id is not used
        ((2, 3, 4), 6, 3, torch.float64, True),  # extra leading axis, double precision
        ((3, 2), 8, 2, torch.float32, False),  # the last rows of the table are never looked up
    ]
    if larger:  # the grader's hidden cases
        sizes = [
            ((4, 16), 40, 12, torch.float32, True),
            ((2, 3), 7, 9, torch.float32, True),
            ((33,), 25, 8, torch.float32, False),
            ((3, 5, 6), 18, 7, torch.float64, True),
            ((6, 4), 30, 5, torch.float32, False),
        ]
    for shape, vocab_size, d_model, dtype, use_last_row in sizes:
        weight = torch.randn(vocab_size, d_model, dtype=dtype)
        high = vocab_size if use_last_row else vocab_size // 2
        tokens = torch.randint(0, high, shape)
        if use_last_row:
            tokens.view(-1)[-1] = vocab_size - 1
        label = f"case tokens of shape {shape} (max id {int(tokens.max())}), weight ({vocab_size}, {d_model}) {dtype}"
        probe = calls_case(call(tokens, ref("weight")) | grad_of_sum("weight"), objects={"weight": leaf(weight)})
        yield Case(label, probe, _judge_one_hot, {"weight": weight})


def _judge_one_hot(case: Case, got: Outcome) -> None:
    label, (tokens, _), weight = case.label, case.args(), case.given["weight"]
    out = got.output()
    want = F.embedding(tokens, weight)  # (*shape, D)
    name_mistake(out, want, _lookup_mistakes(tokens, weight), label)
    out = expect_shape(out, tuple(want.shape), "the output", label)
    expect_dtype(out, weight.dtype, "the output (same dtype as weight)", label)
    expect_close(out, want, "the output", label)
    if not got.requires_grad() or got.grad() is None:
        raise CheckFailure(f"{label}: the output is not connected to weight through autograd")
    counts = torch.bincount(tokens.flatten(), minlength=weight.shape[0]).to(weight.dtype)  # (V,)
    expect_close(got.grad(), counts[:, None].expand(-1, weight.shape[1]), "the gradient with respect to weight", label)


def _lookup_mistakes(tokens: Tensor, weight: Tensor) -> Mistakes:
    vocab_size, d_model = weight.shape
    one_hot = F.one_hot(tokens, vocab_size).to(weight.dtype)  # (..., V)
    return [
        (weight[(tokens + 1) % vocab_size], "each token reads the row after its own: one_hot(tokens, V) puts the "
         "1 at column id itself (no shift)"),
        (weight[(tokens - 1) % vocab_size], "each token reads the row before its own: one_hot(tokens, V) puts the "
         "1 at column id itself (no shift)"),
        (F.embedding(tokens, weight).transpose(-1, -2), "the result is transposed, (…, D, N): multiply "
         "one_hot (…, V) @ weight (V, D)"),
        (one_hot.sum(dim=-2) @ weight, "the one-hot rows are summed first (a bag of words): multiply each row, "
         "one_hot(tokens, V) @ weight"),
        (F.embedding(tokens, weight) * math.sqrt(d_model), "the rows are scaled by sqrt(D): one_hot_lookup is the "
         "plain lookup (TokenEmbedding scales, not this function)"),
    ]  # fmt: skip
