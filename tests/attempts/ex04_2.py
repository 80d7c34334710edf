"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from . import right, wrong

# -- mutants


@wrong("mutant", "reshape without transpose (mixes heads)")
def _reshape_without_transpose(x):
    b, h, t, dh = x.shape
    return x.reshape(b, t, h * dh)  # mixes tokens and heads


@wrong("mutant", "view after transpose (non-contiguous)")
def _view_after_transpose(x):
    b, h, t, dh = x.shape
    return x.transpose(1, 2).view(b, t, h * dh)  # RuntimeError: view on a non-contiguous tensor


@wrong("mutant", "features of the heads interleaved")
def _features_interleaved(x):
    b, h, t, dh = x.shape
    return x.permute(0, 2, 3, 1).reshape(b, t, h * dh)  # (B, T, Dh, H): features of the heads interleaved


# -- own mistakes and alternatives


@wrong("own", says="the heads are not merged")
def _merge_transposed_only(x):
    return x.transpose(1, 2).contiguous()


@wrong("own", says="the heads are summed")
def _merge_summed(x):
    return x.sum(dim=1)


@wrong("own", says="the heads are averaged")
def _merge_averaged(x):
    return x.mean(1)


# -- tester set 'first'


@wrong("tester", "reshape without transposing heads back", by="first")
def ex04_2_no_transpose(x):
    batch, n_heads, length, head_dim = x.shape
    return x.reshape(batch, length, n_heads * head_dim)


@wrong("tester", "transpose(1, 2).view(...): view of a non-contiguous tensor raises", by="first")
def ex04_2_view_noncontiguous(x):
    batch, n_heads, length, head_dim = x.shape
    return x.transpose(1, 2).view(batch, length, n_heads * head_dim)


@wrong("tester", "permute(0, 2, 3, 1): features ordered Dh-major (heads interleaved)", by="first")
def ex04_2_head_minor(x):
    batch, n_heads, length, head_dim = x.shape
    return x.permute(0, 2, 3, 1).reshape(batch, length, n_heads * head_dim)


@right("tester", by="first")
def ex04_2_alt_cat(x):
    return torch.cat(x.unbind(dim=1), dim=-1)


@wrong("tester", "shape unpacked as (B, T, H, Dh): output (B, H, T·Dh)", by="first")
def x04_2_shape_unpacked_wrong(x):
    batch, length, n_heads, head_dim = x.shape  # names in the wrong order
    return x.transpose(1, 2).reshape(batch, length, n_heads * head_dim)


# -- tester set 'second'


@wrong("tester", "reshape (B, H, T, Dh) to (B, T, H*Dh) without transposing", by="second")
def merge_no_transpose(x):
    batch, n_heads, length, head_dim = x.shape
    return x.reshape(batch, length, n_heads * head_dim)


@wrong("tester", ".view after transpose (non-contiguous: RuntimeError)", by="second")
def merge_view_error(x):
    batch, n_heads, length, head_dim = x.shape
    return x.transpose(1, 2).view(batch, length, n_heads * head_dim)


@wrong("tester", "transposes axes 2, 3 (T and Dh) instead of 1, 2", by="second")
def merge_transpose_23(x):
    batch, n_heads, length, head_dim = x.shape
    return x.transpose(2, 3).reshape(batch, length, n_heads * head_dim)


@right("tester", by="second")
def merge_alt(x):
    return torch.cat(x.unbind(dim=1), dim=-1)


# -- tester set 'third'


@wrong("tester", "reshape without moving the head axis back first", by="third")
def merge_no_transpose_third(x):
    batch, n_heads, length, head_dim = x.shape
    return x.reshape(batch, length, n_heads * head_dim)


@wrong("tester", ".view after transpose (non-contiguous tensor)", by="third")
def merge_view(x):
    batch, n_heads, length, head_dim = x.shape
    x = x.transpose(1, 2)
    return x.view(batch, length, n_heads * head_dim)


@wrong("tester", "permute(0, 2, 3, 1): features ordered (Dh, H), heads interleaved", by="third")
def merge_interleaved(x):
    batch, n_heads, length, head_dim = x.shape
    return x.permute(0, 2, 3, 1).reshape(batch, length, n_heads * head_dim)


@right("tester", by="third")
def merge_alt_third(x):
    return torch.cat(x.unbind(dim=1), dim=-1)
