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
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* why do the sine and the cosine of one pair share the same frequency? (A worked
# answer is in the complete edition.)
#
# YOUR ANSWER HERE

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
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* with B = 1, what does `self.pe[: x.size(0)]` add to each position, and why
# does nothing crash?
#
# YOUR ANSWER HERE

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
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* why does $M_k$ not depend on the position $pos$, and what does $M_{-k}$ do?
#
# YOUR ANSWER HERE

# %%
check("ex02_3")

# %% [markdown]
# When every check above passes, re-run [chapter 02](../chapters/02_positional_encoding.ipynb): it now
# runs on your code. Next: [exercises 03](ex03_attention.ipynb), attention.
