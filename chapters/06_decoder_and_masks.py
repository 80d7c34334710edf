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
# # Chapter 06 — The decoder, the masks, and the full Transformer
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/06_decoder_and_masks.ipynb)
#
# The encoder reads the whole source sentence at once. The decoder writes the translation one
# token at a time, yet it is *trained* on whole target sentences in one pass. The causal mask makes
# that honest; a padding mask hides the filler that makes batches rectangular. One extra attention
# sub-layer connects the decoder to the encoder. With them we assemble the complete model of the
# paper's Figure 1. At the end you watch it keep the promise the masks make: change the future
# target tokens, and no earlier prediction moves. Then you read its code on one page, from token
# ids to logits. The page is the course's full class, so it also holds a few options that later
# chapters switch on; a folded box names them, so that you can skip them.
#
# **Learning goals**
#
# - build the causal mask and the padding mask (True = may attend), combine them, and read them
#   on a real padded batch;
# - explain cross-attention: queries from the decoder, keys and values from the encoder's output
#   (the *memory*);
# - assemble the decoder layer, the decoder stack and the full `Transformer`, with one embedding
#   matrix shared by source, target and output (§3.4), and check the layer against
#   `nn.TransformerDecoderLayer`;
# - read the whole model on one page, from token ids to logits.
#
# **In the paper:**
#
# - §3.1: the decoder stack and its third sub-layer;
# - §3.2.3: the three uses of attention, and masking in the decoder;
# - §3.4: shared embeddings and $\sqrt{d_\text{model}}$;
# - §5.1: the shared vocabulary of about 37,000 tokens.

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
import matplotlib.pyplot as plt
import torch
from torch import nn

from transformer_course import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    MultiHeadAttention,
    PositionalEncoding,
    PositionwiseFeedForward,
    TokenEmbedding,
    Transformer,
    TransformerConfig,
    Vocab,
    causal_mask,
    padding_mask,
    residual,
    scaled_dot_product_attention,
    target_mask,
    tokenize,
)
from transformer_course_tools.exercises.checks import run_check
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.pages import check_page, code_block
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("06")  # the short stop at an unwritten exercise; printing and plotting style

# %% [markdown]
# ## Where we are
#
# Chapter 05 built the encoder stack and checked it against PyTorch. This chapter builds the other
# half: the decoder layer, with its masked self-attention and its cross-attention to the encoder's
# output. Then it assembles the whole model: by the end, every box of the map is in
# place.
# The [notation page](../book/notation.md) lists the letters.
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right. The whole
# decoder layer is highlighted, in a dashed frame marked "N× decoder layer". From the bottom, it
# holds masked multi-head self-attention, with weights (B, H, T, T) and a causal and padding mask,
# then "Add & Norm". Cross-attention follows, with queries from below and keys and values from the
# encoder's memory (B, S, D), then "Add & Norm". A feed-forward network and a last "Add & Norm"
# close the layer. Above it, the highlighted linear layer, tied to the embedding, gives logits of
# shape (B, T, V_tgt), and the softmax turns them into probabilities.
#
# </details>

# %%
architecture_map("decoder")

# %% [markdown]
# ## 1. A real padded batch
#
# The padding mask exists because of real batches, so we start with one: every later section uses its shapes and masks.
# Three sentence pairs of different lengths, one vocabulary shared by both languages (the paper
# shares its vocabulary between English and German too, §5.1). Shorter sequences are filled with
# `<pad>` (id 0) to make a rectangle.
#
# The source ends with `<eos>`. It needs no `<bos>`: the encoder predicts nothing.
#
# The decoder's input, `tgt_in`, is the target **shifted right**: it starts with `<bos>`. So decoder
# position $t$ reads the input up to $t$ and must predict the next target token. Those labels are
# the target shifted left: no `<bos>`, and they end with the `<eos>` that `tgt_in` lacks (chapter 08
# builds them). PyTorch's `pad_sequence` does chapter 01's padding in one call.

# %%
from torch.nn.utils.rnn import pad_sequence

pairs = [
    ("the cat sleeps .", "die katze schläft ."),
    ("a small dog runs home .", "ein kleiner hund läuft nach hause ."),
    ("hello !", "hallo !"),
]
vocab = Vocab.build([tokenize(text) for pair in pairs for text in pair])
src = pad_sequence(
    [torch.tensor(vocab.encode(tokenize(en), add_eos=True)) for en, _ in pairs],
    batch_first=True,
    padding_value=vocab.pad_id,
)  # (B, S)
tgt_in = pad_sequence(
    [torch.tensor(vocab.encode(tokenize(de), add_bos=True)) for _, de in pairs],
    batch_first=True,
    padding_value=vocab.pad_id,
)  # (B, T), starts with <bos>
B, S = src.shape
T = tgt_in.shape[1]
print(f"vocabulary: {len(vocab)} tokens;  src {tuple(src.shape)},  tgt_in {tuple(tgt_in.shape)}")
src_words = [[vocab.id_to_token[i] for i in row] for row in src.tolist()]
tgt_words = [[vocab.id_to_token[i] for i in row] for row in tgt_in.tolist()]
for s_row, t_row in zip(src_words, tgt_words, strict=True):
    print(" ".join(s_row), "  |  ", " ".join(t_row))

# %% [markdown]
# ## 2. The causal mask: no peeking at the future (§3.2.3)
#
# The decoder's input in that batch is the whole target, so the first question is what each
# position may read of it. In training, the decoder reads the true target, shifted (*teacher
# forcing*), not its own guesses. So it receives the whole target at once and can predict every
# position in parallel. Without a restriction, position $t$ could simply look at position $t+1$ of
# its input, which *is* the token it must predict: training loss near zero, a model that cannot
# translate. The paper prevents this "leftward information flow" by masking, inside the
# decoder's self-attention, every connection from a query $t$ to a key $s > t$.
#
# With our convention (True = may attend) this is the lower triangle, diagonal included: position
# $t$ sees positions $0 \dots t$. `causal_mask(T)` is (T, T) and broadcasts over batch and heads.
#
# <details><summary>The figure in words</summary>
#
# The causal mask of the second target, from `<bos>` *ein kleiner hund* to
# the final period, is a grid of eight rows and eight columns. Rows are the query positions, columns
# the key positions they attend to, both labelled with the tokens. The cells on and below the
# diagonal are dark: there a token may attend. The cells above it are light, so each token sees
# itself and the tokens before it, never a later one.
#
# </details>

# %%
causal = causal_mask(T)  # (T, T)
print(causal.int())


def show_mask(ax, mask, rows, cols, title, xlabel="key position (attended to)", ylabel="query position"):
    """A boolean (rows × cols) mask: dark = may attend."""
    ax.imshow(mask, cmap="Blues", vmin=-0.2, vmax=1.0)
    ax.set_xticks(range(len(cols)), cols, rotation=60, fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)


fig, ax = plt.subplots(figsize=(4.4, 4.2))
show_mask(ax, causal, tgt_words[1], tgt_words[1], "Causal mask: each token sees itself\nand the tokens before it")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 3. The padding mask
#
# The causal mask deals with the future. The batch's filler is the second thing to hide.
# `<pad>` tokens exist only to make the batch rectangular; no real token should take information
# from them. `padding_mask(tokens, pad_id)` is True at real tokens and False at padding. Its shape
# is **(B, 1, 1, S)**: one row per sequence, the same for every head (axis 1) and every query
# (axis 2). The shape matters. Broadcasting lines shapes up from the right, so a (B, S) mask
# against the (B, H, T, S) attention scores would put B on the *query* axis T. If B and T differ
# and both are above 1, PyTorch raises an error. If B = T > 1, it silently masks the wrong entries.
# If T = 1 < B (one query, as in chapter 09's fast decoding), the result silently grows to
# (B, H, B, S).
#
# <details><summary>The figure in words</summary>
#
# The source padding mask is drawn as three rows, one per sequence, and seven
# columns, the source positions 0 to 6. Each cell holds its token. The real tokens, `<eos>`
# included, sit in dark cells, where the mask is True. The `<pad>` cells are light, where it is
# False. Sequence 0 ends with two of them, sequence 1 has none, and sequence 2 ends with four.
#
# </details>

# %%
src_mask = padding_mask(src, vocab.pad_id)  # (B, 1, 1, S)
print("src_mask", tuple(src_mask.shape))
print(src_mask[:, 0, 0].int())

fig, ax = plt.subplots(figsize=(6.5, 2.2))
show_mask(
    ax,
    src_mask[:, 0, 0],
    [f"sequence {b}" for b in range(B)],
    range(S),
    "Source padding mask: False (light) at <pad>",
    xlabel="source position",
    ylabel="",
)
for b in range(B):
    for s in range(S):
        ax.text(
            s,
            b,
            src_words[b][s],
            ha="center",
            va="center",
            fontsize=7,
            color="white" if src_mask[b, 0, 0, s] else "grey",
        )
plt.tight_layout()
plt.show()

# %% [markdown]
# > **Common mistake — a padding mask of the wrong polarity.** `tokens == pad_id` is the natural way
# > to write `nn.MultiheadAttention`'s `key_padding_mask`, where True means *blocked*. Fed to code
# > that expects True = may attend, it hides every real token and leaves only the padding visible.
# > Exercise `ex06_2`'s check rejects it.


# %%
def padding_mask_wrong_polarity(tokens, pad_id):
    return (tokens == pad_id)[:, None, None, :]  # bug: True at padding


wrong = padding_mask_wrong_polarity(src, vocab.pad_id)  # (B, 1, 1, S)
print("sequence 0, may attend, wrong polarity:", wrong[0, 0, 0].int().tolist())
print("sequence 0, may attend, right:         ", src_mask[0, 0, 0].int().tolist())

# %% tags=["hide-cell"]
# The check of exercise ex06_2 rejects the bug with a message that names it:
print(run_check("ex06_2", padding_mask_wrong_polarity).line())

# %% [markdown]
# ## 4. Combining them, and which mask goes where
#
# We now have two masks, and the Transformer uses attention in three places (§3.2.3). Each place
# takes its own mix of the two:
#
# | attention | queries | keys / values | mask (True = may attend) | shape |
# | --- | --- | --- | --- | --- |
# | encoder self-attention | source | source | source padding | (B, 1, 1, S) |
# | decoder self-attention | target | target | causal **and** target padding | (B, 1, T, T) |
# | cross-attention | target | encoder memory | source padding | (B, 1, 1, S) |
#
# The decoder's mask is the logical AND of the two: `target_mask(tgt, pad_id)`. Here it is for the
# shortest pair, "hallo !", whose target is padded from position 3 on.
#
# <details><summary>The figure in words</summary>
#
# Four masks of the shortest pair stand side by side, with the query
# positions down and the key positions across. Its target is `<bos>`, *hallo*, *!* and five `<pad>`.
# The causal mask is the dark lower triangle. The target padding mask is dark in the first three
# columns only, the same in every row. Their AND, the decoder's self-attention mask, is that lower
# triangle cut off after the third column. The cross-attention mask is dark over the three real
# source tokens, *hello*, *!* and `<eos>`, and light over the four `<pad>`.
#
# </details>

# %%
tgt_mask = target_mask(tgt_in, vocab.pad_id)  # (B, 1, T, T)
b = 2
tgt_padding = padding_mask(tgt_in, vocab.pad_id)[b, 0].expand(T, T)  # (T, T): the same row for every query
panels = [
    (causal, tgt_words[b], "causal"),
    (tgt_padding, tgt_words[b], "target padding"),
    (tgt_mask[b, 0], tgt_words[b], "decoder self-attention =\ncausal AND padding"),
    (src_mask[b, 0].expand(T, S), src_words[b], "cross-attention:\nsource padding"),
]
fig, axes = plt.subplots(1, 4, figsize=(15, 4.2))
for ax, (mask, cols, title) in zip(axes, panels, strict=True):
    show_mask(ax, mask, tgt_words[b], cols, title)
fig.suptitle(f"Masks of sequence {b} ('hallo !'): real tokens never attend to the future or to padding", y=1.02)
plt.tight_layout()
plt.show()
print(
    "tgt_mask",
    tuple(tgt_mask.shape),
    " equals causal & padding:",
    torch.equal(tgt_mask, causal & padding_mask(tgt_in, vocab.pad_id)),
)

# %% [markdown]
# The padded *query* rows (below "!") still attend to the real tokens before them: they compute
# something harmless that nobody uses (the loss ignores padded positions, chapter 08). What matters
# is that no real query ever has a padded or future key, and no row is entirely False. (Even if one
# were, our attention fills blocked scores with `torch.finfo(dtype).min`, giving a finite uniform
# row rather than NaN, chapter 03.)
#
# ## 5. Cross-attention: the decoder asks, the encoder memory answers
#
# The masks are ready. The one new piece the decoder still needs is the attention that reads the
# source. This second sub-layer of the decoder layer is ordinary multi-head attention with a twist
# in its inputs (§3.2.3). The **queries** come from the decoder: the output of its self-attention
# sub-layer. The **keys and values** come from the encoder's final output, called the *memory*,
# the same for every decoder layer. Each target position thereby gathers the source information
# it needs. The weights have shape (B, H, T, S): target positions down, source positions across.
#
# To see it, the cell below builds the pieces from chapters 01–05, small and untrained: one
# embedding table for both languages, the positional encoding, a two-layer encoder that turns the
# source into the memory, and two `MultiHeadAttention` modules. The target goes through the masked
# self-attention sub-layer, then its states ask the memory.
#
# <details><summary>The figure in words</summary>
#
# Two heatmaps show the cross-attention weights of head 0 (chapter 04 counts heads from 0) of an
# untrained cross-attention module. The left one is sequence 0, the sleeping cat, and the right
# one sequence 2, *hello !*. Rows are the target positions (queries), columns the source positions
# (keys), and a darker blue is a larger weight, on one colour bar for both. Over the real source
# tokens the weights are spread unevenly, as the random projections happen to fall. Every column
# of a source `<pad>` is white: its weight is exactly zero.
#
# </details>

# %%
d_model, n_heads = 24, 3
embed = TokenEmbedding(len(vocab), d_model)  # chapter 01: one table for both languages
positions = PositionalEncoding(d_model)  # chapter 02
encoder = Encoder([EncoderLayer(d_model, n_heads, 2 * d_model) for _ in range(2)]).eval()  # chapter 05
self_attn, cross_attn = MultiHeadAttention(d_model, n_heads), MultiHeadAttention(d_model, n_heads)  # chapter 04
norm = nn.LayerNorm(d_model)

with torch.no_grad():
    memory = encoder(positions(embed(src)), src_mask)  # (B, S, D): the encoder's output
    h = positions(embed(tgt_in))  # (B, T, D): the decoder's input
    h = norm(h + self_attn(h, h, h, tgt_mask)[0])  # the masked self-attention sub-layer (post-LN)
    _, cross_weights = cross_attn(h, memory, memory, src_mask, need_weights=True)  # (B, H, T, S)
print(
    "decoder states",
    tuple(h.shape),
    " memory",
    tuple(memory.shape),
    " cross-attention weights",
    tuple(cross_weights.shape),
)

fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
top = cross_weights[[0, 2], 0].max().item()  # one colour scale for both panels
for ax, b in zip(axes, (0, 2), strict=True):
    image = ax.imshow(cross_weights[b, 0], cmap="Blues", vmin=0, vmax=top)
    ax.set_xticks(range(S), src_words[b], rotation=60, fontsize=8)
    ax.set_yticks(range(T), tgt_words[b], fontsize=8)
    ax.set(title=f"sequence {b}, head 0", xlabel="source position (key)", ylabel="target position (query)")
fig.colorbar(image, ax=axes, label="attention weight", shrink=0.8)
fig.suptitle("Cross-attention weights of untrained modules: spread over the real source words, zero on <pad>")
plt.show()
print("weight on padded source positions:", cross_weights.masked_select(~src_mask).abs().max().item())

# %% [markdown]
# Untrained, the weights follow whatever the random projections happen to favour. The one thing to
# read here is the white `<pad>` columns: padding gets exactly zero. Training (chapter 08) makes the
# rest meaningful, and chapter 10 plots them for a trained model.
#
# ## 6. The decoder layer and the stack
#
# Cross-attention was the last new piece, so we can now put the decoder layer together. It has
# three sub-layers, each wrapped by `residual` exactly as in the encoder (chapter 05; dropout and
# `norm_first` are left out of the equations):
#
# $$\begin{aligned}
# x &\leftarrow \mathrm{residual}\big(x,\; h \mapsto \mathrm{SelfAttn}(h, h, h;\ \text{tgt\_mask}),\; \mathrm{norm}_1\big)\\
# x &\leftarrow \mathrm{residual}\big(x,\; h \mapsto \mathrm{CrossAttn}(h, \text{memory}, \text{memory};\ \text{memory\_mask}),\; \mathrm{norm}_2\big)\\
# x &\leftarrow \mathrm{residual}\big(x,\; \mathrm{FFN},\; \mathrm{norm}_3\big)
# \end{aligned}$$
#
# Note *memory, memory* in the second line: the decoder's own states `h` supply only the queries.
# In code each line is one call `self.connection(x, sublayer, self.norm1, self.dropout1,
# self.norm_first)`: `self.connection` is chapter 05's `residual`, and each sub-layer has its own
# norm and dropout. Turning the three lines into code is exercise `ex06_3`: try it now, since the
# common mistakes below and section 8's page print the answer.
# `Decoder` applies $N$ such layers, each attending to the same memory.
#
# As for the encoder, PyTorch has the same layer. `DecoderLayer.from_torch` copies the weights of
# a `nn.TransformerDecoderLayer(batch_first=True)`; the masks must be converted, since PyTorch's
# boolean masks mean True = **blocked**: its `tgt_mask` is `~causal_mask(T)`, its key-padding masks
# are `tokens == pad_id`.

# %% tags=["nbval-ignore-output"]
D, H, D_FF = 12, 3, 20
x, mem = torch.randn(B, T, D), torch.randn(B, S, D)
for norm_first in (False, True):
    theirs = nn.TransformerDecoderLayer(D, H, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    with torch.no_grad():
        for ln in (theirs.norm1, theirs.norm2, theirs.norm3):  # non-trivial norms, so a swapped one would show
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.normal_()
    ours = DecoderLayer.from_torch(theirs).eval()
    with torch.no_grad():
        want = theirs(
            x,
            mem,
            tgt_mask=~causal_mask(T),
            tgt_key_padding_mask=tgt_in == vocab.pad_id,
            memory_key_padding_mask=src == vocab.pad_id,
        )  # PyTorch: True = blocked
        our_masks = target_mask(tgt_in, vocab.pad_id), padding_mask(src, vocab.pad_id)  # ours: True = may attend
        got = ours(x, mem, *our_masks)
    diff = (got - want).abs().max().item()
    assert diff < 1e-5
    print(f"norm_first={norm_first!s:5}  max |ours − nn.TransformerDecoderLayer| = {diff:.1e}")

# %% [markdown]
# The two agree to within rounding (exactly, in this run). Agreeing with PyTorch checks the layer
# as written. Two easy slips in writing it still give the
# right shapes and run without an error; a behaviour test catches each. Exercise `ex06_3`'s check
# rejects both (the folded cell after them).
#
# > **Common mistake — cross-attention fed the decoder's own states.** Write
# > `self.cross_attn(h, h, h, ...)` instead of `self.cross_attn(h, memory, memory, ...)`. The model
# > trains, but it is a language model of the target that never reads the source. Behaviour test:
# > perturb the memory; the output must change.


# %%
class IgnoresMemory(DecoderLayer):
    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        def masked_self_attention(h):
            return self.self_attn(h, h, h, tgt_mask)[0]

        def cross_attention_on_itself(h):  # bug: keys and values come from h, not from the memory
            return self.cross_attn(h, h, h, tgt_mask)[0]

        x = self.connection(x, masked_self_attention, self.norm1, self.dropout1, self.norm_first)
        x = self.connection(x, cross_attention_on_itself, self.norm2, self.dropout2, self.norm_first)
        return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


buggy = IgnoresMemory(D, H, D_FF, dropout=0.0).eval()
correct = DecoderLayer(D, H, D_FF, dropout=0.0).eval()
correct.load_state_dict(buggy.state_dict())  # the same weights: only forward differs
for name, layer in (("correct", correct), ("buggy", buggy)):
    with torch.no_grad():
        changed = not torch.allclose(layer(x, mem), layer(x, mem + 1))
    print(f"{name:7} layer: output changes when the memory changes: {changed}")

# %% [markdown]
# > **Common mistake — a causal mask applied only in training.** Guarding the mask with
# > `if self.training` ("at inference we generate left to right anyway") looks harmless. But
# > evaluation usually scores whole target sentences in one pass, exactly like training, and the
# > leak then inflates every validation number. Behaviour test, in `eval()` mode: change the layer's
# > inputs from position $t$ on; its earlier outputs must not move.


# %%
class MaskInTrainingOnly(DecoderLayer):
    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        used = tgt_mask if self.training else None  # bug: no mask in eval()

        def self_attention(h):
            return self.self_attn(h, h, h, used)[0]

        def cross_attention(h):
            return self.cross_attn(h, memory, memory, memory_mask)[0]

        x = self.connection(x, self_attention, self.norm1, self.dropout1, self.norm_first)
        x = self.connection(x, cross_attention, self.norm2, self.dropout2, self.norm_first)
        return self.connection(x, self.ffn, self.norm3, self.dropout3, self.norm_first)


buggy = MaskInTrainingOnly(D, H, D_FF, dropout=0.0).eval()
correct = DecoderLayer(D, H, D_FF, dropout=0.0).eval()
correct.load_state_dict(buggy.state_dict())
t = 3
x_future = x.clone()
x_future[:, t:] = torch.randn(B, T - t, D)  # other inputs from position t on
for name, layer in (("correct", correct), ("buggy", buggy)):
    with torch.no_grad():
        leak = (layer(x_future, mem, causal) - layer(x, mem, causal))[:, :t].abs().max().item()
    print(f"{name:7} layer, in eval(): outputs before position {t} moved by up to {leak:.2f} when later inputs changed")

# %% tags=["hide-cell"]
# The check of exercise ex06_3 rejects both bugs with messages that name them:
print(run_check("ex06_3", IgnoresMemory.forward).line())
print(run_check("ex06_3", MaskInTrainingOnly.forward).line())

# %% [markdown]
# ## 7. The full model, with one shared embedding matrix (§3.4)
#
# With a correct decoder layer, every part of Figure 1 exists: chapter 05 gave us the encoder
# stack, section 6 the decoder stack. `Transformer(config)` puts them together:
#
# 1. `encode(src)`: source embeddings × $\sqrt{d_\text{model}}$ + positional encoding → encoder
#    stack with the source padding mask → memory (B, S, D);
# 2. `decode(tgt_in, memory, memory_mask)`: target embeddings × $\sqrt{d_\text{model}}$ + positional encoding →
#    decoder stack with `target_mask` and the source padding mask → a linear layer to one logit per
#    vocabulary entry, (B, T, V_tgt);
# 3. `forward(src, tgt_in)` does both and builds the masks from `config.pad_id`.
#
# §3.4: "we share the same weight matrix between the two embedding layers and the pre-softmax
# linear transformation". `share_embeddings=True` does this. With one vocabulary for both languages ($V_\text{src} = V_\text{tgt}$),
# one ($V_\text{tgt}$, D) matrix $E$ turns source ids into vectors,
# target ids into vectors, and decoder outputs into logits $hE^\top + b$. The bias $b$ is our
# addition: the paper mentions none. It costs one number per token and lets the output favour
# frequent tokens without bending the shared matrix. The
# embedding layers multiply by $\sqrt{d_\text{model}}$ (chapter 01 explains the initialisation
# that goes with it).
#
# `TransformerConfig` holds the sizes under the paper's names. Its sizes default to the paper's base
# model, and the shared matrix is switched on with `share_embeddings=True`. For our three sentences
# we shrink the sizes. The cell then counts the numbers in each part. `model.num_parameters()` adds
# up every tensor of the model once, so the shared matrix, used by three layers, counts once:

# %%
config = TransformerConfig(
    len(vocab),  # V_src
    len(vocab),  # V_tgt: one vocabulary for both languages
    d_model=24,  # the paper: 512
    n_heads=3,  # 8
    d_ff=48,  # 2048
    n_encoder_layers=2,  # 6
    n_decoder_layers=2,  # 6
    max_len=32,  # the longest sequence the positional table covers
    share_embeddings=True,  # one matrix E for source, target and output
    pad_id=vocab.pad_id,
)
model = Transformer(config).eval()
logits = model(src, tgt_in)  # (B, T, V_tgt)
print("logits", tuple(logits.shape))
print(
    "one matrix for source, target and output:", model.src_embed.weight is model.tgt_embed.weight is model.output.weight
)
parts = {
    "shared embedding (V × D)": model.src_embed.weight.numel(),
    "encoder": sum(p.numel() for p in model.encoder.parameters()),
    "decoder": sum(p.numel() for p in model.decoder.parameters()),
    "output bias (V)": model.output.bias.numel(),
}
for name, n in parts.items():
    print(f"  {name:26} {n:>8,}")
print(f"  {'total (each tensor once)':26} {model.num_parameters():>8,}")
assert sum(parts.values()) == model.num_parameters()

# %% [markdown]
# Now the property that all the masking was for: **changing target tokens at positions $\geq t$
# must leave the logits before $t$ unchanged**, in evaluation and in training alike. In training,
# dropout draws random masks, so both runs start from the same seed and draw the same ones. And
# changing the source *must* change the logits, through cross-attention.

# %%
t = 3
future_changed = tgt_in.clone()
future_changed[:, t:] = torch.randint(4, len(vocab), (B, T - t))  # ids ≥ 4: ordinary tokens, no <pad>/<bos>/<eos>/<unk>
other_source = src.clone()
other_source[:, 0] = vocab.token_to_id["dog"]


def logits_from(source, target):
    torch.manual_seed(1)  # in training: the same dropout masks in every run
    return model(source, target)


with torch.no_grad():
    for mode in ("eval", "train"):
        model.train(mode == "train")
        moved = (logits_from(src, future_changed) - logits_from(src, tgt_in))[:, :t].abs().max().item()
        print(f"{mode}(): future tokens changed → logits before position {t} unchanged:", moved < 1e-6)
    model.eval()
    print("source changed → logits changed:", not torch.allclose(model(other_source, tgt_in), model(src, tgt_in)))

# %% [markdown]
# All three lines print True. In both modes the logits before position $t$ ignore every later
# target token, so the whole model keeps the causal mask's promise. And the decoder reads the
# source, through cross-attention. Chapter 08 trains a model of this kind.
#
# ## 8. The whole model on one page
#
# The model passes its tests; now read all of it at once. Below is its code in the order it runs,
# from the constructor to the logits. It is the course's full model, printed from the package's
# files without docstrings and argument checks. So, besides the pieces of chapters
# 01–06, it holds options that later chapters switch on. Here each of them is `None` or does
# nothing; the folded box below names them. The page leaves out the small helpers you have met:
# `padding_mask`, `target_mask`, `apply_mask`, `attention_scores`, `split_heads`, `merge_heads`
# and `tie_weights`, and a few it calls without printing: `fast_attention`, `_final_norm`,
# `_embedding`, `build_part` and `xavier_init` (the list below and the folded box say what they do). Read it top to bottom:
#
# - `__init__` builds the shared embedding, the two stacks and the output layer. `xavier_init`
#   draws the weights of every linear layer by Xavier's rule (chapter 05); the embedding keeps
#   chapter 01's N(0, 1/d_model), which goes with its √d_model. `tie_weights` ties the output layer to
#   the embedding (chapter 01). With separate vocabularies (chapter 08's models), `tie_output` ties
#   the output layer to the target embedding alone.
# - `forward` builds the source padding mask, then calls `_encode` and `_decode`. (Section 7's
#   `encode` and `decode` are these two behind a check of their arguments.)
# - `_encode` embeds the source, adds the positions and runs the encoder layers. Each layer is two
#   calls of `residual` (chapter 05).
# - `_decode` does the same for the target, with `target_mask`. Each decoder layer adds
#   cross-attention to the memory, and `self.output` turns the last states into logits.
#
# Note the dropout inside `MultiHeadAttention` (chapter 04, section 5): in training it drops
# attention weights (`dropout_p`, `F.dropout`). Like the feed-forward network's dropout (chapter
# 05), it is our addition to the paper's §5.4; it does nothing in `eval()`.
#
# The forward pass takes the fused branch (`fast_attention`, chapter 03). The printed
# `scaled_dot_product_attention` gives the same numbers: the folded check under the page runs both.
#
# <details><summary>Lines you can skip on a first read</summary>
#
# Here each is `None`, or does nothing new:
#
# - chapter 03: `fast=True` and `fast_attention`, the fused kernel, which computes what
#   `scaled_dot_product_attention` computes;
# - chapter 05: `_final_norm`, the extra LayerNorm that ends a pre-LN stack (none for post-LN);
# - chapter 09's fast decoding: `offset`, the position of the first row when earlier ones were
#   fed before;
# - chapters 11 and 13, which swap parts: the keyword arguments of `__init__`, `build_part`, the
#   comment on why the positional part is built last, and `self.connection` (`residual` here);
# - chapters 11, 14 and 15: `_embedding`, which builds chapter 01's `TokenEmbedding` unless the
#   √d_model factor is switched off; chapter 15's real weights (Marian, GPT-2, Llama) add `activation`,
#   `sinusoid_layout` and `bos_id == pad_id` (Marian, its translator, starts its target with
#   `<pad>`).
#
# </details>

# %% tags=["shows-solutions"]
page = [
    Transformer.__init__,
    Transformer.forward,
    Transformer._encode,
    TokenEmbedding.forward,
    PositionalEncoding.forward,
    Encoder.forward,
    EncoderLayer.forward,
    residual,
    MultiHeadAttention.forward,
    scaled_dot_product_attention,
    PositionwiseFeedForward.forward,
    Transformer._decode,
    Decoder.forward,
    DecoderLayer.forward,
]
code_block(page)

# %% [markdown]
# Read once through, the page is Figure 1. One matrix serves both embeddings and the output. Two
# stacks call the same three functions: attention, the feed-forward network and `residual`. The
# encoder and the decoder differ in one mask and one extra sub-layer. The line under the page
# reports its check: the model built from it runs through every printed function.


# %% tags=["hide-input"]
def build_and_run() -> torch.Tensor:
    torch.manual_seed(0)  # the same weights at every run
    return Transformer(config).eval()(src, tgt_in)


print(check_page(page, build_and_run))

# %% [markdown]
# ## Summary
#
# - The causal mask (lower triangle, (T, T)) keeps each target position from seeing later ones.
#   The padding mask ((B, 1, 1, S), True at real tokens) keeps everyone from seeing padding. The
#   decoder's self-attention uses both, combined with AND.
# - Cross-attention takes its queries from the decoder and its keys and values from the encoder
#   memory; perturbing the memory must change the output.
# - Our decoder layer equals `nn.TransformerDecoderLayer` once the mask polarity is converted.
# - The full model shares one ($V_\text{tgt}$, D) matrix between source embeddings, target
#   embeddings and the output layer (one vocabulary for both sides, $V_\text{src} = V_\text{tgt}$).
#   Changing its future target tokens leaves the earlier logits unchanged, in `eval()` and in
#   training.
# - The whole model fits on one page: embeddings, positions, two stacks of attention, feed-forward
#   networks and `residual`, and one output layer, each a piece of chapters 01–06 (the page's
#   hooks for later chapters aside).
#
# **Exercises:** [exercises/ex06_decoder_and_masks.ipynb](../exercises/ex06_decoder_and_masks.ipynb)
# asks you to write `causal_mask` (ex06_1), `padding_mask` (ex06_2) and `DecoderLayer.forward`
# (ex06_3). Stuck on one? `python -m transformer_course restore ex06_1` puts its worked answer in your
# student edition. Chapter 07 counts its parameters, and chapter 08 trains a model of this kind (with
# two vocabularies).

# %% [markdown]
# ## Check yourself
#
# 1. Which mask does each of the three attentions use, with which shape?
#    <details><summary>Answer</summary>
#
#    Encoder self-attention: source padding (B, 1, 1, S). Decoder self-attention: causal AND target
#    padding (B, 1, T, T). Cross-attention: source padding (B, 1, 1, S).
#    </details>
# 2. Why must the padding mask be (B, 1, 1, S) and not (B, S)?
#    <details><summary>Answer</summary>
#
#    Broadcasting aligns shapes from the right. A (B, S) mask against (B, H, T, S) scores lines B up
#    with the query axis T. If B and T differ and both are above 1, that is an error. If B = T > 1,
#    the wrong entries are masked, silently; if T = 1 < B, the result grows to (B, H, B, S),
#    silently.
#    </details>
# 3. In cross-attention, where do queries, keys and values come from, and which test catches a
#    decoder that feeds its own states instead?
#    <details><summary>Answer</summary>
#
#    Queries from the decoder, keys and values from the encoder memory. Perturb the memory: the
#    output must change.
#    </details>
# 4. How do you check that no future token leaks into the decoder?
#    <details><summary>Answer</summary>
#
#    Change the target tokens at positions $\geq t$ and check that the logits before $t$ do not move,
#    in `eval()` mode as well as in training.
#    </details>
# 5. Why does a causal mask applied only in training inflate validation scores?
#    <details><summary>Answer</summary>
#
#    Validation usually scores whole target sentences in one pass, like training; without the mask
#    each position can read the token it must predict.
#    </details>
#
# ## Further reading
#
# - The paper: §3.1 and Figure 1 (the decoder), §3.2.3 (masking), §3.4 (one shared matrix), Table 3
#   (model sizes; [chapter 07](07_counting_parameters.ipynb) counts them).
# - Sutskever, Vinyals and Le (2014), *Sequence to Sequence Learning with Neural Networks*: the
#   encoder-decoder for translation, with recurrent networks.
# - Radford et al. (2018), *Improving Language Understanding by Generative Pre-Training*: a
#   decoder-only stack with the causal mask (GPT).
# - Devlin et al. (2019), *BERT*: an encoder-only stack, trained by filling in masked words.
# - PyTorch's documentation of `nn.Transformer` and `nn.MultiheadAttention`: their mask arguments and
#   polarity.

# %% [markdown]
# **Next:** [Chapter 07 — Counting parameters: the paper's Table 3](07_counting_parameters.ipynb):
# how many parameters that model has, counted against the paper's Table 3.
