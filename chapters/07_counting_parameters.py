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
# # Chapter 07 — Counting parameters: the paper's Table 3
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/07_counting_parameters.ipynb)
#
# The paper gives the size of each model it trained: 65 million parameters for the base model, 213
# million for the big one (Table 3). Counting them yourself tells you where a Transformer's size
# lives: in the embedding, in attention or in the feed-forward networks, and how each part grows
# with $V$, $D$, $d_{ff}$ and $N$. This chapter counts the parameters of the model you built
# in chapter 06, writes the count as a formula and splits the base model into its parts. Then it
# holds the count against the table, which cannot be matched with one vocabulary.
#
# *You may skip this chapter:* no later chapter builds on it (chapter 16 reuses its meta device
# once), and it builds on nothing after chapter 06. Sections 1 and 2 count; sections 3 and 4 hold the
# count against the paper's Table 3, and you may skim them.
#
# **Learning goals**
#
# - build a model on PyTorch's meta device and count its parameters without allocating them;
# - write the count as a formula that is linear in the vocabulary size;
# - check a published count against the architecture, and find where it disagrees;
# - say which parts of a Transformer hold its parameters, and how each part grows.
#
# **In the paper:** Table 3 (model variations and their sizes), §3.4 (one shared matrix) and §5.1
# (a shared vocabulary of about 37,000 tokens).

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

# %% tags=["hide-cell"]
import math
from dataclasses import replace

import matplotlib.pyplot as plt
import torch

from transformer_course import Transformer, TransformerConfig
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.setup import setup_chapter

setup_chapter("07")  # the short stop at an unwritten exercise; printing and plotting style

# %% [markdown]
# ## Where we are
#
# Chapter 06 assembled the whole model. Its size follows from a few numbers: the number of layers
# $N$, the width $D$ (the paper's $d_\text{model}$), the feed-forward width $d_{ff}$ and the
# vocabulary size. The paper's two languages share one vocabulary (§5.1), so
# $V_\text{src} = V_\text{tgt}$. In this chapter we write plain $V$ for that one size. The
# [notation page](../book/notation.md) lists the letters.
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right. The boxes with
# weights are highlighted: both token embeddings, every box of the encoder and decoder layers, and
# the linear layer at the top, tied to the embedding. The title says that each of them is counted.
# The softmax above the linear layer is highlighted with the decoder, though it has no weights. The
# positional encodings, the loss and the token ids stay plain.
#
# </details>

# %%
architecture_map(["embeddings", "encoder", "decoder"], title="Chapter 07: every box with weights is counted")

# %% [markdown]
# ## 1. Counting without memory
#
# Building the base model to count it would allocate hundreds of megabytes. On PyTorch's **meta
# device** a tensor has a shape but no storage. The model is built in no time, and
# `num_parameters()` just adds up shapes. A tied matrix is one `Parameter`, counted once.
# `TransformerConfig.paper_base(V)` and `paper_big(V)` hold Table 3's two sizes for a vocabulary of V.
# Both share one V × D matrix between the two embeddings and the output layer, as §3.4 does
# (`share_embeddings=True`, chapter 06).
# Keywords change single sizes, as in `paper_base(V, d_ff=1024)`.


# %%
def count(config: TransformerConfig) -> int:
    with torch.device("meta"):  # shapes only, no memory
        return Transformer(config).num_parameters()


base_37k, big_37k = count(TransformerConfig.paper_base(37_000)), count(TransformerConfig.paper_big(37_000))
print(f"vocabulary 37,000 (§5.1):  base {base_37k / 1e6:.1f}M (paper 65M, {base_37k / 65e6 - 1:+.1%}: "
      f"{(65e6 - base_37k) / 1e6:.1f}M short),  big {big_37k / 1e6:.1f}M (paper 213M, {big_37k / 213e6 - 1:+.1%})")

# %% [markdown]
# > **Common mistake — counting a shared matrix three times.** `state_dict()` lists a tied matrix
# > under each of its names: the source embedding, the target embedding and the output layer. A
# > sum over `state_dict()` counts it once per name. `parameters()` yields each `Parameter` once,
# > and `num_parameters()` sums those.

# %%
with torch.device("meta"):
    base_model = Transformer(TransformerConfig.paper_base(37_000))
by_name = sum(t.numel() for t in base_model.state_dict().values())  # the bug: the shared matrix three times
print(f"summed over state_dict(): {by_name / 1e6:.1f}M;  each Parameter once: {base_model.num_parameters() / 1e6:.1f}M")
extra = (by_name - base_model.num_parameters()) / (37_000 * 512)
print(f"the difference, in (V, D) matrices: {extra:.0f}")

# %% [markdown]
# **The count as a formula.** With the paper's head sizes ($H d_k = H d_v = D$), an encoder layer
# holds four $D \times D$ projections with their biases, the two feed-forward matrices with theirs,
# and two LayerNorms of $2D$ numbers each. A decoder layer holds eight projections (self- and
# cross-attention) and three LayerNorms. Add the shared $V \times D$ matrix and the output bias of
# $V$ numbers. The model is post-LN, as in the paper, so no final LayerNorm ends either stack
# (chapter 05):
#
# $$ N\big(4(D^2 + D) + 2Dd_{ff} + d_{ff} + D + 4D\big) + N\big(8(D^2 + D) + 2Dd_{ff} + d_{ff} + D + 6D\big) + VD + V $$
#
# The count is linear in $V$. The package's file `counting.py` writes this formula as
# `transformer_parameters(config)`. It is built from `attention_parameters`, the count of one
# attention block, and `layer_parameters`, the count of one layer (this chapter's exercises). The cell checks it against the meta-device count. With it we can ask whether the
# paper counted the same model.


# %%
from transformer_course.counting import transformer_parameters  # the formula, part by part (this chapter's exercises)

assert base_37k == transformer_parameters(TransformerConfig.paper_base(37_000))
assert big_37k == transformer_parameters(TransformerConfig.paper_big(37_000))
print("the meta-device count equals the formula, for base and big")

# %% [markdown]
# ## 2. Where the parameters live
#
# The formula of section 1 tells us where a Transformer keeps its parameters. Each attention block
# holds $4D^2$ weights (chapter 04, section 7); each feed-forward network $2Dd_{ff} = 8D^2$ when $d_{ff} = 4D$. The cell
# splits the base model, with the paper's 37,000 tokens, into the parts of Figure 1. It checks two
# parts against the formulas of `counting.py` for one attention and one layer:


# %%
def part_of(name: str) -> str:
    """The part of Figure 1 that the parameter called `name` belongs to."""
    stack = name.split(".")[0]  # "encoder", "decoder", "src_embed" or "output"
    if "embed" in name:
        return "shared embedding (V × D)"
    if "cross_attn" in name:
        return "decoder cross-attention"
    if "self_attn" in name:
        return f"{stack} self-attention"
    if "ffn" in name:
        return f"{stack} feed-forward"
    return "LayerNorms and output bias"


parts: dict[str, int] = {}
for name, p in base_model.named_parameters():  # each Parameter once: the shared matrix under its first name
    parts[part_of(name)] = parts.get(part_of(name), 0) + p.numel()
for part, n in sorted(parts.items(), key=lambda item: -item[1]):
    print(f"{part:28} {n / 1e6:5.1f}M  {n / base_model.num_parameters():6.1%}")

from transformer_course.counting import attention_parameters, layer_parameters  # counting.py's formulas, part by part

assert parts["encoder self-attention"] == parts["decoder cross-attention"] == 6 * attention_parameters(512, 8)
# layer_parameters(D, H, d_ff, decoder=False) counts an encoder layer; less its attention and its
# two LayerNorms (2 · 2 · D), that leaves the feed-forward network
network = layer_parameters(512, 8, 2048, decoder=False) - attention_parameters(512, 8) - 2 * 2 * 512
assert parts["encoder feed-forward"] == parts["decoder feed-forward"] == 6 * network
print("attention and feed-forward parts: equal to counting.py's formulas × 6 layers")

# %% [markdown]
# The one shared matrix is the largest single part. The feed-forward networks of the two stacks
# hold more together: each holds twice the weights of an attention block ($8D^2$ against $4D^2$).
# LayerNorms and biases are crumbs. A larger vocabulary grows only the shared matrix and the output
# bias ($V$ numbers). More layers grow all the others; a larger $D$ grows every part, the shared
# matrix included.
#
# Two rules of thumb follow. With $d_{ff} = 4D$, an encoder layer holds about $12D^2$ weights and a
# decoder layer $16D^2$, so the model holds about $28ND^2 + VD$. And each parameter costs memory: 4
# bytes in float32. Training keeps four such numbers per parameter: the weight, its gradient, and
# the two running averages that the optimizer Adam keeps (chapter 08 introduces it). Each batch's
# activations come on top.

# %%
rule = 28 * 6 * 512**2 + 37_000 * 512  # 28·N·D² + V·D for the base model: the weight matrices alone
print(f"28·N·D² + V·D = {rule / 1e6:.1f}M against the count's {base_37k / 1e6:.1f}M")
print(f"base model in float32: {4 * base_37k / 1e6:.0f} MB of weights, {16 * base_37k / 1e6:.0f} MB in training with Adam")

# %% [markdown]
# ## 3. Does Table 3 count our model?
#
# Sections 3 and 4 hold our count against the paper's own numbers in Table 3. Besides base and big,
# its rows vary one setting of the base model each, in lettered groups:
#
# - rows (A) trade heads against head size at constant $H \cdot d_k = 512$ (the paper writes $h$
#   for $H$); they have no printed size;
# - rows (B) and (C) change $d_k$, $N$, $d_\text{model}$ or $d_{ff}$, each with a printed size;
# - rows (D) and (E) change dropout, label smoothing and the positional encoding, with no printed
#   size; we leave them out.
#
# Section 1's count of the base model, 63.1M, is close to the paper's 65M, but 1.9M (2.9%) short.
# Where could the 1.9M come from?
#
# **Does the paper count without biases, or with an untied output projection?** Our count already
# includes the output bias and the attention biases. Dropping either would take 0.06% of the model
# away, moving the count further below 65M. Only an untied output matrix (or separate source and
# target embeddings) adds parameters: a whole $V \times D$ matrix, 19M for base, far too many. The
# table below lists these variants.

# %%
V_PAPER, N_LAYERS = 37_000, 6
nothing_shared = dict(share_embeddings=False, tie_output=False)
separate_base = count(replace(TransformerConfig.paper_base(V_PAPER), **nothing_shared))
separate_big = count(replace(TransformerConfig.paper_big(V_PAPER), **nothing_shared))
# the biases of the 3N attentions (N in the encoder, 2N in the decoder), for base and big:
# attention_parameters with bias=False counts the weights alone
attention_biases = {d: 3 * N_LAYERS * (attention_parameters(d, h) - attention_parameters(d, h, bias=False))
                    for d, h in ((512, 8), (1024, 16))}  # fmt: skip
print(f"{'variant (vocabulary 37,000)':40} {'base':>7} {'Δ base':>9} {'big':>8} {'Δ big':>9}    Table 3: 65M, 213M")
for name, base_n, big_n in (
    ("ours: one shared matrix + output bias", base_37k, big_37k),
    ("without the output bias (− V)", base_37k - V_PAPER, big_37k - V_PAPER),
    ("without attention biases (− 12·N·D)", base_37k - attention_biases[512], big_37k - attention_biases[1024]),
    ("output projection not tied (+ V·D)", base_37k + V_PAPER * 512, big_37k + V_PAPER * 1024),
    ("nothing shared: three (V, D) matrices", separate_base, separate_big),
):
    base_delta, big_delta = (base_n - base_37k) / 1e3, (big_n - big_37k) / 1e3  # in thousands
    print(f"{name:40} {base_n / 1e6:6.1f}M {base_delta:+8,.0f}K {big_n / 1e6:7.1f}M {big_delta:+8,.0f}K")
print(f"share of the base model: output bias {V_PAPER / base_37k:.2%}, attention biases {attention_biases[512] / base_37k:.2%}")

# %% [markdown]
# The Δ columns give each variant's difference from ours, in thousands. Dropping a bias moves the
# count by tens of thousands, too little to show in millions; the last line gives the two shares.
# A matrix moves it by millions, too many. None closes the gap of 1.9M, so we keep the tying of
# §3.4. That leaves the vocabulary, the only size the paper gives loosely ("about 37000 tokens").
#
# First, one comparison needs no vocabulary at all. Take the big model and row (C) with
# $d_\text{model} = 1024$. They have the same $d_\text{model}$, so the same embedding matrix
# whatever $V$ is. They differ only in $d_{ff}$: 4096 against 2048 ($H$ does not change the count
# while $H d_k = d_\text{model}$). Their difference is therefore the extra feed-forward weights alone:

# %%
wide_base = count(TransformerConfig.paper_base(37_000, d_model=1024, d_k=128, d_v=128))  # row (C) d_model=1024
ffn_extra = big_37k - wide_base
by_hand = 12 * (2 * 1024 * (4096 - 2048) + (4096 - 2048))  # 12 layers × (W₁, W₂ and b₁ grow)
assert ffn_extra == by_hand
print(f"big − (C) d_model=1024: {ffn_extra / 1e6:.1f}M by the architecture, {213 - 168}M in Table 3")

# %% [markdown]
# The architecture says 50.4M, the table 45M. Rounding to whole millions moves a difference by 1M
# at most. This difference does not depend on $V$, so no one vocabulary can fit both rows: the
# table's rows do not all count one architecture the same way. Section 4 finds the vocabulary each
# row implies.
#
# ## 4. The vocabulary each row implies
#
# **Which vocabulary would each row of Table 3 imply?** Every extra token adds $D$ embedding
# entries and one output bias. So a count is linear in $V$. With $n$ our count at $V = 37{,}000$ and
# $p$ the paper's, the $V$ that hits $p$ exactly is $37{,}000 + (p - n)/(D + 1)$; the folded cell
# solves it for each row. A count *rounds right* when it rounds to the paper's printed millions:
# $p - 0.5 \le$ count$/10^6 < p + 0.5$. The test applies to every row with a printed size: base, big,
# rows (B) (a smaller $d_k$) and rows (C) (other $N$, $d_\text{model}$ or $d_{ff}$). Rows (A) (heads
# against head size) print no size: they get our count, the base model's, and a dash.

# %% tags=["hide-input"]
ROWS = [  # (Table 3 row, overrides of the base configuration, parameters in the paper ×10⁶; None: not printed)
    ("base", {}, 65),
    ("(A) h=1, d_k=d_v=512", dict(n_heads=1, d_k=512, d_v=512), None),
    ("(A) h=32, d_k=d_v=16", dict(n_heads=32, d_k=16, d_v=16), None),
    ("(B) d_k=16", dict(d_k=16, d_v=64), 58),
    ("(B) d_k=32", dict(d_k=32, d_v=64), 60),
    ("(C) N=2", dict(n_encoder_layers=2, n_decoder_layers=2), 36),
    ("(C) N=4", dict(n_encoder_layers=4, n_decoder_layers=4), 50),
    ("(C) N=8", dict(n_encoder_layers=8, n_decoder_layers=8), 80),
    ("(C) d_model=256, d_k=d_v=32", dict(d_model=256, d_k=32, d_v=32), 28),
    ("(C) d_model=1024, d_k=d_v=128", dict(d_model=1024, d_k=128, d_v=128), 168),
    ("(C) d_ff=1024", dict(d_ff=1024), 53),
    ("(C) d_ff=4096", dict(d_ff=4096), 90),
    ("big", "big", 213),
]


def row_config(overrides, vocab_size: int) -> TransformerConfig:
    if overrides == "big":
        return TransformerConfig.paper_big(vocab_size)
    return TransformerConfig.paper_base(vocab_size, **overrides)


implied, rounds_right = {}, {}
print(f"{'Table 3 row':31} {'paper':>6} {'ours, V=37,000':>15} {'vs paper':>10} {'gap':>7} {'V implied':>10}")
for name, overrides, paper in ROWS:
    config_37k = row_config(overrides, 37_000)
    n = count(config_37k)
    if paper is None:  # rows (A): Table 3 prints no size
        print(f"{name:31} {'—':>6} {n / 1e6:14.1f}M {'':10} {'':7} {'—':>10}")
        continue
    per_token = config_37k.d_model + 1  # each token adds D + 1 parameters
    implied[name] = 37_000 + (paper * 1e6 - n) / per_token
    # the vocabularies whose count rounds to the printed millions: paper − 0.5 ≤ count / 10⁶ < paper + 0.5
    rounds_right[name] = (37_000 + ((paper - 0.5) * 1e6 - n) / per_token, 37_000 + ((paper + 0.5) * 1e6 - n) / per_token)
    gap = (n - paper * 1e6) / 1e6  # in millions of parameters: negative when our count is lower
    print(f"{name:31} {paper:5}M {n / 1e6:14.1f}M {n / (paper * 1e6) - 1:+10.1%} {gap:+6.1f}M {implied[name]:10,.0f}")

base_family = [name for name in implied if name != "big"]
low = math.ceil(max(rounds_right[name][0] for name in base_family))
high = math.floor(min(rounds_right[name][1] for name in base_family))
print(f"\nthe {len(base_family)} base-family rows imply V from {min(implied[n] for n in base_family):,.0f} "
      f"to {max(implied[n] for n in base_family):,.0f}; all {len(base_family)} round right for V = {low:,} … {high:,}")
print(f"the big row implies V = {implied['big']:,.0f}, and rounds right only for V = "
      f"{math.ceil(rounds_right['big'][0]):,} … {math.floor(rounds_right['big'][1]):,}")

# %% [markdown]
# The ten base-family rows with a printed size imply vocabularies from 40,106 to 41,826 tokens. All
# ten round to the published numbers for any $V$ from 40,852 to 41,080, a vocabulary about a tenth
# larger than §5.1's "about 37000". A fixed number of uncounted parameters would not fit them. A
# missing token costs $D + 1$ parameters, so its gap grows with $D$, and the `gap` column does: 1.1M
# short at $d_\text{model} = 256$, 4.1M at 1024. The big row alone implies 35,749 and rounds right
# only from 35,262 to 36,236. The two ranges do not meet, as section 3's difference predicted. The
# paper does not say why: a different vocabulary for the big run, or a counting slip. A $V$ fitted
# to spread the error evenly would match the table by construction and prove nothing. So we keep
# the paper's "about 37000", the one vocabulary it states.
#
# The figure draws, for each row with a printed size, the vocabularies at which our count rounds to
# the paper's number. The folded cell kept them: `rounds_right[row]` is that row's (lowest,
# highest) $V$, and `low` … `high` is the range where all ten base-family rows meet.
#
# <details><summary>The figure in words</summary>
#
# A horizontal chart has one row per Table 3 entry with a printed size, the base model at the top
# and the big model at the bottom. Each row has one bar along the vocabulary axis: the values of V
# at which our count rounds to the paper's. A green band marks the vocabularies where every
# base-family bar overlaps, and a dotted line marks §5.1's 37,000. The ten base-family bars all
# cross the green band, near 41,000. The big row's bar lies further left, around 35,700. No bar
# reaches the dotted line.
#
# </details>

# %%
printed = [name for name, _, paper in ROWS if paper is not None]  # rows (A) have no size to compare with
fig, ax = plt.subplots(figsize=(10, 4.4))
for row, name in enumerate(printed):
    start, end = rounds_right[name]
    ax.plot([start, end], [row, row], lw=7, solid_capstyle="butt", color="tab:orange" if name == "big" else "tab:blue")
ax.axvspan(low, high, color="green", alpha=0.2, label=f"every base-family row: {low:,} … {high:,}")
ax.axvline(V_PAPER, color="black", ls=":", label="§5.1: about 37,000")
ax.set_yticks(range(len(printed)), printed)
ax.invert_yaxis()
ax.xaxis.set_major_formatter("{x:,.0f}")
ax.set(xlabel="vocabulary size V", title="The vocabularies at which each row rounds to Table 3's number")
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the axes: it covers no bar
plt.tight_layout()
plt.show()
holding = [name for name in printed if rounds_right[name][0] <= V_PAPER < rounds_right[name][1]]
print(f"rows that round right at V = {V_PAPER:,}: {', '.join(holding) or 'none'}")

# %% [markdown]
# ## Summary
#
# - The meta device builds a model from shapes alone, so counting the big model costs no memory.
# - The architecture is counted exactly: the count equals the closed form of section 1, which is
#   linear in $V$.
# - The shared matrix is the base model's largest single part, the feed-forward networks together
#   its largest share; LayerNorms and biases are crumbs. A larger $V$ grows only the shared matrix
#   and the output bias, a deeper model everything else, a wider one every part. About
#   $28ND^2 + VD$ in all; 4 bytes each in float32, four numbers each in training with Adam.
# - The paper's numbers are rounded to millions. Its big row and its $d_\text{model} = 1024$ row
#   differ by 45M where the architecture says 50.4M. They are not consistent with one vocabulary, so a
#   published count can disagree with the architecture it describes. Biases and tying do not
#   explain base's missing 1.9M; a vocabulary about a tenth larger would, for every base-family
#   row, but not for big.
# - With the paper's 37,000 tokens, base is 2.9% low and big 0.6% high. Every base-family row is
#   low.
#
# **Exercises:**
# [exercises/ex07_counting_parameters.ipynb](../exercises/ex07_counting_parameters.ipynb) asks you to
# write `attention_parameters` (ex07_1), `layer_parameters` (ex07_2) and `transformer_parameters`
# (ex07_3). Stuck on one? `python -m transformer_course restore ex07_1` puts its worked answer in your
# student edition. The third folds in a question worth predicting by hand: how many parameters does
# the base model gain when it is made pre-LN with separate source and target embeddings? Section 1's
# formula leaves out pre-LN's final LayerNorms: extend it. Chapter 11 tests some of the paper's other
# choices by training small models.

# %% [markdown]
# ## Check yourself
#
# 1. Why can a model on the meta device be counted but not used?
#    <details><summary>Answer</summary>
#
#    Its tensors have shapes but no values. Counting parameters needs only the shapes. A forward pass
#    needs the numbers: on the meta device it can at best return shapes.
#    </details>
# 2. How many parameters does one more token add to the base model, with one shared matrix and an
#    output bias?
#    <details><summary>Answer</summary>
#
#    $D + 1 = 513$: one row of the shared embedding matrix and one entry of the output bias.
#    </details>
# 3. Why can the big model and row (C) with $d_\text{model} = 1024$ not both fit one vocabulary?
#    <details><summary>Answer</summary>
#
#    They have the same width, so the same embedding matrix for any $V$. They differ only in
#    $d_{ff}$, and that difference is fixed by the architecture: about 50M. Table 3's entries differ by
#    45M.
#    </details>
# 4. Why does a sum over `state_dict()` over-count a model with one shared matrix?
#    <details><summary>Answer</summary>
#
#    `state_dict()` lists the shared matrix under each of its three names. `parameters()` yields
#    each `Parameter` once.
#    </details>
# 5. Which single part of the base model is largest, and which kind of block holds the most in total?
#    <details><summary>Answer</summary>
#
#    The shared $V \times D$ matrix, with 30%. The two feed-forward networks hold 40% together, as
#    each holds $8D^2$ weights per layer against $4D^2$ for an attention block.
#    </details>
#
# ## Further reading
#
# - The paper: Table 3 (model variations), §3.4 (one shared matrix), §5.1 (the vocabulary).
# - PyTorch's documentation of the meta device: building modules without memory.
# - Kaplan et al. (2020), *Scaling Laws for Neural Language Models*: parameter counts without the
#   embeddings, and why they are counted that way.

# %% [markdown]
# **Next:** [Chapter 08 — Training a translator](08_training.ipynb): the model learns to translate
# English number words into German in a few minutes.
