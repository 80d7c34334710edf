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
# Companion of [chapter 01](../chapters/01_embeddings.ipynb) (paper §3.4, §5.1).
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. Your **student edition** is your own copy of the course, in which each of
# these functions is a stub that raises `NotImplementedError`. On Colab the first code cell makes it;
# elsewhere `python -m transformer_course student-edition my-course` writes it to `my-course/`. You
# write the body **in the package file** (here `transformer_course/vocab.py` and
# `transformer_course/embeddings.py`), not in this notebook.
# Because the chapters import the package, they then run on your code.
#
# After editing the file, run the exercise's check cell. It compares your function with an
# independent reference (PyTorch's `nn.Embedding`, a plain dictionary look-up) on several inputs,
# edge cases included, and prints one line: ✓ passed, ○ not implemented yet, or ✗ with the input
# that failed and what is wrong. The same checks run from a terminal:
#
# ```bash
# python -m transformer_course check ex01_1     # one exercise (or no id: a table of all of them)
# pytest -m ex01_1                              # the same check through pytest
# ```
#
# Each exercise also has a **try it** cell: a scratch space to experiment on small inputs before
# you commit your answer to the package. The set-up cell below makes the notebook pick up
# your edits to the package without restarting the kernel.
# Chapter 11's exercises ask you to explain its experiments.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex01_1 | `Vocab.encode(tokens, add_bos, add_eos)` in `vocab.py` | easy |
# | ex01_2 | `TokenEmbedding.forward(tokens)` in `embeddings.py` | easy |
# | ex01_3 | `one_hot_lookup(tokens, weight)` in `embeddings.py` | medium |
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
import torch

from transformer_course import TokenEmbedding, Vocab, one_hot_lookup
from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)
setup_chapter("01")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex01_1 — Vocab.encode: tokens → ids, with \<unk\>, \<bos\>, \<eos\> (easy)
#
# **File:** `transformer_course/vocab.py`, method `Vocab.encode(self, tokens, add_bos=False,
# add_eos=False)`.
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
### BEGIN SOLUTION
vocab = Vocab(["the", "robot", "paints", "door"])
print(vocab.encode(["the", "robot", "paints", "the", "door"]))
print(vocab.encode(["the", "zebra", "paints"], add_bos=True, add_eos=True))
print(vocab.decode(vocab.encode(["the", "zebra", "paints"], add_bos=True, add_eos=True)))
### END SOLUTION

# %% [markdown]
# *In your own words:* why must an unseen token become `<unk>` rather than be skipped? (A worked
# answer is in the complete edition.)
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# ids = [self.token_to_id.get(token, self.unk_id) for token in tokens]
# if add_bos:
#     ids.insert(0, self.bos_id)
# if add_eos:
#     ids.append(self.eos_id)
# return ids
# ```
# `dict.get(key, default)` does the look-up and the fallback in one step, so an unseen token
# becomes `unk_id` in place and the output keeps one id per input token. The special ids are
# added around the list afterwards; building a new list (instead of appending to `tokens`) leaves
# the caller's list untouched.
#
# Skipping an unseen token would shorten the sentence: every later token would move one position
# to the left, the positional encoding of chapter 02 would give it the wrong position, and in a
# parallel corpus the source and the target would no longer line up. `<unk>` keeps the length and
# marks the hole.
# ### END SOLUTION

# %%
check("ex01_1")

# %% [markdown]
# ## ex01_2 — TokenEmbedding.forward: lookup × √d_model (easy)
#
# **File:** `transformer_course/embeddings.py`, method `TokenEmbedding.forward(self, tokens)`.
#
# Return the rows of the embedding table for the ids `tokens`, multiplied by $\sqrt{d_{model}}$
# (paper §3.4).
#
# Useful attributes: `self.embedding` (an `nn.Embedding`), `self.d_model`.
#
# - **Shapes:** `tokens` (B, T) integer ids (any shape works) → (B, T, D) float vectors, D =
#   `d_model`.
# - **Watch for:** the factor is $\sqrt{d_{model}}$, not $d_{model}$ and not $1/\sqrt{d_{model}}$.
#   Scale the looked-up vectors, not the table itself (changing `self.embedding.weight` would
#   compound at every call), and keep the result connected to the weight (no `.data`, no
#   `torch.no_grad()`), or training would never update the embeddings.

# %%
### BEGIN SOLUTION
embedding = TokenEmbedding(vocab_size=10, d_model=4)
tokens = torch.tensor([[1, 5, 5, 2]])  # (B, T) = (1, 4)
vectors = embedding(tokens)  # (B, T, D)
print(tuple(vectors.shape))
print(torch.allclose(vectors, embedding.weight[tokens] * 2.0))  # √4 = 2
### END SOLUTION

# %% [markdown]
# *In your own words:* why multiply the looked-up vectors rather than the table itself?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# return self.embedding(tokens) * math.sqrt(self.d_model)  # (B, T, D)
# ```
# `nn.Embedding` does the row lookup and keeps the autograd graph, so the gradient flows back to
# exactly the rows that were used. The entries of the table start at $\mathcal{N}(0, 1/d_{model})$;
# after the factor each entry has variance 1, the same scale as the positional encoding that
# chapter 02 adds to these vectors.
#
# Multiplying `self.embedding.weight` in place would scale the table again at every call (after
# ten calls by $d_{model}^5$), and the output layer, which shares this matrix (weight tying, §3.4),
# would change with it. Scaling the output leaves the parameter as the optimiser sees it and
# multiplies only what flows into the first layer.
# ### END SOLUTION

# %%
check("ex01_2")

# %% [markdown]
# ## ex01_3 — Embedding lookup as one_hot(tokens) @ weight (medium)
#
# **File:** `transformer_course/embeddings.py`, function `one_hot_lookup(tokens, weight)`.
#
# Return the same numbers as `weight[tokens]`, but computed as chapter 01 derives them: one-hot
# rows of length V times the matrix.
#
# `torch.nn.functional.one_hot(tokens, num_classes)` returns a tensor of shape (B, T, V) holding
# 0s and 1s as *integers*.
#
# - **Shapes:** `tokens` (B, T) integer ids (any leading shape works); `weight` (V, D) → output
#   (B, T, D), with the dtype of `weight`.
# - **Watch for:** without `num_classes`, `F.one_hot` makes rows only as long as the largest id in
#   the batch plus one, which breaks the product whenever the last rows of the table are not used.
#   An integer matrix cannot be multiplied by a float one; convert the one-hot rows to
#   `weight.dtype` so that a `float64` table gives a `float64` result. The result must stay
#   differentiable with respect to `weight`.

# %%
### BEGIN SOLUTION
weight = torch.randn(5, 3)  # (V, D)
tokens = torch.tensor([[0, 4, 2], [1, 1, 3]])  # (B, T)
looked_up = one_hot_lookup(tokens, weight)  # (B, T, D)
print(tuple(looked_up.shape), torch.equal(looked_up, weight[tokens]))
print(torch.equal(one_hot_lookup(tokens, weight.double()), weight.double()[tokens]))
### END SOLUTION

# %% [markdown]
# *In your own words:* the product gives exactly the same numbers as `weight[tokens]`; why do
# libraries index instead of multiplying?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# one_hot = F.one_hot(tokens, num_classes=weight.shape[0]).to(weight.dtype)  # (B, T, V)
# return one_hot @ weight  # (B, T, D)
# ```
# `@` multiplies the last axis of the (B, T, V) one-hot tensor with the first axis of the (V, D)
# matrix and broadcasts over the leading axes, so any shape of `tokens` works. Each one-hot row
# has a single 1, which selects one row of `weight`; the products with the zeros add nothing, so
# the result is exact, not merely close. The gradient of the product with respect to `weight` is
# `one_hotᵀ @ grad_output`: rows of tokens that did not occur get zero, just as with `nn.Embedding`.
#
# The product spends $V_\text{src}$ multiply-adds per output number, almost all of them with a
# zero, and first builds a (B, S, $V_\text{src}$) tensor: with the paper's 37,000 tokens that is
# tens of thousands of times the work and the memory of copying the rows. Indexing copies the
# rows and nothing else.
# ### END SOLUTION

# %%
check("ex01_3")

# %% [markdown]
# When every check above passes, re-run [chapter 01](../chapters/01_embeddings.ipynb): it now runs on
# your code. Next: [exercises 02](ex02_positional_encoding.ipynb), positional encoding.
