"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from . import right, wrong

# -- mutants


@wrong("mutant", "view without transpose (mixes tokens into heads)")
def _view_without_transpose(x, n_heads):
    b, t, d = x.shape
    return x.view(b, n_heads, t, d // n_heads)  # (B, H, T, Dh) but each head holds pieces of several tokens


@wrong("mutant", "heads made of every H-th feature")
def _interleaved_heads(x, n_heads):
    b, t, d = x.shape
    return x.view(b, t, d // n_heads, n_heads).permute(0, 3, 1, 2)  # head i = every H-th feature


@wrong("mutant", "head axis left in place (B, T, H, Dh)")
def _heads_last(x, n_heads):
    b, t, d = x.shape
    return x.view(b, t, n_heads, d // n_heads)  # forgot to move the head axis forward


# -- own mistakes and alternatives


@wrong("own", says="not moved in front of the positions")
def _split_not_transposed(x, n_heads):
    b, t, d = x.shape
    return x.view(b, t, n_heads, d // n_heads)


@wrong("own", says="the wrong axes are swapped")
def _split_wrong_axes(x, n_heads):
    b, t, d = x.shape
    return x.view(b, t, n_heads, d // n_heads).transpose(-1, -2)


@wrong("own", says="features are swapped")
def _split_positions_last(x, n_heads):
    b, t, d = x.shape
    return x.view(b, t, n_heads, d // n_heads).permute(0, 2, 3, 1)


# -- tester set 'first'


@wrong("tester", "view(B, H, T, Dh) directly (no transpose)", by="first")
def ex04_1_view_no_transpose(x, n_heads):
    batch, length, features = x.shape
    return x.view(batch, n_heads, length, features // n_heads)


@wrong("tester", "view(B, T, Dh, H) + permute: heads take strided features", by="first")
def ex04_1_strided_heads(x, n_heads):
    batch, length, features = x.shape
    x = x.view(batch, length, features // n_heads, n_heads)
    return x.permute(0, 3, 1, 2)


@wrong("tester", "forgot the transpose: returns (B, T, H, Dh)", by="first")
def ex04_1_forgot_transpose(x, n_heads):
    batch, length, features = x.shape
    return x.view(batch, length, n_heads, features // n_heads)


@right("tester", by="first")
def ex04_1_alt_unflatten(x, n_heads):
    return x.unflatten(-1, (n_heads, -1)).permute(0, 2, 1, 3)


@wrong("tester", "permute(0, 2, 3, 1): returns (B, H, Dh, T)", by="first")
def x04_1_permute_wrong(x, n_heads):
    batch, length, features = x.shape
    return x.view(batch, length, n_heads, features // n_heads).permute(0, 2, 3, 1)  # (B, H, Dh, T)


# -- tester set 'second'


def _split_pre(x, n_heads):
    if x.shape[-1] % n_heads:
        raise ValueError(f"the last dimension of x ({x.shape[-1]}) is not divisible by n_heads={n_heads}")


@wrong("tester", "view(B, T, Dh, H) then permute: features of heads interleaved", by="second")
def split_dh_first(x, n_heads):
    _split_pre(x, n_heads)
    batch, length, features = x.shape
    x = x.view(batch, length, features // n_heads, n_heads)
    return x.permute(0, 3, 1, 2)


@wrong("tester", "reshape straight to (B, H, T, Dh) without transpose (mixes positions)", by="second")
def split_view_no_transpose(x, n_heads):
    _split_pre(x, n_heads)
    batch, length, features = x.shape
    return x.reshape(batch, n_heads, length, features // n_heads)


@wrong("tester", "forgot the transpose: returns (B, T, H, Dh)", by="second")
def split_forgot_transpose(x, n_heads):
    _split_pre(x, n_heads)
    batch, length, features = x.shape
    return x.view(batch, length, n_heads, features // n_heads)


# -- tester set 'third'


def _split_guard(x, n_heads):
    if x.shape[-1] % n_heads:
        raise ValueError(f"the last dimension of x ({x.shape[-1]}) is not divisible by n_heads={n_heads}")


@wrong("tester", "view straight to (B, H, T, Dh) without a transpose", by="third")
def split_view_direct(x, n_heads):
    _split_guard(x, n_heads)
    batch, length, features = x.shape
    return x.view(batch, n_heads, length, features // n_heads)


@wrong("tester", "view as (B, T, Dh, H): heads interleaved across the features", by="third")
def split_interleaved(x, n_heads):
    _split_guard(x, n_heads)
    batch, length, features = x.shape
    x = x.view(batch, length, features // n_heads, n_heads)
    return x.permute(0, 3, 1, 2)


@wrong("tester", "transpose forgotten: returns (B, T, H, Dh)", by="third")
def split_no_transpose(x, n_heads):
    _split_guard(x, n_heads)
    batch, length, features = x.shape
    return x.view(batch, length, n_heads, features // n_heads)


@right("tester", by="third")
def split_alt(x, n_heads):
    _split_guard(x, n_heads)
    return torch.stack(x.chunk(n_heads, dim=-1), dim=1)
