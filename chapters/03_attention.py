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
# # Chapter 03 — Scaled dot-product attention
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/03_attention.ipynb)
#
# Chapter 02 left every token as one vector that carries both its word and its position. Now the
# tokens look at each other. Everything else in the Transformer (heads, layers, encoder, decoder) is
# built around the one small function that does this, scaled dot-product attention. This chapter
# takes that function apart.
#
# **Learning goals**
#
# - read equation (1) of the paper as a *soft lookup*: compare a query with every key, turn the
#   similarities into weights, average the values with those weights;
# - explain with an experiment why the scores are divided by $\sqrt{d_k}$;
# - use boolean masks, and know why a blocked score is set to `torch.finfo(dtype).min` rather than
#   `-inf` or `-1e9`;
# - check our step-by-step *teaching path* against PyTorch's fused *fast path*;
# - say, with Table 1 of §4, what self-attention gains over a recurrent layer and what it pays.
#
# **In the paper:** §3.2 (attention maps a query and key-value pairs to an output), §3.2.1 (scaled
# dot-product attention, equation (1) and footnote 4), the masking remark of §3.2.3, and §4 (why
# self-attention, Table 1).

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

from transformer_course import apply_mask, attention_scores, band_mask, fast_attention, scaled_dot_product_attention
from transformer_course_tools.exercises.checks import run_check
from transformer_course_tools.notebook.figures import architecture_map, plot_path_lengths
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("03")  # the short stop at an unwritten exercise; printing and plotting style

# %% [markdown]
# ## Where we are
#
# Scaled dot-product attention is the computation inside each of the three attention blocks of the
# model. Two are *self-attention*: a sequence attends to itself. The third, *cross-attention*, lets
# the decoder read the encoder's output (chapter 06). Chapter 04 wraps attention into multi-head
# attention: H heads, each with its own learned projections. The map gives the shape of each
# block's weights; the [notation page](../book/notation.md) lists the letters.
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right, each a stack
# of layers above its embeddings and positional encodings. The three attention blocks are
# highlighted. In the encoder, self-attention has weights of shape (B, H, S, S) and a padding mask.
# In the decoder, masked self-attention has weights (B, H, T, T) and a causal mask. Above it,
# cross-attention takes its queries from the decoder and its keys and values from the encoder's
# output, with weights (B, H, T, S).
#
# </details>

# %%
architecture_map("attention")

# %% [markdown]
# ## 1. Attention is a lookup that never has to choose
#
# A Python dictionary answers a query by finding the one key that matches exactly and returning its
# value. Attention does the same with vectors, but softly. It scores the query against **every**
# key. It turns the scores into positive weights that add up to one. And it returns the weighted
# average of all the values. A key that fits the query well gets most of the weight. Nothing is
# picked outright, so the whole operation is differentiable.
#
# The paper writes it for many queries at once, stacked as the rows of a matrix $Q$ (§3.2.1,
# equation (1)):
#
# $$\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V$$
#
# | symbol | shape (batch-first) | meaning |
# | --- | --- | --- |
# | $Q$ | (B, T, Dk) | T queries, each a vector of size $d_k$ |
# | $K$ | (B, S, Dk) | S keys, the same size as the queries (they are compared by a dot product) |
# | $V$ | (B, S, Dv) | one value per key; $d_v$ may differ from $d_k$ |
# | $QK^\top/\sqrt{d_k}$ | (B, T, S) | the **scores**: one number per (query, key) pair |
# | softmax over the last axis | (B, T, S) | the **weights**: each row sums to 1 |
# | output | (B, T, Dv) | one weighted average of the values per query |
#
# In shapes, Dk and Dv stand for $d_k$ and $d_v$.
#
# Here is a toy sentence. We describe its words by hand with four features, and ask
# it three questions. Nothing is learned yet. In a trained model the queries, keys
# and values come out of learned projections (chapter 04), but the mechanism is the same.

# %%
# hand-made word features:     animal, action, place, small word
FEATURES = {
    "<pad>": [0.0, 0.0, 0.0, 0.0],
    "the": [0.0, 0.0, 0.0, 1.0],
    "a": [0.0, 0.0, 0.0, 1.0],
    "cat": [1.0, 0.0, 0.0, 0.0],
    "dog": [1.0, 0.0, 0.0, 0.0],
    "sat": [0.0, 1.0, 0.0, 0.0],
    "ran": [0.0, 1.0, 0.0, 0.0],
    "on": [0.0, 0.0, 0.5, 1.0],  # a preposition hints at a place
    "mat": [0.0, 0.0, 1.0, 0.0],
}
VOCAB = list(FEATURES)
sentences = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "ran", "<pad>", "<pad>", "<pad>"]]
questions = ["who?", "did what?", "where?"]

keys = torch.tensor([[FEATURES[w] for w in s] for s in sentences])  # (B, S, Dk) = (2, 6, 4)
values = F.one_hot(torch.tensor([[VOCAB.index(w) for w in s] for s in sentences]), len(VOCAB)).float()  # (B, S, 9)
queries = 6.0 * torch.eye(4)[:3].expand(2, 3, 4)  # (B, T, Dk): "who?" asks for the animal feature, …
print("queries", tuple(queries.shape), " keys", tuple(keys.shape), " values", tuple(values.shape))

# %% [markdown]
# The values are one-hot vectors over the vocabulary, so the output of each question is a
# probability distribution over words: the "answer" that attention retrieves.

# %%
answers, weights = scaled_dot_product_attention(queries[:1], keys[:1], values[:1])  # the first sentence
for question, answer in zip(questions, answers[0], strict=True):
    best = answer.argmax().item()
    print(f"{question:10} → {VOCAB[best]:4} (weight {answer[best]:.2f})")


# %% [markdown]
# <details><summary>The figure in words</summary>
#
# A heatmap has one row per question ("who?", "did what?", "where?") and one
# column per word of "the cat sat on the mat", with each weight written in its cell. "who?" puts
# most of its weight on *cat*, "did what?" on *sat*, and "where?" puts most of its weight on
# *mat* and some on *on*. Every other cell holds a small weight, never exactly 0.
#
# </details>

# %%
def show_weights(ax, w, rows, cols, title):
    """A heatmap of one (T, S) weight matrix with the numbers written in."""
    ax.imshow(w, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(cols)), cols, rotation=45)
    ax.set_yticks(range(len(rows)), rows)
    for i in range(len(rows)):
        for j in range(len(cols)):
            p = w[i, j].item()
            ax.text(j, i, f"{p:.2f}", ha="center", va="center", color="white" if p > 0.5 else "black", fontsize=8)
    ax.set_title(title)


fig, ax = plt.subplots(figsize=(6, 2.6))
show_weights(ax, weights[0], questions, sentences[0], "Each question puts most of its weight on the word that fits")
ax.set_xlabel("keys (words of the sentence)")
ax.set_ylabel("queries")
plt.show()

# %% [markdown]
# One weight can be followed by hand. Each query is 6 times a unit vector, and each key holds its
# word's four hand-made features. So "who?" and the key of *cat* have the dot product 6. Divided by
# $\sqrt{d_k} = \sqrt{4} = 2$, that gives a score of 3. Every other word of the sentence scores 0.
# The softmax turns each score $s$ into $e^s$ and divides by the sum of the row. One score of 3
# against five scores of 0 gives
#
# $$\text{weight of } \textit{cat} = \frac{e^3}{e^3 + 5 \cdot e^0} = \frac{20.09}{25.09} \approx 0.80,
# \qquad \text{weight of each other word} = \frac{1}{e^3 + 5} \approx 0.04.$$

# %%
row = attention_scores(queries[:1], keys[:1])[0, 0]  # (S,): the scores of "who?"
print("scores of 'who?':", [f"{x:g}" for x in row.tolist()])
print(f"e³ / (e³ + 5) = {math.exp(3) / (math.exp(3) + 5):.4f}   weight on 'cat': {weights[0, 0, 1]:.4f}")
print(f" 1 / (e³ + 5) = {1 / (math.exp(3) + 5):.4f}   weight on 'the': {weights[0, 0, 0]:.4f}")

# %% [markdown]
# "where?" puts most of its weight on *mat* and some on *on*. The preposition has half of the place
# feature, and softmax never forces a single winner. Every unrelated word still receives a little weight: a
# score of 0 becomes $e^0 = 1$ before normalisation, never exactly 0.
#
# ## 2. Equation (1), one step at a time
#
# Let us redo that computation by hand on random tensors, with a batch and odd sizes. Then we check
# that the package's functions (`attention_scores`, `scaled_dot_product_attention`) agree.

# %%
B, T, S, d_k, d_v = 2, 3, 5, 4, 6
q, k, v = torch.randn(B, T, d_k), torch.randn(B, S, d_k), torch.randn(B, S, d_v)

scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (B, T, S): every query against every key
weights_by_hand = scores.softmax(dim=-1)  # (B, T, S): softmax over the keys, so each row sums to 1
output_by_hand = weights_by_hand @ v  # (B, T, Dv): a weighted average of the values per query
print(
    "scores ", tuple(scores.shape), "\nweights", tuple(weights_by_hand.shape), "\noutput ", tuple(output_by_hand.shape)
)
print("row sums of the weights:", weights_by_hand.sum(-1)[0])

output, weights = scaled_dot_product_attention(q, k, v)
assert torch.allclose(attention_scores(q, k), scores)
assert torch.allclose(weights, weights_by_hand) and torch.allclose(output, output_by_hand)
print("the package agrees with the hand computation")

# %% [markdown]
# Two details worth noticing:
#
# - `k.transpose(-2, -1)` swaps only the last two axes. So the same line works for inputs of shape
#   (T, Dk), (B, T, Dk) or (B, H, T, Dk); chapter 04 adds the head axis H.
# - the softmax runs over the **last** axis, the keys. Over the other axis the *columns* would sum
#   to one, and each query would no longer get a proper average.
#
# ## 3. Why divide by $\sqrt{d_k}$?
#
# The paper's argument (§3.2.1, footnote 4) goes like this. Let the entries of a query and a key be
# independent, with mean 0 and variance 1. Their dot product $q \cdot k = \sum_{i=1}^{d_k} q_i k_i$
# is a sum of $d_k$ independent terms of variance 1, so its variance is $d_k$. Its typical size grows
# like $\sqrt{d_k}$. Dividing by $\sqrt{d_k}$ brings the variance back to 1, whatever the head size.
#
# Why would large scores hurt? Softmax is sensitive to *differences* between scores. Spread them out
# and the largest one takes nearly all the weight. The output then copies one value, and that
# row's gradient through the softmax nearly vanishes. (The matrix of the softmax's
# derivatives, its Jacobian, is $\mathrm{diag}(p) - pp^\top$, and that is zero when $p$ is one-hot.) The paper does
# not measure this itself. It cites a comparison (reference [3]) where additive attention
# beat unscaled dot-product attention for large $d_k$. It *suspects* that large dot products push
# the softmax into regions of tiny gradients.
#
# The experiment below measures each step of that argument at initialisation, and at which $d_k$
# the trouble starts. For each $d_k$ we draw 1000 random queries, each compared
# with 16 random keys, and look at the scores with and without the scaling. The *entropy* of a row
# of weights $p$, $-\sum_j p_j \log p_j$ with the natural logarithm (its unit is the *nat*),
# measures how spread out it is: $\log 16$ when all 16 weights are equal, 0 when one
# key takes everything. A random gradient then flows back from the weights, and we measure what
# reaches each query: that is what would train the layer that makes the queries.

# %%
torch.manual_seed(0)
n_queries, n_keys = 1000, 16
head_sizes = [2**i for i in range(11)]  # 1 … 1024
stats = {"unscaled": [], "scaled": []}
for dk in head_sizes:
    q, k = torch.randn(n_queries, 1, dk), torch.randn(n_queries, n_keys, dk)
    upstream = torch.randn(n_queries, n_keys)  # a random gradient arriving at the weights, (N, S)
    for name, scores_of in (("unscaled", lambda q, k: q @ k.transpose(-2, -1)), ("scaled", attention_scores)):
        q_ = q.clone().requires_grad_()
        s = scores_of(q_, k).squeeze(1)  # (N, S)
        p = s.softmax(dim=-1)
        (p * upstream).sum().backward()  # pulled back through the softmax and the scores to the queries
        to_query = q_.grad.squeeze(1).norm(dim=-1)  # (N,): the gradient each query receives
        stats[name].append(
            {
                "variance": s.var().item(),
                "max weight": p.max(dim=-1).values.mean().item(),
                "entropy": -(p * p.clamp_min(1e-30).log()).sum(-1).mean().item(),
                "mean gradient": to_query.mean().item(),
                "median gradient": to_query.median().item(),
                "stalled": (to_query < 0.01).float().mean().item(),  # queries that get almost nothing
            }
        )

print(f"{'d_k':>5} | {'variance':>17} | {'max weight':>17} | {'entropy (nats)':>17}")
print(f"{'':>5} | {'unscaled  scaled':>17} | {'unscaled  scaled':>17} | {'unscaled  scaled':>17}")
for dk, u, s in zip(head_sizes, stats["unscaled"], stats["scaled"], strict=True):
    if dk in (1, 16, 64, 1024):
        print(
            f"{dk:>5} | {u['variance']:8.2f} {s['variance']:8.2f} | {u['max weight']:8.2f} {s['max weight']:8.2f} "
            f"| {u['entropy']:8.2f} {s['entropy']:8.2f}"
        )

# %% [markdown]
# <details><summary>The figure in words</summary>
#
# Four panels share the same horizontal axis, d_k from 1 to 1024 on a
# logarithmic scale. The first three have one curve for unscaled scores and one for scaled scores.
# Unscaled, the variance of the scores climbs along the dotted line d_k, the largest weight of a
# row climbs towards 1, and the entropy of a row falls towards 0. The fourth panel shows the
# gradient that reaches a query, its mean and its median. Scaled, both stay flat and close
# together. Unscaled, the mean rises, while the median first rises, then falls to near zero.
#
# </details>

# %%
fig, axes = plt.subplots(1, 4, figsize=(15, 3.4))
panels = [("variance", "variance of the scores"), ("max weight", "largest weight in a row"),
          ("entropy", "entropy of a row (nats)")]
for ax, (key, label) in zip(axes, panels, strict=False):
    for name, style in (("unscaled", "o-"), ("scaled", "s-")):
        ax.plot(
            head_sizes,
            [row[key] for row in stats[name]],
            style,
            label=f"{name}: $QK^T$" + ("/√d_k" if name == "scaled" else ""),
        )
    ax.set_ylabel(label)
for name, color in (("unscaled", "tab:blue"), ("scaled", "tab:orange")):
    for statistic, style in (("mean", "o-"), ("median", "x--")):
        curve = [row[f"{statistic} gradient"] for row in stats[name]]
        axes[3].plot(head_sizes, curve, style, color=color, label=f"{name}, {statistic}")
axes[3].set_ylabel("gradient reaching a query")
for ax in axes:
    ax.set_xscale("log", base=2)
    ax.set_xlabel("$d_k$")
axes[0].set_yscale("log")
axes[0].plot(head_sizes, head_sizes, "k:", label="$d_k$ (footnote 4)")
axes[1].axhline(1 / n_keys, color="grey", ls=":", label="uniform (1/16)")
axes[2].axhline(math.log(n_keys), color="grey", ls=":", label="uniform (log 16)")
for ax in axes:
    ax.legend(fontsize=8)
fig.suptitle("Without 1/√d_k the softmax saturates as d_k grows: at large d_k most queries get no gradient, a few a lot", y=1.03)
plt.tight_layout()
plt.show()
unscaled, scaled = stats["unscaled"][-1], stats["scaled"][-1]  # d_k = 1024
print("gradient reaching a query at d_k = 1024, unscaled against scaled:")
print(f"  mean   {unscaled['mean gradient']:.2f} against {scaled['mean gradient']:.2f}")
print(f"  median {unscaled['median gradient']:.2f} against {scaled['median gradient']:.2f}")
print(f"  queries that get almost none (below 0.01): {unscaled['stalled']:.0%} against {scaled['stalled']:.0%}")
crossing = next(dk for dk, u, s in zip(head_sizes, stats["unscaled"], stats["scaled"], strict=True)
                if u["median gradient"] < s["median gradient"])  # fmt: skip
print(f"the unscaled median first falls below the scaled one at d_k = {crossing}")

# %% tags=["hide-cell"]
from transformer_course_tools.notebook.claims import expect, expect_at_least, expect_at_most

expect_at_least("unscaled, d_k = 1024: the mean gradient reaching a query, as a multiple of the scaled one",
                unscaled["mean gradient"] / scaled["mean gradient"], 2)
expect_at_least("unscaled, d_k = 1024: the share of queries that get almost no gradient", 100 * unscaled["stalled"], 50, "%")
expect_at_most("scaled, every d_k: the share of queries that get almost no gradient",
               100 * max(row["stalled"] for row in stats["scaled"]), 5, "%")
ratio = max(row["mean gradient"] / row["median gradient"] for row in stats["scaled"])
expect("scaled, every d_k: the mean gradient within 1.5 times the median", ratio < 1.5, f"{ratio:.2f}")
expect("unscaled: the median gradient stays above the scaled one up to d_k = 64", crossing > 64, f"d_k = {crossing}")

# %% [markdown]
# The four panels, left to right:
#
# 1. the variance of plain dot products follows the dotted line $d_k$, as footnote 4 predicts;
#    scaled scores stay at 1;
# 2. unscaled, the largest weight in a row climbs towards 1: the row has become (almost) a hard
#    choice of one key;
# 3. the entropy of the row drops from about 2.4 nats (uniform: $\log 16 \approx 2.77$) towards 0;
# 4. the gradient that reaches a query does *not* simply shrink. Its mean even grows: without the
#    division, each score is $\sqrt{d_k}$ times more sensitive to the query. But its median falls,
#    to zero at the largest sizes. In a saturated row every weight is nearly 0 or 1, and the softmax
#    passes almost nothing back. A row passes a gradient only while some of its weights are far
#    from 0 and 1, as when its two best keys nearly tie.
#
# So at a large $d_k$ unscaled attention's gradients are uneven. At $d_k = 1024$ most queries
# (61%) receive almost no signal, while a few receive large ones. That is the paper's "extremely small
# gradients", for most rows, though not on average. Scaled, the curves are flat and the mean stays
# close to the median: the head size barely changes attention at initialisation.
#
# Where does the trouble start? In the right-hand panel the unscaled median stays *above* the scaled
# one up to $d_k = 64$, the paper's head size. It falls below at $d_k = 128$ (the last line the
# figure's cell printed) and nears zero a few sizes further. So at the paper's head size the factor
# mostly keeps the gradients even.
#
# ## 4. Masks: who may look at whom
#
# Sometimes a query must ignore some keys:
#
# - **padding**: sentences in a batch have different lengths, and the short ones are filled with a
#   `<pad>` token that carries no meaning;
# - **the future**: when the decoder predicts word $t$, it must not see words $t+1, \dots$. §3.2.3
#   masks out these illegal connections by setting the matching inputs of the softmax to $-\infty$.
#
# In this course a mask is a **boolean tensor, and True means "may attend"**. This is the
# convention of PyTorch's `torch.nn.functional.scaled_dot_product_attention`. The mask must
# *broadcast* to the scores, (B, T, S), or with heads (B, H, T, S): PyTorch repeats it along every
# axis where it has size 1. So a padding mask of shape (B, 1, S) says the same thing for every
# query. A causal mask of shape (T, S) says the same thing for every sentence.
#
# ⚠️ `torch.nn.MultiheadAttention` uses the **opposite** polarity: its `key_padding_mask` and its
# boolean `attn_mask` are True where attention is *blocked*. Chapter 04 converts between the two.
#
# `apply_mask` replaces each blocked score by the lowest finite number of the dtype, so that the
# softmax gives it a weight of exactly zero. Back to our sentences: the second one is padded.
#
# <details><summary>The figure in words</summary>
#
# Two heatmaps show the weights of the second sentence, "a dog ran" and three
# `<pad>`, for the three questions. Without a mask (left), "where?" finds no place word and spreads
# its weight evenly over all six keys, so half of it lands on `<pad>`. With the padding mask
# (right), the three `<pad>` columns hold exactly 0, and each row's weight is shared among the
# three real words.
#
# </details>

# %%
is_real = torch.tensor([[w != "<pad>" for w in s] for s in sentences])  # (B, S): True on real words
padding_mask = is_real[:, None, :]  # (B, 1, S): the same for every query
print(padding_mask.int())

queries = 6.0 * torch.eye(4)[:3].expand(2, 3, 4)  # (B, T, Dk): the three questions, as in section 1
masked_scores = apply_mask(attention_scores(queries, keys), padding_mask)  # (B, T, S)
print("sentence 2, scores of 'where?':", [f"{x:.3g}" for x in masked_scores[1, 2].tolist()])

_, weights_unmasked = scaled_dot_product_attention(queries, keys, values)
_, weights_masked = scaled_dot_product_attention(queries, keys, values, padding_mask)

fig, axes = plt.subplots(1, 2, figsize=(11, 2.6))
show_weights(axes[0], weights_unmasked[1], questions, sentences[1], "No mask: 'where?' spreads evenly, half onto <pad>")
show_weights(axes[1], weights_masked[1], questions, sentences[1], "Padding mask: <pad> gets exactly 0")
plt.tight_layout()
plt.show()

# %% [markdown]
# The second sentence has no place word, so "where?" finds no good key. Without the mask, half of
# its weight lands on padding: an artefact of how long the batch happened to be. With the mask, the
# padded keys get weight 0, and the remaining weights are renormalised over the real words.
#
# A **causal** mask is lower-triangular: query $t$ may look at keys $0 \dots t$. Here each word of
# the first sentence attends over the words so far, using its own features as query and key.
#
# <details><summary>The figure in words</summary>
#
# On the left, the causal mask for "the cat sat on the mat" is a grid of
# six rows and six columns. It is dark on and below the diagonal, where a word may attend. On the
# right, the attention weights fill the same lower triangle, each written in its cell. Every cell
# above the diagonal holds 0.00, and the first row puts all its weight on the first word.
#
# </details>

# %%
words = sentences[0]
causal = torch.ones(len(words), len(words), dtype=torch.bool).tril()  # (T, T), True on and below the diagonal
self_keys = keys[0] + 0.1  # (T, Dk); the offset keeps any score from being exactly 0
# queries 4 × the keys: larger scores, so that the weights of a row are visibly unequal
_, causal_weights = scaled_dot_product_attention(4.0 * self_keys, self_keys, self_keys, causal)

fig, axes = plt.subplots(1, 2, figsize=(10, 3.3))
axes[0].imshow(causal, cmap="Greys", vmin=0, vmax=1.6)
axes[0].set_xticks(range(len(words)), words, rotation=45)
axes[0].set_yticks(range(len(words)), words)
axes[0].set_title("causal mask (dark = may attend)")
show_weights(axes[1], causal_weights, words, words, "Weights: nothing above the diagonal")
plt.tight_layout()
plt.show()

# %% [markdown]
# The fifth row, the second *the*, shares its weight between itself and the two earlier small words
# (*the* and *on*); it cannot see *mat*, which comes later. The first word has a single key to look at, so
# its weight is 1.
#
# > **Common mistake — the mask polarity reversed.** Code ported from `nn.MultiheadAttention`, whose
# > masks are True where attention is blocked, flips every mask here. Shapes do not change, nothing
# > crashes, and the model quietly attends to padding and to the future.


# %%
def apply_mask_reversed(scores, mask):
    """The bug: blocks the positions where the mask says 'may attend'."""
    return scores.masked_fill(mask, torch.finfo(scores.dtype).min)


buggy_scores = apply_mask_reversed(attention_scores(queries, keys), padding_mask)
buggy_answers = buggy_scores.softmax(-1) @ values  # (B, T, 9): a distribution over the 9 words per question
for question, answer in zip(questions, buggy_answers[1], strict=True):
    print(f"sentence 2, {question:10} → {VOCAB[answer.argmax()]}")

# %% tags=["hide-cell"]
# The check of exercise ex03_2 rejects the bug with a message that names it:
print(run_check("ex03_2", apply_mask_reversed).line())

# %% [markdown]
# Every answer is now `<pad>`: the only keys left visible are the padding.
#
# ## 5. A row with nothing to attend to
#
# What if *every* key of a query row is blocked? A batch may contain an empty sequence. Or padding sits at the start of a sentence, and a causal mask
# leaves the first padded position nothing to look at. The output of such a row is never used, but
# it must not be NaN, because NaN spreads.
#
# Following §3.2.3 literally and filling with `-inf` gives softmax$(-\infty, \dots, -\infty)$ =
# $0/0$ = NaN:

# %%
q, k, v = torch.randn(1, 2, 4, requires_grad=True), torch.randn(1, 3, 4), torch.randn(1, 3, 4, requires_grad=True)
mask = torch.tensor([[True, True, False], [False, False, False]])  # the second query may attend to nothing

s = (q @ k.transpose(-2, -1) / 2).masked_fill(~mask, float("-inf"))  # / 2: divide by √d_k, d_k = 4
w = s.softmax(-1)
print("weights with -inf:\n", w[0])
loss = (w @ v)[0, 0].sum()  # a loss that only uses the first, healthy row …
loss.backward()
print("gradient of v:\n", v.grad[0])  # … still gets NaN gradients: 0 · NaN = NaN

# %% [markdown]
# Even a loss that ignores the broken row gets NaN gradients, and an optimiser step spreads the NaN
# to every weight upstream. The usual workaround, `-1e9`, fails in half precision: float16's lowest
# finite number is −65,504, so −1e9 does not fit. In PyTorch, `masked_fill` refuses to write it into
# a float16 tensor with an overflow error, and a plain conversion turns it into −∞, the same NaN
# (both are shown below).
#
# `torch.finfo(dtype).min` is the lowest *finite* number of each dtype. With it, a fully blocked row
# holds identical scores, and softmax turns them into uniform weights. The output is the plain mean
# of the values: finite and harmless, and its gradients are finite too. In rows with at least one
# allowed key, softmax first subtracts the row's largest score (no weight changes, and no $e^s$
# overflows), so a blocked key's $e^{\text{min} - \text{max}}$ underflows to exactly 0, as $-\infty$ would.

# %%
q.grad, v.grad = None, None
out, w = scaled_dot_product_attention(q, k, v, mask)
print("weights with finfo.min:\n", w[0].detach())
out[0, 0].sum().backward()
print("gradient of v is finite:", bool(torch.isfinite(v.grad).all()))

try:  # the usual workaround, -1e9, in half precision
    torch.zeros(3, dtype=torch.float16).masked_fill(~mask[1], -1e9)
except RuntimeError as error:
    print("masked_fill(-1e9) on float16 raises an overflow error:", "overflow" in str(error))
print("-1e9 converted to float16:", torch.tensor(-1e9).half().item())

# %% [markdown]
# ## 6. The teaching path and the fast path
#
# `scaled_dot_product_attention` in our package is the **teaching path**: every step of equation
# (1) is a line of code, and the weights come back to be printed and plotted. PyTorch's
# `torch.nn.functional.scaled_dot_product_attention` is the **fast path**: one *fused* call, a
# compiled program (a *kernel*) doing every step. It can avoid storing the (B, H, T, S) weights
# ([chapter 13](13_modern_language_models.ipynb), section 6, shows how).
# The package wraps it as `fast_attention`, with the same mask convention, and makes a fully blocked
# row give the mean of the values there too. Both compute equation (1), so they give the same numbers:

# %%
torch.manual_seed(0)
B, H, T, S, d_k, d_v = 2, 3, 7, 5, 4, 6
q, k, v = torch.randn(B, H, T, d_k), torch.randn(B, H, S, d_k), torch.randn(B, H, S, d_v)
mask = torch.rand(B, 1, T, S) > 0.4  # broadcast over the heads
mask[0, 0, 2] = False  # query 2 of sentence 0 may attend to nothing
teaching, _ = scaled_dot_product_attention(q, k, v, mask)
print("teaching path == fast path:", torch.allclose(teaching, fast_attention(q, k, v, mask), atol=1e-6))
print("the blocked row is the mean of the values:", torch.allclose(teaching[0, 0, 2], v[0, 0].mean(0)))

# %% [markdown]
# Chapter 04's module uses the fast path unless it is asked for the weights.
#
# %% [markdown]
# ## 7. Why self-attention? (§4)
#
# With the mechanism complete, §4 of the paper asks whether it was worth replacing recurrence with
# it. It compares three kinds of layer. Each turns a sequence of $n$ vectors of size $D$ into another such sequence:
#
# - a self-attention layer;
# - a recurrent layer (an RNN; its gated form, the LSTM, was the standard translation model of the time);
# - a convolutional layer.
#
# It counts three things:
#
# - **computation per layer**: the total number of multiply-adds;
# - **sequential operations**: how many steps must run one after the other, however many
#   processors there are. This decides how well a layer uses parallel hardware;
# - **maximum path length**: how many steps a signal needs to travel from one position to any
#   other. The shorter the path, the easier it is to learn a dependency between distant words.
#
# Here is Table 1 of the paper in our notation. $n$ is the sequence length and $D$ the vector size
# (the paper writes $d$). The paper writes $k$ for the kernel width; we write $w$, since $k$ here is
# the tensor of keys.
#
# | layer | computation per layer | sequential operations | maximum path length |
# | --- | --- | --- | --- |
# | self-attention | $O(n^2 \cdot D)$ | $O(1)$ | $O(1)$ |
# | recurrent | $O(n \cdot D^2)$ | $O(n)$ | $O(n)$ |
# | convolutional, width $w$ | $O(w \cdot n \cdot D^2)$ | $O(1)$ | $O(\log_w n)$ |
# | self-attention over a window of $r$ neighbours | $O(r \cdot n \cdot D)$ | $O(1)$ | $O(n/r)$ |
#
# Where do the entries come from? Self-attention compares every position with every other one:
# $n^2$ dot products of length $D$. They are independent of each other, so they can run at once,
# and every position reaches every other in one step. (An attention layer also projects each token to
# a query, a key and a value, which Table 1 leaves out.) A recurrent layer multiplies a $D \times D$
# matrix with its state once per position ($n \cdot D^2$). But step $t$ needs the state of step
# $t-1$. So it takes $n$ steps in a row, and a signal from the first word reaches the last one
# through all of them. (For convolutions the paper's $O(\log_w n)$ assumes dilated convolutions,
# whose filters skip more positions at every layer. A stack of plain ones needs $O(n/w)$ layers to
# connect the two ends.)
#
# So, by Table 1's count, self-attention costs less computation than recurrence when $n < D$. That
# is the usual case for sentences: a few dozen word pieces against $D = 512$.
#
# Now count per token, projections included. A plain recurrent step costs $2D^2$ multiply-adds
# ($x_t W_{in}$ and $h_{t-1} W_h$); an LSTM step, with four gates, $8D^2$. Self-attention's four
# projections ($W^Q$, $W^K$, $W^V$ and chapter 04's $W^O$) cost $4D^2$, plus $2nD$ for the scores
# and the weighted sum. So attention does *more* arithmetic at every length than a plain RNN, and
# less than an LSTM only while $n < 2D$. Its sure saving is the second column: all its scores are
# computed at once, which decides the speed on a GPU. Its price is $n^2$ time and memory.
#
# For very long sequences that price dominates.
# The paper proposes the table's last row as a possible remedy: each token sees only its $r$
# nearest neighbours, a band along the diagonal of the mask (`band_mask`, exercise ex03_4). The
# figure draws the path-length column.
#
# <details><summary>The figure in words</summary>
#
# On the left, eight tokens stand in two rows. In the recurrent row, arrows
# link each token to the next, so a signal from token 1 reaches token 8 in seven steps. In the
# self-attention row, curved arrows go from every token straight to token 8, one hop each. On the
# right, the longest path is drawn against the sequence length n, both axes logarithmic. The
# recurrent layer's line grows like n, a plain convolution's too, only lower, and a dilated
# convolution's grows like log n. Self-attention's line stays flat at 1.
#
# </details>

# %%
plot_path_lengths()

# %% [markdown]
# Table 1's last row is one line of code. `band_mask(n, r)` lets each position attend to the
# positions at most $r$ away, itself included. Here is the mask for eight tokens with $r = 1$, and
# the weights with which token 4 (position 3) reads the others:

# %%
torch.manual_seed(0)
window = band_mask(8, r=1)  # (8, 8) bool: True = may attend
print(window.int())
q, k, v = torch.randn(3, 1, 8, 16)  # each (B, T, d_k): eight tokens
_, window_weights = scaled_dot_product_attention(q, k, v, window)  # (1, 8, 8)
print("token 4 reads positions 0-7 with weights", window_weights[0, 3].numpy().round(2))

# %% [markdown]
# Token 4 weighs only positions 2, 3 and 4; the rest get exactly 0. The price is the path: with
# $r = 1$, position 0 reaches position 7 only through seven layers, the table's $O(n/r)$.

# %% [markdown]
# ## Summary
#
# - Attention scores every query against every key, softmaxes each row, and averages the values
#   with those weights: equation (1), `scaled_dot_product_attention(q, k, v, mask)`.
# - The $1/\sqrt{d_k}$ factor keeps the score variance at 1 for any head size. Without it the
#   softmax saturates as $d_k$ grows. Past $d_k = 64$ the median gradient falls below the scaled
#   one. At $d_k = 1024$, most queries (61%) get almost none and a few get large ones.
# - Masks are boolean, **True = may attend**, broadcast to (B, H, T, S); `nn.MultiheadAttention`
#   uses the opposite polarity.
# - Blocked scores become `torch.finfo(dtype).min`. That gives exact zeros in normal rows and a
#   finite uniform average in a fully blocked row. `-inf` gives NaN; so does `-1e9` in float16,
#   where it becomes `-inf`, and `masked_fill` refuses to write it there.
# - The teaching path returns the weights; the fast path (`fast_attention`, built on
#   `F.scaled_dot_product_attention`) does not, can save the (B, H, T, S) memory, and gives the same numbers.
# - Self-attention (§4, Table 1) connects any two positions in one step, with no sequential steps,
#   at $O(n^2 D)$ per layer. A recurrent layer ($O(n D^2)$) needs $n$ steps in a
#   row. Counted with projections, attention does more arithmetic than a plain RNN, and less than an
#   LSTM only while $n < 2D$. Its sure gain is the parallel steps.
#
# **Exercises:** [exercises/ex03_attention.ipynb](../exercises/ex03_attention.ipynb) asks you to write
# `attention_scores` (ex03_1), `apply_mask` (ex03_2), `scaled_dot_product_attention` (ex03_3) and
# `band_mask` (ex03_4). Stuck on one? `python -m transformer_course restore ex03_1` puts its worked
# answer in your student edition.

# %% [markdown]
# ## Check yourself
#
# 1. For T queries and S keys in a batch of B, what are the shapes of the scores, the weights and
#    the output? Over which axis does the softmax run?
#    <details><summary>Answer</summary>
#
#    Scores and weights (B, T, S), output (B, T, $d_v$); the softmax runs over the last axis, the keys,
#    so that each query's weights sum to 1.
#    </details>
# 2. Why divide by $\sqrt{d_k}$?
#    <details><summary>Answer</summary>
#
#    A dot product of $d_k$ independent unit-variance terms has variance $d_k$; dividing by
#    $\sqrt{d_k}$ brings it back to 1. Otherwise large scores saturate the softmax: its weights are
#    nearly one-hot. At large $d_k$ most queries receive almost no gradient (61% at 1024, section 3).
#    </details>
# 3. What does `True` mean in this course's masks, and in `nn.MultiheadAttention`'s?
#    <details><summary>Answer</summary>
#
#    Here: *may attend*. In `nn.MultiheadAttention`'s `key_padding_mask` and boolean `attn_mask`:
#    *blocked*. Passing one convention to the other code flips every mask without an error.
#    </details>
# 4. Why fill blocked scores with `torch.finfo(dtype).min` rather than `-inf` or `-1e9`?
#    <details><summary>Answer</summary>
#
#    `-inf` turns a fully blocked row into $0/0$ = NaN (and NaN gradients). `-1e9` does not fit in
#    float16: stored there it becomes `-inf`, the same NaN, and `masked_fill` refuses it with an
#    overflow error. The dtype's own minimum gives exact zeros in normal rows and a finite uniform
#    row when everything is blocked.
#    </details>
# 5. By Table 1, when does a self-attention layer need less computation than a recurrent one, and
#    what does it need fewer of in any case?
#    <details><summary>Answer</summary>
#
#    By Table 1's count, when the sequence is shorter than the vector size ($n < D$: $n^2 D$ against
#    $n D^2$). With the projections counted too: never against a plain RNN, and against an LSTM only
#    while $n < 2D$ (section 7). In any case
#    it needs no sequential steps ($O(1)$ against $O(n)$), and it connects any two positions in one
#    step.
#    </details>
#
# ## Further reading
#
# - The paper: §3.2 and §3.2.1 with footnote 4 (scaled dot-product attention), §3.2.3 (masking),
#   §4 and Table 1 (why self-attention).
# - Bahdanau, Cho and Bengio (2015), *Neural Machine Translation by Jointly Learning to Align and
#   Translate*: additive attention, where attention in translation began.
# - Luong, Pham and Manning (2015), *Effective Approaches to Attention-based Neural Machine
#   Translation*: dot-product ("multiplicative") attention.
# - Britz et al. (2017), *Massive Exploration of Neural Machine Translation Architectures*: the
#   comparison of additive and dot-product attention that the paper cites as [3].
# - Dao et al. (2022), *FlashAttention*: the tiled kernel behind the fast path of section 6.

# %% [markdown]
# **Next:** [Chapter 04 — Multi-head attention](04_multi_head_attention.ipynb): one attention looks at
# one kind of relation; multi-head attention runs several side by side.
