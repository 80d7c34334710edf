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
# # Chapter 10 — How good is the translator? Scores, errors and attention heads
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/10_evaluating_the_translator.ipynb)
#
# Chapter 09 turned the trained model into a translator, with greedy decoding and beam search. This
# chapter asks how good it is, and why. It scores the translations, probes where they fail, and sorts
# each error by its cause: the search, or the model. Then it opens the model that gets everything
# right and reads what each attention head looks at. It trains nothing: it loads two checkpoints that
# ship with the course, the translator and an under-trained copy that still makes errors.
#
# **Learning goals**
#
# - score translations with exact match, BLEU and chrF, see where the three disagree, and score
#   each kind of number apart;
# - probe a model with inputs that training left out;
# - tell a search error from a model error, and know what each one asks you to change;
# - read every head of the trained model's three attentions, and measure how sharp each head is.
#
# **In the paper:** Table 2 (BLEU), §6.1 (beam size 4 and length penalty α = 0.6), §3.2.3 (the
# three uses of attention).

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
import sacrebleu
import seaborn as sns
import torch

from transformer_course.batching import pad_sequences
from transformer_course.datasets.numbers import english_tokens, german_text, number_pair, numbers_task
from transformer_course.decoding import beam_search, greedy_decode, score_sequences
from transformer_course.evaluation import attention_maps, score_translations, strata_scores
from transformer_course_tools.models.pretrained import load_pretrained
from transformer_course_tools.notebook.claims import expect, expect_at_least, expect_at_most, expect_between
from transformer_course_tools.notebook.figures import architecture_map, plot_attention_heads
from transformer_course_tools.notebook.plots import strata_table
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("10")  # the short stop at an unwritten exercise; printing and plotting style

# %% [markdown]
# ## Where we are
#
# The model is built, trained and decoded. What is left is to look at its output from outside
# (scores) and from inside (attention weights). The [notation page](../book/notation.md) lists the
# letters.
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right, each a stack of
# layers above its embeddings and positional encodings. Two parts are highlighted. The first is the
# three attention blocks: the encoder's self-attention, the decoder's masked self-attention and the
# cross-attention that reads the encoder's output. The second is the softmax at the top and the box
# above it that chooses the next token. The title says what the chapter does with them: it reads the
# attention and scores what the decoders produce.
#
# </details>

# %%
architecture_map(["multihead", "decoding"], title="Chapter 10: the translations scored, the attention read")

# %% [markdown]
# Two checkpoints ship with the course. One is the translator of chapters 08 and 09. The other is
# that run itself, stopped early at the step printed below. The shipped model makes no mistake on
# the test split, so the under-trained one shows what each measure finds when there are mistakes.
# Both translate chapter 08's test split here, greedily and with beam search ($k = 4$, α = 0.6, §6.1). `pieces` turns the
# target ids of one translation back into German pieces.

# %%
checkpoint = load_pretrained()  # trained by chapter 08's recipe and shipped with the course
model, src_vocab, tgt_vocab = checkpoint.model.eval(), checkpoint.src_vocab, checkpoint.tgt_vocab
config = model.config
weak_checkpoint = load_pretrained("numbers-en-de-undertrained")  # the shipped run itself, stopped early
weak = weak_checkpoint.model.eval()
assert weak_checkpoint.src_vocab == src_vocab and weak_checkpoint.tgt_vocab == tgt_vocab  # same task
task = numbers_task()  # the splits chapter 08 trained on
test_src = pad_sequences([src_vocab.encode(s) for s, _ in task.test], src_vocab.pad_id)  # (B, S), B test numbers
BEAM, ALPHA = 4, 0.6  # beam search's size and length penalty (§6.1)
outputs = {}  # token ids (B, T) of each model and search, the whole split as one batch
for name, translator in (("shipped", model), ("under-trained", weak)):
    outputs[f"{name}, greedy"] = greedy_decode(translator, test_src)  # §6.1's limit: source length + 50
    outputs[f"{name}, beam {BEAM}"] = beam_search(translator, test_src, beam_size=BEAM, length_penalty=ALPHA)[0][:, 0]  # the best
test_greedy = outputs["shipped, greedy"]  # (B, T)
print(f"The shipped translator: {checkpoint.step:,} training steps. The under-trained one: {weak_checkpoint.step:,} steps.")


def pieces(ids: torch.Tensor) -> list[str]:
    """Target ids of one translation → German pieces, up to <eos>."""
    return tgt_vocab.decode(ids.tolist())


decoded = {name: [pieces(row) for row in ids] for name, ids in outputs.items()}

# %% [markdown]
# ## 1. How good is it? Exact match, BLEU and chrF on the test split
#
# Chapter 08's test split holds every kind of number, in strata: 0–20, 21–99, 100–999, round
# hundreds, round thousands, round hundred-thousands, "N thousand and k", and 1,000 numbers from the
# full range. Four strata are "seen": their numbers are also in training (chapter 08, section 1).
# Chapter 08's `score_translations` gives its three measures, computed with sacrebleu:
#
# - **exact match**: the share of numbers translated exactly right, the measure that matters here;
# - **corpus BLEU** (the paper's Table 2) on the German *pieces* separated by spaces (the box below
#   shows why not on whole words);
# - **chrF**, a character n-gram F-score on the written words.

# %%
references = [t for _, t in task.test]  # German pieces
columns = {"exact_match": "exact match %", "bleu": "BLEU (pieces)", "chrf": "chrF (words)"}
results = {name: score_translations(hyps, task.test, task) for name, hyps in decoded.items()}  # chapter 08's scores
print(f"{len(references)} test numbers")
print(f"{'':22}" + "".join(f"{title:>16}" for title in columns.values()))
for name, row in results.items():
    print(f"{name:22}" + "".join(f"{row[key]:16.2f}" for key in columns))

# %% [markdown]
# The shipped model translates every test number exactly, with either search. The under-trained
# model shows why one reports more than one score: its three scores disagree. It gets about one
# number in five wrong, yet its BLEU and chrF stay above 90. A wrong number usually has most of its
# pieces right, and BLEU and chrF give credit for every piece or character it shares with the
# reference; exact match gives none. For numbers, only exact match answers the question we ask: is
# the translation right? For sentences, where several translations can be right, the partial credit
# is the point (chapter 12).
#
# > **Common mistake — BLEU on whole words.** BLEU multiplies the precisions of runs of one to four
# > words (a geometric mean). A German number is written as one word, so its translation has no run
# > of two, three or four words at all: those precisions are 0/0, undefined. Corpus BLEU in
# > sacrebleu then stops counting and leaves them at 0, and a geometric mean with a 0 in it is 0,
# > even for a perfect translation. Here are the references scored against themselves:

# %%
written = [german_text(r) for r in references]  # one word per number: "dreihundertzweiundvierzig"
spaced = [" ".join(r) for r in references]  # the pieces: "drei hundert zwei und vierzig"
on_words, on_pieces = sacrebleu.corpus_bleu(written, [written]), sacrebleu.corpus_bleu(spaced, [spaced], tokenize="none")
print(f"on written words: BLEU {on_words.score:.1f}; n-grams to count, of 1 to 4 words: {on_words.totals}")
print(f"on German pieces: BLEU {on_pieces.score:.1f}; n-grams to count, of 1 to 4 pieces: {on_pieces.totals}")

# %% [markdown]
# A score of 0 for a perfect translator is not a bad model; it is the wrong unit. Before you trust a
# metric, score the references against themselves.
#
# The overall score of a split says little about the rare kinds of number. Here it is per stratum:

# %%
# strata_scores scores translations already made
columns = ["shipped, greedy", "under-trained, greedy", f"under-trained, beam {BEAM}"]
per_stratum = {name: strata_scores(task, "test", decoded[name]) for name in columns}
print(strata_table(*per_stratum.values(), names=["shipped %", "under-trained %", f"under-trained, beam {BEAM} %"]))

# %% [markdown]
# The shipped model is right in every stratum. The under-trained model's overall score hid a
# collapse: it gets almost none of the numbers from 100 to 999 right, and not a third of 21–99, a
# stratum whose every number it saw in training. A random test split would hide both, since almost
# all its numbers have six digits. Beam search repairs a few (section 3 sorts out why), but the
# collapses stay.
#
# *How* does it fail? `kind_of_error` sorts a wrong translation by the first piece that differs
# from the reference: the answer **goes on** after the whole correct number, **stops early** inside
# it, or writes a **wrong piece**. Counted per stratum, with an example of its most common kind:

# %%
def kind_of_error(hypothesis: list[str], reference: list[str]) -> str:
    """How a wrong translation differs from the reference (German pieces)."""
    if hypothesis[: len(reference)] == reference:
        return "goes on"
    if reference[: len(hypothesis)] == hypothesis:
        return "stops early"
    return "wrong piece"


KINDS = ("goes on", "stops early", "wrong piece")
test_numbers, weak_greedy = task.info["numbers"]["test"], decoded["under-trained, greedy"]
print(f"{'stratum':24}" + "".join(f"{kind:>12}" for kind in KINDS) + "   an example of the most common kind")
for stratum, members in task.info["strata"]["test"].items():
    members = set(members)
    wrong = [i for i, n in enumerate(test_numbers) if n in members and weak_greedy[i] != references[i]]
    kinds_here = [kind_of_error(weak_greedy[i], references[i]) for i in wrong]
    counts = [kinds_here.count(kind) for kind in KINDS]
    common = KINDS[counts.index(max(counts))]  # ties: the first in KINDS
    example = next((i for i, kind in zip(wrong, kinds_here, strict=True) if kind == common), None)
    first = f"{test_numbers[example]:,} → {german_text(weak_greedy[example])}" if wrong else ""
    print(f"{stratum:24}" + "".join(f"{count:12}" for count in counts) + f"   {first}")

# %% [markdown]
# The strata fail in three ways. From 100 to 999 the model **goes on** as if a thousands group
# followed (999 becomes *…neunundneunzigtausendneun*); so do most of its wrong round thousands and
# 0–20. Most training numbers have six digits, so their targets mostly follow the first three
# digits with *tausend*. Only the source says when the number ends; this model has not yet learnt to
# read it, and beam search rescues few outside 0–20 (the strata table above). From 21 to 99 it mostly **stops early**,
# after the units word: 21 becomes *ein*. In the full range most of its errors are **wrong pieces**.
# The shipped model, trained longer, fixed them all.

# %% [markdown]
# ## 2. Probing: every unseen number of a kind
#
# Section 1 found the failures in the strata of the test split. But the split holds a sample of
# each held-out stratum. Where the under-trained model fails on most of a sample, as from 100 to
# 999, the sample already tells. Where it gets most of a sample right, a rare mistake can hide. So
# we probe both models with every number of two such kinds that training did not see, the test
# split's included: the round thousands ("forty-seven thousand"), and every "N thousand and k"
# from 10,001 to 99,009 whose k is one digit ("thirty thousand and four").

# %%
train_numbers = set(task.info["numbers"]["train"])
round_thousands = [n for n in range(1000, 1_000_000, 1000) if n not in train_numbers]
and_one_digit = [n for n in range(10_000, 100_000) if 0 < n % 1000 < 10 and n not in train_numbers]
probe = round_thousands + and_one_digit
probe_src = pad_sequences([src_vocab.encode(number_pair(n)[0]) for n in probe], src_vocab.pad_id)  # (B, S)
probe_refs = [number_pair(n)[1] for n in probe]
print(f"{len(round_thousands)} round thousands and {len(and_one_digit)} numbers from {and_one_digit[0]:,} "
      f"to {and_one_digit[-1]:,}, none of them seen in training")
probed = {}  # model → (its translations, the indices of the wrong ones)
for name, translator in (("shipped", model), ("under-trained", weak)):
    found = [pieces(row) for row in greedy_decode(translator, probe_src)]
    wrong = [i for i, hypothesis in enumerate(found) if hypothesis != probe_refs[i]]
    probed[name] = found, wrong
    counts = [sum(kind_of_error(found[i], probe_refs[i]) == kind for i in wrong) for kind in KINDS]
    per_kind = ", ".join(f"{n} {kind}" for n, kind in zip(counts, KINDS, strict=True))
    print(f"{name}: {sum(i < len(round_thousands) for i in wrong)} round thousands and "
          f"{sum(i >= len(round_thousands) for i in wrong)} 'thousand and k' wrong ({per_kind})")
weak_found, weak_wrong = probed["under-trained"]
for i in [i for i in weak_wrong if probe[i] % 1000][:6]:  # the under-trained model's first "… thousand and k"
    print(f"    {probe[i]:>7,}  {german_text(weak_found[i]):32} expected {german_text(probe_refs[i])}")

# %% [markdown]
# The shipped model gets every number of the probe right. The under-trained model gets a third of
# the round thousands wrong, and two in five of the "thousand and k". The list, its first six errors of the "thousand and k"
# kind, shows two kinds of error: *ein* where German ends a number with *eins*, and a word of the
# thousands written again at the end (15,001 becomes *fünfzehntausendfünfzehn*). Six lines show
# that these errors exist, not how common they are.

# %% [markdown]
# ## 3. Search errors and model errors, side by side
#
# Sections 1 and 2 showed where the under-trained model fails and how. Now, why. Every wrong
# translation has a cause: the search, or the model. Which one decides what to change.
#
# Write $\hat Y$ for what a search returned for the input $X$, and $Y^*$ for the correct translation.
# Write $s(Y) = \log P(Y \mid X) / lp(Y)$ for the score beam search ranks by (chapter 09, section 3, α = 0.6).
# Greedy decoding is beam search with $k = 1$. It never compares outputs of different lengths, so
# for it the penalty changes nothing; we still judge its output by $s$.
# When $\hat Y \neq Y^*$, the error is
#
# - a **search error** if $s(Y^*) > s(\hat Y)$. The model prefers the correct translation, and the
#   search did not find it. The search is to blame, not the model: a wider beam or a longer output
#   limit can help, at the price of decoding time;
# - a **model error** if $s(Y^*) < s(\hat Y)$. The model itself prefers the wrong translation, so a
#   perfect search would return a wrong translation too. No wider beam or longer limit helps. The
#   model must change: more training steps, more (or better chosen) data, a bigger model.
#
# The verdicts depend on α. The penalty divides a long output's log-probability by more, so under
# plain $\log P$ (α = 0, the score of Stahlberg and Byrne, cited below) some could change.
#
# `score_sequences` gives both scores. It runs the model once with teacher forcing on a translation
# we supply and adds up the log-probabilities of its tokens; with `length_penalty=0.6` it divides by
# $lp(Y)$. We sort every wrong translation of the under-trained model from section 1, greedy and
# beam search alike.

# %%
reference_ids = pad_sequences([tgt_vocab.encode(t, add_eos=True) for t in references], tgt_vocab.pad_id)  # (B, T*)
beam = f"beam {BEAM}"
weak_outputs = {name: outputs[f"under-trained, {name}"] for name in ("greedy", beam)}  # section 1's (B, T)
candidates = {"reference": reference_ids, **weak_outputs}
score = {name: score_sequences(weak, test_src, ids, ALPHA) for name, ids in candidates.items()}  # (B,) s(Y)
weak_decoded = {name: [pieces(row) for row in ids] for name, ids in weak_outputs.items()}


def error_kinds(found: list[list[str]], found_score: torch.Tensor, reference_score: torch.Tensor) -> list[str]:
    """Per test number: "right", "search error" (the model scores the reference higher than what the
    search found) or "model error" (the model scores the wrong translation it found higher)."""
    kinds = []
    for hypothesis, reference, s_found, s_reference in zip(
        found, references, found_score.tolist(), reference_score.tolist(), strict=True
    ):
        if hypothesis == reference:
            kinds.append("right")
        else:
            kinds.append("search error" if s_reference > s_found else "model error")
    return kinds


kinds = {name: error_kinds(weak_decoded[name], score[name], score["reference"]) for name in weak_outputs}
disagree = [i for i, (g, b) in enumerate(zip(*weak_decoded.values(), strict=True)) if g != b]
repaired = [i for i in disagree if kinds["greedy"][i] != "right" and kinds[beam][i] == "right"]
search_errors_repaired = sum(kinds["greedy"][i] == "search error" for i in repaired)
broken = [i for i in disagree if kinds["greedy"][i] == "right" and kinds[beam][i] != "right"]

# %% [markdown]
# How many of the test numbers fall into each kind, for each search. Beam search gains fewer right
# answers than it repairs: the difference is the few it breaks, which greedy had right. The last
# line counts both.

# %% tags=["nbval-ignore-output"]
print(f"{len(references)} test numbers {'right':>8} {'search errors':>14} {'model errors':>13}")
for name, found in kinds.items():
    print(f"{name:>17} {found.count('right'):8} {found.count('search error'):14} {found.count('model error'):13}")
print(f"greedy and beam search disagree on {len(disagree)}; beam search repairs {len(repaired)} of greedy's errors "
      f"({search_errors_repaired} of its {kinds['greedy'].count('search error')} search errors) "
      f"and breaks {len(broken)} that greedy had right")

# %% tags=["hide-cell"]
wrong_after_beam = len(references) - kinds[beam].count("right")
expect_between("exact match of the under-trained model, greedy", 100 * kinds["greedy"].count("right") / len(references), 70, 90, "%")
expect_at_least("greedy's wrong translations that are search errors", kinds["greedy"].count("search error"), 1)
expect_at_least("greedy's wrong translations that are model errors", kinds["greedy"].count("model error"), 1)
expect_at_least("test numbers where greedy and beam search disagree", len(disagree), 1)
expect_at_least("greedy's errors that beam search repairs", len(repaired), 1)
expect_at_least("greedy's search errors that beam search repairs",
                100 * search_errors_repaired / kinds["greedy"].count("search error"), 75, "%")
expect_at_most("beam search's search errors, as a share of greedy's",
               100 * kinds[beam].count("search error") / kinds["greedy"].count("search error"), 25, "%")
expect_at_least("model errors among beam search's wrong translations",
                100 * kinds[beam].count("model error") / wrong_after_beam, 90, "%")

# %% [markdown]
# The first test numbers where each case occurs: the input, the correct translation and the two
# searches' outputs (German pieces). Each has its log-probability $\log P(Y \mid X)$ and its score
# $s(Y)$ under the under-trained model.

# %% tags=["nbval-ignore-output"]
first = {  # the first test number of each case (one number may stand for several)
    "greedy: search error": kinds["greedy"].index("search error"),
    "greedy: model error": kinds["greedy"].index("model error"),
    "greedy and beam search disagree": disagree[0],
    "beam search repairs greedy's error": repaired[0],
}


def shortened(words: list[str], width: int = 44) -> str:
    text = " ".join(words)
    return text if len(text) <= width else text[: width - 1] + "…"


shown = torch.tensor(sorted(set(first.values())))  # (n,) the test numbers in the table
log_p = {name: score_sequences(weak, test_src[shown], ids[shown]) for name, ids in candidates.items()}  # (n,)
for row, i in enumerate(shown.tolist()):
    print(f"'{' '.join(task.test[i][0])}' ({'; '.join(case for case, j in first.items() if j == i)})")
    print(f"    {'':10} {'translation (German pieces)':44} {'log P':>7} {'s(Y)':>7}")
    for name in candidates:
        words = references[i] if name == "reference" else weak_decoded[name][i]
        kind = "" if name == "reference" else kinds[name][i]
        print(f"    {name:10} {shortened(words):44} {log_p[name][row]:7.2f} {score[name][i]:7.2f}  {kind}".rstrip())

# %% tags=["hide-cell"]
search_error, model_error = first["greedy: search error"], first["greedy: model error"]
expect("the first search error: the model scores the reference above greedy's output",
       score["reference"][search_error] > score["greedy"][search_error],
       f"{score['reference'][search_error]:.2f} > {score['greedy'][search_error]:.2f}")
expect("the first model error: the model scores greedy's wrong output above the reference",
       score["greedy"][model_error] > score["reference"][model_error],
       f"{score['greedy'][model_error]:.2f} > {score['reference'][model_error]:.2f}")

# %% [markdown]
# Read the two kinds against each other:
#
# - A **search error** is chapter 09's worked example (its section 2) on a real model. At some step
#   greedy decoding took the piece that looked best there, and the rest of the translation could not
#   recover: it may go on past the number, stop early, or take a wrong piece. Yet the model scores the
#   correct translation higher. Beam search keeps the runners-up alive. It repairs most of greedy's search errors and
#   makes few of its own (this section's first table counts both). A search error does not promise that a better search
#   finds the *correct* translation, though. It only says that the model likes something better than
#   what was found. Beam search may find a translation that scores higher still and is wrong: a model
#   error that the search error was hiding. That is the 'zero' above: greedy's *sieben tausend
#   tausend* is a search error, and beam search's *sieben tausend siebzig* a model error.
# - A **model error** is where the model prefers its wrong translation to the correct one. A wider
#   beam only finds more of what the model wants. Almost every error left after beam search is of
#   this kind (checked above). So on this model the next step is not a better search but more
#   training. The shipped model is the same recipe run to 3,000 steps, and on the same test split it
#   makes no errors at all (section 1).
#
# This is the sorting to do on any translator before tuning it: score the correct translation next
# to the one the search found. If the model prefers the correct one, spend effort on the search (beam
# size, length penalty). If it prefers its own, spend it on the model: here, more training on the
# same data was enough. Real translation models have plenty of model errors too. Stahlberg and Byrne (2019) searched exactly and found that,
# for many sentences, the translation their model scores highest of all is the empty one. No search
# can repair that. A length penalty works around it; it does not remove it.
#
# *Try it:* set `BEAM = 8` in the cell that loads the two checkpoints, and run the chapter again.
# If the model errors stay while the search errors vanish, the search did not hold this model back.

# %% [markdown]
# ## 4. What training built: every head of every attention
#
# The scores say that the shipped model is right. What did it learn, to be right? We open it and
# read its attention weights. A map shows where a working model's attention goes; it does not by
# itself explain an error (Jain and Wallace 2019, in the further reading).
# `attention_maps` runs the model once over a translation, with teacher forcing on its own output.
# It returns the weights of the three kinds of attention, per layer and head: `"encoder"`
# (B, H, S, S), `"decoder"` (B, H, T, T) and `"cross"` (B, H, T, S), each stacked over the layers.
# Chapter 04 built heads by hand, each following one rule. Here are the heads this model learnt by
# itself. This section counts layers and heads from 1, as the figures' titles do: layer 1 is the
# lower of the two.
#
# **Cross-attention** first. Row $t$ is where the decoder looked in the English source when it wrote
# the $t$-th German piece. German puts the units before the tens (*sieben-und-sechzig* for
# "sixty-seven"). So a head that follows the source word by word must jump back and forth.
#
# <details><summary>The figure in words</summary>
#
# Eight heatmaps stand in two rows, one row per layer and one column per
# head. In each, the rows are the German pieces being written, one per step, ending with `<eos>`.
# The columns are the eleven English source words, from "three" to "seven". A cell's shade is the
# attention weight, from white at 0 to dark blue at 1. A row with one dark cell reads one English
# word; a row of pale cells spreads over several. The title gives the chapter's reading: in layer 2
# the heads mostly read the English word of the piece being written, out of order.
#
# </details>

# %%
text = "three hundred and forty-two thousand five hundred and sixty-seven"
src = pad_sequences([src_vocab.encode(english_tokens(text))], src_vocab.pad_id)  # (1, S)
hyp = greedy_decode(model, src)  # (1, T)
maps = attention_maps(model, src, hyp)  # {"encoder": (N, 1, H, S, S), "decoder": (N, 1, H, T, T), "cross": …}
source_words, target_pieces = english_tokens(text), pieces(hyp[0]) + ["<eos>"]
decoder_inputs = ["<bos>", *target_pieces[:-1]]  # what the decoder reads at each position
print({kind: tuple(m.shape) for kind, m in maps.items()})
plot_attention_heads(maps["cross"][:, 0], target_pieces, source_words,
                     "Cross-attention: in layer 2 the heads mostly read the English word of the piece being written, "
                     "out of order ('two' before 'forty')",
                     query_axis="German piece being written", key_axis="English source word")

# %% [markdown]
# Layer 1 is a mixture. Some heads spread over several words; some return to one word for many
# pieces (layer 1, head 4 keeps reading "thousand"). In layer 2 the heads
# are nearly one-hot and mostly agree with each other. To write *zwei* they read "two"; for
# *vierzig* they go back to "forty"; for *tausend*, three heads of four go on to "thousand". For
# *sieben und sechzig* they read "seven", then "sixty". That is the reordering the task needs, done
# by attention alone.
#
# **Encoder self-attention**: each English word gathers information from the other English words.
#
# <details><summary>The figure in words</summary>
#
# Eight heatmaps, two rows for the layers and four columns for the heads,
# show the encoder's self-attention. Both axes list the eleven English words, from "three" to
# "seven". Each row is a word's query, each column a word it may read. The shade runs from white at
# 0 to dark blue at 1. The title gives the chapter's reading of layer 2's second head, in this one
# sentence: most words seem to look at a word of their own part of the number ("thousand",
# "hundred", "sixty").
#
# </details>

# %%
plot_attention_heads(maps["encoder"][:, 0], source_words, source_words,
                     "Encoder self-attention, one sentence: in layer 2, head 2, most words seem to look at a word "
                     "of their own part of the number ('thousand', 'hundred', 'sixty')",
                     query_axis="English word (query)", key_axis="English word (key)")

# %% [markdown]
# In the encoder, layer 2's second head mostly reads within a word's own part of the number:
# "forty" and "two" look at "thousand", "five" at "hundred", and "hundred", "and", "sixty", "seven"
# at "sixty".
#
# **Decoder self-attention**: each position looks back over the German pieces written so far.
#
# <details><summary>The figure in words</summary>
#
# Eight heatmaps, two rows for the layers and four columns for the heads,
# show the decoder's self-attention. Both axes list the decoder's inputs: `<bos>`, then the German
# pieces written so far. Each row is a position's query, each column a position it may read, shaded
# from white at 0 to dark blue at 1. The causal mask leaves every cell above the diagonal white: no
# position reads a later one. The title gives the chapter's reading: heads look back at the last
# "hundert" or "tausend", or at their own input (the piece just written).
#
# </details>

# %%
plot_attention_heads(maps["decoder"][:, 0], decoder_inputs, decoder_inputs,
                     "Decoder self-attention: heads look back at the last 'hundert' or 'tausend', or at their own "
                     "input (the piece just written)",
                     query_axis="decoder input (query)", key_axis="decoder input (key)")

# %% [markdown]
# In the decoder, heads return to the last *tausend*, the last *hundert*, or the piece just written.
# These readings come from one sentence. The next figure measures one property of the
# cross-attention heads over the whole test split: how sharp they are.
#
# How sharp is each head? Take the *entropy* of a head's row of cross-attention weights. It says how
# many source words the row spreads over: 0 when it reads one word, $\log 2 \approx 0.69$ for two
# words shared equally, $\log S$ for all $S$ words alike. One box per head shows it for every German
# piece of every test number.
#
# <details><summary>The figure in words</summary>
#
# A box plot has one box per cross-attention head, eight in all, from "layer
# 1, head 1" to "layer 2, head 4". The vertical axis is the entropy of the head's weights in nats,
# for every German piece of every test number. Zero means that the piece read a single English word.
# A grey dotted line marks log 2, two words shared equally. Dots above a box's whiskers are single
# pieces that spread more than most. The title says that layer 2's heads mostly read one word;
# their dots are the few pieces where they spread more.
#
# </details>

# %%
test_maps = attention_maps(model, test_src, test_greedy)["cross"]  # (N, B, H, T, S)
entropy = -(test_maps * test_maps.clamp_min(1e-12).log()).sum(-1)  # (N, B, H, T)
test_in = torch.cat([torch.full_like(test_greedy[:, :1], config.bos_id), test_greedy[:, :-1]], dim=1)  # (B, T)
is_real = test_in != config.pad_id  # (B, T): the positions that read a real token
heads, values = [], []
for layer in range(entropy.shape[0]):
    for head in range(entropy.shape[2]):
        row = entropy[layer, :, head][is_real]  # every real position of every test number
        heads += [f"layer {layer + 1}\nhead {head + 1}"] * len(row)
        values += row.tolist()
fig, ax = plt.subplots(figsize=(11, 3.6))
sns.boxplot(x=heads, y=values, ax=ax, color="tab:blue", fliersize=1)
ax.axhline(math.log(2), color="grey", ls=":", label="two words shared equally (log 2)")
ax.set(ylabel="entropy of the weights (nats)",
       title="Cross-attention heads over the whole test split: layer 2's heads mostly read one word")
ax.legend(loc="upper right", fontsize=8)
fig.tight_layout()
plt.show()
print("each head's entropy (nats): median and upper quartile")
for layer in range(entropy.shape[0]):
    quartiles = [entropy[layer, :, h][is_real].quantile(torch.tensor([0.5, 0.75])) for h in range(entropy.shape[2])]
    print(f"layer {layer + 1}:", " | ".join(f"head {h + 1} {m:.2f}, {u:.2f}" for h, (m, u) in enumerate(quartiles)))

# %% [markdown]
# Layer 2 is sharp in every head. All four of its medians are 0, one word per piece, and every
# upper quartile is 0.1 or less (to two decimals). Layer 1 is mixed. Its first head spreads (a
# median of 0.21, an upper quartile of 0.53), and so, less, does its third (0.26); its second and
# fourth are as sharp as layer 2.
# Sharp is not the same as right, though: the entropy measures how sharp a head is, not which word
# it reads.
#
# **An error in the maps.** Section 2's under-trained model writes 15,001 as
# *fünfzehntausendfünfzehn* and 10,001 as *zehntausendein*. The cell prints which word each head
# of layer 2 reads most at the last piece, and marks a head "spread" whose largest weight there is
# under 0.7:

# %%
def last_piece_read(translator: torch.nn.Module, text: str) -> tuple[list[str], list[str], torch.Tensor]:
    """The pieces a model writes for ``text``, the source word each layer-2 head reads most at the
    last piece (marked "spread" where that weight is under 0.7), and layer 2's cross-attention (H, T, S)."""
    words = english_tokens(text)
    src = pad_sequences([src_vocab.encode(words)], src_vocab.pad_id)  # (1, S)
    written = greedy_decode(translator, src)  # (1, T)
    cross = attention_maps(translator, src, written)["cross"][-1, 0]  # (H, T, S): the last layer
    last = len(pieces(written[0])) - 1  # the row of the last piece (the next row writes <eos>)
    top = cross[:, last, : len(words)].max(dim=-1)  # (H,): each head's largest weight, and its word
    heads = [words[i] + (" (spread)" if weight < 0.7 else "")
             for weight, i in zip(top.values.tolist(), top.indices.tolist(), strict=True)]
    return pieces(written[0]), heads, cross


read = {}  # (number, model) → what last_piece_read returns
for number in ("fifteen thousand and one", "ten thousand and one"):
    for name, translator in (("shipped", model), ("under-trained", weak)):
        read[number, name] = last_piece_read(translator, number)
        written, heads_read, _ = read[number, name]
        print(f"{number:25} {name:14} writes {written[-1]:9} its heads read: {', '.join(heads_read)}")

# %% tags=["hide-cell"]
expect("15,001: the shipped model's four heads all read 'one' while it writes eins",
       read["fifteen thousand and one", "shipped"][1] == ["one"] * 4, str(read["fifteen thousand and one", "shipped"][1]))
misread = read["fifteen thousand and one", "under-trained"][1]
expect("15,001: the under-trained model's heads disagree where it writes fünfzehn again: one reads 'fifteen', two spread",
       "fifteen" in misread and sum(word.endswith("(spread)") for word in misread) == 2, str(misread))
expect("10,001: the under-trained model's heads all read 'one' while it writes ein",
       read["ten thousand and one", "under-trained"][1] == ["one"] * 4, str(read["ten thousand and one", "under-trained"][1]))

# %% [markdown]
# Where the shipped model writes *eins*, all four heads read "one". Where the under-trained model
# writes *fünfzehn* a second time, its heads disagree: one reads "fifteen" again, and two spread
# their weight (the figure below). For
# 10,001 its heads all read "one": it found the word and missed its ending, an error no map shows.
# To find out whether an error lies with the search or the model, use the scores of section 3.
#
# <details><summary>The figure in words</summary>
#
# Eight heatmaps in two rows: layer 2's four heads of the shipped model on top, those of the
# under-trained model below, on "fifteen thousand and one". The rows are the German pieces; the
# third is labelled with both models' pieces, *eins* and *fünfzehn*. In the top row, every head's
# third row has one dark cell, under "one". In the bottom row the third rows differ: one head reads
# "one", one "fifteen", and two spread their weight over several words.
#
# </details>

# %%
(right, _, right_maps), (wrong, _, wrong_maps) = (read["fifteen thousand and one", name] for name in ("shipped", "under-trained"))
rows = [r if r == w else f"{r} | {w}" for r, w in zip([*right, "<eos>"], [*wrong, "<eos>"], strict=True)]
plot_attention_heads(torch.stack([right_maps, wrong_maps]), rows, english_tokens("fifteen thousand and one"),
                     "Layer 2 on 15,001: the shipped model's heads agree on 'one'; the under-trained model's split "
                     "where it writes 'fünfzehn' again", query_axis="German piece", key_axis="English source word",
                     layer_names=["shipped", "under-trained"], cell=0.42)

# %% [markdown]
# ## Summary
#
# - The shipped model makes no error on the test split, with either search. On the under-trained
#   model the three scores disagree: BLEU and chrF give partial credit, exact match does not.
# - A stratum per kind of number shows failures that a random split hides, and sorting the errors
#   shows how each kind fails: from 100 to 999 the answers go on, from 21 to 99 they stop early.
# - Probing every round thousand, and every five-digit "N thousand and k" with a single-digit k,
#   that training did not see finds no error on the shipped model, and over a third wrong on the under-trained one.
# - Where a model does err, score the correct translation. If the model prefers it, the error is a
#   search error, and a better search can help. If the model prefers its wrong output, it is a model
#   error, and only more training, data or capacity can help. On the same recipe stopped early, beam
#   search repairs most of greedy's search errors, and almost all the errors left are model errors.
# - `attention_maps` returns every head of the three attentions. In the trained model, layer 2's
#   cross-attention heads read one English word at a time, out of order where German needs it. The
#   entropy of a head's weights measures how sharp it is; sharp is not the same as right.
#
# **Exercises:** this chapter has no exercises of its own. It uses chapter 09's decoders
# ([exercises/ex09_decoding.ipynb](../exercises/ex09_decoding.ipynb)).

# %% [markdown]
# ## Check yourself
#
# 1. Why does this chapter score BLEU on German *pieces* rather than on whole words?
#    <details><summary>Answer</summary>
#
#    A German number is one long word, so a translated number has no run of two, three or four words: those
#    precisions are 0/0, which sacrebleu's corpus BLEU counts as 0. BLEU on whole words is then 0
#    for every translation, even a perfect one. On pieces it gives partial credit to a translation
#    with one wrong piece.
#    </details>
# 2. A head's cross-attention weights have an entropy near 0 for every piece. What does that tell
#    you, and what does it not?
#    <details><summary>Answer</summary>
#
#    Each piece reads one source word. It does not say that the word is the right one: layer 1's
#    head 4 keeps reading "thousand" while other words are translated.
#    </details>
# 3. A translation is wrong. How do you tell a search error from a model error?
#    <details><summary>Answer</summary>
#
#    Score the correct translation and the found one under the model, with the search's own score
#    $s(Y)$. If the correct one scores higher, the search missed it. Otherwise the model is wrong, and no
#    search will help.
#    </details>
# 4. After beam search, almost all of a model's errors are model errors. What do you change?
#    <details><summary>Answer</summary>
#
#    The model, not the search: train it longer, give it more (or better chosen) data, or make it
#    bigger. A wider beam only finds more of what the model already prefers. Sections 1–3's
#    under-trained model is the shipped model's own run stopped early. The same recipe, trained to the end, makes no errors
#    on the test split.
#    </details>
#
# ## Further reading
#
# - The paper: Table 2 (BLEU), §6.1 (beam search settings).
# - Papineni et al. (2002), *BLEU: a Method for Automatic Evaluation of Machine Translation*.
# - Popović (2015), *chrF: character n-gram F-score for automatic MT evaluation*.
# - Stahlberg and Byrne (2019), *On NMT Search Errors and Model Errors: Cat Got Your Tongue?*:
#   exact search shows how often the model itself prefers a bad translation.
# - Post (2018), *A Call for Clarity in Reporting BLEU Scores*: why sacreBLEU.
# - Jain and Wallace (2019), *Attention is not Explanation*: a caution when reading attention maps
#   as reasons.

# %% [markdown]
# **Next:** [Chapter 11 — Testing the paper's choices](11_testing_the_papers_choices.ipynb): with the
# model built, trained and measured, small experiments test the paper's choices.
