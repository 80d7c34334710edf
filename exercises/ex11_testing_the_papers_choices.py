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
# # Exercises 11 — Testing the paper's choices
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex11_testing_the_papers_choices.ipynb)
#
# Companion of [chapter 11](../chapters/11_testing_the_papers_choices.ipynb) (paper §3.1, §3.4,
# §3.5, §5.3, §5.4).
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# This notebook has no functions to write. Chapter 11 trains small models to test five of the
# paper's choices, and each section below asks about one or two of them: read the experiment and
# explain, in your own words, what it shows. Write your answer in place of the placeholder under
# each question. To re-run an experiment with other settings, edit its cell in the chapter: it needs
# every exercise up to chapter 09.
#
# The questions are ex11_q1 to ex11_q5, in the order they come. Once you have written an answer and
# saved the notebook, `python -m transformer_course check ex11_q2` (for the second) shows the points
# a good answer makes.

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

# %% [markdown]
# ## The experiment: does the $\sqrt{d_{model}}$ factor matter?
#
# Section 1 of the chapter trains three small Transformers on the reverse task, identical but for
# the embedding: the course's $\mathcal{N}(0, 1/d_{model})$ table times $\sqrt{d_{model}}$, the same
# table without the factor, and PyTorch's default $\mathcal{N}(0, 1)$ table times
# $\sqrt{d_{model}}$. Read its table and figure (or re-run its cell with other sizes, adding for
# example `d_model=128` to the `run_experiment` call).
#
# *In your own words:* what did removing the factor change, and why does the third variant, which
# *keeps* the factor, not simply behave like the first?
#
# YOUR ANSWER HERE

# %% [markdown]
# ## The experiment: do sinusoidal positions extrapolate?
#
# Section 2 of the chapter trains the same small Transformer twice on the reverse task, once with
# the sinusoidal table and once with learned position vectors, on strings of 3 to 10 letters only,
# and tests both on longer strings. Read its table and figure (or re-run its cell with `steps=1000`
# added to the `run_experiment` call).
#
# *In your own words:* what does the result say about the paper's hope (§3.5) that sinusoids "may
# allow the model to extrapolate to sequence lengths longer than the ones encountered during
# training"? Why does the learned table fail, and why is a formula that is defined at every
# position not enough?
#
# YOUR ANSWER HERE

# %% [markdown]
# ## The experiments: warm-up and residual connections
#
# Sections 3 and 4 of the chapter train a 3-layer Transformer on the reverse task in five ways:
# post-LN with and without warm-up, pre-LN without warm-up, and post-LN with and without its
# residual connections. Read their tables and figures. (To re-run one with other settings, add them
# to the chapter's `run_experiment` call, for example `n_layers=6, seeds=(3, 4, 5)`.)
#
# *In your own words:* the post-LN model without warm-up did not diverge. What did it do instead,
# and what in section 4 of chapter 05 suggests why? Before you trust the conclusion "post-LN needs
# a warm-up", what would you vary, and why?
#
# YOUR ANSWER HERE
#
# *In your own words:* the variant without residual connections uses `no_residual`, so post-LN's
# $\mathrm{LN}(x + f(x))$ becomes $\mathrm{LN}(f(x))$. In a pre-LN model, `no_residual` gives
# $\mathrm{Dropout}(f(\mathrm{LN}(x)))$ instead. Would you expect that model to fail in the same
# way? Why?
#
# YOUR ANSWER HERE

# %% [markdown]
# ## The experiment: what label smoothing does
#
# Section 5 of the chapter trains the same small model on the reverse task with $\varepsilon = 0$
# and $\varepsilon = 0.1$, and measures exact match, token accuracy, mean confidence, calibration
# error and perplexity. Read its table and figure (or re-run it, e.g. adding `steps=300` to the
# chapter's `run_experiment("label-smoothing", ...)` call for a less converged model).
#
# *In your own words:* the paper says label smoothing "hurts perplexity, as the model learns to be
# more unsure, but improves accuracy and BLEU" (§5.4). Which parts of that sentence did the
# experiment confirm, which did it not, and why might they not show on this task? What does the
# calibration error say about the model trained with $\varepsilon = 0.1$?
#
# YOUR ANSWER HERE

# %% [markdown]
# These questions close the course's tests of the paper's own choices. Next: [exercises
# 12](ex12_real_translation.ipynb), real translation (chapter 10 has no exercises of its own).
