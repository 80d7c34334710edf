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
# # Exercises 08 — Training
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex08_training.ipynb)
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# Companion of [chapter 08](../chapters/08_training.ipynb) (paper §5.3 and §5.4).
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. In the student edition its body is a stub that raises
# `NotImplementedError`; you write the body **in the package file** (here
# `schedule.py`, `batching.py`, `loss.py` and `step.py` of `transformer_course/`), not in this notebook.
# Because chapter 08 imports the package, it then trains with your code.
#
# After editing a file, run the exercise's check cell. It compares your function with an
# independent reference (the paper's formula, PyTorch's `F.cross_entropy`, a hand-written
# training step) and prints one line: ✓ passed, ○ not implemented yet, or ✗ with the input that
# failed and what is wrong. The same checks run from a terminal:
#
# ```bash
# python -m transformer_course check ex08_1     # one exercise (or no id: a table of all of them)
# pytest -m ex08_1                              # the same check through pytest
# ```
#
# Each exercise also has a **try it** cell: a scratch space to experiment before you commit your
# answer to the package. The set-up cell makes the notebook pick up your edits.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex08_1 | `transformer_lr(step, d_model, warmup_steps, scale)` in `schedule.py` | easy |
# | ex08_2 | `teacher_forcing(tgt)` in `batching.py` | easy |
# | ex08_3 | `label_smoothed_cross_entropy(logits, target, smoothing, pad_id)` in `loss.py` | medium |
# | ex08_4 | `train_step(model, batch, optimizer, scheduler, smoothing, max_grad_norm, precision)` in `step.py` | hard |
#
# **Before you start:** chapter 08 also runs exercises of other chapters: ex01_1, ex01_2, ex02_1,
# ex02_2, ex03_1, ex03_2, ex03_3, ex04_1, ex04_2, ex04_3, ex05_1, ex05_2, ex05_3, ex06_1, ex06_2 and
# ex06_3. Until they are written it stops at the first of them, naming all those still to write.
#
# **Order:** ex08_4 calls ex08_3, so write ex08_3 first.

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
import torch.nn.functional as F

from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
torch.set_printoptions(precision=4, sci_mode=False)
setup_chapter("08")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex08_1 — The warm-up / inverse-square-root learning rate (easy)
#
# **File:** `transformer_course/schedule.py`, function `transformer_lr(step, d_model, warmup_steps,
# scale=1.0)`.
#
# Return the learning rate of equation (3) of the paper, multiplied by `scale`:
#
# $$ \text{lrate} = \text{scale}\cdot d_\text{model}^{-0.5} \cdot \min\left(\text{step}^{-0.5},\ \text{step}\cdot\text{warmup\_steps}^{-1.5}\right) $$
#
# - **Input:** `step` ≥ 1 (the paper counts from 1; the check of that is already written).
# - **Watch for:** the *smaller* of the two terms; the warm-up term has the power −1.5.

# %%
d_model, warmup = 512, 4000
### BEGIN SOLUTION
rate = lambda step: d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
print([f"{rate(s):.2e}" for s in (1, 1000, 4000, 16000)])  # up, up, the peak, half the peak
print(f"peak = (d_model · warmup)^-0.5 = {(d_model * warmup) ** -0.5:.2e}")
### END SOLUTION

# %% [markdown]
# *In your own words:* at which step is the rate largest, and what is it there?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)
# ```
#
# The two terms are equal when $\text{step}^{-0.5} = \text{step}\cdot w^{-1.5}$, i.e. at
# $\text{step} = w$. Before that the linear term $\text{step}\cdot w^{-1.5}$ is the smaller one
# (the warm-up), after it the decaying $\text{step}^{-0.5}$. The peak is therefore at
# `warmup_steps`, with value $\text{scale}\cdot(d_\text{model}\cdot w)^{-0.5}$: 7.0e-4 for the
# paper's base model. A larger model (larger $d_\text{model}$) gets a smaller rate, and a longer
# warm-up a lower, later peak.
# ### END SOLUTION

# %%
check("ex08_1")

# %% [markdown]
# ## ex08_2 — Teacher forcing: shift the target by one (easy)
#
# **File:** `transformer_course/batching.py`, function `teacher_forcing(tgt)`.
#
# A padded target batch holds `<bos> y1 … yn <eos> <pad> …`. Return the decoder input and the
# labels: the decoder reads the target up to position t and must predict the token at t+1.
#
# - **Shapes:** `tgt` (B, T+1) → (decoder input (B, T), labels (B, T)).
# - **Watch for:** cut along the time axis (dim 1), not the batch axis; the decoder input starts
#   with `<bos>`, the labels end with `<eos>` (or padding).

# %%
tgt = torch.tensor([[1, 5, 6, 7, 2], [1, 8, 2, 0, 0]])  # <bos>=1, <eos>=2, <pad>=0
### BEGIN SOLUTION
decoder_in, labels = tgt[:, :-1], tgt[:, 1:]
print(decoder_in)
print(labels)
### END SOLUTION

# %% [markdown]
# *In your own words:* what would the model learn if the labels were not shifted (labels = decoder input)?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# return tgt[:, :-1], tgt[:, 1:]  # (B, T), (B, T)
# ```
#
# Column t of the input is the token *before* column t of the labels, so the causal mask lets
# position t see exactly the tokens the prediction may depend on. The last column of `tgt` is
# never an input (it is `<eos>` or padding: nothing follows it), the first never a label (`<bos>`
# is given, not predicted).
#
# Without the shift, position t would be asked for the token it is reading. The causal mask does
# not hide the current position, so the model learns to copy its input: the training loss drops
# to almost zero within a few steps, and at translation time, when the input is its own last
# guess, it repeats `<bos>` or stops at once. Chapter 08's "Common mistake" box runs exactly this.
# ### END SOLUTION

# %%
check("ex08_2")

# %% [markdown]
# ## ex08_3 — Label-smoothed cross-entropy that ignores padding (medium)
#
# **File:** `transformer_course/loss.py`, function `label_smoothed_cross_entropy(logits, target,
# smoothing=0.1, pad_id=0)`.
#
# With smoothing ε the target distribution is $q = (1-\varepsilon)\,\text{one\_hot}(y) + \varepsilon/V$
# (what `F.cross_entropy(..., label_smoothing=ε)` uses). The loss of one position is
# $-\sum_v q_v \log p_v = (1-\varepsilon)(-\log p_y) + \varepsilon \cdot \text{mean}_v(-\log p_v)$;
# return its mean over the positions whose target is not `pad_id`.
#
# - **Shapes:** `logits` (B, T, V) float, `target` (B, T) ids → a scalar tensor
#   (keep it differentiable).
# - **Watch for:** average over real tokens only (padding adds nothing to the sum *or* to the
#   count); `log_softmax`, not `log(softmax)` (which underflows); a batch of only padding should give 0.

# %%
logits = torch.randn(2, 4, 6)
target = torch.tensor([[3, 4, 2, 0], [5, 2, 0, 0]])
### BEGIN SOLUTION
log_p = logits.log_softmax(-1)  # (B, T, V)
per_token = 0.9 * -log_p.gather(-1, target[..., None])[..., 0] + 0.1 * -log_p.mean(-1)  # (B, T)
keep = target != 0
mine = per_token[keep].mean()
print(mine, F.cross_entropy(logits.reshape(-1, 6), target.reshape(-1), label_smoothing=0.1, ignore_index=0))
### END SOLUTION

# %% [markdown]
# *In your own words:* why does it matter that the mean is over real tokens only?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# log_probs = logits.float().log_softmax(dim=-1)  # (B, T, V)
# nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (B, T): −log p(right token)
# uniform = -log_probs.mean(dim=-1)  # (B, T): cross-entropy with the uniform distribution
# per_token = (1.0 - smoothing) * nll + smoothing * uniform  # (B, T)
# keep = target != pad_id  # (B, T)
# return (per_token * keep).sum() / keep.sum().clamp(min=1)
# ```
#
# If padding positions were counted, the loss would depend on how much padding a batch happens to
# have (on the length of its longest sentence), and the model would be trained to predict
# `<pad>` after `<pad>` — an easy, useless task that dilutes the gradient of the real tokens.
# Multiplying by `keep` removes padding from the sum; dividing by `keep.sum()` (not by B·T)
# removes it from the count. The `clamp(min=1)` makes an all-padding batch give 0 instead of 0/0.
# ### END SOLUTION

# %%
check("ex08_3")

# %% [markdown]
# ## ex08_4 — One training step (hard)
#
# **File:** `transformer_course/step.py`, function `train_step(model, batch, optimizer,
# scheduler=None, smoothing=0.1, max_grad_norm=1.0, precision=None)`.
#
# One update of the model on one batch, returning the loss as a detached 0-dimensional tensor:
#
# 1. put the model in training mode (dropout on);
# 2. logits = `model(batch.src, batch.tgt_in)`, compared with `batch.tgt_out` by your loss;
# 3. clear the old gradients, backpropagate;
# 4. clip the gradient norm to `max_grad_norm` (`torch.nn.utils.clip_grad_norm_`), unless it is None;
# 5. step the optimizer, then the scheduler (if there is one).
#
# The same step serves *mixed precision* on a GPU. There, matrix products run faster in 16-bit
# floats: `torch.autocast` runs them so and keeps sums such as the softmax's in float32. float16's
# range is narrow, so a tiny gradient would round to 0. A *gradient scaler* multiplies the loss
# before `backward` and divides the gradients back before clipping and the step; bfloat16 has
# float32's range and needs none (`MixedPrecision`, above the function, holds both choices).
# Run the forward pass under `with precision.autocast(batch.src.device):`, compute the
# loss on `logits.float()`, and let `precision.scaler` do its part: `scaler.scale(loss).backward()`,
# `scaler.unscale_(optimizer)` before clipping, `scaler.step(optimizer)` then `scaler.update()`. The
# function's first line turns `precision=None` into `MixedPrecision.off()`, for which all of these
# change nothing: one code path for float32 and for mixed precision. The check runs one case in
# bfloat16 on the CPU.
#
# - **Watch for:** clip *after* `backward` (there is nothing to clip before) and *before*
#   `optimizer.step()`; return `loss.detach()`: detached, so the caller does not keep the graph
#   alive, and a tensor, not `loss.item()`, because reading a value makes the CPU wait for a GPU
#   (the training loop reads the losses in one go when it logs them).

# %% tags=["nbval-ignore-output"]
# (the losses printed depend on your computer's arithmetic in their last digits: not compared by the tests)
from transformer_course import Transformer, TransformerConfig
from transformer_course.batching import encode_pairs, make_batch
from transformer_course.data import copy_task
from transformer_course.loss import label_smoothed_cross_entropy
from transformer_course.schedule import make_optimizer, transformer_scheduler

task = copy_task(n_train=64)
batch = make_batch(encode_pairs(task.train, task.src_vocab, task.tgt_vocab), pad_id=0)
model = Transformer(TransformerConfig(len(task.src_vocab), len(task.tgt_vocab), d_model=32, n_heads=2, d_ff=64,
                                      n_encoder_layers=1, n_decoder_layers=1, max_len=32))  # fmt: skip
optimizer = make_optimizer(model)
scheduler = transformer_scheduler(optimizer, 32, warmup_steps=20)
### BEGIN SOLUTION
for step in range(1, 41):
    model.train()
    loss = label_smoothed_cross_entropy(model(batch.src, batch.tgt_in), batch.tgt_out, 0.1, 0)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    if step % 10 == 0:
        print(f"step {step}: loss {loss.item():.3f}")
### END SOLUTION

# %% [markdown]
# *In your own words:* what goes wrong if `optimizer.zero_grad()` is left out?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# model.train()
# with precision.autocast(batch.src.device):  # AMP: matmuls in low precision
#     logits = model(batch.src, batch.tgt_in)  # (B, T, V), in precision.dtype
# loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)  # ()
# optimizer.zero_grad(set_to_none=True)
# precision.scaler.scale(loss).backward()  # AMP: scale the loss up so float16 gradients do not vanish
# if max_grad_norm is not None:
#     precision.scaler.unscale_(optimizer)  # AMP: clip the true gradients, not the scaled ones
#     nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
# precision.scaler.step(optimizer)  # AMP: skips the step if a gradient overflowed
# precision.scaler.update()  # AMP
# if scheduler is not None:
#     scheduler.step()
# return loss.detach()  # a tensor: reading it (.item()) would make the CPU wait for a GPU
# ```
#
# `backward()` *adds* to `.grad`. Without `zero_grad` each step would use the sum of the gradients
# of every batch so far: a growing, stale direction that Adam's normalisation hides for a while
# and then the run drifts or diverges. (Accumulating on purpose, over several small batches before
# one step, is how a large batch is simulated on a small GPU: there `zero_grad` comes every k
# batches.) Clipping rescales the whole gradient when its norm exceeds the limit, so a rare bad
# batch cannot throw the weights far; the scheduler is stepped after the optimizer so that the
# first update uses the rate of step 1.
# ### END SOLUTION

# %%
check("ex08_4")

# %% [markdown]
# When every check above passes, run [chapter 08](../chapters/08_training.ipynb) again: it now trains
# with your code. Next: [exercises 09](ex09_decoding.ipynb), decoding.
