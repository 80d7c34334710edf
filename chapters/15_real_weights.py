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
# # Chapter 15 — Converting checkpoints: OPUS-MT, GPT-2 and Llama in the course's model
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/15_real_weights.ipynb)
#
# Chapter 14 trained today's recipe at our scale. The models people use are trained with it at a
# scale far beyond ours, and many of them are published. This chapter asks whether the course's own `Transformer` and
# `DecoderOnlyLM` can run them. It takes three families: the OPUS-MT translators (Marian), GPT-2 and
# Llama (here SmolLM2, a small Llama). Each made a few choices the paper did not. Each choice becomes
# a setting of our model; the rest is renaming and reordering tensors.
#
# This chapter converts the published **architectures**, not the published numbers. `transformers`
# builds each model with the real shapes and random weights, so nothing is downloaded. At the end,
# our models and `transformers`' give the same logits, within rounding, and the same greedy tokens.
# Chapter 16 takes the course's own models the other way, into the engines people use.
#
# **Learning goals**
#
# - place Marian, GPT-2 and Llama next to the 2017 model and chapter 13's language model, and name
#   the main choices in which they differ;
# - read a checkpoint's `state_dict` and map its names onto ours, including the two reorderings that
#   are not renaming: the rows of W^Q and W^K for rotary embeddings, and GPT-2's transposed `Conv1D`
#   weights;
# - check a conversion: equal logits within rounding, and identical greedy tokens, on models whose
#   every tensor is random.
#
# **In the paper:**
#
# - §3.1: the encoder-decoder and its layers;
# - §3.2.2: the projections of multi-head attention;
# - §3.3: the feed-forward network;
# - §3.4: the shared embeddings, scaled by √d_model;
# - §3.5: the sinusoids.

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
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from transformer_course.cache import DecoderCache
from transformer_course.convert import (
    from_gpt2,
    from_llama,
    from_marian,
    marian_layer_names,
    rope_halves_to_interleaved,
    split_conv1d,
)
from transformer_course.decoding import greedy_decode
from transformer_course.lm import generate
from transformer_course.masks import padding_mask
from transformer_course.model import Transformer
from transformer_course.positional import sinusoidal_positional_encoding
from transformer_course.rotary import apply_rope
from transformer_course_tools.models.hub import require_packages
from transformer_course_tools.models.published import hf_config
from transformer_course_tools.notebook.claims import expect, expect_at_least, expect_at_most
from transformer_course_tools.notebook.diagrams import rope_pair_permutation
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("15")  # the short stop at an unwritten exercise; printing and plotting style

# %% [markdown]
# ## Where we are
#
# The map below is chapter 06's encoder-decoder, and Marian's translators have exactly its boxes.
# Its grey example tokens come from chapter 08's number words; for Marian, read `<pad>` for
# `<bos>` (section 3). GPT-2 and Llama keep only a decoder (chapter 13's map). Each difference
# between the models becomes a setting of `TransformerConfig` (chapter 06) or `DecoderOnlyConfig`
# (chapter 13); section 3 names them. The [notation page](../book/notation.md) lists the letters.
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right. Nearly every box
# is highlighted: Marian has each of them. That covers both token
# embeddings and positional encodings, every box of the encoder and decoder layers, the tied linear
# layer and the softmax. Only the token ids at the bottom, and the loss and the next token at the
# top, stay plain.
#
# </details>

# %%
architecture_map(["embeddings", "positional", "encoder", "decoder"], title="Chapter 15: Marian (OPUS-MT) has every box of the paper's model")

# %% [markdown]
# ## 1. Three families, two models
#
# | | the paper (2017) | **Marian** (OPUS-MT, 2020) | **GPT-2** (2019) | **Llama** (2023); here SmolLM2 (2024) |
# | --- | --- | --- | --- | --- |
# | our class | `Transformer` | `Transformer` | `DecoderOnlyLM` | `DecoderOnlyLM` (chapter 13) |
# | layers | post-LN | post-LN | pre-LN | pre-LN, RMSNorm |
# | positions | sinusoids (§3.5): the formula pairs (2i, 2i+1), the authors' code puts sines then cosines | sinusoids, sines then cosines | a learned table | rotary |
# | feed-forward | ReLU (§3.3) | swish, $x\,\sigma(x)$ | GELU (tanh form) | SwiGLU |
# | embedding × √D (§3.4) | yes | yes | no | no |
# | biases of the linear layers | in the feed-forward network only (equation 2) | everywhere, and one on the logits | everywhere | none |
# | key/value heads | one per query head | one per query head | one per query head | fewer (SmolLM2: 3 for 9) |
# | output layer | tied (§3.4) | tied | tied | tied (SmolLM2), its own (large Llamas) |
# | decoder's first token | none named (the authors' code: a vector of zeros) | `<pad>`, a row of zeros | — | — |
#
# Marian is the 2017 translator almost to the letter. The OPUS-MT project trained more than a
# thousand language pairs with it, on the public OPUS corpora. Most of them have the size of the
# paper's base model (D = 512, six layers in each stack). GPT-2 is chapter 13's decoder-only model
# before the modern changes, except that its blocks are pre-LN; it learns its position table. Its GELU is $x\,\Phi(x)$, a smooth ReLU, with $\Phi$ the normal distribution's
# CDF; its "tanh form" computes $\Phi$ with a cheap formula built on tanh. Llama is chapter 13's modern block.
# `transformer_course.convert` reads a `transformers` model's configuration, sets our fields, and copies the tensors across (`from_marian`,
# `from_gpt2`, `from_llama`).
#
# <details><summary>The paper's biases, and chapter 06's</summary>
#
# The paper's column is the paper's model, not chapter 06's: only its feed-forward network has
# biases, b₁ and b₂ (equation 2), and its authors' code, tensor2tensor, has none in the attention
# projections. Chapter 04's `MultiHeadAttention` has them, as `nn.MultiheadAttention` and Marian do.
#
# </details>
#
# > **To run the next cells** you need `transformers`: `pip install "transformer-course[hub]"`.
# > Without it the chapter stops here, in one line.

# %% tags=["hide-input"]
require_packages("Chapter 15 from here on (transformers' own models, beside ours)")
with warnings.catch_warnings():  # transformers imports tqdm.auto, which warns where Jupyter's widgets are not installed
    warnings.filterwarnings("ignore", message="IProgress not found")
    import transformers
    from transformers import GPT2LMHeadModel, LlamaForCausalLM, MarianMTModel

transformers.logging.set_verbosity_error()  # random weights in models built on the spot: no warnings about them

# %% [markdown]
# **Real shapes, random numbers.** Each model's shapes are the shape fields of its checkpoint's
# published `config.json`, copied into the course. The layout of the tensors and the arithmetic are the
# published ones; only the numbers differ. To keep this chapter fast, SmolLM2 gets 4 of its 30
# layers, GPT-2 2 of its 12, and Marian 2 of the 6 in each stack. Every layer has the same names and
# shapes, so the conversion does not depend on their number.
#
# A freshly built `transformers` model draws every matrix with a standard deviation of 0.02, and
# starts every norm's gain at 1 and every bias at 0. Then a converter that swaps two norms or two
# biases, or forgets one, loads exactly the numbers a right one loads, and no comparison can see
# it. So `redrawn` draws **every tensor** again:
#
# - each matrix from N(0, 1/its input size), the scale at which a signal keeps its size from layer to
#   layer, and each embedding from N(0, 1/D);
# - each gain from N(1, 0.2²);
# - each bias, Marian's bias on the logits included, from N(0, 0.2²).
#
# Marian's `<pad>` row stays zeros, as in the published checkpoints (section 3 says why). The
# `<pad>` entry of its logit bias is drawn like the others; neither side ever writes `<pad>`
# (section 4).

# %%
torch.manual_seed(0)
# each checkpoint's published config.json (transformer_course_tools/models/published.py), fewer layers
opus_config = hf_config("Helsinki-NLP/opus-mt-en-de", encoder_layers=2, decoder_layers=2)  # of 6 in each stack
smol_config = hf_config("HuggingFaceTB/SmolLM2-135M", num_hidden_layers=4)  # of its 30
gpt2_config = hf_config("openai-community/gpt2", n_layer=2)  # GPT-2 small, 2 of its 12 layers


# %% tags=["hide-input"]
def redrawn(model: nn.Module) -> nn.Module:
    """Every tensor drawn again: a matrix from N(0, 1/fan_in), a norm's gain from N(1, 0.2²), a bias
    from N(0, 0.2²), in the order of their names (the same numbers whatever order transformers builds
    them in). Marian's sinusoid tables (fixed numbers) and its <pad> row (zeros) stay."""
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, tensor in sorted(model.named_parameters(remove_duplicate=False)):
            module_name, kind = name.rsplit(".", 1)
            if "embed_positions" in module_name:
                continue
            if tensor.dim() == 2:  # GPT-2's Conv1D stores (in, out); nn.Linear (out, in), nn.Embedding (V, D)
                conv1d = type(model.get_submodule(module_name)).__name__ == "Conv1D"
                tensor.normal_(0.0, tensor.shape[0 if conv1d else 1] ** -0.5, generator=generator)
            elif kind == "bias":
                tensor.normal_(0.0, 0.2, generator=generator)
            else:  # the gain of a LayerNorm or an RMSNorm
                tensor.normal_(1.0, 0.2, generator=generator)
        if isinstance(model, MarianMTModel):
            model.final_logits_bias.normal_(0.0, 0.2, generator=generator)  # a buffer, not a parameter
            model.model.shared.weight[model.config.pad_token_id] = 0.0
    return model.eval()


# %% [markdown]
# `transformers` builds each model, we draw its tensors again, and the converters make ours:

# %%
hf_opus = redrawn(MarianMTModel(opus_config))
hf_smol = redrawn(LlamaForCausalLM(smol_config))
hf_gpt2 = redrawn(GPT2LMHeadModel(gpt2_config))
smol = from_llama(hf_smol)  # ours: a DecoderOnlyLM with hf_smol's weights
gpt2 = from_gpt2(hf_gpt2)  # ours: a DecoderOnlyLM
opus = from_marian(hf_opus)  # ours: a Transformer
for name, hf, ours in (("Marian (opus-mt-en-de), 2+2 of 6+6 layers", hf_opus, opus),
                       ("Llama (SmolLM2-135M), 4 of 30 layers", hf_smol, smol),
                       ("GPT-2 (small), 2 of 12 layers", hf_gpt2, gpt2)):
    print(f"{name:42s} {type(hf).__name__:17s} → {type(ours).__name__:14s} "
          f"{sum(p.numel() for p in hf.parameters()) / 1e6:5.1f} M parameters")

# %% [markdown]
# ## 2. The same tensors under other names
#
# A checkpoint is a `state_dict`: a dictionary from a tensor's name to the tensor. Here are the
# tensors of Marian that are not inside a layer, and the weights of its decoder's first layer (each
# has a bias too, named alike), beside the names our `Transformer` gives them. The converter
# `from_marian` writes the first four pairs by hand, as below. For a layer it calls
# `marian_layer_names` (exercise ex15_3), which this table prints. Then it loads the lot with
# `load_state_dict(strict=True)`, which refuses a missing, a left-over or a misshapen tensor.

# %%
theirs = dict(hf_opus.state_dict())
outside = {
    "src_embed.embedding.weight": "model.encoder.embed_tokens.weight",
    "tgt_embed.embedding.weight": "model.decoder.embed_tokens.weight",
    "output.weight": "lm_head.weight",
    "output.bias": "final_logits_bias",
}
print(f"{'ours':38s} {'Marian':54s} shape")
for ours_name, their_name in outside.items():
    print(f"{ours_name:38s} {their_name:54s} {tuple(theirs[their_name].shape)}")
for ours_name, their_name in sorted(marian_layer_names(decoder=True).items()):
    if ours_name.endswith("weight"):  # the biases follow the same names
        print(f"{'decoder.layers.0.' + ours_name:38s} {'model.decoder.layers.0.' + their_name:54s} "
              f"{tuple(theirs['model.decoder.layers.0.' + their_name].shape)}")
left = sorted(n for n in theirs if "layers." not in n and n not in outside.values())
print("not copied:", left)

# %% [markdown]
# Three of Marian's names are not copied. The two `embed_positions` are sinusoid tables, which our
# `PositionalEncoding` computes itself (section 3 checks that they hold the same numbers).
# `model.shared` is the one embedding matrix of both stacks and of the output layer. Marian shares it,
# like the paper (§3.4), and so do we (`share_embeddings`, `tie_output`). So four of its names and
# three of ours point at a single tensor. The converter copies it once, through our three names;
# the name `model.shared` itself is skipped. And Marian's `final_logits_bias` is (1, V),
# ours (V,): the converter drops the leading 1.

# %%
shared = opus.src_embed.embedding.weight
print("source, target and output share one matrix in ours:",
      shared is opus.tgt_embed.embedding.weight and shared is opus.output.weight)
print("and in Marian:", hf_opus.model.encoder.embed_tokens.weight is hf_opus.lm_head.weight)

# %% [markdown]
# ## 3. Every difference, and why it exists
#
# Most differences are fields of our configuration; two reorder tensors: the rows of W^Q and W^K,
# and GPT-2's transposed weights.
#
# ### Marian's sinusoids in halves: a field
#
# The paper's formula interleaves its sinusoids: feature $2i$ holds
# $\sin(p\,\omega_i)$ and feature $2i+1$ holds $\cos(p\,\omega_i)$, with $\omega_i = 10000^{-2i/D}$
# (§3.5). Marian puts all the sines first, then all the cosines: the same numbers, in another order.
# That is no quirk of Marian: the "halves" layout is the authors' own, the one their code,
# tensor2tensor, uses. Marian keeps the paper's frequencies; only the order differs, as the cell
# below checks. The order matters. The table is *added* to the embeddings, so a model trained with one
# order reads nonsense positions from the other. `TransformerConfig(sinusoid_layout="halves")` keeps
# Marian's order.
#
# <details><summary>tensor2tensor's frequencies</summary>
#
# tensor2tensor also spaces its frequencies a little differently, $\omega_i = 10000^{-i/(D/2-1)}$;
# fairseq's copy of that code notes that it differs from the paper.
#
# </details>

# %%
pe_ours = opus.positional.pe  # (max_len, D), built by our PositionalEncoding with layout="halves"
pe_theirs = hf_opus.model.encoder.embed_positions.weight  # Marian's table
pe_paper = sinusoidal_positional_encoding(512, 512)  # chapter 02's table: sin and cos of pair i at 2i, 2i+1
print("ours (layout='halves') is the paper's, its even features first, then its odd ones:",
      torch.equal(pe_ours, torch.cat([pe_paper[:, 0::2], pe_paper[:, 1::2]], dim=1)))
print("ours = Marian's, up to float32's rounding of angles up to 511 radians:",
      torch.allclose(pe_ours, pe_theirs, atol=1e-4))
print("the paper's order = Marian's:", torch.allclose(pe_paper, pe_theirs, atol=1e-4))

# %% [markdown]
# ### The other choices: fields too
#
# **Marian's other choices.** Its feed-forward network uses swish, $x\,\sigma(x)$ (also called
# SiLU), between its two layers, where the paper has ReLU (§3.3). Swish is a smooth activation that
# lets a little negative signal through. Marian's output layer adds a bias of its own,
# `final_logits_bias`, one number per target token. Our output `nn.Linear` has one anyway: the tied
# matrix is its weight, and the bias stays separate. Marian's decoder starts from the padding token
# rather than from a `<bos>` of its own. The id 58100 is both, so `bos_id = pad_id` in our
# configuration. The paper names no first token for the decoder. Its authors' code shifts the target
# right by one position and puts a vector of zeros first. OPUS-MT's `<pad>` row is zeros too: Hugging
# Face's conversion of the Marian checkpoints appended it, with a logit bias of 0. So the decoder's
# first input is the position's sinusoid alone. Marian scales the embeddings by √D as the paper does
# (§3.4), so `scale_embedding=True`.
#
# **GPT-2 and Llama look up their embeddings unscaled** (`scale_embedding=False`). The paper
# multiplies its embeddings by √D without saying why. Chapter 01 (section 3) argued that it lifts
# them to the size of the sinusoids added to them; chapter 11 found that this holds only in part.
# GPT-2 learns its position table at whatever scale its embeddings have, and Llama adds no positions
# at all. In both, a norm before each sub-layer sets the size at which its input is read.
#
# **GPT-2 keeps its biases** and **learns its position table** (`positional="learned"`, 1024 rows: it
# can read no longer text).
#
# **Llama has no biases** at all, and **adds no position vectors**: it rotates its queries and keys
# instead (chapter 13's rotary embeddings).
#
# Each converter sets these choices through fields of our configurations:
# `activation`, `sinusoid_layout` and `scale_embedding` in `TransformerConfig`; `bias`, `tie_output`,
# `scale_embedding`, `positional="learned"` and `feed_forward="gelu_tanh"` in `DecoderOnlyConfig`.
# This table reads them back from our three models:

# %%
rows = [
    ("post-LN (norm_first=False)", not opus.config.norm_first, not gpt2.config.norm_first, not smol.config.norm_first),
    ("activation / feed-forward", opus.config.activation, gpt2.config.feed_forward, smol.config.feed_forward),
    ("positions", f"sinusoids, {opus.config.sinusoid_layout}", gpt2.config.positional, smol.config.positional),
    ("embedding × √D", opus.config.scale_embedding, gpt2.config.scale_embedding, smol.config.scale_embedding),
    ("biases", opus.encoder.layers[0].self_attn.w_q.bias is not None, gpt2.config.bias, smol.config.bias),
    ("output tied to the embedding", opus.config.tie_output, gpt2.config.tie_output, smol.config.tie_output),
    ("pad, bos, eos ids",
     *((m.config.pad_id, m.config.bos_id, m.config.eos_id) for m in (opus, gpt2, smol))),
]
print(f"{'':30s}{'Marian':>22s}{'GPT-2':>22s}{'SmolLM2':>22s}")
for label, *values in rows:
    print(f"{label:30s}" + "".join(f"{str(v):>22s}" for v in values))

# %% [markdown]
# In the last row, GPT-2 and SmolLM2 name no padding token, so the converter pads with their end
# token, which is also their start token.

# %% [markdown]
# ### Reordering 1: the rows of W^Q and W^K, for Llama's rotary pairs
#
# Chapter 13's `apply_rope` rotates the features of each
# head in pairs of neighbours, (2i, 2i+1), as RoFormer and Meta's own Llama code do. `transformers`'
# Llama rotates the pairs (i, i + d/2) instead. Its `rotate_half` takes the second half of a head's
# features as the partners of the first half, by the same angles $p\,\omega_i$.
# These are chapter 13's frequencies, $\omega_i = b^{-2i/d}$, with $d$ a head's features ($d_k$
# there) and $b$ the base, `rope_theta`: SmolLM2 uses 100,000, chapter 13 used 10,000. We call that
# layout "halves" too: as in Marian's sinusoid table, partners sit half a vector apart.
#
# We do not change our rotation; we move the features instead. Each row of W^Q makes one feature of
# the queries. So reordering the rows of W^Q, and of W^K the same way, reorders the features. In each
# head, row i goes to row 2i, and row i + d/2 to row 2i + 1 (`rope_halves_to_interleaved`, exercise
# ex15_1). A score is a sum over the features, q·k, and is blind to their order as long as q and k
# are reordered alike.
# Now our pair i holds exactly the two features the halves layout's pair i held, and turns by the
# same angle. W^V and W^O stay as they are; a bias of W^Q or W^K would move with its rows.
#
# Two roads lead to checkpoints in the halves layout:
#
# - Meta trained Llama with neighbouring pairs. Hugging Face's conversion script then permuted the
#   rows of its W^Q and W^K, in each head row 2i to row i and row 2i + 1 to row i + d/2. So
#   `rotate_half` gives the scores Meta's code gave. For Meta's weights, our reordering is the
#   conversion script's permutation run backwards.
# - Other models were trained in the halves layout from the start: GPT-NeoX, and SmolLM2, whose
#   configuration records `rope_interleaved: false`.
#
# Either way, the Llama checkpoints on the Hub expect halves.
#
# <details><summary>The figure in words</summary>
#
# On the left, an 8 by 8 grid shows the permutation for one head of 8
# features. Each row of ours has one black cell, at the row of the halves layout it comes from. Our
# rows 0, 2, 4 and 6 take rows 0 to 3, and our rows 1, 3, 5 and 7 take rows 4 to 7. On the right,
# two strips of eight coloured boxes give each feature's pair, one colour per pair (pair i
# turns by the angle θ_i = p ω_i). The top strip, the halves layout, reads 0, 1, 2, 3, 0, 1, 2, 3;
# the bottom strip, ours, reads 0, 0, 1, 1, 2, 2, 3, 3.
#
# </details>

# %%
d_head = 8
order = rope_halves_to_interleaved(torch.arange(d_head).view(d_head, 1), n_heads=1).flatten()  # new row j ← old row
rope_pair_permutation(order.tolist())

# %% [markdown]
# By hand, on one head. Make queries and keys with rows in the halves layout and rotate them with
# `rotate_half`. Make the same with the reordered rows and rotate them with our `apply_rope`. Both
# give the same scores.

# %%
def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """transformers' Llama: the partner of feature i is feature i + d/2 (sign flipped for the first half)."""
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


w_q, w_k, x = torch.randn(d_head, 16), torch.randn(d_head, 16), torch.randn(6, 16)  # one head, 6 positions
positions = torch.arange(6)
angles = positions[:, None] * 10000.0 ** (-torch.arange(0, d_head, 2) / d_head)  # (T, d/2); any base b works alike
cos, sin = torch.cat([angles, angles], -1).cos(), torch.cat([angles, angles], -1).sin()  # (T, d): halves layout
q, k = x @ w_q.T, x @ w_k.T
halves_scores = (q * cos + rotate_half(q) * sin) @ (k * cos + rotate_half(k) * sin).T  # (T, T)
q_ours = apply_rope(x @ rope_halves_to_interleaved(w_q, 1).T, positions)
k_ours = apply_rope(x @ rope_halves_to_interleaved(w_k, 1).T, positions)
print("same scores:", torch.allclose(q_ours @ k_ours.T, halves_scores, atol=1e-5))
print("without the reordering:", torch.allclose(apply_rope(q, positions) @ apply_rope(k, positions).T, halves_scores,
                                                atol=1e-5))

# %% [markdown]
# ### Reordering 2: GPT-2's transposed `Conv1D`
#
# GPT-2's layers are not `nn.Linear` but a class of its own, `Conv1D`. It
# stores its weight as (in, out) and computes x W + b, where `nn.Linear` stores (out, in) and
# computes x Wᵀ + b. And its attention computes the queries, keys and values with one layer,
# `c_attn`, of 3·D outputs side by side. `split_conv1d` (exercise ex15_2) cuts the columns into their
# blocks and transposes each:

# %%
c_attn = hf_gpt2.transformer.h[0].attn.c_attn
print("GPT-2's c_attn:", tuple(c_attn.weight.shape), "→ ours:",
      [tuple(w.shape) for w, _ in split_conv1d(c_attn.weight, c_attn.bias, 3)])
h = torch.randn(3, 768)
w_q_gpt2, b_q_gpt2 = split_conv1d(c_attn.weight, c_attn.bias, 3)[0]
print("queries equal:", torch.allclose(F.linear(h, w_q_gpt2, b_q_gpt2), c_attn(h)[:, :768], atol=1e-5))

# %% [markdown]
# > **Common mistake — a square weight loaded the wrong way round.** GPT-2's `c_proj` is (D, D).
# > Loaded without the transpose, it has the right shape, and `load_state_dict(strict=True)` accepts
# > it, but every layer computes another linear map. The model still runs and produces text; only a
# > comparison of its outputs with the original's shows the mistake:

# %%
c_proj = hf_gpt2.transformer.h[0].attn.c_proj
linear = nn.Linear(768, 768)
linear.load_state_dict({"weight": c_proj.weight, "bias": c_proj.bias})  # no error: the shapes agree
print("untransposed, the outputs agree:", torch.allclose(linear(h), c_proj(h), atol=1e-4))

# %% [markdown]
# ## 4. The check: the same logits, the same tokens
#
# A conversion is right when the two models compute the same function. We feed each pair the same
# tokens and compare the logits, every one of them. They need not be equal to the last bit. The two
# implementations add the same products in other orders (other again on another processor), so
# float32's rounding leaves small differences. The check below requires them to stay under 10⁻⁵ of
# the largest logit. That bound is for short inputs like these.
#
# <details><summary>Why only short inputs</summary>
#
# The two libraries also compute each rotary angle p·ω in float32, each rounding it in its own way.
# The rounding error of an angle grows with the position p, so over thousands of positions, with a
# large base, two right conversions can differ by more.
#
# </details>

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
src = torch.randint(1, 58000, (2, 9))
src[1, 6:] = opus.config.pad_id  # a shorter sentence, padded
tgt = torch.cat([torch.full((2, 1), opus.config.bos_id), torch.randint(1, 58000, (2, 7))], dim=1)
ids = torch.randint(1, 49000, (2, 12))
with torch.no_grad():
    pairs = {
        "Marian": (opus(src, tgt), hf_opus(input_ids=src, attention_mask=src != opus.config.pad_id,
                                           decoder_input_ids=tgt).logits),
        "GPT-2": (gpt2(ids), hf_gpt2(ids).logits),
        "SmolLM2": (smol(ids), hf_smol(ids).logits),
    }
differences = {}
for name, (ours_logits, their_logits) in pairs.items():
    differences[name] = (ours_logits - their_logits).abs().max().item() / their_logits.abs().max().item()
    print(f"{name:8s} logits {tuple(ours_logits.shape)}: largest difference {differences[name]:.1e} of the largest logit")

# %% tags=["hide-cell"]
for name, difference in differences.items():
    expect_at_most(f"{name}: largest |ours − transformers'| relative to the largest logit", difference, 1e-5)

# %% [markdown]
# A wrong tensor moves the logits far more than rounding does. Here is one that a strict load
# accepts: the norms after the self-attention and after the cross-attention of Marian's first decoder
# layer, exchanged (both are (512,)). Every gain and every bias was drawn at random, so the two norms
# differ, and so do the logits.

# %%
swapped = opus.state_dict()
for t in ("weight", "bias"):
    first, second = f"decoder.layers.0.norm1.{t}", f"decoder.layers.0.norm2.{t}"
    swapped[first], swapped[second] = swapped[second], swapped[first]
wrong = Transformer(opus.config).eval()
wrong.load_state_dict(swapped, strict=True)  # no error: the names and shapes are all there
with torch.no_grad():
    their_logits = pairs["Marian"][1]
    wrong_difference = (wrong(src, tgt) - their_logits).abs().max().item() / their_logits.abs().max().item()
print(f"norm1 and norm2 exchanged: largest difference {wrong_difference:.2f} of the largest logit")
del wrong, swapped

# %% tags=["hide-cell"]
expect_at_least("two norms exchanged: largest |difference| relative to the largest logit", wrong_difference, 0.01)

# %% [markdown]
# The exchange moved the logits by 0.14 of the largest one, more than ten thousand times the bound above.
#
# Equal logits on these inputs settle where every tensor goes. Generation runs another code path:
# the KV cache, the position of each new token, the rule that stops a text. So we also compare
# greedy decoding, with our `greedy_decode` (Marian) and `generate` (GPT-2, SmolLM2), against
# `transformers`' `generate(do_sample=False, num_beams=1)`. Both sides must forbid the same tokens
# and stop the same way; the details, and the code, are folded below.
#
# <details><summary>Forbidden tokens and the last step</summary>
#
# The course never generates `<pad>` or `<bos>`: `greedy_decode` gives both probability 0
# (chapter 09). For Marian they are one token, 58100. The published checkpoints tell `transformers`
# the same in their generation settings (`bad_words_ids`). Our `hf_config` copies no generation
# settings, so we pass it. GPT-2's `<|endoftext|>` is its `<bos>` and its `<eos>`, and SmolLM2's
# id 0 is both too. Generating it ends the text, so nothing is forbidden
# there. And `transformers` puts Marian's `<eos>` at the last allowed step (`forced_eos_token_id`),
# where ours stops without it, so we compare the tokens before that step.
#
# </details>

# %% tags=["hide-input"]
steps = 8
with torch.no_grad():
    ours_marian = greedy_decode(opus, src, max_len=steps)  # (B, ≤ steps): 8 new tokens are enough to compare
    theirs = hf_opus.generate(input_ids=src, attention_mask=src != opus.config.pad_id, do_sample=False,
                              num_beams=1, max_new_tokens=steps + 1, bad_words_ids=[[opus.config.pad_id]],
                              output_logits=True, return_dict_in_generate=True)
    their_marian = theirs.sequences  # (B, 1 + steps + 1): the decoder's <pad> first
    # every step's logits, ours read one token at a time through chapter 09's cache, along their path
    memory_mask = padding_mask(src, opus.config.pad_id)  # (B, 1, 1, S)
    memory, cache = opus.encode(src, memory_mask), DecoderCache(opus)
    ours_steps = torch.stack([cache.decode(their_marian[:, t : t + 1], memory, memory_mask)[:, -1]
                              for t in range(len(theirs.logits))], dim=1)  # (B, steps + 1, V)
    their_steps = torch.stack(theirs.logits, dim=1)  # (B, steps + 1, V): the raw logits of each step
    prompt = ids[:, :5]
    same_lm = {}
    for name, ours_lm, hf in (("GPT-2", gpt2, hf_gpt2), ("SmolLM2", smol, hf_smol)):
        mine = generate(ours_lm, prompt, max_new_tokens=steps)
        hf_tokens = hf.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False, num_beams=1,
                                max_new_tokens=steps, pad_token_id=ours_lm.config.pad_id)
        same_lm[name] = torch.equal(mine, hf_tokens)
        for row in range(len(prompt)):
            print(f"{name:8s} row {row} ours   ", mine[row, 5:].tolist())
            print(f"{'':8s}       theirs ", hf_tokens[row, 5:].tolist())
n = ours_marian.shape[1]
same_marian = torch.equal(ours_marian, their_marian[:, 1 : n + 1])  # theirs starts with the decoder's <pad>
for row in range(len(src)):
    print(f"Marian   row {row} ours   ", ours_marian[row].tolist())
    print(f"{'':8s}       theirs ", their_marian[row, 1 : n + 1].tolist())
step_difference = (ours_steps - their_steps).abs().max().item() / their_steps.abs().max().item()
print("Marian, every step's logits read through the cache equal theirs, within 1e-5 of the largest logit:",
      step_difference < 1e-5)

# %% tags=["hide-cell"]
expect("Marian: greedy tokens identical to transformers' generate", same_marian, f"{n} tokens per sentence")
expect_at_most("Marian: every generated step's logits, cached, relative to the largest logit", step_difference, 1e-5)
for name, same in same_lm.items():
    expect(f"{name}: greedy tokens identical to transformers' generate", same, f"{steps} new tokens per text")

# %% [markdown]
# Marian's greedy rows repeat one token: a habit of this random model, not of the conversion. A
# repeated token could hide a cache that mixes up positions, so for Marian the last line compares
# more than the tokens: the logits of every generated step, ours read one token at a time through
# chapter 09's cache, against those `generate` computed. GPT-2's and SmolLM2's rows change token,
# so their tokens already test `generate` and its cache.

# %% [markdown]
# ## Summary
#
# - OPUS-MT's Marian is the paper's encoder-decoder with sines and cosines in two halves, swish,
#   biases everywhere (the logits too) and `<pad>` as the decoder's first token.
# - GPT-2 is a pre-LN decoder-only model with learned positions, GELU and biases. Llama is chapter
#   13's block without biases or √D. Each choice is a field of `TransformerConfig` or
#   `DecoderOnlyConfig`.
# - A conversion is mostly renaming (`marian_layer_names`), plus two reorderings. The rows of W^Q
#   and W^K for rotary pairs (per head, row i → 2i and row i + d/2 → 2i + 1) pass a strict load
#   however they are ordered. Every GPT-2 `Conv1D` weight must be transposed; the square ones (such
#   as `c_proj`) would pass a strict load untransposed.
# - Equal logits within rounding, and identical tokens where the tokens vary, check the conversion
#   on models whose every tensor is random. The real checkpoints need a network: chapter 16 runs
#   them in an aside, at home.
#
# **Exercises:** [exercises/ex15_real_weights.ipynb](../exercises/ex15_real_weights.ipynb) asks you to
# write `rope_halves_to_interleaved` (ex15_1), `split_conv1d` (ex15_2) and `marian_layer_names`
# (ex15_3). Stuck on one? `python -m transformer_course restore ex15_1` puts its worked answer in your
# student edition.
#
# ## Check yourself
#
# 1. Marian's sinusoid table holds the same numbers as the paper's, in another order. Why can a
#    model trained with one order not be run with the other table, all else unchanged?
#    <details><summary>Answer</summary>
#
#    The table is added to the embeddings, feature by feature. The trained weights expect the sine
#    of frequency i in the features Marian put it in. In the other order those features receive
#    cosines and other frequencies, so every position looks like another one. The attention that
#    learned to read positions then reads nonsense. (Chapter 16's export can switch the order: it
#    moves every feature of the model along with the table.)
#    </details>
# 2. Why may the rows of W^Q and W^K be reordered without changing any attention score, and why
#    must both be reordered the same way?
#    <details><summary>Answer</summary>
#
#    A score is Σ_j q_j k_j over a head's features: permuting the features of both vectors alike
#    leaves the sum unchanged. Permuting only one would pair each query feature with another key
#    feature. The reordering is needed only because the rotation turns pairs of features, and it
#    makes our pairs hold the features the halves layout's pairs held.
#    </details>
# 3. A mapping of names loads with `load_state_dict(strict=True)`. Which mistakes can still be in
#    it?
#    <details><summary>Answer</summary>
#
#    Any exchange of two tensors of the same shape: the norms of a layer (all (D,)), W^Q and W^K or
#    their biases, self- and cross-attention, a square matrix not transposed. Also a bias or a norm gain
#    whose features are permuted. Only the outputs show them, which is why we compare logits. And only if
#    the exchanged tensors differ, which is why the chapter draws every tensor at random.
#    </details>
# 4. Our logits and `transformers`' differ by less than 10⁻⁵ of the largest one, but not by 0. Why
#    not 0, and why is that no reason to doubt the conversion?
#    <details><summary>Answer</summary>
#
#    Floating-point addition is not associative: the two libraries sum the same products in other
#    orders (other kernels, other blocking), and each order rounds differently. A wrong tensor moves
#    them far more: the two
#    norms exchanged in section 4 moved them by 0.14 of the largest logit.
#    </details>
#
# ## Further reading
#
# - The paper: §3.1 (the encoder-decoder), §3.2.2 (multi-head projections), §3.3 (the
#   feed-forward network), §3.4 (shared embeddings × √d_model), §3.5 (sinusoids).
# - Junczys-Dowmunt et al. (2018), *Marian: Fast Neural Machine Translation in C++*; Tiedemann and
#   Thottingal (2020), *OPUS-MT — Building open translation services for the World*.
# - Radford et al. (2019), *Language Models are Unsupervised Multitask Learners* (GPT-2).
# - Touvron et al. (2023), *LLaMA: Open and Efficient Foundation Language Models*; Allal et al.
#   (2025), *SmolLM2: When Smol Goes Big*.
# - Su et al. (2021), *RoFormer* (rotary embeddings, pairs of neighbouring features).
# - Ramachandran et al. (2017), *Searching for Activation Functions* (swish); Hendrycks and Gimpel
#   (2016), *Gaussian Error Linear Units*.
# - Wolf et al. (2020), *Transformers: State-of-the-Art Natural Language Processing* (the library
#   this chapter compares with).
#
# **Next:** [Chapter 16 — Your models in the engines people use](16_real_checkpoints.ipynb): the
# course's trained models, tokenizers included, in `transformers`, CTranslate2 and llama.cpp, and
# what an engine changes on the way.
