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
# # Chapter 12 — From number words to real sentences
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/12_real_translation.ipynb)
#
# Part II begins here. Part I trained the paper's model on number words (chapter 08) and tested its choices on small
# tasks (chapter 11). Number words are an easy language: 31 English words, 32 German pieces and one
# way to say each number. Real text is not: any word may turn up, German inflects its articles and
# endings, and it moves verbs to the end of a clause. This chapter takes chapter 06's model,
# unchanged and trained with chapter 08's loop, to such sentences, with the paper's tools for real
# corpora.
#
# **Learning goals**
#
# - cut text into subword tokens with byte-pair encoding, following its merges by hand;
# - share one vocabulary and one embedding matrix between both languages, and measure what the
#   vocabulary's size trades;
# - batch by a token budget, and measure the padding it saves;
# - train, average the last checkpoints, and score the written text with sacrebleu;
# - read the trained model's cross-attention, and sort its errors into kinds;
# - going further: see what DistributedDataParallel computes, and weight its ranks by tokens.
#
# **In the paper:**
#
# - §3.4: one weight matrix for both embeddings and the output layer;
# - §5.1: byte-pair encoding with a shared vocabulary of about 37,000 tokens; batches of about
#   25,000 source and 25,000 target tokens, grouped by length;
# - §5.2: eight GPUs;
# - §6.1: the average of the last 5 checkpoints; BLEU.

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
import matplotlib.pyplot as plt
import torch

from transformer_course import pick_device
from transformer_course.datasets.sentences import sentence_splits, sentence_tokens
from transformer_course.decoding import greedy_decode
from transformer_course.evaluation import evaluate, translate
from transformer_course.sentence_training import pick_sentence_profile, shared_tokenizer
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("12")  # the short stop at an unwritten exercise; printing and plotting style

device = pick_device()  # CUDA, then Apple's MPS, then the CPU
profile = pick_sentence_profile(device)  # a bigger model and token budget on CUDA (a folded cell of section 5 prints it)

# %% [markdown]
# ## Where we are
#
# The model, drawn below, is unchanged. What changes is at its two ends:
#
# - the tokens: subwords learned from the text, one vocabulary for both languages, one matrix for
#   both embeddings and the output layer;
# - the training: batches of a token budget, several processes, averaged checkpoints.
#
# In the paper's notation, $V_\text{src} = V_\text{tgt}$ (the [notation page](../book/notation.md)).
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right, with the same
# boxes as in chapter 06. This chapter's boxes are highlighted, at both ends of the model. At the
# bottom, the source token ids and the shifted target ids enter, and each goes through a token
# embedding multiplied by √D. At the top of the decoder, the linear layer tied to the embedding and
# the softmax give the logits. Above the softmax, the loss against the labels is highlighted too,
# for the training; the "next token" box beside it stays plain.
#
# </details>

# %%
architecture_map(["tokens", "embeddings", "training"])

# %% [markdown]
# ## 1. Sentences with real grammar, made on the spot
#
# WMT's corpora need downloads and GPU hours, so the course makes its own data. `profile`,
# set in the folded set-up cell, sizes the data and the model: small on a CPU, bigger on CUDA.
# `datasets/sentences.py` writes English sentences and their German translations from a lexicon of
# about 100 nouns, 56 adjectives and 74 verbs and the rules of German grammar, seeded, in any
# amount. The German holds what learners find hard:
#
# - three genders and their cases: *der Hund*, *den Hund*, *dem Hund*;
# - adjective endings that depend on the article: *der alte Mann*, *ein alter Mann*;
# - the verb in second place: *Manchmal gibt die Schwester …*;
# - the verb at the end of a subordinate clause: *…, dass sie die Gläser sieht*;
# - the perfect tense, which puts the participle at the end: *hat … gefunden*;
# - *nicht*, which follows the objects (*hat den Hund nicht gesehen*) and turns "must not" into
#   *darf nicht*.
#
# English marks almost none of it: the model must infer case and gender, and reorder.

# %%
texts = sentence_splits(n_train=profile.n_train)  # {"train", "valid", "test"}: (English, German) pairs
print({split: len(pairs) for split, pairs in texts.items()})
for en, de in [texts["test"][i] for i in (1, 9, 11, 16, 8, 36)]:
    print(f"{en}\n    → {de}")

# %% [markdown]
# A sentence goes to training, validation or test by a hash of its German text, so no German test
# sentence is a training target, and the test set stays the same when training grows.

# %%
train_german = {de for _, de in texts["train"]}
assert not any(de in train_german for _, de in texts["test"])
words = [len(en.split()) for en, _ in texts["train"]]
print(f"English words per training sentence: {min(words)} to {max(words)}, mean {sum(words) / len(words):.1f}")

# %% [markdown]
# ## 2. Subword tokens
#
# Chapter 08's two vocabularies were written by hand. For real text we have to learn one, and the
# choice of unit matters:
#
# - **words**: a vocabulary built from the training text misses every word it did not see (in
#   German every new compound: *Hundehütte*), and each inflected form (*alt, alte, alten*) is a
#   separate token;
# - **characters**: nothing is ever unknown, but sentences get several times longer;
# - **subwords**: frequent words stay whole, rare ones are cut into a few frequent pieces.
#
# Here is the word vocabulary of our training text, on a sentence with two unseen words:

# %%
from transformer_course.vocab import SPECIAL_TOKENS, Vocab

word_vocab = Vocab.build(sentence_tokens(text) for pair in texts["train"] for text in pair)
unseen = "The astronaut gives the dog a Hundehütte."
n_special = len(SPECIAL_TOKENS)  # <pad>, <bos>, <eos>, <unk>
print(f"{len(word_vocab):,} ids: {n_special} special tokens and {len(word_vocab) - n_special:,} words;",
      sentence_tokens(unseen), "→")
print([word_vocab.id_to_token[i] for i in word_vocab.encode(sentence_tokens(unseen))])

# %% [markdown]
# ### Byte-pair encoding
#
# Byte-pair encoding (BPE; Sennrich et al., 2016) starts with one token per character. It counts
# how often each pair of neighbouring tokens occurs, merges the most frequent pair into a new token,
# and repeats until the vocabulary has the size we asked for. The merges are the tokenizer: a new
# text is cut into characters, and the merges are applied in the order they were learned.
#
# Follow it by hand on four words of Sennrich et al.'s own example, with their counts: *low* 5
# times, *lower* twice, *newest* 6 times, *widest* 3 times. A "▁" marks the start of each word.
# `bpe_merges(counts, n)` (exercise ex12_3) learns the first n merges; the table shows each word
# after each merge.

# %% tags=["hide-input"]
import re

from transformer_course.subwords import bpe_merges  # exercise ex12_3

counts = {"▁low": 5, "▁lower": 2, "▁newest": 6, "▁widest": 3}  # Sennrich et al. (2016), section 3.2
merges = bpe_merges(counts, 8)
symbols = {word: " ".join(word) for word in counts}  # each word as its symbols, space-separated
width = {word: len(spaced) + 3 for word, spaced in symbols.items()}  # a column per word
print((f"{'merge':14}" + "".join(f"{word} ×{n}".ljust(width[word]) for word, n in counts.items())).rstrip())
for k, (left, right) in enumerate(merges, start=1):
    pair = rf"(?<!\S){re.escape(left)} {re.escape(right)}(?!\S)"  # the two symbols, side by side
    symbols = {word: re.sub(pair, left + right, spaced) for word, spaced in symbols.items()}
    print((f"{k}. {left} + {right}".ljust(14) + "".join(symbols[word].ljust(width[word]) for word in counts)).rstrip())

# %% [markdown]
# *e s* occurs 6 + 3 = 9 times (*newest*, *widest*), and so does *s t*. A tie
# goes by the pairs' left symbols, then by their right ones. A single character beats a merged
# symbol, and an older merge beats a newer one. Two characters go by their code: *e* before *s*,
# every letter before "▁". So *e s* comes first, then *es t* (9 times). Next, *▁ l*, *l o* and *o w*
# occur 7 times each. *l o* wins. Then *▁ lo* beats *lo w*: "▁" is a single character, *lo* a merged
# symbol. Merge 5 makes *▁low* one token; merges 6–8 build *▁new* by the same rules.
#
# For real text, `subwords.py` uses Hugging Face's `tokenizers` library. The "▁" marks let decoding
# give the text back exactly.
#
# The paper learns **one vocabulary from the source and the target text together** (§5.1). We do the
# same: `shared_tokenizer` trains on the English and the German training sentences. It asks for
# 1,000 tokens on the CPU and 4,000 on a GPU.

# %%
tokenizer = shared_tokenizer(texts["train"], vocab_size=profile.vocab_size)
print(tokenizer, "— the first merges:", tokenizer.merges()[:10])
for text in (texts["test"][16][0], texts["test"][16][1], unseen):
    pieces = tokenizer.tokens(text)
    assert tokenizer.decode(tokenizer.encode(text)) == text  # the text comes back
    print(f"{len(pieces):2d} tokens: {' '.join(pieces)}")

# %% [markdown]
# The unseen words come out as known pieces (*▁Hund*, then short ones), never as `<unk>`. With only the CPU run's 1,000 tokens, a rarer known word splits too: *gives* becomes *▁g i ves*.
#
# ### The merges, learned from scratch
#
# `bpe_merges` is the whole loop of the hand-worked example, ties included. Here
# it runs on our training sentences' words, next to the tokenizer above.

# %%
from transformer_course.subwords import bpe_merges, pretokenized_words

words = pretokenized_words(text for pair in texts["train"] for text in pair)  # word → how often it occurs
ours = bpe_merges(words, 50)
library = [tuple(merge.split(" ")) for merge in tokenizer.merges()[:50]]
print(f"{len(words):,} distinct words; the first merges, bpe_merges | tokenizers:")
for k in range(8):
    print(f"{k:3d}  {' + '.join(ours[k]):>11} | {' + '.join(library[k])}")
assert ours == library, "bpe_merges and the library disagree"
print(f"all {len(ours)} merges agree")

# %% [markdown]
# Which tokens does each language use? Most are used by one language only. German capitalises its
# nouns, so English `▁baby` and German `▁Baby` are different tokens. The shared ones are
# punctuation, pieces both languages build words from (*en*, *er*), and a few words spelled alike
# (*in*, *hat*).

# %%
from collections import Counter

used = {"en": Counter(), "de": Counter()}  # how often each language uses each token
for en, de in texts["train"][:20_000]:
    used["en"].update(tokenizer.tokens(en))
    used["de"].update(tokenizer.tokens(de))
both = set(used["en"]) & set(used["de"])
print(f"English only: {len(set(used['en']) - both)}, German only: {len(set(used['de']) - both)}, both: {len(both)}")
print("shared, most frequent:", sorted(both, key=lambda t: -(used["en"][t] + used["de"][t]))[:16])

# %% [markdown]
# On the training pairs above, the two languages together use fewer tokens than the vocabulary
# holds. An unused token either never occurs in these pairs, or is an intermediate piece that a
# later merge always absorbs.
#
# ### What the vocabulary size trades
#
# A bigger vocabulary gives shorter sequences: less work per sentence, and shorter distances to
# attend over. But it also gives a bigger embedding matrix and, past some
# size, rarer tokens, each seen fewer times in training. We train BPE at several sizes on part of
# the training text, measure lengths on the validation sentences, and count rare tokens on 5,000
# training pairs.

# %%
from transformer_course.subwords import subword_task, tokenizer_summary

sample = texts["train"][:20_000]
valid_texts = [text for pair in texts["valid"] for text in pair]
rows = []
for size in (150, 300, 600, 1000, 2000, 4000):
    bpe = shared_tokenizer(sample, vocab_size=size)
    summary = tokenizer_summary(bpe, valid_texts)
    counts = Counter(i for pair in sample[:5000] for text in pair for i in bpe.encode(text))
    rare = sum(1 for i in range(4, len(bpe)) if counts[i] < 10) / (len(bpe) - 4)
    rows.append({**summary, "vocab_size": len(bpe), "rare": rare})
print(f"size  tokens/sentence   tokens/word   embedding parameters (D={profile.d_model})   tokens seen < 10 times")
for row in rows:
    print(f"{row['vocab_size']:5d}  {row['tokens_per_text']:10.1f}  {row['tokens_per_word']:14.2f}  "
          f"{row['vocab_size'] * profile.d_model:20,d}  {row['rare']:24.0%}")

# %% [markdown]
# <details><summary>The figure in words</summary>
#
# Both panels have the vocabulary size on a logarithmic horizontal axis, one point per size asked
# for, each labelled with the size BPE reached. On the left, a blue line gives the tokens per
# validation sentence, and it falls as the vocabulary grows. A dashed orange line, read on a second
# axis at the right, gives the embedding parameters, the size times D: they grow in proportion to
# the size. On the right, a red line gives the share of tokens seen fewer than 10 times in the first
# 5,000 training pairs, on an axis
# from 0 to 100%. It is lowest at the middle sizes and climbs steeply at the largest.
#
# </details>

# %% tags=["hide-input"]
fig, (ax_len, ax_rare) = plt.subplots(1, 2, figsize=(11, 3.6))
sizes = [row["vocab_size"] for row in rows]
ax_len.plot(sizes, [row["tokens_per_text"] for row in rows], "o-", label="tokens per sentence")
ax_len.set(xscale="log", xlabel="vocabulary size (log scale)", ylabel="tokens per validation sentence",
           title="A bigger vocabulary makes sentences shorter …")
ax_params = ax_len.twinx()
ax_params.plot(sizes, [s * profile.d_model / 1e3 for s in sizes], "s--", color="tab:orange")
ax_params.set_ylabel("embedding parameters (thousands)", color="tab:orange")
ax_rare.plot(sizes, [100 * row["rare"] for row in rows], "o-", color="tab:red")
ax_rare.set(xscale="log", ylim=(0, 100), xlabel="vocabulary size (log scale)",
            ylabel="% of tokens seen < 10 times", title="… and beyond the middle sizes more of its tokens are rare")
for ax in (ax_len, ax_rare):
    ax.set_xticks(sizes, [str(size) for size in sizes], minor=False)
    ax.minorticks_off()  # the sizes themselves as ticks, no crowded 3×10², 4×10² …
fig.tight_layout()

# %% [markdown]
# Our sentences use few distinct words (the word vocabulary above), so BPE runs out of pairs to
# merge: asking for 4,000 tokens gives 2,698. Small vocabularies have rare tokens too: single
# letters that merges swallow (once *▁W* exists, a lone *W* seldom remains). We take 1,000 on the
# CPU: sentences a fifth shorter than at 600, for a few more rare tokens, and 128,000 embedding
# parameters. The paper's 37,000 tokens serve far more varied text.
#
# ## 3. One embedding matrix for both languages (§3.4)
#
# With one vocabulary, token *i* means the same string on both sides. The paper goes further: the
# source embedding, the target embedding and the output layer are **one matrix**. Chapter 01 tied
# the output layer to the target embedding; with `share_embeddings=True` the source embedding is
# that matrix too, and a token both languages use has one vector, trained by both sides.

# %%
from transformer_course.training import build_model

task = subword_task(texts, tokenizer, name="sentences-en-de")  # the pairs in subword tokens
shared = build_model(task, profile, share_embeddings=True)
separate = build_model(task, profile)  # chapter 08's model: the output layer tied to the target embedding only
assert shared.src_embed.weight is shared.tgt_embed.weight is shared.output.weight
print(f"shared embeddings: {shared.num_parameters():,} parameters; separate source embedding: "
      f"{separate.num_parameters():,} (+{separate.num_parameters() - shared.num_parameters():,} = V × D)")

# %% [markdown]
# ## 4. Batches of a token budget (§5.1)
#
# Chapter 08 sorted sentences into buckets of similar length, which keeps padding small. The paper
# goes further: each batch holds "approximately 25000 source tokens and 25000 target tokens".
# `token_batches` sorts the examples by length and fills each batch until one more example would
# push *count × longest* over the budget (`max_tokens`), for the source and for the target; that
# step is `pack`, exercise ex12_1. Then it shuffles the batches.
#
# `training_examples` leaves out pairs too long for any budget (none here).

# %%
from transformer_course.batching import batch_indices
from transformer_course.sentence_training import training_examples
from transformer_course.token_batches import padding_stats, token_batches

examples, left_out = training_examples(task, profile)
src_lengths, tgt_lengths = [len(s) for s, _ in examples], [len(t) for _, t in examples]
budget = token_batches(src_lengths, tgt_lengths, profile.max_tokens, seed=0)
size = round(len(examples) / len(budget))  # the same mean number of sentences per batch, for a fair comparison
lengths = [s + t for s, t in zip(src_lengths, tgt_lengths, strict=True)]
schemes = {
    f"{size} random sentences": batch_indices(lengths, size, seed=0, epoch=0, bucket=1),
    f"{size} sentences, bucketed (ch. 08)": batch_indices(lengths, size, seed=0, epoch=0, bucket=50),
    f"token budget {profile.max_tokens} (§5.1)": budget,
}
print(f"{len(examples):,} training pairs ({left_out} left out), {len(budget)} token batches per epoch")
for name, batches in schemes.items():
    stats = padding_stats(batches, src_lengths, tgt_lengths)
    print(f"{name:<38} {stats['waste']:6.1%} of the batch slots are padding")

# %% [markdown]
# <details><summary>The figure in words</summary>
#
# Three histograms share one horizontal axis, the target slots of a batch: its number of sentences
# times its longest target. The number of batches is on a logarithmic scale. Blue is for random
# batches, orange for bucketed batches of the same mean size, green for the token budget. A dotted
# vertical line marks the budget. The green bars stand in one tall, narrow peak just left of the
# line. The bin that ends at the line holds the batches filled to exactly the budget, and no green
# bar lies right of the line. The orange bars spread wide on both sides of the line, and the blue ones
# lie mostly well to its right.
#
# </details>

# %% tags=["hide-input"]
fig, ax = plt.subplots(figsize=(9, 3.4))
for name, batches in schemes.items():
    slots = [len(b) * max(tgt_lengths[i] for i in b) for b in batches]  # padded target slots per batch
    # bins of 1/20 of the budget whose right edges include the budget: a full batch lands left of the line
    edges = [profile.max_tokens * (k / 20) + 0.5 for k in range(61)]
    ax.hist(slots, bins=edges, alpha=0.6, label=name)
ax.axvline(profile.max_tokens, color="black", ls=":", label="the token budget")
ax.set(xlabel="target slots per batch (sentences × longest)", ylabel="batches (log scale)", yscale="log",
       title="A token budget keeps every batch the same size; fixed sentence counts do not")
ax.legend()
fig.tight_layout()

# %% [markdown]
# Random batches waste over 40% of the work on padding, bucketing much less. The token
# budget wastes almost nothing. And unlike the other two, it never makes a batch bigger than the
# budget, so the linear layers' activations never outgrow it. Attention's scores grow with the
# square of the length, though: leave headroom for the longest sentences.
#
# ## 5. Training on sentences
#
# The model, loss, warm-up schedule and loop are chapter 08's, on the CPU at half the paper's learning rate, as there. The CPU run trains without dropout: it
# makes too few passes over the training sentences to over-fit (printed below). Near the end, a callback (chapter
# 08's `Evaluation`) keeps a copy of the weights every 50 steps, for checkpoint averaging (section
# 7). Every `profile.eval_every` steps it also translates 300 validation sentences.

# %%
from transformer_course.step import MixedPrecision
from transformer_course.training import prepare_training
from transformer_course_tools.notebook.pages import run_settings

print(run_settings(profile, device, MixedPrecision.for_device(device)))
# chapter 08's prepare_training: seed → model → optimizer → scheduler → batches; a SentenceProfile
# makes the model with shared embeddings and the batches of its token budget
run = prepare_training(task, profile, device)
model = run.model
keep_every, n_kept = 50, 5
kept_at = [profile.steps - keep_every * k for k in reversed(range(n_kept))]  # the last 5 "checkpoints"
print(f"{model.num_parameters():,} parameters; weights kept at steps {kept_at}; "
      f"{profile.steps / len(budget):.1f} passes over the training pairs")

# %% tags=["hide-cell"]
from transformer_course.sentence_training import SENTENCE_GPU_PROFILE

print(run_settings(SENTENCE_GPU_PROFILE, "cuda", torch.bfloat16, where="On a recent GPU"))
# the bounds the folded checks assert (the box "How this book tests a claim" on the book's first page)
on_cpu = device.type == "cpu"
CLAIMS = {"exact_match": (65.0, 95.0 if on_cpu else 100.0), "bleu": (85.0, 98.0 if on_cpu else 100.0),
          "averaging_gain": 1.0 if on_cpu else 0.0, "second_half_gain": 10.0 if on_cpu else 0.0}

# %% tags=["nbval-ignore-output"]
from transformer_course.training import Evaluation, History, fit

history, snapshots = History(), {}


def keep_and_validate(m: torch.nn.Module) -> dict:
    """Every 50 steps: keep the weights of the steps in ``kept_at``; score the validation sentences
    every ``profile.eval_every`` steps (an empty dict records nothing)."""
    step = history.steps[-1]
    if step in kept_at:
        snapshots[step] = {name: value.detach().clone() for name, value in m.state_dict().items()}
    return evaluate(m, task.valid[:300], task, bleu_on="text", decode=greedy_decode) if step % profile.eval_every == 0 else {}


history = fit(model, run.batches, run.optimizer, run.scheduler, profile.steps, options=run.options,
              evaluation=Evaluation(keep_and_validate, every=keep_every), history=history)
print(f"{history.seconds / 60:.1f} minutes of training, {len(history.steps) / history.seconds:.1f} steps/s")

# %% [markdown]
# <details><summary>The figure in words</summary>
#
# The left panel draws the training loss against the step, on a logarithmic
# scale. A thin pale line gives the loss of each batch, and a darker line its running mean. The
# right panel gives, at regular steps, the share of 300 validation sentences translated exactly, on
# an axis from 0 to 100%. Its green points are joined by a line.
#
# </details>

# %% tags=["nbval-ignore-output"]
from transformer_course_tools.notebook.plots import plot_history

fig = plot_history(history, "sentences en→de")
print("validation during training:", [(e["step"], e["exact_match"], e["bleu"]) for e in history.evals])

# %% [markdown]
# Exact match still rose late in the run (the folded check below). A longer run from a terminal
# shows what more steps buy (commands under the summary).

# %% tags=["hide-cell"]
from transformer_course_tools.notebook.claims import expect_at_least, expect_at_most, expect_between

exact = {e["step"]: e["exact_match"] for e in history.evals}
halfway = max(step for step in exact if step <= profile.steps // 2)
expect_at_least(f"validation exact match gained from step {halfway:,} to step {profile.steps:,}", exact[profile.steps] - exact[halfway],
                CLAIMS["second_half_gain"], "points")

# %% [markdown]
# ## 6. Scoring the written text with sacrebleu
#
# For number words chapter 08 counted BLEU over German pieces, since a German number is one long
# word. For sentences, BLEU is computed on the **written text**, which sacrebleu cuts into words
# with its own standard tokenizer ("13a"). The score then does not depend on how *our* model cut its
# words. Our score is not comparable with the paper's 27.3: their test set is real news, ours
# is generated.
#
# The model answers by greedy decoding, as in chapter 08, to keep the CPU run short: chapter 09's
# beam search would decode four hypotheses per sentence.

# %% tags=["nbval-ignore-output"]
import sacrebleu

scores = evaluate(model, task.test, task, bleu_on="text", decode=greedy_decode)
print("test, 1,000 sentences:", scores)
hypotheses = translate(model, [s for s, _ in task.test], task, decode=greedy_decode)  # evaluate's limit: source length + 50 (§6.1)
hyp_text = [task.detokenize(h) for h in hypotheses]
ref_text = [task.detokenize(t) for _, t in task.test]
assert round(sacrebleu.corpus_bleu(hyp_text, [ref_text]).score, 2) == scores["bleu"]  # by hand = the package
pieces = [" ".join(h) for h in hypotheses], [[" ".join(t) for _, t in task.test]]
pieces_bleu = sacrebleu.corpus_bleu(*pieces, force=True)  # force: yes, these are tokens on purpose
print(f"BLEU over subword pieces instead: {pieces_bleu.score:.2f} (not comparable with other systems)")

# %% tags=["hide-cell"]
expect_between("test exact match", scores["exact_match"], *CLAIMS["exact_match"], "%")
expect_between("test BLEU on the written text", scores["bleu"], *CLAIMS["bleu"])

# %% [markdown]
# ## 7. Checkpoint averaging (§6.1)
#
# The paper's base models are "a single model obtained by averaging the last 5 checkpoints". Late
# in a long run the weights wander around the bottom of a valley; their mean can lie nearer the
# middle. Our short CPU run is not there yet: section 5's scores still climb. A likely reason for a
# gain even so, not measured here: the learning rate is still about half its peak, so the kept
# weights jump from one to the next, and their mean cancels part of the jumps.
#
# `average_state_dicts` takes the element-wise mean (exercise ex12_2). We average the last 2, 3 and 5
# of our kept weights and score each on the test set. The paper fixed its count, 5, in advance, so
# setting 5 against the final weights is fair. Picking the best row would not be: a real run
# chooses the count on the validation set (check-yourself 4).

# %% tags=["nbval-ignore-output"]
from transformer_course.averaging import average_state_dicts

final = snapshots[kept_at[-1]]
averaged_scores = {1: scores}
for n in (2, 3, 5):
    model.load_state_dict(average_state_dicts([snapshots[step] for step in kept_at[-n:]]))
    averaged_scores[n] = evaluate(model, task.test, task, bleu_on="text", decode=greedy_decode)
model.load_state_dict(final)
print("checkpoints averaged   exact match   BLEU    chrF")
for n, s in averaged_scores.items():
    print(f"{n:>20}   {s['exact_match']:11.2f}   {s['bleu']:5.2f}   {s['chrf']:5.2f}")

# %% tags=["hide-cell"]
gain = averaged_scores[5]["exact_match"] - averaged_scores[1]["exact_match"]
expect_at_least("exact match gained by averaging the last 5 kept weights", gain, CLAIMS["averaging_gain"], "points")

# %% [markdown]
# On the CPU, the mean of the last 5 kept weights translates more test sentences exactly than the
# final weights. The table gives your run's gain; the folded check asks for one point, which
# held in every run we measured. What averaging gains on the paper's checkpoints, 10 minutes apart
# after 12 hours, this run cannot tell.

# %% [markdown]
# ## 8. What the decoder reads: cross-attention on a test sentence
#
# The scores say how well the model translates; the attention shows how. Here is the last decoder
# layer on the first test sentence with a *dass* clause that the model translates exactly. In English the verb of the clause comes right after its subject; in
# German it comes last. The map averages the layer's heads: rows are the German tokens being
# written, columns the English tokens they read.
#
# <details><summary>The figure in words</summary>
#
# A heatmap has one row per German token the model writes and one column per
# English source token, both cut into subwords. A darker blue is a larger weight, the mean of the
# heads, on a colour bar from 0 to 1. A red box frames the rows of the clause's last word, the verb.
# The title names that verb and the English word it reads most. The line under the map says, for
# this run, which words these are and how far back the decoder jumps.
#
# </details>

# %% tags=["nbval-ignore-output", "hide-input"]
from IPython.display import Markdown, display

from transformer_course.evaluation import cross_attention_maps

example = next(i for i, (_, de) in enumerate(texts["test"]) if ", dass " in de and hyp_text[i] == ref_text[i])
print(texts["test"][example][0])
src = torch.tensor([task.src_vocab.encode(task.test[example][0])], device=device)  # (1, S)
hyp = greedy_decode(model, src)  # (1, T), at most the source length + 50 (§6.1)
maps = cross_attention_maps(model, src, hyp)  # (layers, 1, H, T, S)
source_tokens = task.test[example][0]
target_tokens = task.tgt_vocab.decode(hyp[0].tolist()) + ["<eos>"]
print(tokenizer.decode(hyp[0].tolist()))
weights = maps[-1, 0].mean(dim=0)[: len(target_tokens), : len(source_tokens)].cpu()  # (T, S): heads averaged


def word_of(tokens: list[str], i: int) -> range:
    """The positions of the word that token ``i`` belongs to (a word starts with "▁")."""
    start = next(j for j in range(i, -1, -1) if tokens[j].startswith("▁"))
    end = next((j for j in range(i + 1, len(tokens)) if tokens[j].startswith("▁") or not tokens[j].isalpha()),
               len(tokens))
    return range(start, end)


verb = word_of(target_tokens, target_tokens.index(".") - 1)  # the last word before the period: the verb
before = word_of(target_tokens, verb.start - 1)  # the German word before it
read = {name: word_of(source_tokens, int(weights[rows].sum(dim=0).argmax()))  # the English word read most
        for name, rows in (("verb", verb), ("before", before))}
text = lambda tokens, span: "".join(tokens[i] for i in span).replace("▁", "")  # noqa: E731

fig, ax = plt.subplots(figsize=(9, 7.5))
image = ax.imshow(weights, cmap="Blues", vmin=0, vmax=1)
ax.set_xticks(range(len(source_tokens)), source_tokens, rotation=60, ha="right", fontsize=10)
ax.set_yticks(range(len(target_tokens)), target_tokens, fontsize=10)
ax.add_patch(plt.Rectangle((-0.5, verb.start - 0.5), len(source_tokens), len(verb), fill=False, ec="tab:red", lw=2))
ax.set(xlabel="English source token (read)", ylabel="German token being written")
ax.set_title(f"Writing '{text(target_tokens, verb)}', the clause's last word, the decoder reads "
             f"'{text(source_tokens, read['verb'])}'", fontsize=11)
fig.colorbar(image, ax=ax, shrink=0.7, label="attention weight (mean of the heads)")
fig.tight_layout()
plt.show()
jump = read["before"].start - read["verb"].start
display(Markdown(
    f"**This run:** to write *{text(target_tokens, verb)}*, the decoder reads mostly "
    f"*{text(source_tokens, read['verb'])}*. For the German word before it, *{text(target_tokens, before)}*, "
    f"it read *{text(source_tokens, read['before'])}*: "
    + (f"the verb sends it {jump} source tokens (subword pieces, not words) back to the left." if jump > 0
       else "no jump back this time.")
))

# %% [markdown]
# Where German follows the English word for word, the weights walk down the diagonal: each German token reads the English token it translates. Then comes the verb in the
# box, the last word of the *dass* clause. To write it, the decoder can jump back from *school* to
# *bake*, past the words German puts before the verb; the line under the map counts the jump. The sentence was picked because the model gets it right: a success, not a typical case.
# The verb-final order was learnt from examples: no rule of German grammar was written into the
# model.

# %% [markdown]
# ## 9. What the translator still gets wrong
#
# These are section 6's translations, by the final weights. Like chapter 10's sorter for numbers,
# `kind_of_sentence_error`
# compares a wrong translation with its reference word by word (punctuation counts as a word) and
# names the first kind that fits, in this order: the right words in another **order**; words **left
# out**, or words **added**; as many words, every one that differs keeping its first two letters
# (an **ending**: *dem* for *den*, *alte* for *alter*); else a **wrong word**.

# %% tags=["nbval-ignore-output"]
import re


def kind_of_sentence_error(hypothesis: str, reference: str) -> str:
    """What a wrong translation got wrong, compared with the reference word by word."""
    hyp, ref = (re.findall(r"\w+|[^\w\s]", text) for text in (hypothesis, reference))  # words, punctuation apart
    if sorted(hyp) == sorted(ref):
        return "word order"
    if len(hyp) != len(ref):
        return "words left out" if len(hyp) < len(ref) else "words added"
    same_start = all(h[:2].lower() == r[:2].lower() for h, r in zip(hyp, ref, strict=True))
    return "an ending" if same_start else "a wrong word"


wrong = [i for i, (h, r) in enumerate(zip(hyp_text, ref_text, strict=True)) if h != r]
kinds = Counter(kind_of_sentence_error(hyp_text[i], ref_text[i]) for i in wrong)
print(f"{len(wrong)} of {len(ref_text)} test sentences are not exactly right:")
for kind, count in kinds.most_common():
    i = next(i for i in wrong if kind_of_sentence_error(hyp_text[i], ref_text[i]) == kind)  # its first example
    print(f"\n{kind}: {count}\n  {texts['test'][i][0]}\n    model:    {hyp_text[i]}\n    expected: {ref_text[i]}")

# %% [markdown]
# A wrong ending is a case, a gender or a plural the model missed. An error of order alone would be
# a verb in the wrong place; your run may list none. The sorting is rough: a sentence with several
# faults lands in the first box that fits. Any longer sentence counts as "words added", so a
# scrambled one that repeats a phrase and drops another lands there.

# %% [markdown]
# ## Going further
#
# The translator is trained, scored and read. Optional sections 10 (several processes) and 11
# (real corpora) change none of that.
#
# ## 10. Several processes: DistributedDataParallel
#
# The paper trained on 8 GPUs (§5.2). PyTorch's way is **DistributedDataParallel** (DDP):
# `torchrun --nproc-per-node N` starts N copies of the training program, the *ranks*. Each holds a
# whole replica of the model. Every rank computes the same list of token batches (same seed) and
# takes every N-th one: that is `shard`. After the backward pass the ranks combine their gradients
# (an *all-reduce*: a sum or mean over the ranks that every rank receives), so every replica makes
# the same update.

# %%
from transformer_course.token_batches import shard

ranks = 2
first_batches = [[i] for i in range(7)]  # stand-ins for one epoch's 7 batches
for rank in range(ranks):
    print(f"rank {rank} takes batches", [b[0] for b in shard(first_batches, rank, ranks)])

# %% [markdown]
# Rank 1 takes batch 0 again: `shard` repeats the first batches so that every rank takes as many
# steps. Otherwise the other ranks would wait for ever at an all-reduce that the rank with fewer
# batches never joins.
#
# > **Common mistake — keeping DDP's default mean with token batches.** DDP's default all-reduce
# > takes the *mean* of the ranks' gradients. Each rank's loss is already a mean over its own
# > tokens, so that is a mean of means: with token batches, a token on a rank with few tokens counts
# > more than a token on a busy rank. Below, two "ranks" in one process: a batch of short sentences
# > and one of long ones, each padded by chapter 08's `make_batch`.

# %% tags=["nbval-ignore-output"]
from transformer_course.batching import make_batch
from transformer_course.loss import label_smoothed_cross_entropy

model.eval()  # no dropout (the GPU profile has some; the CPU profile none): the gradients are comparable
by_length = sorted(examples, key=lambda pair: len(pair[1]))
short, long = by_length[:8], by_length[-40:]  # two ranks' batches: 8 short sentences, 40 long ones
parts = [make_batch(short, tokenizer.pad_id), make_batch(long, tokenizer.pad_id)]  # one Batch per rank
together = make_batch(short + long, tokenizer.pad_id)  # one process


def gradient(batch) -> torch.Tensor:
    model.zero_grad()
    logits = model(batch.src.to(device), batch.tgt_in.to(device))  # (B, T, V)
    label_smoothed_cross_entropy(logits, batch.tgt_out.to(device), profile.smoothing).backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()])


truth = gradient(together)
grads, counts = [gradient(b) for b in parts], [b.n_tokens for b in parts]
mean_of_means = (grads[0] + grads[1]) / 2  # the bug: DDP's default average
weighted = sum(g * n / sum(counts) for g, n in zip(grads, counts, strict=True))  # n_r / n, as distributed.py does
relative = lambda g: ((g - truth).norm() / truth.norm()).item()
model.zero_grad()
print(f"target tokens per rank: {counts}")
print(f"relative distance to the one-process gradient: mean of means {relative(mean_of_means):.2g}, "
      f"weighted by tokens {relative(weighted):.1g}")

# %% tags=["hide-cell"]
expect_at_least("mean of the ranks' gradients: relative distance to the one-process gradient", relative(mean_of_means), 0.05)
expect_at_most("weighted by token counts: relative distance to the one-process gradient", relative(weighted), 1e-4)

# %% [markdown]
# `distributed.py` weights each rank's gradient by its share of the step's tokens, $n_r / n$, before
# the ranks add them up: exactly what one process computes. The shares come from one small
# all-reduce of the token counts.
#
# From a terminal, the same command trains on one process or on several:
#
# ```bash
# python -m transformer_course train --task sentences-en-de --out sentences.pt             # one process
# torchrun --standalone --nproc-per-node 2 -m transformer_course train --task sentences-en-de --out sentences.pt
# torchrun --standalone --nproc-per-node 8 -m transformer_course train --task sentences-en-de --out sentences.pt  # 8 GPUs
# python -m transformer_course evaluate sentences.pt          # BLEU, chrF, exact match on the test split
# python -m transformer_course translate sentences.pt "The old man gives the child a ball."
# ```


# %% [markdown]
# ## 11. Real corpora
#
# Our sentences are generated. With a network, the same command trains on a real corpus, downloaded
# once from the Hugging Face Hub with the optional `datasets` package (`pip install
# "transformer-course[datasets]"`):
#
# - `--dataset multi30k`: 29,000 image captions, the Annotated Transformer's corpus;
# - `--dataset iwslt2017-en-de`: TED talks;
# - `--dataset wmt14-en-de`: the paper's corpus (add `--max-pairs`).
#
# Or use your own corpus: `--data-dir DIR` reads `train.en` / `train.de`, `valid.*` and `test.*`,
# one sentence per line. The folded cell writes such a folder, breaks it to show the loader's error,
# then mends it and loads it.

# %% tags=["hide-cell"]
import tempfile
from pathlib import Path

from transformer_course.datasets.corpora import Corpus, CorpusError, describe, load_text_corpus, write_text_corpus

with tempfile.TemporaryDirectory() as scratch:  # deleted at the end of the block
    folder = Path(scratch) / "my_corpus"
    mine = Corpus("mine", texts["train"][:500], texts["valid"][:50], texts["test"][:50])
    write_text_corpus(mine, folder)
    (folder / "test.de").write_text("Nur eine Zeile.\n", encoding="utf-8")  # now test.en and test.de disagree
    try:
        load_text_corpus(folder)
    except CorpusError as error:
        print("CorpusError:", error)
    write_text_corpus(mine, folder)  # whole again
    print(describe(load_text_corpus(folder)))

# %% [markdown]
# ## Summary
#
# - Chapter 06's model, unchanged, learns much of German's word order and endings in a short CPU
#   run: on section 8's sentence its attention can jump back to the verb (the line under the map).
#   Sorting its errors shows what it has not learnt yet.
# - Byte-pair encoding learns subword tokens from the text: frequent words stay whole, unseen words
#   become pieces. The vocabulary size trades sequence length against embedding size and rare
#   tokens. One vocabulary for both languages lets both embeddings and the output layer be one
#   matrix (§3.4, §5.1).
# - Batches of a token budget (§5.1) waste almost nothing on padding.
# - BLEU is computed on the written text with sacrebleu's own tokenizer, so it does not depend on
#   our tokens. Averaging the last checkpoints (§6.1) is free to try.
# - DistributedDataParallel runs the same loop on several processes. With token batches each rank's
#   gradient is weighted by its share of the tokens, and the result equals one process.
#
# **Exercises:** [exercises/ex12_real_translation.ipynb](../exercises/ex12_real_translation.ipynb)
# asks you to write `pack` (ex12_1), `average_state_dicts` (ex12_2) and `bpe_merges` (ex12_3). Stuck
# on one? `python -m transformer_course restore ex12_1` puts its worked answer in your student
# edition. From the command line:
#
# ```bash
# python -m transformer_course check ex12_1 ex12_2 ex12_3
# python -m transformer_course train --task sentences-en-de --steps 900 --out run-900.pt
# python -m transformer_course train --task sentences-en-de --resume run-900.pt --steps 950 --out run-950.pt
# python -m transformer_course train --task sentences-en-de --resume run-950.pt --steps 1000 --out run-1000.pt
# python -m transformer_course average averaged.pt run-900.pt run-950.pt run-1000.pt   # §6.1 on files
# python -m transformer_course train --task sentences-en-de --steps 5000 --out sentences.pt  # more steps
# python -m transformer_course evaluate sentences.pt --split valid  # says when more steps stop helping
# ```


# %% [markdown]
# ## Check yourself
#
# 1. Why does a subword vocabulary never need `<unk>` for an English or German word, and what does
#    a rare word cost instead?
#    <details><summary>Answer</summary>
#
#    BPE starts from single characters, so any word made of known characters can be written as
#    pieces. A rare word costs length: several tokens, whose meaning the model must assemble.
#    </details>
# 2. Why may the source embedding, the target embedding and the output layer share one matrix
#    here, when chapter 08 could share only the target embedding and the output?
#    <details><summary>Answer</summary>
#
#    Sharing needs one vocabulary. Chapter 08 had two: English words and German pieces. Here one
#    BPE vocabulary serves both languages, so an id means the same piece in the encoder, the
#    decoder and the output layer (§3.4).
#    </details>
# 3. Why does a batch of a fixed number of sentences waste work, and what does a token budget fix?
#    <details><summary>Answer</summary>
#
#    Every sentence is padded to the longest in its batch, and the number of real tokens changes
#    from batch to batch. Filling a token budget from sentences sorted by length keeps padding small
#    and the tokens per step almost constant (§5.1).
#    </details>
# 4. Why choose how many checkpoints to average on the validation set?
#    <details><summary>Answer</summary>
#
#    A count picked for its test score is tuned to the test set, so that score overstates how the
#    model does on new sentences.
#    </details>
# 5. With token batches, why is each rank's gradient weighted by its share of the tokens?
#    <details><summary>Answer</summary>
#
#    DDP's plain mean of per-token means is not the per-token mean over all tokens when the ranks
#    hold different numbers of tokens. Weighted, the ranks add up to one process's gradient.
#    </details>
# 6. What does section 8's map show, and what does it not?
#    <details><summary>Answer</summary>
#
#    That the model reorders this sentence by attention, with no rule of German written in. Not
#    how it treats other sentences: the map is one sentence, chosen because it came out right.
#    </details>
#
# ## Further reading
#
# - The paper: §3.4, §5.1, §5.2, §6.1.
# - Sennrich, Haddow and Birch (2016), *Neural Machine Translation of Rare Words with Subword Units*:
#   BPE.
# - Press and Wolf (2017), *Using the Output Embedding to Improve Language Models*: tying the
#   embeddings and the output layer.
# - Li et al. (2020), *PyTorch Distributed: Experiences on Accelerating Data Parallel Training*: how
#   DDP overlaps its all-reduce with the backward pass.
# - Post (2018), *A Call for Clarity in Reporting BLEU Scores*: sacreBLEU.
# - Ott et al. (2018), *Scaling Neural Machine Translation*: large token batches.
# - Popel and Bojar (2018), *Training Tips for the Transformer Model*: batch size, checkpoint
#   averaging.

# %% [markdown]
# **Next:** [Chapter 13 — From the 2017 Transformer to a modern language
# model](13_modern_language_models.ipynb): Part III: the same blocks become a modern decoder-only
# language model.
