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
# # Chapter 04 — Multi-head attention
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/04_multi_head_attention.ipynb)
#
# One attention gives each query a single set of weights over the keys. Multi-head attention runs
# several attentions side by side, each on its own learned projection of the inputs, and mixes
# their results. This chapter builds it and checks it against PyTorch's `nn.MultiheadAttention`.
#
# **Learning goals**
#
# - write the heads of §3.2.2 as one batched computation: split the features into heads, attend,
#   merge the heads, apply $W^O$, with the shape of every tensor along the way;
# - count the parameters with a formula and check the count on the module;
# - use separate head sizes $d_k$ (queries, keys) and $d_v$ (values);
# - read per-head attention maps (built by hand here; trained ones in chapters 08 and 10);
# - reproduce `nn.MultiheadAttention` to float32 precision, converting its masks.
#
# **In the paper:** §3.2.2 (multi-head attention and its equation), §3.2.3 (where the Transformer
# uses it), and Table 3, rows (A) and (B): what the number of heads and the key size do to quality.

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

    use_course(course, chapter=True)  # your copy in your Google Drive (made by the first notebook you run)

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import torch
from torch import nn

from transformer_course import (
    MultiHeadAttention,
    merge_heads,
    relative_position_map,
    scaled_dot_product_attention,
    sinusoidal_positional_encoding,
    split_heads,
)
from transformer_course_tools.exercises.checks import run_check
from transformer_course_tools.notebook.diagrams import multihead_shapes
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("04")  # the short stop at an unwritten exercise; printing and plotting style

# %% [markdown]
# ## Where we are
#
# The model uses multi-head attention three times: self-attention in the encoder, masked
# self-attention and cross-attention in the decoder. One module, built in this chapter, serves all
# three. Its letter H, the number of heads (the paper writes $h$), already stood on chapter 03's
# map; this chapter says what a head is. The [notation page](../book/notation.md) lists the others.
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right, each a stack
# of layers above its embeddings and positional encodings. The three multi-head attention blocks
# are highlighted. The encoder's self-attention has weights of shape (B, H, S, S). In the decoder,
# masked self-attention has (B, H, T, T), and the cross-attention above it (B, H, T, S); its keys
# and values come from the encoder's output.
#
# </details>

# %%
architecture_map("multihead")

# %% [markdown]
# ## 1. Why more than one head?
#
# A row of attention weights is one probability distribution over the keys, and the output is one
# average. Say a word needs two different things at once: the word before it *and* the word after it.
# A single head has to blend them into one average, and the two pieces of information get smeared
# together. The paper's remedy (§3.2.2) is to project queries, keys and values $h$ times with
# different learned matrices, run attention on each projection in parallel, and combine:
#
# $$\mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\,W^O,
# \qquad \mathrm{head}_i = \mathrm{Attention}(QW_i^Q,\; KW_i^K,\; VW_i^V)$$
#
# with $W_i^Q, W_i^K \in \mathbb{R}^{d_\text{model} \times d_k}$, $W_i^V \in \mathbb{R}^{d_\text{model}
# \times d_v}$ and $W^O \in \mathbb{R}^{h d_v \times d_\text{model}}$. Each head works in its own
# small subspace, so each can specialise. The paper counts its heads from 1; the code and the
# figures of this chapter count them from 0, so the paper's $\mathrm{head}_1$ is our head 0. The
# paper uses $h = 8$ heads of size
# $d_k = d_v = d_\text{model}/h = 64$ for $d_\text{model} = 512$. Its Table 3, rows (A), varies $h$
# at constant cost. A single head scores 0.9 BLEU (the translation score of chapter 08) below the
# best setting, and very many small heads
# lose quality again.
#
# The diagram below follows one call of the module from bottom to top, with the shape of every
# tensor on the way. Sections 2 to 5 build it one step at a time. In code we write H for $h$, and Dk,
# Dv for $d_k$, $d_v$. Code that serves both, like `split_heads` in section 3, writes Dh: the
# features of one head.
#
# <details><summary>The diagram in words</summary>
#
# The queries' input, of shape (B, T, D), and the input of the keys and
# values, of shape (B, S, D), each go through one linear layer: $W^Q$, $W^K$ and $W^V$. Each layer
# makes H·Dk features (H·Dv for the values), drawn as H coloured blocks, one per head. `split_heads`
# turns the blocks into a head axis: (B, H, T, Dk). Attention runs on every head at once, with
# weights of shape (B, H, T, S), and returns (B, H, T, Dv). `merge_heads` puts the heads side by
# side again, (B, T, H·Dv). $W^O$ mixes them back to (B, T, D), the shape that came in.
#
# </details>

# %%
multihead_shapes(n_heads=3)  # H = 3, as in the code below

# %% [markdown]
# ## 2. All heads with one matrix multiply
#
# Written as a loop, each head has its own three small matrices. Place the $h$ matrices $W_i^Q$
# side by side, and you get one $d_\text{model} \times h d_k$ matrix. So *one* `nn.Linear` computes
# the queries of every head at once. The heads are then just consecutive blocks of its output
# features. Let us check that on random weights. One detail of PyTorch first: `nn.Linear` stores
# its weight as (out, in) and computes $x W^\top$, so the columns of the paper's matrix are the
# rows of `weight`. Head i's block is therefore a slice of rows, transposed.

# %%
B, T, D, H = 2, 7, 12, 3
d_k = D // H  # 4 features per head
x = torch.randn(B, T, D)
w_q = nn.Linear(D, H * d_k, bias=False)  # the H matrices W_i^Q side by side

all_heads = w_q(x)  # (B, T, H·Dk): one matrix multiply
for i in range(H):
    W_i = w_q.weight[i * d_k : (i + 1) * d_k].T  # (D, Dk): head i's W^Q (the paper's W_{i+1}^Q)
    assert torch.allclose(x @ W_i, all_heads[..., i * d_k : (i + 1) * d_k], atol=1e-6)
print("head i's queries are features", [f"{i * d_k}…{(i + 1) * d_k - 1}" for i in range(H)], "of one projection")

# %% [markdown]
# ## 3. Splitting into heads
#
# Attention (chapter 03) works on the last two axes, (length, features), and treats every axis in
# front as a batch. So we want a tensor of shape (B, H, T, Dh): for each sentence and each head, a
# (T, Dh) matrix. Two steps get there:
#
# 1. `view(B, T, H, Dh)` cuts the feature axis of each token into H blocks (this only
#    re-reads the same memory);
# 2. `transpose(1, 2)` moves the head axis in front of the token axis.
#
# Small integers make it easy to follow where each number goes. Token 0 holds 0…5 and token 1 holds
# 10…15. With 3 heads, each head gets two consecutive features of *each* token.

# %%
tiny = torch.tensor([[[0, 1, 2, 3, 4, 5], [10, 11, 12, 13, 14, 15]]])  # (B, T, D) = (1, 2, 6)
step1 = tiny.view(1, 2, 3, 2)  # (B, T, H, Dh)
step2 = step1.transpose(1, 2)  # (B, H, T, Dh)
for h in range(3):
    print(f"head {h}:", step2[0, h].tolist())
assert torch.equal(split_heads(tiny, 3), step2)


# %% [markdown]
# <details><summary>The figure in words</summary>
#
# Three small panels, one per head, each show a block of two rows (token 0
# and token 1) and two columns. Head 0 holds 0, 1 over 10, 11; head 1 holds 2, 3 over 12, 13; head
# 2 holds 4, 5 over 14, 15. The colour of a cell says which token its number came from, so every
# panel has one colour per row.
#
# </details>


# %%
def draw_heads(ax_row, heads, title):
    """One small panel per head: its (T, Dh) block, with the original feature numbers written in."""
    for h, ax in enumerate(ax_row):
        block = heads[0, h]
        ax.imshow(block // 10, cmap="Pastel1", vmin=0, vmax=8)  # colour = the token the number came from
        for t in range(block.shape[0]):
            for j in range(block.shape[1]):
                ax.text(j, t, block[t, j].item(), ha="center", va="center")
        ax.set_xticks([])
        ax.set_yticks(range(block.shape[0]), [f"token {t}" for t in range(block.shape[0])] if h == 0 else [])
        ax.set_title(f"head {h}")
    ax_row[0].figure.suptitle(title, y=1.12)


fig, axes = plt.subplots(1, 3, figsize=(8, 2))
draw_heads(axes, split_heads(tiny, 3), "split_heads: every head sees both tokens, each through its own features")
plt.show()

# %% [markdown]
# > **Common mistake — `view` without `transpose`.** Since the target shape is (B, H, T, Dh), it is
# > tempting to write `x.view(B, H, T, Dh)` directly. The shape is right and nothing crashes. But
# > `view` only re-reads memory in order. The first head is filled with the first T·Dh numbers,
# > which are simply the first features of the first token(s). The rows of a head no longer line up
# > with positions, and the heads no longer see the same tokens.
#
# <details><summary>The figure in words</summary>
#
# The same three panels, filled by the bug. Head 0 holds 0, 1 over 2, 3: both
# of its rows come from token 0. Head 1 holds 4, 5 over 10, 11, one row from each token. Head 2
# holds 12, 13 over 14, 15: both rows come from token 1.
#
# </details>


# %%
def split_heads_buggy(x, n_heads):
    b, t, d = x.shape
    return x.view(b, n_heads, t, d // n_heads)  # (B, H, T, Dh) in shape only


fig, axes = plt.subplots(1, 3, figsize=(8, 2))
draw_heads(axes, split_heads_buggy(tiny, 3), "The bug: head 0 sees only token 0, head 2 only token 1")
plt.show()

# %% tags=["hide-cell"]
# The check of exercise ex04_1 rejects the bug with a message that names it:
print(run_check("ex04_1", split_heads_buggy).line())

# %% [markdown]
# Colours show which token each number came from. With the bug, head 0 sees only token 0. Its row
# "token 1" holds features 2 and 3 of token 0, not features 0 and 1 of token 1. The label follows
# the shape; the numbers do not. A test of attention alone never sees this bug, because attention
# itself is correct; only a comparison with a correct split, or with PyTorch's own module (section
# 9), does. You can build such a reference yourself, without `view`: cut every token's features into H pieces with `chunk`, and stack the pieces along a new head axis.

# %%
reference = torch.stack(tiny.chunk(3, dim=-1), dim=1)  # (B, H, T, Dh): head h gets piece h of every token
print("split_heads       == chunk and stack:", torch.equal(split_heads(tiny, 3), reference))
print("split_heads_buggy == chunk and stack:", torch.equal(split_heads_buggy(tiny, 3), reference))

# %% [markdown]
# ## 4. Merging the heads and $W^O$
#
# After attention, each head returns (B, H, T, Dv). `merge_heads` undoes the split: transpose back
# to (B, T, H, Dv), then flatten the last two axes to H·Dv. This is the paper's
# $\mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)$.
#
# One subtlety: after a transpose the tensor is no longer laid out row by row in memory, so
# `view` refuses to flatten it; `reshape` copies when it has to.

# %%
heads = split_heads(tiny, 3).contiguous()  # (B, H, T, Dh), laid out head by head as attention returns it
back = heads.transpose(1, 2)  # (B, T, H, Dh)
print("contiguous after transpose:", back.is_contiguous())
try:
    back.view(1, 2, 6)
except RuntimeError as error:
    print("view fails:", str(error).split(" (")[0])  # the message's first clause
print("reshape works:", back.reshape(1, 2, 6).tolist())  # (B, T, H·Dh)
assert torch.equal(merge_heads(heads), tiny)
assert torch.equal(merge_heads(heads), torch.cat(heads.unbind(dim=1), dim=-1))  # Concat(head_1, …, head_h)

# %% [markdown]
# Why the extra matrix $W^O$? After concatenation, output features 0…Dv−1 come from head 0 only, the
# next Dv from head 1 only, and so on. The heads have not talked to each other yet. $W^O$ mixes
# them, so every output feature can combine what all heads found. (It also maps $h d_v$ back to
# $d_\text{model}$ when the two differ.) Below, changing what head 1 returns changes only its own
# block of the concatenation, but every feature after $W^O$.

# %%
head_outputs = torch.randn(1, H, T, d_k)  # (B, H, T, Dv), Dv = d_k here: what attention returned
changed = head_outputs.clone()
changed[:, 1] += 1.0  # head 1 finds something else
w_o = nn.Linear(H * d_k, D)
concat_diff = (merge_heads(changed) - merge_heads(head_outputs))[0, 0] != 0
mixed_diff = (w_o(merge_heads(changed)) - w_o(merge_heads(head_outputs)))[0, 0] != 0
print("features changed by head 1, before W^O:", concat_diff.int().tolist())
print("features changed by head 1, after  W^O:", mixed_diff.int().tolist())

# %% [markdown]
# ## 5. The module
#
# `MultiHeadAttention` puts the pieces of the diagram together: three projections, `split_heads`,
# chapter 03's attention on (B, H, T, Dk) tensors, `merge_heads`, and `w_o`. Its `dropout` argument
# is our addition to the paper: in training, `F.dropout` zeroes a share of the attention weights
# (`dropout_p`) before they average the values; in `eval()` it does nothing. The same module does
# self-attention, where query, key and value are the same sequence. It also does cross-attention
# (§3.2.3), where the queries come from the decoder and the keys and values from the encoder's
# output, called the *memory*. So the key length S may differ from T.
#
# With `need_weights=True` the module takes chapter 03's teaching path and returns one weight map
# per head, (B, H, T, S). Otherwise it takes the fast path (`F.scaled_dot_product_attention`) and
# returns `None` for the weights. (`nn.MultiheadAttention` averages the maps over the heads, unless
# you pass `average_attn_weights=False`.)
#
# Each head divides its scores by $\sqrt{d_k}$, the head's own size ($D/H$ by default), not $d_{model}$
# (§3.2.1 with §3.2.2). Chapter 03's experiment is about that size.
#
# After the module, section 6 looks inside the heads. Three short checks then close the chapter: its
# parameter count, its two head sizes, and PyTorch's own module.

# %%
torch.manual_seed(0)
B, T, S, D, H = 2, 7, 5, 12, 3
mha = MultiHeadAttention(d_model=D, n_heads=H)
target, memory = torch.randn(B, T, D), torch.randn(B, S, D)

out, weights = mha(target, memory, memory, need_weights=True)  # cross-attention
print("output ", tuple(out.shape), " weights", tuple(weights.shape), "(B, H, T, S)")

# the same thing by hand, from the module's own layers
q = split_heads(mha.w_q(target), H)  # (B, H, T, Dk)
k = split_heads(mha.w_k(memory), H)  # (B, H, S, Dk)
v = split_heads(mha.w_v(memory), H)  # (B, H, S, Dv)
heads, w = scaled_dot_product_attention(q, k, v)  # (B, H, T, Dv), (B, H, T, S)
by_hand = mha.w_o(merge_heads(heads))  # (B, T, D)
print("by hand == module:", torch.allclose(by_hand, out, atol=1e-6), torch.allclose(w, weights))  # outputs, weights

fast_out, no_weights = mha(target, memory, memory)  # need_weights=False: the fast path
print("fast path == teaching path:", torch.allclose(fast_out, out, atol=1e-6), "| weights:", no_weights)

# %% [markdown]
# ## 6. Looking at each head
#
# With the module built, we can look at what its heads do. Trained heads come later: chapter 08
# shows the cross-attention heads of a model trained to reverse strings, and chapter 10 every head
# of the shipped translator.
# Here we *build* four heads by hand, so we know what the maps should look like. The input is only
# the sinusoidal positional encoding of chapter 02. Chapter 02 showed that moving $k$ positions is
# a fixed linear map $M_k$ of the encoding (`relative_position_map`). So let a head's query
# projection apply $M_k$ and its key projection not: then query $t$ matches key $t + k$ best.
#
# - head 0 uses $M_{-1} = M_1^\top$, the turn of $M_1$ run backwards: each position looks at the one
#   before it;
# - head 1 uses $M_0$ (the identity): each position looks at itself;
# - head 2 uses $M_{+1}$: each position looks at the next one;
# - head 3 has an all-zero query projection: every score is 0, so its weights are uniform and it
#   averages the whole sequence.
#
# Each head uses the first 8 coordinates of the encoding (its 4 fastest frequencies). They are
# multiplied by 20 to make the maps crisp.
#
# <details><summary>The figure in words</summary>
#
# Four heatmaps, one per head, show the weights of 10 query positions (rows)
# over 10 key positions (columns). Head 0 has a dark diagonal one column left of the main diagonal,
# head 1 the main diagonal, and head 2 a diagonal one column to the right. At the edges, where the
# wanted key does not exist, the dark cell stays on the nearest position. Head 3 is one pale, even
# colour: every weight is the same.
#
# </details>

# %%
T, D, H = 10, 32, 4
positions = sinusoidal_positional_encoding(T, D)[None]  # (1, T, D)
heads_by_hand = MultiHeadAttention(D, H, bias=False)  # d_k = d_v = 8; no biases, only the matrices (section 7)
offsets = [-1, 0, 1, None]
with torch.no_grad():
    for i, offset in enumerate(offsets):
        rows = slice(i * 8, (i + 1) * 8)  # this head's block of the projections
        heads_by_hand.w_k.weight[rows] = torch.eye(D)[:8]  # key: the first 8 coordinates of PE(s)
        heads_by_hand.w_q.weight[rows] = 0.0 if offset is None else 20 * relative_position_map(offset, D)[:8]
    _, maps = heads_by_hand(positions, positions, positions, need_weights=True)  # (1, H, T, T)

titles = ["head 0: one back", "head 1: itself", "head 2: one ahead", "head 3: everything"]
fig, axes = plt.subplots(1, H, figsize=(14, 3.6))
for ax, m, title in zip(axes, maps[0], titles, strict=True):
    ax.imshow(m, cmap="Blues", vmin=0, vmax=1)
    ax.set_title(title)
    ax.set_xlabel("key position")
axes[0].set_ylabel("query position")
fig.suptitle("Four heads, one layer: each head attends by its own rule", y=1.02)
plt.show()

# %% [markdown]
# At the edges, the "one back" head at position 0 and the "one ahead" head at position 9 have no
# target, so they settle on the nearest position.
#
# Now section 1's reason for heads. Say each position carries one number, its own index, as its
# value. A single head that wants both neighbours must put half its weight on each: half of head 0's
# map plus half of head 2's. Two heads keep their maps apart:

# %%
index_values = torch.arange(T, dtype=torch.float)[:, None]  # (T, 1): position s carries the number s
one_head = (maps[0, 0] + maps[0, 2]) / 2 @ index_values  # (T, 1): half the weight on each neighbour
two_heads = torch.cat([maps[0, 0] @ index_values, maps[0, 2] @ index_values], dim=-1)  # (T, 2): heads 0 and 2
print("position 5, one head with both neighbours:", [round(x, 1) for x in one_head[5].tolist()])
print("position 5, head 0 and head 2 side by side:", [round(x, 1) for x in two_heads[5].tolist()])
itself = maps[0, 1] @ index_values  # (T, 1): head 1, each position reading itself
print("position 5, head 1 (itself):", [round(x, 1) for x in itself[5].tolist()])

# %% tags=["hide-cell"]
from transformer_course_tools.notebook.claims import expect_at_most

inner = slice(1, T - 1)  # positions with both neighbours
expect_at_most("one head with both neighbours returns what head 1 returns, at every inner position (largest gap)",
               (one_head[inner] - itself[inner]).abs().max().item(), 0.05)
expect_at_most("heads 0 and 2 return the neighbours' indices t - 1 and t + 1 (largest gap)",
               (two_heads[inner] - torch.cat([itself[inner] - 1, itself[inner] + 1], dim=-1)).abs().max().item(), 0.05)

# %% [markdown]
# The single head returns 5.0, the average of 4 and 6. That is also what head 1 returns by looking
# at position 5 itself: the blend mixes the two neighbours' values into one. Heads 0 and 2 return
# 4.0 and 6.0 in separate features of the concatenation, and $W^O$ receives both.
#
# Keep these four patterns in mind: trained models have been found to learn rules like these by themselves.
# Voita et al. (2019) found "positional" heads in a trained translator that attend to the previous
# or the next token. Clark et al. (2019) found heads in BERT that spread their weight broadly over
# the whole sentence. A model that reverses strings has an *anti*-diagonal (chapter 08, section 6).
# Chapter 10 shows that the trained translator has heads that jump across the sentence to the
# English word a German piece needs.
#
# <details><summary>Why a trained head need not read distances</summary>
#
# The part of a head's score that comes from positions $p$ and $q$ is
# $PE_p^\top W PE_q$, with $W = W^Q (W^K)^\top$, the two projections of the head. With chapter 02's
# rotations, $PE_p = M_p PE_0$ and $M_p^\top = M_{-p}$ (a rotation turned back). So the score is
# $PE_0^\top M_{-p} W M_q PE_0$. If $W$ commutes with every rotation $M_k$, then
# $M_{-p} W M_q = W M_{-p} M_q = W M_{q-p}$: the score depends on the distance alone. The heads
# built above are such a case: their $W$ is a rotation times 20 on the first eight features and
# zero elsewhere, and rotations of the same pairs commute. A
# learned $W$ need not commute with them, and its score is then in general no longer a function of
# $p - q$ alone. So a trained head *can* read distances from the sinusoids, but nothing forces it to.
#
# </details>

# %% [markdown]
# ## 7. Counting parameters
#
# Each projection is a weight matrix plus a bias. The paper's equations have no bias, but
# `nn.MultiheadAttention` has one, so ours does too by default:
#
# | layer | weight | bias |
# | --- | --- | --- |
# | $W^Q$ (all heads) | $d_\text{model} \cdot h d_k$ | $h d_k$ |
# | $W^K$ | $d_\text{model} \cdot h d_k$ | $h d_k$ |
# | $W^V$ | $d_\text{model} \cdot h d_v$ | $h d_v$ |
# | $W^O$ | $h d_v \cdot d_\text{model}$ | $d_\text{model}$ |
#
# With the paper's choice $d_k = d_v = d_\text{model}/h$, every $h d_k$ equals $d_\text{model}$. The
# total is then $4d_\text{model}^2 + 4d_\text{model}$, whatever the number of heads.
#
# The end of §3.2.2 makes this point about *computational cost*: each head is smaller, so all $h$
# heads together cost about as much as one head of full width. The cost follows the same count as
# the parameters. The four projections take $4d_\text{model}^2$ multiply-adds per token, whatever
# $h$. And for one query, the scores of $h$ heads of size $d_\text{model}/h$ over $n$ keys take
# $n \cdot h \cdot d_\text{model}/h = n \cdot d_\text{model}$ multiply-adds, as for one head of
# full width. The table below checks the parameter count; the cost rests on the argument above.


# %%
def mha_parameters(d_model, n_heads, d_k, d_v):
    """The formula of the table above."""
    q_and_k = 2 * (d_model * n_heads * d_k + n_heads * d_k)
    v = d_model * n_heads * d_v + n_heads * d_v
    o = n_heads * d_v * d_model + d_model
    return q_and_k + v + o


def count(module):
    return sum(p.numel() for p in module.parameters())


d_model = 512
print(f"{'heads':>5} {'d_k':>4} {'formula':>10} {'ours':>10} {'nn.MultiheadAttention':>22}")
for h in (1, 2, 8, 16):
    ours = MultiHeadAttention(d_model, h)
    theirs = nn.MultiheadAttention(d_model, h, batch_first=True)
    formula = mha_parameters(d_model, h, d_model // h, d_model // h)
    assert formula == count(ours) == count(theirs) == 4 * d_model**2 + 4 * d_model
    print(f"{h:>5} {d_model // h:>4} {formula:>10,} {count(ours):>10,} {count(theirs):>22,}")

# %% [markdown]
# ## 8. Separate sizes for keys and values
#
# Nothing forces $d_k = d_v$, or $h d_k = d_\text{model}$. The size of queries and keys sets how
# rich the *comparison* is; the size of values sets how much each head can *carry* back. The paper
# keeps them equal, but explores the key size in Table 3, row (B): a smaller $d_k$ hurts quality.
# Our module accepts both sizes explicitly:

# %%
mha_kv = MultiHeadAttention(d_model=12, n_heads=3, d_k=4, d_v=6)
target, memory = torch.randn(2, 7, 12), torch.randn(2, 5, 12)  # (B, T, D), (B, S, D), as in section 5
for name in ("w_q", "w_k", "w_v", "w_o"):
    layer = getattr(mha_kv, name)
    print(f"{name}: {layer.in_features:>2} → {layer.out_features:>2}")
out, weights = mha_kv(target, memory, memory, need_weights=True)
print("output", tuple(out.shape), " weights", tuple(weights.shape))
assert count(mha_kv) == mha_parameters(12, 3, 4, 6)
print("parameters:", count(mha_kv), "= formula", mha_parameters(12, 3, 4, 6))

# %% [markdown]
# The weights cannot depend on $d_v$: $\mathrm{softmax}(QK^\top/\sqrt{d_k})$ has no $V$ in it. And the output is
# back at $d_\text{model} = 12$ thanks to $W^O$ (18 → 12).
#
# ## 9. Equal to `nn.MultiheadAttention`
#
# PyTorch's module computes the same function, so with the same weights it must give the same
# numbers. `MultiHeadAttention.from_torch` copies them. Two differences need care:
#
# - PyTorch stores $W^Q$, $W^K$, $W^V$ stacked in one `in_proj_weight` of shape
#   $(3d_\text{model}, d_\text{model})$; `from_torch` cuts it in three;
# - its `key_padding_mask` (B, S) and boolean `attn_mask` (T, S) are True where attention is
#   *blocked*, the opposite of ours (chapter 03). So PyTorch gets both masks flipped, `~is_real`
#   and `~causal`, and ours gets the one mask `is_real & causal` (True = may attend).

# %%
torch.manual_seed(0)
B, T, D, H = 2, 7, 12, 3
torch_mha = nn.MultiheadAttention(D, H, batch_first=True)
with torch.no_grad():  # PyTorch starts the biases at zero; make them matter for the comparison
    torch_mha.in_proj_bias.normal_()
    torch_mha.out_proj.bias.normal_()
ours = MultiHeadAttention.from_torch(torch_mha)
print("in_proj_weight", tuple(torch_mha.in_proj_weight.shape), "→ w_q, w_k, w_v", tuple(ours.w_q.weight.shape))

x = torch.randn(B, T, D)
lengths = torch.tensor([7, 4])  # the second sentence has 3 padding positions
is_real = torch.arange(T)[None, :] < lengths[:, None]  # (B, T), True = real token
causal = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T), True = may attend
our_mask = is_real[:, None, None, :] & causal  # (B, 1, T, T): ours, True = may attend

with torch.no_grad():
    want, want_weights = torch_mha(
        x, x, x, key_padding_mask=~is_real, attn_mask=~causal, average_attn_weights=False
    )  # PyTorch's masks: True = blocked
    teaching, weights = ours(x, x, x, our_mask, need_weights=True)
    fast, _ = ours(x, x, x, our_mask)
print("teaching path == nn.MultiheadAttention:", torch.allclose(teaching, want, atol=1e-6))
print("fast path     == nn.MultiheadAttention:", torch.allclose(fast, want, atol=1e-6))
print("weights (B, H, T, S) equal:", torch.allclose(weights, want_weights, atol=1e-6))

with torch.no_grad():
    wrong = ours(x, x, x, ~our_mask)[0]  # forgetting to flip the polarity
print("with PyTorch's polarity passed to ours:", torch.allclose(wrong, want, atol=1e-6))

# %% [markdown]
# Both of our paths reproduce PyTorch to float32 precision, with the padding and the causal mask
# combined. A mask passed without flipping it gives a different (and wrong) answer, without any
# error.

# %% [markdown]
# ## Summary
#
# - Multi-head attention (§3.2.2) runs $h$ attentions on different learned projections and mixes
#   their outputs with $W^O$; each head can follow its own rule.
# - In code, the heads are blocks of one projection: `split_heads` = `view(B, T, H, Dh)` +
#   `transpose(1, 2)`, `merge_heads` = `transpose(1, 2)` + `reshape`. A `view` straight to
#   (B, H, T, Dh) has the right shape and the wrong contents.
# - Parameters: $2 d_\text{model} h d_k + 2 d_\text{model} h d_v$ weights plus biases, i.e.
#   $4d_\text{model}^2 + 4d_\text{model}$ when $d_k = d_v = d_\text{model}/h$, independent of $h$.
# - `need_weights=True` returns one map per head, (B, H, T, S); otherwise the fast path runs.
# - `MultiHeadAttention.from_torch` reproduces `nn.MultiheadAttention`, whose masks we flip.
# - Heads built by hand read the previous, the same or the next position, or everything: one head
#   that needs both neighbours blends them, two heads keep them apart. That is why there are heads.
#
# Chapter 05 wraps this module into an encoder layer with a feed-forward network, residual
# connections and layer normalisation.
#
# **Exercises:**
# [exercises/ex04_multi_head_attention.ipynb](../exercises/ex04_multi_head_attention.ipynb) asks you
# to write `split_heads` (ex04_1), `merge_heads` (ex04_2) and `MultiHeadAttention.forward` (ex04_3).
# Stuck on one? `python -m transformer_course restore ex04_1` puts its worked answer in your student
# edition.

# %% [markdown]
# ## Check yourself
#
# 1. Why does `split_heads` need a `transpose` after the `view`, and what goes wrong with a `view`
#    straight to (B, H, T, $d_k$)?
#    <details><summary>Answer</summary>
#
#    `view(B, T, H, d_k)` cuts each token's features into heads; the transpose then puts the head axis
#    in front. A direct `view` reads memory in order. So a head receives consecutive features of the
#    first token(s) instead of its own slice of every token: right shape, wrong contents.
#    </details>
# 2. How many parameters does a multi-head attention layer have when $d_k = d_v = d_{model}/h$?
#    <details><summary>Answer</summary>
#
#    $4 d_{model}^2 + 4 d_{model}$ (four matrices and their biases), whatever the number of heads.
#    </details>
# 3. What does $W^O$ do that the concatenation does not?
#    <details><summary>Answer</summary>
#
#    After the concatenation each output feature comes from one head only; $W^O$ mixes all heads into
#    every feature (and maps $h d_v$ back to $d_{model}$).
#    </details>
# 4. Which tensors give the queries, the keys and the values in cross-attention?
#    <details><summary>Answer</summary>
#
#    Queries from the decoder's states, keys and values from the encoder's output (the memory), so
#    the weights have shape (B, H, T, S).
#    </details>
# 5. Why could one head not follow "the previous word" and "the next word" at the same time?
#    <details><summary>Answer</summary>
#
#    One head gives each query one distribution over the keys and returns one average. Splitting the
#    weight between two positions blends their values. Two heads keep them apart.
#    </details>
#
# ## Further reading
#
# - The paper: §3.2.2 (multi-head attention), §3.2.3 (its three uses), Table 3 rows (A) and (B).
# - Voita et al. (2019), *Analyzing Multi-Head Self-Attention: Specialized Heads Do the Heavy
#   Lifting, the Rest Can Be Pruned*: positional, syntactic and rare-word heads in a trained
#   translator.
# - Michel, Levy and Neubig (2019), *Are Sixteen Heads Really Better than One?*: many heads can be
#   removed after training with little loss.
# - Clark et al. (2019), *What Does BERT Look At?*: per-head attention maps of a large model.
# - Shazeer (2019), *Fast Transformer Decoding: One Write-Head is All You Need*: heads that share
#   their keys and values, for faster decoding.

# %% [markdown]
# **Next:** [Chapter 05 — The encoder: feed-forward networks, residuals and layer
# normalisation](05_encoder.ipynb): multi-head attention becomes a layer of the encoder, with a
# feed-forward network, residuals and LayerNorm.
