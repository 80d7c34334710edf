"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from . import right, wrong

# -- mutants


@wrong("mutant", "rows reordered over the whole weight, not per head", says="as if the 2 heads were one")
def _global_not_per_head(weight, n_heads):
    halves = weight.reshape(2, weight.shape[0] // 2, *weight.shape[1:])  # the whole weight as one head
    return halves.transpose(0, 1).reshape(weight.shape).clone()


@wrong("mutant", "the inverse permutation (interleaved → halves)", says="inverse permutation")
def _inverse_permutation(weight, n_heads):
    d = weight.shape[0] // n_heads
    pairs = weight.reshape(n_heads, d // 2, 2, *weight.shape[1:])  # reads the rows as pairs already (2i, 2i+1)
    return pairs.transpose(1, 2).reshape(weight.shape).clone()  # and writes them as halves: interleaved → halves


@wrong("mutant", "row i + d/2 before row i in each pair", says="rotates the other way")
def _pair_flipped(weight, n_heads):
    d = weight.shape[0] // n_heads
    halves = weight.reshape(n_heads, 2, d // 2, *weight.shape[1:]).flip(1)  # row i + d/2 first, then row i
    return halves.transpose(1, 2).reshape(weight.shape).clone()


@wrong("mutant", "the rows left in their order")
def _unchanged(weight, n_heads):
    return weight.clone()


@wrong("mutant", "the columns reordered instead of the rows")
def _columns_not_rows(weight, n_heads):
    if weight.dim() != 2:
        return weight.clone()
    t = weight.t()
    d = t.shape[0] // n_heads if t.shape[0] % n_heads == 0 and (t.shape[0] // n_heads) % 2 == 0 else t.shape[0]
    heads = t.shape[0] // d
    halves = t.reshape(heads, 2, d // 2, -1)
    return halves.transpose(1, 2).reshape(t.shape).t().contiguous()


# -- own mistakes and alternatives


@wrong("own", says="reshape it back to weight's shape")
def _rope_shape_kept(weight, n_heads):
    d = weight.shape[0] // n_heads
    halves = weight.reshape(n_heads, 2, d // 2, *weight.shape[1:])
    return halves.transpose(1, 2).clone()  # (H, d/2, 2, ...), never reshaped back


@wrong("own", says="swaps the axes 0 and 1")
def _rope_heads_and_halves_swapped(weight, n_heads):
    d = weight.shape[0] // n_heads
    halves = weight.reshape(n_heads, 2, d // 2, *weight.shape[1:])
    return halves.transpose(0, 1).reshape(weight.shape).clone()


@wrong("own", says="folds the trailing axes into the rows")
def _rope_columns_folded(weight, n_heads):
    halves = weight.reshape(n_heads, 2, -1)  # the -1 takes the columns too
    return halves.transpose(1, 2).reshape(weight.shape).clone()


# -- tester set 'first'


@wrong("tester", "halves taken over the whole matrix, not per head", by="first")
def ex15_1_whole_matrix(weight, n_heads):
    rest = weight.shape[1:]
    halves = weight.reshape(2, weight.shape[0] // 2, *rest)  # halves of all heads, not of each head
    return halves.transpose(0, 1).reshape(weight.shape).clone()


@wrong("tester", "applies the inverse permutation (interleaved → halves)", by="first")
def ex15_1_inverse(weight, n_heads):
    head_dim, rest = weight.shape[0] // n_heads, weight.shape[1:]
    pairs = weight.reshape(n_heads, head_dim // 2, 2, *rest)  # interleaved → halves, the other way round
    return pairs.transpose(1, 2).reshape(weight.shape).clone()


@wrong("tester", "view with weight.shape[1]: fails on a 1-D bias", by="first")
def ex15_1_matrix_only(weight, n_heads):
    head_dim = weight.shape[0] // n_heads
    halves = weight.view(n_heads, 2, head_dim // 2, weight.shape[1])  # fails on a bias (1-D)
    return halves.transpose(1, 2).reshape(weight.shape).clone()


@right("tester", by="first")
def ex15_1_alt_index(weight, n_heads):
    d = weight.shape[0] // n_heads
    within = torch.stack([torch.arange(d // 2), torch.arange(d // 2) + d // 2], dim=1).flatten()
    index = (torch.arange(n_heads)[:, None] * d + within).flatten()
    return weight[index.to(weight.device)]


@wrong("tester", "reorders the columns (input features) instead of the rows", by="first")
def x11_1_columns(weight, n_heads):
    if weight.dim() == 1:
        return ex15_1_inverse(weight, n_heads)
    d = weight.shape[1]  # permutes the columns (the input features) instead of the rows
    halves = weight.reshape(weight.shape[0], 2, d // 2)
    return halves.transpose(1, 2).reshape(weight.shape).clone()


# -- tester set 'second'


def _r11_pre(weight, n_heads):
    if weight.dim() < 1 or weight.shape[0] % n_heads or (weight.shape[0] // n_heads) % 2:
        raise ValueError(f"weight must have n_heads={n_heads} heads of an even number of rows")
    return weight.shape[0] // n_heads, weight.shape[1:]


@wrong("tester", "inverse permutation (interleaved -> halves)", by="second")
def r11_inverse_perm(weight, n_heads):
    head_dim, rest = _r11_pre(weight, n_heads)
    pairs = weight.reshape(n_heads, head_dim // 2, 2, *rest)
    return pairs.transpose(1, 2).reshape(weight.shape).clone()


@wrong("tester", "halves taken across the whole matrix, ignoring heads", by="second")
def r11_ignores_heads(weight, n_heads):
    head_dim, rest = _r11_pre(weight, n_heads)
    halves = weight.reshape(2, weight.shape[0] // 2, *rest)
    return halves.transpose(0, 1).reshape(weight.shape).clone()


@wrong("tester", "reshape uses weight.shape[1]: crashes on a 1-D bias", by="second")
def r11_assumes_2d(weight, n_heads):
    head_dim, rest = _r11_pre(weight, n_heads)
    halves = weight.reshape(n_heads, 2, head_dim // 2, weight.shape[1])
    return halves.transpose(1, 2).reshape(weight.shape).clone()


@right("tester", by="second")
def r11_alt(weight, n_heads):
    head_dim, rest = _r11_pre(weight, n_heads)
    half = head_dim // 2
    index = []
    for h in range(n_heads):
        for i in range(half):
            index += [h * head_dim + i, h * head_dim + half + i]
    return weight[torch.tensor(index, device=weight.device)]


# -- tester set 'third'


def _r11_guard(weight, n_heads):
    if weight.dim() < 1 or weight.shape[0] % n_heads or (weight.shape[0] // n_heads) % 2:
        raise ValueError(
            f"weight must have n_heads={n_heads} heads of an even number of rows, got shape {tuple(weight.shape)}"
        )
    return weight.shape[0] // n_heads, weight.shape[1:]


@wrong("tester", "inverse permutation (interleaved → halves): reshape (H, d/2, 2) then transpose", by="third")
def r11_inverse(weight, n_heads):
    head_dim, rest = _r11_guard(weight, n_heads)
    pairs = weight.reshape(n_heads, head_dim // 2, 2, *rest)
    return pairs.transpose(1, 2).reshape(weight.shape).clone()


@wrong("tester", "heads ignored: the halves of the whole matrix, not of each head", by="third")
def r11_no_heads(weight, n_heads):
    head_dim, rest = _r11_guard(weight, n_heads)
    total = weight.shape[0]
    halves = weight.reshape(2, total // 2, *rest)
    return halves.transpose(0, 1).reshape(weight.shape).clone()


@wrong("tester", "reshape as (2, H, d/2): head axis and halves axis in the wrong order", by="third")
def r11_axis_order(weight, n_heads):
    head_dim, rest = _r11_guard(weight, n_heads)
    halves = weight.reshape(2, n_heads, head_dim // 2, *rest)
    return halves.permute(1, 2, 0, *range(3, 3 + len(rest))).reshape(weight.shape).clone()


@right("tester", by="third")
def r11_alt_third(weight, n_heads):
    head_dim, rest = _r11_guard(weight, n_heads)
    half = head_dim // 2
    index = []
    for h in range(n_heads):
        for i in range(half):
            index += [h * head_dim + i, h * head_dim + half + i]
    return weight[torch.tensor(index, device=weight.device)]
