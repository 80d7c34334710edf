"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer_course._validate import check_token_ids

from . import right, wrong

# -- mutants


@wrong("mutant", "one_hot without num_classes")
def _num_classes_inferred(tokens, weight):
    return F.one_hot(tokens).to(weight.dtype) @ weight  # width = max id + 1, not V


@wrong("mutant", "always float32")
def _always_float32(tokens, weight):
    return F.one_hot(tokens, weight.shape[0]).float() @ weight.float()


@wrong("mutant", "integer one-hot rows")
def _integer_one_hot(tokens, weight):
    return F.one_hot(tokens, weight.shape[0]) @ weight  # long @ float: a dtype error


@wrong("mutant", "ids shifted by one")
def _off_by_one(tokens, weight):
    return F.one_hot((tokens + 1) % weight.shape[0], weight.shape[0]).to(weight.dtype) @ weight


@wrong("mutant", "computed under no_grad")
def _no_grad(tokens, weight):
    with torch.no_grad():
        return F.one_hot(tokens, weight.shape[0]).to(weight.dtype) @ weight


# -- own mistakes and alternatives


@wrong("own", says="transposed")
def _lookup_transposed(tokens, weight):
    one_hot = F.one_hot(tokens, weight.shape[0]).to(weight.dtype)
    return weight.T @ one_hot.transpose(-1, -2)


@wrong("own", says="a bag of words")
def _lookup_bag_of_words(tokens, weight):
    return F.one_hot(tokens, weight.shape[0]).to(weight.dtype).sum(dim=-2) @ weight


@wrong("own", says="scaled by sqrt(D)")
def _lookup_scaled(tokens, weight):
    return F.one_hot(tokens, weight.shape[0]).to(weight.dtype) @ weight * math.sqrt(weight.shape[1])


@wrong("own", says="the row before")
def _lookup_row_before(tokens, weight):
    return F.one_hot(tokens - 1, weight.shape[0]).to(weight.dtype) @ weight


# -- tester set 'first'


@wrong("tester", "F.one_hot without num_classes (V inferred from the largest id)", by="first")
def ex01_3_inferred_classes(tokens, weight):
    one_hot = F.one_hot(tokens).to(weight.dtype)  # num_classes inferred from the largest id
    return one_hot @ weight


@wrong("tester", "one-hot and weight cast to float32: output float32 whatever weight's dtype", by="first")
def ex01_3_float32(tokens, weight):
    one_hot = F.one_hot(tokens, num_classes=weight.shape[0]).float()
    return one_hot @ weight.float()


@wrong("tester", "num_classes=weight.shape[1] (D instead of V)", by="first")
def ex01_3_classes_is_d(tokens, weight):
    one_hot = F.one_hot(tokens, num_classes=weight.shape[1]).to(weight.dtype)
    return one_hot @ weight


@right("tester", by="first")
def ex01_3_alt_einsum(tokens, weight):
    return torch.einsum("...v,vd->...d", F.one_hot(tokens, weight.shape[0]).to(weight.dtype), weight)


@wrong("tester", "weight.detach(): no gradient reaches the weight", by="first")
def x01_3_detached_weight(tokens, weight):
    one_hot = F.one_hot(tokens, num_classes=weight.shape[0]).to(weight.dtype)
    return one_hot @ weight.detach()


# -- tester set 'second'


def _onehot_pre(tokens, weight):
    if not isinstance(weight, Tensor) or weight.dim() != 2:
        raise ValueError(f"weight must be a (V, D) matrix, got shape {tuple(getattr(weight, 'shape', ()))}")
    check_token_ids(tokens, weight.shape[0])


@wrong("tester", "one-hot not cast to weight dtype (long @ float)", by="second")
def onehot_no_cast(tokens, weight):
    _onehot_pre(tokens, weight)
    one_hot = F.one_hot(tokens, num_classes=weight.shape[0])
    return one_hot @ weight


@wrong("tester", "casts to float32 always: output dtype not the weight's", by="second")
def onehot_float32(tokens, weight):
    _onehot_pre(tokens, weight)
    one_hot = F.one_hot(tokens, num_classes=weight.shape[0]).float()
    return one_hot @ weight.float()


@wrong("tester", "F.one_hot without num_classes (width from the largest id)", by="second")
def onehot_no_num_classes(tokens, weight):
    _onehot_pre(tokens, weight)
    one_hot = F.one_hot(tokens).to(weight.dtype)
    return one_hot @ weight


@right("tester", by="second")
def onehot_alt(tokens, weight):
    _onehot_pre(tokens, weight)
    rows = weight.index_select(0, tokens.reshape(-1))
    return rows.reshape(*tokens.shape, weight.shape[1])


# -- tester set 'third'


def _oh_guard(tokens, weight):
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise ValueError(f"weight must be a (V, D) matrix, got shape {tuple(getattr(weight, 'shape', ()))}")
    check_token_ids(tokens, weight.shape[0])


@wrong("tester", "F.one_hot without num_classes (width = max id + 1, not V)", by="third")
def onehot_no_num_classes_third(tokens, weight):
    _oh_guard(tokens, weight)
    one_hot = F.one_hot(tokens).to(weight.dtype)
    return one_hot @ weight


@wrong("tester", "num_classes=weight.shape[1] (D instead of V)", by="third")
def onehot_num_classes_d(tokens, weight):
    _oh_guard(tokens, weight)
    one_hot = F.one_hot(tokens, num_classes=weight.shape[1]).to(weight.dtype)
    return one_hot @ weight


@wrong("tester", ".float() instead of .to(weight.dtype): result float32 for a float64 weight", by="third")
def onehot_float(tokens, weight):
    _oh_guard(tokens, weight)
    one_hot = F.one_hot(tokens, num_classes=weight.shape[0]).float()
    return one_hot @ weight.float()


@right("tester", by="third")
def onehot_alt_third(tokens, weight):
    _oh_guard(tokens, weight)
    eye = torch.eye(weight.shape[0], dtype=weight.dtype, device=weight.device)
    return torch.einsum("...v,vd->...d", eye[tokens], weight)
