"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from transformer_course._validate import check_token_dtype

from . import right, wrong

# -- mutants


@wrong("mutant", "forgets the √d_model scale")
def _unscaled(self, tokens):
    return self.embedding(tokens)


@wrong("mutant", "multiplies by d_model")
def _times_d_model(self, tokens):
    return self.embedding(tokens) * self.d_model


@wrong("mutant", "divides by √d_model")
def _divided(self, tokens):
    return self.embedding(tokens) / math.sqrt(self.d_model)


@wrong("mutant", "multiplies by √vocab_size")
def _sqrt_vocab(self, tokens):
    return self.embedding(tokens) * math.sqrt(self.vocab_size)


@wrong("mutant", "cuts the graph with .data")
def _detached(self, tokens):
    return self.embedding.weight.data[tokens] * math.sqrt(self.d_model)


@wrong("mutant", "scales the weight in place")
def _scales_the_table(self, tokens):
    self.embedding.weight.data.mul_(math.sqrt(self.d_model))  # changes the weight at every call
    return self.embedding(tokens)


# -- own mistakes and alternatives


@wrong("own", says="divided by d_model")
def _embedding_over_d_model(self, tokens):
    return self.embedding(tokens) / self.d_model


@wrong("own", says="number of tokens")
def _embedding_root_of_length(self, tokens):
    return self.embedding(tokens) * math.sqrt(tokens.shape[-1])


@wrong("own", says="is added")
def _embedding_plus_root(self, tokens):
    return self.embedding(tokens) + math.sqrt(self.d_model)


# -- tester set 'first'


@wrong("tester", "forgot the √d_model scaling", by="first")
def ex01_2_no_scale(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens)


@wrong("tester", "divides by √d_model instead of multiplying", by="first")
def ex01_2_divide(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) / math.sqrt(self.d_model)


@wrong("tester", "multiplies by d_model instead of √d_model", by="first")
def ex01_2_times_d(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) * self.d_model


@right("tester", by="first")
def ex01_2_alt_functional(self, tokens):
    check_token_dtype(tokens)
    return F.embedding(tokens, self.embedding.weight, self.embedding.padding_idx) * self.d_model**0.5


@wrong("tester", "scales the embedding weight in place at every call", by="first")
def x01_2_scales_weight_in_place(self, tokens):
    check_token_dtype(tokens)
    with torch.no_grad():
        self.embedding.weight.mul_(math.sqrt(self.d_model))  # every call scales the stored weights again
    return self.embedding(tokens)


# -- tester set 'second'


@wrong("tester", "divides by sqrt(d_model) instead of multiplying", by="second")
def emb_divides(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) / math.sqrt(self.d_model)


@wrong("tester", "multiplies by d_model (forgot the square root)", by="second")
def emb_times_d(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) * self.d_model


@wrong("tester", "scales by sqrt(tokens.shape[-1]) (sequence length) instead of sqrt(d_model)", by="second")
def emb_sqrt_of_T(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) * math.sqrt(tokens.shape[-1])


# -- tester set 'third'


@wrong("tester", "divides by sqrt(d_model) instead of multiplying", by="third")
def tokemb_divide(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) / math.sqrt(self.d_model)


@wrong("tester", "multiplies by d_model (forgot the square root)", by="third")
def tokemb_no_sqrt(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) * self.d_model


@wrong("tester", "scales by sqrt(vocab_size) instead of sqrt(d_model)", by="third")
def tokemb_vocab(self, tokens):
    check_token_dtype(tokens)
    return self.embedding(tokens) * math.sqrt(self.vocab_size)


@right("tester", by="third")
def tokemb_alt(self, tokens):
    check_token_dtype(tokens)
    return F.embedding(tokens, self.embedding.weight, padding_idx=self.embedding.padding_idx) * self.d_model**0.5
