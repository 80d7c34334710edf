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
# # Chapter 16 — Your models in the engines people use
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/16_real_checkpoints.ipynb)
#
# Chapter 15 wrote converters that bring published checkpoints into the course's models. This
# chapter goes the other way. At its end, the course's trained translator and language model run
# in the engines people use, `transformers`, CTranslate2 and llama.cpp, and write the course's
# tokens there.
#
# Sections 1–4 each answer one question an export raises, on the model that shows it best.
# Section 5 exports.
#
# 1. What does an engine change in a model, and what must it keep? (Chapter 08's translator.)
# 2. What sets the time of a step? The bytes it reads. Our models are too small to show it: we use
#    SmolLM2-135M's published shape, with random weights.
# 3. May an export store int8 weights, a quarter of the bytes? Only if the tokens survive. (The
#    same SmolLM2, then chapter 14's Shakespeare model.)
# 4. What must an export carry besides the weights? The tokenizer (small ones trained on chapter
#    12's sentences).
# 5. The translator and the Shakespeare model, tokenizers included, leave for the engines.
#
# **Learning goals**
#
# - see what an engine changes in a step (its operations) and what it keeps (the tokens);
# - count the bytes a token reads in float32, bf16 and int8;
# - turn text into ids and back by Marian's rules and by byte-level BPE;
# - export your models, tokenizers included, and see the engines write your tokens.
#
# **In the paper:**
#
# - §3.4: one embedding matrix for both languages and the output layer;
# - §5.1: a vocabulary of subword pieces shared by source and target;
# - §6.1: the decoding (beam search).

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
import copy
import importlib.util
import itertools
import json
import os
import tempfile
import warnings
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from IPython.display import Markdown, display
from torch import nn

from transformer_course.batching import pad_sequences
from transformer_course.config import TransformerConfig
from transformer_course.convert import from_llama, from_marian
from transformer_course.datasets.numbers import english_tokens, german_text, number_to_english, numbers_task
from transformer_course.datasets.sentences import generate_pairs
from transformer_course.decoding import beam_search, greedy_decode
from transformer_course.lm import DecoderOnlyLM, generate
from transformer_course.model import Transformer
from transformer_course.quantize import dequantize_rows, quantize, quantize_rows
from transformer_course.subwords import SubwordTokenizer
from transformer_course_tools.engine import ENGINE
from transformer_course_tools.models.export.gguf_file import llama_cpp_greedy
from transformer_course_tools.models.hub import HubError, MissingPackages, load_hub, require_packages
from transformer_course_tools.models.pretrained import load_pretrained, load_pretrained_lm
from transformer_course_tools.models.published import course_config
from transformer_course_tools.notebook.claims import expect, expect_at_most
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.operations import CountOps
from transformer_course_tools.notebook.setup import setup_chapter
from transformer_course_tools.notebook.speed import (
    speed_table,
    time_precisions,
    tokens_per_second,
)

torch.manual_seed(0)
setup_chapter("16")  # the short stop at an unwritten exercise; printing and plotting style

# %% [markdown]
# ## Where we are
#
# The map shows the translator; section 5 exports it and the language model. The
# [notation page](../book/notation.md) lists the letters.
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right. Nearly every box
# is highlighted: the title says each goes into the exported files. That covers both token
# embeddings and positional encodings, every box of the encoder and decoder layers, the tied linear
# layer and the softmax. Only the token ids at the bottom, and the loss and the next token at the
# top, stay plain.
#
# </details>

# %%
architecture_map(["embeddings", "positional", "encoder", "decoder"], title="Chapter 16: every box goes into the exported files")

# %% [markdown]
# ## 1. What an engine changes: the operations of a step
#
# Section 5 runs your models in engines. Here is what an engine changes, shown on the course's own.
# A step of generation has two costs. Run as chapter 09's loops run it, your modules ask PyTorch
# for many small **operations**, each with a fixed cost, whatever its size. And every step reads
# the model's weights, its **bytes**, from memory. This section cuts the first cost; the next
# measures the second.
#
# Inference engines such as CTranslate2 and llama.cpp *convert* a trained model, once, into a form of
# their own. The course has a small one in `transformer_course_tools/engine/`: pass `path=ENGINE` to
# `greedy_decode`, `beam_search`, `sample` or `generate`. It reads the model's parameters once into a
# *plan*. Every matrix is transposed into the layout that reads fastest. $W^Q$, $W^K$ and $W^V$ are
# stacked into one matrix, so that one product gives all three. First, what matters most: the same tokens, on the shipped translator's test split.

# %%
checkpoint = load_pretrained()  # the shipped numbers translator, with its vocabularies
translator = checkpoint.model.eval()
task = numbers_task()
test_src = pad_sequences([task.src_vocab.encode(s) for s, _ in task.test], task.src_vocab.pad_id)  # (B, S)
test_greedy = greedy_decode(translator, test_src)  # (B, T): your modules, as chapter 09 ran them

# %%
same = {  # the test split translated by your modules (left) and by the engine (right)
    "greedy": torch.equal(test_greedy, greedy_decode(translator, test_src, path=ENGINE)),
    "beam 4": torch.equal(beam_search(translator, test_src, 4)[0], beam_search(translator, test_src, 4, path=ENGINE)[0]),
}
print(f"the {test_src.shape[0]} test numbers, the same tokens from your modules and from the engine:", same)
assert all(same.values())

# %% [markdown]
# Then the operations. We count the *ATen operations* (calls into PyTorch's C++ core) that one more
# generated token adds, per decoder layer: the count for $n + 1$ tokens minus the count for $n$. A
# random model of the translator's shape that never says `<eos>`, `never_stopping`, decodes exactly as many
# tokens as it is asked for.

# %% tags=["hide-input"]
never_config = TransformerConfig(**{**translator.config.to_dict(), "max_len": 128})
torch.manual_seed(0)
never_stopping = Transformer(never_config).eval()  # random weights, the translator's shape
with torch.no_grad():
    never_stopping.output.bias[never_config.eos_id] = -1e4  # never <eos>: exactly n tokens per sentence
one_source = torch.randint(4, never_config.src_vocab_size, (1, 12))  # (1, S)


def operations_per_layer(path: object, n: int = 6) -> float:
    """ATen operations of one greedy step, per decoder layer (a random model that never stops early)."""
    counts = []
    for tokens in (n, n + 1):
        with CountOps() as count:
            greedy_decode(never_stopping, one_source, tokens, path=path)  # n tokens, then n + 1: one step more
        counts.append(count.ops.total())
    return (counts[1] - counts[0]) / never_config.n_decoder_layers


paths = {"modules": "modules", "engine": ENGINE}  # path= for your modules, and for the engine
greedy_decode(never_stopping, one_source, 2, path=ENGINE)  # 2 tokens: the plan is made once, before counting
operations = {name: operations_per_layer(path) for name, path in paths.items()}

# %% tags=["nbval-ignore-output"]
for path, count in operations.items():
    print(f"{path:8s} {count:5.1f} operations per decoder layer per token")

# %% tags=["hide-cell"]
expect_at_most("the engine's operations per layer per token", operations["engine"], 45)
expect_at_most("the engine's operations relative to your modules'", operations["engine"] / operations["modules"], 0.6)

# %% [markdown]
# The engine writes your modules' tokens with far fewer operations per step. Section 5 times what
# this saves, beside CTranslate2 and llama.cpp.

# %% [markdown]
# ## 2. What a step costs: the bytes it reads
#
# Section 1 cut the operations. An engine cuts the bytes only by storing each number in fewer of
# them, and an export chooses that storage. First, how many bytes a model holds. A float32 copy takes 4 bytes a parameter; while
# converting, both copies are in memory. The cell below builds the three published architectures in
# our classes on PyTorch's meta device (chapter 07).

# %%
# the published shapes (each checkpoint's config.json, kept in the course), read into our
# configurations as chapter 15's converters read a checkpoint's settings
opus_config = course_config("Helsinki-NLP/opus-mt-en-de")  # a TransformerConfig
gpt2_config = course_config("openai-community/gpt2")  # GPT-2 small, a DecoderOnlyConfig
smol_config = course_config("HuggingFaceTB/SmolLM2-135M")  # chapter 13's block, grouped key/value heads
with torch.device("meta"):  # the full shapes, without allocating a single number (chapter 07)
    full = {"opus-mt-en-de": Transformer(opus_config), "GPT-2 small": DecoderOnlyLM(gpt2_config),
            "SmolLM2-135M": DecoderOnlyLM(smol_config)}
for name, model in full.items():
    n = model.num_parameters()  # distinct parameters: a tied matrix once
    print(f"{name:14s} {n / 1e6:6.1f} M parameters: {4 * n / 2**30:.2f} GiB in float32, "
          f"{8 * n / 2**30:.2f} GiB while converting")
print(f"a 7-billion-parameter Llama: {4 * 7e9 / 2**30:.0f} GiB in float32, {2 * 7e9 / 2**30:.0f} GiB in bf16")

# %% [markdown]
# A step of generation with a KV cache (chapter 09) feeds one new token. Each weight matrix then
# multiplies one vector: every weight is read from memory once, for a single multiply and add, and
# the earlier tokens' keys and values are read from the cache. A processor does far more arithmetic
# per second than its memory delivers bytes, so at batch 1 a step takes at least
#
# $$t_\text{token} \ge \frac{\text{bytes of the weights} + \text{bytes of the
# cache}}{\text{bytes the memory delivers per second}}.$$
#
# Chapter 13 (section 4) estimated this floor for a large Llama on a GPU; here we measure it on a
# CPU.
#
# Fewer bytes per weight make fewer bytes per token. `quantize(model, "bf16")` stores every number in
# 2 bytes; `quantize(model, "int8")` stores each weight matrix as 8-bit whole numbers with a float32
# scale per row (norms, biases and cache stay float32). A row $w$ gets the scale
# $s = \max_j |w_j| / 127$. Each weight becomes the whole number $q_j = \mathrm{round}(w_j / s)$,
# from −127 to 127, and is read back as $s\,q_j$, off by at most $s/2$. On one row, with your
# `quantize_rows` and `dequantize_rows`:

# %%
row = torch.tensor([[0.50, -0.25, 0.013, 1.27]])  # (1, 4): one row of a weight matrix
q, scale = quantize_rows(row)  # (1, 4) int8, (1,) float32
print("q:", q[0].tolist(), " s:", round(scale.item(), 4), " read back:", [round(x, 4) for x in dequantize_rows(q, scale)[0].tolist()])

# %% [markdown]
# The largest weight sets the scale, and 0.013 comes back as 0.01. Each row has its own scale, so a
# large weight costs precision in its own row only. Here are the bytes one token of the real
# SmolLM2-135M reads, counted from its shapes, scales included. The cache holds 1,000 earlier tokens,
# then 8,192, the longest text it was trained on.

# %%
c = smol_config  # the real shape: 30 layers
weights_full = full["SmolLM2-135M"].num_parameters()
matrices_full = weights_full - c.n_layers * 2 * c.d_model - c.d_model  # minus the norms' gains (float32 in int8)
rows = sum(p.shape[0] for p in full["SmolLM2-135M"].parameters() if p.dim() == 2)  # int8: a float32 scale a row


def kv_numbers(tokens: int, layers: int = c.n_layers, kv_heads: int = c.n_kv_heads) -> int:
    """Keys and values of every layer for ``tokens`` earlier tokens: 3 key/value heads of 64 features."""
    return 2 * layers * kv_heads * (c.d_model // c.n_heads) * tokens


print(f"SmolLM2-135M: {weights_full / 1e6:.1f} M weights")
for context in (1000, c.max_len):  # the longest text it was trained on
    cache = {"float32": 4 * kv_numbers(context), "bf16": 2 * kv_numbers(context), "int8": 4 * kv_numbers(context)}
    weights = {"float32": 4 * weights_full, "bf16": 2 * weights_full,
               "int8": matrices_full + 4 * rows + 4 * (weights_full - matrices_full)}
    print(f"with {context:5,} tokens in the cache:")
    for precision in weights:
        total = weights[precision] + cache[precision]
        print(f"  {precision:8s} {total / 2**20:6.1f} MiB per token, of which the cache "
              f"{cache[precision] / 2**20:5.1f} MiB ({cache[precision] / total:.0%})")

# %% [markdown]
# At 1,000 tokens the cache is small next to the float32 or bf16 weights, thanks to the 3 key/value
# heads of grouped-query attention (chapter 13). At 8,192 tokens it is 41 % of the bytes in float32
# or bf16, and three quarters with int8 weights. Our int8 keeps the cache in float32, so at 8,192
# tokens bf16 reads fewer bytes in all: for a long text, the cache is worth shrinking as much as the
# weights.
#
# To measure, we need a SmolLM2 that runs. It gets 4 of its 30 layers, with random weights drawn
# by chapter 15's rule.

# %%
smol = DecoderOnlyLM(replace(smol_config, n_layers=4))
generator = torch.Generator().manual_seed(0)
with torch.no_grad():  # in the order of their names, by the same rule as chapter 15
    for _name, tensor in sorted(smol.named_parameters()):
        if tensor.dim() == 2:  # a matrix (out, in), or the embedding (V, D): N(0, 1/its input size)
            tensor.normal_(0.0, tensor.shape[1] ** -0.5, generator=generator)
        else:  # the gain of an RMSNorm: N(1, 0.2²)
            tensor.normal_(1.0, 0.2, generator=generator)
smol.eval()
print(f"SmolLM2's shape with {smol.config.n_layers} of its 30 layers: {smol.num_parameters() / 1e6:.1f} M parameters")

# %% [markdown]
# > **Common mistake — counting the cache with every query head.** SmolLM2 has 9 query heads but
# > only 3 key/value heads (grouped-query attention, chapter 13). The cache holds keys and values
# > only, so it has 3 heads per layer. A count with 9 makes the cache three times too large. Your
# > own modules settle it: below, our 4-layer model reads 1,000 tokens into its cache (chapter 09's
# > `KVCache`, one per layer), and we compare the bytes it holds with both counts.

# %%
cache = smol.new_cache()  # one KVCache per layer (chapter 09)
with torch.no_grad():
    smol(torch.randint(1, 49000, (1, 1000), generator=torch.Generator().manual_seed(4)), cache)  # 1,000 tokens in
held = sum(layer_cache.nbytes() for layer_cache in cache)  # the keys and values of every layer
right = 4 * kv_numbers(1000, layers=smol.config.n_layers)  # float32: 4 bytes a number
wrong = 4 * kv_numbers(1000, layers=smol.config.n_layers, kv_heads=smol.config.n_heads)  # the bug: 9 heads
print(f"your modules' cache after 1,000 tokens: {held / 2**20:.2f} MiB")
print(f"counted with the 3 key/value heads: {right / 2**20:.2f} MiB; with the 9 query heads: {wrong / 2**20:.2f} MiB")

# %% tags=["hide-cell"]
expect("the cache counted with the key/value heads: your modules', to the byte", right == held, f"{held:,} bytes")
expect("the cache counted with every query head: three times too large", wrong == 3 * held, f"{wrong:,} bytes")

# %% [markdown]
# Now the time. `time_precisions` decodes on one
# thread with section 1's engine, which reads each weight once per token. Between decodings it
# measures how fast that thread reads memory: a sum over 512 MiB, far more than the processor's
# caches hold. Bytes per token over time per token is the speed at which a step read its weights.
#
# Fewer bytes lower the floor, the dashed line. How close a step comes to it depends on the kernel,
# and the kernel on the processor. The CPU's int8 kernel also rounds each layer's input (section 3),
# which takes time.
#
# <details><summary>The figure in words</summary>
#
# A scatter plot has one labelled dot per precision: float32, bf16 and int8. The horizontal axis
# gives the MiB of weights the engine reads per generated token, the vertical axis the milliseconds
# per token, both from 0. A dashed line from the origin gives the time that reading those bytes at
# the memory's measured speed would take: the floor that the formula above sets. The bf16 dot sits
# at half of float32's MiB, the int8 dot at about a quarter. The heights, bf16's among them, and the
# line are this machine's, and the title names the precision that was fastest here.
#
# </details>

# %% tags=["measured", "nbval-ignore-output"]
variants = {"float32": smol, "bf16": quantize(smol, "bf16"), "int8": quantize(smol, "int8")}
prompt = torch.randint(1, 49000, (1, 8), generator=torch.Generator().manual_seed(6))
precisions = time_precisions(variants, prompt, new_tokens=16)  # one thread; a sum over 512 MiB and the models take turns
print(precisions.table())
precisions.plot()
plt.show()
display(Markdown(precisions.sentence()))

# %% tags=["hide-cell", "measured"]
read = precisions.read  # bytes per token, counted from the engine's plan
expect_at_most("bf16 weights: bytes read per token relative to float32", read["bf16"] / read["float32"], 0.5)
expect_at_most("int8 weights: bytes read per token relative to float32", read["int8"] / read["float32"], 0.3)

# %% [markdown]
# Where bf16's row of the table is no faster than float32's, this processor most likely lacks
# bfloat16 instructions and converted each bf16 number before multiplying: half the bytes bought no
# time.

# %% [markdown]
# ## 3. May the export be int8? The tokens decide
#
# int8 weights read the fewest bytes; an export may store them only if the tokens survive. That
# depends on where int8 runs. On a CPU, `Int8Linear` (the layer `quantize` puts in place of each
# `nn.Linear`) calls fbgemm, PyTorch's library of int8 CPU kernels, which rounds each layer's *input* to whole numbers too. On a GPU it calls a
# weight-only product, where the input keeps its precision: "weights only" below, the int8 weights
# made float again. Both are compared with float32 on our 4-layer SmolLM2.

# %% tags=["nbval-ignore-output"]
def int8_weights_only(model: nn.Module) -> nn.Module:
    """A copy of ``model`` whose linear layers hold their int8 weights made float again: what a
    weight-only kernel reads."""
    copied = copy.deepcopy(model)
    with torch.no_grad():
        for module in copied.modules():
            if isinstance(module, nn.Linear):
                module.weight.copy_(dequantize_rows(*quantize_rows(module.weight)))
    return copied


int8_smol = variants["int8"]  # section 2's int8 model
weights_only = int8_weights_only(smol)
prompt = torch.randint(1, 49000, (4, 8), generator=torch.Generator().manual_seed(5))
with torch.no_grad():
    reference = smol(prompt)  # (B, T, V), float32
    errors = {name: ((m(prompt).float() - reference).abs().max() / reference.abs().max()).item()
              for name, m in (("int8 weights only", weights_only), ("int8 weights and inputs (CPU)", int8_smol))}
float_tokens = generate(smol, prompt, 16, path=ENGINE)[:, 8:]
agreement = {name: (generate(m, prompt, 16, path=ENGINE)[:, 8:] == float_tokens).float().mean().item()
             for name, m in (("int8 weights only", weights_only), ("int8 weights and inputs (CPU)", int8_smol))}
for name in errors:
    print(f"{name:30s} largest logit error {errors[name]:.2%} of the largest logit; "
          f"greedy tokens equal to float32's: {agreement[name]:.0%}")

# %% tags=["hide-cell"]
expect_at_most("int8 weights only: largest logit error relative to the largest logit", errors["int8 weights only"], 0.1)
expect_at_most("int8 weights and inputs: largest logit error relative to the largest logit",
               errors["int8 weights and inputs (CPU)"], 0.2)

# %% [markdown]
# The logits move by several hundredths of the largest one. Yet greedy tokens can change: the lines
# above give the share that stayed equal. A
# likely reason, not measured here: a model with random weights has no strong preferences, so its
# largest logits lie close together and a small error swaps them. Once one token changes, every
# later token continues another text.
#
# A trained model should choose more clearly. Chapter 14's Shakespeare model, the one section 5
# exports, continues three prompts in float32 and in both int8 forms (it also differs in size and
# vocabulary: a hint, not a proof):

# %% tags=["nbval-ignore-output"]
lm = load_pretrained_lm()  # chapter 14's trained Shakespeare model, with its BPE (chapter 12)
shakespeare = SubwordTokenizer.from_dict(lm.tokenizer)
prompts = ["Ham. To be, or not", "MACBETH. If it were done", "HAMLET. O"]
prompt_ids = [shakespeare.encode(p, add_bos=True) for p in prompts]  # <bos> first
trained = {"float32": lm.model, "int8 weights only": int8_weights_only(lm.model),
           "int8 weights and inputs (CPU)": quantize(lm.model, "int8")}
written = {name: [generate(m, torch.tensor([ids]), 40, path=ENGINE)[0, len(ids) :].tolist() for ids in prompt_ids]
           for name, m in trained.items()}  # up to 40 new tokens a prompt, greedily


def share_kept(tokens: list[list[int]], reference: list[list[int]]) -> float:
    """The share of places, over all prompts, where ``tokens`` holds the reference's token."""
    pairs = list(zip(tokens, reference, strict=True))  # one row per prompt; one may stop before the other
    equal = sum(a == b for row, ref in pairs for a, b in zip(row, ref, strict=False))
    return equal / sum(max(len(row), len(ref)) for row, ref in pairs)


kept = {name: share_kept(written[name], written["float32"]) for name in agreement}
for name in agreement:
    print(f"{name:30s} greedy tokens equal to float32's: the random model {agreement[name]:.0%}, "
          f"the trained one {kept[name]:.0%}")

# %% tags=["hide-cell"]
cpu = "int8 weights and inputs (CPU)"
expect("int8 weights and inputs: the trained model keeps more of float32's greedy tokens than the random one",
       kept[cpu] > agreement[cpu], f"{kept[cpu]:.0%} against {agreement[cpu]:.0%}")

# %% [markdown]
# The trained model keeps more of its tokens than the random one. Three prompts cannot promise
# that int8 keeps every token: its logits still move, and where two top tokens lie close a token can
# change. Section 5 tests the conversion itself, so its exports stay in float32: there, a changed
# token can only be the conversion's fault.

# %% [markdown]
# ## 4. What the export carries: the tokenizer
#
# An export of the weights alone is useless to an engine. A model reads ids, not text. Its **tokenizer** cuts a text into the pieces the model was
# trained on, and gives each piece the id of its row in the embedding. Another tokenizer hands the
# model ids that mean other pieces. So a checkpoint ships its tokenizer in files that engines read,
# and section 5's exports carry yours the same way. Marian's pieces come from a *unigram* model of
# the SentencePiece library (Kudo 2018): it starts from many candidate pieces and drops those whose
# removal lowers the training text's likelihood least. GPT-2's and SmolLM2's come from byte-level
# BPE. (SentencePiece is a library, not a method: it trains unigram and BPE models alike, and LLaMA 1
# and Llama 2 used its BPE.)
#
# **Marian: two SentencePiece models over one vocabulary.** An OPUS-MT checkpoint holds two
# SentencePiece models, `source.spm` and `target.spm`, which cut a text into pieces with "▁" at the
# start of a word, as chapter 12's tokenizer does. Its one vocabulary, `vocab.json`, maps every piece
# of both to a row of the shared embedding (§3.4). In opus-mt-en-de `</s>` is 0, `<unk>` is 1, the
# pieces follow, and `<pad>` is the last id, 58100. The tokenizer appends `</s>` to every source
# sentence and adds no start token: the decoder starts from `<pad>`. A translator into several
# languages (opus-mt-en-ROMANCE, for one) reads a language token, `>>fr<<`, as the source's first.
#
# Below, two unigram models trained on chapter 12's sentences stand for the two files (the folded
# cell trains them), over one vocabulary laid out like OPUS-MT's: `</s>`, `<unk>`, two language
# tokens, the pieces, `<pad>`. The rest of the chapter needs `pip install "transformer-course[hub]"`.

# %% tags=["hide-input"]
require_packages("Chapter 16 from here on (real tokenizers and engines)")
with warnings.catch_warnings():  # transformers imports tqdm.auto, which warns where Jupyter's widgets are not installed
    warnings.filterwarnings("ignore", message="IProgress not found")
    import sentencepiece
    import transformers

transformers.logging.set_verbosity_error()  # no notices about the library's own defaults

# %% tags=["nbval-ignore-output", "hide-cell"]
pairs_en_de = list(itertools.islice(generate_pairs(seed=0), 2000))  # chapter 12's sentences, made on the spot
scratch = tempfile.TemporaryDirectory()  # this folder and section 5's exports, deleted after section 5
folder = Path(scratch.name) / "tokenizers"
folder.mkdir()
for side, texts in (("source", [en for en, _ in pairs_en_de]), ("target", [de for _, de in pairs_en_de])):
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_prefix=str(folder / side), vocab_size=400, model_type="unigram",
        bos_id=-1, eos_id=-1, pad_id=-1, unk_id=0, num_threads=1, minloglevel=2,
    )
source_spm = sentencepiece.SentencePieceProcessor(model_file=str(folder / "source.model"))
target_spm = sentencepiece.SentencePieceProcessor(model_file=str(folder / "target.model"))
pieces = sorted({spm.id_to_piece(i) for spm in (source_spm, target_spm) for i in range(1, spm.get_piece_size())})
vocab = {token: i for i, token in enumerate(["</s>", "<unk>", ">>de<<", ">>fr<<", *pieces, "<pad>"])}  # as OPUS-MT's
(folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")

# %% [markdown]
# A sentence's ids, by hand: `source.spm` cuts it into pieces, `vocab.json` gives each piece its
# row, and `</s>` ends it.

# %% tags=["nbval-ignore-output"]
english, german = pairs_en_de[0]
english_pieces = source_spm.encode(english, out_type=str)
english_ids = [vocab.get(piece, vocab["<unk>"]) for piece in english_pieces] + [vocab["</s>"]]
print(english)
print("  pieces (source.spm):       ", english_pieces)
print("  ids (vocab.json), </s> = 0:", english_ids)

# %% [markdown]
# `transformers`' `MarianTokenizer` reads the same three files and must give the same ids. It also
# reads a language token, and pads a batch:

# %% tags=["nbval-ignore-output"]
with warnings.catch_warnings():  # MarianTokenizer recommends sacremoses, which only normalises punctuation
    warnings.simplefilter("ignore")
    marian_tokenizer = transformers.MarianTokenizer(source_spm=str(folder / "source.model"),
                                                    target_spm=str(folder / "target.model"),
                                                    vocab=str(folder / "vocab.json"))
print("MarianTokenizer's ids:", marian_tokenizer(english).input_ids)
print("with >>fr<< first:      ", marian_tokenizer(">>fr<< " + english).input_ids[:4], "…")
batch = marian_tokenizer(["Hello.", english], padding=True)
print(f"a batch, the shorter row padded with <pad> = {vocab['<pad>']} (the last id):")
for row, mask in zip(batch.input_ids, batch.attention_mask, strict=True):
    print("  ", row, "attention mask", mask)

german_ids = [vocab.get(piece, vocab["<unk>"]) for piece in target_spm.encode(german, out_type=str)] + [vocab["</s>"]]
german_back = marian_tokenizer.decode(german_ids, skip_special_tokens=True)
print(german)
print("  ids the decoder would generate:", german_ids)
print("  back to text:", repr(german_back))

# %% [markdown]
# The steps by hand and `MarianTokenizer` agree, and the German ids decode back to the sentence.
# Section 5 gives your translator this id layout (one vocabulary for both languages, `<pad>` last),
# written to a `tokenizer.json`, not to `.spm` files.

# %% tags=["hide-cell"]
by_hand = marian_tokenizer(english).input_ids == english_ids
expect("MarianTokenizer: the ids of the steps by hand", by_hand, f"{len(english_ids)} ids, </s> last")
first = marian_tokenizer(">>fr<< " + english).input_ids[0]
expect("a language token is read as the first id", first == vocab[">>fr<<"], f">>fr<< = {first}")
short = batch.input_ids[0]  # "Hello.": its ids, </s>, then padding
end = short.index(vocab["</s>"])
expect("the shorter row: </s>, then only <pad>, the last id", set(short[end + 1 :]) == {len(vocab) - 1},
       f"{len(short) - end - 1} × {len(vocab) - 1}")
expect("the German ids decoded back to the sentence", german_back == german, repr(german_back))

# %% [markdown]
# **Aside — GPT-2's and SmolLM2's byte-level BPE.** Section 5 does not use it (the Shakespeare
# model carries chapter 12's BPE, the translator chapter 08's vocabularies); most published language
# models do. Their tokenizers run chapter 12's byte-pair merges on the
# UTF-8 *bytes* of a text. Each byte is written as a printable stand-in, so that the merges work on
# printable text. All 256 bytes are in the vocabulary, so no text needs `<unk>`. GPT-2's one special
# token, `<|endoftext|>` (id 50256, the last), separates documents. Here are the stand-ins:

# %%
def byte_stand_ins() -> dict[int, str]:
    """The printable character GPT-2's tokenizer writes for each of the 256 bytes: a byte that is a
    printable Latin-1 character other than a space stands for itself; the others (space, line break,
    control bytes …) take the characters from chr(256) on, in byte order."""
    itself = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in itself]
    return {**{b: chr(b) for b in itself}, **{b: chr(256 + i) for i, b in enumerate(others)}}


stand_in = byte_stand_ins()
text = "Grüße\n ü"
print(f"{text!r}: UTF-8 bytes {list(text.encode())}")
print("  their stand-ins:", " ".join(stand_in[b] for b in text.encode()))
printable = all(ch.isprintable() and not ch.isspace() for ch in stand_in.values())
print(f"  {len(set(stand_in.values()))} different stand-ins, all printable: {printable}")

# %% tags=["hide-cell"]
# the library that runs GPT-2's fast tokenizer (transformers needs it)
from tokenizers.pre_tokenizers import ByteLevel

theirs = ByteLevel(add_prefix_space=False, use_regex=False)
ascii_alike = all(theirs.pre_tokenize_str(chr(b))[0][0] == stand_in[b] for b in range(128))  # one byte each
expect("the stand-ins are those of tokenizers' ByteLevel", ascii_alike and set(stand_in.values()) == set(ByteLevel.alphabet())
       and theirs.pre_tokenize_str(text)[0][0] == "".join(stand_in[b] for b in text.encode()), "256 bytes")

# %% [markdown]
# A space becomes `Ġ`, a line break `Ċ`, and ü its two bytes, `Ã¼`. The merges then run on these
# stand-ins. Below, the `tokenizers` library (it runs GPT-2's fast tokenizer) learns 300 byte-level
# merges from chapter 12's German sentences. Decoding turns each stand-in back into its byte, so even
# a text with characters the merges never saw comes back whole:

# %% tags=["nbval-ignore-output"]
from tokenizers import ByteLevelBPETokenizer

byte_bpe = ByteLevelBPETokenizer()  # GPT-2's recipe: byte stand-ins, then merges
byte_bpe.train_from_iterator([de for _, de in pairs_en_de], vocab_size=256 + 300, show_progress=False)  # 300 merges
round_trips = {}
for sample in ("Der Hund schläft.", "Grüße aus 東京 🙂"):
    encoded = byte_bpe.encode(sample)
    round_trips[sample] = (encoded.tokens, byte_bpe.decode(encoded.ids))
    print(f"{sample!r}: {encoded.tokens}")
    print(f"  back to text: {round_trips[sample][1]!r}")

# %% tags=["hide-cell"]
expect("byte-level BPE: both texts come back whole", all(back == sample for sample, (_, back) in round_trips.items()),
       f"{len(round_trips)} texts")
expect("the two bytes of ä merged into one token", "Ã¤" in round_trips["Der Hund schläft."][0], "Ã¤")

# %% [markdown]
# The two bytes of ä became one token, `Ã¤`. The characters of 東京 and 🙂 never occur in the
# German sentences: they stay single bytes, and no `<unk>` is needed. Chapter 12's BPE merges
# characters instead, and marks a word's start with "▁" as SentencePiece does: section 5 writes it
# in the form llama.cpp reads for such models.

# %% [markdown]
# ## 5. Your models in the engines people use
#
# Two trained models leave the course, both shipped: chapter 08's numbers translator and chapter
# 14's Shakespeare language model.
#
# The file `transformer_course/export.py` holds the inverses of chapter 15's converters: `to_marian`,
# `to_llama` and `to_gpt2` write the course's weights into `transformers`' classes, with chapter 15's
# reorderings undone. The course's attention biases go along (`attention_bias=True`), and the
# exported translator starts from `<bos>`, not Marian's `<pad>`.
#
# `to_marian` also reorders something chapter 15 never needed. The shipped translator interleaves
# its sinusoids (chapter 02); Marian puts the sines first, then the cosines. So every feature of the
# residual stream moves: feature 2i to place i, feature 2i + 1 to place D/2 + i
# (`reorder_features`), in every matrix, bias and LayerNorm that reads or writes the stream. Sums
# over the features ignore their order, so the logits stay the same, up to rounding.
#
# The command line does the rest (the CTranslate2 and GGUF exports need
# `pip install "transformer-course[export]"`). In a terminal:
#
# ```bash
# python -m transformer_course export numbers-en-de numbers-hf --to transformers
# python -m transformer_course export numbers-en-de numbers-ct2 --to ctranslate2
# python -m transformer_course export shakespeare-lm shakespeare-hf --to transformers
# python -m transformer_course export shakespeare-lm shakespeare-ct2 --to ctranslate2
# python -m transformer_course export shakespeare-lm shakespeare.gguf --to gguf
# ```
#
# The first name is a shipped model or a checkpoint the course wrote. `--to ctranslate2` converts the
# `transformers` folder with CTranslate2's own converter; `--to gguf` writes the one file llama.cpp
# reads, for language models only. llama.cpp rotates
# neighbouring pairs (2i, 2i + 1), as the course does. The folded cell runs the five commands:

# %% tags=["hide-input"]
missing = [name for name in ("ctranslate2", "gguf") if importlib.util.find_spec(name) is None]
if missing:
    raise MissingPackages(f"section 5's exports need {' and '.join(missing)}: pip install 'transformer-course[export]'")
from transformer_course_tools.cli import main as course_command

exports = Path(scratch.name) / "exports"  # the exported files, in a folder of their own
exports.mkdir()
here = Path.cwd()
os.chdir(exports)  # the command writes where it runs, as in a terminal
try:
    for model, out, target in [("numbers-en-de", "numbers-hf", "transformers"), ("numbers-en-de", "numbers-ct2", "ctranslate2"),
                               ("shakespeare-lm", "shakespeare-hf", "transformers"),
                               ("shakespeare-lm", "shakespeare-ct2", "ctranslate2"),
                               ("shakespeare-lm", "shakespeare.gguf", "gguf")]:
        course_command(["export", model, out, "--to", target])  # python -m transformer_course export …
finally:
    os.chdir(here)

# %% [markdown]
# **The tokenizer goes along,** as section 4 said it must. Each export writes the course's tokenizer
# beside the weights: `tokenizer.json` for `transformers` and CTranslate2, and in the GGUF file the
# token list in id order, with "▁" for a space (section 4). The translator's two vocabularies become
# Marian's one: the source's tokens, then the target's new ones, `<pad>` last. Each embedding row
# moves with its token. A token only the source has gets a logit bias of −∞, as do `<pad>` and
# `<bos>`, so no engine writes it:

# %%
import gguf

hf_tokenizer = transformers.AutoTokenizer.from_pretrained(exports / "numbers-hf")  # the translator's tokenizer.json
hf_lm_tokenizer = transformers.AutoTokenizer.from_pretrained(exports / "shakespeare-hf")  # the language model's
field = gguf.GGUFReader(exports / "shakespeare.gguf").fields["tokenizer.ggml.tokens"]
gguf_tokens = [bytes(field.parts[i]).decode("utf-8") for i in field.data]  # llama.cpp's token list, in id order
print(f"the translator: {len(hf_tokenizer)} tokens for both languages, <pad> = {hf_tokenizer.pad_token_id}, the last id")
hf_translator = transformers.AutoModelForSeq2SeqLM.from_pretrained(exports / "numbers-hf")
source_only = set(checkpoint.src_vocab.id_to_token) - set(checkpoint.tgt_vocab.id_to_token)
never_written = torch.isinf(hf_translator.final_logits_bias[0]).sum().item()  # its output layer's bias, (V,)
print(f"  logit bias −∞: {never_written} tokens, the {len(source_only)} the source alone has, <pad> and <bos>")
text = "HAMLET. O"
print(f"the language model on {text!r}:", hf_lm_tokenizer.tokenize(text, add_special_tokens=True))
print("  ids from the course's BPE:", shakespeare.encode(text, add_bos=True))
print("  ids from tokenizer.json:  ", hf_lm_tokenizer(text).input_ids)
print("  the GGUF file's token list is the course's, in id order:", gguf_tokens == list(shakespeare.id_to_token))

# %% tags=["hide-cell"]
expect("the exported translator: a bias of −∞ for the source-only tokens, <pad> and <bos>",
       never_written == len(source_only) + 2, f"{never_written} tokens")

# %% [markdown]
# The course's BPE and `tokenizer.json` give the same ids, and the GGUF file holds the course's token
# list.
#
# **The same tokens.** Each engine now runs from the exported files alone, through its own tokenizer:
# `transformers`' `generate` on text, CTranslate2 on the pieces of `tokenizer.json`, and llama.cpp on
# the GGUF file, where its Python package, `llama-cpp-python`, is installed. Five numbers first:

# %%
import ctranslate2

english = [number_to_english(n) for n in (7, 19, 101_021, 388_922, 999_999)]
src = pad_sequences([checkpoint.src_vocab.encode(english_tokens(t)) for t in english], checkpoint.src_vocab.pad_id)
german = {"the course": [german_text(checkpoint.tgt_vocab.decode(row)) for row in greedy_decode(translator, src).tolist()]}
with torch.no_grad():
    out = hf_translator.generate(**hf_tokenizer(english, return_tensors="pt", padding=True), max_new_tokens=20)
german["transformers"] = hf_tokenizer.batch_decode(out, skip_special_tokens=True)
ct2_translator = ctranslate2.Translator(str(exports / "numbers-ct2"), intra_threads=1)
pieces = [hf_tokenizer.tokenize(text) for text in english]  # the source's pieces, as tokenizer.json cuts them
german["CTranslate2"] = ["".join(r.hypotheses[0]) for r in ct2_translator.translate_batch(pieces, beam_size=1)]
for row, text in enumerate(english):
    print(text)
    for engine, texts in german.items():
        print(f"  {engine:14s} {texts[row]}")

# %% [markdown]
# Then the language model, on section 3's three prompts, each continued greedily until it writes
# `<eos>`, at most 40 tokens:

# %% tags=["nbval-ignore-output"]
c = lm.model.config
continued = {"the course": [generate(lm.model, torch.tensor([ids]), 40, path=ENGINE)[0].tolist() for ids in prompt_ids]}
hf_lm = transformers.AutoModelForCausalLM.from_pretrained(exports / "shakespeare-hf")
with torch.no_grad():
    continued["transformers"] = [hf_lm.generate(**hf_lm_tokenizer(p, return_tensors="pt"), max_new_tokens=40)[0].tolist()
                                 for p in prompts]
ct2_lm = ctranslate2.Generator(str(exports / "shakespeare-ct2"), intra_threads=1)
never = [[hf_lm_tokenizer.convert_ids_to_tokens(i)] for i in (c.pad_id, c.bos_id)]  # as the course's generate
starts = [hf_lm_tokenizer.tokenize(p, add_special_tokens=True) for p in prompts]
results = ct2_lm.generate_batch(starts, max_length=40, suppress_sequences=never, include_prompt_in_result=False,
                                return_end_token=True)
continued["CTranslate2"] = [ids + hf_lm_tokenizer.convert_tokens_to_ids(r.sequences[0])
                            for ids, r in zip(prompt_ids, results, strict=True)]
if importlib.util.find_spec("llama_cpp") is None:
    print("llama.cpp: skipped, the package llama-cpp-python is not installed (pip install llama-cpp-python)")
else:
    import llama_cpp

    llama_cpp.llama_log_set(quiet := llama_cpp.llama_log_callback(lambda *_: None), None)  # no notices
    llm = llama_cpp.Llama(str(exports / "shakespeare.gguf"), n_ctx=c.max_len, n_batch=c.max_len, n_threads=1,
                          n_threads_batch=1, verbose=False)  # one thread, for the prompt too
    own_ids = [llm.tokenize(p.encode(), add_bos=True, special=False) for p in prompts]  # llama.cpp's tokenizer
    continued["llama.cpp"] = [ids + llama_cpp_greedy(llm, ids, 40, [c.pad_id, c.bos_id], c.eos_id) for ids in own_ids]
for row, prompt in enumerate(prompts):
    print(prompt)
    for engine, texts in continued.items():
        print(f"  {engine:14s} … {shakespeare.decode(texts[row][len(prompt_ids[row]) :])}")  # the new tokens

# %% tags=["hide-cell"]
same_german = all(german[engine] == german["the course"] for engine in german)
expect("the translator: the same German from the course, transformers and CTranslate2", same_german,
       f"{len(english)} numbers")
same_text = all(continued[engine] == continued["the course"] for engine in ("transformers", "CTranslate2"))
expect("the language model: the same tokens from the course, transformers and CTranslate2", same_text,
       f"{len(prompts)} prompts")

# %% tags=["hide-cell", "nbval-ignore-output"]
llama_same = continued.get("llama.cpp", continued["the course"]) == continued["the course"]  # where it ran
expect("llama.cpp, where llama-cpp-python is installed: the same tokens as the course", llama_same,
       f"{len(prompts)} prompts" if "llama.cpp" in continued else "skipped: llama-cpp-python is not installed")

# %% [markdown]
# On these five numbers and three prompts, every engine wrote the course's tokens, each from the
# exported files alone.
#
# **Tokens per second.** Each engine decodes the same inputs again, one at a time, in float32 on one
# thread; `tokens_per_second` times them in turns, the median of 5 rounds.

# %% tags=["hide-input", "nbval-ignore-output"]
OURS = "the course's engine"
sources = [src[i : i + 1] for i in range(len(english))]  # (1, S) each: one number at a time
runs = {"translator": {
    "the course's modules": lambda: [greedy_decode(translator, s) for s in sources],
    OURS: lambda: [greedy_decode(translator, s, path=ENGINE) for s in sources],
    "transformers": lambda: [hf_translator.generate(**hf_tokenizer(t, return_tensors="pt"), max_new_tokens=20)
                             for t in english],
    "CTranslate2": lambda: [ct2_translator.translate_batch([p], beam_size=1) for p in pieces],
}, "language model": {
    "the course's modules": lambda: [generate(lm.model, torch.tensor([ids]), 40) for ids in prompt_ids],
    OURS: lambda: [generate(lm.model, torch.tensor([ids]), 40, path=ENGINE) for ids in prompt_ids],
    "transformers": lambda: [hf_lm.generate(**hf_lm_tokenizer(p, return_tensors="pt"), max_new_tokens=40)
                             for p in prompts],
    "CTranslate2": lambda: [ct2_lm.generate_batch([s], max_length=40, suppress_sequences=never) for s in starts],
}}
if "llama.cpp" in continued:
    runs["language model"]["llama.cpp"] = lambda: [llama_cpp_greedy(llm, ids, 40, [c.pad_id, c.bos_id], c.eos_id)
                                                   for ids in own_ids]
else:
    print("llama.cpp: skipped, llama-cpp-python is not installed")
made = {"translator": sum(greedy_decode(translator, s).shape[1] for s in sources),  # German pieces and <eos>
        "language model": sum(len(t) - len(p) for t, p in zip(continued["the course"], prompt_ids, strict=True))}

# %% tags=["measured", "nbval-ignore-output"]
speeds = tokens_per_second(runs, made)  # one thread, the engines taking turns, the median of 5 rounds
display(Markdown(speed_table(speeds, reference=OURS)))

# %% tags=["hide-cell"]
scratch.cleanup()  # section 4's tokenizer files and section 5's exports: every engine has loaded its model

# %% [markdown]
# These two models are small, about a million weights each. Where a C++ engine outruns the course's
# on them, a likely reason, not measured here, is section 1's operations, cheap in C++. On
# a published model's shapes, section 2's bytes weigh more.
#
# That is where the course set out to arrive: models trained by the course's code, from the parts you
# built, run in the engines people use and write your code's tokens there.

# %% [markdown]
# ## Summary
#
# - An inference engine reads a trained model once into a plan that cuts the operations of a step,
#   and gives your modules' tokens (`path=ENGINE`).
# - At batch 1 a generated token reads every weight once, plus the cache. The bytes per weight (4, 2,
#   about 1) set a floor on the time, which a kernel reaches only at the memory's speed.
# - int8 moves the logits by several hundredths of the largest one; where the top tokens lie close,
#   greedy tokens change: many in the random model, few or none in the trained one.
# - A model travels with its tokenizer: Marian's unigram models over one vocabulary, GPT-2's and
#   SmolLM2's byte-level BPE (no `<unk>`), the course's BPE in `tokenizer.json` and the GGUF file.
# - `python -m transformer_course export` takes a course model, tokenizer included, to `transformers`,
#   CTranslate2 and llama.cpp, which write the course's tokens in float32. Exporting the translator
#   reorders all D features; the logits stay the same.
#
# **Exercises:** [exercises/ex16_real_checkpoints.ipynb](../exercises/ex16_real_checkpoints.ipynb)
# asks you to write `dequantize_rows` (ex16_1), `quantize_rows` (ex16_2) and `int8_linear` (ex16_3).
# Stuck on one? `python -m transformer_course restore ex16_1` puts its worked answer in your student
# edition.
#
# ## Check yourself
#
# 1. Many checkpoints are stored in 16 bits (the appendix loads two). Why load them in float32
#    before comparing tokens with `transformers`'?
#    <details><summary>Answer</summary>
#
#    Our model computes in float32 (24 significant bits); bfloat16 keeps 8 (7 stored, one implied)
#    and float16 11. A 16-bit model computes another function, and
#    greedy tokens can part ways after a few steps. In float32 both compute the same one, so equal
#    tokens test the conversion.
#    </details>
# 2. How many bytes does one generated token of a 7-billion-parameter model read in bf16, and how
#    long does it take at 1 TB/s of memory bandwidth?
#    <details><summary>Answer</summary>
#
#    14 GB of weights (plus the cache), so at least 14 ms per token: about 70 tokens per second at
#    batch 1, whatever the arithmetic speed.
#    </details>
# 3. Chapter 15 reordered the rows of Llama's W^Q and W^K to bring a checkpoint in. What must
#    `to_llama` do with them on the way out, and why does the GGUF file need no reordering?
#    <details><summary>Answer</summary>
#
#    `transformers`' Llama rotates the pairs (i, i + d/2) of each head, the course the pairs
#    (2i, 2i + 1). So `to_llama` moves, in each head, row 2i to row i and row 2i + 1 to row i + d/2,
#    chapter 15's reordering run backwards. llama.cpp rotates neighbouring pairs (section 5): the
#    GGUF file holds W^Q and W^K as the course does.
#    </details>

# %% [markdown]
# ## Further reading
#
# - The paper: §3.4, §5.1 and §6.1.
# - Kudo and Richardson (2018), *SentencePiece: A simple and language independent subword tokenizer
#   and detokenizer for Neural Text Processing*; Kudo (2018), *Subword Regularization* (the unigram
#   model).
# - Radford et al. (2019), *Language Models are Unsupervised Multitask Learners* (GPT-2's byte-level
#   BPE).
# - Tiedemann and Thottingal (2020), *OPUS-MT — Building open translation services for the World*;
#   Allal et al. (2025), *SmolLM2: When Smol Goes Big*.
# - Pope et al. (2022), *Efficiently Scaling Transformer Inference*: why decoding is bound by memory.
# - Dettmers et al. (2022), *LLM.int8()*; Wolf et al. (2020), *Transformers: State-of-the-Art Natural
#   Language Processing* (the library this chapter compares with).
# - Klein et al. (2020), *Efficient and High-Quality Neural Machine Translation with OpenNMT*
#   (CTranslate2); the llama.cpp repository (ggml-org) and its description of the GGUF format.

# %% [markdown]
# ## Appendix: published checkpoints, with a network
#
# At home, the folded cell downloads OPUS-MT's English → German translator and SmolLM2-135M with
# `load_hub`, runs both in our models through chapter 15's converters, and checks SmolLM2's tokens
# against `transformers`'. Offline, as in the committed notebook, it prints one line and skips. `load_hub` loads every checkpoint in float32,
# whatever its `config.json` declares (the `-hf` releases of Llama 2 declare float16, many recent
# models bfloat16).

# %% tags=["hide-cell", "nbval-ignore-output"]
sentences = ["The cat sat on the mat.", "Machine translation has improved a great deal in the last ten years."]
try:  # downloads each checkpoint once, then reads it from the local cache
    opus_tokenizer, hf_opus = load_hub("Helsinki-NLP/opus-mt-en-de", "translation")
    smol_tokenizer, hf_smol = load_hub("HuggingFaceTB/SmolLM2-135M", "causal-lm")
except HubError as error:
    print(f"skipped here: {error}")
else:
    opus, smol_lm = from_marian(hf_opus), from_llama(hf_smol)  # chapter 15's converters: our models
    batch = opus_tokenizer(sentences, return_tensors="pt", padding=True).input_ids  # (B, S), each ends with </s>
    with torch.no_grad():
        tokens, _ = beam_search(opus, batch, beam_size=4)  # (B, 1, T): the best beam of each sentence
    for english, german in zip(sentences, opus_tokenizer.batch_decode(tokens[:, 0], skip_special_tokens=True),
                               strict=True):
        print(f"{english}\n  → {german}")
    prompt = smol_tokenizer("The Transformer is a neural network that", return_tensors="pt").input_ids  # (1, T)
    ours = generate(smol_lm, prompt, 30)  # 30 new tokens, greedily
    theirs = hf_smol.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False, max_new_tokens=30,
                              pad_token_id=smol_lm.config.pad_id)
    print(smol_tokenizer.decode(ours[0], skip_special_tokens=True))
    print("the same tokens as transformers' own SmolLM2:", torch.equal(ours, theirs))

# %% [markdown]
# **After the course:** you have built, trained and run the Transformer and its modern descendants
# from their parts, and run them in the engines people use. To go further, read the papers of each
# chapter's *Further reading*. Karpathy's nanoGPT and Raschka's *Build a Large Language Model (From
# Scratch)* train larger language models.
