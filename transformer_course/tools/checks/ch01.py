"""Checks for chapter 01 — vocabulary, embedding lookup and the √d_model scale.

References are independent of the package's answers: ids worked out from the word list in
this file, PyTorch's ``F.embedding`` / ``nn.Embedding`` and ``math.sqrt``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F

from ..course import PACKAGE
from ..probe.calls import call, calls_case, grad_of_sum, leaf, module, new, ref
from ..probe.wire import kind
from ._tools import CheckFailure, expect_close, expect_dtype, expect_shape, same_tensor
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
    ids = got.output()
    want = _expected_ids(list(tokens), add_bos, add_eos)
    if 1 in got.changed():
        raise CheckFailure(f"{label}: the list of tokens was modified; build a new list of ids instead")
    if not isinstance(ids, list):
        raise CheckFailure(f"{label}: should return a list of ints, got {kind(ids)}")
    if not all(type(i) is int for i in ids):
        kinds = sorted({kind(i) for i in ids})
        raise CheckFailure(f"{label}: every id should be a Python int, got {', '.join(kinds)}")
    if ids != want:
        raise CheckFailure(f"{label}: {_explain_ids(ids, want, list(tokens), add_bos, add_eos)}")


def _explain_ids(got: list[int], want: list[int], tokens: list[str], add_bos: bool, add_eos: bool) -> str:
    message = f"expected ids {want}, got {got}"
    unknown = [t for t in tokens if t not in _SPECIALS + _WORDS]
    if unknown and len(got) < len(want):
        return f"{message} (unknown tokens {unknown} must become <unk> = id 3, not be dropped)"
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

    Hint: look the ids up with self.embedding(tokens) and multiply by math.sqrt(self.d_model) (paper §3.4).
    """
    from ...embeddings import TokenEmbedding

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
    if d_model > 1 and torch.allclose(out, want / math.sqrt(d_model), atol=1e-6):
        raise CheckFailure(f"{label}: the vectors are not scaled: multiply by sqrt(d_model) = {math.sqrt(d_model):.4g}")
    if d_model > 1 and torch.allclose(out, want * math.sqrt(d_model), atol=1e-5):
        raise CheckFailure(f"{label}: the vectors are multiplied by d_model; multiply by sqrt(d_model) instead")
    if d_model > 1 and torch.allclose(out, want / d_model, atol=1e-6):
        raise CheckFailure(f"{label}: the vectors are divided by sqrt(d_model); multiply by it instead")
    expect_close(out, want, "the output", label)
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
    out = expect_shape(out, tuple(want.shape), "the output", label)
    expect_dtype(out, weight.dtype, "the output (same dtype as weight)", label)
    expect_close(out, want, "the output", label)
    if not got.requires_grad() or got.grad() is None:
        raise CheckFailure(f"{label}: the output is not connected to weight through autograd")
    counts = torch.bincount(tokens.flatten(), minlength=weight.shape[0]).to(weight.dtype)  # (V,)
    expect_close(got.grad(), counts[:, None].expand(-1, weight.shape[1]), "the gradient with respect to weight", label)
