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
# ### BEGIN SOLUTION
# **Worked answer.** Removing the factor did not make the model worse: over three seeds, the model
# without it reversed at least as many held-out strings as the course's model (the chapter's check
# says the factor never wins beyond the spread of the seeds). Chapter 01's argument (its section 3)
# is about the first steps; the embeddings are learned, and Adam soon scales them to whatever helps.
# At $d_{model} = 64$ the imbalance is small: token vectors of length about 1 against positional
# vectors of length $\sqrt{d_{model}/2} = \sqrt{32} \approx 5.7$. The third variant keeps the factor
# but starts from $\mathcal{N}(0, 1)$, so its token vectors are $\sqrt{64} = 8$ times longer than
# the course's, about 11 times longer than the positional vectors, and because the output layer
# shares the matrix, its first logits are 8 times too large: the model starts extremely confident
# and wrong (its first loss is far above the others), and the huge token vectors swamp the positions
# the reverse task depends on. It reversed only a few strings, on every seed. The lesson: the factor
# is only right together with the initialisation it was chosen for; the scale of what reaches the
# first layer is what matters.
# ### END SOLUTION

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
# ### BEGIN SOLUTION
# **Worked answer.** It does not support it, at least for this small model: on short strings (3 to 6
# letters) both models do well; from 7 to 10 letters the learned table already falls behind on
# average; on every longer string both fail, the sinusoidal one as completely as the learned one.
# The learned table has no trained vector for the positions past those of the training strings
# (those rows never got a gradient and keep their random start), so the model receives noise there.
# The sinusoidal table does give those positions well-defined vectors, related to the others by the
# rotations of chapter 02, but the model never saw them: its attention patterns and feed-forward
# networks were fitted to the vectors of the training positions only, and the decoder has never been
# asked to write an 11th letter or to stop after it. A formula that is defined everywhere is not the
# same as a model that has learnt what to do everywhere. Later work (relative positions, rotary
# embeddings, ALiBi; see the chapter's further reading) was designed with extrapolation in mind and
# measures it.
# ### END SOLUTION

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
# ### BEGIN SOLUTION
# **Worked answer.** It stalled, on every seed: its loss dropped at first and then stayed well above
# the other two runs for all the steps, and it reversed (almost) none of the held-out strings. The
# warm-up run of the same model, with the same peak rate and the same decay, learnt; pre-LN learnt
# with no warm-up at all. Chapter 05's section 4 showed that at initialisation a post-LN stack sends
# its largest gradients to the top layers, which sit next to the loss: at full learning rate from
# the first step, Adam moves those layers a lot before the lower ones have learnt anything they
# could build on, and the model settles into a poor state it leaves only slowly. Pre-LN spreads the
# gradient the other way and keeps an un-normalised identity path through the whole stack.
#
# Three seeds, one size and one learning rate are not enough to generalise from. Worth varying: more
# seeds (how often does the stall happen?), the peak learning rate (at a low enough rate post-LN should
# train without warm-up, at a high enough one pre-LN should fail too), the depth (the argument says
# the effect grows with the number of layers), and the number of steps (does the stalled run
# recover later?). Gradient clipping, off here as in the paper, is another: the course's training
# profile clips at norm 1, which softens exactly this kind of early damage.
#
# ### END SOLUTION
#
# *In your own words:* the variant without residual connections uses `no_residual`, so post-LN's
# $\mathrm{LN}(x + f(x))$ becomes $\mathrm{LN}(f(x))$. In a pre-LN model, `no_residual` gives
# $\mathrm{Dropout}(f(\mathrm{LN}(x)))$ instead. Would you expect that model to fail in the same
# way? Why?
#
# ### BEGIN SOLUTION
# **Worked answer.** Yes. Without the `x +`, a pre-LN stack is the same chain as the post-LN one:
# normalise, apply a sub-layer, normalise, apply the next, with the normalisation on the other side
# of each sub-layer. What pre-LN has over post-LN is an un-normalised identity path through the whole
# stack, and that path *is* the shortcut. Without it, every piece of information, including which
# letter sits where, must pass through every sub-layer, and the gradient reaches the lower layers
# only through the Jacobians of all the layers above. A sub-layer can no longer learn just a
# correction to its input; it must rebuild the input as well, which is far harder from a random
# start. (Try it: add
# `"pre-LN, no shortcuts": Variant(build=lambda config: Transformer(config, connection=no_residual), norm_first=True)`
# to the variants of the chapter's residual experiment.)
#
# ### END SOLUTION

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
# ### BEGIN SOLUTION
# **Worked answer.** One part of the first half is confirmed: the model does learn to be more unsure (its mean
# confidence drops beyond the spread of the seeds). Its perplexity tends to rise (it is trained
# towards giving the right token 0.9, not 1), but whether the runs' ranges overlap, and whether every
# pair of runs rises, varies from machine to machine: at best consistent with the claim. The second half did not show: exact
# match and token accuracy did not differ beyond the spread of the seeds. The reverse task has
# exactly one right answer for every input and the model masters it; label smoothing helps as a
# regulariser when a large model could otherwise over-fit ambiguous, noisy data (real sentence
# pairs), which this task does not have. The calibration error says that the smoothed model is
# *under*-confident: its confidence lies several points below its accuracy, because its
# confidences cluster near the 0.9 of the smoothed target. Without smoothing, confidence and
# accuracy lie close together. (With `steps=300`, a less converged model, the picture can differ:
# try it.)
#
# ### END SOLUTION

# %% [markdown]
# These questions close the course's tests of the paper's own choices. Next: [exercises
# 12](ex12_real_translation.ipynb), real translation (chapter 10 has no exercises of its own).
