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
# # Chapter 13 — From the 2017 Transformer to a modern language model
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/13_modern_language_models.ipynb)
#
# Chapter 12 ended Part II with the paper's translator on real sentences. Today's chat models are
# built from the same blocks, with a handful of changes. GPT (2018) dropped the encoder and trained
# one stack of blocks to predict the next token of any text. Later models
# replaced four of the paper's 2017 choices, one by one: the normalisation, the positions, the
# feed-forward network and the key/value heads. LLaMA (2023) put three of them together: RMSNorm
# before each sub-layer, rotary positions and SwiGLU; shared key/value heads came with Llama 2's two
# largest models and every size of Llama 3.
#
# This chapter builds each change on our own code and checks it against a reference. A last change
# reads attention one block of keys at a time, to save memory. At the end, the modern block reads
# six plays by Shakespeare for a few hundred steps and writes its own lines.
#
# **Learning goals**
#
# - see that a decoder-only language model is chapter 05's encoder layer under chapter 06's causal
#   mask, and test that no position reads a later token;
# - build RMSNorm, rotary positions (RoPE), grouped-query attention, SwiGLU and blocked attention
#   with an online softmax, each checked against a reference;
# - compute the size of a KV cache, and estimate how much shared key/value heads speed up generation;
# - measure what blocked attention saves at inference, and why a plain blocked loop saves nothing
#   in training;
# - train the modern block on real text with chapter 08's loop, and read what it writes.
#
# **In the paper:** the 2017 choices that this chapter revisits.
#
# - §3.1: the post-LN residual block;
# - §3.2.2: keys and values for every head;
# - §3.3: the ReLU feed-forward network;
# - §3.5: the sinusoidal positions added to the embeddings.

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

# %% tags=["hide-cell"]
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from IPython.display import Markdown, display

from transformer_course.attention import scaled_dot_product_attention
from transformer_course.blocked import blocked_attention
from transformer_course.cache import KVCache, with_cache
from transformer_course.encoder import EncoderLayer
from transformer_course.feedforward import PositionwiseFeedForward
from transformer_course.grouped import GroupedQueryAttention, repeat_kv
from transformer_course.lm import DecoderOnlyConfig, DecoderOnlyLM, causal_rows, generate
from transformer_course.multihead import merge_heads, split_heads
from transformer_course.positional import sinusoidal_positional_encoding
from transformer_course.rmsnorm import RMSNorm
from transformer_course.rotary import RotaryAttention, apply_rope
from transformer_course.swiglu import SwiGLU, swiglu_hidden_size
from transformer_course_tools.notebook.claims import expect, expect_at_most
from transformer_course_tools.notebook.diagrams import grouped_query_heads
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.memory import peak_memory_mib
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("13")  # the short stop at an unwritten exercise; printing and plotting style

# %% [markdown]
# ## Where we are
#
# The model of chapters 01–12 had two stacks. A language model keeps one: no source, no encoder, no
# cross-attention. The map highlights the parts this chapter changes. The letters are those of the
# [notation page](../book/notation.md). $T$ is now the length of the text, and $H_{kv}$ the number of
# key/value heads.
#
# <details><summary>The diagram in words</summary>
#
# One stack stands in the middle, with no encoder beside it. From the
# bottom, the token ids enter the token embedding, and no positions are added there. A dashed frame
# marks the block repeated N times. In it, an RMSNorm comes before the causal self-attention and
# another before the SwiGLU feed-forward network, each sub-layer with a shortcut around it. Above
# the stack come a final RMSNorm, the output layer tied to the embedding, and the softmax. The
# frame, the three RMSNorms, the attention and the feed-forward network are highlighted. At the top,
# two plain boxes stand for training (the loss against the next tokens) and for generation (the next
# token). Section 7 tries them; chapter 14 uses them in full.
#
# </details>

# %%
architecture_map(["norm", "rope", "gqa", "swiglu"], model="decoder-only")

# %% [markdown]
# ## 1. Decoder-only: an encoder layer with a causal mask is a GPT block
#
# The decoder of chapter 06 has three sub-layers. Without a source, cross-attention has nothing to
# read. What is left, self-attention and a feed-forward network, is chapter 05's encoder layer,
# post-LN like the first GPT's. Only the mask differs: a language model lets position $t$ read
# positions $0 \dots t$ only (chapter 06's causal mask). So the output at $t$ can be trained to predict the token at $t + 1$ without
# seeing it.
#
# `DecoderOnlyLM` (in `lm.py`) is built from the existing modules: `TokenEmbedding`, positions, $N$
# `EncoderLayer`s under a causal mask, and an output layer tied to the embedding. `DecoderOnlyConfig`
# holds this chapter's choices, each the paper's unless set. `DecoderOnlyConfig.modern(...)` turns
# on Llama's changes that sections 2–5 build: pre-LN with RMSNorm, RoPE, grouped key/value heads
# (`n_kv_heads`) and SwiGLU, and no dropout. It keeps the biases and the √D scale, which Llama also
# drops (chapter 15). The cell checks it: `EncoderLayer`s under the causal mask give the model's
# logits.

# %%
tiny = DecoderOnlyLM(DecoderOnlyConfig(vocab_size=50, d_model=32, n_heads=4, n_layers=2, d_ff=64, dropout=0.0))
tokens = torch.randint(3, 50, (2, 7))  # (B, T)
assert all(isinstance(layer, EncoderLayer) for layer in tiny.layers)  # chapter 05's layer, unchanged
print(type(tiny.layers[0]).__name__, "×", len(tiny.layers), "— logits", tuple(tiny(tokens).shape))

hidden = tiny.positional(tiny.embed(tokens))  # (B, T, D): what the first block reads
# causal_rows(start, T): mask rows of positions start … start+T−1 (start > 0 once a cache holds earlier text)
blocks = tiny.layers[1](tiny.layers[0](hidden, causal_rows(0, 7)), causal_rows(0, 7))  # (B, T, D)
by_hand = tiny.output(tiny.norm(blocks))  # (B, T, V); the final norm is the identity in post-LN
assert torch.allclose(by_hand, tiny(tokens), atol=1e-6)
print(causal_rows(0, 5).int())  # (T, T): row t may read columns 0 … t

# %% [markdown]
# Because the mask hides the future, the logits at position $t$ must not change when a *later*
# token changes.

# %%
changed = tokens.clone()
changed[:, 5] = 3  # change position 5
same_before = torch.allclose(tiny(tokens)[:, :5], tiny(changed)[:, :5], atol=1e-6)
print("positions 0–4 unchanged when token 5 changes:", same_before)
assert same_before

# %% [markdown]
# > **Common mistake — the causal mask left out.** Run the blocks without the mask, and position $t$
# > reads token $t + 1$, the very token it is trained to predict. Training rewards copying it, and at
# > generation time there is no next token to read. The test above catches it before any training:
# > without the mask, changing token 5 changes the outputs at every position.

# %%
def without_mask(model: DecoderOnlyLM, tokens: torch.Tensor) -> torch.Tensor:
    """The bug: the same blocks, run with no mask."""
    x = model.positional(model.embed(tokens))  # (B, T, D)
    for layer in model.layers:
        x = layer(x, None)  # every position reads every other
    return model.output(model.norm(x))  # (B, T, V)


leak = not torch.allclose(without_mask(tiny, tokens)[:, :5], without_mask(tiny, changed)[:, :5], atol=1e-6)
print("without the mask, positions 0–4 depend on token 5:", leak)
assert leak

# %% [markdown]
# ## 2. RMSNorm: LayerNorm without the mean
#
# The paper normalises each sub-layer's output with LayerNorm (§3.1, post-LN). It subtracts the
# mean of the $D$ features, divides by their standard deviation, scales by $\gamma$ and shifts by
# $\beta$. GPT-2 moved the norm *before* each sub-layer (pre-LN, chapter 05). RMSNorm (Zhang &
# Sennrich 2019) keeps only the division and the scale, and Llama made it the default of open
# models:
#
# $$\mathrm{RMSNorm}(x) = \frac{x}{\sqrt{\frac{1}{D}\sum_i x_i^2 + \epsilon}} \odot g.$$
#
# No mean and no $\beta$: less work, fewer parameters, and in practice about the same
# training (chapter 14, section 5, compares them). On features with mean zero the two agree. The
# cell checks ours against the formula and `torch.nn.RMSNorm`.

# %%
norm = RMSNorm(8, eps=1e-6)
with torch.no_grad():
    norm.weight.uniform_(0.5, 1.5)
x = torch.randn(3, 8)
formula = x / (x.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt() * norm.weight
equal = torch.allclose(norm(x), formula, atol=1e-6)
if hasattr(torch.nn, "RMSNorm"):  # PyTorch >= 2.4
    theirs = torch.nn.RMSNorm(8, eps=1e-6)
    theirs.load_state_dict(norm.state_dict())
    equal = equal and torch.allclose(norm(x), theirs(x), atol=1e-6)
print("equal to the formula, and to torch.nn.RMSNorm where PyTorch has it (2.4 on):", equal)
centred = x - x.mean(-1, keepdim=True)
layer_norm = torch.nn.LayerNorm(8, eps=1e-6, elementwise_affine=False)
print("on centred features, RMSNorm (g = 1) = LayerNorm:",
      torch.allclose(RMSNorm(8, eps=1e-6)(centred), layer_norm(centred), atol=1e-5))

# %% [markdown]
# ## 3. Rotary position embeddings
#
# Chapter 02 added a table of sinusoids to the token embeddings (§3.5). The dot
# product of two rows of that table depends only on the distance $n - m$, and the paper hoped this
# would let the model attend by relative position. Chapters 02 and 04 added a caveat: attention does
# not take that dot product. It compares $(x + PE_m) W^Q$ with $(y + PE_n) W^K$, and once $W^Q$ and
# $W^K$ mix the features, the score is no longer a function of $n - m$ alone.
#
# Rotary embeddings (Su et al. 2021) put the position where the score is made. After the
# projections, the features of a query or key are taken in pairs $(2i, 2i+1)$. Each pair is rotated
# by the angle $p\,\omega_i$, with $\omega_i = 10000^{-2i/d_k}$ for $i = 0 \dots d_k/2 - 1$. These
# are chapter 02's frequencies and its letter $\omega$, with $d_k$, the features of one head, in the
# place of $d_{model}$:
#
# $$\begin{pmatrix} q'_{2i} \\ q'_{2i+1} \end{pmatrix} =
# \begin{pmatrix} \cos p\omega_i & -\sin p\omega_i \\ \sin p\omega_i & \cos p\omega_i \end{pmatrix}
# \begin{pmatrix} q_{2i} \\ q_{2i+1} \end{pmatrix}.$$
#
# Chapter 02's $M_k$ was the same kind of rotation (its pairs were written (sin, cos), so its sines
# carry the other sign). It turned the rows of the *table*, $PE_{pos+k} = M_k\,PE_{pos}$, before any
# projection; RoPE turns the projected queries and keys.
#
# Write $R_m$ for the rotation of position $m$: the block-diagonal matrix of all $d_k/2$ pairs.
# Rotations compose, $R_m^\top R_n = R_{n-m}$. So for a query $q$ at position $m$ and a key $k$ at
# position $n$, $(R_m q) \cdot (R_n k) = q^\top R_m^\top R_n\, k = q \cdot R_{n-m}\, k$. Whatever
# $W^Q$ and $W^K$ are, the score depends on the contents and on the distance only. We check it with
# random projections, one query and one key placed at every pair of positions 6 apart.
#
# <details><summary>The figure in words</summary>
#
# Two lines give the score of one query content and one key content. The key
# stands at position p, from 0 to 199 along the horizontal axis, and the query 6 positions later.
# The blue line, with sinusoids added to the embeddings, swings up and down as p changes. The orange
# line, with rotary embeddings, is flat: the score is the same at every position.
#
# </details>

# %%
torch.manual_seed(0)
d = 16  # features of one head
w_q, w_k = torch.randn(d, d) / d**0.5, torch.randn(d, d) / d**0.5  # arbitrary W^Q, W^K
x, y = torch.randn(d), torch.randn(d)  # the contents of a query token and of a key token
distance, key_positions = 6, torch.arange(0, 200)  # key at p, query at p + 6
table = sinusoidal_positional_encoding(256, d)  # (256, d): chapter 02's sinusoids

rope_scores = (apply_rope((x @ w_q).expand(200, d), key_positions + distance)
               * apply_rope((y @ w_k).expand(200, d), key_positions)).sum(-1)  # (200,)
added_scores = (((x + table[key_positions + distance]) @ w_q) * ((y + table[key_positions]) @ w_k)).sum(-1)  # (200,)
rope_range = (rope_scores.max() - rope_scores.min()).item()
added_range = (added_scores.max() - added_scores.min()).item()
print(f"RoPE: all 200 scores agree to 1e-4: {rope_range < 1e-4}")
print(f"sinusoids added: the scores spread over {added_range:.2f}")
assert rope_range < 1e-4 < added_range

fig, ax = plt.subplots(figsize=(8, 3.2))
ax.plot(key_positions, added_scores, label="sinusoids added to the embeddings (chapter 02)")
ax.plot(key_positions, rope_scores, label="rotary embeddings (RoPE)", lw=2)
ax.set(xlabel="position p of the key (the query at p + 6)", ylabel="score q · k",
       title="With RoPE the score of two tokens 6 apart does not depend on where they are")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize=8)  # below the plot
plt.show()

# %% [markdown]
# **Cached decoding turns each key by its own position.** Our KV cache (chapter 09) keeps the keys
# as $W^K$ gave them. At each step `RotaryAttention` turns every key $k_t$ by its own position $t$,
# and the new query by its position. Turning all the keys by the newest position would be a bug:
# every distance would become 0. The cell below checks that `RotaryAttention` gives the same output on a whole text and
# one token at a time.
#
# Values are never turned: the position belongs in the *score*, and a turned value would carry its
# absolute position into the output. `with_cache(attention, cache)` is that layer with its $W^K$ and
# $W^V$ also storing their output in `cache`: called on one new token, it attends to every stored key.

# %%
torch.manual_seed(0)
attention = RotaryAttention(32, n_heads=4).eval()
text = torch.randn(1, 9, 32)  # (B, T, D)
whole, _ = attention(text, text, text, causal_rows(0, 9))  # (B, T, D)
cache = KVCache()  # one layer's keys and values (chapter 09)
cached = with_cache(attention, cache)  # the same weights; W^K and W^V keep what they projected
with torch.no_grad():
    one_by_one = [cached(text[:, t : t + 1], text[:, t : t + 1], text[:, t : t + 1])[0] for t in range(9)]
print(
    "one token at a time with a cache = the whole text at once:", torch.allclose(torch.cat(one_by_one, 1), whole, atol=1e-5)
)
print("keys in the cache:", len(cache))

# %% [markdown]
# <details><summary>Other layouts, longer texts</summary>
#
# Hugging Face's Llama pairs feature $i$ with feature $i + d_k/2$:
# the same rotations in another order (chapter 15 converts one into the other). For longer texts,
# Llama 3.1, pretrained on texts of 8,192 tokens, sorts the pairs by wavelength (the distance over
# which a pair turns once). Pairs whose wavelength exceeds 8,192 turn 8 times slower, pairs below
# 2,048 keep their speed, and those between get a blend. So the fast pairs, which tell short
# distances apart, stay as trained; position interpolation (Chen et al. 2023) slowed them all.
#
# </details>

# %% [markdown]
# ## 4. Grouped-query attention and the KV cache
#
# A model that generates keeps, for every layer, the keys and values of every position so far. With
# the paper's $H$ heads of $d_k = D/H$ features, that is $2 \cdot N \cdot H \cdot d_k \cdot T$
# numbers per text. For long texts and large batches it outgrows the weights, and reading it at
# every step limits the speed of generation. Multi-query attention (Shazeer 2019)
# keeps one key head and one value head for all query heads. Grouped-query attention (Ainslie et al.
# 2023) keeps $H_{kv}$ of them, each shared by $H / H_{kv}$ query heads. Llama 2's 34B and
# 70B models and every Llama 3 size have 8.
#
# <details><summary>The diagram in words</summary>
#
# Three panels, each with eight query heads on top and the key/value heads
# below. A line joins each query head to the key/value head it reads. In multi-head attention
# ($H_{kv} = 8$) each query head has its own. In grouped-query attention with $H_{kv} = 2$, query
# heads 1–4 read the first key/value head and heads 5–8 the second. In multi-query attention
# ($H_{kv} = 1$) all eight read one. The cache holds only the key/value heads.
#
# </details>

# %%
grouped_query_heads(n_heads=8, kv_heads=(8, 2, 1))

# %% [markdown]
# `GroupedQueryAttention(..., n_kv_heads=...)` (`transformer_course/grouped.py`) is chapter 04's
# `MultiHeadAttention` with smaller $W^K$ and $W^V$. It projects $H_{kv}$ key and value heads, and
# `repeat_kv` hands each query head its group's.

# %%
torch.manual_seed(0)
grouped = GroupedQueryAttention(64, n_heads=8, n_kv_heads=2)
x = torch.randn(2, 10, 64)  # (B, T, D)
ours, _ = grouped(x, x, x, causal_rows(0, 10))  # (B, T, D)
q = split_heads(grouped.w_q(x), 8)  # (B, 8, T, 8)
k, v = split_heads(grouped.w_k(x), 2), split_heads(grouped.w_v(x), 2)  # (B, 2, T, 8): 2 key/value heads
print("q", tuple(q.shape), "k", tuple(k.shape), "v", tuple(v.shape))
if tuple(int(n) for n in torch.__version__.split(".")[:2]) >= (2, 5):
    heads = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # (B, 8, T, 8)
else:  # older PyTorch: no enable_gqa; repeat the heads ourselves
    heads = F.scaled_dot_product_attention(q, repeat_kv(k, 4), repeat_kv(v, 4), is_causal=True)
print("equal to PyTorch's fused attention on the shared heads (enable_gqa=True from 2.5, repeat_kv before):",
      torch.allclose(ours, grouped.w_o(merge_heads(heads)), atol=1e-5))
print("parameters of W^K and W^V:", grouped.w_k.weight.numel() + grouped.w_v.weight.numel(),
      "instead of", 2 * 64 * 64)

# %% [markdown]
# Now the cache of a real model, Llama 3 8B: 32 layers and $H = 32$ heads of 128 features
# ($D = 4096$), for a text of 8,192 tokens in bf16 (2 bytes a number). Below, the formula for three
# values of $H_{kv}$, beside our small models' caches.
#
# <details><summary>The figure in words</summary>
#
# Two bar charts show the size of one text's KV cache for three numbers of
# key/value heads. The left one is computed for Llama 3 8B's sizes: 4 GiB with 32 key/value heads,
# 1 GiB with 8 and 0.125 GiB with 1. The right one is measured on our two-layer models after 64
# tokens. It shows 128 KiB with 8 key/value heads, 32 KiB with 2 and 16 KiB with 1. In both, the
# cache shrinks in proportion to the number of key/value heads.
#
# </details>

# %%
def cache_bytes(n_layers: int, n_kv_heads: int, d_head: int, tokens: int, bytes_per_number: int) -> int:
    """Keys and values of every layer, head and position."""
    return 2 * n_layers * n_kv_heads * d_head * tokens * bytes_per_number


big = {f"H_kv = {h}": cache_bytes(32, h, 128, 8192, 2) / 2**30 for h in (32, 8, 1)}
held = {}  # chapter 09's cache grows by concatenation (a server allocates it once)
for h in (8, 2, 1):
    small = DecoderOnlyLM(DecoderOnlyConfig.modern(100, d_model=128, n_heads=8, n_kv_heads=h, n_layers=2))
    cache = small.new_cache()
    with torch.no_grad():
        small(torch.randint(3, 100, (1, 64)), cache)
    held[f"H_kv = {h}"] = sum(c.nbytes() for c in cache) / 2**10  # the keys and values of 64 positions
    assert held[f"H_kv = {h}"] == cache_bytes(2, h, 16, 64, 4) / 2**10
print("our models' caches (KiB):", held)

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.4))
left.bar_label(left.bar(list(big), list(big.values()), color=["C0", "C1", "C2"]), fmt="%.3g GiB")
left.set(ylabel="GiB per text", title="32 layers, D = 4096, H = 32, 8,192 tokens, bf16 (computed)")
right.bar_label(right.bar(list(held), list(held.values()), color=["C0", "C1", "C2"]), fmt="%.0f KiB")
right.set(ylabel="KiB per text", title="our models: 2 layers, H = 8, 64 tokens, float32 (measured)")
for ax in (left, right):
    ax.margins(y=0.15)  # room above the tallest bar for its label
fig.suptitle("The KV cache shrinks with the number of key/value heads", y=1.02)
fig.tight_layout()
plt.show()

# %% [markdown]
# **What a generated token costs.** With a cache, a step of generation feeds one token per text.
# Each weight is read once per step and used for two operations per text, a multiply and an add.
# Every text's cache is read once too. A GPU does a few hundred operations in the time it reads a
# byte (an H100: about 1,000 TFLOP/s in bf16, tera-operations per second, against 3.35 TB/s). So
# at batch 1 a step waits for memory: it takes about its bytes divided by the memory's speed. For
# Llama 3 8B in bf16 and texts of 8,192 tokens (the operations count the weights only; attention
# over the cache adds about a quarter more):

# %% tags=["hide-input"]
weights_gb, flops_per_text = 8.0e9 * 2 / 1e9, 2 * 8.0e9  # bf16 weights (GB); operations per token (2 per weight)
bandwidth_gb_s = 3350  # an H100's memory
print(f"{'batch':>5s} {'Hkv':>4s} {'GB read per step':>17s} {'of which cache':>15s} {'FLOPs per byte':>15s} "
      f"{'ms per step (bytes / bandwidth)':>32s}")
for batch in (1, 32):
    for h in (32, 8):
        cache_gb = batch * cache_bytes(32, h, 128, 8192, 2) / 1e9
        read = weights_gb + cache_gb
        print(f"{batch:5d} {h:4d} {read:17.1f} {cache_gb:15.1f} {batch * flops_per_text / (read * 1e9):15.1f} "
              f"{1000 * read / bandwidth_gb_s:32.1f}")

# %% [markdown]
# At batch 1 every design reads the 16 GB of weights and does about one operation per byte: the
# step is bound by memory. A batch shares the weights, so at batch 32 one read serves 32 texts. But
# each text brings its own cache. With $H_{kv} = 32$, the caches of 32 long texts (137 GB) outweigh
# the weights many times. They do not fit: an H100 holds 80 GB. Grouped-query
# attention's 8 heads divide them by 4: the batch fits, and the estimated step falls from 45.8 to
# 15.0 ms (at batch 1, from 6.1 to 5.1 ms). At about 10 operations per byte, it still waits for
# memory.
#
# **Batching, timed on a CPU.** The cell below times a step of a small model for 1 text and 16 at
# once: it measures batching, not shared heads. Per text the batch is cheaper: one step's
# calls into PyTorch serve all 16 texts, and a call has a fixed cost whatever its size (chapter 16
# counts them).

# %% tags=["measured", "nbval-ignore-output", "hide-input"]
def step_time(batch: int) -> float:
    """Seconds per step of generation, for a small modern model (D = 256, 4 blocks) and ``batch``
    texts at once."""
    lm = DecoderOnlyLM(DecoderOnlyConfig.modern(1000, d_model=256, n_heads=8, n_kv_heads=2, n_layers=4)).eval()
    with torch.no_grad():
        lm.embed.embedding.weight[lm.config.eos_id] = 0.0  # <eos>'s logit 0: never chosen, every step runs
    prompt = torch.randint(3, 1000, (batch, 8))  # a prompt of 8 tokens
    generate(lm, prompt, 2)  # warm-up
    start = time.perf_counter()
    out = generate(lm, prompt, 33)
    assert out.shape[1] == 8 + 33
    return (time.perf_counter() - start) / 33


torch.manual_seed(0)
threads = torch.get_num_threads()
torch.set_num_threads(1)  # one thread: steadier timings when other programs share the CPU
step_times = {batch: min(step_time(batch) for _ in range(3)) for batch in (1, 16)}  # the best of 3 runs
torch.set_num_threads(threads)
for batch, seconds in step_times.items():
    print(f"batch {batch:2d}: {1000 * seconds:5.2f} ms per step, {1000 * seconds / batch:5.2f} ms per text")
display(Markdown(f"On this machine, in this run, a step of 16 texts took {step_times[16] / step_times[1]:.1f} times "
                 "as long as a step of one (a timing: it moves with whatever else the processor runs)."))

# %% tags=["measured", "hide-cell"]
expect_at_most("a step of 16 texts, relative to a step of one (16 would be no saving)", step_times[16] / step_times[1], 10)

# %% [markdown]
# ## 5. SwiGLU: a gated feed-forward network
#
# The paper's
# feed-forward network is $W_2\,\max(0, W_1 x + b_1) + b_2$ with $d_{ff} = 4D$ (§3.3).
# Shazeer (2020) tried *gated* variants, in which one projection, through a smooth activation,
# scales another feature by feature. SwiGLU is the one PaLM and Llama use:
#
# $$\mathrm{SwiGLU}(x) = W_2\big(\mathrm{silu}(W_1 x) \odot W_3 x\big), \qquad \mathrm{silu}(z) = z\,\sigma(z).$$
#
# It has three matrices instead of two. To compare at equal size, the hidden width shrinks to
# $d_{ff} = \tfrac{2}{3} \cdot 4D$: then $3 \cdot D \cdot \tfrac{8}{3}D = 2 \cdot D \cdot 4D$. LLaMA
# 1 and the 7B and 13B Llama 2 round $\tfrac{8}{3}D$ up to a multiple of 256: 11,008 for $D = 4096$,
# 13,824 for $D = 5120$. Llama 2 70B ($D = 8192$, width 28,672) and Llama 3 8B ($D = 4096$, width
# 14,336) go to $3.5\,D$. Their SwiGLU networks then have more weights than a ReLU network with
# $d_{ff} = 4D$ ($10.5\,D^2$ against $8\,D^2$).

# %%
for d_model in (64, 512, 4096):
    relu = PositionwiseFeedForward(d_model, 4 * d_model, dropout=0.0)
    swiglu = SwiGLU(d_model, swiglu_hidden_size(d_model))
    n_relu, n_swiglu = (sum(p.numel() for p in net.parameters()) for net in (relu, swiglu))
    print(f"D = {d_model:4d}: ReLU d_ff = {4 * d_model:5d}: {n_relu:11,d} parameters | "
          f"SwiGLU d_ff = {swiglu_hidden_size(d_model):5d}: {n_swiglu:11,d} ({n_swiglu / n_relu - 1:+.2%})")
print("⅔ · 4 · D rounded up to a multiple of 256, for D = 4096 and 5120:",
      swiglu_hidden_size(4096, multiple_of=256), swiglu_hidden_size(5120, multiple_of=256))
x = torch.randn(4, 64)
swiglu = SwiGLU(64, swiglu_hidden_size(64))
assert torch.allclose(swiglu(x), swiglu.w2(F.silu(swiglu.w1(x)) * swiglu.w3(x)), atol=1e-6)

# %% [markdown]
# The counts differ only by the ReLU network's biases and the rounding of $\tfrac{8}{3}D$. Whether
# the gate helps at equal size is a question for training: chapter 14, section 5, asks it.
#
# ## 6. Attention one block of keys at a time
#
# Section 4 shrank the cache, which grows with the text. The attention weights grow with its square.
# Chapter 03's attention builds the full $T \times S$ matrix of weights for every head. For a text of
# $T = 32{,}000$ tokens that is a billion numbers per head (4 GB in float32). Yet each output row is
# only a weighted mean of the values, and a softmax can be accumulated *online*. Read the keys in
# blocks, and keep two running numbers and one running vector for each query: the largest score so
# far $\mu$, the sum $\ell$ of $e^{s - \mu}$, and the vector $a$, the sum of $e^{s - \mu}\,v$. When a
# block brings a larger maximum $\mu'$, the old sums are multiplied by $e^{\mu - \mu'}$. At the end,
# $a / \ell$ is exactly $\mathrm{softmax}(s)\,V$.
#
# By hand first, for one query whose four scores $s = [1, 3, 2, 5]$ arrive in two blocks, $[1, 3]$
# then $[2, 5]$. Each value is a single number here, $v = [10, 20, 30, 40]$, so $a$ is a number too.

# %%
s = torch.tensor([1.0, 3.0, 2.0, 5.0])  # one query's scores, read in two blocks
v = torch.tensor([10.0, 20.0, 30.0, 40.0])  # one number per value
top, ell, a = torch.tensor(float("-inf")), torch.tensor(0.0), torch.tensor(0.0)  # blocked.py's top, total, acc
for block in (slice(0, 2), slice(2, 4)):
    top_new = torch.maximum(top, s[block].max())  # the running maximum
    rescale = torch.exp(top - top_new)  # e^(μ - μ'): 0 at the first block, where μ = -inf
    ell = ell * rescale + torch.exp(s[block] - top_new).sum()
    a = a * rescale + (torch.exp(s[block] - top_new) * v[block]).sum()
    print(f"block {s[block].tolist()}: μ = {top_new:.0f}, old sums × {rescale:.4f}, ℓ = {ell:.4f}, a = {a:.4f}")
    top = top_new
weights = torch.exp(s - top) / ell  # (4,): every score's e^(s - μ), over the same ℓ
print("e^(s - μ) / ℓ:          ", [f"{w:.4f}" for w in weights])
print("softmax([1, 3, 2, 5]):  ", [f"{w:.4f}" for w in torch.softmax(s, 0)])
print(f"a / ℓ = {a / ell:.4f}, softmax(s) · v = {torch.softmax(s, 0) @ v:.4f}")
assert torch.allclose(weights, torch.softmax(s, 0)) and torch.isclose(a / ell, torch.softmax(s, 0) @ v)

# %% [markdown]
# After the first block, $\mu = 3$ and $\ell = e^{-2} + e^{0}$. The second block brings $\mu' = 5$.
# So the old $\ell$ and $a$ are multiplied by $e^{3 - 5} = e^{-2}$ before the block's own terms are
# added. Then every term of $\ell$ is $e^{s - 5}$, as if all four scores had been read at once, and
# the weights are the softmax of $[1, 3, 2, 5]$.
#
# Milakov & Gimelshein (2018) computed a softmax in one pass this way. Rabe & Staats (2021) applied
# it to attention, one block of keys at a time, as `blocked_attention` (in `blocked.py`) does in
# plain PyTorch. Its loop's body is `online_softmax_update` (exercise ex13_5), the update above.
# FlashAttention (Dao et al. 2022) made it fast on GPUs, where its tiles stay in the fast on-chip
# memory. For training it saves only $\mu$ and $\ell$ of each query and recomputes the blocks in
# the backward pass.

# %%
torch.manual_seed(0)
q, k, v = torch.randn(3, 1, 4, 512, 64).unbind(0)  # (B, H, T, d_k) each
blocked = blocked_attention(q, k, v, causal_rows(0, 512), block_size=64)  # (B, H, T, d_v)
reference = F.scaled_dot_product_attention(q, k, v, is_causal=True)
print("blocked = F.scaled_dot_product_attention to 1e-5:", torch.allclose(blocked, reference, atol=1e-5))
assert torch.allclose(blocked, reference, atol=1e-5)

# %% [markdown]
# Does it save memory? `peak_memory_mib(fn)` measures the most memory the tensors of one call hold
# at once. Take one text of 2,048 tokens and 4 heads. The full matrix of weights alone is $4 \cdot
# 2048^2 \cdot 4$ bytes $= 64$ MiB, and the teaching path holds the scores and the weights at once.
# The blocked path holds the scores of one block of 128 keys at a time. This is inference, under
# `torch.no_grad()`.

# %%
torch.manual_seed(0)
q, k, v = torch.randn(3, 1, 4, 2048, 64).unbind(0)  # (B, H, T, d_k) each
mask = causal_rows(0, 2048)  # (T, T)
with torch.no_grad():
    peaks = {
        "teaching path (chapter 03)": peak_memory_mib(lambda: scaled_dot_product_attention(q, k, v, mask)[0]),
        "blocked, 128 keys a block": peak_memory_mib(lambda: blocked_attention(q, k, v, mask, block_size=128)),
    }

# %% tags=["nbval-ignore-output"]
for name, mib in peaks.items():
    print(f"{name:28s} peak {mib:6.1f} MiB")

# %% tags=["hide-cell"]
expect("the teaching path's peak holds at least the 64 MiB of its weights",
       peaks["teaching path (chapter 03)"] >= 64, f"{peaks['teaching path (chapter 03)']:.0f} MiB")
expect("the blocked path's peak is less than a quarter of that",
       peaks["blocked, 128 keys a block"] < peaks["teaching path (chapter 03)"] / 4,
       f"{peaks['blocked, 128 keys a block']:.0f} MiB")

# %% [markdown]
# At inference the blocked path's peak is several times smaller than the teaching path's (the
# two peaks printed above): it never holds the whole matrix. In training, autograd keeps every
# block's scores and weights. Below, with gradients, at half the length:

# %%
torch.manual_seed(0)
q, k, v = (t.requires_grad_() for t in torch.randn(3, 1, 4, 1024, 64).unbind(0))  # (B, H, T, d_k) each
mask = causal_rows(0, 1024)  # (T, T)
training_peaks = {
    "teaching path (chapter 03)": peak_memory_mib(lambda: scaled_dot_product_attention(q, k, v, mask)[0]),
    "blocked, 128 keys a block": peak_memory_mib(lambda: blocked_attention(q, k, v, mask, block_size=128)),
}

# %% tags=["nbval-ignore-output"]
for name, mib in training_peaks.items():
    print(f"{name:28s} peak with autograd {mib:6.1f} MiB")

# %% tags=["hide-cell"]
expect("with autograd the blocked loop saves nothing: its peak is at least 90 % of the full matrix's",
       training_peaks["blocked, 128 keys a block"] >= 0.9 * training_peaks["teaching path (chapter 03)"],
       f"{training_peaks['blocked, 128 keys a block']:.0f} vs {training_peaks['teaching path (chapter 03)']:.0f} MiB")

# %% [markdown]
# With gradients, the blocked loop's peak is as large as the full matrix's, or larger: it saves
# nothing, because autograd keeps every block. On a supported GPU, in fp16 or bf16,
# PyTorch's fused `F.scaled_dot_product_attention` runs FlashAttention when told `is_causal=True`
# (no mask), as `DecoderOnlyLM` does on a whole text.
#
# ## 7. The modern block learns to write
#
# `DecoderOnlyConfig.modern` holds every part of sections 2–5. Does the block learn? We train a
# small one for 300 steps on six plays by Shakespeare, shipped with the course (*Hamlet* among
# them). A play is cut into passages: a speech with its speaker, a stage direction, a scene
# heading. The end of each play is held out. `train_subwords` learns the tokens: the byte-pair
# encoding behind chapter 12's `shared_tokenizer`. Passages are packed into texts of at most 128
# tokens.

# %%
from transformer_course.batching import batch_stream, pad_sequences
from transformer_course.datasets.shakespeare import pack_passages, shakespeare_splits
from transformer_course.subwords import train_subwords

splits = shakespeare_splits()  # {"train", "valid", "test"}: lists of passages
tokenizer = train_subwords(splits["train"], vocab_size=2000)  # BPE on the training passages


def pack(passages: list[str]) -> list[list[int]]:
    """Passages → texts <bos> … <eos> of at most 128 token ids, several passages in a row."""
    return pack_passages(tokenizer.encode_batch(passages), 128, tokenizer.bos_id, tokenizer.eos_id)


train, valid = pack(splits["train"]), pack(splits["valid"])
print(f"{len(splits['train']):,} passages → {len(train):,} training texts of {sum(map(len, train)):,} tokens")
print("a passage:", splits["train"][11])
print("its tokens:", tokenizer.tokens(splits["train"][11]))

# %% [markdown]
# The training loop is chapter 08's `fit`, unchanged, with the paper's Adam and equation (3), but
# no label smoothing. Language models usually train without it: the text already spreads the
# next-token probabilities. `WithoutSource` hands it the language model as a translator with
# an empty source; `batch_stream` (chapter 08's `batching.py`) deals the batches. The model has $D = 128$, 2 blocks, 4
# query heads and 2 key/value heads, and reads 300 batches of 16 texts. Then it writes.
# `generate(lm, prompt, n)` is chapter 09's loop for a language model: it appends n tokens to the
# prompt, the most probable by default, or sampled with `temperature` and `top_p`.

# %%
from transformer_course.lm import WithoutSource
from transformer_course.schedule import make_optimizer, transformer_scheduler
from transformer_course.training import FitOptions, fit

torch.manual_seed(0)
config = DecoderOnlyConfig.modern(len(tokenizer), d_model=128, n_heads=4, n_kv_heads=2, n_layers=2, max_len=128)
lm = DecoderOnlyLM(config)
optimizer = make_optimizer(lm)  # chapter 08: Adam, β = (0.9, 0.98), ε = 1e-9
scheduler = transformer_scheduler(optimizer, d_model=128, warmup_steps=100)  # equation (3)
batches = batch_stream([([], ids) for ids in train], 16, tokenizer.pad_id, seed=0)  # (no source, text)
history = fit(WithoutSource(lm), batches, optimizer, scheduler, 300, options=FitOptions(smoothing=0.0, progress=False))

held_out = pad_sequences(valid, tokenizer.pad_id)  # (N, L): the held-out ends of the plays
with torch.no_grad():
    logits = lm.eval()(held_out[:, :-1])  # (N, L-1, V): every next token, teacher-forced
valid_loss = F.cross_entropy(logits.transpose(1, 2), held_out[:, 1:], ignore_index=tokenizer.pad_id).item()


def write(prompt: str, **sampling) -> str:
    """The prompt continued by up to 40 tokens (greedy, or sampled with chapter 09's settings)."""
    ids = torch.tensor([tokenizer.encode(prompt, add_bos=True)])  # (1, T)
    return tokenizer.decode(generate(lm, ids, 40, **sampling)[0].tolist())

# %% tags=["nbval-ignore-output"]
print(f"{history.seconds:.0f} s of training; held-out loss {valid_loss:.2f} nats per token")
print("greedy: ", write("Ham. To be"))
sampler = torch.Generator().manual_seed(0)
for prompt in ("HAMLET.", "Rom. What", "Enter"):
    print("sampled:", write(prompt, temperature=0.8, top_p=0.9, generator=sampler))

# %% [markdown]
# After 300 steps the model writes fragments of speeches in mostly English words, with little
# sense, and speaker names, not always in the right place. Greedy decoding loops (chapter 09); the
# samples vary. The model has learnt more than how often each token occurs: on the held-out
# ends of the plays, its loss is more than a nat per token below that of a model that knows only
# those frequencies (printed below). To get there it must read the tokens before.

# %% tags=["hide-input"]
counts = torch.bincount(torch.tensor([i for ids in train for i in ids[1:]]), minlength=len(tokenizer))  # (V,)
targets = held_out[:, 1:][held_out[:, 1:] != tokenizer.pad_id]  # every held-out next token
frequency_loss = -(counts.float() / counts.sum()).clamp_min(1e-9)[targets].log().mean().item()
print(f"held-out loss of a model that knows only how often each token occurs: {frequency_loss:.2f} nats per token")
expect_at_most("held-out loss, more than a nat below the token frequencies' (nats)", valid_loss,
               round(frequency_loss - 1.0, 1))

# %% [markdown]
# ## Summary
#
# - A GPT is chapter 05's encoder layer under chapter 06's causal mask, with a tied output layer:
#   `DecoderOnlyLM`. No position may read a later token.
# - RMSNorm drops LayerNorm's mean and shift. RoPE rotates queries and keys so that the score depends
#   on the distance only, whatever $W^Q$ and $W^K$ are; at every step each cached key is turned by
#   its own position.
# - A KV cache holds $2 \cdot N \cdot H_{kv} \cdot d_k \cdot T$ numbers per text. Grouped-query
#   attention shares key/value heads and shrinks it by $H / H_{kv}$. SwiGLU gates
#   the feed-forward network at equal parameters.
# - Blocked attention gives the same result as the full matrix with an online softmax. At
#   inference it holds a fraction of the memory; with autograd a plain blocked loop saves nothing,
#   unless the backward pass recomputes the blocks (FlashAttention).
# - Trained for 300 steps with chapter 08's loop, the modern block writes fragments of speeches in
#   mostly English words.

# %% [markdown]
# **Exercises:**
# [exercises/ex13_modern_language_models.ipynb](../exercises/ex13_modern_language_models.ipynb) asks
# you to write `RMSNorm.forward` (ex13_1), `apply_rope` (ex13_2), `repeat_kv` (ex13_3),
# `SwiGLU.forward` (ex13_4) and `online_softmax_update` (ex13_5). Stuck on one? `python -m
# transformer_course restore ex13_1` puts its worked answer in your student edition.
#
# ## Check yourself
#
# 1. Why can a decoder-only model be built from encoder layers, and what single change makes it
#    a language model?
#    <details><summary>Answer</summary>
#
#    Without a source, cross-attention has nothing to read: a block is self-attention and a
#    feed-forward network, as in the encoder. The causal mask lets position $t$ read only positions
#    $0 \dots t$, so its output can be trained to predict token $t + 1$.
#    </details>
# 2. With sinusoids added to the embeddings, why does the attention score of two tokens depend on
#    more than their distance? Why does it not with RoPE?
#    <details><summary>Answer</summary>
#
#    The score $((x + PE_m) W^Q) \cdot ((y + PE_n) W^K)$ mixes the tables with the contents
#    through $W^Q {W^K}^\top$, so it depends on $m$ and $n$ separately. RoPE rotates after the
#    projections, and $R_m^\top R_n = R_{n-m}$: only the difference remains.
#    </details>
# 3. A model has 32 layers, 32 query heads of 128 features and 8 key/value heads. How many bytes
#    does its bf16 KV cache take for a batch of 4 texts of 4,096 tokens?
#    <details><summary>Answer</summary>
#
#    $2 \cdot 32 \cdot 8 \cdot 128 \cdot 4096 \cdot 4 \cdot 2$ bytes $= 2$ GiB.
#    </details>
# 4. Why is SwiGLU's hidden size $\tfrac{2}{3} \cdot 4D$ rather than $4D$?
#    <details><summary>Answer</summary>
#
#    It has three $D \times d_{ff}$ matrices instead of two: with $d_{ff} = \tfrac{8}{3} D$, it has
#    $8 D^2$ weights, as the ReLU network has. So a comparison measures the gate, not a bigger network.
#    </details>
# 5. Blocked attention reads the keys in blocks. When a block brings a larger maximum score, what
#    has to happen to the running sums, and why?
#    <details><summary>Answer</summary>
#
#    Both sums hold terms $e^{s - \mu}$ of the old maximum $\mu$. Multiplied by $e^{\mu - \mu'}$,
#    they hold $e^{s - \mu'}$, like the new terms; so $a / \ell$ is the exact softmax-weighted mean.
#    </details>
#
# ## Further reading
#
# - The paper: §3.1, §3.3, §3.5.
# - Radford et al. (2018, 2019): GPT and GPT-2.
# - Zhang and Sennrich (2019), *Root Mean Square Layer Normalization*.
# - Su et al. (2021), *RoFormer: Enhanced Transformer with Rotary Position Embedding*.
# - Shazeer (2019), *Fast Transformer Decoding* (multi-query attention); Ainslie et al. (2023), *GQA*.
# - Shazeer (2020), *GLU Variants Improve Transformer*.
# - Milakov and Gimelshein (2018), *Online normalizer calculation for softmax*; Rabe and Staats (2021),
#   *Self-attention Does Not Need O(n²) Memory*; Dao et al. (2022), *FlashAttention*.
# - Chen et al. (2023), *Positional Interpolation*; Meta (2024), *The Llama 3 Herd of Models*.
# - Touvron et al. (2023), *LLaMA* and *Llama 2*.

# %% [markdown]
# **Next:** [Chapter 14 — Training a modern language model](14_training_a_language_model.ipynb): the
# modern language model is trained, sampled and compared with the 2017 choices.
