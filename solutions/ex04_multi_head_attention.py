# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     notebook_metadata_filter: kernelspec,jupytext,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Exercises 04 — Multi-head attention
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex04_multi_head_attention.ipynb)
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# Companion of [chapter 04](../chapters/04_multi_head_attention.ipynb) (paper §3.2.2).
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. In the student edition its body is a stub that raises
# `NotImplementedError`; you write the body **in the package file** (here
# `transformer_course/multihead.py`), not in this notebook. The chapters import the package, so
# they then run on your code.
#
# After editing the file, run the exercise's check cell. It compares your code with an independent
# reference (heads cut with `chunk`, PyTorch's `nn.MultiheadAttention`, a loop over the heads
# written with plain torch operations) and prints one line: ✓ passed, ○ not implemented yet, or ✗
# with the input that failed and what is wrong. From a terminal:
#
# ```bash
# python -m transformer_course check ex04_1     # one exercise (or no id: a table of all of them)
# pytest -m ex04_1                              # the same check through pytest
# ```
#
# The **try it** cells are scratch space for experimenting on small tensors. The set-up
# cell makes the notebook pick up your edits to the package without restarting the kernel.
# Exercise ex04_3 uses chapter 03's attention functions: do [exercises 03](ex03_attention.ipynb)
# first.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex04_1 | `split_heads(x, n_heads)` in `multihead.py` | easy |
# | ex04_2 | `merge_heads(x)` in `multihead.py` | medium |
# | ex04_3 | `MultiHeadAttention.forward(query, key, value, mask, need_weights, fast)` in `multihead.py` | hard |
#
# **Before you start:** chapter 04 also runs exercises of other chapters: ex02_1, ex02_3, ex03_1,
# ex03_2 and ex03_3. Until they are written it stops at the first of them, naming all those still to
# write.
#
# **Order:** ex04_3 calls ex03_3, ex04_1 and ex04_2, so write ex03_3, ex04_1 and ex04_2 first.

# %% tags=["colab"]
import sys

if "google.colab" in sys.modules:  # Colab only: your own copy of the course, kept in your Google Drive
    import os
    import subprocess

    course = os.path.expanduser("~/transformer-course")  # the complete course, out of the Files panel's way
    if not os.path.isdir(course):
        url = "https://github.com/transformer-course/transformer-course"
        clone = subprocess.run(["git", "clone", "-q", "--depth=1", url, course], capture_output=True, text=True)
        if clone.returncode != 0:

            class CourseNotDownloaded(Exception):
                def _render_traceback_(self):  # shown as one line, not as a traceback
                    return [str(self)]

            why = (clone.stderr.strip().splitlines() or ["git failed"])[-1]
            raise CourseNotDownloaded(
                f"Could not download the course from {url} ({why}): connect to the internet, then run this cell again."
            )
    sys.path.insert(0, course)
    from transformer_course_tools.notebook.colab import use_course

    use_course(course, chapter=False)  # your copy in your Google Drive (made by the first notebook you run)

# %%
import torch
from torch import nn

from transformer_course import MultiHeadAttention, merge_heads, scaled_dot_product_attention, split_heads
from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)
setup_chapter("04")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex04_1 — Split the features into heads (easy)
#
# **File:** `transformer_course/multihead.py`, function `split_heads(x, n_heads)`.
#
# Cut the feature axis of every token into `n_heads` consecutive blocks and put the head axis in
# front of the token axis, so that attention can treat (batch, head) as one big batch. (The
# divisibility check is already written.)
#
# - **Shapes:** `x` (B, T, H·Dh) → (B, H, T, Dh), where head `i` holds features
#   `i·Dh … (i+1)·Dh − 1` of every token.
# - **Watch for:** `x.view(B, H, T, Dh)` has the right shape and the wrong contents; cut the
#   features first, (B, T, H, Dh), then swap two axes.

# %%
tiny = torch.tensor([[[0, 1, 2, 3, 4, 5], [10, 11, 12, 13, 14, 15]]])  # (B, T, D) = (1, 2, 6): token 1 holds 10…15
### BEGIN SOLUTION
heads = tiny.view(1, 2, 3, 2).transpose(1, 2)  # (B, T, H, Dh) → (B, H, T, Dh)
for h in range(3):
    print(f"head {h}:", heads[0, h].tolist())  # each head: two features of *both* tokens
### END SOLUTION

# %% [markdown]
# *In your own words:* what goes wrong with `x.view(B, H, T, Dh)`?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# batch, length, features = x.shape
# x = x.view(batch, length, n_heads, features // n_heads)  # (B, T, H, Dh)
# return x.transpose(1, 2)  # (B, H, T, Dh)
# ```
#
# `view` never moves data: it reads the same numbers in memory order with a new shape. In memory,
# the features of token 0 come first, then those of token 1, and so on. Viewing as (B, T, H, Dh)
# cuts each token's features into H blocks, which is what we want; `transpose(1, 2)` then swaps the
# token and head axes (again without copying, by changing the strides).
#
# Viewing directly as (B, H, T, Dh) fills head 0 with the first T·Dh numbers, which are simply the
# first features of the first token(s): the rows of a head no longer correspond to positions. The
# shape gives no warning, which is why the check compares with a reference built with `chunk`.
# ### END SOLUTION

# %%
check("ex04_1")

# %% [markdown]
# ## ex04_2 — Merge the heads back (concat) (medium)
#
# **File:** `transformer_course/multihead.py`, function `merge_heads(x)`.
#
# The inverse of `split_heads`: the paper's $\mathrm{Concat}(\mathrm{head}_1, \dots,
# \mathrm{head}_h)$, which puts the H head outputs of each token side by side.
#
# - **Shapes:** `x` (B, H, T, Dh) → (B, T, H·Dh); `merge_heads(split_heads(x, H))` gives `x` back.
# - **Watch for:** reshaping (B, H, T, Dh) straight to (B, T, H·Dh) mixes tokens and heads; after a
#   `transpose` the tensor is not contiguous and `view` raises an error.

# %%
heads = torch.randn(2, 3, 7, 4)  # (B, H, T, Dh), as attention returns it
### BEGIN SOLUTION
merged = heads.transpose(1, 2).reshape(2, 7, 12)  # (B, T, H, Dh) → (B, T, H·Dh)
print(merged.shape, torch.equal(merged, torch.cat(heads.unbind(dim=1), dim=-1)))
### END SOLUTION

# %% [markdown]
# *In your own words:* why `reshape` and not `view` here?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# batch, n_heads, length, head_dim = x.shape
# x = x.transpose(1, 2)  # (B, T, H, Dh)
# return x.reshape(batch, length, n_heads * head_dim)  # (B, T, H·Dh)
# ```
#
# First bring the token axis back next to the batch axis, then flatten (H, Dh) into one feature
# axis: for each token, head 0's features come first, then head 1's, exactly the concatenation.
#
# After `transpose`, neighbouring features of one token are no longer neighbours in memory (the
# tensor is laid out head by head), so no choice of strides can present it as (B, T, H·Dh) and
# `view` raises an error. `reshape` returns a view when one exists and otherwise copies, which is
# what we need here. (`x.transpose(1, 2).contiguous().view(...)` is the same thing, spelled out.)
# ### END SOLUTION

# %%
check("ex04_2")

# %% [markdown]
# ## ex04_3 — Multi-head attention forward (hard)
#
# **File:** `transformer_course/multihead.py`, method `MultiHeadAttention.forward(self, query, key,
# value, mask=None, need_weights=False, *, fast=True)`.
#
# The input checks are written.
#
# What you have on `self`: the projections `self.w_q`, `self.w_k` (D → H·Dk), `self.w_v`
# (D → H·Dv) and `self.w_o` (H·Dv → D), `self.n_heads`, the dropout probability `self.dropout`, and
# `self.training` (True in training mode). In `transformer_course.attention` you have chapter 03's `scaled_dot_product_attention` (teaching
# path, returns the weights) and `fast_attention` (PyTorch's fused kernel, no weights); both are
# already imported in the file.
#
# 1. project `query` with `self.w_q`, `key` with `self.w_k` and `value` with `self.w_v`, and split
#    each into heads;
# 2. attention on (B, H, T, Dk) tensors, with the mask as given (it broadcasts over the heads):
#    the teaching path when `need_weights` is True or `fast` is False, otherwise the fast
#    path; dropout `self.dropout` in training mode only;
# 3. merge the heads and apply $W^O$;
# 4. return `(output, weights)`: weights (B, H, T, S) on the teaching path, `None` on the fast path.
#
# - **Shapes:** `query` (B, T, D), `key`, `value` (B, S, D) (S ≠ T in cross-attention), `mask`: bool
#   broadcastable to (B, H, T, S), True = may attend →
#   `(output (B, T, D), weights (B, H, T, S) or None)`.
# - **Watch for:** keys and values come from `key` and `value`, not from `query`; do not forget
#   `w_o`; one weight map per head (no averaging); the check compares with `nn.MultiheadAttention`,
#   whose masks are True = *blocked*, so it converts them, and with a per-head loop where
#   $d_k \ne d_v$.

# %%
torch.manual_seed(0)
torch_mha = nn.MultiheadAttention(12, 3, batch_first=True).eval()
mha = MultiHeadAttention.from_torch(torch_mha).eval()
query, memory = torch.randn(2, 7, 12), torch.randn(2, 5, 12)  # cross-attention: T = 7, S = 5
padding = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])  # (B, S), True = real token
### BEGIN SOLUTION
with torch.no_grad():
    q = split_heads(mha.w_q(query), 3)  # (B, H, T, Dk)
    k = split_heads(mha.w_k(memory), 3)  # (B, H, S, Dk)
    v = split_heads(mha.w_v(memory), 3)  # (B, H, S, Dv)
    heads, weights = scaled_dot_product_attention(q, k, v, padding[:, None, None, :])  # (B, H, T, Dv)
    mine = mha.w_o(merge_heads(heads))  # (B, T, D)
    theirs, _ = torch_mha(query, memory, memory, key_padding_mask=~padding)  # PyTorch: True = blocked
print(mine.shape, weights.shape, torch.allclose(mine, theirs, atol=1e-6))
### END SOLUTION

# %% [markdown]
# *In your own words:* in cross-attention, which inputs provide the queries, the keys and the
# values, and what would go wrong, with which shapes, if the keys were computed from `query`?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# q = split_heads(self.w_q(query), self.n_heads)  # (B, H, T, Dk)
# k = split_heads(self.w_k(key), self.n_heads)  # (B, H, S, Dk)
# v = split_heads(self.w_v(value), self.n_heads)  # (B, H, S, Dv)
# dropout_p = self.dropout if self.training else 0.0
# if need_weights or not fast:
#     heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p)  # (B, H, T, Dv)
# else:
#     heads, weights = fast_attention(q, k, v, mask, dropout_p), None
# return self.w_o(merge_heads(heads)), weights  # (B, T, D), (B, H, T, S) or None
# ```
#
# The queries come from the sequence that is asking (the decoder states, length T); the keys and
# values from the sequence being read (the encoder output, length S). With the keys taken from
# `query` (`self.w_k(query)`), the scores would be (T, T) and the product with (S, Dv) values
# would fail when S ≠ T; in self-attention, where the three inputs are the same tensor, the bug
# would go unnoticed, which is why the check uses cross-attention with T ≠ S.
#
# A mask of shape (B, 1, 1, S) or (T, S) needs no change: its missing head axis broadcasts.
# Dropout depends on `self.training`, so `model.eval()` switches it off; the weights are returned
# per head, (B, H, T, S), unlike `nn.MultiheadAttention`, which averages them over the heads unless
# told `average_attn_weights=False`. Finally, `w_o` mixes the heads; without it, each block of
# output features would depend on one head only.
# ### END SOLUTION

# %%
check("ex04_3")

# %% [markdown]
# When every check above passes, run [chapter 04](../chapters/04_multi_head_attention.ipynb) again: its
# comparison with `nn.MultiheadAttention` now runs on your code. Next: [exercises 05](ex05_encoder.ipynb),
# the encoder.
