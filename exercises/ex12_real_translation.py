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
# # Exercises 12 — From number words to real sentences
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex12_real_translation.ipynb)
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# Companion of [chapter 12](../chapters/12_real_translation.ipynb) (paper §5.1: batches of about
# 25,000 source and target tokens, a byte-pair vocabulary shared by both languages; §6.1: the
# average of the last checkpoints).
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. In the student edition its body is a stub that raises
# `NotImplementedError`; you write the body **in the package file** (named in each exercise), not
# in this notebook. Because the chapters import the package, chapter 12 then runs on your code.
#
# After editing the file, run the exercise's check cell. It compares your function with an
# independent reference (plain Python loops for the batches, sums in float64 for the means, and
# Hugging Face's own BPE trainer for the merges) and prints one line: ✓ passed, ○ not implemented
# yet, or ✗ with the input that failed and what is wrong. The same checks run from a terminal:
#
# ```bash
# python -m transformer_course check ex12_1     # one exercise (or no id: a table of all of them)
# pytest -m ex12_1                              # the same check through pytest
# ```
#
# Each exercise also has a **try it** cell, a scratch space on small inputs. The set-up
# cell below makes the notebook pick up your edits to the package without restarting the kernel.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex12_1 | `pack(order, src_lengths, tgt_lengths, max_tokens)` in `token_batches.py` | easy |
# | ex12_2 | `average_state_dicts(states)` in `averaging.py` | medium |
# | ex12_3 | `bpe_merges(words, n_merges)` in `subwords.py` | hard |
#
# **Before you start:** chapter 12 also runs exercises of other chapters: ex01_1, ex01_2, ex02_1,
# ex02_2, ex03_1, ex03_2, ex03_3, ex04_1, ex04_2, ex04_3, ex05_1, ex05_2, ex05_3, ex06_1, ex06_2,
# ex06_3, ex08_1, ex08_2, ex08_3, ex08_4 and ex09_1. Until they are written it stops at the first of
# them, naming all those still to write.
#
# **Order:** the three are independent of each other.

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
from collections import Counter

import torch

from transformer_course.subwords import pretokenized_words
from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)
setup_chapter("12")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex12_1 — Greedy packing under a token budget (easy)
#
# **File:** `transformer_course/token_batches.py`, function `pack(order, src_lengths, tgt_lengths,
# max_tokens)`.
#
# `token_batches` shuffles the examples, sorts them by length and calls `pack` to cut that order into
# batches; then it shuffles the batches. A batch of n examples is padded to a rectangle of
# n × (its longest source) source slots and n × (its longest target) target slots, and **both**
# must stay within `max_tokens` (the paper's "approximately 25000 source tokens and 25000 target
# tokens", §5.1). Walk `order` once and fill greedily:
#
# 1. an example with more than `max_tokens` tokens on either side fits no batch: raise `ValueError`
#    naming it;
# 2. add the example to the current batch if the batch, with it, still pads to at most `max_tokens`
#    slots on both sides; otherwise close the batch and start a new one with this example;
# 3. at the end, the last batch (not full) is a batch too.
#
# - **Returns:** a list of batches, each a non-empty list of indices; one after the other they are
#   `order` itself.
# - **Watch for:** the budget is count × **longest**, not the sum of the lengths (the padding costs
#   as much as the tokens); a batch of exactly `max_tokens` slots is within the budget (`<=`); the
#   longest of the batch is not always the example just added when `order` is not sorted.

# %%
src_lengths, tgt_lengths = [2, 3, 5, 2, 4], [3, 3, 6, 2, 4]
order = sorted(range(5), key=lambda i: tgt_lengths[i])  # [3, 0, 1, 4, 2]
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* with `max_tokens = 12`, why does example 4 (4 tokens) start a new batch
# after `[3, 0, 1]`, although the three hold only 8 target tokens?
#
# YOUR ANSWER HERE

# %%
check("ex12_1")

# %% [markdown]
# ## ex12_2 — The mean of several state dicts (medium)
#
# **File:** `transformer_course/averaging.py`, function `average_state_dicts(states)`.
#
# The paper's base models are "a single model obtained by averaging the last 5 checkpoints"
# (§6.1). Return one `state_dict` whose every tensor is the element-wise mean of that tensor in
# all the `states` (the check for an empty list is already written):
#
# 1. every state must have the keys of `states[0]`, and each key the same shape and dtype in all
#    of them: otherwise raise `ValueError` saying which key (or which state) differs. These are not
#    checkpoints of one model, and a mean of them would be nonsense;
# 2. a floating-point tensor becomes the mean over the states, in its own dtype: add up in float64
#    (so the order of the states does not change the last bits), divide by their number, convert
#    back;
# 3. any other tensor (an integer counter such as BatchNorm's `num_batches_tracked`, a boolean
#    buffer) cannot be averaged: keep it if it is equal in every state, raise `ValueError` if not.
#
# - **Shapes:** N dicts of tensors with the same keys and shapes → one dict of the same keys and
#   shapes.
# - **Watch for:** use all the states, not the first two; divide by their number; an integer
#   buffer stays an integer tensor.

# %%
states = [{"w": torch.full((2,), float(k)), "steps": torch.tensor(10)} for k in (1, 2, 6)]
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* why can two models trained separately, from different seeds, not be
# averaged this way, even though their `state_dict`s have the same keys and shapes?
#
# YOUR ANSWER HERE

# %%
check("ex12_2")

# %% [markdown]
# ## ex12_3 — Byte-pair merges from word counts (hard)
#
# **File:** `transformer_course/subwords.py`, function `bpe_merges(words, n_merges)`.
#
# Chapter 12 trains its vocabulary with Hugging Face's `tokenizers`. Here you write the training
# itself, and your merges must be **the library's**, merge for merge. The input is how often each
# word occurs: `pretokenized_words(texts)` cuts the texts exactly as the library does before BPE
# ("▁" marks a word start, punctuation is split off), and BPE never merges across those words.
#
# 1. each word starts as the list of its characters;
# 2. count every pair of neighbouring symbols in every word, and add the **word's count** for each
#    occurrence ("▁aaa" seen 5 times holds the pair ("a", "a") twice: 10);
# 3. the most frequent pair is the next merge. A tie goes the library's way: to the pair whose left
#    symbol is **older**, then whose right symbol is older. Single characters are the oldest, in
#    code-point order (`ord`); a merged symbol is as old as the first merge that made its string;
# 4. in every word, replace each occurrence of the pair, from left to right, by one symbol (the two
#    strings joined): "a a a" becomes "aa a";
# 5. repeat until you have `n_merges` merges, or no word has two symbols left.
#
# - **Returns:** the merges in the order learned, a list of (left, right) tuples of strings.
# - **Watch for:** weight by the word's count, not once per word; merge every occurrence in a word,
#   not only the first; count overlapping pairs ("aaa" holds ("a", "a") twice); ties by age, not
#   by the alphabet or by whichever pair you counted first.

# %%
words = pretokenized_words(["The dog sees the dog.", "Der Hund sieht den Hund."])
print(words)
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* why must BPE count a pair once per *occurrence* of a word in the text, and
# what would the vocabulary look like if it counted each distinct word once?
#
# YOUR ANSWER HERE

# %%
check("ex12_3")

# %% [markdown]
# When every check above passes, run [chapter 12](../chapters/12_real_translation.ipynb) again: its
# token batches, averaged checkpoints and the merges it compares with the library's then come from
# your code. Next: [exercises 13](ex13_modern_language_models.ipynb), a modern language model.
