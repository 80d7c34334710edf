"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from transformer_course.vocab import BOS

from . import right, wrong

# -- mutants


@wrong("mutant", "no <unk>: KeyError on an unknown token")
def _no_unk(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id[t] for t in tokens]  # KeyError on an unknown token
    return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos


@wrong("mutant", "unknown tokens dropped")
def _unknown_dropped(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id[t] for t in tokens if t in self.token_to_id]
    return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos


@wrong("mutant", "unknown tokens mapped to <pad>")
def _unknown_as_pad(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id.get(t, self.pad_id) for t in tokens]
    return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos


@wrong("mutant", "<bos> and <eos> swapped")
def _bos_eos_swapped(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id.get(t, self.unk_id) for t in tokens]
    return [self.eos_id] * add_bos + ids + [self.bos_id] * add_eos


@wrong("mutant", "add_bos / add_eos ignored")
def _flags_ignored(self, tokens, add_bos=False, add_eos=False):
    return [self.token_to_id.get(t, self.unk_id) for t in tokens]


@wrong("mutant", "always adds <bos> and <eos>")
def _always_wrapped(self, tokens, add_bos=False, add_eos=False):
    return [self.bos_id] + [self.token_to_id.get(t, self.unk_id) for t in tokens] + [self.eos_id]


@wrong("mutant", "lower-cases the tokens")
def _lower_cases(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id.get(t.lower(), self.unk_id) for t in tokens]
    return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos


@wrong("mutant", "returns a tensor")
def _returns_tensor(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id.get(t, self.unk_id) for t in tokens]
    return torch.tensor([self.bos_id] * add_bos + ids + [self.eos_id] * add_eos, dtype=torch.long)


# -- own mistakes and alternatives


def _encode(self, tokens, add_bos, add_eos, unknown=None, bos_last=False):
    ids = [self.token_to_id.get(t, self.unk_id if unknown is None else unknown) for t in tokens]
    if add_bos:
        ids = ids + [self.bos_id] if bos_last else [self.bos_id] + ids
    return ids + [self.eos_id] if add_eos else ids


@wrong("own", says="unknown tokens become -1")
def _unknown_minus_one(self, tokens, add_bos=False, add_eos=False):
    return _encode(self, tokens, add_bos, add_eos, unknown=-1)


@wrong("own", says="one past the last id")
def _unknown_past_the_end(self, tokens, add_bos=False, add_eos=False):
    return _encode(self, tokens, add_bos, add_eos, unknown=len(self.token_to_id))


@wrong("own", says="<bos> is put at the end")
def _bos_appended(self, tokens, add_bos=False, add_eos=False):
    return _encode(self, tokens, add_bos, add_eos, bos_last=True)


# -- tester set 'first'


@wrong("tester", "unknown tokens mapped to pad_id instead of unk_id", by="first")
def ex01_1_unk_is_pad(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id.get(token, self.pad_id) for token in tokens]
    if add_bos:
        ids.insert(0, self.bos_id)
    if add_eos:
        ids.append(self.eos_id)
    return ids


@wrong("tester", "token_to_id[token]: KeyError on an unknown token", by="first")
def ex01_1_keyerror(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id[token] for token in tokens]
    if add_bos:
        ids.insert(0, self.bos_id)
    if add_eos:
        ids.append(self.eos_id)
    return ids


@wrong("tester", "add_bos inserts '<bos>' into the caller's token list (mutates the input)", by="first")
def ex01_1_mutates_input(self, tokens, add_bos=False, add_eos=False):
    if add_bos:
        tokens.insert(0, BOS)
    ids = [self.token_to_id.get(token, self.unk_id) for token in tokens]
    if add_eos:
        ids.append(self.eos_id)
    return ids


@wrong("tester", "unknown tokens silently dropped instead of mapped to <unk>", by="first")
def x01_1_drops_unknown(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id[t] for t in tokens if t in self.token_to_id]  # unknown tokens silently dropped
    if add_bos:
        ids.insert(0, self.bos_id)
    if add_eos:
        ids.append(self.eos_id)
    return ids


# -- tester set 'second'


@wrong("tester", "unknown tokens map to pad_id instead of unk_id", by="second")
def encode_unk_pad(self, tokens, add_bos=False, add_eos=False):
    if isinstance(tokens, str):
        raise TypeError("encode expects a list of tokens, not a string: call tokenize(text) first")
    ids = [self.token_to_id.get(token, self.pad_id) for token in tokens]
    if add_bos:
        ids.insert(0, self.bos_id)
    if add_eos:
        ids.append(self.eos_id)
    return ids


@wrong("tester", "add_bos inserts eos_id and add_eos appends bos_id (ids swapped)", by="second")
def encode_bos_eos_swapped(self, tokens, add_bos=False, add_eos=False):
    if isinstance(tokens, str):
        raise TypeError("encode expects a list of tokens, not a string: call tokenize(text) first")
    ids = [self.token_to_id.get(token, self.unk_id) for token in tokens]
    if add_bos:
        ids.insert(0, self.eos_id)
    if add_eos:
        ids.append(self.bos_id)
    return ids


@wrong("tester", "inserts '<bos>'/'<eos>' into the caller's token list (mutates input)", by="second")
def encode_mutates_input(self, tokens, add_bos=False, add_eos=False):
    if isinstance(tokens, str):
        raise TypeError("encode expects a list of tokens, not a string: call tokenize(text) first")
    if add_bos:
        tokens.insert(0, "<bos>")
    if add_eos:
        tokens.append("<eos>")
    return [self.token_to_id.get(token, self.unk_id) for token in tokens]


@right("tester", by="second")
def encode_alt(self, tokens, add_bos=False, add_eos=False):
    if isinstance(tokens, str):
        raise TypeError("encode expects a list of tokens, not a string: call tokenize(text) first")
    body = [self.token_to_id[t] if t in self.token_to_id else self.unk_id for t in tokens]
    return ([self.bos_id] if add_bos else []) + body + ([self.eos_id] if add_eos else [])


# -- tester set 'third'


def _enc_guard(tokens):
    if isinstance(tokens, str):
        raise TypeError("encode expects a list of tokens, not a string: call tokenize(text) first")


@wrong("tester", "<bos> appended at the end instead of inserted at the front", by="third")
def encode_bos_at_end(self, tokens, add_bos=False, add_eos=False):
    _enc_guard(tokens)
    ids = [self.token_to_id.get(token, self.unk_id) for token in tokens]
    if add_bos:
        ids.append(self.bos_id)
    if add_eos:
        ids.append(self.eos_id)
    return ids


@wrong("tester", "unknown tokens mapped to pad_id instead of unk_id", by="third")
def encode_unk_is_pad(self, tokens, add_bos=False, add_eos=False):
    _enc_guard(tokens)
    ids = [self.token_to_id.get(token, self.pad_id) for token in tokens]
    if add_bos:
        ids.insert(0, self.bos_id)
    if add_eos:
        ids.append(self.eos_id)
    return ids


@wrong("tester", "elif: with add_bos and add_eos both True only <bos> is added", by="third")
def encode_elif(self, tokens, add_bos=False, add_eos=False):
    _enc_guard(tokens)
    ids = [self.token_to_id.get(token, self.unk_id) for token in tokens]
    if add_bos:
        ids.insert(0, self.bos_id)
    elif add_eos:
        ids.append(self.eos_id)
    return ids


@right("tester", by="third")
def encode_alt_third(self, tokens, add_bos=False, add_eos=False):
    _enc_guard(tokens)
    body = []
    for token in tokens:
        body.append(self.token_to_id[token] if token in self.token_to_id else self.unk_id)
    return [self.bos_id] * bool(add_bos) + body + [self.eos_id] * bool(add_eos)
