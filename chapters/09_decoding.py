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
# # Chapter 09 — Decoding: from a trained model to a translator
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/09_decoding.ipynb)
#
# Chapter 08 read its trained model's answers with `read_greedily`: encode the source once, run the
# decoder on the target so far, keep the most probable next token, and repeat until `<eos>`. Turning
# the model's next-token distributions into a translation is called **decoding**, and that loop is
# its plainest form. This chapter asks two questions about it. Is the most probable token at each
# step the best choice? And must every step run the decoder over the whole target again?
#
# **Learning goals**
#
# - follow chapter 08's loop step by step, and write the step of the batched `greedy_decode` that
#   pads the rows that have finished;
# - see on a worked example why taking the most probable token at each step (greedy decoding) can
#   miss the most probable translation, and how beam search does better;
# - sample with a temperature, top-k and top-p, and see what each does to the distribution;
# - make decoding fast with a key/value cache, check that it changes nothing but the speed, and
#   measure the speed-up.
#
# **In the paper:**
#
# - §3: the model is *auto-regressive*, it consumes the symbols it generated before;
# - §3.2.3: the decoder's masked self-attention, which makes caching possible;
# - §6.1: beam search with a beam size of 4 and a length penalty α = 0.6, outputs of at most the
#   input's length + 50 tokens, stopping early when possible.

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
import math

import matplotlib.pyplot as plt
import torch
from torch import nn

from transformer_course import Transformer, TransformerConfig
from transformer_course.batching import pad_sequences
from transformer_course.cache import DecoderCache
from transformer_course.datasets.numbers import (
    english_to_number,
    english_tokens,
    german_text,
    number_pair,
    number_to_english,
    numbers_task,
)
from transformer_course.decoding import (
    beam_search,
    beam_step,
    greedy_decode,
    greedy_step,
    max_output_length,
    sample,
    sample_next_token,
    sampling_distribution,
    score_sequences,
)
from transformer_course.evaluation import read_greedily
from transformer_course.masks import padding_mask
from transformer_course_tools.exercises.checks import run_check
from transformer_course_tools.models.pretrained import load_pretrained
from transformer_course_tools.notebook.claims import expect, expect_at_least, expect_at_most
from transformer_course_tools.notebook.diagrams import beam_candidates, beam_tree, kv_cache_step
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.plots import fastest_seconds, plot_cache_speedup
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("09")  # the short stop at an unwritten exercise; printing and plotting style

# %% tags=["hide-input"]
checkpoint = load_pretrained()  # trained by chapter 08's recipe and shipped with the course
model, src_vocab, tgt_vocab = checkpoint.model.eval(), checkpoint.src_vocab, checkpoint.tgt_vocab
config = model.config
print(f"The shipped translator: {checkpoint.step:,} training steps, {model.num_parameters():,} parameters, "
      f"D = {config.d_model}, H = {config.n_heads}, {config.n_encoder_layers} encoder and "
      f"{config.n_decoder_layers} decoder layers, {len(src_vocab)} English and {len(tgt_vocab)} German tokens.")


def encode_english(texts: list[str]) -> torch.Tensor:
    """English sentences → a padded batch of source ids (B, S)."""
    return pad_sequences([src_vocab.encode(english_tokens(t)) for t in texts], src_vocab.pad_id)


def pieces(ids: torch.Tensor) -> list[str]:
    """Target ids of one translation → German pieces, up to <eos>."""
    return tgt_vocab.decode(ids.tolist())


def german(ids: torch.Tensor) -> str:
    return german_text(pieces(ids))

# %% [markdown]
# ## Where we are
#
# Decoding works at the top of the map. Take the distribution of the next token, choose one, append
# it to the decoder's input (the dotted line) and run the decoder again.
# The [notation page](../book/notation.md) lists the letters.
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right, each a stack of
# layers above its embeddings and positional encodings. At the top of the decoder, a linear layer
# gives the logits, and a softmax turns them into probabilities. Two arrows leave the softmax: one
# to the loss of training, one to a box "next token", chosen greedily, by beam search or by
# sampling. The softmax and that box are highlighted. A dotted line runs from the box down the right
# edge to the decoder's input, the target shifted right. Its label says: append the chosen token and
# run the decoder again.
#
# </details>

# %%
architecture_map("decoding")

# %% [markdown]
# ## 1. Chapter 08's loop, one step at a time
#
# The decoder is trained with *teacher forcing* (chapter 08): it reads `<bos> y₁ … yₙ` and predicts
# `y₁ … yₙ <eos>` in one pass. At translation time we only have `<bos>`. `read_greedily` runs:
#
# 1. encode the source once: the encoder's output, the *memory* (B, S, D), does not change while we
#    write;
# 2. start every target with `<bos>`;
# 3. run the decoder on the target so far and take the logits of the **last** position: they give
#    the distribution of the next token;
# 4. choose a token, append it, and go back to 3, until the sentence chose `<eos>` or reached a
#    length limit.
#
# The folded cell at the top loaded the shipped translator and three helpers: `encode_english`
# (English texts → a padded batch of ids), `pieces` and `german` (target ids → German). Here is one
# sentence, step by step, with the three most probable next pieces at each step:

# %%
src = encode_english(["three hundred and forty-two thousand five hundred and sixty-seven"])  # (1, S)
memory_mask = padding_mask(src, config.pad_id)  # (1, 1, 1, S)
with torch.no_grad():
    memory = model.encode(src, memory_mask)  # (1, S, D)
    target = torch.tensor([[config.bos_id]])  # (1, 1): <bos>
    for step in range(20):  # 20 is plenty here; §6.1's limit comes next
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
# The model puts just over 0.9 on its choice at every step, a little above the target of label
# smoothing, $0.9 + 0.1/V_\text{tgt}$ (chapter 08): it has learned the task well. Notice the order.
# English says "forty-two", German says *zwei-und-vierzig*, so the decoder must look ahead in the
# source (chapter 10 shows where it looks).
#
# The list also shows `<bos>` and `<eos>` among the options. `<eos>` may be chosen: it ends the
# sentence. `<pad>` and `<bos>` never should be, so `greedy_decode`, `beam_search` and `sample` give
# both probability 0 before they choose. `<unk>` keeps its probability.
#
# `greedy_decode` is the same loop for a batch, with two changes:
#
# 1. rows finish at different steps, so a finished row gets `<pad>` until the slowest row is done.
#    The step that does this is `greedy_step` (exercise ex09_1), which sampling reuses (section 4);
# 2. it keeps a key/value cache, so that each step runs the decoder on the newest token only
#    (section 5).
#
# It gives chapter 08's tokens exactly, as a padded rectangle without the `<bos>`.
#
# Each row stops at chapter 08's limit (§6.1), its source length + 50 (at most `config.max_len`).
# `max_output_length` computes it; `max_len=n` gives every row the limit n instead.

# %%
texts = ["twenty-one", "one thousand and one", "nine hundred and ninety-nine thousand nine hundred and ninety-nine",
         "seventeen thousand and seventy"]
out = greedy_decode(model, encode_english(texts))  # (B, T): each row at most its source length + 50 (§6.1)
print("limits, source length + 50:", max_output_length(model, encode_english(texts)).tolist())
print(out)
print("the same tokens as chapter 08's read_greedily:", torch.equal(out, read_greedily(model, encode_english(texts))))
numbers_of_texts = [21, 1001, 999_999, 17_070]
for text, n, row in zip(texts, numbers_of_texts, out, strict=True):
    right = "✓" if pieces(row) == number_pair(n)[1] else f"✗ (expected {german_text(number_pair(n)[1])})"
    print(f"{text:>68} → {german(row)} {right}")


# %% [markdown]
# > **Common mistake — generating after `<eos>`.** In a batch, the rows finish at different steps,
# > but all go through the model until the last one is done. Forget to replace a finished row's
# > choice by `<pad>`, and words are appended after its `<eos>`. A decoder that stops reading at
# > `<eos>` hides them, but any code that measures lengths or counts tokens is wrong. One step of
# > a batch of two, whose first row has already finished, shows it:

# %%
def greedy_step_that_keeps_going(logits, finished, eos_id, pad_id):
    next_tokens = logits.argmax(dim=-1)  # bug: finished rows are not given pad_id
    return next_tokens, finished | (next_tokens == eos_id)


finished_rows = torch.tensor([True, False])  # row 0 wrote <eos> at an earlier step
step_logits = torch.tensor([[0.0, 0.0, 0.0, 5.0], [0.0, 0.0, 5.0, 0.0]])  # (B, V): both rows still prefer a token
for one_step in (greedy_step_that_keeps_going, greedy_step):
    print(f"{one_step.__name__:30} next tokens {one_step(step_logits, finished_rows, eos_id=2, pad_id=0)[0].tolist()}")

# %% tags=["hide-cell"]
# The check of exercise ex09_1 rejects the bug with a message that names it:
print(run_check("ex09_1", greedy_step_that_keeps_going).line())

# %% [markdown]
# ## 2. Why greedy decoding can fail
#
# The probability of a translation is the product of the probabilities of its tokens. The model is
# auto-regressive (§3), so $P(Y \mid X) = \prod_t P(y_t \mid y_{<t}, X)$ for a source $X$ and a
# translation $Y = y_1 \dots y_n$. Greedy decoding maximises
# each factor on its own, and that is not the same as maximising the product. A token that looks
# best now can lead into a continuation where every option is poor.
#
# Below is a pretend "translator" of the input "twenty-one".
# Its next-token probabilities come from a small hand-written table. It has half learned German:
# its first guess follows the English order and starts with *zwanzig* (0.45), but after that nothing
# fits well. Starting with *ein* (0.40) leads to a confident *ein-und-zwanzig*. The table model's
# class (folded) has `Transformer`'s interface, so the package's decoding functions run on it
# unchanged (without a cache). The second line below is a translation typed by hand: the one that
# starts with the second choice, *ein*.
# `score_sequences` gives each translation's log-probability: one teacher-forced pass (chapter 08),
# summed over the translation's tokens.

# %% tags=["hide-input"]
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

    def decode(self, tgt, memory, memory_mask=None) -> torch.Tensor:
        logits = torch.full((*tgt.shape, len(self.tokens)), -30.0)  # (B, T, V): unlisted = impossible
        for b, row in enumerate(tgt.tolist()):
            for t in range(len(row)):
                prefix = tuple(self.tokens[i] for i in row[1 : t + 1])  # the target so far, without <bos>
                for word, p in self.table.get(prefix, {"<eos>": 1.0}).items():
                    logits[b, t, self.tokens.index(word)] = math.log(p)
        return logits

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        return self.decode(tgt, self.encode(src))


# %%
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


# max_len=6: the toy's table knows translations of at most three pieces and <eos>, so 6 is plenty
greedy_toy = greedy_decode(toy, toy_src, max_len=6, use_cache=False)
second_choice = torch.tensor([[toy.tokens.index(piece) for piece in ("ein", "und", "zwanzig", "<eos>")]])  # (1, 4)
for name, hyp in (("greedy", greedy_toy), ("by hand", second_choice)):
    probability = score_sequences(toy, toy_src, hyp).exp().item()
    print(f"{name:7} {toy_text(hyp[0]):28} P = {probability:.3f}")

# %% [markdown]
# Greedy takes *zwanzig* (0.45 > 0.40). Then it takes the most probable next piece, *eins* (0.32),
# and `<eos>` (0.6): 0.45 × 0.32 × 0.6 ≈ 0.086. Even stopping right after *zwanzig* (0.45 × 0.25)
# beats that, and greedy never compares the two. The translation that starts with the *second*
# choice is four times as probable: 0.40 × 0.95 × 0.95 × 0.95 ≈ 0.343. No translation beats it. One
# that starts with *zwanzig* gets at most 0.45 × 0.32, one that starts with *eins* or `<eos>` at
# most 0.10. Any other that starts with *ein* takes a 0.05 on the way. No single step revealed the
# winner: a search must keep the runner-up alive.
#
# ## 3. Beam search, step by step
#
# Beam search keeps the $k$ best partial translations instead of one. They form the *beam*, and $k$
# is the beam size. At each step every hypothesis in the beam is extended by every token
# ($k \cdot V_\text{tgt}$ candidates), and the $k$ best candidates become the next beam. A hypothesis
# that has produced `<eos>` is *finished*. It is not extended any more, but it stays in the beam,
# unchanged, and competes with the others. The search stops as soon as the whole beam is finished
# (§6.1's "stopping early"), not at the length limit. With $k = 1$ this is exactly greedy decoding,
# and a large enough $k$ is exhaustive search.
#
# **Which candidates are "best"?** Summed log-probabilities only go down with every token, so a raw
# comparison favours translations that stop early. The paper (§6.1) ranks with the length penalty of
# Google's translation system, GNMT (Wu et al. 2016, eq. 14):
#
# $$s(Y) = \frac{\log P(Y \mid X)}{lp(Y)}, \qquad lp(Y) = \left(\frac{5 + |Y|}{5 + 1}\right)^{\alpha},$$
#
# with α = 0.6 and $k = 4$. ($|Y|$ counts the generated tokens, `<eos>` included.) α is
# `beam_search`'s `length_penalty` and `beam_step`'s `alpha`.
#
# One step of that, for B sentences with $k$ hypotheses each, is `beam_step` (exercise ex09_3):
#
# | argument | shape | what it holds |
# | --- | --- | --- |
# | `scores` | (B, k) | each hypothesis's summed log-probability; `-inf` in an empty slot |
# | `log_probs` | (B, k, V_tgt) | the next token's log-probabilities after each hypothesis |
# | `finished` | (B, k) | True once a hypothesis has ended with `<eos>` |
# | `lengths` | (B, k) | the tokens each hypothesis has generated, for $lp$ |
# | `eos_id`, `pad_id` | ids | `<eos>`, and the token that a finished hypothesis keeps adding |
# | `alpha` | number | α of $lp$; 0 turns the penalty off |
#
# It returns `origin` (the slot of the hypothesis each survivor extends), the new token, and the new
# `scores`, `finished` and `lengths`. At the start the beam holds one real hypothesis, `<bos>`. Below, one call at the start on the table model with $k = 2$
# (no length penalty): both survivors extend slot 0, the only real hypothesis. Then the
# loop by hand, recording every candidate for a tree.

# %%
beam_k, V_tgt = 2, len(toy.tokens)  # the beam size k, the vocabulary
PAD_ID, EOS_ID = toy.config.pad_id, toy.config.eos_id
scores = torch.tensor([[0.0, float("-inf")]])  # (B=1, k): one real hypothesis (<bos>), one empty slot
finished, lengths = torch.zeros(1, beam_k, dtype=torch.bool), torch.zeros(1, beam_k, dtype=torch.long)
beam_tokens = torch.full((beam_k, 1), toy.config.bos_id)  # (k, t)
memory = toy.encode(toy_src.expand(beam_k, -1)).detach()  # (k, S, D): the source once per slot


def next_log_probs(beam_tokens: torch.Tensor) -> torch.Tensor:
    """(k, t) hypotheses → (1, k, V_tgt): the log-probabilities of each one's next token."""
    with torch.no_grad():
        return toy.decode(beam_tokens, memory)[:, -1].log_softmax(-1).view(1, beam_k, V_tgt)


first = next_log_probs(beam_tokens)  # (1, k, V_tgt)
origin, new, first_scores, _, _ = beam_step(scores, first, finished, lengths, EOS_ID, PAD_ID, alpha=0.0)
print("origin:", origin[0].tolist(), "| tokens:", [toy.tokens[i] for i in new[0].tolist()],
      "| scores:", [round(x, 2) for x in first_scores[0].tolist()])

# %%
history = []  # per step: every candidate (parent slot, token, log P) and the survivors, best first
# the loop starts again from <bos> (scores, beam_tokens): its step 1 is the call above
with torch.no_grad():
    for step in range(5):
        log_probs = next_log_probs(beam_tokens)  # (1, k, V_tgt)
        candidates = beam_candidates(scores[0], log_probs[0], finished[0], PAD_ID)  # for the tree below
        origin, new, scores, finished, lengths = beam_step(
            scores, log_probs, finished, lengths, EOS_ID, PAD_ID, alpha=0.0
        )
        history.append(
            {"candidates": candidates, "survivors": list(zip(origin[0].tolist(), new[0].tolist(), strict=True))}
        )
        beam_tokens = torch.cat([beam_tokens[origin[0]], new.view(beam_k, 1)], dim=1)  # (k, t+1)
        print(
            f"step {step + 1}: "
            + " | ".join(f"{toy_text(beam_tokens[slot, 1:]):22} {scores[0, slot]:6.2f}" for slot in range(beam_k))
        )
        if finished.all():
            break
# the package's beam search on the same toy, with section 2's max_len=6 (the table knows three pieces and <eos>)
beam_toy = beam_search(toy, toy_src, beam_size=2, max_len=6, length_penalty=0.0, use_cache=False)[0][:, 0]  # the best
assert toy_text(beam_tokens[0, 1:]) == toy_text(beam_toy[0]), "the hand-run loop agrees with beam_search"


# %% [markdown]
# *The tree below.* Each column is a step of the search. A filled dot on a thick line is a
# hypothesis kept in the beam; a hollow dot on a dashed line is a candidate pruned. Each label gives
# the piece and the summed log-probability $\log P$ of its whole hypothesis. A finished hypothesis is
# carried into the next step unchanged, labelled "finished".
#
# <details><summary>The diagram in words</summary>
#
# The tree grows from `<bos>` on the left through steps 1 to 4. Kept
# hypotheses are blue dots on thick lines, pruned candidates hollow grey dots on dashed lines. At
# step 1, *zwanzig* (−0.80) and *ein* (−0.92) are kept, and *eins* and `<eos>` are pruned. At step 2
# the two best extensions are *ein und* (−0.97) and *zwanzig eins* (−1.94); the other four are
# pruned. At step 3, *zwanzig eins `<eos>`* finishes (−2.45) and *ein und zwanzig* (−1.02) goes on.
# At step 4 the finished one is carried over, and *ein und zwanzig `<eos>`* (−1.07) ends as the
# best.
#
# </details>

# %%
fig, ax = plt.subplots(figsize=(11, 5.2))
beam_tree(history, toy.tokens, ax=ax)  # drawn from the history recorded above
ax.set_title("Beam search (k = 2) keeps the runner-up 'ein', which leads to the best translation")
plt.show()

# %% [markdown]
# At step 2 beam search compared candidates *across* the two hypotheses, and the weaker first
# word, *ein*, supplied the stronger continuation. From there *ein und zwanzig `<eos>`*
# (log P = −1.07) beats everything greedy could reach. The finished *zwanzig eins `<eos>`* waits in
# the beam until the search ends.
#
# On the trained model, greedy and beam search should mostly agree, because the model is confident
# (chapter 10, section 1, scores both on the test split). Here are the 4 best hypotheses of beam
# search for one sentence, with the paper's settings ($k = 4$, α = 0.6). Beside
# each penalised score $s(Y)$ is its raw $\log P(Y \mid X)$, the score with α = 0:

# %%
src = encode_english(["seven hundred and one thousand and eleven"])
hyps, hyp_scores = beam_search(model, src, beam_size=4, length_penalty=0.6, n_best=4)  # (1, 4, T), (1, 4)
raw = score_sequences(model, src.expand(4, -1), hyps[0])  # (4,): log P(Y | X), no length penalty
print(f"{'s(Y), α = 0.6':>14} {'log P, α = 0':>13}  translation")
for k in range(4):
    print(f"{hyp_scores[0, k]:14.4f} {raw[k]:13.4f}  {' '.join(pieces(hyps[0, k]))}")

# %% [markdown]
# The best hypothesis is the correct translation, and it leads the others by about 4 in score. Among
# these four, it wins with α = 0 too: here the penalty only reorders the runners-up. The raw column
# shows the bias described above: ranked by $\log P$ alone, the short and wrong *sieben hundert ein*
# moves from last place to second.

# %% [markdown]
# ## 4. Sampling and temperature
#
# Decoding need not search for the most probable output at all. It can **sample**: draw each token
# at random from the model's distribution. For translation that is rarely what we want, since there
# is one right answer. But it is how language models write varied text, and it shows what the model
# considers possible. Three knobs shape the distribution before drawing:
#
# - **temperature** $\tau$: divide the logits by $\tau$ before the softmax. $\tau < 1$ sharpens the
#   distribution ($\tau \to 0$ is greedy), $\tau > 1$ flattens it ($\tau \to \infty$ is uniform);
# - **top-k**: keep only the `top_k` most probable tokens;
# - **top-p** (nucleus sampling, Holtzman et al. 2020): keep the smallest set of most probable tokens
#   whose probability adds up to at least p (exercise ex09_2).
#
# `sampling_distribution(logits, …)` returns the distribution that these knobs leave, and
# `sample_next_token(logits, …)` draws one token from it. The figure shows them on a real
# distribution of the model. Almost all of its steps are nearly
# certain, so we pick the closest call. The folded cell decodes chapter 08's test split greedily and
# takes the step where the second most probable piece gets the most probability.

# %% tags=["hide-input"]
task = numbers_task()  # chapter 08's splits
test_src = pad_sequences([src_vocab.encode(s) for s, _ in task.test], src_vocab.pad_id)  # (B, S), B test numbers
test_greedy = greedy_decode(model, test_src)  # (B, T)
test_in = torch.cat([torch.full((len(task.test), 1), config.bos_id), test_greedy[:, :-1]], dim=1)  # <bos> y1 …
with torch.no_grad():
    all_logits = model(test_src, test_in)  # (B, T, V_tgt): the distribution at every step
all_logits[..., [config.pad_id, config.bos_id]] = float("-inf")  # never generated
runner_up = all_logits.softmax(-1).topk(2).values[..., 1]  # (B, T): probability of the second choice
runner_up = runner_up.masked_fill(test_in == config.pad_id, 0)  # only real steps
row, step = divmod(int(runner_up.argmax()), runner_up.shape[1])
first_logits = all_logits[row, step]  # (V,)
top2 = first_logits.softmax(-1).topk(2)
print(
    f"'{number_to_english(english_to_number(task.test[row][0]))}', after '{' '.join(pieces(test_greedy[row, :step])) or '<bos>'}': "
    + " or ".join(f"'{tgt_vocab.id_to_token[i]}' ({p:.2f})" for p, i in zip(*top2, strict=True))
)

# %% [markdown]
# In the panels that cut, grey bars show the distribution before the cut, and orange bars beside
# them the one sampled from: the kept pieces share the whole probability again.
#
# <details><summary>The figure in words</summary>
#
# Five bar charts stand side by side and share the vertical axis, the
# probability of the next piece. Each has the same ten pieces on its horizontal axis, the model's
# most probable at this step, best first. Orange bars show the distribution that sampling draws
# from. The first bar is tallest at τ = 0.5 and lowest at τ = 2, where the bars are flattest. The
# fourth panel (τ = 2, top-p 0.45) and the fifth (τ = 2, top-k 3) add grey bars: the distribution at
# τ = 2 before the cut. Only the kept pieces have orange bars, each taller than its grey one; top-k
# keeps exactly three.
#
# </details>

# %%
shown = first_logits.softmax(-1).topk(10).indices  # the 10 most probable pieces
settings = [("τ = 0.5", dict(temperature=0.5)), ("τ = 1 (the model)", {}), ("τ = 2", dict(temperature=2.0)),
            ("τ = 2, top-p 0.45", dict(temperature=2.0, top_p=0.45)),
            ("τ = 2, top-k 3", dict(temperature=2.0, top_k=3))]
fig, axes = plt.subplots(1, len(settings), figsize=(15, 3.4), sharey=True)
for ax, (name, kwargs) in zip(axes, settings, strict=True):
    probs = sampling_distribution(first_logits, **kwargs)
    x = torch.arange(len(shown), dtype=torch.float)
    if "top_p" in kwargs or "top_k" in kwargs:  # the same temperature before the cut, in grey, beside
        before = sampling_distribution(first_logits, temperature=kwargs["temperature"])
        ax.bar(x - 0.2, before[shown], width=0.4, color="0.75", label="before the cut")
        name += f"\n{int((probs > 0).sum())} of {len(probs)} pieces kept"
        x = x + 0.2
    ax.bar(x, probs[shown], width=0.4 if x[0] % 1 else 0.6, color="tab:orange", label="sampled from")
    ax.set_xticks(range(len(shown)), [tgt_vocab.id_to_token[i] for i in shown], rotation=70)
    ax.set_title(name, fontsize=10)
axes[0].set_ylabel("probability of the next piece")
axes[3].legend(fontsize=8)
fig.suptitle("Temperature flattens or sharpens the distribution; top-p and top-k cut its tail", y=1.06)
plt.show()

# %% [markdown]
# At τ = 2 the long tail of unlikely pieces holds more of the probability than at τ = 1; top-p and
# top-k cut it.
#
# How does `sample` draw? With the **Gumbel-max trick**: add independent noise $-\log(-\log U)$,
# $U \sim \text{Uniform}(0, 1)$, to the log-probabilities and take the arg-max. The winner is token
# $i$ with probability exactly $p_i$. So sampling is greedy decoding on noisy logits: the same
# `greedy_step` does the bookkeeping, and `top_k=1` is greedy decoding exactly. A quick check of
# the frequencies, with the fourth panel's setting:

# %%
probs = sampling_distribution(first_logits, temperature=2.0, top_p=0.45)
draws = sample_next_token(first_logits.expand(20_000, -1), temperature=2.0, top_p=0.45,
                          generator=torch.Generator().manual_seed(0))
frequency = torch.bincount(draws, minlength=len(probs)).float() / len(draws)
print("probability:", probs[shown])
print("frequency:  ", frequency[shown])

# %% [markdown]
# Sampled translations show what sampling does to a translator. Even at $\tau = 1$ the draws below
# go wrong. Even where the model is right and sure, as at every step of section 1's sentence, it
# keeps 7 to 8% of its probability on the other pieces. Over a dozen steps, a draw from that tail
# is likely. A higher temperature makes it worse. Top-p 0.9 cuts the tail away, and for a model
# this confident it gives back the greedy translation. A fixed `generator` makes the draws
# reproducible. Why so much on the tail? Label smoothing may be part of it: chapter 08 trained with
# it, and chapter 11 section 5 measures what it does to a model's confidence.

# %%
text = "four hundred and fifty-six thousand seven hundred and eighty-nine"
src = encode_english([text] * 3)
for name, kwargs in (("τ = 1", {}), ("τ = 2", dict(temperature=2.0)), ("τ = 1, top-p 0.9", dict(top_p=0.9))):
    drawn = sample(model, src, generator=torch.Generator().manual_seed(1), **kwargs)  # (3, T)
    print(f"{name}:")
    for row in drawn:
        print("   ", german(row))
print("expected:", german_text(number_pair(456_789)[1]))

# %% [markdown]
# ## 5. Making decoding fast: the key/value cache
#
# The loop of section 1 runs the decoder on the *whole* prefix at every step. Writing n tokens then
# costs 1 + 2 + … + n = O(n²) token-passes through the decoder, and most of that is repeated work.
# The decoder's self-attention is masked (§3.2.3): position t never looks at later positions. So
# everything computed for positions 0 … t−1 stays the same at every later step. Two things are
# reused at every step, in each layer:
#
# - the **keys and values of the self-attention** for the earlier target positions;
# - the **keys and values of the cross-attention**, projected from the encoder's memory. They do not
#   change at all while decoding.
#
# A **key/value cache** (KV cache) keeps both, and each step feeds the decoder only the newest token.
# The diagram shows one step in one layer.
#
# <details><summary>The diagram in words</summary>
#
# At the top, the newest token, the fifth, sits at position 4. It is projected
# into a query q₄, a key k₄ and a value v₄. The key and the value are appended to the layer's cache,
# which now holds five of each. The query q₄ scores all five keys, and the softmax weights average
# the five values. Below it is the cross-attention. The encoder's memory of six
# positions was projected into keys and values once, at the first step. Every later step only reads
# them: the step's cross-attention query scores all six.
#
# </details>

# %%
kv_cache_step(t=5, source_length=6)

# %% [markdown]
# A `DecoderCache` holds one such cache per decoder layer. The model does not change for it. The
# cache gives each attention a copy of itself, with the same weights, whose $W^K$ and $W^V$
# remember what they projected. At each step such a projection projects the newest position only,
# and returns it after the $L$ positions it already holds:
#
# ```python
# new = projection(x)  # (B, T, out): the new positions only
# kept = torch.cat([kept, new], dim=1)  # (B, L+T, out): every position so far
# ```
#
# Your modules of chapters 02–06 do each step's work; the cache keeps what they made:
#
# 1. the positional encoding takes the newest token at its own position, the cache's length, not 0;
# 2. your `MultiHeadAttention.forward` (chapter 04) runs unchanged: its queries are the new
#    position, its keys and values every position so far;
# 3. the cross-attention's projections run at the first step only; later steps read what they kept.
#
# `cache.decode(new_tokens, memory, memory_mask)` runs one such step and returns the new tokens'
# logits.
#
# In beam search, after each step a survivor may extend another slot's hypothesis
# (`origin`), so `beam_search` reorders the rows of every self-attention cache to follow it
# (`DecoderCache.reorder`).
#
# First, the check that the cache changes nothing: the logits of step-by-step cached decoding equal
# those of one full pass, to within 1e-4.

# %%
src = encode_english(texts)
tgt = greedy_decode(model, src)  # (B, T)
tgt_in = torch.cat([torch.full((len(texts), 1), config.bos_id), tgt[:, :-1]], dim=1)  # (B, T) <bos> y…
memory_mask = padding_mask(src, config.pad_id)
with torch.no_grad():
    memory = model.encode(src, memory_mask)
    full = model.decode(tgt_in, memory, memory_mask)  # (B, T, V): one pass, no cache
    cache = DecoderCache(model)
    stepwise = torch.cat(
        [cache.decode(tgt_in[:, t : t + 1], memory, memory_mask) for t in range(tgt_in.shape[1])], dim=1
    )  # (B, T, V): one token at a time
layer_cache = cache.layers[0]
print("cached logits equal those of one pass (to 1e-4):", torch.allclose(stepwise, full, atol=1e-4, rtol=0))
print("first layer's cached self-attention keys", tuple(layer_cache.self_attn.keys.shape), "(B, T, H·d_k);",
      "cross-attention keys", tuple(layer_cache.cross_attn.keys.shape), "(B, S, H·d_k)")

# %% tags=["hide-cell"]
assert torch.equal(greedy_decode(model, src, use_cache=False), tgt)  # the same tokens without the cache
expect_at_most("largest difference between the logits, cached against one pass", (stepwise - full).abs().max().item(), 1e-4)

# %% [markdown]
# > **Common mistake — cached decoding with every new token at position 0.** With a cache the
# > decoder sees one token at a time, so `x.shape[1]` is always 1. A positional encoding that
# > indexes its table with `[:x.shape[1]]` then puts *every* token at position 0. Nothing crashes.
# > Below, the translations even survive, and their average log-probability does not move at the third decimal, though the
# > logits differ from the full pass's by several units. The source keeps its right positions. The
# > bug is silent: nothing promises that another model or sentence survives it. An equivalence test
# > catches it, cached logits against a full pass, as above. So does the check of exercise ex02_2,
# > which gives `PositionalEncoding.forward` an `offset`.

# %%
class PositionsFromZero(nn.Module):
    """The bug: the offset is dropped, so each token of a cached step gets position 0's vector."""

    def __init__(self, positional: nn.Module) -> None:
        super().__init__()
        self.positional = positional  # the model's own positional encoding

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        return self.positional(x)  # offset ignored


src = encode_english(texts)  # the sentences whose logits were compared above
correct_positions = model.positional
model.positional = PositionsFromZero(correct_positions)  # the bug
try:
    buggy = greedy_decode(model, src)
    with torch.no_grad():
        cache = DecoderCache(model)
        buggy_logits = torch.cat([cache.decode(tgt_in[:, t : t + 1], memory, memory_mask) for t in range(tgt_in.shape[1])], 1)
finally:
    model.positional = correct_positions  # the model's own positional encoding, back in its place


def mean_log_prob(logits: torch.Tensor) -> float:
    """Average log-probability the logits give to the greedy translation `tgt` (real tokens only)."""
    chosen = logits.log_softmax(-1).gather(-1, tgt[..., None])[..., 0]  # (B, T)
    return chosen[tgt != config.pad_id].mean().item()


print("same translations as without the bug:", torch.equal(buggy, tgt))
print(f"largest difference from the full pass's logits: {(buggy_logits - full).abs().max().item():.2f}")
print(f"average log-probability of the translation: {mean_log_prob(full):.3f} correct, "
      f"{mean_log_prob(buggy_logits):.3f} with the bug")

# %% [markdown]
# Now the speed. The translations of this task are short, a dozen pieces at most. So we time a model
# of the same size with random weights, whose `<eos>` is switched off so that it writes exactly n
# tokens, for a batch of 32 sentences. The times are this machine's.
#
# <details><summary>The figure in words</summary>
#
# Two line charts share the horizontal axis, the number of tokens generated:
# 16, 32, 64 and 128, on a logarithmic scale. On the left, with a logarithmic vertical axis too, two
# lines give the milliseconds for the batch of 32. One is decoding without a cache, the other with
# the KV cache. On the right, a green line gives the speed-up, the first time divided by the second.
# It is above one at every length and highest at 128 tokens, where it is at least two. The times
# themselves are this machine's.
#
# </details>

# %% tags=["measured", "nbval-ignore-output"]
lengths_to_time = [16, 32, 64, 128]  # at most the model's max_len
timing_config = TransformerConfig(**{**config.to_dict(), "max_len": 128})
torch.manual_seed(0)
timing_model = Transformer(timing_config).eval()
with torch.no_grad():
    timing_model.output.bias[config.eos_id] = -1e4  # never stop: exactly n tokens per sentence
timing_src = torch.randint(4, timing_config.src_vocab_size, (32, 12))
# max_len is given: the timing wants exactly n tokens, whatever §6.1's limit (12 + 50)
greedy_decode(timing_model, timing_src, max_len=4)  # warm-up: the first call pays one-off costs
timings = {"no cache": [], "KV cache": []}  # seconds, the fastest of 3 runs on one thread
for n in lengths_to_time:  # n tokens exactly (the <eos> is off)
    timings["no cache"].append(fastest_seconds(lambda n=n: greedy_decode(timing_model, timing_src, n, use_cache=False)))
    timings["KV cache"].append(fastest_seconds(lambda n=n: greedy_decode(timing_model, timing_src, n)))
speedup = [a / b for a, b in zip(timings["no cache"], timings["KV cache"], strict=True)]
for n, a, b, s in zip(lengths_to_time, timings["no cache"], timings["KV cache"], speedup, strict=True):
    print(f"{n:3} tokens: no cache {a * 1000:7.1f} ms, KV cache {b * 1000:7.1f} ms, speed-up {s:4.1f}×")
plot_cache_speedup(lengths_to_time, timings)

# %% tags=["hide-cell", "measured"]
# measured too: a re-run keeps these lines with the table above, from the same timings
measured = ", ".join(f"{s:.1f}× at {n}" for n, s in zip(lengths_to_time, speedup, strict=True))
expect("faster at every length, most at the longest", min(speedup) > 1 and speedup[-1] == max(speedup), measured)
expect_at_least(f"the cache's speed-up at {lengths_to_time[-1]} tokens", speedup[-1], 2, "×")

# %% [markdown]
# The cache is faster at every length and saves most on the longest output.
# Without a cache, step $t$ runs the decoder over all $t$ positions. For $n$ tokens the projections
# and the feed-forward network cost $O(n^2)$, and the self-attention scores ($t \times t$ at step
# $t$) cost $O(n^3)$. With the cache, the projections and the feed-forward network run on the new
# position only, $O(n)$ in total. The new query still attends over all $t$ cached keys, so attention
# stays $O(n^2)$. But that is one dot product per cached key, small next to the rest at these
# lengths. So the gap grows with the length. At the shortest lengths it is smallest: a step of a
# small model is partly fixed overhead (small matrix products, Python calls), which the cache does
# not save. Timings on a busy machine are noisy: read the trend, not one ratio.

# %% [markdown]
# ## Summary
#
# - Decoding turns next-token distributions into a translation: chapter 08's loop encodes once,
#   then chooses, appends and repeats until `<eos>`, padding the rows of a batch that have finished.
# - Greedy decoding maximises each step, not the whole translation. The worked example lost a
#   translation four times as probable.
# - Beam search keeps $k$ hypotheses and compares candidates across them. It keeps finished
#   hypotheses unchanged in the beam and ranks with GNMT's length penalty ($k = 4$, α = 0.6 in the
#   paper). $k = 1$ is greedy; a beam that holds everything is exhaustive search.
# - Sampling draws from the distribution. Temperature sharpens or flattens it; top-k and top-p cut
#   its tail. Gumbel noise plus arg-max is an exact sampler.
# - A key/value cache stores the self-attention keys and values of earlier positions and the
#   cross-attention keys and values of the memory. It gives the same logits as a full pass, and it
#   computes each earlier position once instead of at every step. Only the attention over the cached
#   keys still grows with the prefix. Positions must start at the cache's length.
#
# Chapter 10 asks how good these translations are: it scores them, sorts the errors of an
# under-trained copy into search errors and model errors, and reads every attention head.
#
# **Exercises:** [exercises/ex09_decoding.ipynb](../exercises/ex09_decoding.ipynb) asks you to write
# `greedy_step` (ex09_1), `top_p_filter` (ex09_2) and `beam_step` (ex09_3). Stuck on one? `python -m
# transformer_course restore ex09_1` puts its worked answer in your student edition. From the command
# line: `python -m transformer_course translate "three hundred and forty-two" --beam 4` (without a
# checkpoint file it uses the shipped numbers model).

# %% [markdown]
# ## Check yourself
#
# 1. Why can greedy decoding miss the most probable translation?
#    <details><summary>Answer</summary>
#
#    It maximises each factor of $\prod_t P(y_t \mid y_{<t}, x)$ on its own; a token that looks best
#    now can lead to a continuation where every option is poor (section 2's *zwanzig*).
#    </details>
# 2. Why does beam search need a length penalty?
#    <details><summary>Answer</summary>
#
#    Every token multiplies the probability by a number below 1, so raw scores favour translations
#    that stop early; dividing by $lp(Y)$ makes long and short hypotheses comparable.
#    </details>
# 3. What happens to sampling as $\tau \to 0$ and as $\tau \to \infty$?
#    <details><summary>Answer</summary>
#
#    $\tau \to 0$ puts all probability on the top token (greedy decoding); $\tau \to \infty$ makes the
#    distribution uniform.
#    </details>
# 4. What does the KV cache store, and what still grows with the length of the output?
#    <details><summary>Answer</summary>
#
#    The self-attention keys and values of the earlier target positions, and the cross-attention
#    keys and values of the memory. The projections and the feed-forward network run on the new
#    token only. But its query still attends over all cached keys, so the attention's work per step
#    grows with the prefix.
#    </details>
# 5. Top-p sampling with p = 0.9, at a step where the top piece has more than 0.9: what does it keep?
#    <details><summary>Answer</summary>
#
#    The top piece alone: it is the smallest set that reaches p. The draw is then the greedy choice.
#    On a model this confident, that is why section 4's top-p draws give back the greedy translation.
#    </details>
#
# ## Further reading
#
# - The paper: §3 (the auto-regressive model), §6.1 (beam size 4, length penalty 0.6, maximum output
#   length).
# - Wu et al. (2016), *Google's Neural Machine Translation System*: the length penalty of section 3.
# - Holtzman et al. (2020), *The Curious Case of Neural Text Degeneration*: nucleus (top-p)
#   sampling.
# - Fan, Lewis and Dauphin (2018), *Hierarchical Neural Story Generation*: top-k sampling.
# - Maddison, Tarlow and Minka (2014), *A\* Sampling*: the Gumbel-max trick (after Gumbel, 1954).

# %% [markdown]
# **Next:** [Chapter 10 — How good is the translator? Scores, errors and attention
# heads](10_evaluating_the_translator.ipynb): scores per kind of number, where the errors come from
# (the search or the model), and what the trained model's attention heads read.
