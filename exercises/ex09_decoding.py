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
# # Exercises 09 — Decoding
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex09_decoding.ipynb)
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# Companion of [chapter 09](../chapters/09_decoding.ipynb) (paper §6.1: beam search with beam size 4
# and length penalty α = 0.6).
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. In the student edition its body is a stub that raises
# `NotImplementedError`; you write the body **in the package file** (here
# `transformer_course/decoding.py`), not in this notebook. Because the chapters import the
# package, chapter 09 then translates with your code.
#
# After editing the file, run the exercise's check cell. It compares your function with an
# independent reference (plain Python loops over rows and candidates, small tables of
# log-probabilities worked out by hand) and prints one line: ✓ passed, ○ not implemented yet, or
# ✗ with the input that failed and what is wrong. The same checks run from a terminal:
#
# ```bash
# python -m transformer_course check ex09_1     # one exercise (or no id: a table of all of them)
# pytest -m ex09_1                              # the same check through pytest
# ```
#
# Each exercise also has a **try it** cell, a scratch space on small tensors. The set-up
# cell below makes the notebook pick up your edits to the package without restarting the kernel.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex09_1 | `greedy_step(logits, finished, eos_id, pad_id)` in `decoding.py` | easy |
# | ex09_2 | `top_p_filter(logits, top_p)` in `decoding.py` | medium |
# | ex09_3 | `beam_step(scores, log_probs, finished, lengths, eos_id, pad_id, alpha)` in `decoding.py` | hard |
#
# **Before you start:** chapter 09 also runs exercises of other chapters: ex01_1, ex01_2, ex02_1,
# ex02_2, ex03_1, ex03_2, ex03_3, ex04_1, ex04_2, ex04_3, ex05_1, ex05_2, ex05_3, ex06_1, ex06_2 and
# ex06_3. Until they are written it stops at the first of them, naming all those still to write.
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
import torch

from transformer_course.decoding import gnmt_length_penalty
from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)
PAD, BOS, EOS = 0, 1, 2  # the special ids of every vocabulary of the course
setup_chapter("09")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex09_1 — One greedy decoding step (easy)
#
# **File:** `transformer_course/decoding.py`, function `greedy_step(logits, finished, eos_id,
# pad_id)`.
#
# `greedy_decode` calls this once per generated position, for the whole batch at once. Return the
# next token of every row and the updated `finished` flags:
#
# 1. the next token of a row is the index of its largest logit;
# 2. a row that had **already** finished (it produced `<eos>` at an earlier step) gets `pad_id`
#    instead: nothing is generated after `<eos>`;
# 3. a row is finished after this step if it was before, or if its new token is `eos_id`.
#
# - **Shapes:** `logits` (B, V) scores of the next token, `finished` (B,) bool →
#   (next_tokens (B,) long, finished (B,) bool).
# - **Watch for:** the arg-max axis (the vocabulary, the last one); use the `eos_id` and `pad_id`
#   you are given, not 2 and 0; return a new `finished` tensor instead of changing the argument in
#   place (`finished | …`, not `finished |= …`).

# %%
logits = torch.tensor([[0.1, 0.2, 3.0, 0.5], [0.3, 0.1, 0.2, 2.0], [0.0, 0.0, 5.0, 0.1]])  # (B=3, V=4)
finished = torch.tensor([False, False, True])  # row 2 ended at an earlier step
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* what would go wrong in a batch if finished rows kept taking their
# arg-max?
#
# YOUR ANSWER HERE

# %%
check("ex09_1")

# %% [markdown]
# ## ex09_2 — Top-p (nucleus) filtering (medium)
#
# **File:** `transformer_course/decoding.py`, function `top_p_filter(logits, top_p)`.
#
# Sampling from the full distribution now and then picks one of the thousands of unlikely tokens,
# and one bad token derails the rest of a translation. Nucleus sampling (Holtzman et al. 2020)
# keeps only the **smallest set of most probable tokens whose probabilities add up to at least
# `top_p`** and gives all the others probability 0. Return the logits with every token outside
# that set masked, by the course's rule of ex03_2: probability 0 after the softmax (`-inf` or
# `torch.finfo(logits.dtype).min`; the argument check is already written):
#
# 1. sort each row in descending order (keep the permutation);
# 2. softmax of the sorted logits, then the running sum of the probabilities;
# 3. a token is dropped when the tokens *before* it (more probable) already add up to `top_p` or
#    more: `cumsum - probs >= top_p`. So the token that crosses `top_p` stays, and the most probable
#    token always stays;
# 4. put that mask back in vocabulary order (`scatter` with the permutation) and fill.
#
# - **Shapes:** `logits` (..., V) → (..., V), in the original token order.
# - **Watch for:** `cumsum > top_p` drops the token that crosses the threshold (with `top_p` smaller
#   than the largest probability it drops every token); the sum is over probabilities, not logits.

# %%
logits = torch.tensor([0.5, 0.05, 0.3, 0.15]).log()  # probabilities 0.5, 0.05, 0.3, 0.15
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* with `top_p = 0.75` above, which tokens survive and with which new
# probabilities? Why is the token that crosses the threshold kept?
#
# YOUR ANSWER HERE

# %%
check("ex09_2")

# %% [markdown]
# ## ex09_3 — One beam-search step (GNMT length penalty) (hard)
#
# **File:** `transformer_course/decoding.py`, function `beam_step(scores, log_probs, finished,
# lengths, eos_id, pad_id, alpha=0.6)`.
#
# Beam search keeps K hypotheses per sentence. One step extends all of them at once and keeps the
# K best of the K·V candidates, for B sentences in parallel. Return
# `(origin, tokens, scores, finished, lengths)`, each (B, K), best first:
#
# 1. **finished hypotheses** (they ended with `<eos>`) have exactly one continuation, `pad_id`, at
#    cost 0 (log-probability 0) and without growing; every other continuation gets `-inf`. Build
#    a (B, K, V) tensor of `-inf` with a 0 at `pad_id` and choose between it and `log_probs` with
#    `torch.where(finished[..., None], …)`;
# 2. candidate scores: `scores[..., None] + step` (B, K, V); new lengths: `lengths + 1` where not
#    finished;
# 3. rank by the **length-penalised** score `candidate / gnmt_length_penalty(new_length, alpha)`:
#    `topk(K)` over the flattened K·V axis of each sentence;
# 4. a flat index i means hypothesis `i // V` extended by token `i % V`; gather the *unpenalised*
#    scores, the lengths and the finished flags of the winners, and mark as finished those whose new
#    token is `eos_id`.
#
# - **Shapes:** `scores` (B, K) (`-inf` for an empty slot), `log_probs` (B, K, V), `finished` (B, K)
#   bool, `lengths` (B, K) long → five tensors (B, K).
# - **Watch for:** ranking by the raw sum makes beam search prefer short translations; a finished
#   hypothesis extended by every token appears K times in the next beam; keep returning the raw
#   summed log-probabilities (the penalty is applied for ranking only).

# %%
print(gnmt_length_penalty(torch.arange(1, 8), 0.6))  # lp grows slowly with the length
scores = torch.tensor([[-1.0, -1.5]])  # (B=1, K=2)
finished, lengths = torch.tensor([[True, False]]), torch.tensor([[2, 2]])
log_probs = torch.tensor([[0.1, 0.1, 0.2, 0.6]]).log().expand(1, 2, 4)  # (B, K, V=4)
# YOUR CODE HERE

# %% [markdown]
# *In your own words:* in the example above, which two candidates survive, and would the answer
# change without the length penalty?
#
# YOUR ANSWER HERE

# %%
check("ex09_3")

# %% [markdown]
# When every check above passes, run [chapter 09](../chapters/09_decoding.ipynb) again: the greedy,
# beam and sampling translations then come from your code. Next: [exercises
# 11](ex11_testing_the_papers_choices.ipynb), the paper's choices in your own words (chapter 10 has
# no exercises of its own).
