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
### BEGIN SOLUTION
next_tokens = logits.argmax(dim=-1).masked_fill(finished, PAD)
print(next_tokens, finished | (next_tokens == EOS))  # row 0 picks <eos> now; row 2 only pads
### END SOLUTION

# %% [markdown]
# *In your own words:* what would go wrong in a batch if finished rows kept taking their
# arg-max?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# next_tokens = logits.argmax(dim=-1)  # (B,)
# next_tokens = next_tokens.masked_fill(finished, pad_id)  # finished rows only pad
# return next_tokens, finished | (next_tokens == eos_id)  # (B,), (B,)
# ```
#
# The rows of a batch finish at different steps, but the loop runs until the slowest one is done.
# A finished row still goes through the model (it is part of the batch tensor), and its arg-max is
# some arbitrary token: kept, it would append words after `<eos>`, and a vocabulary that does not
# stop at `<eos>` would print them. Writing `pad_id` keeps the output a clean padded rectangle, and
# the decoder ignores padding in later steps because its self-attention mask hides `<pad>` keys.
# Computing the new flag from the *masked* token matters too: a finished row gets `pad_id`, which is
# never `eos_id`, so only the `finished |` part keeps it finished.
# ### END SOLUTION

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
### BEGIN SOLUTION
sorted_logits, order = logits.sort(descending=True)
probs = sorted_logits.softmax(-1)
print(probs, probs.cumsum(-1) - probs)  # mass *before* each token: 0, 0.5, 0.8, 0.95
drop_sorted = probs.cumsum(-1) - probs >= 0.75
print(logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf")).softmax(-1))
### END SOLUTION

# %% [markdown]
# *In your own words:* with `top_p = 0.75` above, which tokens survive and with which new
# probabilities? Why is the token that crosses the threshold kept?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# sorted_logits, order = logits.sort(dim=-1, descending=True)  # (..., V), most probable first
# probs = sorted_logits.softmax(dim=-1)
# before = probs.cumsum(dim=-1) - probs  # (..., V): mass of the strictly more probable tokens
# drop_sorted = before >= top_p
# drop = drop_sorted.scatter(-1, order, drop_sorted)  # (..., V): back to vocabulary order
# return logits.masked_fill(drop, float("-inf"))
# ```
#
# Sorted, the probabilities are 0.5, 0.3, 0.15, 0.05 and the mass before each is 0, 0.5, 0.8, 0.95.
# The first two have less than 0.75 before them and stay; together they hold 0.8 ≥ 0.75, so the
# set {0.5, 0.3} is the smallest one that reaches `top_p`, and after renormalising they get 0.625
# and 0.375. Keeping a token *while the mass before it is below* `top_p` is exactly "add tokens
# until the threshold is reached": the last one added is the one that crosses it. Dropping it
# (`cumsum > top_p`) leaves a set whose mass is below `top_p`, and for a peaked distribution
# (`top_p` under the largest probability) it leaves nothing at all, and the softmax of a row of
# `-inf` is NaN.
#
# `scatter(-1, order, drop_sorted)` writes the flag of sorted position j to vocabulary position
# `order[j]`, undoing the sort. Either fill of the course's rule works here: at least one token is
# always kept, so `-inf` cannot make a row of NaN, and `finfo.min` gives probability exactly 0 as well.
# ### END SOLUTION

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
### BEGIN SOLUTION
frozen = torch.full_like(log_probs, float("-inf"))
frozen[..., PAD] = 0.0
candidates = scores[..., None] + torch.where(finished[..., None], frozen, log_probs)  # (1, 2, 4)
new_lengths = lengths + (~finished).long()
ranked = candidates / gnmt_length_penalty(new_lengths, 0.6)[..., None]
print(candidates)
best = ranked.reshape(1, -1).topk(2)  # over the K·V = 8 candidates
print(best.values, best.indices // 4, best.indices % 4)  # ranked scores, origin, token
### END SOLUTION

# %% [markdown]
# *In your own words:* in the example above, which two candidates survive, and would the answer
# change without the length penalty?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# batch, beams, vocab = log_probs.shape
# frozen = torch.full_like(log_probs, float("-inf"))  # (B, K, V)
# frozen[..., pad_id] = 0.0  # the only continuation of a finished hypothesis: pad, for free
# step = torch.where(finished[..., None], frozen, log_probs)  # (B, K, V)
# candidates = scores[..., None] + step  # (B, K, V) summed log-probabilities
# new_lengths = lengths + (~finished).long()  # (B, K): finished ones do not grow
# ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]  # (B, K, V)
# flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices  # (B, K) in K·V
# origin, tokens = flat // vocab, flat % vocab  # (B, K), (B, K)
# new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)  # (B, K)
# new_finished = finished.gather(1, origin) | (tokens == eos_id)  # (B, K)
# return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)
# ```
#
# The finished hypothesis (score -1.0, length 2) has one candidate: itself, padded, ranked at
# -1.0 / lp(2). The open one (score -1.5) has four; the best is token 3 with -1.5 + log 0.6 ≈ -2.01
# at length 3, ranked -2.01 / lp(3). With lp(2) ≈ 1.10 and lp(3) ≈ 1.19 the finished hypothesis
# ranks first (≈ -0.91) and the extension by token 3 second (≈ -1.69). Without the penalty the order
# is the same here, but the gap shrinks as the open hypothesis grows: every extra token costs a
# negative log-probability, and the penalty gives part of that cost back to the longer hypothesis
# (α = 0.6 in the paper). Without it, beam search systematically prefers translations that stop
# early.
#
# Why the finished hypothesis gets exactly one continuation: if it were extended by all V tokens
# with cost 0, the next beam would hold V copies of the same translation and crowd out the
# alternatives; if it were extended with the model's log-probabilities, it would keep growing
# after `<eos>`. Freezing it lets it compete, unchanged, with the open hypotheses until the end.
# Flattening (K, V) to K·V lets a single `topk` choose across beams: a strong hypothesis may
# supply several survivors and a weak one none, which is the point of beam search.
# ### END SOLUTION

# %%
check("ex09_3")

# %% [markdown]
# When every check above passes, run [chapter 09](../chapters/09_decoding.ipynb) again: the greedy,
# beam and sampling translations then come from your code. Next: [exercises
# 11](ex11_testing_the_papers_choices.ipynb), the paper's choices in your own words (chapter 10 has
# no exercises of its own).
