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
# # Exercises 03 — Scaled dot-product attention
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex03_attention.ipynb)
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# Companion of [chapter 03](../chapters/03_attention.ipynb) (paper §3.2.1, equation (1)).
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. In the student edition its body is a stub that raises
# `NotImplementedError`; you write the body **in the package file** (here
# `transformer_course/attention.py`), not in this notebook. Because the chapters import the
# package, they then run on your code.
#
# After editing the file, run the exercise's check cell. It compares your function with an
# independent reference (PyTorch's own functions, closed-form formulas) on several inputs, edge
# cases included, and prints one line: ✓ passed, ○ not implemented yet, or ✗ with the input that
# failed and what is wrong. The same checks run from a terminal:
#
# ```bash
# python -m transformer_course check ex03_1     # one exercise (or no id: a table of all of them)
# pytest -m ex03_1                              # the same check through pytest
# ```
#
# Each exercise also has a **try it** cell: a scratch space to experiment on small tensors before
# you commit your answer to the package. The set-up cell below makes the notebook pick up
# your edits to the package without restarting the kernel.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex03_1 | `attention_scores(q, k)` in `attention.py` | easy |
# | ex03_2 | `apply_mask(scores, mask)` in `attention.py` | medium |
# | ex03_3 | `scaled_dot_product_attention(q, k, v, mask, dropout_p)` in `attention.py` | medium |
# | ex03_4 | `band_mask(size, r, device)` in `attention.py` | easy |
#
# **Order:** ex03_3 calls ex03_1 and ex03_2, so write ex03_1 and ex03_2 first.

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
import math

import torch
import torch.nn.functional as F

from transformer_course import apply_mask, attention_scores
from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)
setup_chapter("03")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex03_1 — Attention scores Q·Kᵀ/√d_k (easy)
#
# **File:** `transformer_course/attention.py`, function `attention_scores(q, k)`.
#
# Return the scaled similarity of every query with every key, $QK^\top / \sqrt{d_k}$.
#
# - **Shapes:** `q` (..., T, Dk), `k` (..., S, Dk) → scores (..., T, S); the leading axes `...` can
#   be anything: none, a batch (B,), or a batch and heads (B, H).
# - **Watch for:** transpose only the last two axes of `k` (`k.T` reverses *all* axes);
#   $d_k$ is the size of the last axis of `q`; divide by its square root, not by $d_k$ itself.

# %%
q, k = torch.randn(2, 3, 4), torch.randn(2, 5, 4)  # (B, T, Dk), (B, S, Dk)
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* why is the result (..., T, S) and not (..., S, T)? (A worked answer is in the
# complete edition.)
#
# YOUR ANSWER HERE

# %%
check("ex03_1")

# %% [markdown]
# ## ex03_2 — Masking scores (True = may attend) (medium)
#
# **File:** `transformer_course/attention.py`, function `apply_mask(scores, mask)`.
#
# Return a copy of `scores` in which every position where `mask` is **False** holds the lowest
# finite number of the dtype, `torch.finfo(scores.dtype).min`. Positions where the mask is True
# keep their score. (The case `mask is None` and the shape check are already written for you.)
#
# **The course's one rule for masked scores and logits:** a masked position is one whose
# probability after the softmax is exactly 0. The course fills it with `torch.finfo(dtype).min`,
# which gives that 0 and keeps a row where every position is masked finite; `-inf` gives the 0 too
# wherever one position stays (a sampling filter, exercise ex09_2), and a check accepts any fill
# whose probability is 0 where a row keeps a position.
#
# - **Shapes:** `scores` (..., T, S); `mask`: bool, broadcastable to scores, e.g. (B, 1, S) for
#   padding or (T, S) for a causal mask; True = may attend.
# - **Watch for:** the polarity (True = *may attend*); `-inf` gives NaN on a row where everything
#   is masked; `-1e9` overflows in float16; do not modify `scores` in place (`masked_fill`, not
#   `masked_fill_`).

# %%
scores = torch.randn(1, 2, 4)  # (B, T, S)
mask = torch.tensor([[True, True, False, False]])  # (B, S) → broadcast as (1, S): the last two keys are padding
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* what does your function do to a row whose mask is all False, and what
# does softmax make of it?
#
# YOUR ANSWER HERE

# %%
check("ex03_2")

# %% [markdown]
# ## ex03_3 — Scaled dot-product attention (medium)
#
# **File:** `transformer_course/attention.py`, function `scaled_dot_product_attention(q, k, v,
# mask=None, dropout_p=0.0)`.
#
# Equation (1) of the paper, step by step (input checks are already written):
#
# 1. scores with your `attention_scores`, masked with your `apply_mask`;
# 2. weights = softmax of the scores over the keys;
# 3. if `dropout_p > 0`, apply dropout to the weights used for the output (`F.dropout`). The paper's
#    §5.4 drops sub-layer outputs and embedding sums; dropping attention weights as well is what its
#    reference code and `nn.MultiheadAttention` do;
# 4. return `(output, weights)`, with the weights **before** dropout.
#
# - **Shapes:** `q` (..., T, Dk), `k` (..., S, Dk), `v` (..., S, Dv), `mask`: broadcastable to
#   (..., T, S) → output (..., T, Dv), weights (..., T, S); every row of the weights sums to 1.
# - **Watch for:** the softmax axis (the keys, the last one); masking *before* the softmax, not
#   multiplying the weights by the mask afterwards; a fully masked row must give finite output.

# %%
q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
mask = torch.tensor([True, True, True, False, False])  # (S,): the last two keys are padding
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* why must the mask be applied before the softmax rather than by multiplying
# the weights with the mask afterwards?
#
# YOUR ANSWER HERE

# %%
check("ex03_3")

# %% [markdown]
# ## Why self-attention? (§4)
#
# Section 7 of [chapter 03](../chapters/03_attention.ipynb) reproduces Table 1 of the paper. A
# recurrent step costs $2d^2$ multiply-adds per token; a self-attention layer $3d^2$ for its
# projections plus $2nd$ for the scores and the weighted sum of the values.
#
# *In your own words:* self-attention does more arithmetic at every length, yet it made the
# Transformer fast to train. Which column of Table 1 explains that, and which column makes it costly
# for very long texts?
#
# YOUR ANSWER HERE

# %% [markdown]
# ## ex03_4 — Restricted self-attention's band mask (True within r positions) (easy)
#
# **File:** `transformer_course/attention.py`, function `band_mask(size, r, device=None)`.
#
# The last row of Table 1 (chapter 03, section 7): *restricted* self-attention, where each position
# attends only to its neighbours. Return the mask of a window of `r` positions on either side:
# query $t$ may attend to key $s$ when $|t - s| \le r$, itself included. In the course's
# convention True means *may attend*, so the mask is True on the $2r + 1$ diagonals around the main
# one and False elsewhere, made on `device` (the size check is written for you).
#
# - **Shapes:** → (size, size) bool, broadcastable to (B, H, T, T).
# - **Watch for:** the polarity; `<=`, not `<` (r keys on each side); both sides, not only the past
#   (that would be a causal window); the diagonal (a position attends to itself).

# %%
scores = torch.randn(6, 6)  # (T, T): self-attention over 6 positions
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* Table 1 gives restricted self-attention $O(r \cdot n \cdot d)$ operations
# per layer and a maximum path length of $O(n/r)$. Where does each come from, in terms of this mask?
#
# YOUR ANSWER HERE

# %%
check("ex03_4")

# %% [markdown]
# When every check above passes, run [chapter 03](../chapters/03_attention.ipynb) again: it now runs
# on your code. Next: [exercises 04](ex04_multi_head_attention.ipynb), multi-head attention.
