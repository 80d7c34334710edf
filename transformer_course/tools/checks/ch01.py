"""Checks for chapter 01 — vocabulary, embedding lookup and the √d_model scale.

References are independent of the package's answers: ids worked out from the word list in
this file, PyTorch's ``F.embedding`` / ``nn.Embedding`` and ``math.sqrt``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from ._tools import CheckFailure, call, expect_close, expect_dtype, expect_shape
from .registry import exercise

# The check's own copy of the id layout: the four special tokens, then the words in order.
_SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
_WORDS = ["the", "robot", "paints", "a", "blue", "door", "."]


def _expected_ids(tokens: list[str], add_bos: bool, add_eos: bool) -> list[int]:
    table = {token: i for i, token in enumerate(_SPECIALS + _WORDS)}
    ids = [table[t] if t in table else _SPECIALS.index("<unk>") for t in tokens]
    return [1] * add_bos + ids + [2] * add_eos


@exercise("ex01_1", "transformer_course.vocab:Vocab.encode", "easy")
def check_vocab_encode(impl: Callable) -> int:
    """Vocab.encode: tokens → ids, with <unk>, <bos>, <eos>

    Hint: look each token up in self.token_to_id, falling back to self.unk_id; then put self.bos_id in front if
    add_bos and self.eos_id at the end if add_eos.
    """
    from ...vocab import Vocab  # the learner's room, imported when the check runs

    vocab = Vocab(_WORDS)
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
    for tokens, add_bos, add_eos in cases:
        case = f"case encode({list(tokens)!r}, add_bos={add_bos}, add_eos={add_eos})"
        before = list(tokens)
        got = call(impl, vocab, tokens, add_bos=add_bos, add_eos=add_eos, case=case)
        want = _expected_ids(list(tokens), add_bos, add_eos)
        if list(tokens) != before:
            raise CheckFailure(f"{case}: the list of tokens was modified; build a new list of ids instead")
        if not isinstance(got, list):
            raise CheckFailure(f"{case}: should return a list of ints, got {type(got).__name__}")
        if not all(type(i) is int for i in got):
            kinds = sorted({type(i).__name__ for i in got})
            raise CheckFailure(f"{case}: every id should be a Python int, got {', '.join(kinds)}")
        if got != want:
            raise CheckFailure(f"{case}: {_explain_ids(got, want, list(tokens), add_bos, add_eos)}")
    return len(cases)


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


@exercise("ex01_2", "transformer_course.embeddings:TokenEmbedding.forward", "easy")
def check_token_embedding(impl: Callable) -> int:
    """TokenEmbedding.forward: lookup × √d_model

    Hint: look the ids up with self.embedding(tokens) and multiply by math.sqrt(self.d_model) (paper §3.4).
    """
    from ...embeddings import TokenEmbedding

    for vocab_size, d_model, shape, padding_idx in _EMBED_CASES:
        module = TokenEmbedding(vocab_size, d_model, padding_idx=padding_idx)
        tokens = torch.randint(0, vocab_size, shape)
        tokens.view(-1)[0] = vocab_size - 1  # the last row is used too
        case = f"case V={vocab_size}, d_model={d_model}, tokens of shape {shape}"
        weight = module.embedding.weight.detach().clone()
        got = call(impl, module, tokens, case=case)
        if not torch.equal(module.embedding.weight.detach(), weight):
            raise CheckFailure(f"{case}: the embedding weight was changed; scale the looked-up vectors, not the table")
        want = F.embedding(tokens, weight) * math.sqrt(d_model)  # (*shape, D)
        got = expect_shape(got, tuple(want.shape), "the output", case)
        if d_model > 1 and torch.allclose(got, want / math.sqrt(d_model), atol=1e-6):
            raise CheckFailure(
                f"{case}: the vectors are not scaled: multiply by sqrt(d_model) = {math.sqrt(d_model):.4g}"
            )
        if d_model > 1 and torch.allclose(got, want * math.sqrt(d_model), atol=1e-5):
            raise CheckFailure(f"{case}: the vectors are multiplied by d_model; multiply by sqrt(d_model) instead")
        if d_model > 1 and torch.allclose(got, want / d_model, atol=1e-6):
            raise CheckFailure(f"{case}: the vectors are divided by sqrt(d_model); multiply by it instead")
        expect_close(got, want, "the output", case)
        # The output must stay connected to the weight, or training would never update it.
        if not got.requires_grad:
            raise CheckFailure(
                f"{case}: the output does not depend on the weight through autograd (no .data / no_grad)"
            )
        grad = torch.autograd.grad(got.sum(), module.embedding.weight)[0]
        counts = torch.bincount(tokens.flatten(), minlength=vocab_size).to(grad.dtype)  # (V,)
        want_grad = counts[:, None].repeat(1, d_model) * math.sqrt(d_model)  # (V, D)
        if padding_idx is not None:
            want_grad[padding_idx] = 0.0  # nn.Embedding gives the padding row no gradient
        expect_close(grad, want_grad, "the gradient of output.sum() with respect to the weight", case)
    return len(_EMBED_CASES)


@exercise("ex01_3", "transformer_course.embeddings:one_hot_lookup", "medium")
def check_one_hot_lookup(impl: Callable) -> int:
    """embedding lookup as one_hot(tokens) @ weight

    Hint: F.one_hot(tokens, num_classes=V) gives integer one-hot rows (..., V); convert them to weight.dtype and
    multiply by weight (V, D).
    """
    cases = [
        ((2, 5), 10, 4, torch.float32, True),
        ((1, 1), 3, 6, torch.float32, True),
        ((7,), 9, 5, torch.float32, False),  # 1-D ids; the largest id is not used
        ((2, 3, 4), 6, 3, torch.float64, True),  # extra leading axis, double precision
        ((3, 2), 8, 2, torch.float32, False),  # the last rows of the table are never looked up
    ]
    for shape, vocab_size, d_model, dtype, use_last_row in cases:
        weight = torch.randn(vocab_size, d_model, dtype=dtype, requires_grad=True)
        high = vocab_size if use_last_row else vocab_size // 2
        tokens = torch.randint(0, high, shape)
        if use_last_row:
            tokens.view(-1)[-1] = vocab_size - 1
        case = f"case tokens of shape {shape} (max id {int(tokens.max())}), weight ({vocab_size}, {d_model}) {dtype}"
        got = call(impl, tokens, weight, case=case)
        want = F.embedding(tokens, weight.detach())  # (*shape, D)
        got = expect_shape(got, tuple(want.shape), "the output", case)
        expect_dtype(got, dtype, "the output (same dtype as weight)", case)
        expect_close(got, want, "the output", case)
        if not got.requires_grad:
            raise CheckFailure(f"{case}: the output is not connected to weight through autograd")
        grad = torch.autograd.grad(got.sum(), weight)[0]
        counts = torch.bincount(tokens.flatten(), minlength=vocab_size).to(dtype)  # (V,)
        expect_close(grad, counts[:, None].expand(-1, d_model), "the gradient with respect to weight", case)
    return len(cases)
