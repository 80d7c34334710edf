"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from transformer_course._validate import check_ndim

from . import right, wrong

# -- mutants


@wrong("mutant", "tiled with x.repeat", says="the heads are tiled")
def _tiled(x, n_rep):
    return x.repeat(1, n_rep, 1, 1)  # heads 0, 1, …, 0, 1, …: query head h reads key head h mod Hkv


@wrong("mutant", "the new axis in front of the heads")
def _expanded_in_front(x, n_rep):
    b, kv, s, d = x.shape
    return x[:, None].expand(b, n_rep, kv, s, d).reshape(b, kv * n_rep, s, d)  # the new axis before the heads: tiled


@wrong("mutant", "positions repeated instead of heads", says="the positions were repeated")
def _positions_repeated(x, n_rep):
    return x.repeat_interleave(n_rep, dim=2)


@wrong("mutant", "every query head reads head 0")
def _first_group_only(x, n_rep):
    return x[:, :1].expand(-1, x.shape[1] * n_rep, -1, -1)  # every query head reads key/value head 0


# -- own mistakes and alternatives


@wrong("own", says="the features were repeated")
def _features_repeated(x, n_rep):
    return x.repeat_interleave(n_rep, dim=-1)


@wrong("own", says="the batch was repeated")
def _batch_repeated(x, n_rep):
    return x.repeat_interleave(n_rep, dim=0)


@wrong("own", says="returned unchanged")
def _n_rep_ignored(x, n_rep):
    return x


# -- tester set 'first'


@wrong("tester", "x.repeat(1, n_rep, 1, 1): heads tiled 0,1,0,1 instead of 0,0,1,1", by="first")
def ex13_3_tiles(x, n_rep):
    return x.repeat(1, n_rep, 1, 1)  # heads 0,1,0,1 instead of 0,0,1,1


@wrong("tester", "repeat_interleave along dim 2 (positions) instead of heads", by="first")
def ex13_3_wrong_axis(x, n_rep):
    return x.repeat_interleave(n_rep, dim=2)


@wrong("tester", "view on an expanded tensor: raises", by="first")
def ex13_3_view_expand(x, n_rep):
    batch, kv_heads, length, features = x.shape
    x = x[:, :, None].expand(batch, kv_heads, n_rep, length, features)
    return x.view(batch, kv_heads * n_rep, length, features)


@right("tester", by="first")
def ex13_3_alt_interleave(x, n_rep):
    return torch.repeat_interleave(x, n_rep, dim=1)


@wrong("tester", "forgot the reshape: returns (B, Hkv, n_rep, S, D)", by="first")
def x10_3_forgot_reshape(x, n_rep):
    batch, kv_heads, length, features = x.shape
    return x[:, :, None].expand(batch, kv_heads, n_rep, length, features)  # still 5-D


# -- tester set 'second'


def _rkv_pre(x, n_rep):
    check_ndim(x, 4, "x", "(B, Hkv, S, D)")
    if not isinstance(n_rep, int) or n_rep < 1:
        raise ValueError(f"n_rep must be an integer >= 1, got {n_rep!r}")


@wrong("tester", "x.repeat(1, n_rep, 1, 1): heads tiled 0,1,0,1 instead of 0,0,1,1", by="second")
def rkv_tiled(x, n_rep):
    _rkv_pre(x, n_rep)
    return x.repeat(1, n_rep, 1, 1)


@wrong("tester", "repeat_interleave on the sequence axis then reshape (mixes positions)", by="second")
def rkv_interleave_seq_axis(x, n_rep):
    _rkv_pre(x, n_rep)
    b, h, s, d = x.shape
    return x.repeat_interleave(n_rep, dim=2).reshape(b, h * n_rep, s, d)


@wrong("tester", ".view on an expanded tensor (RuntimeError)", by="second")
def rkv_view_of_expand(x, n_rep):
    _rkv_pre(x, n_rep)
    b, h, s, d = x.shape
    return x[:, :, None].expand(b, h, n_rep, s, d).view(b, h * n_rep, s, d)


@right("tester", by="second")
def rkv_alt(x, n_rep):
    _rkv_pre(x, n_rep)
    return torch.repeat_interleave(x, n_rep, dim=1)


# -- tester set 'third'


def _rkv_guard(x, n_rep):
    check_ndim(x, 4, "x", "(B, Hkv, S, D)")
    if not isinstance(n_rep, int) or n_rep < 1:
        raise ValueError(f"n_rep must be an integer >= 1, got {n_rep!r}")


@wrong("tester", "x.repeat(1, n_rep, 1, 1): tiles the heads (0,1,0,1) instead of grouping (0,0,1,1)", by="third")
def rkv_tile(x, n_rep):
    _rkv_guard(x, n_rep)
    return x.repeat(1, n_rep, 1, 1)


@wrong("tester", "repeat_interleave on dim=2 (the sequence axis)", by="third")
def rkv_wrong_dim(x, n_rep):
    _rkv_guard(x, n_rep)
    return x.repeat_interleave(n_rep, dim=2)


@wrong("tester", ".view after expand (needs a copy: reshape)", by="third")
def rkv_view(x, n_rep):
    _rkv_guard(x, n_rep)
    batch, kv_heads, length, features = x.shape
    x = x[:, :, None].expand(batch, kv_heads, n_rep, length, features)
    return x.view(batch, kv_heads * n_rep, length, features)


@right("tester", by="third")
def rkv_alt_third(x, n_rep):
    _rkv_guard(x, n_rep)
    return torch.repeat_interleave(x, n_rep, dim=1)
