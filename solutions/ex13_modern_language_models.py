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
# # Exercises 13 — From the 2017 translator to today's language models
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex13_modern_language_models.ipynb)
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# Companion of [chapter 13](../chapters/13_modern_language_models.ipynb): the changes that
# turn the paper's layer into the layer of a model such as Llama (RMSNorm, rotary position
# embeddings, grouped key/value heads, the SwiGLU feed-forward network) and the arithmetic that
# lets attention read its keys one block at a time (the online softmax of FlashAttention).
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. In the student edition its body is a stub that raises
# `NotImplementedError`; you write the body **in the package file** named in the exercise, not in
# this notebook. Because the chapters import the package, chapter 13 then runs on your code.
#
# After editing the file, run the exercise's check cell. It compares your function with an
# independent reference (PyTorch's own `nn.RMSNorm` where your PyTorch has it and the formula in
# float64, rotation matrices built from explicit 2×2 blocks, a loop over the query heads and
# PyTorch's grouped attention, SwiGLU written out with z·σ(z), and the softmax of all the blocks of
# scores at once in float64) and prints one line: ✓ passed, ○ not implemented yet, or ✗ with the
# input that failed and what is wrong. The same checks run from a terminal:
#
# ```bash
# python -m transformer_course check ex13_1     # one exercise (or no id: a table of all of them)
# pytest -m ex13_1                              # the same check through pytest
# ```
#
# Each exercise also has a **try it** cell, a scratch space on small tensors. The set-up
# cell below makes the notebook pick up your edits to the package without restarting the kernel.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex13_1 | `RMSNorm.forward(x)` in `rmsnorm.py` | easy |
# | ex13_2 | `apply_rope(x, positions, base)` in `rotary.py` | medium |
# | ex13_3 | `repeat_kv(x, n_rep)` in `grouped.py` | medium |
# | ex13_4 | `SwiGLU.forward(x)` in `swiglu.py` | easy |
# | ex13_5 | `online_softmax_update(top, total, acc, scores, values)` in `blocked.py` | hard |
#
# **Before you start:** chapter 13 also runs exercises of other chapters: ex01_2, ex02_1, ex02_2,
# ex03_1, ex03_2, ex03_3, ex04_1, ex04_2, ex04_3, ex05_1, ex05_2, ex05_3, ex08_1, ex08_2, ex08_3,
# ex08_4, ex09_1 and ex09_2. Until they are written it stops at the first of them, naming all those
# still to write.
#
# **Order:** the five are independent of each other.

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
from torch import nn

from transformer_course import RMSNorm, SwiGLU, apply_rope, repeat_kv
from transformer_course.blocked import online_softmax_update
from transformer_course.rotary import rope_angles
from transformer_course.swiglu import swiglu_hidden_size
from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)
setup_chapter("13")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex13_1 — RMSNorm: divide by the root mean square (easy)
#
# **File:** `transformer_course/rmsnorm.py`, method `RMSNorm.forward(self, x)`.
#
# LayerNorm (chapter 05) centres each position's D features on their mean, divides by their
# standard deviation, then scales by γ and shifts by β. RMSNorm (Zhang & Sennrich, 2019) keeps only
# the division and the scale:
#
# $$\mathrm{RMSNorm}(x) = \frac{x}{\sqrt{\tfrac{1}{D}\sum_{j=1}^{D} x_j^2 + \varepsilon}} \cdot g$$
#
# with `self.eps` for ε and the learned `self.weight` for g (one scale per feature). The check of the
# last dimension is already written.
#
# - **Shapes:** `x` (..., D) → (..., D): any number of leading axes, the mean over the last one.
# - **Watch for:** no mean subtracted (that would be LayerNorm); ε inside the square root, added to
#   the mean square; the mean over the last axis only, kept as (..., 1) so that it divides each
#   position's features (`keepdim=True`); `torch.rsqrt` gives 1/√ in one step.

# %%
x = torch.tensor([[3.0, 4.0], [3.0, 5.0], [0.0, 0.0]])  # (T, D) = (3, 2): the last position is all zeros
### BEGIN SOLUTION
rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6)  # (T, 1): √12.5, √17, √ε
print(rms.squeeze(-1))
print(x / rms)  # each row now has a root mean square of 1 (the zero row stays 0, not NaN)
norm = RMSNorm(2, eps=1e-6)
print(torch.allclose(norm(x), x / rms), "— and LayerNorm:", nn.LayerNorm(2, eps=1e-6)(x).detach())
### END SOLUTION

# %% [markdown]
# *In your own words:* with D = 2, LayerNorm maps both [3, 4] and [3, 5] to the same vector. Why,
# and what does RMSNorm keep that LayerNorm throws away?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# mean_square = x.pow(2).mean(dim=-1, keepdim=True)  # (..., 1)
# return x * torch.rsqrt(mean_square + self.eps) * self.weight  # (..., D)
# ```
#
# LayerNorm subtracts the mean first: [3, 4] becomes [−0.5, 0.5] and [3, 5] becomes [−1, 1], and
# dividing by the standard deviation leaves [−1, 1] for both (up to ε). With two features, all that
# survives LayerNorm is which feature is the larger. RMSNorm does not centre: it only divides by
# the root mean square, so the direction of the vector stays as it was ([3, 4] and [3, 5] keep their
# different angles) and only its size is fixed. It saves the mean and the shift β, and models
# trained with it learn as well: the re-centring of LayerNorm turned out not to be what made it
# work. ε under the root keeps an all-zero position at 0 instead of 0/0.
# ### END SOLUTION

# %%
check("ex13_1")

# %% [markdown]
# ## ex13_2 — Rotary position embeddings: rotate pairs of features (medium)
#
# **File:** `transformer_course/rotary.py`, function `apply_rope(x, positions, base=10000.0)`.
#
# Rotary embeddings (Su et al., 2021) do not add a position vector to the token: they **rotate**
# each query and each key, after W^Q and W^K, by angles that grow with its position. The features
# form pairs of neighbours, (2i, 2i+1), and the pair i of the row at position p turns by
# θ = p · base^(−2i/d):
#
# $$\begin{pmatrix} x'_{2i} \\ x'_{2i+1} \end{pmatrix} =
# \begin{pmatrix} \cos\theta & -\sin\theta \\ \sin\theta & \cos\theta \end{pmatrix}
# \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix}$$
#
# `rope_angles(positions, d, base)` (already written, in the same file) gives every θ as a
# (T, d/2) table: row t for `positions[t]`, column i for pair i. The checks of the arguments are
# written too.
#
# - **Shapes:** `x` (..., T, d) with d even, `positions` (T,) integers → (..., T, d), in the dtype
#   of `x`.
# - **Watch for:** the pairs are **interleaved**, features 2i and 2i+1 (`x[..., 0::2]` and
#   `x[..., 1::2]`), not i and i + d/2; rotate row t by `positions[t]`, which in a cached decoding
#   step are not 0 … T−1; each rotated pair goes back in its own place (stack the two new halves
#   on a new last axis, then `flatten(-2)`); compute in float32 and return `x`'s dtype (a bfloat16
#   cosine of a large angle is far off).

# %%
pair = torch.tensor([1.0, 0.0])  # one pair of features, d = 2: θ = p radians
### BEGIN SOLUTION
for p in range(4):
    turned = apply_rope(pair.view(1, 2), torch.tensor([p]))[0]  # (2,)
    print(p, turned, f"angle {math.atan2(turned[1], turned[0]):.3f}, length {turned.norm():.3f}")
w_q, w_k, q, k = torch.randn(8, 8), torch.randn(8, 8), torch.randn(8), torch.randn(8)


def score(p: int, s: int) -> float:
    """The score of a query at position p and a key at position s, after W^Q, W^K and the rotations."""
    rotated_q = apply_rope((q @ w_q).view(1, 8), torch.tensor([p]))
    rotated_k = apply_rope((k @ w_k).view(1, 8), torch.tensor([s]))
    return (rotated_q @ rotated_k.T).item()


print([round(score(p, p - 2), 2) for p in (2, 5, 30)], "— the same for every p at distance 2")
print(rope_angles(torch.arange(3), 8))  # (T, d/2): pair 0 turns 1 radian per position, pair 3 0.001
### END SOLUTION

# %% [markdown]
# *In your own words:* why does the score of a rotated query at position p and a rotated key at
# position s depend on p − s only, whatever W^Q and W^K are? And why must a decoding step that
# appends keys to a cache pass the positions of its new tokens instead of 0 … T−1?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# dtype = torch.float64 if x.dtype == torch.float64 else torch.float32  # float64 stays float64
# angles = rope_angles(positions, x.shape[-1], base, dtype)  # (T, d/2)
# cos, sin = angles.cos(), angles.sin()  # (T, d/2)
# even, odd = x[..., 0::2].to(dtype), x[..., 1::2].to(dtype)  # (..., T, d/2): features 2i and 2i+1
# rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)  # (..., T, d/2, 2)
# return rotated.flatten(-2).to(x.dtype)  # (..., T, d): pairs back in place
# ```
#
# The score is a dot product, and a rotation keeps dot products: for rotations R(a) and R(b),
# (R(a) u)·(R(b) v) = u·(R(b − a) v). The rotation is applied *after* the projections, to
# u = W^Q x and v = W^K y, so the score is u·R(θ(s) − θ(p)) v: the contents enter through u and v,
# the positions only through their difference. Chapter 02's table added the position *before* the
# projections, where W^Q and W^K could mix it with everything else.
#
# A KV cache stores each key once, already rotated. If a decoding step rotated its new key as
# position 0 (its row number in the step) instead of its real position L, every score with it would
# use the wrong distance, and the cached key would stay wrong for all later steps. So
# `RotaryAttention` passes `L … L+T−1` when the cache holds L positions, and the check asks that
# rows 5 … 8 rotated alone equal rows 5 … 8 of the whole sequence.
# ### END SOLUTION

# %%
check("ex13_2")

# %% [markdown]
# ## ex13_3 — Grouped key/value heads: one head per group of query heads (medium)
#
# **File:** `transformer_course/grouped.py`, function `repeat_kv(x, n_rep)`.
#
# With `MultiHeadAttention(..., n_kv_heads=Hkv)` the layer projects H query heads but only Hkv key
# and value heads (grouped-query attention, Ainslie et al., 2023; Hkv = 1 is multi-query attention,
# Shazeer, 2019): a KV cache then holds Hkv heads instead of H. Before attention, each key/value
# head is handed to its **group** of n_rep = H / Hkv query heads: query heads 0 … n_rep−1 read
# key/value head 0, the next n_rep read head 1, and so on. `repeat_kv` builds that (B, H, S, D)
# tensor. (The checks of the arguments are written.)
#
# - **Shapes:** `x` (B, Hkv, S, D) → (B, Hkv·n_rep, S, D); with n_rep = 1, `x` as it is.
# - **Watch for:** grouped, not tiled: `x.repeat(1, n_rep, 1, 1)` gives heads 0, 1, …, 0, 1, …,
#   which pairs query head h with key head h mod Hkv; repeat the heads (axis 1), not the
#   positions; `expand` makes no copy, the `reshape` after it makes the one copy needed.

# %%
heads = torch.arange(2.0).view(1, 2, 1, 1)  # (B, Hkv, S, D) = (1, 2, 1, 1): head j holds the number j
### BEGIN SOLUTION
print("grouped:", repeat_kv(heads, 3).flatten().tolist())  # query heads 0, 1, 2 read head 0
print("tiled:  ", heads.repeat(1, 3, 1, 1).flatten().tolist())  # query head 1 would read head 1
print("repeat_interleave:", heads.repeat_interleave(3, dim=1).flatten().tolist())  # grouped too
### END SOLUTION

# %% [markdown]
# *In your own words:* a layer with H = 8 query heads and Hkv = 2 key/value heads: how much smaller
# is its KV cache than the paper's, and what does it give up for that?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# batch, kv_heads, length, features = x.shape
# x = x[:, :, None].expand(batch, kv_heads, n_rep, length, features)  # (B, Hkv, n_rep, S, D), no copy yet
# return x.reshape(batch, kv_heads * n_rep, length, features)  # (B, H, S, D): each group's head n_rep times
# ```
#
# The cache holds the Hkv = 2 heads that W^K and W^V produce, not the 8 that attention reads:
# a quarter of the memory, and a quarter of the bytes read from it at every decoding step, where
# reading the cache is what takes the time. The repetition happens only when the keys are used.
# What is given up: four query heads share one key and one value per position, so they can still
# look for different things (their queries differ) but must find them among the same keys and
# read the same values. W^K and W^V also have 4 times fewer parameters. Trained models lose little,
# and multi-query attention (Hkv = 1) is the extreme end of the same trade.
# ### END SOLUTION

# %%
check("ex13_3")

# %% [markdown]
# ## ex13_4 — SwiGLU: a gated feed-forward network (easy)
#
# **File:** `transformer_course/swiglu.py`, method `SwiGLU.forward(self, x)`.
#
# The paper's feed-forward network is W₂ max(0, W₁x) (chapter 05). SwiGLU (Shazeer, 2020) has a
# **gate**: one projection goes through silu(z) = z·σ(z) and multiplies, feature by feature, a
# second projection:
#
# $$\mathrm{SwiGLU}(x) = W_2\,\big(\mathrm{silu}(W_1 x) \odot W_3 x\big)$$
#
# The constructor made `self.w1` (the gate, D → d_ff), `self.w3` (the value, D → d_ff), `self.w2`
# (d_ff → D), all without biases, and `self.dropout`, which acts on the hidden features as in
# chapter 05's network.
#
# - **Shapes:** `x` (..., D) → (..., D).
# - **Watch for:** silu on `self.w1(x)` only, not on `self.w3(x)`; silu (`F.silu`), not ReLU or σ;
#   a product, not a sum; dropout on the hidden product, before `self.w2`.

# %%
z = torch.linspace(-4, 4, 9)
### BEGIN SOLUTION
print("silu:", F.silu(z))  # smooth, a little negative below 0, ≈ z for large z
print("relu:", F.relu(z))
d_model = 512
relu_params = 2 * d_model * 4 * d_model  # W1 and W2 of chapter 05's network with d_ff = 4·D (biases aside)
swiglu_params = 3 * d_model * swiglu_hidden_size(d_model)  # three matrices with d_ff = ⅔ · 4 · D
print(swiglu_hidden_size(d_model), relu_params, swiglu_params)  # (nearly) the same number of parameters
gated = SwiGLU(6, 16).eval()
tokens = torch.randn(2, 4, 6)  # (B, T, D)
print(torch.allclose(gated(tokens), gated.w2(F.silu(gated.w1(tokens)) * gated.w3(tokens))))
### END SOLUTION

# %% [markdown]
# *In your own words:* why does SwiGLU use a hidden size of ⅔ · 4 · D instead of the paper's 4 · D,
# and what can the gate do that a ReLU cannot?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# hidden = F.silu(self.w1(x)) * self.w3(x)  # (..., d_ff)
# return self.w2(self.dropout(hidden))  # (..., D)
# ```
#
# SwiGLU has three D × d_ff matrices where the paper's network has two; with d_ff = ⅔ · 4 · D it has
# 3 · ⅔ · 4 · D² = 8 D² weights, as many as 2 · 4 · D², so the comparison between the two is at an
# equal budget of parameters and (nearly) of computation. A ReLU unit can only pass its input or cut
# it to 0, and the decision and the value come from the same projection. In a gated unit, one
# projection decides how much of each hidden feature passes (smoothly: silu has no kink and a
# gradient everywhere) and another supplies the value, so the network can scale a feature by an
# amount that depends on the input: where silu is nearly linear (large z), the hidden feature is
# nearly a product of two linear functions of x, a quadratic one.
# ### END SOLUTION

# %%
check("ex13_4")

# %% [markdown]
# ## ex13_5 — The online softmax: fold one block of keys into running sums (hard)
#
# **File:** `transformer_course/blocked.py`, function `online_softmax_update(top, total, acc, scores,
# values)`.
#
# `blocked_attention` reads the keys in blocks and never holds a whole row of weights. For each
# query row it keeps three running quantities over the keys seen so far, and your function folds one
# more block of keys into them:
#
# - `top`: the largest score seen so far;
# - `total`: the sum of exp(score − top) over the keys seen so far;
# - `acc`: the sum of exp(score − top) · value over the keys seen so far.
#
# Blocked attention starts from `top` = the lowest float, `total` = 0, `acc` = 0 and returns
# `acc / total` after the last block, which equals softmax(scores) · V over all the keys.
#
# 1. the new maximum: `top` or the block's largest score per row, whichever is larger;
# 2. what was summed under the old maximum is rescaled to the new one: multiply the old `total` and
#    `acc` by exp(top − new top) (1 when the maximum did not change, 0 before the first key);
# 3. the block's weights, exp(scores − new top), add their sum to `total` and their weighted sum of
#    the values to `acc`;
# 4. return (new top, new total, new acc), new tensors (the arguments stay as they are).
#
# - **Shapes:** `top`, `total` (..., T, 1); `acc` (..., T, Dv); `scores` (..., T, Sb)
#   (masked scores already at the dtype's minimum); `values` (..., Sb, Dv) → (top, total, acc) of
#   the same shapes.
# - **Watch for:** the running maximum, not the block's alone (an earlier block may be larger, and
#   exp(old − new) would then overflow); rescale both old sums; subtract the *new* maximum from the
#   block's scores; do not divide `acc` by `total` (that happens once, at the end).

# %%
row = torch.tensor([[1.0, 3.0, 0.5, 2.0, 8.0]])  # (T, S) = (1, 5): the scores of one query
values = torch.eye(5)  # (S, Dv): value j is the j-th unit vector, so acc / total shows the weights
### BEGIN SOLUTION
top, total, acc = torch.full((1, 1), torch.finfo(torch.float32).min), torch.zeros(1, 1), torch.zeros(1, 5)
for start in (0, 2, 4):  # blocks of 2, 2 and 1 keys
    block = slice(start, start + 2)
    top, total, acc = online_softmax_update(top, total, acc, row[:, block], values[block])
    print(f"after {start + row[:, block].shape[1]} keys: top {top.item():.1f}, total {total.item():.4f}")
print(acc / total)
print(row.softmax(dim=-1))  # the same weights, from the whole row at once
### END SOLUTION

# %% [markdown]
# *In your own words:* after the blocks [1, 3] and [0.5, 2], `total` is e^(1−3) + 1 + e^(0.5−3) +
# e^(2−3). The last block holds the score 8. What happens to `total` and `acc` then, and why is the
# final `acc / total` the softmax of the whole row, whatever the blocks were?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))  # (..., T, 1)
# rescale = torch.exp(top - new_top)  # (..., T, 1): what was summed under the old maximum
# weights = torch.exp(scores - new_top)  # (..., T, Sb), not yet normalised
# total = total * rescale + weights.sum(dim=-1, keepdim=True)  # (..., T, 1)
# acc = acc * rescale + weights @ values  # (..., T, Dv)
# return new_top, total, acc
# ```
#
# The score 8 is a new maximum, so everything summed so far, each term exp(s − 3), is multiplied
# by exp(3 − 8): it becomes exp(s − 8), the same terms measured from the new maximum. Then the
# block adds exp(8 − 8) = 1 to `total` and 1 · v₄ to `acc`. After any sequence of blocks, `total`
# is Σ exp(s_j − m) and `acc` is Σ exp(s_j − m) v_j over all keys, with m the maximum of all the
# scores: exactly the numerator and the denominator of softmax · V, shifted by the same m, which
# cancels in the ratio. Measuring from the running maximum keeps every exponent ≤ 0, so no
# exp overflows; the rescaling is what allows the maximum to change on the way.
# ### END SOLUTION

# %%
check("ex13_5")

# %% [markdown]
# When every check above passes, run [chapter 13](../chapters/13_modern_language_models.ipynb) again:
# its modern layers and its blocked attention then run on your code, and so does the language model
# that [chapter 14](../chapters/14_training_a_language_model.ipynb) trains.
