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
# # Exercises 07 — Counting parameters
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex07_counting_parameters.ipynb)
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# Companion of [chapter 07](../chapters/07_counting_parameters.ipynb): the size of a Transformer as
# a formula, in functions that build on each other. One multi-head attention, one encoder or
# decoder layer, and the whole model of a `TransformerConfig`, with its tied matrices, its shared
# vocabulary and the final LayerNorms of pre-LN.
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. In the student edition its body is a stub that raises
# `NotImplementedError`; you write the body **in the package file** named in the exercise, not in
# this notebook. Because the chapters import the package, chapter 07 then runs on your code.
#
# After editing the file, run the exercise's check cell. It compares your function with an
# independent reference (the course's modules built on PyTorch's meta device, each distinct
# parameter counted once) and prints one line:
# ✓ passed, ○ not implemented yet, or ✗ with the input that failed and what is wrong. The same
# checks run from a terminal:
#
# ```bash
# python -m transformer_course check ex07_1     # one exercise (or no id: a table of all of them)
# pytest -m ex07_1                              # the same check through pytest
# ```
#
# Each exercise also has a **try it** cell, a scratch space. The set-up cell below makes the notebook
# pick up your edits to the package without restarting the kernel.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex07_1 | `attention_parameters(d_model, n_heads, d_k, d_v, bias)` in `counting.py` | easy |
# | ex07_2 | `layer_parameters(d_model, n_heads, d_ff, d_k, d_v, decoder)` in `counting.py` | medium |
# | ex07_3 | `transformer_parameters(config)` in `counting.py` | hard |
#
# **Before you start:** chapter 07 also runs exercises of other chapters: ex01_2, ex02_1, ex02_2,
# ex03_1, ex03_2, ex03_3, ex04_1, ex04_2, ex04_3, ex05_1, ex05_2, ex05_3, ex06_1, ex06_2 and ex06_3.
# Until they are written it stops at the first of them, naming all those still to write.
#
# **Order:** ex07_2 calls ex07_1; ex07_3 calls ex07_2, so write ex07_1 and ex07_2 first.

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
from dataclasses import replace

import torch

from transformer_course import MultiHeadAttention, Transformer, TransformerConfig
from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

setup_chapter("07")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex07_1 — The parameters of one multi-head attention (easy)
#
# **File:** `transformer_course/counting.py`, function `attention_parameters(d_model, n_heads,
# d_k=None, d_v=None, bias=True)`.
#
# Return the number of parameters of `MultiHeadAttention(d_model, n_heads, d_k, d_v, bias=bias)`
# (chapter 04) without building it. A linear layer from $n_\text{in}$ to $n_\text{out}$ features
# holds $n_\text{in} \cdot n_\text{out}$ weights and, with a bias, $n_\text{out}$ more. $W^Q$ and
# $W^K$ map $D$ features to $H \cdot d_k$, $W^V$ maps $D$ to $H \cdot d_v$, and $W^O$ maps
# $H \cdot d_v$ back to $D$. The checks of the arguments are already written; they also fill in
# `d_k` and `d_v` ($D / H$ when left out).
#
# - **Sizes:** whole numbers in, one `int` out.
# - **Watch for:** the heads sit side by side, so a projection has $H \cdot d_k$ features, not
#   $d_k$; $H \cdot d_k$ equals $D$ when `d_k` is left out, not in general; each bias has its
#   layer's output size ($D$ for $W^O$); no biases when `bias=False`.

# %%
from transformer_course.counting import attention_parameters  # yours (an earlier cell may use the name)

### BEGIN SOLUTION
print(f"{attention_parameters(512, 8):,} in the paper's base attention, {attention_parameters(512, 8, bias=False):,} "
      "without biases")  # fmt: skip
row_b = attention_parameters(512, 8, d_k=16, d_v=64)  # Table 3, row (B): smaller queries and keys
with torch.device("meta"):  # shapes only: the module built, its parameters counted, no memory used
    built = MultiHeadAttention(512, 8, d_k=16, d_v=64)
print(f"row (B) with d_k = 16: {row_b:,}; counted on the meta device: {sum(p.numel() for p in built.parameters()):,}")
### END SOLUTION

# %% [markdown]
# *In your own words:* Table 3's rows (A) change the number of heads $H$ at a constant
# $H \cdot d_k = 512$, and the paper prints no size for them. Why would their size be the base
# model's? And how many parameters does one attention lose in row (B), $d_k = 16$, and the whole
# base model, whose 6 encoder and 6 decoder layers hold 18 attentions?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# queries_and_keys = 2 * (d_model * n_heads * d_k + (n_heads * d_k if bias else 0))  # W^Q, W^K: (D, H·d_k)
# values = d_model * n_heads * d_v + (n_heads * d_v if bias else 0)  # W^V: (D, H·d_v)
# output = n_heads * d_v * d_model + (d_model if bias else 0)  # W^O: (H·d_v, D)
# return queries_and_keys + values + output
# ```
#
# The count depends on $H$ and $d_k$ only through $H \cdot d_k$ and $H \cdot d_v$, the widths of the
# projections. In rows (A) those stay 512, so every projection stays a $512 \times 512$ matrix with
# a bias of 512: $4(D^2 + D) = 1{,}050{,}624$ parameters per attention, whatever $H$. More heads cut
# the same matrices into thinner slices; they add no parameters.
#
# Row (B) keeps $d_v = 64$ but gives queries and keys $H \cdot d_k = 128$ features. $W^Q$ and $W^K$
# shrink from $2(512 \cdot 512 + 512)$ to $2(512 \cdot 128 + 128)$: 393,984 fewer per attention, and
# $18 \times 393{,}984 = 7{,}091{,}712$ fewer in the model, about the 7M between the base row's 65M
# and row (B)'s 58M in Table 3.
# ### END SOLUTION

# %%
check("ex07_1")

# %% [markdown]
# ## ex07_2 — The parameters of one encoder or decoder layer (medium)
#
# **File:** `transformer_course/counting.py`, function `layer_parameters(d_model, n_heads, d_ff,
# d_k=None, d_v=None, decoder=False)`.
#
# Return the number of parameters of one `EncoderLayer(d_model, n_heads, d_ff, d_k=d_k, d_v=d_v)`
# (chapter 05) or, with `decoder=True`, one `DecoderLayer` (chapter 06). Count each attention with
# your `attention_parameters` (the layers' attentions have biases). The feed-forward network holds
# $W_1$ ($D \times d_{ff}$), $b_1$, $W_2$ ($d_{ff} \times D$) and $b_2$. Each sub-layer has its own
# LayerNorm. The checks of the arguments are already written.
#
# - **Sizes:** whole numbers in, one `int` out.
# - **Watch for:** the decoder layer has two attentions (self- and cross-attention) and three
#   LayerNorms; a LayerNorm holds a gain and a bias, $2D$ numbers; the network's two biases;
#   `d_k` and `d_v` passed on to the attention.

# %%
from transformer_course.counting import layer_parameters  # yours (an earlier cell may use the name)

### BEGIN SOLUTION
encoder, decoder = layer_parameters(512, 8, 2048), layer_parameters(512, 8, 2048, decoder=True)
print(f"base encoder layer {encoder:,}, decoder layer {decoder:,}: the decoder's is {decoder - encoder:,} larger")
network = 2 * 512 * 2048 + 2048 + 512  # W₁, W₂, b₁, b₂
print(f"the feed-forward network's share of an encoder layer: {network / encoder:.0%}")
### END SOLUTION

# %% [markdown]
# *In your own words:* the decoder layer is larger than the encoder layer by one attention and one
# LayerNorm. How many parameters is that for the base model? And which sub-layer holds most of an
# encoder layer when $d_{ff} = 4D$, as in the paper?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# sublayers = 3 if decoder else 2  # (self-attention, [cross-attention,] feed-forward network)
# attention = (sublayers - 1) * attention_parameters(d_model, n_heads, d_k, d_v)
# feed_forward = d_model * d_ff + d_ff + d_ff * d_model + d_model  # W₁, b₁, W₂, b₂
# norms = sublayers * 2 * d_model  # one LayerNorm (gain and bias) per sub-layer
# return attention + feed_forward + norms
# ```
#
# The difference is the cross-attention and the LayerNorm around it: $4(D^2 + D) + 2D = 1{,}051{,}648$
# for $D = 512$. The cross-attention's keys and values come from the encoder's memory, but its four
# projections have the same shapes as the self-attention's.
#
# The feed-forward network holds $2Dd_{ff} + d_{ff} + D = 8D^2 + 5D$ when $d_{ff} = 4D$, against
# $4D^2 + 4D$ for the attention: two thirds of an encoder layer, as the printed share says. The
# LayerNorms, $4D$ in all, are a rounding error.
# ### END SOLUTION

# %%
check("ex07_2")

# %% [markdown]
# ## ex07_3 — The parameters of the whole Transformer, from its configuration (hard)
#
# **File:** `transformer_course/counting.py`, function `transformer_parameters(config)`.
#
# Return what `Transformer(config).num_parameters()` reports (chapter 06's model; each distinct
# parameter once), without building the model. Count the layers with your `layer_parameters`:
# `config.n_encoder_layers` encoder layers and `config.n_decoder_layers` decoder layers. Add the
# token embeddings, the output layer $D \to V_\text{tgt}$ with its bias, and, for a pre-LN model
# (`norm_first=True`), the LayerNorm that ends each stack. The sinusoidal positions are a fixed
# table, not parameters. The check that `config` is a `TransformerConfig` is already written.
#
# - **Sizes:** a `TransformerConfig` in, one `int` out.
# - **Watch for:** with `share_embeddings` one matrix serves the source, the target and the
#   output; with `tie_output` the output layer uses the target embedding's matrix (§3.4), so a
#   tied matrix counts once, but the output bias is the output layer's own; the target side has
#   `tgt_vocab_size` rows; pre-LN's two final LayerNorms.

# %%
from transformer_course.counting import transformer_parameters  # yours (an earlier cell may use the name)

base = TransformerConfig.paper_base(37_000)  # one matrix for source, target and output
variant = replace(base, norm_first=True, share_embeddings=False)  # pre-LN, a source embedding of its own
### BEGIN SOLUTION
added = transformer_parameters(variant) - transformer_parameters(base)
print(f"base {transformer_parameters(base):,}; pre-LN with separate embeddings {transformer_parameters(variant):,}"
      f" ({added:+,})")  # fmt: skip
with torch.device("meta"):
    print(f"counted on the meta device: {Transformer(variant).num_parameters():,}")
### END SOLUTION

# %% [markdown]
# *In your own words:* before running the cell, predict from the parts how many parameters the
# variant adds to the base model: pre-LN (`norm_first=True`) and separate source and target
# embeddings (`share_embeddings=False`; `tie_output` stays True). Why does the output layer add no
# matrix?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# d = config.d_model
# sizes = (d, config.n_heads, config.d_ff, config.d_k, config.d_v)
# layers = config.n_encoder_layers * layer_parameters(*sizes) + config.n_decoder_layers * layer_parameters(
#     *sizes, decoder=True
# )
# embeddings = config.src_vocab_size * d + (0 if config.share_embeddings else config.tgt_vocab_size * d)
# tied = config.tie_output or config.share_embeddings
# output = (0 if tied else d * config.tgt_vocab_size) + config.tgt_vocab_size  # its matrix unless tied; its bias
# final_norms = 2 * (2 * d) if config.norm_first else 0  # pre-LN: one LayerNorm after each stack
# return embeddings + layers + final_norms + output
# ```
#
# Two parts are added. The source gets an embedding of its own, $V \cdot D = 37{,}000 \cdot 512 =
# 18{,}944{,}000$ parameters. Pre-LN ends each stack with one more LayerNorm, $2 \cdot 2D = 2{,}048$.
# Together 18,946,048, which the cell prints. The layers keep their size: pre-LN moves each
# LayerNorm in front of its sub-layer but keeps one per sub-layer.
#
# The output layer stays tied to the target embedding (`tie_output=True`): the logits are
# $h E^\top$ plus the bias, so the matrix is the embedding itself, one parameter that
# `parameters()` yields once. Only its bias of $V$ numbers is the output layer's own, and the base
# model already had it. Untying it too (`tie_output=False`) would add another $V \cdot D$.
# ### END SOLUTION

# %%
check("ex07_3")

# %% [markdown]
# When the checks above pass, run [chapter 07](../chapters/07_counting_parameters.ipynb) again: its
# section 1 then holds your `transformer_parameters` against the count on the meta device, and
# section 2 your `attention_parameters` and `layer_parameters` against the parts of the base model.
# Next: [chapter 08](../chapters/08_training.ipynb), training, and its [exercises 08](ex08_training.ipynb).
