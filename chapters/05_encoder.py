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
# # Chapter 05 — The encoder: feed-forward networks, residuals and layer normalisation
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/05_encoder.ipynb)
#
# Multi-head attention (chapter 04) lets every position gather information from the others. An
# encoder layer adds three modest pieces around it:
#
# - a small network, applied to each position on its own;
# - a shortcut that adds each sub-layer's input to its output;
# - a normalisation that keeps the numbers in range.
#
# Stack six of these layers and you have the paper's encoder. At the end of the chapter, a
# six-layer stack of your own gives the same numbers as PyTorch's encoder.
#
# **Learning goals**
#
# - write the position-wise feed-forward network of equation (2) and see why it is "position-wise";
# - write layer normalisation by hand, match `nn.LayerNorm` exactly, and recognise the
#   `std + eps` mistake;
# - tell the paper's post-LN order from the pre-LN order, and measure how the gradients reach the
#   layers of a deep stack in each;
# - assemble the encoder layer and the stack, and check them against `nn.TransformerEncoderLayer`.
#
# **In the paper:** §3.1 (the encoder stack: two sub-layers per layer, each in
# `LayerNorm(x + Sublayer(x))`, $d_\text{model} = 512$), §3.3 (equation (2), $d_{ff} = 2048$),
# §5.4 (residual dropout).

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

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from transformer_course import Encoder, EncoderLayer, PositionwiseFeedForward, residual
from transformer_course_tools.exercises.checks import run_check
from transformer_course_tools.notebook.diagrams import post_ln_pre_ln
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("05")  # the short stop at an unwritten exercise; printing and plotting style
plt.rcParams.update({"axes.grid": True, "grid.alpha": 0.3})  # this chapter's plots read better on a grid

# %% [markdown]
# ## Where we are
#
# The encoder layer holds self-attention and a feed-forward network. Each is followed by "Add &
# Norm": the residual connection and the layer normalisation. The layer is stacked $N$ times. The
# shape never changes inside: (B, S, D) in, (B, S, D) out. The [notation page](../book/notation.md)
# lists the letters.
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right. The encoder's
# layer is highlighted: multi-head self-attention, then "Add & Norm", then a feed-forward network,
# then "Add & Norm" again, with a shortcut around each of the two sub-layers. A dashed frame,
# labelled "N× encoder layer", marks it as repeated N times. Every arrow inside it carries the shape (B, S, D); only inside the
# feed-forward network is the width d_ff. The stack's output, the memory, goes across to the
# decoder's cross-attention.
#
# </details>

# %%
architecture_map("encoder")

# %% [markdown]
# ## 1. The shape of an encoder layer
#
# Before the new parts, the frame they fit into. §3.1 describes each of the $N = 6$ encoder layers as two **sub-layers**:
#
# 1. multi-head self-attention: every position looks at every (non-padding) position;
# 2. a position-wise feed-forward network: every position is transformed on its own.
#
# Each sub-layer is wrapped the same way. Its input is added back to its output (a *residual
# connection*), and the sum is normalised: $\mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))$. In
# training, dropout is applied to the sub-layer's output before the addition (§5.4). All sub-layers
# read and write vectors of the same size $d_\text{model}$. So the addition is always possible, and
# the shape of the data never changes inside the encoder.
#
# Attention we know. This chapter builds the other parts one at a time.
#
# ## 2. The position-wise feed-forward network (§3.3, equation (2))
#
# Attention mixes the positions; the second sub-layer works on each position alone.
#
# $$\mathrm{FFN}(x) = \max(0,\; xW_1 + b_1)\,W_2 + b_2$$
#
# These are two linear maps with a ReLU between them. $W_1$ widens each vector from
# $d_\text{model} = 512$ to $d_{ff} = 2048$ features; the ReLU zeroes the negative ones; $W_2$ brings
# it back to 512. The same weights serve every position of a sequence (each layer has its own). The
# package's `PositionwiseFeedForward` holds $W_1, b_1$ in `linear1` and $W_2, b_2$ in `linear2`.
# Let us recompute its output by hand.
#
# One addition of ours: in training, `PositionwiseFeedForward` applies dropout to the hidden
# features, after the ReLU, and each attention drops some of its weights (chapter 04, section 5).
# **The paper does neither.** Its §5.4 names dropout on each sub-layer's
# output and on the sums of embeddings and positional encodings, nothing inside the network. We
# keep it because PyTorch's `nn.TransformerEncoderLayer` does the same: its feed-forward computes
# `linear2(dropout(relu(linear1(x))))`. Section 7 checks our layer against PyTorch's. With
# `.eval()`, or `dropout=0`, the extra dropout disappears and equation (2) holds exactly.

# %%
B, S, D, D_FF = 2, 5, 12, 48  # distinct sizes, so that a wrong axis cannot broadcast by luck
ffn = PositionwiseFeedForward(D, D_FF).eval()  # eval(): its dropout (after the ReLU) does nothing
x = torch.randn(B, S, D)

hidden = torch.relu(x @ ffn.linear1.weight.T + ffn.linear1.bias)  # (B, S, D_FF): max(0, x W1 + b1)
by_hand = hidden @ ffn.linear2.weight.T + ffn.linear2.bias  # (B, S, D)
print("input", tuple(x.shape), "→ hidden", tuple(hidden.shape), "→ output", tuple(by_hand.shape))
print(f"share of hidden units zeroed by the ReLU: {(hidden == 0).float().mean():.2f}")
assert torch.allclose(ffn(x), by_hand, atol=1e-6)
print("the package's FFN matches equation (2)")

# %% [markdown]
# **Position-wise** means that output position $s$ depends on input position $s$ and on nothing
# else. Change one position and only that position's output moves:

# %%
changed = x.clone()
changed[:, 2] += 1.0  # perturb position 2 of every sequence
with torch.no_grad():
    moved = (ffn(changed) - ffn(x)).abs().amax(dim=-1)  # (B, S): the largest change per position
print(moved)

# %% [markdown]
# The paper puts it another way: the FFN is "two convolutions with kernel size 1". A 1-D convolution
# with kernel size 1 slides a (D → D_FF) matrix along the sequence, one position at a time. That is
# exactly a linear layer applied per position. We can load the same weights into two `nn.Conv1d`
# layers and compare. (A convolution wants the features on axis 1, so we transpose.)

# %%
conv1, conv2 = nn.Conv1d(D, D_FF, kernel_size=1), nn.Conv1d(D_FF, D, kernel_size=1)
with torch.no_grad():
    conv1.weight.copy_(ffn.linear1.weight[:, :, None])  # (D_FF, D, 1)
    conv1.bias.copy_(ffn.linear1.bias)
    conv2.weight.copy_(ffn.linear2.weight[:, :, None])  # (D, D_FF, 1)
    conv2.bias.copy_(ffn.linear2.bias)
    as_convolution = conv2(torch.relu(conv1(x.transpose(1, 2)))).transpose(1, 2)  # (B, D, S) → (B, S, D)
print("the same as two convolutions of kernel size 1:", torch.allclose(as_convolution, ffn(x), atol=1e-6))

# %% [markdown]
# Where do the parameters of a layer live? With the paper's sizes, the FFN holds
# $2 \cdot 512 \cdot 2048 + 2048 + 512 \approx 2.1$M parameters. That is twice the
# $4 \cdot (512^2 + 512) \approx 1.05$M of the attention sub-layer. Two thirds of an encoder layer is
# feed-forward network.

# %%
paper_ffn = PositionwiseFeedForward(512, 2048)
paper_attention_params = 4 * (512 * 512 + 512)  # W^Q, W^K, W^V, W^O with their biases
ffn_params = sum(p.numel() for p in paper_ffn.parameters())
print(f"FFN: {ffn_params:,} parameters   attention: {paper_attention_params:,} parameters")

# %% [markdown]
# ## 3. Residual connections and layer normalisation
#
# Both sub-layers are now known; next comes the wrapping that goes around each of them.
#
# A **residual connection** computes $x + \mathrm{Sublayer}(x)$ instead of $\mathrm{Sublayer}(x)$.
# The sub-layer only has to learn a *correction* to its input. Through a stack of layers, these
# additions carry each position's vector from layer to layer: the **residual stream**. Each
# sub-layer reads from the stream and adds its correction to it. (In the paper's arrangement the
# stream is also normalised after each addition; section 4 says where that matters.)
#
# In the backward pass, the "$x +$" gives the gradient a path to the input that skips the
# sub-layer. Whether that path stays unchanged through a whole stack depends on where the
# normalisation sits, which section 4 takes up once the normalisation is defined.
#
# **Layer normalisation** rescales each vector on its own. Over its $D$ features it subtracts the
# mean and divides by the standard deviation. Then it applies a learned per-feature scale $\gamma$
# and shift $\beta$:
#
# $$\mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta,\qquad
# \mu = \frac1D \sum_i x_i,\quad \sigma^2 = \frac1D \sum_i (x_i - \mu)^2$$
#
# Unlike batch normalisation, which averages each feature over the batch, nothing is shared across
# the batch or the positions. So it behaves the same in training and at evaluation, and for a batch
# of one. Three details matter if you write it yourself:
#
# - the variance is the *biased* one: divide by $D$, not $D - 1$;
# - the small number $\epsilon$ sits *inside* the square root;
# - $\gamma$ and $\beta$ start at 1 and 0.


# %%
def layer_norm_by_hand(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    mean = x.mean(dim=-1, keepdim=True)  # (B, S, 1)
    variance = x.var(dim=-1, unbiased=False, keepdim=True)  # (B, S, 1): divide by D
    return gamma * (x - mean) / torch.sqrt(variance + eps) + beta  # (B, S, D)


norm = nn.LayerNorm(D)
with torch.no_grad():  # a non-trivial scale and shift, so that the comparison tests them too
    norm.weight.uniform_(0.5, 1.5)
    norm.bias.normal_()
x = 3 * torch.randn(B, S, D) + 2
ours = layer_norm_by_hand(x, norm.weight, norm.bias, norm.eps)
print("matches nn.LayerNorm:", torch.allclose(ours, norm(x), atol=1e-6))
plain = layer_norm_by_hand(x, torch.ones(D), torch.zeros(D))
std = plain.var(-1, unbiased=False).sqrt()  # (B, S): the standard deviation of each vector
assert plain.mean(-1).abs().max() < 1e-6 and (std - 1).abs().max() < 1e-4
print("without γ, β: every vector has mean 0 (to within 1e-6) and standard deviation 1 (to within 1e-4)")

# %% [markdown]
# > **The `std + eps` pitfall.** A hand-written LayerNorm often reads
# > `(x - x.mean(-1)) / (x.std(-1) + eps)`. It looks the same and differs twice. `torch.std` divides
# > by $D - 1$ (the unbiased estimate). And $\epsilon$ is added to the standard deviation instead of
# > the variance. Copy weights from such a model into `nn.LayerNorm` (or the other way), and the
# > outputs no longer agree.


# %%
def layer_norm_std_plus_eps(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """The common variant: unbiased std, eps outside the square root (scale 1, shift 0)."""
    return (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + eps)


reference = nn.LayerNorm  # weight 1, bias 0 at initialisation
print(f"{'D':>4} | {'max |difference|, ordinary input':>33} | {'nearly constant input (std 1e-4)':>34}")
for d in (4, 12, 64, 512):
    ordinary = torch.randn(64, d)
    flat = 1.0 + 1e-4 * torch.randn(64, d)
    diffs = [(layer_norm_std_plus_eps(v) - reference(d)(v)).abs().max().item() for v in (ordinary, flat)]
    print(f"{d:>4} | {diffs[0]:>33.4f} | {diffs[1]:>34.3f}")
shrink = {d: 1 - (1 - 1 / d) ** 0.5 for d in (4, 512)}  # the unbiased std is √(D/(D−1)) times larger
print(f"outputs shrunk by 1 − √((D−1)/D): {shrink[4]:.0%} at D = 4, {shrink[512]:.1%} at D = 512")

# %% [markdown]
# Two effects show. On ordinary inputs the unbiased standard deviation is larger by a factor
# $\sqrt{D / (D-1)}$. So the variant shrinks every output: by 13% for $D = 4$, by 0.1% for
# $D = 512$. That is easy to miss in a big model, and obvious in a small test. On a nearly constant
# vector, the placement of $\epsilon$ dominates. `nn.LayerNorm` divides by
# $\sqrt{10^{-8} + 10^{-5}} \approx 0.003$ and returns small numbers. The variant divides by
# $10^{-4} + 10^{-5}$ and blows the noise up to unit size. Both are legitimate *designs*, but they
# are different functions.
#
# ## 4. Post-LN and pre-LN: where the normalisation goes
#
# With the shortcut and the normalisation defined, one choice is left: their order.
# The paper normalises **after** the addition (post-LN):
#
# $$x_{l+1} = \mathrm{LN}\big(x_l + \mathrm{Dropout}(\mathrm{Sublayer}(x_l))\big)$$
#
# Most Transformers trained since (GPT-2 and its descendants, for instance) normalise the
# sub-layer's **input** instead (pre-LN), and add one final LayerNorm at the top of the stack:
#
# $$x_{l+1} = x_l + \mathrm{Dropout}\big(\mathrm{Sublayer}(\mathrm{LN}(x_l))\big)$$
#
# The package's `residual(x, sublayer, norm, dropout, norm_first)` implements both.
# `norm_first=True` is pre-LN, the name `nn.TransformerEncoderLayer` uses. The difference is one
# line, but it changes what flows along the shortcut:
#
# - In pre-LN the shortcuts join into one sum $x_0 + f_1 + f_2 + \dots$ that is never normalised.
#   The gradient reaches every layer through the additions alone. Every layer gets some gradient,
#   though not an equal share.
# - But in the paper's post-LN, every residual sum passes through a LayerNorm. The gradient reaching
#   a low layer crosses all the norms above it, and each one rescales it.
#
# Section 6 measures what this does to a 12-layer stack.
#
# <details><summary>The diagram in words</summary>
#
# Two panels show one sub-layer each, from the layer's input at the bottom
# to its output at the top. In both, the input goes through the sub-layer and dropout, and a blue
# shortcut, the residual stream, adds the input back at a plus sign. In post-LN, on the left, the sum then passes
# through a LayerNorm before it moves on. In pre-LN, on the right, the LayerNorm sits before the
# sub-layer, on the branch; the sum moves on without being normalised, and one final LayerNorm
# follows the last layer.
#
# </details>

# %%
post_ln_pre_ln()

# %%
sublayer = nn.Sequential(nn.Linear(D, D), nn.Tanh())
fresh_norm = nn.LayerNorm(D)  # γ = 1, β = 0, as at initialisation
x = 3 * torch.randn(B, S, D) + 2
post = residual(x, sublayer, fresh_norm, nn.Dropout(0.0), norm_first=False)
pre = residual(x, sublayer, fresh_norm, nn.Dropout(0.0), norm_first=True)
assert torch.allclose(post, fresh_norm(x + sublayer(x))) and torch.allclose(pre, x + sublayer(fresh_norm(x)))
print(f"input scale {x.std():.2f}  →  post-LN output scale {post.std():.2f},  pre-LN output scale {pre.std():.2f}")

# %% [markdown]
# Post-LN hands the next layer normalised vectors (with a fresh LayerNorm, as here, mean 0 and
# standard deviation 1); pre-LN passes the input's scale along and adds to it. Over a deep stack
# this decides how the gradient is shared among the layers (section 6 measures it).
#
# The course keeps the paper's post-LN as the default (`norm_first=False`) and lets you switch.
#
# > **Common mistake — the LayerNorm in the wrong place.** Written by hand, a residual block often
# > ends up as `x + dropout(norm(sublayer(x)))`. The norm sits on the branch, after the sub-layer.
# > That is neither the paper's post-LN nor pre-LN. Weights trained in either form load, since the
# > shapes agree, but compute something else, and results about either form do not carry over. A
# > single layer seems to work. Compared with both closed forms, it matches neither:


# %%
def residual_norm_on_branch(x, sublayer, norm, dropout, norm_first):
    """The bug: normalises the sub-layer's output, whatever norm_first says."""
    return x + dropout(norm(sublayer(x)))


x, sublayer, norm, no_dropout = torch.randn(2, 3, 8), nn.Linear(8, 8), nn.LayerNorm(8), nn.Identity()
buggy = residual_norm_on_branch(x, sublayer, norm, no_dropout, norm_first=False)
for name, norm_first in (("post-LN", False), ("pre-LN", True)):
    print(f"equal to {name}:", torch.allclose(buggy, residual(x, sublayer, norm, no_dropout, norm_first)))

# %% tags=["hide-cell"]
# The check of exercise ex05_2 rejects the bug with a message that names it (to see where the
# dropout sits, it swaps the dropout for a module that halves its input):
print(run_check("ex05_2", residual_norm_on_branch).line())


# %% [markdown]
# ## 5. The encoder layer and the stack
#
# With the pieces in place, `EncoderLayer.forward` is two calls to `residual`:
#
# $$x \leftarrow \mathrm{residual}\big(x,\; h \mapsto \mathrm{SelfAttn}(h, h, h;\ \text{mask}),\; \mathrm{norm}_1\big),
# \qquad x \leftarrow \mathrm{residual}\big(x,\; \mathrm{FFN},\; \mathrm{norm}_2\big)$$
#
# Each call also passes the sub-layer's dropout and `norm_first`, left out above. Writing those two
# lines is exercise `ex05_3`. Self-attention gets the same tensor as queries, keys
# and values.
# `mask` is the padding mask of the source, True where a key may be attended: chapter 03's
# (B, 1, S) with an axis for the heads, (B, 1, 1, S). Chapter 06 builds it as `padding_mask`; here
# it is one line. `Encoder` applies N layers in turn, plus a final LayerNorm in the pre-LN case. The cell also counts a layer's parameters by hand:
# $4(D^2 + D)$ for attention, $2Dd_{ff} + d_{ff} + D$ for the FFN, $2 \cdot 2D$ for the two LayerNorms.

# %%
H = 3
tokens = torch.tensor([[7, 4, 9, 0, 0], [5, 8, 6, 3, 2]])  # (B, S); id 0 is padding
mask = (tokens != 0)[:, None, None, :]  # (B, 1, 1, S): True = a real token, may be attended to
layer = EncoderLayer(D, H, D_FF, dropout=0.1).eval()  # its forward: the two calls of `residual` above
x = torch.randn(B, S, D)
print("x", tuple(x.shape), "  mask", tuple(mask.shape), "  →  output", tuple(layer(x, mask).shape))

# padded positions hold junk: whatever is there must not influence the real positions
junk = x.clone()
junk[0, 3:] = 100 * torch.randn(2, D)
unchanged = torch.allclose(layer(junk, mask)[0, :3], layer(x, mask)[0, :3], atol=1e-6)
print("real positions of sequence 0 unchanged when its padding holds junk:", unchanged)

encoder = Encoder([EncoderLayer(D, H, D_FF, dropout=0.1) for _ in range(6)]).eval()
per_layer = 4 * (D**2 + D) + (2 * D * D_FF + D_FF + D) + 2 * 2 * D  # attention, FFN, two LayerNorms
n_params = sum(p.numel() for p in encoder.parameters())
assert n_params == 6 * per_layer
print("a stack of 6 layers:", tuple(encoder(x, mask).shape), f"with {n_params:,} parameters = 6 × {per_layer:,}")

# %% [markdown]
# ## 6. Post-LN and pre-LN in a deep stack: the gradients at the start
#
# Section 4 said that the order of norm and shortcut decides how the gradient is shared among the
# layers. The experiment below measures it: twelve of section 5's `EncoderLayer`s in an `Encoder`,
# post-LN and pre-LN (with its final LayerNorm), from the same start. Every weight matrix is drawn by
# *Xavier's uniform rule*: uniformly between $\pm\sqrt{6/(n_\text{in} + n_\text{out})}$, for a
# matrix from $n_\text{in}$ to $n_\text{out}$ features, and every bias starts at 0. That keeps the
# size of the signals about the same from layer to layer. `nn.Transformer` draws its matrices the
# same way (its feed-forward biases keep PyTorch's default). Our full model in chapter 06 does as
# this experiment does for every linear layer; its embedding, and the output layer tied to it, keep
# chapter 01's N(0, 1/d_model).
# The experiment feeds a batch of random vectors and puts a linear classifier on top, with **random target classes**. Then it backpropagates the usual classification loss once:
# the *cross-entropy*, minus the logarithm of the probability that the classifier gives the right
# class. No training happens. We only look at the gradients at the start, averaged over three
# random initialisations. We measure two gradients: that of each layer's parameters, and that on
# the residual stream at each layer's output, $\partial L / \partial x_l$.

# %%
N_LAYERS, D_EXP, HEADS_EXP, N_CLASSES = 12, 64, 4, 100


def gradients_at_initialisation(norm_first: bool, seed: int) -> tuple[list[float], list[float], list[float]]:
    """Per layer: the gradient norm of its parameters, the gradient norm on the residual stream at its
    output, and the stream's size (root mean square) there."""
    torch.manual_seed(seed)
    layers = [EncoderLayer(D_EXP, HEADS_EXP, 4 * D_EXP, dropout=0.0, norm_first=norm_first) for _ in range(N_LAYERS)]
    for module in (m for layer in layers for m in layer.modules() if isinstance(m, nn.Linear)):
        nn.init.xavier_uniform_(module.weight)
        nn.init.zeros_(module.bias)
    encoder = Encoder(layers, nn.LayerNorm(D_EXP) if norm_first else None)  # pre-LN ends with a LayerNorm;
    # None: encoder.norm is the identity (post-LN ends every layer with a LayerNorm already)
    classifier = nn.Linear(D_EXP, N_CLASSES)
    x = torch.randn(8, 16, D_EXP)  # (B, S, D): unit-variance inputs, like scaled embeddings
    targets = torch.randint(N_CLASSES, (8, 16))  # random classes: nothing to learn, only gradients to look at
    outputs = []  # the residual stream after each layer, (B, S, D) each
    h = x
    for layer in layers:
        h = layer(h)
        h.retain_grad()  # keep ∂L/∂h: backward() keeps gradients of the parameters only
        outputs.append(h)
    F.cross_entropy(classifier(encoder.norm(h)).flatten(0, 1), targets.flatten()).backward()
    grad_norms = [torch.sqrt(sum(p.grad.pow(2).sum() for p in layer.parameters())).item() for layer in layers]
    stream_grads = [h.grad.norm().item() for h in outputs]
    stream = [h.pow(2).mean().sqrt().item() for h in outputs]
    return grad_norms, stream_grads, stream


results, seed_runs = {}, {}
for norm_first, name in ((False, "post-LN (paper)"), (True, "pre-LN")):
    seed_runs[name] = [gradients_at_initialisation(norm_first, seed) for seed in range(3)]
    results[name] = [torch.tensor([run[i] for run in seed_runs[name]]).mean(0) for i in range(3)]  # mean over seeds

# %% [markdown]
# <details><summary>The figure in words</summary>
#
# Three panels have the layer number, 1 to 12, on the horizontal axis, with
# one line for post-LN and one for pre-LN. On the left is the size of the gradient of each layer's
# parameters. The post-LN line rises overall from layer 1 to layer 12; the pre-LN
# line starts higher at layer 1 and falls steadily towards the top. In the middle is the size of the
# gradient on the residual stream at each layer's output. Pre-LN's falls steadily from layer 1 to
# layer 12; post-LN's ends higher at the top than at layer 1. On the right is the
# size of the vectors after each layer. Post-LN stays flat at 1, while pre-LN grows with every layer.
#
# </details>

# %% tags=["hide-input"]
depth = range(1, N_LAYERS + 1)
fig, axes = plt.subplots(1, 3, figsize=(16, 3.8))
for name, curves in results.items():
    for ax, curve in zip(axes, curves, strict=True):
        ax.plot(depth, curve, "o-", label=name)
axes[0].set(xlabel="layer (1 = next to the input)", ylabel="‖gradient‖", title="Gradient of each layer's parameters")
axes[1].set(xlabel="layer", ylabel="‖∂L/∂x‖", title="Gradient on the residual stream at the layer's output")
axes[2].set(xlabel="layer", ylabel="RMS", title="Size of the residual stream after the layer")
for ax in axes:
    ax.legend()
    ax.set_xticks(list(depth))
fig.suptitle("Post-LN's gradients grow gently towards the top, pre-LN's are largest at the bottom", y=1.02)
plt.tight_layout()
plt.show()

for name, (grads, stream_grads, stream) in results.items():
    print(
        f"{name:16} layer 1's parameter gradient {grads[0]:.2f};  layer 12 / layer 1: parameter gradient "
        f"{grads[-1] / grads[0]:.2f}, "
        f"stream gradient {stream_grads[-1] / stream_grads[0]:.2f};  stream RMS after layer 12: {stream[-1]:.1f}"
    )

# %% tags=["hide-cell"]
from transformer_course_tools.notebook.claims import expect_at_least, expect_at_most

top_over_bottom = {name: [grads[-1] / grads[0] for grads, _, _ in runs] for name, runs in seed_runs.items()}
expect_at_least("post-LN: parameter gradient, layer 12 / layer 1, lowest of the three seeds",
                min(top_over_bottom["post-LN (paper)"]), 1.0)
expect_at_most("pre-LN: the same ratio, highest of the three seeds", max(top_over_bottom["pre-LN"]), 0.7)

# %% [markdown]
# - **Post-LN (the paper):** every layer outputs normalised vectors (right panel: flat at 1). The
#   parameter gradient grows gently up the stack. The top layer's is no smaller than the bottom
#   layer's in each of the three initialisations (the folded check gives the lowest run's ratio;
#   the lines under the figure, that of the averages). Xiong et al. (2020, "On Layer Normalization
#   in the Transformer Architecture") show that post-LN's parameter gradients are largest near the
#   top of the stack, and connect them to the paper's **warm-up** (§5.3), which raises the size of the training steps gradually over the first 4,000
#   steps (chapter 08 builds it). At 12 layers of width 64 the effect is small;
#   [chapter 11](11_testing_the_papers_choices.ipynb) tests whether post-LN *needs* the warm-up.
# - **Pre-LN:** the residual stream grows with depth, since each layer adds to it and nothing
#   rescales it (right panel). The parameter gradient is largest at the *bottom* and shrinks upwards.
#   The middle panel shows where this comes from: the gradient on the stream itself is largest at
#   the bottom. On its way down, it crosses each layer in two ways: unchanged along the shortcut,
#   and back through the layer's branch. The two add up, so the gradient reaching a low layer
#   carries a share from every layer above it. The flip side follows from the right-hand panel:
#   the upper layers add their updates to a stream that has grown, so each of them moves it
#   comparatively little.
#
# Others' results vary. Shleifer et al. (2021, NormFormer) also find larger gradients in the early
# layers of pre-LN language models, during training. Xiong et al. found no
# such slope at initialisation, but nearly equal gradients in every pre-LN layer, with other sizes and
# another measure (one weight matrix per layer). So take the profiles above as those of this small
# stack, not a law.


# %% [markdown]
# ## 7. A check: the same numbers as `nn.TransformerEncoderLayer`
#
# The stack runs and has the right size; an independent reference says whether it computes the
# right thing. PyTorch ships the same layer. `EncoderLayer.from_torch` builds ours with the weights of a
# `nn.TransformerEncoderLayer(batch_first=True)`. It splits PyTorch's packed $W^Q, W^K, W^V$ matrix
# into our three projections. Two conventions differ and must be converted explicitly:
#
# - PyTorch's `src_key_padding_mask` has the opposite polarity to ours, so it gets `~keep`;
# - dropout must be 0 on both sides (or both in `eval()`), since random masks never match.
#
# We randomise the LayerNorm parameters first, so that a swapped or missing norm would show. In the
# six-layer stack each layer gets its own random weights, so that layers applied in the wrong order,
# or one layer applied six times, would show too.

# %% tags=["nbval-ignore-output"]
keep = tokens != 0  # (B, S) True = real token
for norm_first in (False, True):
    theirs = nn.TransformerEncoderLayer(D, H, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    with torch.no_grad():
        for ln in (theirs.norm1, theirs.norm2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.normal_()
    ours = EncoderLayer.from_torch(theirs).eval()
    stack_theirs = nn.TransformerEncoder(theirs, num_layers=6, enable_nested_tensor=False)  # deep copies of `theirs`
    with torch.no_grad():
        for copy in stack_theirs.layers:  # then each its own random weights: six different layers
            for p in copy.parameters():
                p.normal_(0, 0.3)
    stack_ours = Encoder([EncoderLayer.from_torch(la) for la in stack_theirs.layers]).eval()
    with torch.no_grad():
        layer_diff = (ours(x, keep[:, None, None, :]) - theirs(x, src_key_padding_mask=~keep)).abs().max().item()
        stack_diff = (
            (stack_ours(x, keep[:, None, None, :]) - stack_theirs(x, src_key_padding_mask=~keep)).abs().max().item()
        )
    assert layer_diff < 1e-5 and stack_diff < 1e-5
    print(f"norm_first={norm_first!s:5}  max |ours − PyTorch|: one layer {layer_diff:.1e}, six layers {stack_diff:.1e}")

# %% [markdown]
# The assert allows differences up to 1e-5, a margin for float32 rounding: the two sides add some
# sums in another order, which moves the last bits, far below that margin. So the six-layer encoder
# built from this chapter's parts computes what PyTorch's computes, in the paper's order and in
# pre-LN.

# %% [markdown]
# ## Summary
#
# - The feed-forward network is equation (2), applied to each position separately (two
#   convolutions of kernel size 1); it holds two thirds of an encoder layer's parameters.
# - A residual block is `norm(x + dropout(sublayer(x)))` in the paper (post-LN) and
#   `x + dropout(sublayer(norm(x)))` in pre-LN. The shortcuts form the residual stream, which
#   pre-LN never normalises.
# - LayerNorm uses the biased variance, with $\epsilon$ inside the square root.
# - At initialisation, in our 12-layer stack (width 64, Xavier weights, random targets), post-LN's
#   gradients grew gently up the layers. Pre-LN's were largest at the bottom: the gradient
#   on its residual stream gathers a share from every layer on the way down. Its stream grew with
#   depth.
# - Our `EncoderLayer` and `Encoder` give the same numbers as PyTorch's, with its masks flipped.
#
# **Exercises:** [exercises/ex05_encoder.ipynb](../exercises/ex05_encoder.ipynb) asks you to write
# `PositionwiseFeedForward.forward` (ex05_1), `residual` (ex05_2) and `EncoderLayer.forward` (ex05_3).
# Stuck on one? `python -m transformer_course restore ex05_1` puts its worked answer in your student
# edition.

# %% [markdown]
# ## Check yourself
#
# 1. What does "position-wise" mean for the feed-forward network, and why is it the same as two
#    convolutions of kernel size 1?
#    <details><summary>Answer</summary>
#
#    Output position $s$ depends on input position $s$ only: the same two linear maps are applied to
#    every position separately, which is what a kernel-1 convolution sliding along the sequence does.
#    </details>
# 2. In which two ways does `(x - mean) / (x.std() + eps)` differ from `nn.LayerNorm`?
#    <details><summary>Answer</summary>
#
#    `std` divides by $D - 1$ instead of $D$, and $\epsilon$ is added to the standard deviation
#    instead of inside the square root with the variance.
#    </details>
# 3. Write one post-LN and one pre-LN sub-layer. Which one does the paper use?
#    <details><summary>Answer</summary>
#
#    Post-LN: $\mathrm{LN}(x + \mathrm{Dropout}(f(x)))$, the paper's. Pre-LN:
#    $x + \mathrm{Dropout}(f(\mathrm{LN}(x)))$, with a final LayerNorm after the stack.
#    </details>
# 4. In a pre-LN stack, what happens to the residual stream as layers are added, and why?
#    <details><summary>Answer</summary>
#
#    It grows with depth. Each layer adds its sub-layers' outputs to it, and nothing rescales it:
#    only the copies fed to the sub-layers are normalised. So a pre-LN stack ends with one final
#    LayerNorm, which normalises the stream before it leaves.
#    </details>
# 5. Why does a residual connection help the gradient reach the lower layers?
#    <details><summary>Answer</summary>
#
#    The derivative of $x + f(x)$ with respect to $x$ is the identity plus that of $f$. So part of
#    the gradient crosses the addition unchanged, whatever $f$ does. In pre-LN that part thus reaches
#    every layer unchanged; in post-LN each LayerNorm above still rescales it. (Chapter 11 trains a
#    model without the shortcuts and watches it fail.)
#    </details>
#
# ## Further reading
#
# - The paper: §3.1 (the encoder and its sub-layers), §3.3 (equation (2)), §5.3 (the warm-up),
#   §5.4 (residual dropout).
# - He et al. (2016), *Deep Residual Learning for Image Recognition*: residual connections.
# - Ba, Kiros and Hinton (2016), *Layer Normalization*.
# - Xiong et al. (2020), *On Layer Normalization in the Transformer Architecture*: post-LN, pre-LN
#   and why the former needs a warm-up.
# - Liu et al. (2020), *Understanding the Difficulty of Training Transformers*: how post-LN models
#   come to depend on their residual branches, and a remedy.
# - Wang et al. (2019), *Learning Deep Transformer Models for Machine Translation*: pre-LN for
#   deep encoders.
# - Shleifer, Weston and Ott (2021), *NormFormer*: pre-LN's larger gradients in the early layers,
#   and extra normalisations against them.
# - Liu et al. (2022), *Swin Transformer V2*: a vision model that normalises each branch's output,
#   the form of this chapter's common mistake, on purpose.

# %% [markdown]
# **Next:** [Chapter 06 — The decoder, the masks, and the full
# Transformer](06_decoder_and_masks.ipynb): the decoder adds two masks and attention over the
# encoder's output, and the whole model fits on one page.
