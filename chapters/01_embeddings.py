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
# # Chapter 01 — Tokens, vocabularies and embeddings
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/01_embeddings.ipynb)
#
# A Transformer never reads letters. Before its first layer runs, a sentence is cut into pieces
# called *tokens*, and each token becomes a whole number, its *id*. Each id then becomes a vector of
# $d_{model}$ real numbers, where $d_{model}$ is the width of the model (512 in the paper: Vaswani
# et al. 2017, *Attention Is All You Need*). This chapter builds that front door of the model.
#
# **Learning goals**
#
# - turn sentences into token ids with a vocabulary, and say what each of the four special tokens
#   `<pad>`, `<bos>`, `<eos>` and `<unk>` is for;
# - see that an embedding lookup *is* a one-hot vector times a matrix, and why libraries index
#   instead of multiplying;
# - explain the $\sqrt{d_{model}}$ factor of the paper and why it only makes sense together with
#   the initialisation;
# - tie the input embedding to the output layer, and count what that saves.
#
# **In the paper:** §3.4 (embeddings, the shared weight matrix and the $\sqrt{d_{model}}$ factor),
# and §5.1 for the vocabulary the authors used.

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
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from transformer_course import (
    TokenEmbedding,
    Vocab,
    one_hot_lookup,
    tie_weights,
    tokenize,
)
from transformer_course_tools.exercises.checks import run_check
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("01")  # the short stop at an unwritten exercise; printing and plotting style

# %% [markdown]
# ## Where we are
#
# The whole course builds the model below: the encoder-decoder of the paper's Figure 1, drawn by
# the course's own code. Every chapter opens with this map and colours the part it builds. This
# chapter builds the two ends: the embeddings at the bottom, and the output layer at the top that
# shares their matrix.
#
# The label on each arrow is the shape of the tensor that travels along it. The box at the top left
# names the letters. For example, (B, S, D) is a batch of B source sentences, each S tokens long,
# each token a vector of D = $d_{model}$ numbers. Each letter is explained again where the book first
# uses it, and the [notation page](../book/notation.md) lists them all. The example under the
# inputs comes from the number-translation task that chapter 08 trains. The English "twenty one"
# enters the encoder. The decoder reads its German translation in pieces, shifted one place to the
# right (chapter 06 explains why).
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right. On each side,
# token ids enter at the bottom, become vectors in a token embedding multiplied by √D, and get a
# positional encoding added. A stack of N encoder layers follows, each a self-attention and a
# feed-forward network with "Add & Norm" after each. Each of the N decoder layers has masked
# self-attention, cross-attention that reads the encoder's output, and a feed-forward network. At
# the top of the decoder, a linear layer and a softmax give one probability per target token. This
# chapter's boxes are highlighted: the two token embeddings, and the linear layer that shares
# their matrix.
#
# </details>

# %%
architecture_map("embeddings")

# %% [markdown]
# ## 1. From text to token ids
#
# The first decision is what counts as one token. The paper used *byte-pair encoding*, which splits
# rare words into frequent fragments; its vocabulary of about 37,000 fragments was shared by English
# and German (§5.1). We split on words and punctuation instead, which is less clever but keeps
# every id readable. `tokenize` lower-cases a sentence and cuts it up:

# %%
corpus = [
    "The robot paints the door.",
    "A blue robot opens the door.",
    "The door is blue.",
    "Two robots paint a red door!",
]
sentences = [tokenize(text) for text in corpus]
print(sentences[0])

# %% [markdown]
# A `Vocab` numbers the distinct tokens. The most frequent ones get the smallest ids, and ties are
# broken alphabetically, so shuffling the corpus gives the same vocabulary. The first four ids are
# reserved for tokens that never occur in text but that every sequence model needs:
#
# | id | token | what it is for |
# | --- | --- | --- |
# | 0 | `<pad>` | fills up short sentences so that a batch is a rectangle; attention will ignore it ([chapter 03](03_attention.ipynb), section 4) |
# | 1 | `<bos>` | *beginning of sequence*: the decoder's very first input, "start writing" |
# | 2 | `<eos>` | *end of sequence*: the decoder writes it to say the translation is finished |
# | 3 | `<unk>` | stands in for every token that is not in the vocabulary |

# %%
vocab = Vocab.build(sentences)
print(vocab)
print({i: token for i, token in enumerate(vocab.id_to_token)})

# %% [markdown]
# Encoding is a dictionary look-up with a fallback: a token the vocabulary has never seen becomes
# `<unk>`. Let us write it by hand, then compare with `Vocab.encode`. You will write `encode`
# yourself in exercise `ex01_1`.

# %%
new_sentence = tokenize("The green robot paints the door.")
by_hand = [vocab.bos_id] + [vocab.token_to_id.get(t, vocab.unk_id) for t in new_sentence] + [vocab.eos_id]
ids = vocab.encode(new_sentence, add_bos=True, add_eos=True)
assert ids == by_hand
print("tokens: ", new_sentence)
print("ids:    ", ids)
print("decoded:", vocab.decode(ids))

# %% [markdown]
# `decode` leaves out the `<bos>` and `<eos>` markers: they frame a sentence but are no words.
# "green" was never seen, so it came back as `<unk>`. Whatever it meant is gone for good, and a
# translation model can only guess around the hole. This is the reason for sub-word vocabularies
# like the paper's byte-pair encoding: an unseen word falls apart into known pieces instead of
# collapsing into one "unknown" id.
#
# Vocabularies usually leave out the words seen fewer than `min_freq` times. That trades a smaller
# table (fewer parameters: each id costs one row of a table of vectors, section 2) for more
# `<unk>` in the data:

# %%
n_tokens = sum(len(s) for s in sentences)
for min_freq in (1, 2, 3):
    small = Vocab.build(sentences, min_freq=min_freq)
    n_unknown = sum(i == small.unk_id for s in sentences for i in small.encode(s))
    print(f"min_freq={min_freq}: {len(small):2} ids, {n_unknown:2} of {n_tokens} corpus tokens become <unk>")

# %% [markdown]
# Sentences have different lengths, but a batch is one tensor. So we append `<pad>` until every row
# is as long as the longest. This gives the integer tensor that the model takes as input. For the
# encoder's input its shape is (B, S): B sentences in the batch, each S tokens long.

# %%
encoded = [vocab.encode(s, add_bos=True, add_eos=True) for s in sentences]
longest = max(len(e) for e in encoded)
batch = torch.tensor([e + [vocab.pad_id] * (longest - len(e)) for e in encoded])  # (B, S)
print("batch shape (B, S):", tuple(batch.shape))
print(batch)

# %% [markdown]
# > **Common mistake — forgetting `<unk>`.** Looking tokens up with `self.token_to_id[token]`
# > passes a quick test on the training sentences. It works until the first unseen word. Then it
# > raises a `KeyError` in the middle of an evaluation:


# %%
def encode_without_unk(self, tokens, add_bos=False, add_eos=False):
    ids = [self.token_to_id[token] for token in tokens]  # the bug: no fallback for unseen tokens
    return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos


try:
    encode_without_unk(vocab, ["the", "zebra"])
except KeyError as error:
    print(f"an unseen word stops the lookup: KeyError {error}")

# %% [markdown]
# ## 2. An embedding lookup is a one-hot vector times a matrix
#
# "Learned embeddings convert the input tokens to vectors of dimension $d_{model}$" (§3.4). The
# source embedding is a matrix $E$ with one row per token of the vocabulary. Write $V_\text{src}$
# for the size of the source vocabulary; then $E$ has shape $V_\text{src} \times d_{model}$, and its
# row $v$ is the vector of token $v$. In shape comments we write D for $d_{model}$.
#
# Take a sentence of $S$ tokens $t_1, \dots, t_S$. Write it as a *one-hot* matrix
# $X \in \{0, 1\}^{S \times V_\text{src}}$: row $j$ is all zeros except for a 1 in column $t_j$. Each
# row of $X$ has a single 1, so each row of the product $XE$ picks one row of $E$:
#
# $$\operatorname{embed}(t_1, \dots, t_S) = \underbrace{X}_{S \times V_\text{src}}\;\underbrace{E}_{V_\text{src} \times d_{model}} \in \mathbb{R}^{S \times d_{model}}.$$
#
# Below, four ways give the same numbers: the product by hand, plain indexing, the package's
# `one_hot_lookup` (exercise `ex01_3`), and PyTorch's `nn.Embedding` with the same matrix.
# `nn.Embedding` is PyTorch's lookup layer; `nn.Embedding.from_pretrained(E)` makes one whose table
# is $E$.

# %%
d_model = 6
E = torch.randn(len(vocab), d_model)  # (V_src, D)
example = tokenize("the blue robot paints the door")
token_ids = torch.tensor(vocab.encode(example))  # (S,)
X = F.one_hot(token_ids, num_classes=len(vocab)).float()  # (S, V_src)
product = X @ E  # (S, V_src) @ (V_src, D) → (S, D)

assert torch.equal(product, E[token_ids])  # multiplying by a one-hot row = picking a row
assert torch.equal(one_hot_lookup(token_ids, E), product)
assert torch.equal(nn.Embedding.from_pretrained(E)(token_ids), product)
print("X:", tuple(X.shape), " E:", tuple(E.shape), " X @ E:", tuple(product.shape))

# %% [markdown]
# <details><summary>The figure in words</summary>
#
# Three heatmaps stand side by side. The left one is the one-hot matrix X.
# It has one row per word of "the blue robot paints the door" and one column per vocabulary entry,
# with a single black cell in each row. The middle one is E, one row of colours per vocabulary entry,
# with the rows the sentence uses framed. The right one is the product X @ E: the framed rows of E
# again, in the order of the sentence.
#
# </details>

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 4.2), gridspec_kw={"width_ratios": [len(vocab), d_model, d_model]})
axes[0].imshow(X, cmap="Greys", aspect="auto")
axes[0].set(title="X = one_hot(ids): one 1 per row", xlabel="vocabulary entry v", ylabel="position j")
axes[0].set_xticks(range(len(vocab)), vocab.id_to_token, rotation=90, fontsize=7)
axes[0].set_yticks(range(len(example)), example)
axes[1].imshow(E, cmap="RdBu", aspect="auto", vmin=-2.5, vmax=2.5)
axes[1].set(title="E (V_src × D):\npicked rows framed", xlabel="dimension")
axes[1].set_yticks(range(len(vocab)), vocab.id_to_token, fontsize=7)
for row in token_ids.unique().tolist():  # frame the rows that the one-hot matrix picks
    axes[1].add_patch(plt.Rectangle((-0.5, row - 0.5), d_model, 1, fill=False, edgecolor="black", linewidth=2))
axes[2].imshow(product, cmap="RdBu", aspect="auto", vmin=-2.5, vmax=2.5)
axes[2].set(title="X @ E:\nthose rows, in order", xlabel="dimension")
axes[2].set_yticks(range(len(example)), example)
fig.suptitle("An embedding lookup multiplies a one-hot matrix by E, which just copies rows of E")
fig.tight_layout()
plt.show()

# %% [markdown]
# Why do libraries index instead of multiplying? Because $X$ is almost all zeros. For a 50-token
# sentence, with the paper's vocabulary and width, the product spends $S \cdot V_\text{src} \cdot d_{model}$ multiply-adds to
# copy $S \cdot d_{model}$ numbers:

# %%
S, V_src, D = 50, 37_000, 512
print(f"one-hot product: {S * V_src * D:>13,} multiply-adds")
print(f"row lookup:      {S * D:>13,} numbers copied")

# %% [markdown]
# The picture also explains how an embedding *learns*. The output is the product $XE$, so the
# gradient of a loss $L$ is $\partial L/\partial E = X^\top\, \partial L/\partial(XE)$. Row $v$
# of it sums the output gradients at the positions where $X$ has a 1 in column $v$. So the gradient
# reaches only the rows that were picked. The rows of tokens absent from the batch get exactly zero
# gradient.

# %%
embedding = nn.Embedding(len(vocab), d_model)
embedding(token_ids).pow(2).sum().backward()
rows_with_gradient = embedding.weight.grad.abs().sum(dim=1).nonzero().flatten().tolist()
print("rows with a gradient:", [vocab.id_to_token[i] for i in rows_with_gradient])
print(f"rows with exactly zero gradient: {len(vocab) - len(rows_with_gradient)} of {len(vocab)}")

# %% [markdown]
# ## 3. Why multiply by $\sqrt{d_{model}}$?
#
# §3.4 ends with one short instruction: in the embedding layers, the weights are multiplied by
# $\sqrt{d_{model}}$. The paper gives no reason. A plausible one appears once we look at what gets
# *added* to the embeddings: the positional encoding of §3.5, which chapter 02 builds. Its entries
# are sines and cosines: features $2i$ and $2i+1$ of position $pos$ are $\sin(pos\,\omega_i)$ and
# $\cos(pos\,\omega_i)$, one angle per pair ($\omega_i$ a frequency that chapter 02 sets). Each pair adds $\sin^2 + \cos^2 = 1$ to the squared
# length, and there are $d_{model}/2$ pairs. So every positional vector has length exactly
# $\sqrt{d_{model}/2}$, whatever the position.
#
# The length of a token vector depends on how the table was initialised. The paper does not say how
# it initialised its embeddings. The course follows tensor2tensor, the authors' own code, which
# draws every entry from $\mathcal{N}(0, 1/d_{model})$. A raw row then has length about 1. Times
# $\sqrt{d_{model}}$, each entry has variance 1 and the vector has length about $\sqrt{d_{model}}$:
# the same order as the positional vector, $\sqrt{2}$ times longer. Without the factor, at
# $d_{model} = 512$, the position signal would start $\sqrt{d_{model}/2} = 16$ times longer than the
# token signal: the position would dominate the vector's length. The package's `TokenEmbedding`
# (exercise ex01_2) is this layer: the lookup, times $\sqrt{d_{model}}$, with that initialisation.
#
# So the factor and the initialisation belong together. PyTorch's default `nn.Embedding` draws from
# $\mathcal{N}(0, 1)$; multiplying *that* by $\sqrt{d_{model}}$ would make token vectors
# $\sqrt{d_{model}}$ times too long. All of this is about the start of training. Whether the factor
# still matters once the model learns is a question for training: [chapter
# 11](11_testing_the_papers_choices.ipynb) puts it to a test, and its answer is more modest.

# %%
widths = [16, 32, 64, 128, 256, 512, 1024]
raw_norm, scaled_norm, positional_norm, lines = [], [], [], []
for d in widths:
    layer = TokenEmbedding(vocab_size=1000, d_model=d)
    scaled = layer(torch.arange(1000))  # (V_src, D): every token once
    raw_norm.append(layer.weight.norm(dim=1).mean().item())
    scaled_norm.append(scaled.norm(dim=1).mean().item())
    positional_norm.append(math.sqrt(d / 2))  # every positional vector's length (chapter 02 shows why)
    lines.append(
        f"d_model={d:5}: raw row {raw_norm[-1]:5.2f}   ×√d_model {scaled_norm[-1]:6.2f}   "
        f"positional vector (formula) {positional_norm[-1]:6.2f}"
    )
print("average vector length\n" + "\n".join(lines))

# %% [markdown]
# At every width the scaled token vector is $\sqrt{2}$ times longer than the positional one:
# $\sqrt{d_{model}}$ against $\sqrt{d_{model}/2}$ (the positional length is chapter 02's formula,
# not a measurement).
#
# <details><summary>The figure in words</summary>
#
# On the left, the average length of three kinds of vector is drawn against
# d_model, both axes logarithmic. The positional vectors and the scaled token vectors rise
# together, in parallel, while the raw token rows stay near length 1. On the right are histograms
# of the entries at d_model = 512, with a logarithmic density axis so that both fit. The raw
# entries form a narrow, tall peak around 0. The scaled entries form a bell curve of width about 1.
# A green band marks −1 to 1, where every positional entry lies: the same order as the scaled
# entries.
#
# </details>

# %%
d = 512
layer = TokenEmbedding(vocab_size=1000, d_model=d)
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
left.plot(widths, positional_norm, "o-", color="tab:green", label="positional encoding")
left.plot(widths, scaled_norm, "o-", color="tab:blue", label="token embedding × √d_model")
left.plot(widths, raw_norm, "o-", color="tab:red", label="token embedding, raw")
left.set(xscale="log", yscale="log", xlabel="d_model", ylabel="average vector length")
left.set_xticks(widths, [str(w) for w in widths])
left.legend()
left.set_title("Scaled token vectors grow like the positional ones")
bins = torch.linspace(-3, 3, 61)
right.hist(layer.weight.detach().flatten(), bins=bins, density=True, color="tab:red", alpha=0.6, label="raw")
right.hist(layer(torch.arange(1000)).detach().flatten(), bins=bins, density=True, alpha=0.6, label="× √d_model")
right.axvspan(-1, 1, color="tab:green", alpha=0.15, label="positional entries: in [−1, 1]")
right.set(xlabel="entry value", ylabel="density (log scale)", yscale="log", title=f"Entries at d_model={d}")
right.legend(loc="upper right", fontsize=8)
fig.suptitle("Without √d_model the position would drown the token: the raw entries are ~1/√d_model")
fig.tight_layout()
plt.show()

# %% [markdown]
# > **Common mistake — forgetting $\sqrt{d_{model}}$.** Returning `self.embedding(tokens)` without
# > the factor gives the right shapes and trains. But it is not the paper's model: its first layer
# > starts with vectors dominated by their position. The vectors' length shows the bug at once:


# %%
def forward_without_scale(self, tokens):
    return self.embedding(tokens)  # the bug: no × √d_model


ids = torch.arange(20)[None]  # (1, 20): twenty tokens
scaled, unscaled = layer(ids).norm(dim=-1).mean(), forward_without_scale(layer, ids).norm(dim=-1).mean()
print(f"average vector length: {scaled:.1f} with × √d_model, {unscaled:.1f} without")

# %% [markdown]
# ## 4. Weight tying: one matrix for input and output
#
# At the other end, the decoder turns its output vector $h$ (of size $d_{model}$) into one score per
# vocabulary entry, at each of the T positions of a target sentence. These scores are called
# *logits*. The *softmax* turns them into probabilities: it replaces each score $s$ by $e^s$ and
# divides by the sum of these (chapter 03 takes it apart). A linear layer computes the logits:
# $\text{logits} = h W^\top$. Its matrix $W$ has shape
# $V_\text{tgt} \times d_{model}$, where $V_\text{tgt}$ is the size of the target vocabulary. That
# is the shape of the target embedding.
#
# §3.4 shares one matrix between the two embedding layers and this pre-softmax layer, an idea the
# paper credits to Press and Wolf. Their argument: the lookup trains only the rows of the tokens
# it read (section 2), but the output layer trains every row at every step, since every logit
# enters the softmax. One shared matrix gets both kinds of training. They found that tying made
# language models better, with fewer parameters.
#
# Our toy example has one vocabulary for both sides ($V_\text{src} = V_\text{tgt}$), so one matrix
# can serve both embeddings and the output layer. One detail of the code: the embedding gets
# `padding_idx`. Its `<pad>` row starts at zero, and the lookup sends that row no gradient. Once the
# matrix is tied, the output layer still trains that row, as it trains every row. That is harmless:
# the model learns never to predict `<pad>`.
#
# `tie_weights` makes the output layer use the embedding's `Parameter` itself, not a copy:

# %%
V_tgt, d = len(vocab), 8
token_embedding = TokenEmbedding(V_tgt, d, padding_idx=vocab.pad_id)
output_layer = nn.Linear(d, V_tgt, bias=False)  # the pre-softmax layer: (B, T, D) → (B, T, V_tgt)
model = nn.ModuleDict({"embedding": token_embedding, "output_layer": output_layer})


def count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())  # parameters() lists a shared one once


print("parameters before tying:", count(model))
tie_weights(token_embedding, output_layer)
print("parameters after tying: ", count(model))
print("one Parameter object:   ", output_layer.weight is token_embedding.weight)
print("one block of memory:    ", output_layer.weight.data_ptr() == token_embedding.weight.data_ptr())

# %% [markdown]
# At the paper's size the saving is large. With one vocabulary shared by English and German, the
# encoder input, the decoder input and the output layer can all use the same matrix. One matrix
# then does the work of three, so sharing saves the other two:

# %%
V_shared, D = 37_000, 512  # V_src = V_tgt: one vocabulary for both languages
print(f"one V_shared × D matrix:    {V_shared * D / 1e6:5.1f} M parameters")
print(f"three separate matrices:    {3 * V_shared * D / 1e6:5.1f} M")
print(f"saved by sharing one:       {2 * V_shared * D / 1e6:5.1f} M (the whole base model has about 65 M, Table 3; chapter 07 counts them)")

# %% [markdown]
# Tying also fits the scaling of section 3. The output layer scores a state $h$ by its dot product
# with each token's row of $E$. The entries of $E$ have size $1/\sqrt{d_{model}}$ and those of $h$
# have size 1 (the decoder ends in a normalisation, a LayerNorm of chapter 05, that gives each
# state entries of mean 0 and variance 1), so the logits $h E^\top$ start with a standard deviation near 1: no logit starts out
# large. The cell below checks this on random states.

# %%
d = 512
layer = TokenEmbedding(vocab_size=1000, d_model=d)
out = nn.Linear(d, 1000, bias=False)
tie_weights(layer, out)
with torch.no_grad():
    logits = out(torch.randn(1000, d))  # 1000 random unit-variance states → (1000, V_tgt)
print(f"std of the logits for a random state: {logits.std().item():.2f}")

# %% tags=["hide-cell"]
# The exercise checks reject both bugs, each with a message that names it:
print(run_check("ex01_1", encode_without_unk).line())
print(run_check("ex01_2", forward_without_scale).line())

# %% [markdown]
# ## 5. The front door and the back door, end to end
#
# Section 1's padded batch can now go through everything this chapter built: ids become scaled
# vectors, and the tied output layer scores every vocabulary entry at every position. With no layers
# between them yet, the scores can only read the input back. A vector's dot product with its own row
# of $E$ is that row's squared length times $\sqrt{D}$: about $\sqrt{D} = 8$ here. With any other
# row it is about ±1. So each
# token scores its own row highest, and the arg-max recovers the batch. The exception is `<pad>`: its
# row is zero, its scores all tie at 0, and the arg-max returns the first of equals, id 0, which is
# `<pad>` again. Chapters 02–06 build what goes in between.

# %%
torch.manual_seed(0)
front = TokenEmbedding(len(vocab), 64, padding_idx=vocab.pad_id)  # D = 64
back = nn.Linear(64, len(vocab), bias=False)
tie_weights(front, back)  # one matrix E for both doors
vectors = front(batch)  # (B, S, D)
scores = back(vectors)  # (B, S, V): a score for every vocabulary entry at every position
print("ids", tuple(batch.shape), "→ vectors", tuple(vectors.shape), "→ scores", tuple(scores.shape))
print("sentence 0:", [vocab.id_to_token[i] for i in batch[0].tolist()])
print("read back: ", [vocab.id_to_token[i] for i in scores[0].argmax(dim=-1).tolist()])
print("every position of the batch read back:", torch.equal(scores.argmax(dim=-1), batch))

# %% [markdown]
# ## Summary
#
# - A `Vocab` maps tokens to ids; ids 0–3 are `<pad>`, `<bos>`, `<eos>`, `<unk>`. Unseen tokens
#   become `<unk>` and their meaning is lost, which is why the paper uses sub-word units (§5.1).
# - An embedding is a $V_\text{src} \times d_{model}$ matrix. The lookup equals `one_hot(ids) @ E`,
#   and only the rows that were looked up receive a gradient.
# - The embedding output is multiplied by $\sqrt{d_{model}}$ (§3.4). With entries drawn from
#   $\mathcal{N}(0, 1/d_{model})$, token vectors are then $\sqrt{2}$ times longer than the positional
#   vectors added to them in chapter 02: the same order of size.
# - Weight tying makes the input embeddings and the output layer one `Parameter`. It saves
#   $V_\text{tgt} \cdot d_{model}$ parameters per shared copy.
# - Ids → scaled vectors → tied scores reads a batch back: the model's two doors fit. Chapters 02–06
#   build what goes between them.
#
# **Exercises:** [exercises/ex01_embeddings.ipynb](../exercises/ex01_embeddings.ipynb) asks you to
# write `Vocab.encode` (ex01_1), `TokenEmbedding.forward` (ex01_2) and `one_hot_lookup` (ex01_3).
# Stuck on one? `python -m transformer_course restore ex01_1` puts its worked answer in your student
# edition. That is your own copy of the course, in which each function to write is a stub: the
# exercise notebook says how to make it.

# %% [markdown]
# ## Check yourself
#
# 1. A sentence contains a word the vocabulary has never seen. Which id does it get, and what is lost?
#    <details><summary>Answer</summary>
#
#    `<unk>` (id 3). Which word it was is lost for good: every unseen word becomes the same id. A
#    sub-word vocabulary (byte-pair encoding, §5.1) avoids this by splitting rare words into known
#    pieces.
#    </details>
# 2. Why is an embedding lookup the same as a one-hot matrix times $E$, and why do libraries index
#    instead of multiplying?
#    <details><summary>Answer</summary>
#
#    Each one-hot row has a single 1, so the product copies exactly one row of $E$. Multiplying costs
#    $S \cdot V_\text{src} \cdot d_{model}$ multiply-adds, almost all with a zero. Indexing copies the
#    $S \cdot d_{model}$ numbers and nothing else.
#    </details>
# 3. After one backward pass, which rows of the embedding matrix have a non-zero gradient?
#    <details><summary>Answer</summary>
#
#    Only the rows of tokens that occurred in the batch; every other row gets exactly zero.
#    </details>
# 4. With entries drawn from $\mathcal{N}(0, 1/d_{model})$, about how long is a token vector after the
#    $\sqrt{d_{model}}$ factor, and how long is a positional vector?
#    <details><summary>Answer</summary>
#
#    About $\sqrt{d_{model}}$ (each entry has variance 1), and exactly $\sqrt{d_{model}/2}$. The token
#    vector is $\sqrt{2}$ times longer: the same order, so neither drowns the other at the start of
#    training.
#    </details>
# 5. How many parameters does one shared matrix save over three separate ones with
#    $V_\text{src} = V_\text{tgt} = 37{,}000$ and $d_{model} = 512$?
#    <details><summary>Answer</summary>
#
#    Two $37{,}000 \times 512$ matrices: $2 \cdot 37{,}000 \cdot 512 \approx 37.9$ M parameters.
#    Table 3's 65 M already counts one shared matrix; without sharing the base model would have
#    65 M + 37.9 M. Sharing saves 37.9 M of that sum: more than a third of the unshared model.
#    </details>
#
# ## Further reading
#
# - The paper: §3.4 (embeddings, the shared matrix, the $\sqrt{d_{model}}$ factor) and §5.1 (the
#   byte-pair vocabulary of about 37,000 tokens).
# - Sennrich, Haddow and Birch (2016), *Neural Machine Translation of Rare Words with Subword
#   Units*: byte-pair encoding for translation, the answer to `<unk>`.
# - Kudo and Richardson (2018), *SentencePiece*: a sub-word tokenizer that works on raw text.
# - Press and Wolf (2017), *Using the Output Embedding to Improve Language Models*: the weight tying
#   that §3.4 adopts.
# - Mikolov et al. (2013), *Efficient Estimation of Word Representations in Vector Space*: learned
#   word vectors before Transformers.

# %% [markdown]
# **Next:** [Chapter 02 — Positional encoding](02_positional_encoding.ipynb): the tokens have no order
# yet; positional encoding gives each position a vector of its own.
