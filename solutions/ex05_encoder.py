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
# # Exercises 05 — The encoder
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex05_encoder.ipynb)
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# Companion of [chapter 05](../chapters/05_encoder.ipynb) (paper §3.1, §3.3 equation (2), §5.4).
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. In the student edition its body is a stub that raises
# `NotImplementedError`; you write the body **in the package file** named in the exercise, not in
# this notebook. Because the chapters import the package, they then run on your code.
#
# After editing the file, run the exercise's check cell. It compares your code with an independent
# reference (closed forms written with `torch.nn.functional`, and PyTorch's own
# `nn.TransformerEncoderLayer`) on several inputs, edge cases included, and prints one line:
# ✓ passed, ○ not implemented yet, or ✗ with the input that failed and what is wrong. The same
# checks run from a terminal:
#
# ```bash
# python -m transformer_course check ex05_1     # one exercise (or no id: a table of all of them)
# pytest -m ex05_1                              # the same check through pytest
# ```
#
# Each exercise also has a **try it** cell: a scratch space to experiment on small tensors before
# you commit your answer to the package. The set-up cell below makes the notebook pick up
# your edits to the package without restarting the kernel.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex05_1 | `PositionwiseFeedForward.forward(x)` in `feedforward.py` | easy |
# | ex05_2 | `residual(x, sublayer, norm, dropout, norm_first)` in `sublayer.py` | medium |
# | ex05_3 | `EncoderLayer.forward(x, mask)` in `encoder.py` | hard |
#
# **Before you start:** chapter 05 also runs exercises of other chapters: ex03_1, ex03_2, ex03_3,
# ex04_1, ex04_2 and ex04_3. Until they are written it stops at the first of them, naming all those
# still to write.
#
# **Order:** ex05_3 calls ex04_3, ex05_1 and ex05_2, so write ex04_3, ex05_1 and ex05_2 first.

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
from torch import nn

from transformer_course import EncoderLayer, PositionwiseFeedForward, padding_mask, residual
from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)
setup_chapter("05")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex05_1 — Position-wise feed-forward network (eq. 2) (easy)
#
# **File:** `transformer_course/feedforward.py`, method `PositionwiseFeedForward.forward(self, x)`.
#
# Implement equation (2), $\mathrm{FFN}(x) = \max(0, xW_1 + b_1)W_2 + b_2$, with the layers the
# constructor made: `self.linear1` ($W_1, b_1$, D → d_ff), `self.linear2` ($W_2, b_2$, d_ff → D),
# `self.activation` (the ReLU, $\max(0, \cdot)$, unless the layer was built with another one)
# and `self.dropout`, which goes on the hidden layer, **after the ReLU** (where
# `nn.TransformerEncoderLayer` puts it).
#
# - **Shapes:** `x` (B, T, D) → (B, T, D); any number of leading axes works, since `nn.Linear` acts
#   on the last one.
# - **Watch for:** exactly one ReLU (none after `linear2`); dropout between the two linear layers,
#   not on the output (the residual block adds its own dropout there).

# %%
ffn = PositionwiseFeedForward(d_model=6, d_ff=10).eval()
x = torch.randn(2, 3, 6)  # (B, T, D)
### BEGIN SOLUTION
hidden = ffn.dropout(ffn.linear1(x).relu())  # (B, T, d_ff)
out = ffn.linear2(hidden)  # (B, T, D)
print(out.shape, "zeroed hidden units:", (hidden == 0).float().mean().item())
w1, b1, w2, b2 = ffn.linear1.weight, ffn.linear1.bias, ffn.linear2.weight, ffn.linear2.bias
print(torch.allclose(out, torch.clamp(x @ w1.T + b1, min=0) @ w2.T + b2, atol=1e-6))  # equation (2)
### END SOLUTION

# %% [markdown]
# *In your own words:* why is this network called *position-wise*, and what in the code makes it so?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# hidden = self.dropout(self.activation(self.linear1(x)))  # (B, T, d_ff)
# return self.linear2(hidden)  # (B, T, D)
# ```
#
# `nn.Linear` multiplies the **last** axis by its weight matrix and treats every other axis as a
# batch, and the activation and dropout act element by element. So each position's vector goes through the
# same two matrices without ever meeting another position: output $t$ depends on input $t$ only.
# Mixing positions is attention's job; the FFN transforms what attention gathered. Dropout sits on
# the d_ff hidden units, which is what PyTorch's encoder layer does; the residual block
# (ex05_2) drops out the FFN's *output* separately.
# ### END SOLUTION

# %%
check("ex05_1")

# %% [markdown]
# ## ex05_2 — Residual connection + LayerNorm (post-LN and pre-LN) (medium)
#
# **File:** `transformer_course/sublayer.py`, function `residual(x, sublayer, norm, dropout,
# norm_first)`.
#
# Wrap a sub-layer (a function from (B, T, D) to (B, T, D)) in a residual connection with layer
# normalisation, in either order:
#
# - `norm_first=False`, **post-LN** (the paper, §3.1 and §5.4): `norm(x + dropout(sublayer(x)))`;
# - `norm_first=True`, **pre-LN**: `x + dropout(sublayer(norm(x)))`.
#
# - **Shapes:** `x` (B, T, D) → (B, T, D).
# - **Watch for:** dropout goes on the sub-layer's output only (not on `x`, not on the sum); in
#   pre-LN the sub-layer reads the *normalised* input but the shortcut adds the *raw* `x`; call
#   `sublayer` once.

# %%
norm, drop = nn.LayerNorm(6), nn.Dropout(0.0)
sub = nn.Sequential(nn.Linear(6, 6), nn.Tanh())
x = 3 * torch.randn(2, 3, 6) + 1  # (B, T, D), far from normalised
### BEGIN SOLUTION
post = norm(x + drop(sub(x)))
pre = x + drop(sub(norm(x)))
print("post-LN rows are normalised:", post.mean(-1).abs().max().item() < 1e-5)
print("pre-LN keeps the scale of x:", f"{x.std():.2f} → {pre.std():.2f}")
### END SOLUTION

# %% [markdown]
# *In your own words:* in a stack of pre-LN layers, which tensor is never normalised, and why does a
# pre-LN stack need one more LayerNorm at the very end?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# if norm_first:
#     return x + dropout(sublayer(norm(x)))
# return norm(x + dropout(sublayer(x)))
# ```
#
# Post-LN normalises the sum, so every layer hands normalised vectors to the next. Pre-LN
# normalises only the copy that the sub-layer reads; the shortcut carries the raw `x`. Through a
# stack, the pre-LN residual stream $x_0 + f_1 + f_2 + \dots$ is therefore never normalised: it
# grows with depth (chapter 05, section 4) and the gradient reaches every layer through an
# unbroken sum. Because the last layer's output is such a raw sum, a pre-LN encoder or decoder
# ends with one final LayerNorm (`Encoder(..., final_norm=nn.LayerNorm(D))`, the `norm` argument of
# `nn.TransformerEncoder`); post-LN layers already end with one.
# ### END SOLUTION

# %%
check("ex05_2")

# %% [markdown]
# ## ex05_3 — Encoder layer (self-attention + FFN, each in a residual) (hard)
#
# **File:** `transformer_course/encoder.py`, method `EncoderLayer.forward(self, x, mask=None)`.
#
# An encoder layer is two residual blocks (§3.1):
#
# 1. multi-head **self-attention**: `self.self_attn(query, key, value, mask)` returns
#    `(output, weights)`; queries, keys and values are all the (normalised, in pre-LN) input;
#    wrapped with `self.norm1`, `self.dropout1`;
# 2. the feed-forward network `self.ffn`, wrapped with `self.norm2`, `self.dropout2`.
#
# Wrap each sub-layer with `self.connection(x, sublayer, norm, dropout, self.norm_first)`: the
# layer's connection is your `residual` from ex05_2, unless the layer was built with another one
# (chapter 11's experiment builds layers without the shortcuts that way).
#
# - **Shapes:** `x` (B, S, D), `mask`: bool broadcastable to (B, H, S, S), True = may attend,
#   usually the padding mask (B, 1, 1, S) → (B, S, D).
# - **Watch for:** pass the mask in every mode (training *and* evaluation); in pre-LN, the keys and
#   values must be normalised too (the sub-layer receives one normalised tensor `h` and uses it
#   three times); each sub-layer has its own norm.
#
# The check loads the weights of `nn.TransformerEncoderLayer` into yours (with `from_torch`) and
# compares outputs, post-LN and pre-LN, with and without padding.

# %%
layer = EncoderLayer(d_model=6, n_heads=2, d_ff=10, dropout=0.0).eval()
x = torch.randn(2, 4, 6)  # (B, S, D)
mask = padding_mask(torch.tensor([[5, 6, 0, 0], [5, 6, 7, 8]]), pad_id=0)  # (B, 1, 1, S)
### BEGIN SOLUTION
h = residual(x, lambda t: layer.self_attn(t, t, t, mask)[0], layer.norm1, layer.dropout1, layer.norm_first)
out = residual(h, layer.ffn, layer.norm2, layer.dropout2, layer.norm_first)
print(out.shape, torch.allclose(out, layer(x, mask)))
reference = nn.TransformerEncoderLayer(6, 2, 10, dropout=0.0, batch_first=True)
ours = EncoderLayer.from_torch(reference).eval()
with torch.no_grad():
    theirs = reference(x, src_key_padding_mask=~mask[:, 0, 0])  # PyTorch: True = blocked
    print("same as nn.TransformerEncoderLayer:", torch.allclose(ours(x, mask), theirs, atol=1e-6))
### END SOLUTION

# %% [markdown]
# *In your own words:* `self.self_attn(h, h, h, mask)` — why three times the same tensor, and what
# would change if the mask were left out?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# def attend(h: Tensor) -> Tensor:
#     return self.self_attn(h, h, h, mask)[0]  # (B, S, D)
#
# x = self.connection(x, attend, self.norm1, self.dropout1, self.norm_first)
# return self.connection(x, self.ffn, self.norm2, self.dropout2, self.norm_first)  # (B, S, D)
# ```
#
# *Self*-attention means the sequence attends to itself: every position asks a question (query)
# and every position offers an answer (key, value), so one tensor supplies all three; the three
# projections inside `MultiHeadAttention` turn it into different queries, keys and values.
# `attend` receives the tensor that `residual` (the connection) hands to the sub-layer, which is
# `norm1(x)` in pre-LN, so queries, keys and values are all normalised, as in PyTorch. `[0]` keeps
# the output and drops the attention weights.
#
# Without the mask, real tokens would attend to `<pad>` positions, and the output for a sentence
# would depend on how much padding its batch happened to need. Passing the mask in every mode
# keeps evaluation identical to training (dropout aside).
# ### END SOLUTION

# %%
check("ex05_3")

# %% [markdown]
# When every check above passes, run [chapter 05](../chapters/05_encoder.ipynb) again: it now runs on
# your code. Next: [exercises 06](ex06_decoder_and_masks.ipynb), masks and the decoder.
