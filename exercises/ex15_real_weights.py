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
# # Exercises 15 — Real weights in the course's model
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex15_real_weights.ipynb)
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# Companion of [chapter 15](../chapters/15_real_weights.ipynb): the pieces of bookkeeping
# that let the course's own `Transformer` and `DecoderOnlyLM` run the weights of checkpoints people
# use: the order of the rows of W^Q and W^K that Hugging Face's Llama expects, the transposed
# weights of GPT-2's `Conv1D`, and the names of a Marian (OPUS-MT) layer's tensors.
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. In the student edition its body is a stub that raises
# `NotImplementedError`; you write the body **in the package file** named in the exercise, not in
# this notebook. Because the chapters import the package, chapter 15's converters then run on
# your code.
#
# After editing the file, run the exercise's check cell. It compares your function with an
# independent reference (the rotations of both layouts written out, pair by pair and with
# `rotate_half`, and the attention scores they give; `F.linear` against GPT-2's `x @ W + b`; a
# post-LN layer written out and run once by our names and once by Marian's) and prints one line:
# ✓ passed, ○ not implemented yet, or ✗ with the input that failed and what is wrong. The same
# checks run from a terminal:
#
# ```bash
# python -m transformer_course check ex15_1     # one exercise (or no id: a table of all of them)
# pytest -m ex15_1                              # the same check through pytest
# ```
#
# Each exercise also has a **try it** cell, a scratch space on small tensors. The set-up
# cell below makes the notebook pick up your edits to the package without restarting the kernel.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex15_1 | `rope_halves_to_interleaved(weight, n_heads)` in `convert.py` | easy |
# | ex15_2 | `split_conv1d(weight, bias, parts)` in `convert.py` | easy |
# | ex15_3 | `marian_layer_names(decoder)` in `convert.py` | medium |
#
# **Before you start:** chapter 15 also runs exercises of other chapters: ex01_2, ex02_1, ex02_2,
# ex03_1, ex03_2, ex03_3, ex04_1, ex04_2, ex04_3, ex05_1, ex05_2, ex05_3, ex06_1, ex06_2, ex06_3,
# ex09_1, ex09_2, ex13_1, ex13_2, ex13_3 and ex13_4. Until they are written it stops at the first of
# them, naming all those still to write.
#
# **Order:** the three are independent of each other. `from_llama` calls the first, `from_gpt2` the
# second and `from_marian` the third.

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
import torch.nn.functional as F

from transformer_course import DecoderLayer, EncoderLayer
from transformer_course.convert import marian_layer_names, rope_halves_to_interleaved, split_conv1d
from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)
setup_chapter("15")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex15_1 — Rotary embeddings: reorder W^Q's rows from the halves layout to our pairs (easy)
#
# **File:** `transformer_course/convert.py`, function `rope_halves_to_interleaved(weight, n_heads)`.
#
# Our `apply_rope` (exercise ex13_2) rotates the features of each head in pairs of neighbours,
# (2i, 2i+1), by the angle θᵢ = p · base^(−2i/d), as RoFormer and Meta's own Llama code do.
# Hugging Face's Llama rotates the pairs (i, i + d/2) by the same angles: its `rotate_half` takes
# the second half of each head's features as the partners of the first half (the "halves" layout).
# So the Llama weights on the Hub expect halves: Meta's were converted by permuting the rows of W^Q
# and W^K, and models trained in halves (SmolLM2, GPT-NeoX) were stored as they were. Reordering
# the **rows** of W^Q and W^K (each row makes one feature of the queries or keys) turns one layout
# into the other: within each head of d rows, row i goes to row 2i and row i + d/2 to row 2i + 1.
# The score q·k is a sum over the features, so moving the same features the same way in q and k
# changes nothing but which features rotate together. With grouped key/value heads, W^K has its own
# number of heads (`n_kv_heads`).
#
# - **Shapes:** `weight` (H·d, ...) → (H·d, ...), the same rows in the new order (a new tensor); a
#   bias (H·d,) is reordered the same way.
# - **Watch for:** the halves are per head (reshape to (H, 2, d/2, ...) first, not to (2, H·d/2, ...)
#   over the whole weight); the direction (halves → pairs, not pairs → halves); rows, not columns.

# %%
weight = torch.arange(8.0).view(8, 1)  # (H·d, 1) = two heads of d = 4 rows: row r holds the number r
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* why must W^Q and W^K be reordered the same way, and why may W^V stay as it
# is? What would go wrong with the reordering done over all H·d rows at once?
#
# YOUR ANSWER HERE

# %%
check("ex15_1")

# %% [markdown]
# ## ex15_2 — GPT-2's Conv1D: transpose the weight and split q, k, v (easy)
#
# **File:** `transformer_course/convert.py`, function `split_conv1d(weight, bias, parts)`.
#
# GPT-2's layers are not `nn.Linear` but `Conv1D`, which stores its weight as (in, out) and
# computes y = x W + b; `nn.Linear` stores (out, in) and computes y = x Wᵀ + b. And GPT-2 computes
# the queries, keys and values with one layer, `c_attn`, whose 3·D outputs are the queries, then
# the keys, then the values, side by side. Return one `(weight, bias)` pair per part, each weight
# shaped (out, in) for our `nn.Linear`.
#
# - **Shapes:** `weight` (in, parts·out), `bias` (parts·out,) → a list of `parts` pairs
#   (weight (out, in), bias (out,)).
# - **Watch for:** split along dimension 1 (the outputs) into consecutive blocks; transpose each
#   block (`.t().contiguous()`); split the bias into the same blocks.

# %%
conv_weight, conv_bias = torch.randn(4, 6), torch.randn(6)  # in = 4, two parts of out = 3
x = torch.randn(2, 4)
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* GPT-2's `c_proj` is square, (D, D). Why would forgetting the transpose give
# no error when the state is loaded, and what would the model do then?
#
# YOUR ANSWER HERE

# %%
check("ex15_2")

# %% [markdown]
# ## ex15_3 — Marian's names: map our layer's tensors to an OPUS-MT checkpoint's (medium)
#
# **File:** `transformer_course/convert.py`, function `marian_layer_names(decoder)`.
#
# An OPUS-MT checkpoint is the 2017 model with other names. Our `EncoderLayer` holds `self_attn`
# (`w_q`, `w_k`, `w_v`, `w_o`), `norm1` after it, the network `ffn` (`linear1`, `linear2`) and
# `norm2` after it; our `DecoderLayer` puts `cross_attn` and `norm2` between them, so its
# network's norm is `norm3`. Marian's layer calls them `self_attn` (`q_proj`, `k_proj`,
# `v_proj`, `out_proj`), `self_attn_layer_norm`, `encoder_attn` and `encoder_attn_layer_norm`
# (decoder only), `fc1`, `fc2` and `final_layer_norm`. Return a dict from each of our names within
# one layer to Marian's, `.weight` and `.bias` both.
#
# - **Returns:** `{"self_attn.w_q.weight": "self_attn.q_proj.weight", …}`: 16 entries for an encoder
#   layer, 26 for a decoder layer.
# - **Watch for:** each norm by the sub-layer it follows (post-LN: the norm comes after the
#   residual addition); the encoder's norm2 and the decoder's norm3 are both Marian's
#   `final_layer_norm`; the cross-attention is Marian's `encoder_attn`.

# %%
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* every norm of these layers has the same shape (D,). Which mistake in this
# table would `load_state_dict(strict=True)` catch, and which would it load without complaint?
#
# YOUR ANSWER HERE

# %%
check("ex15_3")

# %% [markdown]
# When every check above passes, run [chapter 15](../chapters/15_real_weights.ipynb) again: its
# converters then load Marian, GPT-2 and Llama weights through your code. The way out is the same
# bookkeeping run backwards: [chapter 16](../chapters/16_real_checkpoints.ipynb) exports the course's
# models with `to_llama`, `to_gpt2` and `to_marian` (in `export.py`), and its
# [exercises 16](ex16_real_checkpoints.ipynb) quantize them.
