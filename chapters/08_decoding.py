# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 08 — Decoding: from a trained model to a translator
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/08_decoding.ipynb)
#
# Chapter 07 trained a Transformer to turn English number words into German ones. Training only
# ever asked it one question: *given the source and the correct target so far, how likely is each
# next token?* A translator has no correct target to lean on. It has to choose a token, feed its
# own choice back in, and choose again, until it decides to stop. How it chooses is called
# **decoding**, and this chapter is about the choices and what they cost.
#
# **Learning goals**
#
# - write the decoding loop: encode once, then extend the target one token at a time until `<eos>`,
#   for a whole batch at once;
# - see on a worked example why always taking the most probable token (greedy decoding) can miss
#   the most probable translation, and how beam search with the GNMT length penalty does better;
# - sample translations with a temperature, top-k and top-p, and see what that does to the
#   distribution;
# - make decoding fast with a key/value cache, prove that it changes nothing but the speed, and
#   measure the speed-up;
# - evaluate with corpus BLEU, chrF and exact match, read the cross-attention maps of a real
#   translation, and study the numbers the model gets wrong.
#
# **In the paper:** §3 (the model is *auto-regressive*: it consumes the symbols it generated
# before), §3.2.3 (the decoder's masked self-attention, which is what makes caching possible), §6.1
# (beam search with a beam size of 4 and length penalty α = 0.6, a maximum output length of input
# length + 50, stopping early when possible), and Table 2 (BLEU).

# %% tags=["colab"]
import sys

if "google.colab" in sys.modules:  # Colab only: your own editable copy of the course, made once per machine
    import os
    import subprocess

    course = os.path.expanduser("~/transformer-course")  # the complete course, out of the Files panel's way
    if not os.path.isdir(course):
        url = "https://github.com/transformer-course/transformer-course"
        subprocess.run(["git", "clone", "-q", "--depth=1", url, course], check=True)
    sys.path.insert(0, course)
    from transformer_course.tools.colab import use_course

    use_course(course, chapter=True)  # yours if this machine has it, else the complete course

# %%
import math
import time

import matplotlib.pyplot as plt
import sacrebleu
import torch
from torch import nn

from transformer_course import Transformer, TransformerConfig
from transformer_course.batching import pad_sequences
from transformer_course.cache import DecoderCache
from transformer_course.data import english_tokens, german_text, number_pair, numbers_task
from transformer_course.decoding import (
    beam_search,
    beam_step,
    cross_attention_maps,
    greedy_decode,
    sample,
    sample_next_token,
    sampling_distribution,
    score_sequences,
)
from transformer_course.masks import padding_mask
from transformer_course.tools.checks import run_check
from transformer_course.tools.notebook import setup_chapter
from transformer_course.tools.pretrained import load_pretrained

torch.manual_seed(0)
setup_chapter()  # the short stop at an unwritten exercise; printing and plotting style

checkpoint = load_pretrained()  # trained by chapter 07 and committed with the course
model, src_vocab, tgt_vocab = checkpoint.model.eval(), checkpoint.src_vocab, checkpoint.tgt_vocab
config = model.config
print(f"checkpoint after {checkpoint.step} training steps, {model.num_parameters():,} parameters")
print(f"D={config.d_model}, H={config.n_heads}, layers {config.n_encoder_layers}+{config.n_decoder_layers}, "
      f"vocabularies {len(src_vocab)} (English) and {len(tgt_vocab)} (German)")  # fmt: skip


MAX_OUT = 20  # longest translation we allow: no German number of this task needs more than 12 pieces


def encode_english(texts: list[str]) -> torch.Tensor:
    """English sentences → a padded batch of source ids (B, S)."""
    return pad_sequences([src_vocab.encode(english_tokens(t)) for t in texts], src_vocab.pad_id)


def pieces(ids: torch.Tensor) -> list[str]:
    """Target ids of one translation → German pieces, up to <eos>."""
    return tgt_vocab.decode(ids.tolist())


def german(ids: torch.Tensor) -> str:
    return german_text(pieces(ids))


# %% [markdown]
# ## 1. The decoding loop
#
# The decoder is trained with *teacher forcing*: it reads `<bos> y₁ … yₙ` and predicts
# `y₁ … yₙ <eos>` in one pass. At translation time we only have `<bos>`. The loop is:
#
# 1. encode the source once: the memory (B, S, D) does not change while we write;
# 2. start every target with `<bos>`;
# 3. run the decoder on the target so far and look at the logits of the **last** position: that is
#    the distribution of the next token;
# 4. choose a token, append it, and go back to 3, until the sentence chose `<eos>` (or a length
#    limit is reached).
#
# Here is one sentence, step by step, with the three most probable next pieces at each step:

# %%
src = encode_english(["three hundred and forty-two thousand five hundred and sixty-seven"])  # (1, S)
memory_mask = padding_mask(src, config.pad_id)  # (1, 1, 1, S)
with torch.no_grad():
    memory = model.encode(src, memory_mask)  # (1, S, D)
    target = torch.tensor([[config.bos_id]])  # (1, 1): <bos>
    for step in range(20):
        logits = model.decode(target, memory, memory_mask)[:, -1]  # (1, V): the last position only
        probs = logits.softmax(-1)[0]
        top = probs.topk(3)
        options = "   ".join(
            f"{tgt_vocab.id_to_token[i]:>8} {p:.3f}" for p, i in zip(top.values, top.indices, strict=True)
        )
        print(f"step {step:2}: {options}")
        target = torch.cat([target, top.indices[:1].view(1, 1)], dim=1)  # take the most probable
        if target[0, -1] == config.eos_id:
            break
print("→", german(target[0, 1:]), "| expected:", german_text(number_pair(342_567)[1]))

# %% [markdown]
# The model puts about 0.93 on its choice at every step, close to the 0.9 that label smoothing
# (chapter 07, ε = 0.1) trains it towards: it has learned the task well. Notice the order: English
# says "forty-two", German says *zwei-und-vierzig*, so the decoder must look ahead in the source
# (section 7 shows where it looks).
#
# `greedy_decode` is that loop, for a batch: rows finish at different steps, so a finished row
# gets `<pad>` until the slowest row is done (exercise ex08_1 writes that step), and the output is
# a padded rectangle without the `<bos>`.

# %%
texts = ["twenty-one", "one thousand and one", "nine hundred and ninety-nine thousand nine hundred and ninety-nine",
         "seventeen thousand and seventy"]  # fmt: skip
out = greedy_decode(model, encode_english(texts), max_len=MAX_OUT)  # (B, ≤ MAX_OUT)
print(out)
numbers_of_texts = [21, 1001, 999_999, 17_070]
for text, n, row in zip(texts, numbers_of_texts, out, strict=True):
    right = "✓" if pieces(row) == number_pair(n)[1] else f"✗ (expected {german_text(number_pair(n)[1])})"
    print(f"{text:>68} → {german(row)} {right}")


# %% [markdown]
# ## 2. Why greedy decoding can fail
#
# The probability of a translation is the product of the probabilities of its tokens (§3: the
# model is auto-regressive, so $P(y \mid x) = \prod_t P(y_t \mid y_{<t}, x)$). Greedy decoding
# maximises each factor on its own, which is not the same as maximising the product: a token that
# looks best now can lead into a continuation where every option is poor.
#
# A worked example makes this concrete. Below is a pretend "translator" whose next-token
# probabilities come from a small hand-written table, for the input "twenty-one". It has half
# learned German: its first guess follows the English order and starts with *zwanzig* (0.45),
# but after that nothing fits well. Starting with *ein* (0.40) leads to a confident
# *ein-und-zwanzig*. The table model has the same interface as `Transformer` (`config`, `encode`,
# `decode`), so the package's decoding functions run on it unchanged (without a cache).


# %%
class TableModel(nn.Module):
    """A pretend translator: next-token probabilities looked up in a table by the target so far."""

    def __init__(self, words: list[str], table: dict[tuple[str, ...], dict[str, float]]) -> None:
        super().__init__()
        self.tokens = ["<pad>", "<bos>", "<eos>", "<unk>", *words]
        self.table = table
        self.config = TransformerConfig(len(self.tokens), len(self.tokens), d_model=4, n_heads=1, max_len=8)
        self.anchor = nn.Parameter(torch.zeros(1))  # the decoding functions read the device from here

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        return torch.zeros(src.shape[0], src.shape[1], 4)  # (B, S, 4): the table ignores the source

    def decode(self, tgt, memory, memory_mask=None, cache=None) -> torch.Tensor:
        assert cache is None, "the table model has no cache"
        logits = torch.full((*tgt.shape, len(self.tokens)), -30.0)  # (B, T, V): unlisted = impossible
        for b, row in enumerate(tgt.tolist()):
            for t in range(len(row)):
                prefix = tuple(self.tokens[i] for i in row[1 : t + 1])  # the target so far, without <bos>
                for word, p in self.table.get(prefix, {"<eos>": 1.0}).items():
                    logits[b, t, self.tokens.index(word)] = math.log(p)
        return logits

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        return self.decode(tgt, self.encode(src))


toy = TableModel(
    ["ein", "eins", "und", "zwanzig"],
    {
        (): {"zwanzig": 0.45, "ein": 0.40, "eins": 0.10, "<eos>": 0.05},
        ("zwanzig",): {"eins": 0.32, "und": 0.28, "<eos>": 0.25, "ein": 0.15},
        ("zwanzig", "eins"): {"<eos>": 0.6, "und": 0.4},
        ("zwanzig", "und"): {"ein": 0.5, "eins": 0.5},
        ("ein",): {"und": 0.95, "<eos>": 0.05},
        ("ein", "und"): {"zwanzig": 0.95, "<eos>": 0.05},
        ("ein", "und", "zwanzig"): {"<eos>": 0.95, "und": 0.05},
    },
)
toy_src = torch.tensor([[4]])  # any source: the table ignores it


def toy_text(ids: torch.Tensor) -> str:
    words = [toy.tokens[i] for i in ids.tolist() if i not in (0, 1)]
    return " ".join(words[: words.index("<eos>") + 1] if "<eos>" in words else words)


greedy_toy = greedy_decode(toy, toy_src, max_len=6, use_cache=False)
beam_toy, beam_toy_score = beam_search(toy, toy_src, beam_size=2, max_len=6, length_penalty=0.0, use_cache=False)
for name, hyp in (("greedy", greedy_toy), ("beam 2", beam_toy)):
    probability = score_sequences(toy, toy_src, hyp).exp().item()
    print(f"{name:7} {toy_text(hyp[0]):28} P = {probability:.3f}")

# %% [markdown]
# Greedy takes *zwanzig* (0.45 > 0.40), then the best it can find is *eins* (0.32) and `<eos>`
# (0.6): 0.45 × 0.32 × 0.6 ≈ 0.086. The translation that starts with the *second* choice is four
# times as probable: 0.40 × 0.95 × 0.95 × 0.95 ≈ 0.343. No single step revealed that; the search
# had to keep the runner-up alive for one more step.
#
# ## 3. Beam search, step by step
#
# Beam search keeps the K best partial translations (the *beam*) instead of one. At each step every
# hypothesis in the beam is extended by every token (K·V candidates), and the K best candidates
# become the next beam. A hypothesis that has produced `<eos>` is *finished*: it is not extended any
# more, but it stays in the beam, unchanged, and competes with the others; the search stops when the
# whole beam is finished. With K = 1 this is exactly greedy decoding (a test in `tests/` checks it);
# a large enough K is exhaustive search (checked against brute force on a tiny model).
#
# **Which candidates are "best"?** Summed log-probabilities only go down with every token, so a raw
# comparison favours translations that stop early. The paper (§6.1) uses the length penalty of
# Wu et al. (2016), eq. 14, and ranks by
#
# $$s(Y) = \frac{\log P(Y \mid X)}{lp(Y)}, \qquad lp(Y) = \left(\frac{5 + |Y|}{5 + 1}\right)^{\alpha},$$
#
# with α = 0.6 and K = 4. ($|Y|$ counts the generated tokens, `<eos>` included.)
#
# One step of that, for B sentences with K hypotheses each, is `beam_step` (exercise ex08_3). Below
# we run the loop by hand on the table model with K = 2, recording every candidate, and draw the
# search as a tree.

# %%
K, V = 2, len(toy.tokens)
PAD_ID, EOS_ID = toy.config.pad_id, toy.config.eos_id
scores = torch.tensor([[0.0, float("-inf")]])  # (B=1, K): one real hypothesis (<bos>), one empty slot
finished, lengths = torch.zeros(1, K, dtype=torch.bool), torch.zeros(1, K, dtype=torch.long)
beam_tokens = torch.full((K, 1), toy.config.bos_id)  # (K, t)
history = []  # per step: every candidate (parent slot, token, log P) and the survivors, best first
with torch.no_grad():
    memory = toy.encode(toy_src.expand(K, -1))
    for step in range(5):
        log_probs = toy.decode(beam_tokens, memory)[:, -1].log_softmax(-1).view(1, K, V)  # (1, K, V)
        candidates = []
        for k in range(K):
            if finished[0, k]:  # carried over unchanged
                candidates.append((k, PAD_ID, scores[0, k].item()))
            elif scores[0, k] > float("-inf"):
                candidates += [(k, v, (scores[0, k] + log_probs[0, k, v]).item()) for v in range(V)
                               if log_probs[0, k, v] > -20]  # fmt: skip
        origin, new, scores, finished, lengths = beam_step(
            scores, log_probs, finished, lengths, EOS_ID, PAD_ID, alpha=0.0
        )
        history.append(
            {"candidates": candidates, "survivors": list(zip(origin[0].tolist(), new[0].tolist(), strict=True))}
        )
        beam_tokens = torch.cat([beam_tokens[origin[0]], new.view(K, 1)], dim=1)  # (K, t+1)
        print(
            f"step {step + 1}: "
            + " | ".join(f"{toy_text(beam_tokens[k, 1:]):22} {scores[0, k]:6.3f}" for k in range(K))
        )
        if finished.all():
            break
assert toy_text(beam_tokens[0, 1:]) == toy_text(beam_toy[0]), "the hand-run loop agrees with beam_search"


# %%
def draw_beam_tree(history: list[dict], tokens: list[str], ax: plt.Axes) -> None:
    """Each column is a step; a dot is a candidate (filled = kept in the beam, hollow = pruned);
    lines join a candidate to the hypothesis it extends; labels give the token and log P."""
    slot_xy = {0: (0, 0.0)}  # beam slot → where its hypothesis is drawn
    ax.scatter([0], [0], s=60, color="black")
    ax.annotate("<bos>", (0, 0), textcoords="offset points", xytext=(-12, 8), fontsize=9)
    for step, record in enumerate(history, start=1):
        ordered = sorted(record["candidates"], key=lambda c: -c[2])
        new_slot_xy = {}
        for i, (slot, token, logp) in enumerate(ordered):
            x, y = step, 1.2 * (len(ordered) - 1) / 2 - 1.2 * i
            kept = (slot, token) in record["survivors"]
            px, py = slot_xy[slot]
            ax.plot([px, x], [py, y], zorder=1, color="tab:blue" if kept else "0.75", lw=1.8 if kept else 0.8,
                    ls="-" if kept else "--")  # fmt: skip
            ax.scatter([x], [y], s=45, zorder=2, color="tab:blue" if kept else "white",
                       edgecolors="tab:blue" if kept else "0.6")  # fmt: skip
            ax.annotate(f"{tokens[token]} ({logp:.2f})", (x, y), textcoords="offset points", xytext=(6, -3),
                        fontsize=8, color="black" if kept else "0.55")  # fmt: skip
            if kept:
                new_slot_xy[record["survivors"].index((slot, token))] = (x, y)
        slot_xy = new_slot_xy
    ax.set_xlabel("step")
    ax.set_yticks([])
    ax.set_xticks(range(len(history) + 1))
    ax.set_xlim(-0.3, len(history) + 0.9)


fig, ax = plt.subplots(figsize=(10, 5))
draw_beam_tree(history, toy.tokens, ax)
ax.set_title("Beam search (K = 2) keeps the runner-up 'ein', which leads to the best translation")
plt.show()

# %% [markdown]
# (Labels are the summed log-probabilities $\log P$ of each candidate. A finished hypothesis is
# carried into the next step unchanged, shown as `<pad>` with the same score.)
#
# After step 1 the beam holds *zwanzig* (−0.80) and *ein* (−0.92). At step 2 the two best of all
# extensions are *ein und* (−0.97) and *zwanzig eins* (−1.94): beam search compared candidates
# *across* the two hypotheses, and the weaker first word supplied the stronger continuation.
# From there *ein und zwanzig `<eos>`* (log P = −1.07) beats everything greedy could reach, and
# the finished *zwanzig eins `<eos>`* waits in the beam until the search ends.
#
# On the trained model, greedy and beam search almost always agree, because the model is
# confident (section 6 counts). Here are the 4 best hypotheses of beam search (K = 4, α = 0.6, the
# paper's settings) for one sentence, with their length-penalised scores:

# %%
src = encode_english(["seven hundred and one thousand and eleven"])
hyps, hyp_scores = beam_search(model, src, beam_size=4, max_len=MAX_OUT, length_penalty=0.6, n_best=4)
for k in range(4):
    print(f"{hyp_scores[0, k]:8.4f}  {' '.join(pieces(hyps[0, k]))}")

# %% [markdown]
# ## 4. Sampling and temperature
#
# Decoding need not search for the most probable output at all: it can **sample**, drawing each
# token at random from the model's distribution. For translation that is rarely what we want (there
# is one right answer), but it is how language models write varied text, and it shows what the
# model considers possible. Three knobs shape the distribution before drawing:
#
# - **temperature** T: divide the logits by T before the softmax. T < 1 sharpens the distribution
#   (T → 0 is greedy), T > 1 flattens it (T → ∞ is uniform);
# - **top-k**: keep only the k most probable tokens;
# - **top-p** (nucleus, Holtzman et al. 2020): keep the smallest set of most probable tokens whose
#   probability adds up to at least p (exercise ex08_2).
#
# The figure shows them on a real distribution of the model. Almost all of its steps are nearly
# certain, so we pick the closest call: of the 1,000 test numbers, decoded greedily, the step
# where the second most probable piece gets the most probability.

# %%
task = numbers_task()  # the splits chapter 07 trained on; the test numbers were never seen in training
test_src = pad_sequences([src_vocab.encode(s) for s, _ in task.test], src_vocab.pad_id)  # (1000, S)
test_greedy = greedy_decode(model, test_src, MAX_OUT)  # (1000, T)
test_in = torch.cat([torch.full((len(task.test), 1), config.bos_id), test_greedy[:, :-1]], dim=1)  # <bos> y1 …
with torch.no_grad():
    all_logits = model(test_src, test_in)  # (1000, T, V): the distribution at every step
all_logits[..., [config.pad_id, config.bos_id]] = float("-inf")  # never generated (see decoding.py)
runner_up = all_logits.softmax(-1).topk(2).values[..., 1]  # (1000, T): probability of the second choice
runner_up = runner_up.masked_fill(test_in == config.pad_id, 0)  # only real steps
row, step = divmod(int(runner_up.argmax()), runner_up.shape[1])
first_logits = all_logits[row, step]  # (V,)
top2 = first_logits.softmax(-1).topk(2)
print(
    f"'{' '.join(task.test[row][0])}', after '{' '.join(pieces(test_greedy[row, :step])) or '<bos>'}': "
    + " or ".join(f"'{tgt_vocab.id_to_token[i]}' ({p:.2f})" for p, i in zip(*top2, strict=True))
)

# %%
shown = first_logits.softmax(-1).topk(10).indices  # the 10 most probable pieces
settings = [("T = 0.5", dict(temperature=0.5)), ("T = 1 (the model)", {}), ("T = 2", dict(temperature=2.0)),
            ("T = 2, top-p 0.6", dict(temperature=2.0, top_p=0.6)),
            ("T = 2, top-k 3", dict(temperature=2.0, top_k=3))]  # fmt: skip
fig, axes = plt.subplots(1, len(settings), figsize=(15, 3.2), sharey=True)
for ax, (name, kwargs) in zip(axes, settings, strict=True):
    probs = sampling_distribution(first_logits, **kwargs)
    ax.bar(range(len(shown)), probs[shown], color="tab:orange")
    ax.set_xticks(range(len(shown)), [tgt_vocab.id_to_token[i] for i in shown], rotation=70)
    ax.set_title(name)
axes[0].set_ylabel("probability of the next piece")
fig.suptitle("Temperature flattens or sharpens the distribution; top-p and top-k cut its tail", y=1.04)
plt.show()

# %% [markdown]
# How does `sample` draw? With the **Gumbel-max trick**: add independent noise $-\log(-\log U)$,
# $U \sim \text{Uniform}(0, 1)$, to the log-probabilities and take the arg-max. The winner is token
# $i$ with probability exactly $p_i$, so sampling is greedy decoding on noisy logits, the same
# `greedy_step` does the bookkeeping, and `top_k=1` is greedy decoding exactly. A quick check of
# the frequencies:

# %%
probs = sampling_distribution(first_logits, temperature=2.0, top_p=0.6)
draws = sample_next_token(first_logits.expand(20_000, -1), temperature=2.0, top_p=0.6,
                          generator=torch.Generator().manual_seed(0))  # fmt: skip
frequency = torch.bincount(draws, minlength=len(probs)).float() / len(draws)
print("probability:", probs[shown])
print("frequency:  ", frequency[shown])

# %% [markdown]
# Sampled translations show what sampling does to a translator. Even at T = 1 many draws go wrong:
# label smoothing (chapter 07) taught the model to keep about 7 % of its probability spread over
# all the other pieces at every step, and over a dozen steps a draw from that tail is likely. A
# higher temperature makes it worse; top-p 0.9 cuts the tail away and, for a model this confident,
# gives back the greedy translation. A fixed `generator` makes the draws reproducible.

# %%
text = "four hundred and fifty-six thousand seven hundred and eighty-nine"
src = encode_english([text] * 3)
for name, kwargs in (("T = 1", {}), ("T = 2", dict(temperature=2.0)), ("T = 1, top-p 0.9", dict(top_p=0.9))):
    drawn = sample(model, src, MAX_OUT, generator=torch.Generator().manual_seed(1), **kwargs)
    print(f"{name}:")
    for row in drawn:
        print("   ", german(row))
print("expected:", german_text(number_pair(456_789)[1]))

# %% [markdown]
# ## 5. Making decoding fast: the key/value cache
#
# The loop of section 1 runs the decoder on the *whole* prefix at every step, so writing n tokens
# costs 1 + 2 + … + n = O(n²) token-passes through the decoder. Most of that is repeated work. The
# decoder's self-attention is masked (§3.2.3): position t never looks at later positions, so
# everything computed for positions 0 … t−1 is the same at every later step. Only two things
# from earlier positions are ever used again, in each layer:
#
# - the **keys and values of the self-attention** for the earlier target positions;
# - the **keys and values of the cross-attention**, projected from the encoder memory, which do not
#   change at all while decoding.
#
# A `DecoderCache` keeps both. With it, each step feeds the decoder only the new token: its query
# attends over the stored keys/values plus its own, the memory is projected once, and the
# positional encoding must be taken at the right position (`cache.length`), not at 0.
#
# The cache is plain data, passed in and handed on (`transformer_course/cache.py`):
# `model.decode(new_tokens, memory, memory_mask, cache=cache)` gives each decoder layer its
# `LayerCache`; your `DecoderLayer.forward` (chapter 06) passes `cache.self_attn` and
# `cache.cross_attn` to the two attentions; `MultiHeadAttention.keys_and_values` (chapter 04)
# projects only the new positions and calls `cache.update(k, v)`, which appends them and returns
# the keys and values of every position so far. For the cross-attention, the memory is projected at
# the first step and then only read. Your code of chapters 02–06 is what runs, cached or not.
#
# First, the proof that it changes nothing: the logits of step-by-step cached decoding equal those
# of one full pass, to float32 precision.

# %%
src = encode_english(texts)
tgt = greedy_decode(model, src, MAX_OUT)  # (B, T)
tgt_in = torch.cat([torch.full((len(texts), 1), config.bos_id), tgt[:, :-1]], dim=1)  # (B, T) <bos> y…
memory_mask = padding_mask(src, config.pad_id)
with torch.no_grad():
    memory = model.encode(src, memory_mask)
    full = model.decode(tgt_in, memory, memory_mask)  # (B, T, V): one pass, no cache
    cache = DecoderCache.for_model(model)
    stepwise = torch.cat(
        [model.decode(tgt_in[:, t : t + 1], memory, memory_mask, cache=cache) for t in range(tgt_in.shape[1])], dim=1
    )  # (B, T, V): one token at a time
print("largest difference between the logits:", f"{(stepwise - full).abs().max().item():.1e}")
layer_cache = cache.layers[0]
print("first layer's self-attention keys", tuple(layer_cache.self_attn.keys.shape), "(B, H, L, Dk);",
      "cross-attention keys", tuple(layer_cache.cross_attn.keys.shape), "(B, H, S, Dk)")  # fmt: skip
assert torch.allclose(stepwise, full, atol=1e-4)
assert torch.equal(greedy_decode(model, src, MAX_OUT, use_cache=False), tgt)

# %% [markdown]
# Now the speed. The translations of this task are short (at most a dozen pieces), so we measure
# on a model of the same size with random weights, whose `<eos>` is switched off so that it writes
# exactly n tokens, for a batch of 32 sentences. (Timings vary from run to run and machine to
# machine; the shape of the curves does not. `benchmarks/decoding.py` measures a larger model.)

# %%
# NBVAL_IGNORE_OUTPUT
lengths_to_time = [8, 16, 32, 64]
timing_config = TransformerConfig(**{**config.to_dict(), "max_len": 128})
torch.manual_seed(0)
timing_model = Transformer(timing_config).eval()
with torch.no_grad():
    timing_model.output.bias[config.eos_id] = -1e4  # never stop: exactly n tokens per sentence
timing_src = torch.randint(4, timing_config.src_vocab_size, (32, 12))
threads = torch.get_num_threads()
torch.set_num_threads(1)  # one thread: steadier timings when other programs share the CPU
greedy_decode(timing_model, timing_src, 4)  # warm-up


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


timings = {"no cache": [], "KV cache": []}
for n in lengths_to_time:
    timings["no cache"].append(seconds(lambda n=n: greedy_decode(timing_model, timing_src, n, use_cache=False)))
    timings["KV cache"].append(seconds(lambda n=n: greedy_decode(timing_model, timing_src, n)))
torch.set_num_threads(threads)
speedup = [a / b for a, b in zip(timings["no cache"], timings["KV cache"], strict=True)]
for n, a, b, s in zip(lengths_to_time, timings["no cache"], timings["KV cache"], speedup, strict=True):
    print(f"{n:3} tokens: no cache {a * 1000:7.1f} ms, KV cache {b * 1000:7.1f} ms, speed-up {s:4.1f}×")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.5))
for name, values in timings.items():
    ax1.plot(lengths_to_time, [v * 1000 for v in values], "o-", label=name)
ax1.set_xlabel("tokens generated")
ax1.set_ylabel("milliseconds (batch of 32)")
ax1.set_xscale("log", base=2)
ax1.set_yscale("log")
ax1.legend()
ax1.set_title("Without a cache the cost grows ~ n²")
ax2.plot(lengths_to_time, speedup, "o-", color="tab:green")
ax2.set_xscale("log", base=2)
ax2.set_xlabel("tokens generated")
ax2.set_ylabel("speed-up ×")
ax2.set_title("The longer the output, the more the cache saves")
plt.show()

# %% [markdown]
# For short outputs the cache saves little: a step of a small model is mostly fixed overhead (a few
# dozen small matrix products and Python calls), whatever the length. The cost without a cache
# grows with the square of the length, with the cache only linearly, so the gap widens with every
# token.
#
# > **Common mistake — cached decoding with every new token at position 0.** With a cache the
# > decoder sees one token at a time, so `x.shape[1]` is always 1, and a positional encoding that
# > indexes its table with `[:x.shape[1]]` puts *every* token at position 0. Nothing crashes, and
# > here the translations even survive, because this model can also tell positions apart from what
# > it has already written. The bug is silent, which is what makes it dangerous: on a longer
# > sequence or a weaker model it changes the output. What catches it is an equivalence test,
# > cached logits against a full pass
# > (`tests/test_decoding.py::test_cached_decoding_gives_the_same_logits_as_the_full_decoder`),
# > and the check of exercise ex02_2, which gives `PositionalEncoding.forward` an `offset`.

# %%
src = encode_english(texts)  # the sentences whose logits were compared above
positional_forward = model.positional.forward
model.positional.forward = lambda x, offset=0: positional_forward(x)  # the bug: the offset is dropped
try:
    buggy = greedy_decode(model, src, MAX_OUT)
    with torch.no_grad():
        cache = DecoderCache.for_model(model)
        buggy_logits = torch.cat(
            [model.decode(tgt_in[:, t : t + 1], memory, memory_mask, cache=cache) for t in range(tgt_in.shape[1])], 1
        )
finally:
    del model.positional.forward  # back to the class's method


def mean_log_prob(logits: torch.Tensor) -> float:
    """Average log-probability the logits give to the greedy translation `tgt` (real tokens only)."""
    chosen = logits.log_softmax(-1).gather(-1, tgt[..., None])[..., 0]  # (B, T)
    return chosen[tgt != config.pad_id].mean().item()


print("same translations as without the bug:", torch.equal(buggy, tgt))
print(f"largest difference from the full pass's logits: {(buggy_logits - full).abs().max().item():.2f}")
print(f"average log-probability of the translation: {mean_log_prob(full):.3f} correct, "
      f"{mean_log_prob(buggy_logits):.3f} with the bug")  # fmt: skip

# %% [markdown]
# > **Common mistake — generating after `<eos>`.** In a batch, the rows finish at different steps
# > but all go through the model until the last one is done. Forgetting to replace the choice of a
# > finished row by `<pad>` appends words after `<eos>`; a decoder that stops reading at `<eos>` hides
# > them, but any code that measures lengths or counts tokens is wrong. The check of exercise ex08_1
# > catches it:


# %%
def greedy_step_that_keeps_going(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1)  # bug: finished rows are not given pad_id
    return next_tokens, finished | (next_tokens == eos_id)


print(run_check("ex08_1", greedy_step_that_keeps_going).line())
print(run_check("ex08_1").line())  # the package's greedy_step

# %% [markdown]
# ## 6. How good is it? BLEU, chrF and exact match on the test split
#
# The test split holds 1,000 numbers between 1,000 and 999,999 that training never saw. We
# translate all of them with greedy decoding and with beam search (K = 4, α = 0.6) and score them
# three ways:
#
# - **exact match**: the share of numbers translated exactly right, the measure that matters here;
# - **corpus BLEU** (Papineni et al. 2002, the paper's Table 2), with sacrebleu, computed on the
#   German *pieces* separated by spaces: a German number is one long word, and BLEU on whole words
#   would only count exact matches;
# - **chrF** (Popović 2015), a character n-gram F-score, on the written words: it gives partial
#   credit to a translation with one wrong piece.

# %%
references = [t for _, t in task.test]  # German pieces
outputs = {  # token ids (1000, T), the whole split as one batch
    "greedy": test_greedy,  # decoded in section 4
    "beam 4": beam_search(model, test_src, beam_size=4, max_len=MAX_OUT, length_penalty=0.6)[0],
}
decoded = {name: [pieces(row) for row in ids] for name, ids in outputs.items()}


def scores_of(hypotheses: list[list[str]]) -> dict[str, float]:
    bleu = sacrebleu.corpus_bleu([" ".join(h) for h in hypotheses], [[" ".join(r) for r in references]],
                                 tokenize="none")  # fmt: skip
    chrf = sacrebleu.corpus_chrf([german_text(h) for h in hypotheses], [[german_text(r) for r in references]])
    exact = sum(h == r for h, r in zip(hypotheses, references, strict=True)) / len(references)
    return {"exact match %": 100 * exact, "BLEU (pieces)": bleu.score, "chrF (words)": chrf.score}


results = {name: scores_of(hyps) for name, hyps in decoded.items()}
print(f"{'':8}" + "".join(f"{metric:>16}" for metric in results["greedy"]))
for name, row in results.items():
    print(f"{name:8}" + "".join(f"{value:16.2f}" for value in row.values()))
differ = sum(g != b for g, b in zip(decoded["greedy"], decoded["beam 4"], strict=True))
print(f"greedy and beam search differ on {differ} of {len(references)} numbers")

# %% [markdown]
# Both decoders translate every test number exactly: on numbers drawn at random from the range
# the model was trained for, chapter 07's model makes no mistakes and the search has nothing to
# fix. (The paper reports beam search worth a little BLEU on real translation, where the model is
# far less sure of itself.) A perfect test score does not mean a perfect model, though: section 8
# goes looking for the inputs it gets wrong.

# %% [markdown]
# ## 7. What the decoder looks at: cross-attention
#
# Every German piece is chosen by a decoder that attends to the English source through its
# cross-attention. `cross_attention_maps` runs the decoder once over a translation and returns the
# attention weights of every layer and head. Averaged over the heads of a layer, each row shows
# where the decoder looked when it wrote that piece. German puts the units before the tens
# (*sieben-und-sechzig* for "sixty-seven"). The first decoder layer spreads its attention; the
# second reads the English out of order, one word per German piece: "two" for *zwei*, then back
# to "forty" for *vierzig*, "seven" for *sieben*, then back to "sixty" for *sechzig*.

# %%
examples = ["three hundred and forty-two thousand five hundred and sixty-seven", "eighty-one thousand and twenty-four"]
src = encode_english(examples)
hyp = greedy_decode(model, src, MAX_OUT)
maps = cross_attention_maps(model, src, hyp)  # (layers, B, H, T, S)
n_layers = maps.shape[0]
fig, axes = plt.subplots(len(examples), n_layers, figsize=(4.2 * n_layers, 4.2 * len(examples)), squeeze=False)
for b, text in enumerate(examples):
    source_words = english_tokens(text)
    target_pieces = pieces(hyp[b]) + ["<eos>"]
    for layer in range(n_layers):
        ax = axes[b, layer]
        weights = maps[layer, b].mean(0)[: len(target_pieces), : len(source_words)]  # (T, S), heads averaged
        ax.imshow(weights, cmap="Blues", vmin=0, vmax=1)
        ax.set_xticks(range(len(source_words)), source_words, rotation=70, fontsize=8)
        ax.set_yticks(range(len(target_pieces)), target_pieces, fontsize=8)
        ax.set_title(f"decoder layer {layer + 1}", fontsize=9)
fig.suptitle(
    "Cross-attention (mean over heads): in layer 2, to write 'zwei' the decoder reads 'two', then goes back to 'forty'",
    y=1.0,
)
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 8. Error analysis: the numbers the model gets wrong
#
# The test split is a random sample of the numbers the model never saw, so it measures how often
# the model is wrong on a *typical* number. To find *where* it is wrong we probe it with inputs that
# are rare among random numbers: the round thousands ("forty-seven thousand") and the thousands
# followed by a single digit ("thirty thousand and four"), all of them left out of training.
# For each failure we also ask the model which it finds more probable, its beam-search output or
# the correct translation. If it prefers the correct one, the *search* failed and a better search
# could find it; if it prefers its own output, the *model* is wrong and no search will help.

# %%
train_numbers = set(task.info["numbers"]["train"])
probe = [n for n in range(1000, 1_000_000, 1000) if n not in train_numbers]  # round thousands
probe += [n for n in range(10_000, 100_000) if 0 < n % 1000 < 10 and n not in train_numbers]  # "… thousand and k"
probe_src = pad_sequences([src_vocab.encode(number_pair(n)[0]) for n in probe], src_vocab.pad_id)
probe_refs = [number_pair(n)[1] for n in probe]
probe_greedy = greedy_decode(model, probe_src, MAX_OUT)
wrong = [i for i, row in enumerate(probe_greedy) if pieces(row) != probe_refs[i]]
rows = torch.tensor(wrong)
probe_beam = beam_search(model, probe_src[rows], beam_size=4, max_len=MAX_OUT, length_penalty=0.6)[0]
beam_right = [pieces(row) == probe_refs[i] for row, i in zip(probe_beam, wrong, strict=True)]
print(f"probe: {len(probe)} numbers; greedy gets {len(wrong)} wrong, beam search (K = 4) "
      f"{len(wrong) - sum(beam_right)}")  # fmt: skip
round_seen = sum(n >= 1000 and n % 1000 == 0 for n in train_numbers)
print(f"round thousands among the {len(train_numbers):,} training numbers: {round_seen}")


def shorten(text: str, width: int = 32) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def kind_of_error(hypothesis: list[str], reference: list[str]) -> str:
    if len(hypothesis) > len(reference) and hypothesis[: len(reference)] == reference:
        return "does not stop"
    for i, (h, r) in enumerate(zip(hypothesis, reference, strict=False)):
        if h != r:
            return f"piece {i + 1}: '{h}' for '{r}'"
    return "stops too early"


correct_ids = pad_sequences([tgt_vocab.encode(probe_refs[i], add_eos=True) for i in wrong], tgt_vocab.pad_id)
log_p_found = score_sequences(model, probe_src[rows], probe_beam)  # log P of beam search's output
log_p_right = score_sequences(model, probe_src[rows], correct_ids)  # log P of the correct translation
kinds = [kind_of_error(pieces(probe_greedy[i]), probe_refs[i]) for i in wrong]
search_errors = int((log_p_right > log_p_found).sum())
print(f"greedy errors that never stop: {sum(k == 'does not stop' for k in kinds)} of {len(wrong)}")
print(f"search errors (the model prefers the correct translation to beam search's output): "
      f"{search_errors} of {len(wrong)}\n")  # fmt: skip
for j in range(0, len(wrong), max(1, len(wrong) // 12)):  # a dozen examples, spread over the list
    i = wrong[j]
    print(f"{probe[i]:>7,}  greedy {shorten(german_text(pieces(probe_greedy[i]))):32}  beam "
          f"{shorten(german_text(pieces(probe_beam[j]))):32}  {kinds[j]}")  # fmt: skip

# %% [markdown]
# The failures have one shape. When a German number ends in *tausend*, the model often does not
# produce `<eos>` and starts the thousands over again ("neunzehntausendneunzehntausend…"), or, after
# "… thousand and four", writes *vier* and then keeps going as if a ten followed. Training saw only
# a few dozen round thousands among its 61,000 numbers, so "stop right after *tausend*" is a
# pattern it met rarely. (The closest call of section 4 was the same decision: `<eos>` or
# *tausend*.)
#
# Beam search repairs some of these: a hypothesis that stops early is a few points of
# log-probability cheaper than one that repeats a dozen pieces, and a wider search finds it. Most
# failures, though, are errors of the model: it really does prefer its wrong output to the correct
# translation, so no decoding strategy can fix them. That is the usual lesson of error analysis:
# look at the errors, decide whether search or model is to blame, and fix the model with data
# (here: more round numbers in training), not with cleverer decoding.
#
# ## Summary
#
# - Decoding turns next-token distributions into a translation: encode once, then choose, append
#   and repeat until `<eos>`, for a batch at once, padding the rows that have finished.
# - Greedy decoding maximises each step, not the whole translation; the worked example lost a
#   translation four times as probable. Beam search keeps K hypotheses, compares candidates across
#   them, keeps finished hypotheses unchanged in the beam, and ranks with the GNMT length penalty
#   (K = 4, α = 0.6 in the paper). K = 1 is greedy; a beam that holds everything is exhaustive.
# - Sampling draws from the distribution; temperature sharpens or flattens it, top-k and top-p cut
#   its tail. Gumbel noise plus arg-max is an exact sampler.
# - A key/value cache stores the self-attention keys and values of earlier positions and the
#   cross-attention keys and values of the memory. It gives the same logits as a full pass and
#   removes the quadratic cost of re-reading the prefix; positions must start at the cache length.
# - BLEU, chrF and exact match put greedy and beam search level on the test split, with no
#   errors. Probing rare inputs finds the weak spot: after a round "tausend" the model often does not
#   stop. Beam search repairs a few of these, but most are errors of the model, which only better
#   training data can fix.
#
# **Exercises:** [exercises/ex08_decoding.ipynb](../exercises/ex08_decoding.ipynb) — one greedy
# step (ex08_1), top-p filtering (ex08_2) and one beam-search step with the length penalty
# (ex08_3). Worked solutions are in `solutions/`. From the command line:
# `python -m transformer_course translate "three hundred and forty-two" --beam 4`.
