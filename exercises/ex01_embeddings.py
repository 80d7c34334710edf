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
# # Exercises 01 — Tokens, vocabularies and embeddings
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex01_embeddings.ipynb)
#
# **On Colab**, run the first code cell: it makes your own copy of the course to write the
# exercises in (once per Colab machine) and prints where its files are in the Files panel.
#
# Three functions from [chapter 01](../chapters/01_embeddings.ipynb), from easy to harder.
#
# **How the exercises work.** Each exercise is one function of the `transformer_course` package.
# In the student edition its body is a `raise NotImplementedError(...)` that names the exercise
# and gives a hint: open the file named in the exercise, replace that line with your code, save.
# The chapters import the same functions, so once you are done they run on *your* code.
#
# 1. Read the statement: which file and function, the shapes, what to watch out for.
# 2. Try your function on a small input in the *try it* cell (the package is reloaded
#    automatically when you save a file).
# 3. Run the check cell. It compares your function with an independent reference on several
#    inputs, edge cases included, and prints one line: ✓ passed, ○ not implemented yet, or ✗ and
#    which input went wrong and how.
#
# From a terminal, in the course folder: `python -m transformer_course check ex01_1` (or without an
# id, a table of all exercises) and `pytest -m ex01_1`.

# %% tags=["colab"]
import sys

if "google.colab" in sys.modules:  # Colab only: your own editable copy of the course, made once per machine
    import os
    import subprocess

    course = os.path.expanduser("~/transformer-course")  # the complete course, out of the Files panel's way
    if not os.path.isdir(course):
        url = "https://github.com/transformer-course/transformer-course"
        subprocess.run(["git", "clone", "-q", "--depth=1", url, course], check=True)
    sys.path.insert(0, course)
    from transformer_course.tools.colab import use_course

    use_course(course, chapter=False)  # /content/my-transformer, made once

# %%
# %load_ext autoreload
# %autoreload 2

# %%
import torch

from transformer_course import TokenEmbedding, Vocab, one_hot_lookup
from transformer_course.tools.checks import check

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)

# %% [markdown]
# ## Exercise 1 — `Vocab.encode` (easy)
#
# **Edit** `transformer_course/vocab.py`, method `Vocab.encode(self, tokens, add_bos=False, add_eos=False)`.
#
# **Input:** a list of token strings, e.g. `["the", "robot", "paints"]` (already tokenized).
# **Output:** a new Python `list` of `int` ids: one per token, plus `<bos>` in front when
# `add_bos` is true and `<eos>` at the end when `add_eos` is true.
#
# Useful attributes: `self.token_to_id` (a dict), `self.unk_id`, `self.bos_id`, `self.eos_id`.
#
# **Watch out for:** a token that is not in the vocabulary must become `<unk>` (id 3). It must
# neither raise a `KeyError` nor be silently dropped, or the sentence changes length. Do not
# lower-case here: that is `tokenize`'s job, and `"Robot"` is a different token from `"robot"`.

# %%
# YOUR CODE HERE

# %% [markdown]
# **Worked solution** (in the exercise notebook: note here what you did and what surprised you)
#
# YOUR ANSWER HERE

# %%
check("ex01_1")

# %% [markdown]
# ## Exercise 2 — `TokenEmbedding.forward` (easy)
#
# **Edit** `transformer_course/embeddings.py`, method `TokenEmbedding.forward(self, tokens)`.
#
# **Input:** integer ids of shape (B, T) (any shape works). **Output:** float vectors of shape
# (B, T, D) with D = `self.d_model`: the rows of the embedding table for those ids, multiplied by
# $\sqrt{d_{model}}$ (paper §3.4).
#
# Useful attributes: `self.embedding` (an `nn.Embedding`), `self.d_model`.
#
# **Watch out for:** the factor is $\sqrt{d_{model}}$, not $d_{model}$ and not $1/\sqrt{d_{model}}$.
# Scale the looked-up vectors, not the table itself (changing `self.embedding.weight` would
# compound at every call), and keep the result connected to the weight (no `.data`, no
# `torch.no_grad()`), or training would never update the embeddings.

# %%
# YOUR CODE HERE

# %% [markdown]
# **Worked solution** (in the exercise notebook: note here what you did and what surprised you)
#
# YOUR ANSWER HERE

# %%
check("ex01_2")

# %% [markdown]
# ## Exercise 3 — `one_hot_lookup` (medium)
#
# **Edit** `transformer_course/embeddings.py`, function `one_hot_lookup(tokens, weight)`.
#
# **Input:** integer ids `tokens` of shape (B, T) (or any other shape) and a matrix `weight` of
# shape (V, D). **Output:** shape (B, T, D), the same numbers as `weight[tokens]`, but computed as
# chapter 01 derives it: one-hot rows of length V times the matrix.
#
# `torch.nn.functional.one_hot(tokens, num_classes)` returns a tensor of shape (B, T, V) holding
# 0s and 1s as *integers*.
#
# **Watch out for:** without `num_classes`, `F.one_hot` makes rows only as long as the largest id
# in the batch plus one, which breaks the product whenever the last rows of the table are not used.
# An integer matrix cannot be multiplied by a float one; convert the one-hot rows to
# `weight.dtype` so that a `float64` table gives a `float64` result. The result must stay
# differentiable with respect to `weight`.

# %%
# YOUR CODE HERE

# %% [markdown]
# **Worked solution** (in the exercise notebook: note here what you did and what surprised you)
#
# YOUR ANSWER HERE

# %%
check("ex01_3")

# %% [markdown]
# When all three checks pass, re-run [chapter 01](../chapters/01_embeddings.ipynb): it now runs on
# your code. Next: [exercises 02](ex02_positional_encoding.ipynb), positional encoding.
