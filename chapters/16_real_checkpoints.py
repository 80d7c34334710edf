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
# # Chapter 16 — Real checkpoints, engines and what sets the speed
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/16_real_checkpoints.ipynb)
#
# Chapter 15 put the weights of three published families into the course's own models: the OPUS-MT
# translators (Marian), GPT-2 and Llama (SmolLM2, a small Llama). It proved each conversion on
# random numbers in the real shapes. This chapter does the rest of what a real model needs. It turns
# text into the ids a checkpoint reads, and ids back into text. It downloads the published weights,
# where a network is there, and translates and writes with them. It shows what an inference engine
# does with a trained model: the same tokens, faster. And it asks what sets the speed of generation.
# The answer is the bytes each new token reads from memory.
#
# **Learning goals**
#
# - turn text into the ids a checkpoint expects and back: SentencePiece for Marian, byte-level BPE
#   for GPT-2 and SmolLM2, and each one's special tokens;
# - load a published checkpoint in float32, convert it, and check that ours and `transformers`
#   generate the same tokens;
# - see what an inference engine changes (the layout of the weights, the operations per step) and
#   what it leaves alone (the tokens);
# - estimate the memory a checkpoint needs, and the bytes one generated token reads in float32, bf16
#   and int8;
# - see why those bytes bound the time of a decoding step, and measure how close this processor's
#   kernels come to that bound.
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
import itertools
import json
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from IPython.display import Markdown, display
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from torch import nn

from transformer_course.convert import from_llama, from_marian
from transformer_course.datasets.sentences import generate_pairs
from transformer_course.decoding import beam_search, greedy_decode
from transformer_course.lm import DecoderOnlyLM, generate
from transformer_course.model import Transformer
from transformer_course.quantize import dequantize_rows, quantize, quantize_rows
from transformer_course_tools.engine.plan import plan_for
from transformer_course_tools.engine.run import KVBuffers
from transformer_course_tools.models.hub import HubError, load_hub, require_packages
from transformer_course_tools.models.published import course_config
from transformer_course_tools.notebook.claims import expect, expect_at_least, expect_at_most
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("16")  # the short stop at an unwritten exercise; printing and plotting style

# %% [markdown]
# ## Where we are
#
# Chapter 15 converted the weights of Marian, GPT-2 and Llama into our `Transformer` and
# `DecoderOnlyLM`. It proved them equal to the originals: the same logits within rounding, and the
# same greedy tokens as `transformers`. Those weights were random numbers in the real shapes. Here
# the numbers become the published ones, and the inputs become real text. The model is still the one
# chapters 06 and 13 built, with chapter 15's settings. The
# [notation page](../book/notation.md) lists the letters.
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right. Nearly every box
# is highlighted: the title says each holds a real checkpoint's weights. That covers both token
# embeddings and positional encodings, every box of the encoder and decoder layers, the tied linear
# layer and the softmax. Only the token ids at the bottom, and the loss and the next token at the
# top, stay plain.
#
# </details>

# %%
architecture_map(["embeddings", "positional", "encoder", "decoder"], title="Chapter 16: every box holds a real checkpoint's weights")

# %% [markdown]
# ## 1. From text to ids
#
# A checkpoint comes with its **tokenizer**. It cuts a text into the pieces its model was trained on,
# and gives each piece the id of its row in the embedding. Another tokenizer, even one with the same
# size of vocabulary, hands the model ids that mean other pieces. The three families use two kinds,
# and we can build both here, small and offline, on the English and German sentences of chapter 12.
#
# **Marian: SentencePiece, two models over one vocabulary.** SentencePiece cuts a text into pieces,
# with "▁" marking the start of a word, as chapter 12's tokenizer does. An OPUS-MT checkpoint holds
# two SentencePiece models: `source.spm` for the source language and `target.spm` for the target. It
# holds one vocabulary, `vocab.json`, which maps every piece of both to the row of the one shared
# embedding (§3.4). Its ids are not SentencePiece's own. In opus-mt-en-de `</s>` is 0, `<unk>` is 1,
# the pieces follow, and `<pad>` is the last id, 58100. The tokenizer appends `</s>` to every source
# sentence. It adds no start token, since the decoder starts from `<pad>`. A translator into several
# languages (opus-mt-en-ROMANCE, for one) holds a token per target language, `>>fr<<`, `>>es<<` …,
# and reads it as the first token of the source.
#
# Below, two SentencePiece models trained on the spot stand for the two files. A vocabulary is built
# like OPUS-MT's, with two language tokens as a multilingual model has. We do each step by hand, then
# check that `transformers`' own `MarianTokenizer`, given these three files, gives the same ids.
#
# From here on the chapter needs `transformers` and `sentencepiece`, Marian's tokenizer:
# `pip install "transformer-course[hub]"`. Without them it stops at the next cell, in one line.

# %%
require_packages("Chapter 16 from here on (real tokenizers and checkpoints)")
with warnings.catch_warnings():  # transformers imports tqdm.auto, which warns where Jupyter's widgets are not installed
    warnings.filterwarnings("ignore", message="IProgress not found")
    import sentencepiece
    import transformers

transformers.logging.set_verbosity_error()  # no notices about the library's own defaults

# %% tags=["nbval-ignore-output"]
pairs_en_de = list(itertools.islice(generate_pairs(seed=0), 2000))  # chapter 12's sentences, made on the spot
folder = Path(tempfile.mkdtemp())
for side, texts in (("source", [en for en, _ in pairs_en_de]), ("target", [de for _, de in pairs_en_de])):
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_prefix=str(folder / side), vocab_size=400, model_type="unigram",
        bos_id=-1, eos_id=-1, pad_id=-1, unk_id=0, num_threads=1, minloglevel=2,
    )  # fmt: skip
source_spm = sentencepiece.SentencePieceProcessor(model_file=str(folder / "source.model"))
target_spm = sentencepiece.SentencePieceProcessor(model_file=str(folder / "target.model"))
pieces = sorted({spm.id_to_piece(i) for spm in (source_spm, target_spm) for i in range(1, spm.get_piece_size())})
vocab = {token: i for i, token in enumerate(["</s>", "<unk>", ">>de<<", ">>fr<<", *pieces, "<pad>"])}  # as OPUS-MT's
(folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")

english, german = pairs_en_de[0]
english_pieces = source_spm.encode(english, out_type=str)
english_ids = [vocab.get(piece, vocab["<unk>"]) for piece in english_pieces] + [vocab["</s>"]]
print(english)
print("  pieces (source.spm):       ", english_pieces)
print("  ids (vocab.json), </s> = 0:", english_ids)

with warnings.catch_warnings():  # MarianTokenizer recommends sacremoses, which only normalises punctuation
    warnings.simplefilter("ignore")
    marian_tokenizer = transformers.MarianTokenizer(source_spm=str(folder / "source.model"),
                                                    target_spm=str(folder / "target.model"),
                                                    vocab=str(folder / "vocab.json"))  # fmt: skip
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
# The pieces a SentencePiece model learns, and so the ids, can differ from one version of the library
# to another. What the tokenizer does with them does not (checked).

# %% tags=["hide-output"]
by_hand = marian_tokenizer(english).input_ids == english_ids
expect("MarianTokenizer: the ids of the steps by hand", by_hand, f"{len(english_ids)} ids, </s> last")
first = marian_tokenizer(">>fr<< " + english).input_ids[0]
expect("a language token is read as the first id", first == vocab[">>fr<<"], f">>fr<< = {first}")
short = batch.input_ids[0]  # "Hello.": its ids, </s>, then padding
end = short.index(vocab["</s>"])
expect("the shorter row: </s>, then only <pad>, the last id", set(short[end + 1 :]) == {len(vocab) - 1},
       f"{len(short) - end - 1} × {len(vocab) - 1}")  # fmt: skip
expect("the German ids decoded back to the sentence", german_back == german, repr(german_back))

# %% [markdown]
# **GPT-2 and SmolLM2: byte-level BPE.** Their tokenizers run chapter 12's byte-pair merges on
# *bytes*, not on characters. Every text is first written as UTF-8 bytes, and each of the 256 bytes
# has a printable stand-in. `Ġ` is a space, `Ċ` a line break, and a character outside ASCII becomes
# two to four stand-ins (ü is `Ã¼`). The 256 bytes are all in the vocabulary, so no text ever needs
# `<unk>`: the vocabulary has none. The merges then join frequent byte sequences into longer tokens,
# so that "Ġthe" is one id. GPT-2's tokenizer adds nothing to a text: no `<bos>`, no `<eos>`. Its one
# special token, `<|endoftext|>` (id 50256, the last), separates documents. SmolLM2's is id 0: its
# `<bos>`, its `<eos>` and, in our conversion, its padding. Its vocabulary holds a few other special
# tokens besides. Decoding maps each stand-in back to its byte, and the bytes back to the text,
# exactly.
#
# The same kind of tokenizer, trained on the spot with the `tokenizers` library that chapter 12
# uses:

# %%
byte_bpe = Tokenizer(models.BPE())
byte_bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)  # bytes, a space kept as Ġ
byte_bpe.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=["<|endoftext|>"], show_progress=False,
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # all 256 bytes  # fmt: skip
byte_bpe.train_from_iterator([en for en, _ in pairs_en_de], trainer)
text = f"{english}\nThe dog sleeps über alles 🙂"
encoding = byte_bpe.encode(text)
print(repr(text))
print("tokens:", encoding.tokens)
print("ids:   ", encoding.ids)
print("an id for <unk>:", byte_bpe.token_to_id("<unk>"), "| decoded, the same text:", byte_bpe.decode(encoding.ids) == text)

# %% [markdown]
# In section 2 the real tokenizers do the same: `tokenizer(sentences).input_ids` gives the ids our
# models read, and `tokenizer.decode(ids, skip_special_tokens=True)` turns the generated ids back
# into text.

# %% [markdown]
# ## 2. The real checkpoints
#
# Chapter 15 ran random numbers in the real shapes. With a network (Colab, a laptop), the next two
# cells download the published weights and run them in our model. The first is OPUS-MT's
# English → German translator, decoded with our beam search and KV cache (chapter 09). The second is
# SmolLM2-135M, which continues an English text with our `generate`. The course's loader,
# `transformer_course_tools.models.hub.load_hub`, waits a bounded time, then stops with one clear error.
# Without a network each cell prints one line saying it skipped and why. (The first download is about
# 300 MB for Marian and 270 MB for SmolLM2; later runs read the local cache.)
#
# `load_hub` loads every checkpoint in float32. Published LLM checkpoints are stored in bfloat16, 2
# bytes a number (SmolLM2's are). Recent versions of `transformers` load a checkpoint in the precision
# it is stored in, unless told otherwise. Our converted model computes in float32. So a comparison
# with a bf16 `transformers` model would compare two different computations, and greedy tokens would
# part ways after a few steps. In float32 both compute the same function, and the cell after these two
# asserts that they generate the same tokens.

# %% tags=["nbval-ignore-output"]
sentences = ["The cat sat on the mat.", "Attention is all you need.",
             "Machine translation has improved a great deal in the last ten years."]  # fmt: skip
identical = {}  # what each real checkpoint that ran showed: (ours and transformers' identical?, on what)
try:
    tokenizer, real_hf_opus = load_hub("Helsinki-NLP/opus-mt-en-de", "translation")
except HubError as error:
    print(f"skipped the real translator: {error}")
else:
    real_opus = from_marian(real_hf_opus)
    batch = tokenizer(sentences, return_tensors="pt", padding=True).input_ids  # (B, S), each ends with </s>
    with torch.no_grad():
        tokens, _ = beam_search(real_opus, batch, beam_size=4, use_cache=True)  # (B, 1, T)
        greedy_ours = greedy_decode(real_opus, batch, max_len=64)  # 64 tokens at most; theirs one more, the
        greedy_theirs = real_hf_opus.generate(  # <eos> that transformers forces at its last step (ch. 15, §4)
            input_ids=batch, attention_mask=batch != tokenizer.pad_token_id, do_sample=False, num_beams=1,
            max_new_tokens=65)  # fmt: skip
    for english, german in zip(sentences, tokenizer.batch_decode(tokens[:, 0], skip_special_tokens=True), strict=True):
        print(f"{english}\n  → {german}")
    same = tokenizer.batch_decode(greedy_ours, skip_special_tokens=True) == tokenizer.batch_decode(
        greedy_theirs, skip_special_tokens=True)  # fmt: skip
    identical["OPUS-MT en-de: greedy translations"] = (same, f"{len(sentences)} sentences")
    print("greedy translations identical to transformers':", same)

# %% tags=["nbval-ignore-output"]
try:
    smol_tokenizer, real_hf_smol = load_hub("HuggingFaceTB/SmolLM2-135M", "causal-lm")
except HubError as error:
    print(f"skipped the real language model: {error}")
else:
    real_smol = from_llama(real_hf_smol)
    prompt_ids = smol_tokenizer("The Transformer is a neural network that", return_tensors="pt").input_ids  # (1, T)
    with torch.no_grad():
        logit_gap = (real_smol(prompt_ids) - real_hf_smol(prompt_ids).logits).abs().max().item()
        continued = generate(real_smol, prompt_ids, max_new_tokens=30)
        theirs_ids = real_hf_smol.generate(prompt_ids, attention_mask=torch.ones_like(prompt_ids), do_sample=False,
                                           max_new_tokens=30, pad_token_id=real_smol.config.pad_id)  # fmt: skip
    print(smol_tokenizer.decode(continued[0], skip_special_tokens=True))
    print(f"largest logit difference on the prompt: {logit_gap:.1e}")
    same = torch.equal(continued, theirs_ids)
    identical["SmolLM2-135M: greedy continuation"] = (same, "30 new tokens")
    print("identical to transformers' greedy continuation:", same)

# %% tags=["hide-output"]
for claim, (same, measured) in identical.items():
    expect(f"{claim} identical to transformers' (both in float32)", same, measured)
if not identical:
    print("skipped: no real checkpoint loaded here (no network and no local copy); where one loads, this cell "
          "asserts that ours and transformers' generate the same tokens")  # fmt: skip

# %% [markdown]
# **Your own checkpoint.** The recipe is the one these two cells follow:
#
# 1. the tokenizer and the model: `tokenizer, hf_model = load_hub(name, "causal-lm")` (or
#    `"translation"`), which loads the model in float32. Or `transformers`' own
#    `AutoTokenizer.from_pretrained(name)` and `LlamaForCausalLM.from_pretrained(name,
#    dtype=torch.float32)` (`torch_dtype=` in older versions);
# 2. convert: `ours = from_llama(hf_model)` (`from_gpt2`, `from_marian`);
# 3. compare the logits on a real sentence, `ours(ids)` against `hf_model(ids).logits`: within 10⁻⁵
#    of the largest for a short text;
# 4. generate with `generate(ours, ids, max_new_tokens=…)` (`greedy_decode` or `beam_search` for
#    Marian), and decode with `tokenizer.decode(tokens[0], skip_special_tokens=True)`.
#
# What converts: the OPUS-MT translators (`Helsinki-NLP/opus-mt-*`, Marian with post-LN layers),
# GPT-2 of every size, and the Llama family with plain rotary embeddings. That is SmolLM and SmolLM2,
# TinyLlama, Llama 2 and Llama 3 (8B). What is refused, with one line saying why:
#
# - a checkpoint whose `rope_scaling` rescales the rotary frequencies (Llama 3.1 and 3.2, for their
#   long contexts);
# - a head size other than D/H, and biases in Llama's feed-forward network;
# - GPT-2's scaled or upcast attention variants, and an activation our feed-forward network does not
#   have;
# - a configuration that names several `<eos>` ids. Llama 3's instruct models stop at either of two
#   (Llama 3.1's at any of three), and our `generate` stops at one: set the one you want;
# - a family of another kind (the loader), and a model without the language-model output layer
#   (`LlamaModel`) or with another head (the converters).
#
# The memory: a float32 copy takes 4 bytes a parameter. While converting, `transformers`' model and
# ours are both in memory, twice that. The cell below builds our three models in their full,
# published shapes on PyTorch's meta device (chapter 07). There a tensor has a shape but no numbers,
# so nothing is downloaded or allocated.

# %%
# the published shapes (each checkpoint's config.json, transformer_course_tools/models/published.py), made
# into our configurations by the first half of chapter 15's converters (config_from_marian, …)
opus_config = course_config("Helsinki-NLP/opus-mt-en-de")  # a TransformerConfig
gpt2_config = course_config("openai-community/gpt2")  # GPT-2 small, a DecoderOnlyConfig
smol_config = course_config("HuggingFaceTB/SmolLM2-135M")  # chapter 13's block, grouped key/value heads
with torch.device("meta"):  # the full shapes, without allocating a single number (chapter 07)
    full = {"opus-mt-en-de": Transformer(opus_config), "GPT-2 small": DecoderOnlyLM(gpt2_config),
            "SmolLM2-135M": DecoderOnlyLM(smol_config)}  # fmt: skip
for name, model in full.items():
    n = model.num_parameters()  # distinct parameters: a tied matrix once
    print(f"{name:14s} {n / 1e6:6.1f} M parameters: {4 * n / 2**30:.2f} GiB in float32, "
          f"{8 * n / 2**30:.2f} GiB while converting")  # fmt: skip
print(f"a 7-billion-parameter Llama: {4 * 7e9 / 2**30:.0f} GiB in float32, {2 * 7e9 / 2**30:.0f} GiB in bf16")


# %% [markdown]
# ## 3. An inference engine: the same tokens, faster
#
# Your modules say what the model computes, one idea per file. Run step by step, as chapter 09's
# loops run them, they are slow for a reason that has nothing to do with those ideas. A decoding step feeds one token per sentence.
# Each weight is then read from memory once and used for one multiply and one add. So a step's time
# goes into two things. One is the **bytes** of weights it reads. The other is the **operations** it
# asks of PyTorch, each with a fixed cost of a few microseconds, however small.
#
# Inference engines such as CTranslate2 and llama.cpp attack both. They *convert* a trained model
# into a form of their own, once, and decode with that. The course has one:
# `transformer_course_tools/engine/`. Pass `path="engine"` to `greedy_decode`, `beam_search`, `sample` or
# chapter 13's `generate`. The engine reads the model's parameters into a *plan*:
#
# - each weight matrix in the layout its product reads fastest (on a CPU: $W^\top$ stored contiguous
#   for one row, oneDNN's blocked layout for several);
# - $W^Q$, $W^K$ and $W^V$ stacked into one matrix, so one product gives all three;
# - the keys and values of the source projected once per call, for every layer at once;
# - caches allocated once for the longest output, instead of growing at every step;
# - in pre-LN models, each norm's gain folded into the matrix after it.
#
# The plan is made the first time a model is decoded and kept until its parameters change. First,
# what matters most: the same translations. We take the translator that ships with the course
# (trained by chapter 08's recipe) and its test split, and a random model of the same shape that
# never says `<eos>`, so that every timing decodes exactly the tokens asked for.

# %%
from transformer_course.batching import pad_sequences
from transformer_course.config import TransformerConfig
from transformer_course.datasets.numbers import numbers_task
from transformer_course_tools.engine.weights import Dense
from transformer_course_tools.models.pretrained import load_pretrained
from transformer_course_tools.notebook.operations import CountOps

translator = load_pretrained().model.eval()  # the shipped numbers translator
task = numbers_task()
test_src = pad_sequences([task.src_vocab.encode(s) for s, _ in task.test], task.src_vocab.pad_id)  # (B, S)
test_greedy = greedy_decode(translator, test_src)  # (B, T): your modules, as chapter 09 ran them
timing_config = TransformerConfig(**{**translator.config.to_dict(), "max_len": 128})
torch.manual_seed(0)
timing_model = Transformer(timing_config).eval()
with torch.no_grad():
    timing_model.output.bias[timing_config.eos_id] = -1e4  # never stop: exactly n tokens per sentence
timing_src = torch.randint(4, timing_config.src_vocab_size, (32, 12))


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start

# %%
same = {  # the test split translated by your modules (left) and by the engine (right)
    "greedy": torch.equal(test_greedy, greedy_decode(translator, test_src, path="engine")),
    "beam 4": torch.equal(beam_search(translator, test_src, 4)[0], beam_search(translator, test_src, 4, path="engine")[0]),
}
print(f"the {test_src.shape[0]} test numbers, the same tokens from your modules and from the engine:", same)
assert all(same.values())

# %% [markdown]
# Now the operations. We count every call that reaches PyTorch's dispatcher while one more token is
# decoded (the difference between decoding $n + 1$ and $n$ tokens), per decoder layer.


# %%
def operations_per_layer(path: str, n: int = 6) -> float:
    """ATen operations of one greedy step, per decoder layer (a random model that never stops early)."""
    counts = []
    for tokens in (n, n + 1):
        with CountOps() as count:
            greedy_decode(timing_model, timing_src[:1], tokens, path=path)  # n tokens, then n + 1: one step more
        counts.append(count.ops.total())
    return (counts[1] - counts[0]) / timing_config.n_decoder_layers


greedy_decode(timing_model, timing_src[:1], 2, path="engine")  # 2 tokens: the plan is made once, before counting
operations = {path: operations_per_layer(path) for path in ("modules", "engine")}

# %% tags=["nbval-ignore-output"]
for path, count in operations.items():
    print(f"{path:8s} {count:5.1f} operations per decoder layer per token")

# %%
expect_at_most("the engine's operations per layer per token", operations["engine"], 45)
expect_at_most("the engine's operations relative to your modules'", operations["engine"] / operations["modules"], 0.6)

# %% [markdown]
# The bytes: a step reads every weight of the decoder and of the output layer once. At batch 1
# that is all it reads, apart from the small caches. So the time of a step is about those bytes
# divided by the speed of the memory. The layout of a matrix decides how close its product gets to
# that speed. A product of several rows (a batch, the beams, the encoder's positions) uses
# each weight several times, and there the kernel matters more than the layout.
#
# Below, one matrix the size of a large output layer multiplies 1 row, then 16 rows. It is stored
# three ways: in `nn.Linear`'s layout $(V, D)$, as $W^\top$ stored contiguous $(D, V)$, and as the
# engine multiplies it (`Dense`). `Dense` uses $W^\top$ for one row and oneDNN's blocked copy of $W$
# for several. Then the time per token of both paths on the random model above. One thread; the numbers are this
# machine's, in this run.

# %% tags=["measured", "nbval-ignore-output"]
threads = torch.get_num_threads()
torch.set_num_threads(1)
weight = torch.randn(8192, 2048)  # (out, in): nn.Linear's layout, 64 MiB
weight_t = weight.t().contiguous()  # (in, out)
engine_product = Dense(weight, None)  # the engine's matrix: the kernel it picks for the number of rows
for rows in (1, 16):
    x = torch.randn(rows, 2048)
    engine_product(x)  # the blocked copy is made at the first product of several rows, not timed
    layout_seconds = {
        "nn.Linear's (out, in)": min(seconds(lambda x=x: torch.nn.functional.linear(x, weight)) for _ in range(5)),
        "W^T, (in, out)": min(seconds(lambda x=x: x.mm(weight_t)) for _ in range(5)),
        "the engine's": min(seconds(lambda x=x: engine_product(x)) for _ in range(5)),
    }
    for name, s in layout_seconds.items():
        print(f"{rows:2d} row(s), {name:22s} {1000 * s:6.2f} ms   {weight.numel() * 4 / s / 1e9:5.1f} GB/s read")
path_seconds = {  # 32 tokens from each path, the best of 3 runs
    path: min(seconds(lambda path=path: greedy_decode(timing_model, timing_src[:1], 32, path=path)) for _ in range(3))
    for path in ("modules", "engine")
}
torch.set_num_threads(threads)
for path, s in path_seconds.items():
    print(f"{path:8s} {1000 * s / 32:6.2f} ms per token (batch 1)")
print(f"the engine: {path_seconds['modules'] / path_seconds['engine']:.1f}× as fast on this model")

# %%
expect_at_least("the engine's speed relative to your modules' (batch 1)",
                path_seconds["modules"] / path_seconds["engine"], 1.2)  # fmt: skip

# %% [markdown]
# On a real model's shapes, `benchmarks/engines.py` measures the same engine against CTranslate2 and
# llama.cpp, the engines people use, with the same random weights in each, one thread each. Here
# is what it recorded in `benchmarks/results.md` (a 2-core AMD EPYC, 2026-11-29; a ratio above 1
# means the course's engine was faster):
#
# | model's shape | decoding | engine compared | float32 | int8 |
# | --- | --- | --- | ---: | ---: |
# | opus-mt-en-de (a translator) | greedy, 1 sentence | CTranslate2 | 1.19 | 1.74 |
# | | greedy, 16 sentences | CTranslate2 | 1.48 | 1.17 |
# | | beam 4, 1 sentence | CTranslate2 | 1.52 | 1.56 |
# | | beam 4, 16 sentences | CTranslate2 | 1.07 | 1.01 |
# | SmolLM2-135M (a language model) | greedy, 1 text | llama.cpp | 0.71 | 0.68 |
#
# On the translator the engine is ahead in every setting but one. In int8 with 16 sentences of 4
# beams the two are level (1.01 here, 0.99 in another run). There a step has 64 rows, and the work
# outside the products weighs more: log-probabilities over the whole vocabulary, and the cache
# reordered for the survivors. After each step, a hypothesis's first survivor keeps its parent's
# row of the cache, and only its other survivors are copied. On the language model,
# llama.cpp's own matrix-vector code reads the weights faster than PyTorch's kernels. The engine
# never changes what the model computes. Your modules remain the definition, and the tests hold the
# engine to their tokens for every kind of model in the course.

# %% [markdown]
# ## 4. What sets the speed: bytes per token
#
# A step of generation with a KV cache (chapter 09) feeds one new token. Each weight matrix then
# multiplies one vector: every weight is read from memory once and used for a single multiply and
# add. The keys and values of the earlier tokens are read from the cache. A processor does far more
# arithmetic per second than it reads bytes. So at batch 1, the time of a step is about the bytes it
# reads divided by the speed of the memory:
#
# $$t_\text{token} \approx \frac{\text{bytes of the weights} + \text{bytes of the cache}}{\text{bytes the memory delivers per second}}.$$
#
# Fewer bytes per weight make fewer bytes per token.
# `quantize(model, "bf16")` stores every number in 2 bytes. `quantize(model, "int8")` stores each
# weight matrix as 8-bit whole numbers with one float32 scale per row; the norms, the biases and the
# cache stay float32.
#
# The bytes of one generated token of the real SmolLM2-135M (30 layers) follow from the shapes
# alone. We count them with 1,000 earlier tokens in the cache and with 8,192, the longest text
# SmolLM2 was trained on.

# %%
c = smol_config  # the real shape: 30 layers
weights_full = full["SmolLM2-135M"].num_parameters()
matrices_full = weights_full - c.n_layers * 2 * c.d_model - c.d_model  # minus the norms' gains (float32 in int8)


def kv_numbers(tokens: int, layers: int = c.n_layers, kv_heads: int = c.n_kv_heads) -> int:
    """Keys and values of every layer for ``tokens`` earlier tokens: 3 key/value heads of 64 features."""
    return 2 * layers * kv_heads * (c.d_model // c.n_heads) * tokens


print(f"SmolLM2-135M: {weights_full / 1e6:.1f} M weights")
for context in (1000, c.max_len):  # the longest text it was trained on
    cache = {"float32": 4 * kv_numbers(context), "bf16": 2 * kv_numbers(context), "int8": 4 * kv_numbers(context)}
    weights = {"float32": 4 * weights_full, "bf16": 2 * weights_full, "int8": matrices_full + 4 * (weights_full - matrices_full)}
    print(f"with {context:5,} tokens in the cache:")
    for precision in weights:
        total = weights[precision] + cache[precision]
        print(f"  {precision:8s} {total / 2**20:6.1f} MiB per token, of which the cache "
              f"{cache[precision] / 2**20:5.1f} MiB ({cache[precision] / total:.0%})")  # fmt: skip

# %% [markdown]
# With float32 or bf16, the cache of 1,000 tokens is small next to the weights, thanks to the 3
# key/value heads of grouped-query attention (chapter 13). With int8 weights and a float32 cache, it
# is already about a quarter of the bytes. At 8,192 tokens it is about 40 % of the bytes in float32
# or bf16, and about three quarters with int8 weights: for a long text, the cache is worth
# shrinking as much as the weights.
#
# To measure, we need a SmolLM2 that runs. As in chapter 15, it gets 4 of its 30 layers, and every
# tensor is drawn at random. Each matrix comes from N(0, 1/its input size), each gain from N(1, 0.2²).

# %%
smol = DecoderOnlyLM(replace(smol_config, n_layers=4))
generator = torch.Generator().manual_seed(0)
with torch.no_grad():  # in the order of their names, as chapter 15 drew them
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
# > only, so it has 3 heads per layer. A count with 9 makes the cache three times too large. The
# > engine's own cache settles it: below, the engine allocates one for 1,000 tokens of our 4-layer
# > model, and we compare its bytes with both counts.

# %%
buffers = KVBuffers(plan_for(smol), batch=1, capacity=1000)  # the engine's keys and values, every layer
allocated = sum(t.numel() * t.element_size() for t in buffers.keys + buffers.values)
right = 4 * kv_numbers(1000, layers=smol.config.n_layers)  # float32: 4 bytes a number
wrong = 4 * kv_numbers(1000, layers=smol.config.n_layers, kv_heads=smol.config.n_heads)  # the bug: 9 heads
print(f"the engine's cache for 1,000 tokens: {allocated / 2**20:.2f} MiB")
print(f"counted with the 3 key/value heads: {right / 2**20:.2f} MiB; with the 9 query heads: {wrong / 2**20:.2f} MiB")

# %% tags=["hide-output"]
expect("the cache counted with the key/value heads: the engine's, to the byte", right == allocated,
       f"{allocated:,} bytes")  # fmt: skip
expect("the cache counted with every query head: three times too large", wrong == 3 * allocated, f"{wrong:,} bytes")

# %% [markdown]
# What `int8` computes depends on where it runs. On a CPU, `Int8Linear` calls PyTorch's fbgemm
# kernel. That kernel rounds each layer's *input* to 8 bits as well, with one scale per call (dynamic
# quantization), multiplies whole numbers and rescales. On a GPU it calls PyTorch's weight-only
# product (`torch._weight_int8pack_mm`): the int8 weights are read as they are, and the input keeps
# its precision. The two round differently. So below we measure both against float32 on our 4-layer
# SmolLM2: the largest logit error relative to the largest logit, and how many greedy tokens agree.
# "Weights only" multiplies by the int8 weights made float again, which is what the weight-only
# kernel computes.

# %% tags=["nbval-ignore-output"]
int8_smol = quantize(smol, "int8")
weights_only = copy.deepcopy(smol)
with torch.no_grad():
    for module in weights_only.modules():
        if isinstance(module, nn.Linear):  # the int8 weights, made float again: what a weight-only kernel reads
            module.weight.copy_(dequantize_rows(*quantize_rows(module.weight)))
prompt = torch.randint(1, 49000, (4, 8), generator=torch.Generator().manual_seed(5))
with torch.no_grad():
    reference = smol(prompt)  # (B, T, V), float32
    errors = {name: ((m(prompt).float() - reference).abs().max() / reference.abs().max()).item()
              for name, m in (("int8 weights only", weights_only), ("int8 weights and inputs (CPU)", int8_smol))}  # fmt: skip
float_tokens = generate(smol, prompt, 16, path="engine")[:, 8:]
agreement = {name: (generate(m, prompt, 16, path="engine")[:, 8:] == float_tokens).float().mean().item()
             for name, m in (("int8 weights only", weights_only), ("int8 weights and inputs (CPU)", int8_smol))}  # fmt: skip
for name in errors:
    print(f"{name:30s} largest logit error {errors[name]:.2%} of the largest logit; "
          f"greedy tokens equal to float32's: {agreement[name]:.0%}")  # fmt: skip

# %%
expect_at_most("int8 weights only: largest logit error relative to the largest logit", errors["int8 weights only"], 0.1)
expect_at_most("int8 weights and inputs: largest logit error relative to the largest logit",
               errors["int8 weights and inputs (CPU)"], 0.2)  # fmt: skip

# %% [markdown]
# (These are random weights. On the course's trained translators, int8 changes no test score by more
# than half a point: `benchmarks/results.md`.)
#
# Now the time. We decode with the course's inference engine (`path="engine"`, section 3). It runs float32, bf16 and int8 through the same lean step, and reads each weight once per
# token: the bytes below are those of its plan. In memory, an int8 model on a CPU holds two int8
# copies of each matrix: the state dict's, and the one fbgemm packs for its kernel. The engine's plan
# holds its own copy of the model too; a step reads one. The timings are this machine's, and they move
# with whatever else it runs. A processor without bfloat16 instructions converts every number before
# it multiplies, so bf16 can be slower than float32 there. And int8 gains only as much as its kernel
# reads bytes as fast as float32's product does.
#
# <details><summary>The figure in words</summary>
#
# A scatter plot has one labelled dot per precision: float32, bf16 and int8.
# The horizontal axis gives the MiB of weights the engine reads per generated token, the vertical
# axis the milliseconds per token, both from 0. The checks below bound the horizontal positions. The
# bf16 dot reads at most half of float32's bytes, and the int8 dot less than a third. The heights
# are this machine's timings, and the title names the precision that was fastest here.
#
# </details>

# %% tags=["measured", "nbval-ignore-output"]
variants = {"float32": smol, "bf16": quantize(smol, "bf16"), "int8": int8_smol}
prompt = torch.randint(1, 49000, (1, 8))
timings, read = {}, {}
for precision, model in variants.items():
    generate(model, prompt, max_new_tokens=2, path="engine")  # warm-up: the engine reads the model once
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        out = generate(model, prompt, max_new_tokens=16, path="engine")
        best = min(best, (time.perf_counter() - start) / (out.shape[1] - prompt.shape[1]))
    timings[precision], read[precision] = best, plan_for(model).nbytes
    print(f"{precision:8s} {read[precision] / 2**20:6.1f} MiB read per token   {1000 * best:6.1f} ms per token")
fig, ax = plt.subplots(figsize=(5, 3.4))
for precision in variants:
    ax.scatter(read[precision] / 2**20, 1000 * timings[precision], s=60)
    ax.annotate(precision, (read[precision] / 2**20, 1000 * timings[precision]), xytext=(6, 4),
                textcoords="offset points")  # fmt: skip
ax.set(xlabel="MiB of weights read per token", ylabel="ms per generated token",  # room for the labels:
       xlim=(0, 1.25 * max(read.values()) / 2**20), ylim=(0, 1.2 * 1000 * max(timings.values())),
       title=f"{min(timings, key=timings.get)} was fastest on this CPU")  # fmt: skip
plt.tight_layout()
plt.show()
fastest = min(timings, key=timings.get)
display(Markdown(f"On this machine the fastest was **{fastest}**, at {1000 * timings[fastest]:.1f} ms per token "
                 f"({timings['float32'] / timings[fastest]:.1f}× float32)."))  # fmt: skip

# %%
expect_at_most("bf16 weights: bytes read per token relative to float32", read["bf16"] / read["float32"], 0.5)
expect_at_most("int8 weights: bytes read per token relative to float32", read["int8"] / read["float32"], 0.3)

# %% [markdown]
# ## Summary
#
# - A checkpoint's tokenizer turns text into the ids it was trained on. Marian has two
#   SentencePiece models over one vocabulary (`</s>` appended, `<pad>` the last id). GPT-2 and
#   SmolLM2 have byte-level BPE (every byte has an id, so no `<unk>`).
# - `load_hub` loads a published checkpoint in float32 and waits a bounded time. Offline, each cell
#   says in one line that it skipped. Where the checkpoints load, ours and `transformers` generate
#   the same tokens.
# - A float32 copy takes 4 bytes a parameter, twice that while converting.
# - A decoding step's time goes into the bytes of weights it reads and the operations it launches.
#   The inference engine (`path="engine"`) reads a trained model once into a plan that cuts both, and
#   gives the same tokens as your modules.
# - At batch 1 a generated token reads every weight once, plus the cache. The bytes per weight
#   (4, 2, about 1) set a floor on the time. A kernel reaches it only if it reads them at the
#   memory's speed.
# - The cache holds the key/value heads only. It grows with the text: at 8,192 tokens it is about
#   40 % of the bytes a token reads in float32 or bf16, and three quarters with int8 weights.
#
# **Exercises:** this chapter has no exercises of its own. Chapter 15's exercises cover the conversion
# it relies on.
#
# ## Check yourself
#
# 1. Why can GPT-2's tokenizer never need `<unk>`, whatever the text?
#    <details><summary>Answer</summary>
#
#    It works on bytes. Every text is a sequence of UTF-8 bytes, and each of the 256 bytes has an id
#    of its own. The merges only join bytes into longer tokens. A character the training text never
#    held still splits into bytes that the vocabulary has.
#    </details>
# 2. A checkpoint is stored in bfloat16. Why does the chapter load it in float32 before it compares
#    ours with `transformers`?
#    <details><summary>Answer</summary>
#
#    Our converted model computes in float32. A bf16 model rounds every number to 8 bits of
#    mantissa, so it computes another function. Its logits differ by far more than rounding, and
#    greedy tokens part ways after a few steps. In float32 both compute the same function, so equal
#    tokens test the conversion.
#    </details>
# 3. How many bytes does one generated token of a 7-billion-parameter model read in bf16, and
#    how long does it take at 1 TB/s of memory bandwidth?
#    <details><summary>Answer</summary>
#
#    14 GB of weights (plus the cache), so at least 14 ms per token: about 70 tokens per second at
#    batch 1, whatever the arithmetic speed. In int8 it takes about half of that time, where the
#    kernel reads the 8-bit weights as fast as the memory delivers them. A GPU's weight-only product
#    does; on our CPU, fbgemm's one-row product falls short of it.
#    </details>
# 4. What two costs of a decoding step does the inference engine cut, and what must it leave
#    unchanged?
#    <details><summary>Answer</summary>
#
#    The bytes of weights a step reads and the operations it launches. It must leave the tokens
#    unchanged: they equal your modules', and the tests hold it to that.
#    </details>
# 5. SmolLM2 has 9 query heads. Why does its cache grow with 3 heads per layer, not 9?
#    <details><summary>Answer</summary>
#
#    The cache keeps keys and values, not queries. With grouped-query attention, 3 query heads share
#    each key/value head. So a layer stores 3 heads of keys and 3 of values per token, a third of
#    what 9 would take.
#    </details>
#
# ## Further reading
#
# - The paper: §3.4 (one shared embedding matrix), §5.1 (the shared subword vocabulary), §6.1 (beam
#   search).
# - Kudo and Richardson (2018), *SentencePiece: A simple and language independent subword tokenizer
#   and detokenizer for Neural Text Processing*.
# - Radford et al. (2019), *Language Models are Unsupervised Multitask Learners* (GPT-2's byte-level
#   BPE).
# - Tiedemann and Thottingal (2020), *OPUS-MT — Building open translation services for the World*;
#   Allal et al. (2025), *SmolLM2: When Smol Goes Big*.
# - Pope et al. (2022), *Efficiently Scaling Transformer Inference*: why decoding is bound by memory.
# - Dettmers et al. (2022), *LLM.int8()*; Wolf et al. (2020), *Transformers: State-of-the-Art Natural
#   Language Processing* (the library this chapter compares with).

# %% [markdown]
# **After the course:** you have built, trained and run the Transformer and its modern descendants
# from their parts. To go further, read the papers of each chapter's *Further reading*; Karpathy's
# nanoGPT and Raschka's *Build a Large Language Model (From Scratch)* train larger language models;
# the Hugging Face course shows the `transformers` library these chapters compared with; the exercises
# (`exercises/`) are the best way to check that the ideas are yours.
