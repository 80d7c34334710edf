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
# # Exercises 02 — Positional encoding
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex02_positional_encoding.ipynb)
#
# Companion of [chapter 02](../chapters/02_positional_encoding.ipynb) (paper §3.5).
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. In the student edition its body is a stub that raises
# `NotImplementedError`; you write the body **in the package file** (here
# `transformer_course/positional.py`), not in this notebook. Because the chapters import the
# package, they then run on your code.
#
# After editing the file, run the exercise's check cell. It compares your function with an
# independent reference (the formula of §3.5 entry by entry, a rotation built from the
# angle-addition formulas) on several inputs, edge cases included, and prints one line: ✓ passed,
# ○ not implemented yet, or ✗ with the input that failed and what is wrong. The same checks run
# from a terminal:
#
# ```bash
# python -m transformer_course check ex02_1     # one exercise (or no id: a table of all of them)
# pytest -m ex02_1                              # the same check through pytest
# ```
#
# Each exercise also has a **try it** cell: a scratch space to experiment on small tensors before
# you commit your answer to the package. The set-up cell below makes the notebook pick up
# your edits to the package without restarting the kernel.
# Chapter 11's exercises ask you to explain its experiments.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex02_1 | `sinusoidal_positional_encoding(max_len, d_model)` in `positional.py` | easy |
# | ex02_2 | `PositionalEncoding.forward(x, offset)` in `positional.py` | medium |
# | ex02_3 | `relative_position_map(k, d_model)` in `positional.py` | hard |
#
# **Before you start:** chapter 02 also runs exercises of other chapters: ex01_1 and ex01_2. Until
# they are written it stops at the first of them, naming all those still to write.
#
# **Order:** the three are independent of each other.

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

from transformer_course import PositionalEncoding, relative_position_map, sinusoidal_positional_encoding
from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)
setup_chapter("02")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex02_1 — The sinusoidal table PE (max_len, d_model) (easy)
#
# **File:** `transformer_course/positional.py`, function `sinusoidal_positional_encoding(max_len,
# d_model)`.
#
# **Output:** a `float32` tensor of shape (max_len, d_model) with the table of §3.5: for every
# position $pos = 0, \dots, max\_len - 1$ and every even column $2i$,
#
# $$PE_{(pos,\,2i)} = \sin\!\left(pos / 10000^{2i/d_{model}}\right), \qquad
#   PE_{(pos,\,2i+1)} = \cos\!\left(pos / 10000^{2i/d_{model}}\right).$$
#
# A double loop with `math.sin` and `math.cos` is a correct answer; a vectorised one (an angle
# matrix of shape (max_len, ⌈d_model/2⌉) from `torch.arange`) is faster.
#
# **Watch out for:** the sine and the cosine of one pair share a frequency: the exponent is
# $2i/d_{model}$ for *both* columns $2i$ and $2i+1$. Sines go in the even columns, cosines in the
# odd ones, interleaved, not in two halves. Positions start at 0. With an odd `d_model` there is
# one more sine column than cosine columns: the last column is a sine without its partner.

# %%
### BEGIN SOLUTION
table = sinusoidal_positional_encoding(max_len=4, d_model=5)
print(table)  # row 0 is sin 0 = 0, cos 0 = 1, …; the last column is a lone sine
print(table.dtype, math.isclose(table[1, 2].item(), math.sin(1 / 10000 ** (2 / 5)), rel_tol=1e-6))
### END SOLUTION

# %% [markdown]
# *In your own words:* why do the sine and the cosine of one pair share the same frequency? (A worked
# answer is in the complete edition.)
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # (max_len, 1)
# two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (ceil(D/2),)
# frequency = torch.exp(-math.log(10000.0) * two_i / d_model)  # 1 / 10000^(2i/D)
# angle = position * frequency  # (max_len, ceil(D/2))
# table = torch.zeros(max_len, d_model)
# table[:, 0::2] = torch.sin(angle)
# table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
# return table
# ```
# `two_i` lists the even column indices, so one angle serves a sine column and its cosine
# neighbour. The product of a column (max_len, 1) with a row (⌈D/2⌉,) broadcasts into the whole
# angle matrix without a loop. `exp(-log(10000) · 2i/D)` equals $10000^{-2i/D}$ and is the usual
# way to write it. The slice `0::2` selects the even columns and `1::2` the odd ones; with an odd
# D there are only ⌊D/2⌋ odd columns, hence `angle[:, : d_model // 2]`.
#
# A shared frequency makes each pair a point $(\sin \omega_i pos, \cos \omega_i pos)$ on the unit
# circle: moving along the positions turns the point by a fixed angle, which is what makes the
# shift by $k$ a rotation (exercise ex02_3) and the dot product of two encodings a function of
# their distance only (chapter 02, section 4). Two different frequencies would trace no circle.
# ### END SOLUTION

# %%
check("ex02_1")

# %% [markdown]
# ## ex02_2 — PositionalEncoding.forward: x + PE[offset : offset+T] (batch-first) (medium)
#
# **File:** `transformer_course/positional.py`, method `PositionalEncoding.forward(self, x,
# offset=0)`.
#
# Write the end of the method, after the input checks: return `x + PE[offset : offset + T]`, then
# dropout (§5.4 applies dropout to the sum of embeddings and positional encodings). `offset` is 0
# unless x continues a longer sequence: chapter 09 feeds a translation one token at a time, and
# token number L sits at position L.
#
# Useful attributes: `self.pe`, the (max_len, D) table (a buffer), and `self.dropout`.
#
# - **Shapes:** `x` (B, T, D), batch-first → the same shape and dtype.
# - **Watch for:** the positions are on axis 1. `x.size(0)` is the *batch size*: slicing the table
#   with it gives every position of a sentence the same vector when B = 1 (the check tries that
#   first). Do not add in place (`x += …` would change the caller's tensor), convert the table to
#   `x.dtype` so that a `float16` input gives a `float16` output, and apply `self.dropout` to the
#   whole sum.
#
# The check builds its own table, so you can do this exercise before exercise 1; the try-it cell
# below needs exercise 1, because `PositionalEncoding(...)` computes its table when it is created.

# %%
### BEGIN SOLUTION
positional = PositionalEncoding(d_model=6, max_len=10)
x = torch.zeros(2, 4, 6)  # (B, T, D) with B ≠ T
out = positional(x)
print(tuple(out.shape), "each sentence got rows 0–3:", torch.equal(out[1], positional.pe[:4]))
print(positional(torch.zeros(1, 3, 6, dtype=torch.float16)).dtype)
print("with offset=5, rows 5–8:", torch.equal(positional(x, offset=5)[0], positional.pe[5:9]))
### END SOLUTION

# %% [markdown]
# *In your own words:* with B = 1, what does `self.pe[: x.size(0)]` add to each position, and why
# does nothing crash?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# seq_len = x.shape[1]  # batch-first: dim 1 is the position, not dim 0
# table = self.pe[offset : offset + seq_len]  # (T, D): the rows of positions offset … offset+T-1
# return self.dropout(x + table.to(x.dtype))  # (B, T, D) + (T, D)
# ```
# The slice `self.pe[offset : offset + seq_len]` has shape (T, D); adding it to (B, T, D)
# broadcasts over the batch axis, so position t of every sentence gets row offset + t. `x + …` builds a new tensor and leaves
# the input alone. Dropout is the module's own `nn.Dropout`, so it is active after
# `model.train()` and switched off by `model.eval()`.
#
# With B = 1, `x.size(0)` is 1, so the slice is the single row `pe[0]`, of shape (1, D); it
# broadcasts against (1, T, D) and adds the vector of position 0 to *every* position. The shapes
# fit, so nothing fails: the model just sees no word order at all.
# ### END SOLUTION

# %%
check("ex02_2")

# %% [markdown]
# ## ex02_3 — Relative positions: the rotation M_k with PE[pos+k] = M_k PE[pos] (hard)
#
# **File:** `transformer_course/positional.py`, function `relative_position_map(k, d_model)`.
#
# **Output:** the `float32` matrix $M_k$ of shape (d_model, d_model) with
# $PE_{pos+k} = M_k\,PE_{pos}$ for *every* position (the linear map of §3.5; `d_model` is even,
# `k` may be zero or negative).
#
# Chapter 02 derives it: with $\omega_i = 10000^{-2i/d_{model}}$, the angle-addition formulas give
# for each pair of columns $(2i, 2i+1)$ the $2 \times 2$ block
#
# $$\begin{pmatrix} \cos \omega_i k & \sin \omega_i k \\ -\sin \omega_i k & \cos \omega_i k \end{pmatrix}$$
#
# at rows and columns $2i, 2i+1$, and zeros everywhere else.
#
# **Watch out for:** the sign of the sine terms: a block with the signs swapped is $M_{-k}$, which
# moves *back* $k$ positions (the check recognises it). The frequency uses $2i$, the even column
# index, as in exercise 1. To test your answer, compare `table[:-k] @ M.T` with `table[k:]`
# (rows are vectors: $(M\,PE)^\top = PE^\top M^\top$).

# %%
### BEGIN SOLUTION
k, d_model = 4, 8
M = relative_position_map(k, d_model)
table = sinusoidal_positional_encoding(30, d_model)
print(M[:4, :4])  # the first two blocks
print("PE[pos + k] = M_k PE[pos] for every pos:", torch.allclose(table[:-k] @ M.T, table[k:], atol=1e-5))
print("M_-k undoes M_k:", torch.allclose(relative_position_map(-k, d_model) @ M, torch.eye(d_model), atol=1e-6))
### END SOLUTION

# %% [markdown]
# *In your own words:* why does $M_k$ not depend on the position $pos$, and what does $M_{-k}$ do?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
# angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)  # (D/2,)
# cos, sin = torch.cos(angle), torch.sin(angle)
# m = torch.zeros(d_model, d_model, dtype=torch.float64)
# m[0::2, 0::2] = torch.diag(cos)  # new sin = sin·cos(wk) + cos·sin(wk)
# m[0::2, 1::2] = torch.diag(sin)
# m[1::2, 0::2] = torch.diag(-sin)  # new cos = cos·cos(wk) - sin·sin(wk)
# m[1::2, 1::2] = torch.diag(cos)
# return m.float()
# ```
# Row $2i$ of $M_k$ computes the new sine of pair $i$ and row $2i+1$ the new cosine, each from the
# old sine (column $2i$) and cosine (column $2i+1$) of the same pair. Indexing with two strided
# slices, `m[0::2, 1::2]`, addresses the (D/2, D/2) grid of "even row, odd column" entries; a
# `torch.diag` there fills exactly one entry per pair, the one inside its own block. Working in
# float64 keeps $\omega_i k$ accurate for large $k$ before the result is rounded to float32. A loop
# over the pairs that sets four entries at a time is just as correct.
#
# The angle-addition formulas express the pair at $pos + k$ through the pair at $pos$ and the
# sines and cosines of $\omega_i k$ alone: $pos$ appears only in the vector the matrix multiplies.
# $M_{-k}$ turns every pair back by the same angle, so it moves $k$ positions back and is the
# inverse (and the transpose) of $M_k$.
# ### END SOLUTION

# %%
check("ex02_3")

# %% [markdown]
# When every check above passes, re-run [chapter 02](../chapters/02_positional_encoding.ipynb): it now
# runs on your code. Next: [exercises 03](ex03_attention.ipynb), attention.
