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
# # Exercises 06 — Masks and the decoder
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex06_decoder_and_masks.ipynb)
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# Companion of [chapter 06](../chapters/06_decoder_and_masks.ipynb) (paper §3.1, §3.2.3).
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. In the student edition its body is a stub that raises
# `NotImplementedError`; you write the body **in the package file** named in the exercise, not in
# this notebook. Because the chapters import the package, they then run on your code.
#
# After editing the file, run the exercise's check cell. It compares your code with an independent
# reference (masks built element by element from index comparisons, and PyTorch's own
# `nn.TransformerDecoderLayer`) on several inputs, edge cases included, and prints one line:
# ✓ passed, ○ not implemented yet, or ✗ with the input that failed and what is wrong. The same
# checks run from a terminal:
#
# ```bash
# python -m transformer_course check ex06_1     # one exercise (or no id: a table of all of them)
# pytest -m ex06_1                              # the same check through pytest
# ```
#
# Each exercise also has a **try it** cell: a scratch space to experiment on small tensors before
# you commit your answer to the package. The set-up cell below makes the notebook pick up
# your edits to the package without restarting the kernel.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex06_1 | `causal_mask(size, device)` in `masks.py` | easy |
# | ex06_2 | `padding_mask(tokens, pad_id)` in `masks.py` | medium |
# | ex06_3 | `DecoderLayer.forward(x, memory, tgt_mask, memory_mask)` in `decoder.py` | hard |
#
# **Before you start:** chapter 06 also runs exercises of other chapters: ex01_1, ex01_2, ex02_1,
# ex02_2, ex03_1, ex03_2, ex03_3, ex04_1, ex04_2, ex04_3, ex05_1, ex05_2 and ex05_3. Until they are
# written it stops at the first of them, naming all those still to write.
#
# **Order:** ex06_3 calls ex04_3, ex05_1 and ex05_2, so write ex04_3, ex05_1 and ex05_2 first.
#
# Every mask in this course is boolean with **True = may attend**, broadcastable to the
# (B, H, T, S) attention scores. (`nn.MultiheadAttention` and `nn.Transformer*` use the opposite.)

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

from transformer_course import DecoderLayer, causal_mask, padding_mask, residual, target_mask
from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)
setup_chapter("06")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex06_1 — Causal mask (no peeking at the future) (easy)
#
# **File:** `transformer_course/masks.py`, function `causal_mask(size, device=None)`.
#
# Return the (size, size) boolean mask in which query position $t$ (a row) may attend to key
# positions $0 \dots t$ (columns): True on and below the diagonal, False above it. Create it on
# `device`.
#
# - **Shapes:** → (size, size) bool, broadcastable to (B, H, T, T).
# - **Watch for:** rows are queries, columns are keys (the upper triangle is the transposed mask,
#   the future); the diagonal is True (a position sees itself); dtype `torch.bool`; the `device`
#   argument (build the tensor there rather than on the CPU).

# %%
T = 4
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* why is it the lower triangle and not the upper one?
#
# YOUR ANSWER HERE

# %%
check("ex06_1")

# %% [markdown]
# ## ex06_2 — Padding mask (B, 1, 1, S) (medium)
#
# **File:** `transformer_course/masks.py`, function `padding_mask(tokens, pad_id)`.
#
# Return True where `tokens` holds a real token and False where it holds `pad_id`, shaped so that
# it hides **keys** for every head and every query: (B, 1, 1, S). (The input check is written.)
#
# - **Shapes:** `tokens` (B, S) → (B, 1, 1, S) bool.
# - **Watch for:** polarity (True = real token, may attend); `pad_id` is an argument, not always 0;
#   the shape: a (B, S) mask broadcasts against (B, H, T, S) scores from the right, so B would be
#   matched with the query axis T.

# %%
tokens = torch.tensor([[5, 6, 7, 0, 0], [4, 4, 4, 4, 4]])  # (B, S), pad id 0
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* what would a (B, S) mask do to (B, H, T, S) scores with B = 2, H = 3,
# T = 2, S = 5?
#
# YOUR ANSWER HERE

# %%
check("ex06_2")

# %% [markdown]
# ## ex06_3 — Decoder layer (masked self-attention, cross-attention, FFN) (hard)
#
# **File:** `transformer_course/decoder.py`, method `DecoderLayer.forward(self, x, memory,
# tgt_mask=None, memory_mask=None)`.
#
# A decoder layer is three residual blocks (§3.1), each wrapped as in the encoder layer:
# `self.connection(x, sublayer, norm, dropout, self.norm_first)`, the layer's connection being your
# `residual` (ex05_2) unless the layer was built with another:
#
# 1. masked **self-attention** over the decoder states `x`, with `tgt_mask` (`self.self_attn`,
#    `self.norm1`, `self.dropout1`);
# 2. **cross-attention**: queries from the decoder, keys and values from `memory`, the encoder
#    output, with `memory_mask` (`self.cross_attn`, `self.norm2`, `self.dropout2`);
# 3. the feed-forward network (`self.ffn`, `self.norm3`, `self.dropout3`).
#
# - **Shapes:** `x` (B, T, D) decoder states, `memory` (B, S, D) encoder output, `tgt_mask`: bool
#   broadcastable to (B, H, T, T) (causal and target padding), `memory_mask`: bool broadcastable to
#   (B, H, T, S) (source padding) → (B, T, D).
# - **Watch for:** cross-attention must read `memory`, not `x` (shapes would still work when
#   S = T); apply `tgt_mask` in every mode, not only in training; in pre-LN only the decoder side is
#   normalised by `norm2`: the memory is used as it is (the encoder already normalised it).
#
# The check loads the weights of `nn.TransformerDecoderLayer` into yours and compares outputs,
# post-LN and pre-LN, with and without masks, and also tests that the memory matters and that the
# future never leaks.

# %%
layer = DecoderLayer(d_model=6, n_heads=2, d_ff=10, dropout=0.0).eval()
x, memory = torch.randn(2, 4, 6), torch.randn(2, 3, 6)  # (B, T, D), (B, S, D)
tgt = torch.tensor([[1, 5, 6, 0], [1, 7, 8, 9]])
src = torch.tensor([[5, 6, 0], [7, 8, 9]])
tgt_mask, memory_mask = target_mask(tgt, 0), padding_mask(src, 0)  # (B, 1, T, T), (B, 1, 1, S)
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* in the cross-attention block, which tensor provides the queries, which the
# keys and values, and what are the shapes of its attention weights?
#
# YOUR ANSWER HERE

# %%
check("ex06_3")

# %% [markdown]
# When every check above passes, run [chapter 06](../chapters/06_decoder_and_masks.ipynb) again: it now
# runs on your code, including the full Transformer. Next: [chapter 07](../chapters/07_counting_parameters.ipynb),
# a short chapter, and its [exercises 07](ex07_counting_parameters.ipynb).
