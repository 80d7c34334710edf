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
# # Exercises 16 — int8 weights: a scale per row
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/exercises/ex16_real_checkpoints.ipynb)
#
# **On Colab**, run the first code cell: it finds (or, the first time, makes) your own copy of the
# course in your Google Drive, to write the exercises in, and prints where its files are in the Files
# panel. Every chapter and exercise notebook you open on Colab runs that same copy.
#
# Companion of [chapter 16](../chapters/16_real_checkpoints.ipynb), sections 3 and 4: the three
# pieces of `quantize(model, "int8")`. A weight matrix becomes whole numbers in [-127, 127] with one
# scale per row; those rows are made float again; and the int8 layer multiplies an input by them.
#
# **How the exercises work.** Each exercise is one function of the course package
# `transformer_course`. In the student edition its body is a stub that raises
# `NotImplementedError`; you write the body **in the package file** named in the exercise, not in
# this notebook. Because the chapters import the package, chapter 16's int8 models then run on
# your code.
#
# After editing the file, run the exercise's check cell. It compares your function with an
# independent reference (PyTorch's own per-channel quantized tensors, `torch.quantize_per_channel`
# and `torch.dequantize`, and its per-channel observer, which finds each row's scale; `F.linear` in
# float64 on the weights they give) and prints one line: ✓ passed, ○ not implemented yet, or ✗ with
# the input that failed and what is wrong. The same checks run from a terminal:
#
# ```bash
# python -m transformer_course check ex16_1     # one exercise (or no id: a table of all of them)
# pytest -m ex16_1                              # the same check through pytest
# ```
#
# Each exercise also has a **try it** cell, a scratch space on small tensors. The set-up
# cell below makes the notebook pick up your edits to the package without restarting the kernel.
#
# | exercise | function | level |
# | --- | --- | --- |
# | ex16_1 | `dequantize_rows(q, scale, dtype)` in `quantize.py` | easy |
# | ex16_2 | `quantize_rows(weight)` in `quantize.py` | medium |
# | ex16_3 | `int8_linear(x, q, scale, bias, packed)` in `quantize.py` | medium |
#
# **Before you start:** chapter 16 also runs exercises of other chapters: ex01_1, ex01_2, ex02_1,
# ex02_2, ex03_1, ex03_2, ex03_3, ex04_1, ex04_2, ex04_3, ex05_1, ex05_2, ex05_3, ex06_1, ex06_2,
# ex06_3, ex09_1, ex09_2, ex09_3, ex13_1, ex13_2, ex13_3, ex13_4, ex15_1 and ex15_3. Until they are
# written it stops at the first of them, naming all those still to write.
#
# **Order:** ex16_3 calls ex16_1, so write ex16_1 first.

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

from transformer_course_tools.exercises.checks import check
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
torch.set_printoptions(precision=4, sci_mode=False)
setup_chapter("16")  # your saved edits run without a restart; a file that does not compile is one line

# %% [markdown]
# ## ex16_1 — Int8 rows made float again (easy)
#
# **File:** `transformer_course/quantize.py`, function `dequantize_rows(q, scale,
# dtype=torch.float32)`.
#
# An int8 weight matrix stores whole numbers q in [-127, 127] and, beside them, one float scale per
# row (one per output feature). The weight that row r stands for is q[r] · scale[r]: section 4 of
# chapter 16 makes the weights float again this way ("weights only"), and so does every int8 layer
# where no int8 kernel runs. Return that float matrix, in the dtype asked for.
#
# - **Shapes:** `q` (out, in) int8, `scale` (out,) → (out, in) in `dtype` (float32 unless given).
# - **Watch for:** each row its own scale: `scale` (out,) lines up with the *last* axis of q if
#   nothing is done (column j would get scale[j]), so give it a trailing axis; the scale is already
#   the row's largest magnitude divided by 127: multiply by it as it is; turn both into `dtype`.

# %%
from transformer_course.quantize import dequantize_rows  # yours (an earlier cell may use the name)

q = torch.tensor([[127, -64, 0], [3, -127, 50]], dtype=torch.int8)  # (out, in) = (2, 3)
scale = torch.tensor([0.01, 0.5])  # one per row
### BEGIN SOLUTION
print(dequantize_rows(q, scale))  # row 0: 1.27, -0.64, 0; row 1: 1.5, -63.5, 25
print(dequantize_rows(q, scale, torch.float64).dtype)
### END SOLUTION

# %% [markdown]
# *In your own words:* how many bytes does an (out, in) matrix take as q and its scales, and as
# the float32 matrix `dequantize_rows` returns? Why does an int8 layer without an int8 kernel make
# the weights float at each call instead of keeping the float matrix?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# return q.to(dtype) * scale.to(dtype)[:, None]
# ```
#
# q takes one byte per weight and the scales four bytes per row: out · in + 4 · out bytes, against
# 4 · out · in for the float32 matrix, so a little over a quarter (the scales add 4 / in bytes per
# weight, under 1 % for a row of a few hundred inputs). Keeping the float matrix would give the
# bytes back: the saving is in what memory holds and what a step reads (section 3), so the float
# weights are made for the product and dropped. Converting q to float is exact (every whole number
# up to 256 fits, even in bfloat16's 8 bits); only the product with the scale rounds.
# ### END SOLUTION

# %%
check("ex16_1")

# %% [markdown]
# ## ex16_2 — A weight matrix rounded to int8, one scale per row (medium)
#
# **File:** `transformer_course/quantize.py`, function `quantize_rows(weight)`.
#
# Symmetric absmax quantization with one scale per row: the scale of row r is its largest
# magnitude divided by 127, scale[r] = max_j |W[r, j]| / 127, so that the row's largest value
# becomes ±127; every entry becomes W[r, j] / scale[r] rounded to the nearest whole number (clamped
# to [-127, 127], stored as int8). Then W ≈ q · scale with an error of at most scale[r] / 2 per
# entry. A row of zeros gets scale 1 (its q are zeros; a scale of 0 would make q = 0 / 0).
# `quantize(model, "int8")` calls this for every weight matrix and every embedding.
#
# - **Shapes:** `weight` (out, in), any float dtype → `(q, scale)`: q (out, in) int8, scale (out,)
#   float32.
# - **Watch for:** one scale per row, along dim 1 (not one for the whole matrix, nor one per
#   column); the largest *magnitude* (a row's largest value in size may be negative); 127, not
#   128 (int8's -128 has no positive partner) nor 255 (the levels are split between the two
#   signs); round to the nearest (`.to(torch.int8)` alone cuts towards zero); work in float32.

# %%
from transformer_course.quantize import quantize_rows  # yours (an earlier cell may use the name)

weight = torch.tensor([[0.5, -1.0, 0.25], [0.0, 0.0, 0.0], [0.01, 0.02, 4.0]])  # a row of zeros, an outlier
### BEGIN SOLUTION
q, scale = quantize_rows(weight)
print(q)
print(scale)
error = (dequantize_rows(q, scale) - weight).abs()  # (3, 3)
print(bool((error <= scale[:, None] / 2 + 1e-7).all()))  # each entry within half its row's scale
### END SOLUTION

# %% [markdown]
# *In your own words:* in the example, the third row holds one large value. What becomes of its
# two small values, and what would become of the first row with one scale for the whole matrix?
# Why one scale per row (per output feature) rather than per column?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# weight = weight.detach().float()
# scale = weight.abs().amax(dim=1) / INT8_MAX  # (out,)
# scale = torch.where(scale > 0, scale, torch.ones_like(scale))
# q = torch.round(weight / scale[:, None]).clamp(-INT8_MAX, INT8_MAX).to(torch.int8)  # (out, in)
# return q, scale
# ```
#
# Its scale is 4 / 127, about 0.031: 0.01 rounds to 0 and 0.02 to 1 (0.031), so the small values
# keep little of themselves, the price of an outlier, paid in its own row only. With one scale for
# the whole matrix the largest magnitude of the matrix, 4.0, would set every row's step: the
# first row's 0.25 would be 8 steps, its 0.5 16, where its own scale (1 / 127) gives 32 and 64:
# every row is as coarse as the row with the largest value. Per row, because the scale of row r
# then multiplies all of output r's dot product: y_r = scale[r] Σ_j q[r, j] x_j, so the sum runs on
# whole numbers and one multiplication per output scales it back. A scale per column would sit
# inside the sum (a different one for each x_j), and x would have to be rescaled at every call.
# ### END SOLUTION

# %%
check("ex16_2")

# %% [markdown]
# ## ex16_3 — The int8 layer's product (medium)
#
# **File:** `transformer_course/quantize.py`, function `int8_linear(x, q, scale, bias, packed=None)`.
#
# `Int8Linear`, the layer `quantize` puts in place of each `nn.Linear`, stores q, the scales and a
# float bias. It computes what `nn.Linear` computes with the weight q · scale: y = x (q · scale)ᵀ + b.
# On a CPU with PyTorch's fbgemm kernel it hands x to that kernel with a packed copy of the weights
# (the argument `packed`), and on a GPU it calls PyTorch's weight-only int8 product; you write the
# path that runs everywhere else: the product in x's own dtype (float32, float64 or bfloat16), with
# the bias when there is one.
#
# - **Shapes:** `x` (..., in), any leading axes; `q` (out, in) int8; `scale` (out,); `bias` (out,)
#   or None → (..., out), in the dtype of `x`.
# - **Watch for:** the weight's transpose (a linear layer's (out, in) weight computes x Wᵀ:
#   `F.linear`); the scales applied once, each to its own output feature; the bias added as it is
#   (it is float, not scaled), and `bias=None`; x's dtype (your `dequantize_rows(q, scale,
#   x.dtype)`).

# %%
from transformer_course.quantize import int8_linear  # yours (an earlier cell may use the name)

linear = torch.nn.Linear(4, 3)
q, scale = quantize_rows(linear.weight)
x = torch.randn(2, 5, 4)  # (B, T, in)
### BEGIN SOLUTION
y = int8_linear(x, q, scale, linear.bias)
print(tuple(y.shape), y.dtype)  # (2, 5, 3) torch.float32
with torch.no_grad():
    print(f"largest difference from the float32 layer: {(y - linear(x)).abs().max():.1e}")
print(int8_linear(x.double(), q, scale, None).dtype)  # x's dtype, no bias
### END SOLUTION

# %% [markdown]
# *In your own words:* show that the scales can be applied after the product, (x qᵀ) · scale + b,
# instead of to the weight. Why does that matter to an int8 kernel, and why must the bias not be
# multiplied by the scales?
#
# ### BEGIN SOLUTION
# **Worked solution.**
#
# ```python
# return F.linear(x, dequantize_rows(q, scale, x.dtype), _cast(bias, x.dtype))
# ```
#
# Output r is y_r = Σ_j x_j · q[r, j] · scale[r] + b_r = scale[r] · (Σ_j x_j q[r, j]) + b_r: the
# scale of row r is a common factor of output r's sum, so it can leave the sum. A kernel then reads
# the 1-byte q as they are, sums the products (in whole numbers when x is rounded too, as fbgemm
# does on a CPU, section 4 of chapter 16), and multiplies each output once by its scale: out
# multiplications instead of out · in. The bias is a float added after the product, not part of
# the quantized weight: scaled, it would become b_r · scale[r], a much smaller number.
# ### END SOLUTION

# %%
check("ex16_3")

# %% [markdown]
# When every check above passes, run [chapter 16](../chapters/16_real_checkpoints.ipynb) again:
# `quantize(model, "int8")` then rounds the weights with your `quantize_rows`, section 4 makes them
# float again with your `dequantize_rows`, and where PyTorch has no fbgemm kernel the int8 layers
# multiply with your `int8_linear`.
