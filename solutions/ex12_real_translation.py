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
### BEGIN SOLUTION
batches, batch = [], []
for i in order:
    grown = [*batch, i]
    if batch and any(len(grown) * max(lengths[j] for j in grown) > 12 for lengths in (src_lengths, tgt_lengths)):
        batches.append(batch)
        grown = [i]
    batch = grown
print(batches + [batch])  # [[3, 0, 1], [4, 2]]: 3 × 3 = 9 slots, then 2 × 6 = 12
### END SOLUTION

# %% [markdown]
# *In your own words:* with `max_tokens = 12`, why does example 4 (4 tokens) start a new batch
# after `[3, 0, 1]`, although the three hold only 8 target tokens?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# batches: list[list[int]] = []
# batch: list[int] = []
# longest_src = longest_tgt = 0
# for i in order:
#     s, t = src_lengths[i], tgt_lengths[i]
#     if max(s, t) > max_tokens:
#         raise ValueError(
#             f"example {i} has {s} source and {t} target tokens, more than max_tokens={max_tokens}: "
#             "raise max_tokens or drop long examples first"
#         )
#     grown = len(batch) + 1
#     if batch and (grown * max(longest_src, s) > max_tokens or grown * max(longest_tgt, t) > max_tokens):
#         batches.append(batch)
#         batch, longest_src, longest_tgt = [], 0, 0
#     batch.append(i)
#     longest_src, longest_tgt = max(longest_src, s), max(longest_tgt, t)
# if batch:
#     batches.append(batch)  # the last batch, not full
# ```
#
# With example 4 the batch would be four rows of four target slots: 16 slots, 8 of them padding,
# over the budget of 12. The budget counts what the GPU computes, the padded rectangle, not the
# real tokens. Keeping the running longest of each side makes one pass enough; because the order is
# sorted by length, the new example is almost always the longest, and the batches are nearly
# free of padding.
# ### END SOLUTION

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
### BEGIN SOLUTION
mean_w = torch.stack([s["w"].double() for s in states]).mean(dim=0).to(states[0]["w"].dtype)  # (2,)
print(mean_w, states[0]["steps"])  # tensor([3., 3.]) and the unchanged counter
### END SOLUTION

# %% [markdown]
# *In your own words:* why can two models trained separately, from different seeds, not be
# averaged this way, even though their `state_dict`s have the same keys and shapes?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# keys = list(states[0])
# for i, state in enumerate(states[1:], start=1):
#     if list(state) != keys:
#         differ = sorted(set(state) ^ set(keys))
#         raise ValueError(f"state {i} has other keys than state 0 (e.g. {differ[:3]}): not the same architecture")
# averaged = {}
# for key in keys:
#     tensors = [state[key] for state in states]
#     first = tensors[0]
#     for i, tensor in enumerate(tensors[1:], start=1):
#         if tensor.shape != first.shape or tensor.dtype != first.dtype:
#             raise ValueError(
#                 f"{key}: state {i} has {tuple(tensor.shape)} {tensor.dtype}, state 0 has "
#                 f"{tuple(first.shape)} {first.dtype}"
#             )
#     if first.is_floating_point():
#         total = torch.stack([t.detach().double() for t in tensors]).sum(dim=0)  # (*shape) in float64
#         averaged[key] = (total / len(tensors)).to(first.dtype)
#     else:
#         if any(not torch.equal(t, first) for t in tensors[1:]):
#             raise ValueError(f"{key} is not floating point and differs between the states: cannot average it")
#         averaged[key] = first.clone()
# ```
#
# A network's hidden units can be put in any order: swap two rows of one layer's weights and the
# matching columns of the next, and the function is the same. Two separate runs end in such
# different orders (and in different valleys), so unit 7 of one has nothing to do with unit 7 of the
# other, and their mean is neither network. Checkpoints of one run, late in training, share their
# units' order and lie in one valley: there the mean is a point near its bottom.
# ### END SOLUTION

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
### BEGIN SOLUTION
pairs = Counter()
for word, count in words.items():
    for left, right in zip(word[:-1], word[1:], strict=True):
        pairs[left, right] += count
print(sorted(pairs.items(), key=lambda item: (-item[1], ord(item[0][0]), ord(item[0][1])))[:4])  # the first merge leads
### END SOLUTION

# %% [markdown]
# *In your own words:* why must BPE count a pair once per *occurrence* of a word in the text, and
# what would the vocabulary look like if it counted each distinct word once?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# segmented = {word: list(word) for word in words}  # each word as its current symbols
# age = {char: ord(char) for word in words for char in word}  # characters first, in code-point order
# merges: list[tuple[str, str]] = []
# while len(merges) < n_merges:
#     counts: dict[tuple[str, str], int] = {}
#     for word, symbols in segmented.items():
#         for pair in zip(symbols[:-1], symbols[1:], strict=True):  # overlapping: "aaa" has ("a", "a") twice
#             counts[pair] = counts.get(pair, 0) + words[word]
#     if not counts:
#         break
#     best = min(counts, key=lambda pair: (-counts[pair], age[pair[0]], age[pair[1]]))
#     joined = best[0] + best[1]
#     age.setdefault(joined, 0x110000 + len(merges))  # younger than every character
#     merges.append(best)
#     for symbols in segmented.values():
#         i = 0
#         while i < len(symbols) - 1:
#             if (symbols[i], symbols[i + 1]) == best:
#                 symbols[i : i + 2] = [joined]
#             i += 1
# ```
#
# The vocabulary is there to make the *text* short: a merge saves one token for every time the
# pair occurs in the text, so the most useful merge is the pair that occurs most often, counted
# with the words' frequencies. Counted once per distinct word, "▁der" (thousands of times) would
# weigh as much as a noun seen twice; the vocabulary would fill with pieces of rare words, and the
# frequent ones would stay cut into several tokens.
#
# The tie rule is how the library orders pairs (by the ids of their symbols, and ids are given to
# characters in code-point order, then to merged symbols as they are made). It changes no count,
# only which of two equally useful merges comes first, but one different merge changes every count
# after it, so agreeing merge for merge needs the same rule.
# ### END SOLUTION

# %%
check("ex12_3")

# %% [markdown]
# When every check above passes, run [chapter 12](../chapters/12_real_translation.ipynb) again: its
# token batches, averaged checkpoints and the merges it compares with the library's then come from
# your code. Next: [exercises 13](ex13_modern_language_models.ipynb), a modern language model.
