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
# # Chapter 02 — Positional encoding
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/02_positional_encoding.ipynb)
#
# "The dog bit the man" and "the man bit the dog" contain the same tokens. A recurrent network,
# which reads the tokens one at a time, tells them apart by the order it reads them in. Attention
# compares all tokens with all tokens at once, and by itself it has no idea which came first. The
# Transformer fixes this: it adds to every token embedding a vector that depends only on the
# token's position.
#
# **Learning goals**
#
# - show with a few lines of code that attention alone cannot see word order;
# - write down the sinusoidal table of §3.5 and read its heatmap;
# - check numerically that moving $k$ positions ahead is one fixed rotation of the encoding,
#   whatever the starting position;
# - see that the dot product of two encodings depends only on their distance;
# - add the table to a batch-first tensor correctly, and compare with learned position vectors.
#
# **In the paper:** §3.5 (positional encoding, the sine/cosine formula and the linear-map
# argument), Table 3 row (E) for learned positions, §5.4 for the dropout applied to the sum.

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
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from transformer_course import (
    LearnedPositionalEmbedding,
    PositionalEncoding,
    TokenEmbedding,
    Vocab,
    relative_position_map,
    sinusoidal_positional_encoding,
    tokenize,
)
from transformer_course_tools.exercises.checks import run_check
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("02")  # the short stop at an unwritten exercise; printing and plotting style

# %% [markdown]
# ## Where we are
#
# The positional encoding is added to the token embeddings of chapter 01, on both sides of the
# model, before the first layer. The [notation page](../book/notation.md) lists the letters on the
# arrows.
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right. On each side,
# token ids enter at the bottom and become vectors in a token embedding. The next box, highlighted
# on both sides, adds the positional encoding; the shape stays (B, S, D) in the encoder and
# (B, T, D) in the decoder. Above it rise the encoder's and the decoder's stacks of attention and
# feed-forward layers, and at the top of the decoder a linear layer and a softmax.
#
# </details>

# %%
architecture_map("positional")

# %% [markdown]
# ## 1. Attention alone does not see order
#
# Take five token vectors and let them attend to each other. (Attention is the function that
# chapter 03 builds; here we use PyTorch's own, `F.scaled_dot_product_attention`.) For each token,
# attention returns a weighted average of all the token vectors. The weights come from dot products
# between the vectors. Nothing in that computation refers to a token's place. Now shuffle the tokens
# and do it again. The outputs come out shuffled in the same way and are otherwise *identical*: every token gets the same result
# wherever it stands. In the paper's words, the model has "no recurrence and no convolution" (§3.5),
# so order has to be put into the input. The cell then adds one vector per position and shuffles
# again. Any five different vectors will do here; section 2 builds the paper's.

# %%
x = torch.randn(1, 5, 8)  # (B, S, D): five token vectors
shuffle = torch.tensor([3, 0, 4, 1, 2])
out = F.scaled_dot_product_attention(x, x, x)  # (B, S, D)
out_shuffled = F.scaled_dot_product_attention(x[:, shuffle], x[:, shuffle], x[:, shuffle])
print("without positions: attention(shuffled x) == shuffled attention(x)?",
      torch.allclose(out_shuffled, out[:, shuffle], atol=1e-6))

pe = torch.randn(5, 8)  # (S, D): one vector per position, random for now
with_pos = x + pe
with_pos_shuffled = x[:, shuffle] + pe  # same tokens, new places, same position vectors
out = F.scaled_dot_product_attention(with_pos, with_pos, with_pos)
out_shuffled = F.scaled_dot_product_attention(with_pos_shuffled, with_pos_shuffled, with_pos_shuffled)
print("with positions:    attention(shuffled x) == shuffled attention(x)?",
      torch.allclose(out_shuffled, out[:, shuffle], atol=1e-6))

# %% [markdown]
# With positions added, the shuffled outputs differ: order is now visible to attention.
#
# ## 2. The sinusoidal table
#
# The paper's position vectors have the same width $d_{model}$ as the embeddings, so the two can
# simply be added. Write $pos$ for a position and $i$ for the index of a pair of columns. Columns
# $2i$ and $2i+1$ hold a sine and a cosine of the position, each pair with its own frequency (§3.5):
#
# $$PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right), \qquad
#   PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right).$$
#
# Write $\omega_i = 10000^{-2i/d_{model}}$ for the angular frequency of pair $i$. Pair 0 turns by
# one radian per position, a wavelength of $2\pi$ positions. Each next pair is slower by the same
# factor, up to a wavelength of almost $10000 \cdot 2\pi$ for the last one. So the wavelengths form
# a geometric progression. Think of a clock with $d_{model}/2$ hands: the fast hands tell
# neighbouring positions apart, the slow hands tell apart positions far from each other.
#
# By hand, one entry at a time, and the package's `sinusoidal_positional_encoding` (exercise
# `ex02_1`):

# %%
max_len, d = 4, 6
by_hand = torch.zeros(max_len, d)
for pos in range(max_len):
    for i in range(d // 2):
        angle = pos / 10000 ** (2 * i / d)
        by_hand[pos, 2 * i] = math.sin(angle)
        by_hand[pos, 2 * i + 1] = math.cos(angle)
table = sinusoidal_positional_encoding(max_len, d)
assert torch.allclose(table, by_hand, atol=1e-6)
print(table)

# %%
d_model = 512
wavelengths = [2 * math.pi * 10000 ** (2 * i / d_model) for i in range(d_model // 2)]
print(f"d_model={d_model}: {d_model // 2} wavelengths from {wavelengths[0]:.2f} to {wavelengths[-1]:,.0f} positions")
print(f"each one {wavelengths[1] / wavelengths[0]:.4f} times the previous")

# %% [markdown]
# <details><summary>The figure in words</summary>
#
# On the left, the table for 100 positions and 64 columns is drawn as a
# heatmap, blue for +1 and red for −1. Its first columns change colour every few rows, while its
# last columns keep one colour from top to bottom. On the right, four sine columns are drawn
# against the position. The first oscillates quickly, each next one more slowly. The last, with
# the longest wavelength, covers only about a fifth of its period: it rises from 0 to nearly 1
# and has not yet turned. The legend sits below the plot.
#
# </details>

# %%
table = sinusoidal_positional_encoding(100, 64)  # (positions, D)
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1.1, 1]})
image = left.imshow(table, cmap="RdBu", aspect="auto", vmin=-1, vmax=1)
left.set(xlabel="column (2i: sine, 2i+1: cosine)", ylabel="position", title="PE table, 100 positions × 64 columns")
fig.colorbar(image, ax=left, fraction=0.05)
for column in (6, 14, 22, 30):
    right.plot(table[:, column], label=f"column {column}: wavelength {2 * math.pi * 10000 ** (column / 64):.0f}")
right.set(xlabel="position", ylabel="value", title="Four sine columns: wavelengths grow geometrically")
right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, fontsize=8)
fig.suptitle("Early columns oscillate fast, late columns barely move: every row is a different pattern")
fig.tight_layout()
plt.show()

# %% [markdown]
# Every entry stays in $[-1, 1]$ and every row has the same length $\sqrt{d_{model}/2}$ (each
# sine-cosine pair contributes $\sin^2 + \cos^2 = 1$). Chapter 01 used this length to motivate
# its $\sqrt{d_{model}}$ factor: with the factor, token vectors and positional vectors start with
# comparable lengths ([chapter 11](11_testing_the_papers_choices.ipynb) tests whether that matters).
#
# ## 3. Moving $k$ positions ahead is a rotation
#
# §3.5 gives the reason for choosing sinusoids. For any fixed offset $k$, $PE_{pos+k}$ is a *linear
# function* of $PE_{pos}$. The
# authors hoped this would make it easy for the model to attend by relative position. Where does the
# linear function come from? Pair $i$ of row $pos$ is the point $(\sin \omega_i pos, \cos \omega_i
# pos)$ on the unit circle, and the angle-addition formulas
#
# $$\sin(\omega(pos+k)) = \sin(\omega\,pos)\cos(\omega k) + \cos(\omega\,pos)\sin(\omega k),$$
# $$\cos(\omega(pos+k)) = \cos(\omega\,pos)\cos(\omega k) - \sin(\omega\,pos)\sin(\omega k)$$
#
# say that stepping $k$ positions ahead multiplies the pair by the $2 \times 2$ matrix
# $\begin{pmatrix} \cos \omega k & \sin \omega k \\ -\sin \omega k & \cos \omega k \end{pmatrix}$.
# That is a rotation, and it contains $k$ but not $pos$. Put one such block per pair on the
# diagonal, and you get a $d_{model} \times d_{model}$ matrix $M_k$ with
#
# $$PE_{pos+k} = M_k \, PE_{pos} \quad \text{for every } pos.$$
#
# `relative_position_map(k, d_model)` builds $M_k$ (exercise `ex02_3`). We check one block against
# the formula, then the property on every position of a table:

# %%
k, d_model = 3, 16
M = relative_position_map(k, d_model)  # (D, D)
omega_0 = 1.0  # pair 0: 10000^0
block = torch.tensor([[math.cos(omega_0 * k), math.sin(omega_0 * k)], [-math.sin(omega_0 * k), math.cos(omega_0 * k)]])
assert torch.allclose(M[:2, :2], block, atol=1e-6)

table = sinusoidal_positional_encoding(60, d_model)  # (60, D)
moved = table[:-k] @ M.T  # row vectors: (M PE[pos])ᵀ = PE[pos]ᵀ Mᵀ, for pos = 0 … 56
error = (moved - table[k:]).abs().max().item()
assert error < 1e-5
print(f"PE[pos + {k}] = M_{k} PE[pos] holds for all {len(moved)} positions to within 1e-5 (measured: {error:.1e})")
orthogonal = torch.allclose(M @ M.T, torch.eye(d_model), atol=1e-6)
print("M_k is a rotation: orthogonal (M Mᵀ = I) and det M = +1:", orthogonal and bool(abs(torch.linalg.det(M) - 1) < 1e-5))
print("M_2 M_3 = M_5:", torch.allclose(relative_position_map(2, 16) @ relative_position_map(3, 16),
                                      relative_position_map(5, 16), atol=1e-6))

# %% [markdown]
# <details><summary>The figure in words</summary>
#
# On the left, M_3 for d_model = 16 is drawn as a heatmap with a colour
# bar: 2 × 2 blocks sit along the diagonal and every other entry is 0. The first blocks hold
# clearly positive and negative numbers; the last ones are nearly the identity, because their pairs
# turn slowly. The middle and right panels draw pairs 1 and 2 of positions 0 to 19 as dots on the
# unit circle. In each, two arrows go from position 1 to position 4 and from position 9 to position
# 12. The two arrows of a panel turn by the same angle: larger for the faster pair 1, smaller for
# pair 2.
#
# </details>

# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 4.4))
image = axes[0].imshow(M, cmap="RdBu", vmin=-1, vmax=1)
fig.colorbar(image, ax=axes[0], fraction=0.046)
axes[0].set(title=f"M_{k} for d_model={d_model}:\n2×2 rotation blocks on the diagonal", xlabel="column", ylabel="row")
axes[0].set_xticks(range(0, d_model, 2))
axes[0].set_yticks(range(0, d_model, 2))
positions = torch.arange(0, 20)
circle = torch.linspace(0, 2 * math.pi, 200)
for ax, pair, color in ((axes[1], 1, "tab:blue"), (axes[2], 2, "tab:orange")):
    sin, cos = table[positions, 2 * pair], table[positions, 2 * pair + 1]
    ax.plot(torch.cos(circle), torch.sin(circle), color="lightgrey")
    ax.plot(sin, cos, "o", color=color, markersize=4)
    for p in (1, 9):  # the same turn of k positions, from two different starting points
        ax.annotate("", xy=(sin[p + k], cos[p + k]), xytext=(sin[p], cos[p]),
                    arrowprops={"arrowstyle": "->", "color": "black", "linewidth": 1.5})
        for q in (p, p + k):  # label the start and the end of the arrow, just outside the circle
            outward = (20 * sin[q].item(), 20 * cos[q].item())  # points, away from the centre
            ax.annotate(f"pos {q}", (sin[q], cos[q]), textcoords="offset points", xytext=outward, fontsize=10,
                        ha="center", va="center")
    omega = 10000 ** (-2 * pair / d_model)
    ax.set(xlim=(-1.35, 1.35), ylim=(-1.35, 1.35))  # room for the labels outside the circle
    ax.set(xlabel=f"column {2 * pair} (sine)", ylabel=f"column {2 * pair + 1} (cosine)", aspect="equal",
           title=f"pair {pair}, ω = {omega:.3f}:\n+{k} positions = a turn of {omega * k:.2f} rad")
fig.suptitle(f"Each (sin, cos) pair walks around a circle; +{k} positions is the same turn from anywhere")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 4. Similarity depends only on the distance
#
# Attention (chapter 03) scores pairs of tokens by dot products. How alike are two positions'
# encodings by that measure? Their dot product follows from the same formulas:
#
# $$PE_{p} \cdot PE_{q} = \sum_i \big(\sin \omega_i p \,\sin \omega_i q + \cos \omega_i p \,\cos \omega_i q\big)
#   = \sum_i \cos\big(\omega_i (p - q)\big).$$
#
# Only the distance $p - q$ appears: two positions 5 apart are exactly as similar at the start of
# a sentence as at its end. The cell below checks it on a table of 128 positions and
# $d_{model} = 64$, and prints how the similarity changes with the distance.

# %%
d_model = 64
table = sinusoidal_positional_encoding(128, d_model)  # (128, D)
similarity = table @ table.T  # (128, 128)
for offset in (0, 1, 10, 16, 57):
    diagonal = torch.diagonal(similarity, offset)
    same = torch.allclose(diagonal, diagonal[:1].expand_as(diagonal), atol=1e-4)
    print(f"distance {offset:2}: similarity {diagonal[0].item():5.1f}, the same for all {len(diagonal):3} pairs: {same}")
beyond_10 = similarity[0, 11:64]  # distances 11 … 63
print(f"distances 11 to 63: between {beyond_10.min().item():.1f} and {beyond_10.max().item():.1f}, up and down")

# %% [markdown]
# <details><summary>The figure in words</summary>
#
# On the left, the dot products of 128 encodings with each other form a
# heatmap: bright along the main diagonal, and constant along every line parallel to it. On the
# right, the dot product of position 64 with its neighbours is drawn against the distance, from −64
# to 63. The dots peak at distance 0, fall steeply over the first few positions on each side, then
# slowly to distance ten.
# Further out they sink only on average: they rise and fall in waves between about 13 and 21.
# Every dot lies exactly on the black curve of the formula Σ cos(ω_i · distance).
#
# </details>

# %%
distances = torch.arange(-64, 64)
omega = 10000 ** (-torch.arange(0, d_model, 2) / d_model)  # (D/2,)
closed_form = torch.cos(distances[:, None] * omega).sum(dim=1)  # Σ_i cos(ω_i (p − q))
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
image = left.imshow(similarity, cmap="viridis")
left.set(xlabel="position q", ylabel="position p", title="PE_p · PE_q: constant along every diagonal")
fig.colorbar(image, ax=left, fraction=0.046)
right.plot(distances, similarity[64, distances + 64], "o", markersize=3, label="PE_64 · PE_(64 + distance)")
right.plot(distances, closed_form, color="black", linewidth=1, label="Σ cos(ω_i · distance)")
right.set(xlabel="distance q − p", ylabel="dot product", title="Similarity vs distance")
right.legend(fontsize=8)
fig.suptitle("Only the distance matters: a steep peak for neighbours, then waves")
fig.tight_layout()
plt.show()

# %% [markdown]
# The similarity is largest at distance 0, where it equals $d_{model}/2 = 32$. It falls steeply over
# the first few positions, then slowly, to about 21 at distance ten. Further out it sinks only on
# average: waves ride on top, between about 13 and 21, and distance 57 scores about as high as
# distance 16. So the raw encodings tell a neighbour from a distant position, but they do not rank
# distant positions by how far they are.
#
# These are properties of the raw encodings. Attention does not compare them directly: it first
# multiplies each vector by matrices it learns (chapter 04), and those can mix the features.
# Chapter 04 (section 6, and its box "Why a trained head need not read distances") shows how a head
# can still read distances, and why it need not. Chapter 13 returns to
# this.

# %% [markdown]
# ## 5. Adding the table to a batch
#
# `PositionalEncoding` computes the table once, for up to `max_len` positions. Its input x is
# *batch-first*: the batch axis comes first, then the positions, then the features, as in
# (B, S, D) or (B, T, D). (Older code put the positions first: (T, B, D).) The module adds the
# first `x.size(1)` rows of the table to x: S rows for a source batch, T for a target batch. That
# slice broadcasts over the batch, so every sentence gets row 0 at its first token, row 1 at its
# second, and so on.
#
# After the addition comes *dropout*, which sets random features to zero during training so that
# the model cannot rely on any single one. It multiplies the features it keeps by
# $1/(1 - P_{drop})$, so that their expected value does not change; at evaluation it does nothing.
# §5.4 applies it to the sums of embeddings and positional encodings, at a rate $P_{drop} = 0.1$
# for the base model. You write `forward` in exercise `ex02_2`. The cell below calls `.eval()`, so
# it checks the sum without dropout.

# %%
vocab_size, d_model = 20, 16
embed = TokenEmbedding(vocab_size, d_model)
positional = PositionalEncoding(d_model, max_len=50, dropout=0.1).eval()  # eval: no dropout here
tokens = torch.randint(0, vocab_size, (3, 7))  # (B, T)
x = embed(tokens)  # (B, T, D)
out = positional(x)  # (B, T, D)
by_hand = x + sinusoidal_positional_encoding(50, d_model)[: x.shape[1]]  # (B, T, D) + (T, D)
assert torch.allclose(out, by_hand)
print("tokens", tuple(tokens.shape), "→ embeddings", tuple(x.shape), "→ with positions", tuple(out.shape))

# %% [markdown]
# `forward(x, offset=L)` reads the rows L … L+T−1 instead: x is then the continuation of a longer
# sequence, starting at position L. Chapter 09 needs this when it writes a translation one token at
# a time, each new token at the next position. Tokens 4–6, given alone with `offset=4`, get the
# same vectors as inside the whole sentence:

# %%
continued = positional(x[:, 4:], offset=4)  # (B, 3, D): tokens 4… as the continuation of a sequence
print("same vectors as in the whole sentence:", torch.allclose(continued, out[:, 4:]))

# %% [markdown]
# The table is registered as a *buffer*. It follows `.to(device)` and `.to(dtype)` like a weight,
# but it is not a parameter: nothing learns it. And since it is a formula, it is not saved in the
# `state_dict` either (`persistent=False`):

# %%
print("buffers:", [name for name, _ in positional.named_buffers()], "| state_dict:", list(positional.state_dict()))
print("after .to(torch.float64) the table is", positional.to(torch.float64).pe.dtype)

# %% [markdown]
# > **Common mistake — taking the length from `x.size(0)`.** Code written for sequence-first
# > tensors (T, B, D), as in older PyTorch examples, slices the table with `x.size(0)`. On a
# > batch-first tensor that is the *batch size*. With B = T the result is even right, by
# > coincidence, until a batch of another size comes. With B = 1 every
# > position silently gets row 0 of the table, so the model sees no order at all. With T = 1 < B
# > (one new token a step, chapter 09) the output silently grows to (B, B, D). Otherwise the
# > addition raises a broadcasting error. A batch of one shows the silent case:


# %%
def forward_sequence_first(self, x):
    return self.dropout(x + self.pe[: x.size(0)].to(x.dtype))  # the bug: x.size(0) is B, not T


positional = PositionalEncoding(d_model=8, max_len=50)
wrong = forward_sequence_first(positional, torch.zeros(1, 6, 8))  # one sentence of 6 tokens
print("all 6 positions got the same vector:", torch.allclose(wrong[0], wrong[0, :1].expand(6, 8)))

# %% tags=["hide-cell"]
# The check of exercise ex02_2 rejects the bug with a message that names it:
print(run_check("ex02_2", forward_sequence_first).line())

# %% [markdown]
# ## 6. Learned positions instead of sinusoids
#
# The obvious alternative is a second embedding table, one trainable vector per position
# (`LearnedPositionalEmbedding`). The paper tried it and found practically the same quality (Table
# 3, row (E): 25.7 BLEU against 25.8 for the sinusoids on the development set). BLEU scores a
# translation from 0 to 100 by the word sequences it shares with a reference translation; chapter 08
# defines it.
#
# The authors kept the sinusoids because they *may* let the model handle sentences longer than any
# it saw in training (§3.5). The paper does not test it. A learned table cannot even promise that.
# It has no vector beyond its `max_len`, and the rows of positions that never occurred in training
# get no gradient, so they stay random. The sinusoids are at least defined everywhere: the cell's
# last line checks that they keep section 3's rotation rule at positions 500–999, far beyond the
# learned table's rows. That is a property of the formula, not of a trained model. Whether a model
# can *use* them beyond its training lengths is another question, which [chapter
# 11](11_testing_the_papers_choices.ipynb) puts to a test.

# %%
learned = LearnedPositionalEmbedding(d_model=16, max_len=64)
training_batch = torch.randn(8, 24, 16)  # every training sentence has 24 tokens or fewer
learned(training_batch).pow(2).sum().backward()
gradient_per_position = learned.embedding.weight.grad.norm(dim=1)  # (64,)
print("positions whose row got a gradient:", int((gradient_per_position > 0).sum()), "of 64")
try:
    learned(torch.randn(1, 80, 16))
except ValueError as error:
    print("80 tokens:", error)

sinusoidal = sinusoidal_positional_encoding(1000, 16)  # any length: it is a formula
# 1e-3, not section 3's 1e-5: float32 rounds an angle near 1000 radians by about 1e-4
error = (sinusoidal[:-500] @ relative_position_map(500, 16).T - sinusoidal[500:]).abs().max().item()
print(f"sinusoids at positions 500–999 follow the same rotation rule: {error < 1e-3}")

# %% [markdown]
# <details><summary>The figure in words</summary>
#
# A bar chart shows the gradient norm of each of the 64 rows of the learned
# table after one backward pass. Positions 0 to 23, the lengths the batch contains, have blue bars.
# Positions 24 to 63, right of a dashed line, have no bar at all: they were never seen, got no
# gradient, and stay random.
#
# </details>

# %%
fig, ax = plt.subplots(figsize=(8, 3))
ax.bar(range(64), gradient_per_position, color=["tab:blue"] * 24 + ["tab:red"] * 40)
ax.axvline(23.5, color="black", linestyle="--")
ax.text(24.5, gradient_per_position.max() * 0.8, "never seen in training:\nno gradient, stays random", fontsize=9)
ax.set(xlabel="position", ylabel="gradient norm of its row", title="A learned table only learns the positions it sees")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 7. The dog and the man, told apart
#
# Back to the chapter's first sentence. The cell embeds "the dog bit the man" and "the man bit the
# dog" with chapter 01's `Vocab` and `TokenEmbedding`, then lets each sentence attend to itself, as in
# section 1. It compares what the token *dog* gets in the two sentences: first from the embeddings
# alone, then with `PositionalEncoding` added.

# %%
sentences = [tokenize("the dog bit the man"), tokenize("the man bit the dog")]
vocab = Vocab.build(sentences)
ids = torch.tensor([vocab.encode(s) for s in sentences])  # (2, 5): one row per sentence
embed, add_positions = TokenEmbedding(len(vocab), 16), PositionalEncoding(16)
dog = [s.index("dog") for s in sentences]  # where "dog" stands: position 1, then position 4
for label, x in (("embeddings only:    ", embed(ids)), ("with the positions: ", add_positions(embed(ids)))):
    out = F.scaled_dot_product_attention(x, x, x)  # (2, 5, 16)
    same = torch.allclose(out[0, dog[0]], out[1, dog[1]], atol=1e-6)
    print(label, '"dog" gets the same vector in both sentences?', same)

# %% [markdown]
# From the embeddings alone, *dog* gets exactly the same vector whether it bites or is bitten. With
# the positions added, the two vectors differ, so the layers above can tell who bit whom.

# %% [markdown]
# ## Summary
#
# - Attention by itself is blind to order; the Transformer adds a position vector to each token
#   embedding (§3.5).
#   With it, *dog* no longer gets the same vector in "the dog bit the man" as in "the man bit the
#   dog" (section 7).
# - The sinusoidal table puts a sine and a cosine of $pos \cdot \omega_i$ in columns $2i, 2i+1$,
#   with wavelengths from $2\pi$ to about $10000 \cdot 2\pi$; every entry lies in $[-1, 1]$.
# - Moving $k$ positions ahead is the fixed block rotation $M_k$: $PE_{pos+k} = M_k PE_{pos}$ for
#   every $pos$, and the dot product of two encodings depends only on their distance.
# - Inputs are batch-first (B, T, D): the length is `x.size(1)`. The table is a non-persistent
#   buffer; dropout acts on the sum (§5.4).
# - The paper found learned position vectors as good as the sinusoids on its translation task
#   (Table 3 (E)). A learned table's rows for positions never seen in training get no gradient;
#   chapter 11 tests both kinds on strings longer than any seen in training.
#
# **Exercises:**
# [exercises/ex02_positional_encoding.ipynb](../exercises/ex02_positional_encoding.ipynb) asks you to
# write `sinusoidal_positional_encoding` (ex02_1), `PositionalEncoding.forward` (ex02_2) and
# `relative_position_map` (ex02_3). Stuck on one? `python -m transformer_course restore ex02_1` puts
# its worked answer in your student edition.

# %% [markdown]
# ## Check yourself
#
# 1. Why does a Transformer need positional information at all?
#    <details><summary>Answer</summary>
#
#    Attention treats its inputs as a set: shuffle the tokens and the outputs are shuffled the same
#    way, otherwise unchanged (section 1). Without positions, "the dog bit the man" and "the man bit
#    the dog" look alike.
#    </details>
# 2. What range of wavelengths do the columns of the sinusoidal table cover?
#    <details><summary>Answer</summary>
#
#    From $2\pi$ positions (the first pair) to almost $10000 \cdot 2\pi$ (the last), each pair slower
#    than the previous one by the same factor: a geometric progression.
#    </details>
# 3. Why is "move $k$ positions ahead" a linear map, and why does it not depend on the position?
#    <details><summary>Answer</summary>
#
#    Each (sin, cos) pair is a point on a circle at angle $\omega_i \, pos$. Moving $k$ positions turns
#    it by $\omega_i k$: a $2 \times 2$ rotation that contains $k$ but not $pos$ (the angle-addition
#    formulas).
#    </details>
# 4. Code written for (T, B, D) tensors slices the table with `x.size(0)`. What happens on a
#    batch-first batch of one sentence?
#    <details><summary>Answer</summary>
#
#    `x.size(0)` is 1, so every position gets the vector of position 0: the model sees no word order,
#    and nothing crashes.
#    </details>
# 5. Why do a learned table's rows for positions beyond the training lengths stay random?
#    <details><summary>Answer</summary>
#
#    A row receives a gradient only when its position occurs in a batch (section 6). Positions that
#    no training sentence reaches are never looked up, so their rows keep their random start.
#    </details>
#
# ## Further reading
#
# - The paper: §3.5 (the sinusoids and the linear-map argument), Table 3 row (E) (learned
#   positions), §5.4 (dropout on the sums).
# - Gehring et al. (2017), *Convolutional Sequence to Sequence Learning*: the learned position
#   embeddings that Table 3 (E) compares with.
# - Shaw, Uszkoreit and Vaswani (2018), *Self-Attention with Relative Position Representations*:
#   positions as distances inside attention instead of vectors added to the input.
# - Su et al. (2021), *RoFormer: Enhanced Transformer with Rotary Position Embedding*: the rotations
#   of section 3 applied inside attention, now common in large language models.
# - Press, Smith and Lewis (2022), *Train Short, Test Long: Attention with Linear Biases*: measures
#   how sinusoidal and other encodings extrapolate to longer inputs, and proposes one that does.

# %% [markdown]
# **Next:** [Chapter 03 — Scaled dot-product attention](03_attention.ipynb): with tokens and positions
# in place, attention lets every position look at every other.
