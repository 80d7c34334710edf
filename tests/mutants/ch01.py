"""Wrong answers for chapter 01: vocabulary look-up, √d_model scaling, one-hot lookup."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

# -- ex01_1: Vocab.encode ------------------------------------------------------------------


def _no_unk(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id[t] for t in tokens]  # KeyError on an unknown token
    return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos


def _unknown_dropped(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id[t] for t in tokens if t in self.token_to_id]
    return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos


def _unknown_as_pad(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id.get(t, self.pad_id) for t in tokens]
    return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos


def _bos_eos_swapped(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id.get(t, self.unk_id) for t in tokens]
    return [self.eos_id] * add_bos + ids + [self.bos_id] * add_eos


def _flags_ignored(self, tokens, add_bos=False, add_eos=False):
    return [self.token_to_id.get(t, self.unk_id) for t in tokens]


def _always_wrapped(self, tokens, add_bos=False, add_eos=False):
    return [self.bos_id] + [self.token_to_id.get(t, self.unk_id) for t in tokens] + [self.eos_id]


def _lower_cases(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id.get(t.lower(), self.unk_id) for t in tokens]
    return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos


def _returns_tensor(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id.get(t, self.unk_id) for t in tokens]
    return torch.tensor([self.bos_id] * add_bos + ids + [self.eos_id] * add_eos, dtype=torch.long)


# -- ex01_2: TokenEmbedding.forward -----------------------------------------------------------


def _unscaled(self, tokens):
    return self.embedding(tokens)


def _times_d_model(self, tokens):
    return self.embedding(tokens) * self.d_model


def _divided(self, tokens):
    return self.embedding(tokens) / math.sqrt(self.d_model)


def _sqrt_vocab(self, tokens):
    return self.embedding(tokens) * math.sqrt(self.vocab_size)


def _detached(self, tokens):
    return self.embedding.weight.data[tokens] * math.sqrt(self.d_model)


def _scales_the_table(self, tokens):
    self.embedding.weight.data.mul_(math.sqrt(self.d_model))  # changes the weight at every call
    return self.embedding(tokens)


# -- ex01_3: one_hot_lookup -------------------------------------------------------------------


def _num_classes_inferred(tokens, weight):
    return F.one_hot(tokens).to(weight.dtype) @ weight  # width = max id + 1, not V


def _always_float32(tokens, weight):
    return F.one_hot(tokens, weight.shape[0]).float() @ weight.float()


def _integer_one_hot(tokens, weight):
    return F.one_hot(tokens, weight.shape[0]) @ weight  # long @ float: a dtype error


def _off_by_one(tokens, weight):
    return F.one_hot((tokens + 1) % weight.shape[0], weight.shape[0]).to(weight.dtype) @ weight


def _no_grad(tokens, weight):
    with torch.no_grad():
        return F.one_hot(tokens, weight.shape[0]).to(weight.dtype) @ weight


MUTANTS = {
    "ex01_1": [
        ("no <unk>: KeyError on an unknown token", _no_unk),
        ("unknown tokens dropped", _unknown_dropped),
        ("unknown tokens mapped to <pad>", _unknown_as_pad),
        ("<bos> and <eos> swapped", _bos_eos_swapped),
        ("add_bos / add_eos ignored", _flags_ignored),
        ("always adds <bos> and <eos>", _always_wrapped),
        ("lower-cases the tokens", _lower_cases),
        ("returns a tensor", _returns_tensor),
    ],
    "ex01_2": [
        ("forgets the √d_model scale", _unscaled),
        ("multiplies by d_model", _times_d_model),
        ("divides by √d_model", _divided),
        ("multiplies by √vocab_size", _sqrt_vocab),
        ("cuts the graph with .data", _detached),
        ("scales the weight in place", _scales_the_table),
    ],
    "ex01_3": [
        ("one_hot without num_classes", _num_classes_inferred),
        ("always float32", _always_float32),
        ("integer one-hot rows", _integer_one_hot),
        ("ids shifted by one", _off_by_one),
        ("computed under no_grad", _no_grad),
    ],
}
