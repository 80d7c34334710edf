"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from . import right, wrong

# -- mutants


@wrong("mutant", "upper triangle (transposed)")
def _upper_triangle(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).triu()


@wrong("mutant", "PyTorch's polarity (True = blocked)")
def _torch_polarity(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).triu(1)  # True = blocked


@wrong("mutant", "diagonal excluded")
def _no_diagonal(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).tril(-1)


@wrong("mutant", "float 0/1 mask")
def _float_mask(size, device=None):
    return torch.ones(size, size, device=device).tril()


@wrong("mutant", "device argument ignored")
def _device_ignored(size, device=None):
    return torch.ones(size, size, dtype=torch.bool).tril()


@wrong("mutant", "(1, 1, T, T) instead of (T, T)")
def _batched_shape(size, device=None):
    return torch.ones(1, 1, size, size, dtype=torch.bool, device=device).tril()


# -- own mistakes and alternatives


@wrong("own", says="off by one")
def _causal_one_ahead(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).tril(diagonal=1)


@wrong("own", says="every position may attend everywhere")
def _causal_all_true(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device)


@wrong("own", says="only the diagonal is True")
def _causal_diagonal_only(size, device=None):
    return torch.eye(size, dtype=torch.bool, device=device)


# -- tester set 'first'


@wrong("tester", "triu: upper triangle (sees the future, not the past)", by="first")
def ex06_1_triu(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).triu()


@wrong("tester", "tril(diagonal=-1): a position cannot see itself", by="first")
def ex06_1_no_diagonal(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).tril(diagonal=-1)


@wrong("tester", "float mask instead of bool", by="first")
def ex06_1_float(size, device=None):
    return torch.ones(size, size, device=device).tril()


@right("tester", by="first")
def ex06_1_alt_arange(size, device=None):
    i = torch.arange(size, device=device)
    return i[:, None] >= i[None, :]


@wrong("tester", "returns (1, 1, T, T) instead of (T, T)", by="first")
def x06_1_four_dims(size, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()[None, None]  # (1, 1, T, T)


# -- tester set 'second'


@wrong("tester", "triu instead of tril (sees the future, not the past)", by="second")
def causal_triu(size, device=None):
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    return torch.ones(size, size, dtype=torch.bool, device=device).triu()


@wrong("tester", "tril(-1): a position cannot attend to itself", by="second")
def causal_no_diagonal(size, device=None):
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    return torch.ones(size, size, dtype=torch.bool, device=device).tril(-1)


@wrong("tester", "float mask (torch.tril(torch.ones)) instead of bool", by="second")
def causal_float(size, device=None):
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    return torch.tril(torch.ones(size, size, device=device))


@right("tester", by="second")
def causal_alt(size, device=None):
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    r = torch.arange(size, device=device)
    return r[:, None] >= r[None, :]


# -- tester set 'third'


def _cm_guard(size):
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")


@wrong("tester", "triu instead of tril (attends to the future)", by="third")
def causal_triu_third(size, device=None):
    _cm_guard(size)
    return torch.ones(size, size, dtype=torch.bool, device=device).triu()


@wrong("tester", "device argument ignored", by="third")
def causal_no_device(size, device=None):
    _cm_guard(size)
    return torch.ones(size, size, dtype=torch.bool).tril()


@wrong("tester", "tril(diagonal=-1): a position may not attend to itself", by="third")
def causal_strict(size, device=None):
    _cm_guard(size)
    return torch.ones(size, size, dtype=torch.bool, device=device).tril(diagonal=-1)


@right("tester", by="third")
def causal_alt_third(size, device=None):
    _cm_guard(size)
    idx = torch.arange(size, device=device)
    return idx[:, None] >= idx[None, :]
