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
# # Exercises 14 — Training a modern language model
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex14_training_a_language_model.ipynb)
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# Companion of [chapter 14](../chapters/14_training_a_language_model.ipynb): today's training
# recipe, function by function. The learning-rate schedule (a linear warm-up, then a cosine decay to a
# floor), AdamW's two groups of parameters (weight decay on the matrices only), and one step of
# AdamW written out.
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. In the student edition its body is a stub that raises
# `NotImplementedError`; you write the body **in the package file** named in the exercise, not in
# this notebook. Because the chapters import the package, chapter 14 then runs on your code.
#
# After editing the file, run the exercise's check cell. It compares your function with an
# independent reference (the schedule written out with `math`, the groups a `torch.optim.AdamW`
# must hold, and PyTorch's own AdamW stepped once from the same state) and prints one line:
# ✓ passed, ○ not implemented yet, or ✗ with the input that failed and what is wrong. The same
# checks run from a terminal:
#
# ```bash
# python -m transformer_course check ex14_1     # one exercise (or no id: a table of all of them)
# pytest -m ex14_1                              # the same check through pytest
# ```
#
# Each exercise also has a **try it** cell, a scratch space. The set-up cell below makes the notebook
# pick up your edits to the package without restarting the kernel.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex14_1 | `warmup_cosine_lr(step, warmup_steps, total_steps, min_ratio)` in `recipe.py` | easy |
# | ex14_2 | `make_adamw(model, lr, weight_decay, betas)` in `recipe.py` | medium |
# | ex14_3 | `adamw_step(param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps, weight_decay)` in `recipe.py` | hard |
#
# **Before you start:** chapter 14 also runs exercises of other chapters: ex01_2, ex02_1, ex02_2,
# ex03_1, ex03_2, ex03_3, ex04_1, ex04_2, ex04_3, ex05_1, ex05_2, ex05_3, ex08_1, ex08_2, ex08_3,
# ex08_4, ex09_1, ex09_2, ex13_1, ex13_2, ex13_3 and ex13_4. Until they are written it stops at the
# first of them, naming all those still to write.
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
from torch import nn

from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

setup_chapter("14")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex14_1 — The warm-up and cosine learning-rate schedule (easy)
#
# **File:** `transformer_course/recipe.py`, function `warmup_cosine_lr(step, warmup_steps,
# total_steps, min_ratio=0.1)`.
#
# Chapter 08's schedule rose for `warmup_steps` and then fell as 1/√step, forever. Today's recipe
# knows how long the run is. It returns the fraction of the peak rate at `step` (counted from 1):
#
# $$f(s) = \begin{cases} s / w & s \le w \\ r + (1 - r)\,\tfrac{1}{2}\left(1 + \cos(\pi p)\right),
# \quad p = \min\!\left(1, \tfrac{s - w}{T - w}\right) & s > w \end{cases}$$
#
# with $w$ = `warmup_steps`, $T$ = `total_steps` and $r$ = `min_ratio`, the floor. The checks of the
# arguments are already written.
#
# - **Shapes:** plain numbers in, one float out (a fraction of the peak: 1 at the
#   end of the warm-up).
# - **Watch for:** the decay's progress $p$ counts from the end of the warm-up, not from step 0; it
#   stops at 1, so the rate stays at the floor after `total_steps`; the cosine is scaled by $1 - r$
#   before the floor is added, so that the peak stays 1; `warmup_steps = 0` means no warm-up.

# %%
from transformer_course.recipe import warmup_cosine_lr  # yours (an earlier cell may use the name)

warmup, total = 4, 20  # a short run: 4 warm-up steps, 16 of decay
### BEGIN SOLUTION
rates = [warmup_cosine_lr(step, warmup, total) for step in range(1, total + 3)]
print(" ".join(f"{rate:.2f}" for rate in rates))  # up to 1.00 at step 4, down to 0.10 at step 20, then flat
half_way = warmup + (total - warmup) // 2  # the middle of the decay: cos(π/2) = 0
middle = warmup_cosine_lr(half_way, warmup, total)
print(f"half-way through the decay (step {half_way}): {middle:.2f}, the mean of the peak and the floor")
### END SOLUTION

# %% [markdown]
# *In your own words:* chapter 08's schedule never ends; this one needs `total_steps`. What does
# knowing the length of the run let the schedule do, and what goes wrong if the run is then
# stopped early, or trained longer than `total_steps`?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# if step <= warmup_steps:
#     return step / warmup_steps
# progress = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))  # 0 → 1 over the decay
# return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))
# ```
#
# The warm-up is a straight line to the peak. After it, `progress` runs from 0 at the peak to 1
# at the last step, and half a cosine period takes `(1 + cos(π·progress)) / 2` from 1 to 0: scaled
# by `1 − min_ratio` and lifted by `min_ratio`, the rate goes from the peak to the floor.
#
# Knowing the end lets the schedule spend its large steps early and arrive at small ones exactly
# when the run ends: the last steps settle the weights near a minimum instead of jumping around
# it. A run stopped early never reaches the small steps, so its loss is higher than the same
# number of steps with a shorter `total_steps` would give. A run trained past `total_steps` stays
# at the floor: it keeps learning, slowly, but a new decay (a longer `total_steps`) would do
# better. This is why a model's length of training is chosen before it starts.
# ### END SOLUTION

# %%
check("ex14_1")

# %% [markdown]
# ## ex14_2 — AdamW with weight decay on the matrices only (medium)
#
# **File:** `transformer_course/recipe.py`, function `make_adamw(model, lr=0.001, weight_decay=0.1,
# betas=(0.9, 0.95))`.
#
# AdamW takes its parameters in *groups*, each a dict with its `"params"` and its own settings.
# Return a `torch.optim.AdamW` over the model's trainable parameters (`p.requires_grad`) in two
# groups: the matrices (two or more dimensions: the weight matrices and the embedding) with
# `weight_decay`, and the rest (biases and the gains of the norms: one dimension) with decay 0. Pass
# `lr` and `betas` to it. The checks of `lr` and `weight_decay` are already written.
#
# - **Shapes:** a module in, an optimizer out.
# - **Watch for:** `torch.optim.Adam(..., weight_decay=…)` is not AdamW (its decay goes through the
#   adaptive step); sort by the number of dimensions, not by name (a norm's gain is called `weight`
#   too); every trainable parameter in exactly one group; a frozen parameter in none.

# %%
from transformer_course.recipe import make_adamw  # yours (an earlier cell may use the name)

model = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 4), nn.LayerNorm(4))  # every kind of parameter
### BEGIN SOLUTION
optimizer = make_adamw(model, lr=1e-3, weight_decay=0.1)
names = {id(p): name for name, p in model.named_parameters()}
for group in optimizer.param_groups:
    print(f"weight_decay {group['weight_decay']}:", [names[id(p)] for p in group["params"]])
### END SOLUTION

# %% [markdown]
# *In your own words:* the gain of a LayerNorm starts at 1. What would weight decay do to it over a
# long run, and why does the embedding, unlike the gain, take the decay?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# matrices = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
# others = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
# groups = [{"params": matrices, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}]
# return torch.optim.AdamW(groups, lr=lr, betas=betas)
# ```
#
# The decay pulls every weight it acts on towards 0 at every step, by the same share, whatever the
# gradient says. A gain multiplies one feature: pulled towards 0 it turns that feature down and, in
# the end, off, so the norm's output would shrink until the gradient fought the decay back. A bias
# is an offset, not a size: shrinking it buys nothing. The embedding and the weight matrices are
# where a model stores what it learnt in many numbers; keeping them small is the regularisation
# weight decay is for. Sorting by `p.dim()` gets this right for any model: names differ between
# models, dimensions do not.
# ### END SOLUTION

# %%
check("ex14_2")

# %% [markdown]
# ## ex14_3 — One step of AdamW, written out (hard)
#
# **File:** `transformer_course/recipe.py`, function `adamw_step(param, grad, exp_avg, exp_avg_sq,
# step, lr, betas=(0.9, 0.95), eps=1e-08, weight_decay=0.1)`.
#
# Write out what `torch.optim.AdamW` does to one tensor at step `step` (counted from 1), given the
# gradient and the two running means kept from the steps before:
#
# $$m \leftarrow \beta_1 m + (1-\beta_1) g, \qquad v \leftarrow \beta_2 v + (1-\beta_2) g^2,
# \qquad \hat m = \frac{m}{1-\beta_1^{t}}, \qquad \hat v = \frac{v}{1-\beta_2^{t}}$$
#
# $$\theta \leftarrow \theta\,(1 - \eta\lambda) - \eta\,\frac{\hat m}{\sqrt{\hat v} + \epsilon}$$
#
# with $\eta$ = `lr`, $\lambda$ = `weight_decay` and $t$ = `step`. Return the new `param`,
# `exp_avg` ($m$) and `exp_avg_sq` ($v$). The checks of the shapes, `step` and `betas` are already
# written.
#
# - **Shapes:** `param`, `grad`, `exp_avg`, `exp_avg_sq`: four tensors of one shape in →
#   (param, exp_avg, exp_avg_sq) after the step, three of that shape.
# - **Watch for:** the decay multiplies the old parameter, apart from the adaptive step (added to
#   the gradient instead, it is Adam's L2); ε after the square root; the corrections use `step` as
#   given; new tensors, not the inputs changed in place.

# %%
from transformer_course.recipe import adamw_step  # yours (an earlier cell may use the name)

param, grad = torch.tensor([1.0, -2.0]), torch.tensor([0.5, 0.5])
state = (torch.zeros(2), torch.zeros(2))  # the running means before the first step
### BEGIN SOLUTION
mine = adamw_step(param, grad, *state, step=1, lr=0.1, weight_decay=0.1)
weight = param.clone().requires_grad_()
weight.grad = grad.clone()
reference = torch.optim.AdamW([weight], lr=0.1, betas=(0.9, 0.95), weight_decay=0.1)
reference.step()
print(mine[0], weight.detach())  # the first step moves every weight by about lr, whatever the gradient's size
### END SOLUTION

# %% [markdown]
# *In your own words:* at the first step the printed weights moved by about `lr` each, although
# the gradient was 0.5. Why, and what would the same step do without the two bias corrections?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# beta1, beta2 = betas
# exp_avg = beta1 * exp_avg + (1 - beta1) * grad  # the mean of the gradient
# exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad  # the mean of its square
# mean = exp_avg / (1 - beta1**step)  # both means start at 0: the bias corrections undo that
# mean_square = exp_avg_sq / (1 - beta2**step)
# decayed = param * (1 - lr * weight_decay)  # decoupled: the decay never passes through the adaptive step
# return decayed - lr * mean / (mean_square.sqrt() + eps), exp_avg, exp_avg_sq
# ```
#
# At step 1 both means start from 0, so $m = (1-\beta_1) g$ and $v = (1-\beta_2) g^2$; the
# corrections divide by exactly those factors, so $\hat m = g$ and $\hat v = g^2$, and the step is
# $\eta\, g / (|g| + \epsilon)$: about $\eta$ times the sign of the gradient, whatever its size.
# Adam's step is measured in units of the rate, not of the gradient. Without the corrections the
# first step would be $\eta (1-\beta_1) g / (\sqrt{1-\beta_2}\,|g|)$: with the recipe's betas about
# 0.45·η, and it takes on the order of $1/(1-\beta_2)$ steps before the uncorrected means stop
# being too small. The decay term is separate: it shrinks the weight by the share $\eta\lambda$
# (here 1 %), whatever the gradient and the means say.
# ### END SOLUTION

# %%
check("ex14_3")

# %% [markdown]
# When the checks above pass, run [chapter 14](../chapters/14_training_a_language_model.ipynb)
# again: its schedule and its optimizer, and the runs of its section 2, then use your
# `warmup_cosine_lr` and your `make_adamw`. (`adamw_step` is the same update that
# `torch.optim.AdamW` makes; the chapter trains with PyTorch's, which is faster.)
