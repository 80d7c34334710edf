"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

from transformer_course._validate import check_ndim

from . import right, wrong

# -- mutants


@wrong("mutant", "polarity reversed (True = padding)")
def _pad_polarity(tokens, pad_id):
    return (tokens == pad_id)[:, None, None, :]


@wrong("mutant", "shape (B, S)")
def _pad_2d(tokens, pad_id):
    return tokens != pad_id  # (B, S): broadcasts B against the query axis


@wrong("mutant", "shape (B, 1, S, 1): masks queries")
def _pad_masks_queries(tokens, pad_id):
    return (tokens != pad_id)[:, None, :, None]


@wrong("mutant", "pad id 0 hard-coded")
def _pad_id_hard_coded(tokens, pad_id):
    return (tokens != 0)[:, None, None, :]


@wrong("mutant", "int mask")
def _pad_int_mask(tokens, pad_id):
    return (tokens != pad_id)[:, None, None, :].long()


@wrong("mutant", "shape (B, 1, S)")
def _pad_3d(tokens, pad_id):
    return (tokens != pad_id)[:, None, :]  # (B, 1, S): B lines up with the head axis


# -- own mistakes and alternatives


@wrong("own", says="the padded queries are masked too")
def _padding_both_sides(tokens, pad_id):
    keep = tokens != pad_id
    return keep[:, None, :, None] & keep[:, None, None, :]


@wrong("own", says="inserted after S")
def _padding_axes_at_the_end(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(-1).unsqueeze(-1)


@wrong("own", says="compared with > pad_id")
def _padding_greater_than(tokens, pad_id):
    return (tokens > pad_id)[:, None, None, :]


# -- tester set 'first'


@wrong("tester", "polarity inverted: True at padding", by="first")
def ex06_2_polarity(tokens, pad_id):
    return (tokens == pad_id)[:, None, None, :]


@wrong("tester", "shape (B, 1, S) instead of (B, 1, 1, S)", by="first")
def ex06_2_three_dims(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(1)


@wrong("tester", "hard-coded pad id 0 (ignores pad_id)", by="first")
def ex06_2_pad_zero(tokens, pad_id):
    return (tokens != 0)[:, None, None, :]


@right("tester", by="first")
def ex06_2_alt_ne(tokens, pad_id):
    return tokens.ne(pad_id).unsqueeze(1).unsqueeze(2)


@wrong("tester", "returns (B, 1, S, 1): keys on the query axis", by="first")
def x06_2_wrong_axes(tokens, pad_id):
    return (tokens != pad_id)[:, None, :, None]  # (B, 1, S, 1)


# -- tester set 'second'


@wrong("tester", "polarity inverted (True at padding)", by="second")
def pad_inverted(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return (tokens == pad_id)[:, None, None, :]


@wrong("tester", "shape (B, 1, S, 1) instead of (B, 1, 1, S)", by="second")
def pad_wrong_shape(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return (tokens != pad_id)[:, None, :, None]


@wrong("tester", "pad_id ignored: compares with 0", by="second")
def pad_ignores_pad_id(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return (tokens != 0)[:, None, None, :]


# -- tester set 'third'


@wrong("tester", "== pad_id instead of != (True at padding)", by="third")
def pad_inverted_third(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return (tokens == pad_id)[:, None, None, :]


@wrong("tester", "shaped (B, 1, S, 1) instead of (B, 1, 1, S)", by="third")
def pad_wrong_axis(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return (tokens != pad_id)[:, None, :, None]


@wrong("tester", "only one unsqueeze: shape (B, 1, S)", by="third")
def pad_one_unsqueeze(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return (tokens != pad_id).unsqueeze(1)


@right("tester", by="third")
def pad_alt(tokens, pad_id):
    check_ndim(tokens, 2, "tokens", "(B, S)")
    return tokens.ne(pad_id).reshape(tokens.shape[0], 1, 1, tokens.shape[1])
