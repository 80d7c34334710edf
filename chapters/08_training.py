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
# # Chapter 08 — Training a translator
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/08_training.ipynb)
#
# Chapter 07 counted every weight of the paper's models. All of them are still random: the model
# of chapter 06 cannot translate anything yet. This chapter trains it. At the end, after a few
# minutes on a laptop CPU, your Transformer translates English number words it never saw into
# German. We score it on every kind of number, look at where it still makes mistakes, and load a
# longer run, with the rare numbers repeated more, that makes none.
#
# **Learning goals**
#
# - make a data set on the spot, find its errors, and split it so that the test measures what we
#   care about;
# - turn sentences into padded batches, bucketed by length, and shift the target for teacher forcing;
# - write the paper's recipe: label-smoothed cross-entropy, Adam, the warm-up learning rate;
# - write the training loop, see that `fit` is that loop, train, score the answers, and save and
#   reload a checkpoint.
#
# **In the paper:** §5.1 (training data and batching), §5.3 (optimizer and equation (3), the
# learning-rate schedule), §5.4 (regularization: dropout and label smoothing), §6.1 (BLEU).

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

from transformer_course import pick_device
from transformer_course.training import pick_profile
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("08")  # the short stop at an unwritten exercise; printing and plotting style

device = pick_device()  # CUDA, then Apple's MPS, then the CPU
profile = pick_profile(device)  # the GPU profile on CUDA, the CPU profile elsewhere (section 5 prints it)

# %% [markdown]
# ## Where we are
#
# Training touches the whole model, but what is new here sits at its two ends. At the bottom right
# goes the shifted target (teacher forcing); at the top, the loss is computed from the output.
# The [notation page](../book/notation.md) lists the letters.
#
# <details><summary>The diagram in words</summary>
#
# The encoder stands on the left, the decoder on the right, each a stack of
# layers above its embeddings and positional encodings. Three boxes are highlighted. At the bottom
# right, the decoder reads the target ids shifted right, which start with `<bos>`. At the top, the
# softmax gives probabilities of shape (B, T, V_tgt). The loss compares them with the labels, with
# label smoothing. A dotted line on the right marks decoding: it appends the chosen token and runs
# the decoder again.
#
# </details>

# %%
architecture_map("training")

# %% [markdown]
# ## 1. Data without downloads: number words
#
# Real translation corpora are large and need hours of GPU time. Numbers written in words are made
# on the spot and learnt in minutes, yet translating them is still translation. The `num2words`
# library writes any number in English and in German, and the two languages do *not*
# say numbers in the same order.

# %%
from transformer_course.datasets.numbers import number_pair, number_to_english, number_to_german

for n in (21, 7, 1000, 347_512, 101_001):
    src, tgt = number_pair(n)
    print(f"{n:>7,}  {number_to_english(n):<62} → {number_to_german(n)}")

# %% [markdown]
# German says the units before the tens: *ein-und-zwanzig*, "one-and-twenty". So to write the
# first German piece of "twenty-one", the model must look at the *second* English word (chapter 10
# shows its attention doing so).
#
# ### Tokens: words for English, compound pieces for German
#
# English number words are separated by spaces, hyphens and commas (the comma is dropped), so word
# tokens are natural (`english_tokens`). A German number is **one** word however long it is: word tokens would need a
# vocabulary of a million words, and characters would make long numbers tens of tokens long.
#
# German compounds are built from a small set of pieces, so we cut them there; we call German
# tokens *pieces*. `german_tokens`
# cuts a word with a list of 32 pieces, *null, ein, eins, zwei, …, neunzehn, zwanzig, …, neunzig,
# und, hundert, tausend*: at each position it takes the longest piece that fits. Below, English *and* has no
# German piece, and German *und* no English word.
# `german_text` joins the pieces back into the written word.

# %%
from transformer_course import english_tokens, german_text, german_tokens

src, tgt = number_pair(347_512)
print(src)
print(tgt)
assert german_text(german_tokens("dreihundertsiebenundvierzigtausendfünfhundertzwölf")) == number_to_german(347_512)

# %% [markdown]
# ### Real data is never clean: errors in `num2words`
#
# Before training on generated data, check it. The rule for German is that *eins* loses its *s*
# inside a compound: *eintausend*, *einundzwanzigtausend*, *einhunderteintausend*. `num2words`
# follows it for 1,000 and 21,000 but not for 101,000:

# %%
from num2words import num2words

for n in (1_000, 21_000, 101_000):
    print(f"{n:>7,}: {num2words(n, lang='de'):24} (num2words)  {number_to_german(n)} (corrected)")

# %% [markdown]
# How many numbers are affected? `num2words` writes the thousands group and the rest separately, so
# we compare the 999 thousands groups with our rule-based `number_to_german`.

# %%
wrong_groups = [a for a in range(1, 1000) if num2words(a * 1000, lang="de") != number_to_german(a * 1000)]
print("thousands groups written wrongly by num2words:", wrong_groups)
print(f"numbers affected: {len(wrong_groups) * 1000:,} of 1,000,000, e.g. {num2words(901_017, lang='de')}")

# %% [markdown]
# Every group ending in 01 above 100 gets *einstausend*: about 1% of the data. A model trained on
# the raw output would learn the error, and a test set made the same way would reward it. So the
# data generator writes the corrected form.
#
# ### Splits: what the test should measure
#
# We hold out numbers: a held-out number never appears in training. But *which* numbers to test? A
# number drawn at random below a million almost always has six digits: "seven" and "forty thousand"
# are one number in a million each. A random test split says nothing about the rare kinds.
#
# The splits are therefore **stratified**. `number_strata` sorts every number into kinds, called
# *strata*: 0–20, 21–99, 100–999, round hundreds, round thousands, round hundred-thousands,
# "N thousand and k" ("forty thousand and seven") and the full range. Validation and test take
# numbers from every stratum, and the score is reported per stratum. Two more decisions:
#
# - **Some strata cannot be held out.** Below 100 the German forms are irregular (*null*, *elf*,
#   *siebzig*): a model that never saw "zero" cannot know it is *null*. The 9 round hundreds and 9
#   round hundred-thousands are too few to spare. These four strata are in training *and* in the
#   test split (the column "of them in training" below); section 8 marks them "seen". Their score
#   measures memory, not translation.
# - **Rare strata are repeated in training** (`NUMBER_OVERSAMPLING`; the table's last column).

# %%
from transformer_course.datasets.numbers import NUMBER_OVERSAMPLING, numbers_task

task = numbers_task()  # stratified splits; rare strata repeated in training (NUMBER_OVERSAMPLING)
numbers, strata = task.info["numbers"], task.info["strata"]
train_numbers = set(numbers["train"])
print({name: len(values) for name, values in numbers.items()}, "distinct numbers;",
      f"{len(task.train):,} training pairs after oversampling")
print(f"\n{'stratum':24} {'test':>5} {'of them in training':>20} {'repeats':>8}")
for stratum, members in strata["test"].items():
    in_training = sum(n in train_numbers for n in members)
    print(f"{stratum:24} {len(members):>5} {in_training:>20} {NUMBER_OVERSAMPLING.get(stratum, 1):>7}×")
print(
    "validation and test share no held-out number:", not (set(numbers["valid"]) & set(numbers["test"])) - train_numbers
)
print("vocabularies:", len(task.src_vocab), "English ids,", len(task.tgt_vocab), "German ids (4 special tokens in each)")
print("longest source / target:", max(len(s) for s, _ in task.train), "/", max(len(t) for _, t in task.train), "tokens")

# %% [markdown]
# Our two vocabularies are separate, unlike §5.1's shared one, so the source has its own embedding.
# The output layer shares its matrix with the German embedding only (`tie_output`, chapter 06).
#
# ## 2. Batches: padding, bucketing, teacher forcing
#
# A batch is a rectangle, sentences are not. Short sentences are filled up with `<pad>` (id 0),
# which the masks of chapter 06 hide and the loss below ignores. Padding still costs compute, so we
# use **length bucketing**: shuffle the data, cut it into pools of 50 batches, sort each pool by
# length and cut the batches from it (the paper batches "by approximate sequence length", §5.1).
# A pair's length counts source and target; the figure draws each batch's source side.
# The batches are shuffled again, so training still sees a mix. The paper's batches hold about
# 25,000 source and 25,000 target tokens each; ours hold a fixed number of sentences. Chapter 12
# counts batches in tokens.

# %%
from transformer_course.batching import batch_indices, encode_pairs, make_batch, pad_sequences, teacher_forcing

examples = encode_pairs(task.train, task.src_vocab, task.tgt_vocab)
lengths = [len(s) + len(t) for s, t in examples]


def padding_share(batches: list[list[int]]) -> float:
    cells = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    return 1 - sum(lengths[i] for b in batches for i in b) / cells


for bucket in (1, 50):
    share = padding_share(batch_indices(lengths, 128, seed=0, epoch=0, bucket=bucket))
    print(f"bucket={bucket:>2}: {share:.1%} of the batch cells are padding")

# %% [markdown]
# <details><summary>The figure in words</summary>
#
# Two panels each show the source side of one batch of 16 sentences as a grid, one row per
# sentence and one column per source position. Green cells hold real tokens, white cells padding. On
# the left, a batch drawn without bucketing mixes lengths, so the shorter rows end in white cells.
# On the right, a batch cut from a pool sorted by length holds sentences of nearly one length, with
# little or no white.
#
# </details>

# %% tags=["hide-input"]
fig, axes = plt.subplots(1, 2, figsize=(11, 3.2))
for ax, bucket in zip(axes, (1, 50), strict=True):
    indices = batch_indices(lengths, 16, seed=0, epoch=0, bucket=bucket)[0]
    batch = make_batch([examples[i] for i in indices], pad_id=0)
    ax.imshow(batch.src != 0, cmap="Greens", vmin=0, vmax=1.4, aspect="auto")
    how = "no bucketing (bucket=1)" if bucket == 1 else f"pools of {bucket} sorted (bucket={bucket})"
    ax.set(title=f"one batch, {how}; white = padding", xlabel="position", ylabel="sentence")
fig.tight_layout()

# %% [markdown]
# **Teacher forcing.** In training the decoder does not read its own guesses; it reads the true
# target, shifted by one. A target `<bos> y1 … yn <eos>` becomes the decoder input `<bos> y1 … yn`
# and the labels `y1 … yn <eos>`. Position t reads the tokens up to t and is asked for token t+1;
# the causal mask of chapter 06 keeps it from peeking further. One pass trains every position at
# once. The diagram below shows it for *einundzwanzig*.
#
# <details><summary>The diagram in words</summary>
#
# On the left are four columns, positions 0 to 3. Along the bottom, the
# decoder input reads `<bos>`, *ein*, *und*, *zwanzig*. Along the top, the labels read *ein*, *und*,
# *zwanzig*, `<eos>`. Each column goes up through the decoder to its label. A dashed arrow shows that
# each label is the next column's input. On the right is the causal mask over the four input
# positions, a lower triangle: position t may read positions 0 to t only.
#
# </details>

# %%
from transformer_course_tools.notebook.diagrams import teacher_forcing_diagram

teacher_forcing_diagram(german_tokens("einundzwanzig"))

# %% [markdown]
# `teacher_forcing` does the cut on a padded batch of targets (exercise ex08_2); `make_batch` calls
# it for every batch. Here it is on two targets, wrapped in `<bos> … <eos>` and padded to one
# length. (The English sources carry neither, unlike chapter 06's: the padding mask marks their
# end.) The shorter one keeps its `<eos>` in the decoder input; its label there is
# `<pad>`, which the loss ignores:

# %%
targets = [task.tgt_vocab.encode(number_pair(n)[1], add_bos=True, add_eos=True) for n in (21, 5_000)]
full_target = pad_sequences(targets, pad_id=0)  # (B, T+1): <bos> … <eos>, the shorter one ends in <pad>
decoder_in, labels = teacher_forcing(full_target)
assert torch.equal(decoder_in, full_target[:, :-1]) and torch.equal(labels, full_target[:, 1:])
for row in range(2):
    print("decoder input:", task.tgt_vocab.decode(decoder_in[row].tolist(), skip_special=False))
    print("labels:       ", task.tgt_vocab.decode(labels[row].tolist(), skip_special=False))

# %% [markdown]
# ## 3. The loss: label smoothing that ignores padding (§5.4)
#
# Training lowers one number: the loss. Cross-entropy with a one-hot target asks the model to give
# the right token probability 1. It can only approach that by growing its logits without end.
# **Label smoothing** trains towards a softened target instead, with $\varepsilon_{ls} = 0.1$ in
# the paper:
# $q = (1-\varepsilon)\,\text{one\_hot}(y) + \varepsilon / V_\text{tgt}$. The paper says: "This hurts
# perplexity, as the model learns to be more unsure, but improves accuracy and BLEU score" (§5.4).
# [Chapter 11](11_testing_the_papers_choices.ipynb) puts the claim to a test.
#
# **Perplexity** is $e$ to the mean cross-entropy per token of the correct text:
# $\exp\left(-\frac{1}{N}\sum_t \log p(y_t)\right)$. A model that spreads its probability evenly
# over $k$ tokens at every step has perplexity $k$; a perfect model has 1.
#
# Two details make the loss right for translation: positions whose label is `<pad>` contribute nothing, and the mean is
# over the real tokens only. Like `F.cross_entropy(label_smoothing=…)`, we spread ε over all
# $V_\text{tgt}$ ids; the Annotated Transformer skips the right id and `<pad>`.
#
# <details><summary>The figure in words</summary>
#
# A bar chart has the ids of the German vocabulary along the horizontal axis.
# The vertical axis is the target probability, on a logarithmic scale from 0.001 to 1.5. Without
# smoothing, in grey, the target is a single bar of height 1 on the piece *zwanzig*. With ε = 0.1,
# in blue, that bar falls to just above 0.9. Every other id gets a short blue bar, all of one
# height: 0.1 divided by the size of the vocabulary.
#
# </details>

# %%
from transformer_course.loss import label_smoothed_cross_entropy, smoothed_targets

vocab_size = len(task.tgt_vocab)
label = task.tgt_vocab.encode(["zwanzig"])[0]
fig, ax = plt.subplots(figsize=(10, 2.8))
for smoothing, color in ((0.0, "tab:gray"), (0.1, "tab:blue")):
    q = smoothed_targets(torch.tensor(label), vocab_size, smoothing)
    ax.bar(torch.arange(vocab_size) + (0.2 if smoothing else -0.2), q, width=0.4, color=color, label=f"ε = {smoothing}")
ax.set(yscale="log", ylim=(1e-3, 1.5), xlabel="German piece id", ylabel="target probability",
       title=f"Label smoothing keeps 0.9 + ε/V on the right piece ('zwanzig', id {label}) and spreads ε over all {vocab_size}")
ax.legend()
fig.tight_layout()

# %%
import torch.nn.functional as F

logits = torch.randn(2, 5, vocab_size)
target = torch.tensor([[5, 6, 7, 2, 0], [8, 2, 0, 0, 0]])  # two sentences, padded with 0
ours = label_smoothed_cross_entropy(logits, target, smoothing=0.1, pad_id=0)
reference = F.cross_entropy(logits.reshape(-1, vocab_size), target.reshape(-1), label_smoothing=0.1, ignore_index=0)
print(f"ours {ours:.5f}  F.cross_entropy {reference:.5f}")
assert torch.allclose(ours, reference)

# %% [markdown]
# ## 4. The learning rate: warm up, then decay (§5.3)
#
# The loss's gradient says which way to move; the learning rate says how far. The paper's
# optimizer is **Adam**. It keeps running averages of each parameter's gradient (weight β₁ on the
# past) and squared gradient (β₂), and steps by the first divided by the square root of the second:
# every parameter moves by a similar amount. The paper takes β₁ = 0.9, β₂ = 0.98 and
# `eps` = 10⁻⁹ (in Adam's denominator; not label smoothing's ε), with a learning rate that changes
# at every step (equation (3)):
#
# $$ \text{lrate} = d_\text{model}^{-0.5}\cdot\min\left(\text{step}^{-0.5},\ \text{step}\cdot\text{warmup\_steps}^{-1.5}\right) $$
#
# It rises linearly for `warmup_steps` steps, then falls like $1/\sqrt{\text{step}}$: only the peak
# moves with the warm-up. At the start, Adam's estimates of the gradient's scale are poor, and a
# full-size step can throw the post-LN Transformer into a state it never recovers from
# ([chapter 11](11_testing_the_papers_choices.ipynb), section 3, tests this).
#
# `transformer_lr` is the formula (exercise ex08_1). `transformer_scheduler` wraps it as a PyTorch
# `LambdaLR`; the optimizer is made with `lr=1.0`, so the factor *is* the rate. Our small model uses
# a shorter warm-up and half the paper's scale.
#
# <details><summary>The figure in words</summary>
#
# The learning rate for d_model = 128 is drawn against the step, from 1 to
# 3,000. A thick grey curve is the decay alone, falling like one over the square root of the step.
# Four coloured lines rise straight from 0, for warm-ups of 100, 300, 1,000 and 4,000 steps. Each
# ends with a dot on the grey curve, at its own peak, except the warm-up of 4,000 steps, still
# rising at the right edge. A dashed black line is this chapter's schedule. It warms up over the
# steps its profile sets, then follows half of the grey curve.
#
# </details>

# %% tags=["hide-input"]
from transformer_course.schedule import make_optimizer, transformer_lr, transformer_scheduler

steps = torch.arange(1, 3001)
fig, ax = plt.subplots(figsize=(9, 3.6))
decay = [transformer_lr(int(s), 128, 1) for s in steps]  # a warm-up of 1 step: the decay alone
ax.plot(steps, decay, color="lightgray", lw=7, label="the decay every warm-up ends on")
for warmup in (100, 300, 1000, 4000):
    rise = [transformer_lr(int(s), 128, warmup) for s in steps[:warmup]]  # the warm-up only, up to its peak
    (line,) = ax.plot(steps[:warmup], rise, label=f"warm-up of {warmup} steps")
    if warmup <= len(steps):
        ax.plot(warmup, rise[-1], "o", color=line.get_color())  # the peak, at step warmup_steps
ax.plot(steps, [transformer_lr(int(s), 128, profile.warmup_steps, profile.lr_scale) for s in steps], "k--",
        label=f"this chapter: warm-up {profile.warmup_steps}, scale {profile.lr_scale}")
ax.set(xlabel="step", ylabel="learning rate", ylim=(0, 1.2 * transformer_lr(100, 128, 100)),  # up to the highest peak
       title="d_model = 128: each warm-up rises to its own peak, then follows the same decay")
ax.legend()
fig.tight_layout()

# %% [markdown]
# For the base model ($d_\text{model}$ = 512, 4,000 warm-up steps), equation (3) puts the peak at
# $(512 \cdot 4000)^{-1/2} \approx 7.0 \times 10^{-4}$. The paper does not print this number.
# `make_optimizer` builds Adam with §5.3's settings, and the scheduler reproduces the peak:

# %%
optimizer = make_optimizer(torch.nn.Linear(2, 2))
scheduler = transformer_scheduler(optimizer, d_model=512, warmup_steps=4000)
print("Adam's β₁, β₂ and eps:", *optimizer.defaults["betas"], optimizer.defaults["eps"])
for _ in range(3999):
    optimizer.step()
    scheduler.step()
rate = optimizer.param_groups[0]["lr"]
print(f"rate of step 4000: {rate:.3e};  (512 · 4000)^-0.5 = {(512 * 4000) ** -0.5:.3e}")
assert abs(rate - (512 * 4000) ** -0.5) < 1e-12

# %% [markdown]
# ## 5. The training loop
#
# Data, batches, loss and learning rate are ready; training repeats one step thousands of times.
# `prepare_training` puts a run together from the settings below: on the CPU the paper's model
# scaled down; on a GPU a larger one, trained longer.

# %%
from transformer_course.step import MixedPrecision
from transformer_course.training import prepare_training
from transformer_course_tools.notebook.pages import run_settings

print(run_settings(profile, device, MixedPrecision.for_device(device)))
run = prepare_training(task, profile, device)  # seed → model → optimizer → scheduler → batches
model, optimizer, scheduler = run.model, run.optimizer, run.scheduler
print(f"{sum(p.numel() for p in model.parameters()):,} parameters")

# %% [markdown]
# Here is the loop, written out, for five batches of the real task. Its seven steps are forward,
# loss, `zero_grad`, `backward`, clipping, `optimizer.step` and `scheduler.step`. Gradient clipping
# is not in the paper: it shrinks the gradient when its norm exceeds `max_grad_norm` (1 here). So a
# rare bad batch cannot undo a short run's progress.

# %% tags=["nbval-ignore-output"]
losses = []
for _ in range(5):
    batch = next(run.batches).to(device)  # profile.batch_size sentence pairs, padded
    model.train()  # dropout on
    # one training step, the body that ex08_4's train_step writes:
    logits = model(batch.src, batch.tgt_in)  # (B, T, V_tgt): the decoder reads the shifted target
    loss = label_smoothed_cross_entropy(logits, batch.tgt_out, profile.smoothing, batch.pad_id)  # one number
    optimizer.zero_grad()  # forget the previous step's gradients
    loss.backward()  # the gradient of the loss for every parameter
    torch.nn.utils.clip_grad_norm_(model.parameters(), profile.max_grad_norm)  # shrink it if its norm is above 1
    optimizer.step()  # Adam's update
    scheduler.step()  # the learning rate of the next step, equation (3)
    losses.append(loss.item())
print("loss at each of the first five steps:", [round(value, 3) for value in losses])

# %% [markdown]
# The first losses are above ln 36 ≈ 3.58, the cost of a uniform guess over the 36 German ids:
# random logits cost more.
#
# The course's `fit` makes exactly these seven steps: from the same seed, it must give the same five
# losses, to the last bit on a CPU:

# %%
from dataclasses import replace

from transformer_course.training import fit

again = prepare_training(task, profile, device)  # the same seed: the same weights, the same batches
history = fit(again.model, again.batches, again.optimizer, again.scheduler, 5,
              options=replace(again.options, precision=None, progress=False))
if device.type == "cpu":
    same = history.losses == losses  # the same operations in the same order: the same bits
else:  # a GPU may add its floats in another order from one call to the next
    same = torch.allclose(torch.tensor(history.losses), torch.tensor(losses), rtol=1e-4)
print("fit's five losses equal the loop's:", same)
assert same

# %% [markdown]
# So `fit` is this loop, whose body is `train_step` (exercise ex08_4), plus what a long run needs:
# a stop on a loss that is not finite, evaluation now and then, a time limit, and on a GPU faster
# 16-bit floats (*mixed precision*, `MixedPrecision`).
#
# ## 6. A toy task before the long run
#
# Five steps show that the loop runs, not that it learns. Reversing a string of letters needs
# attention by position and nothing else: a small correct model learns it in a short run, and a
# bug in the masks, the shift or the loss shows as a model that does not.
#
# To judge it, the model must answer alone: in training it always read the correct target so far.
# `read_greedily` (in `evaluation.py`) does the plainest thing that works, **greedy decoding**. It
# encodes the source once, runs the decoder on `<bos>` and the tokens chosen so far, and keeps the
# most probable next token, until every sentence has said `<eos>` or reached its limit: the
# source's length + 50 tokens (§6.1). Chapter 09 shows better ways. `translate` answers a list of
# sentences with it, and `evaluate` scores the answers. The score to watch is **exact match**, the
# share of answers right in full. `evaluate` also returns two scores that give partial credit, in
# percent:
#
# - **BLEU** (Papineni et al., 2002; the paper's §6.1): the overlap of 1- to 4-grams with the
#   reference, with a penalty for short outputs. A German number is a single word, so we count the
#   pieces as words; otherwise BLEU would see no 2-, 3- or 4-grams.
# - **chrF** (Popović, 2015): the F-score of character n-grams of the written answer. It gives partial
#   credit for *dreihundertsiebenundvierzig* when the answer was *dreihundertsiebenundfünfzig*.
#
# `sacrebleu` computes both.

# %% tags=["nbval-ignore-output"]
from transformer_course.data import load_task
from transformer_course.evaluation import evaluate, translate

toy = load_task("reverse")  # strings of 3 to 10 letters from a to j; the target is the string backwards
toy_profile = pick_profile(device, toy.name)  # d_model 64, one layer each side, no dropout
training_strings = {tuple(src) for src, _ in toy.train}
print(f"{len(toy.train):,} training pairs, e.g. {' '.join(toy.train[0][0])} → {' '.join(toy.train[0][1])}; "
      f"{len(toy.test)} test strings, {sum(tuple(src) in training_strings for src, _ in toy.test)} of them "
      f"also training strings; {toy_profile.steps:,} steps of {toy_profile.batch_size} strings")


def train_toy(steps: int = toy_profile.steps, change=lambda batches: batches) -> torch.nn.Module:
    """A toy run; ``change`` may alter its batches (the common mistake below)."""
    run = prepare_training(toy, toy_profile)  # seed → model → optimizer → scheduler → batches
    options = replace(run.options, smoothing=0.0, progress=False)  # no smoothing: the loss can approach 0
    history = fit(run.model, change(run.batches), run.optimizer, run.scheduler, steps, options=options)
    print(f"loss: first step {history.losses[0]:.3f}, last step {history.losses[-1]:.4f}")
    return run.model


toy_model = train_toy()
toy_scores = evaluate(toy_model, toy.test, toy)
print(f"reverse task, held-out strings: exact match {toy_scores['exact_match']:.1f} %")
print(toy.test[0][0], "→", translate(toy_model, [toy.test[0][0]], toy)[0])

# %% tags=["hide-cell"]
# A folded check asserts a claim with a margin that holds on every machine, not one run's exact number:
# the box "How this book tests a claim" on the book's first page (book/index.md) says why.
from transformer_course_tools.notebook.claims import expect, expect_above, expect_at_least, expect_at_most

expect_at_least("the toy model reverses held-out strings exactly", toy_scores["exact_match"], 50, "%")

# %% [markdown]
# Most held-out strings come back exactly right; a broken pipeline gets next to none.
#
# What did the toy model learn? To write output letter $t$ it must read input letter $S - 1 - t$,
# counted from the *end*. Below are the four cross-attention heads of its decoder layer, on one
# held-out string: rows are the letters it writes, columns the letters it reads. From here on,
# figures count heads from 1, as the paper does. A head that has found the rule puts its weight on
# the *anti*-diagonal. The line above the figure
# counts them in this run.
#
# <details><summary>The figure in words</summary>
#
# Four heatmaps stand side by side, one per head of the decoder's single
# layer. In each, the rows are the letters the model writes, from top to bottom, ending with
# `<eos>`. The columns are the letters of the input string, from left to right. Darker blue means
# more weight, on a scale from 0 (white) to 1. The title names the pattern to look for: the weight
# lies along the anti-diagonal, from the top right corner to the bottom left.
#
# </details>

# %% tags=["nbval-ignore-output"]
from transformer_course.evaluation import attention_maps
from transformer_course_tools.notebook.figures import plot_attention_heads

toy_src, toy_tgt = max(toy.test[:50], key=lambda pair: len(pair[0]))  # a long held-out string
toy_ids = torch.tensor([toy.src_vocab.encode(toy_src)])  # (1, S)
toy_out = torch.tensor([toy.tgt_vocab.encode(toy_tgt, add_eos=True)])  # (1, T): the letters, then <eos>
toy_maps = attention_maps(toy_model, toy_ids, toy_out)["cross"]  # (layers, B, H, T, S)
S_toy = len(toy_src)
mirror = toy_maps[0, 0, :, torch.arange(S_toy), S_toy - 1 - torch.arange(S_toy)]  # (H, S): weight on the mirror letter
print(f"heads with most of their weight on the mirror letter: {(mirror.mean(-1) > 0.5).sum()} of {mirror.shape[0]}")
plot_attention_heads(toy_maps[:, 0], toy_tgt + ["<eos>"], toy_src,  # the cell's last expression: Jupyter shows it
                     "Reverse task, cross-attention: the mirror position is the anti-diagonal",
                     query_axis="letter written (output)", key_axis="letter read (input)")

# %% [markdown]
# > **Common mistake — the target is not shifted.** Feed the decoder the target and compare its
# > output with the *same* target: each position only has to copy the token it is reading. The loss
# > is low from the first step: the output layer shares its matrix with the target embedding
# > (chapter 01), and the residual connections carry each input embedding up to the output. But at
# > translation time the decoder reads its own previous guess, and the model has learned nothing it
# > can use. Below: the same toy run with labels = decoder input. (The check of exercise ex08_2
# > rejects a `teacher_forcing` that returns the target twice.)

# %% tags=["nbval-ignore-output"]
from transformer_course.batching import Batch


def unshifted(batches):
    return (Batch(src=b.src, tgt_in=b.tgt_in, tgt_out=b.tgt_in, pad_id=b.pad_id) for b in batches)  # labels = decoder input


cheating_model = train_toy(steps=300, change=unshifted)
cheating_scores = evaluate(cheating_model, toy.test, toy)
print("reverse task, held-out strings:", cheating_scores)
print(toy.test[0][0], "→", translate(cheating_model, [toy.test[0][0]], toy)[0][:12], "…")

# %% tags=["hide-cell"]
expect_at_most("the model trained on unshifted targets reverses held-out strings exactly",
               cheating_scores["exact_match"], 5, "%")

# %% [markdown]
# A low training loss proves nothing: only answers to held-out inputs show that the model works.
#
# ## 7. Training the translator
#
# Now the real task, with section 5's settings, from a fresh start of the same seed. Every 200 steps
# the model translates every third validation number, so every stratum in its share, and we record
# its scores. Here an answer may have at most 20 pieces (the longest German number has
# 11, plus `<eos>`), so an early model that never stops costs less time.

# %% tags=["nbval-ignore-output"]
from transformer_course.evaluation import score_translations
from transformer_course.training import Evaluation

run = prepare_training(task, profile, device)  # the same seed: section 5's model, untrained
model, optimizer, scheduler = run.model, run.optimizer, run.scheduler
valid = task.valid[::3]  # the split is stored stratum by stratum: every third number keeps their shares


def validation_score(model: torch.nn.Module) -> dict[str, float]:
    answers = translate(model, [s for s, _ in valid], task, max_len=20)  # a length limit: at most 20 pieces each
    return score_translations(answers, valid, task)  # exact match, BLEU and chrF, in percent


history = fit(
    model, run.batches, optimizer, scheduler, profile.steps,
    options=run.options,  # label smoothing and clipping of the profile; mixed precision on a GPU
    evaluation=Evaluation(validation_score, every=200),
)
print(f"{history.seconds / 60:.1f} minutes of training, {len(history.steps) / history.seconds:.1f} steps/s "
      "(the bar's rate counts the evaluations too)")

# %% [markdown]
# <details><summary>The figure in words</summary>
#
# Two panels share the training step as their horizontal axis. The left one
# draws the label-smoothed loss on a logarithmic scale. A pale blue line gives the loss of every
# batch, a darker one its running mean, and a dotted black line the lowest possible loss. The right
# one draws the exact match on the validation numbers, in percent from 0 to 100, every 200 steps, as
# green dots joined by a line.
#
# </details>

# %%
from transformer_course_tools.notebook.plots import plot_history

fig = plot_history(history, "numbers en→de")
q = smoothed_targets(torch.tensor(0), len(task.tgt_vocab), profile.smoothing)
floor = -(q * q.log()).sum().item()  # the entropy of the smoothed target
fig.axes[0].axhline(floor, color="black", ls=":", label="lowest possible loss")
fig.axes[0].legend()
print(f"lowest possible loss with ε = {profile.smoothing}: {floor:.3f}")

# %% [markdown]
# The loss falls fast, then slowly. It cannot reach 0: even a perfect model pays the entropy of the
# smoothed target (the dotted line). Scores need not rise at every evaluation. BLEU
# can even fall while exact match rises: an answer that runs on costs it many pieces.
#
# ## 8. Evaluation
#
# Now the model answers the whole test split, with §6.1's limit. `score_translations` gives section
# 6's three scores: exact match, BLEU and chrF.

# %% tags=["nbval-ignore-output"]
test_sources = [s for s, _ in task.test]
test_answers = translate(model, test_sources, task)  # German pieces, read greedily up to §6.1's limit
test_scores = score_translations(test_answers, task.test, task)
print(test_scores)

# %% tags=["hide-cell"]
expect_at_least("exact match on the test split", test_scores["exact_match"], 95, "%")
expect_at_least("BLEU on the test split", test_scores["bleu"], 85)  # a few outputs that never stop cost ~50 tokens each

# %% [markdown]
# The model at work on three numbers of our choice: 21, from a seen stratum, and two that are in
# no split, so the model never saw them:

# %% tags=["nbval-ignore-output"]
assert not {999_999, 88_008} & {n for split in numbers.values() for n in split}  # in no split
for n in (21, 999_999, 88_008):
    written = german_text(translate(model, [english_tokens(number_to_english(n))], task)[0])
    verdict = "right" if written == number_to_german(n) else f"wrong: {n:,} is {number_to_german(n)}"
    print(f"{number_to_english(n)} → {written}  ({verdict})")

# %% [markdown]
# An unseen number may come out wrong; the verdict then gives the right German.
# One number for the whole split hides the strata. `strata_scores` scores the answers of each
# stratum on its own. The last column marks the seen strata.

# %% tags=["nbval-ignore-output"]
from transformer_course.evaluation import strata_scores
from transformer_course_tools.notebook.plots import strata_table

test_strata = strata_scores(task, "test", test_answers)
print(strata_table(test_strata))

# %% tags=["hide-cell"]
large = {name: s for name, s in test_strata.items() if s["count"] >= 100}
expect("every stratum of 100 numbers or more is at least 90% exact",
       all(s["exact_match"] >= 90 for s in large.values()),
       ", ".join(f"{name} {s['exact_match']:.1f}%" for name, s in large.items()))

# %% [markdown]
# The large strata are at 90% or more; the small ones can land anywhere. In a stratum of nine
# numbers one mistake costs 11 points, and its numbers share one pattern: a model still learning it
# may miss several at once. Where a *seen* stratum falls far below 100% (on some machines, the round
# hundreds), it is likely under-training:
# the model has not yet fitted even its training examples. The loss cannot show it: nine numbers are
# a tiny share of the training pairs. Here are this run's first mistakes:

# %% tags=["nbval-ignore-output"]
mistakes = [(n, h, t) for n, h, (_, t) in zip(numbers["test"], test_answers, task.test, strict=True) if h != t]
run_away = sum(len(hyp) > len(ref) + 10 for _, hyp, ref in mistakes)  # ran on towards §6.1's limit
print(f"{len(mistakes)} mistakes among {len(task.test)} test numbers; {run_away} of them did not stop")
for n, hyp, ref in mistakes[:6]:
    print(f"{n:>7,}: {german_text(hyp):<50} expected {german_text(ref)}")

# %% [markdown]
# Chapter 10 sorts such mistakes by kind. The plainest remedy is to train longer, and to repeat the
# rare kinds of number more. The course ships a run that did both. Section 9 loads and scores it,
# after showing how a run is kept.
#
# ## 9. Checkpoints: keep a run, load a longer one
#
# A longer run needs its state saved as it goes, so that it can be stopped, resumed and shared. A
# checkpoint holds what it takes to *use* the model (its configuration, weights and both
# vocabularies) and to train on from there (the optimizer and scheduler state, the step, the random
# state). The file is about three times the size of the weights: Adam keeps two running averages
# per weight. `load_checkpoint` reads it with `torch.load(weights_only=True)`, which loads tensors
# and plain values, never code. Below we save this run and load it back. (A folded cell then hands
# the loader a damaged file, which it refuses with one line.)

# %%
import tempfile
from pathlib import Path

from transformer_course.checkpoint import load_checkpoint, save_checkpoint

scratch = tempfile.TemporaryDirectory()  # a folder of its own, deleted in the next cell
folder = Path(scratch.name)
path = save_checkpoint(folder / "numbers.pt", model, task.src_vocab, task.tgt_vocab, optimizer, scheduler,
                       step=history.steps[-1], extra={"task": task.name, "test": test_scores})
restored = load_checkpoint(path)
print(f"{path.stat().st_size / 1e6:.1f} MB; step {restored.step}; config d_model={restored.config.d_model}")
src = torch.tensor([task.src_vocab.encode(english_tokens("twenty-one"))])  # the decoder reads <bos> (id 1) below
model.eval()
start = torch.tensor([[task.tgt_vocab.bos_id]])  # (1, 1): <bos>
assert torch.equal(restored.model(src, start), model.cpu()(src, start))
model = model.to(device)  # back where training left it

# %% tags=["hide-cell"]
(folder / "broken.pt").write_bytes(path.read_bytes()[:1000])
try:
    load_checkpoint(folder / "broken.pt")
except ValueError as error:
    print("ValueError:", str(error)[:110], "…")
scratch.cleanup()  # the checkpoint and its broken copy

# %% [markdown]
# The same from a terminal, with a time limit instead of a step count:
#
# ```bash
# python -m transformer_course train --task numbers-en-de --max-seconds 90 --out model.pt
# python -m transformer_course evaluate model.pt --task numbers-en-de
# ```
#
# The course ships such a checkpoint: this recipe with more training and more of the rare numbers
# (3,000 steps, the round hundreds repeated 60 times, "N thousand and k" 4 times). `load_pretrained`
# checks the file's SHA-256 before loading it; chapter 09 decodes with it. Here it answers the same
# test split as our run, stratum by stratum:

# %%
from transformer_course_tools.models.pretrained import load_pretrained

pretrained = load_pretrained()
shipped_answers = translate(pretrained.model.to(device), test_sources, task)
shipped_scores = score_translations(shipped_answers, task.test, task)
print(f"the shipped model, after {pretrained.step:,} steps:", shipped_scores)
print(strata_table(strata_scores(task, "test", shipped_answers)))
for n in (800, 88_008):
    print(f"{number_to_english(n)} → {german_text(translate(pretrained.model, [number_pair(n)[0]], task)[0])}")

# %% tags=["hide-cell"]
expect_at_least("the shipped model: exact match on the test split", shipped_scores["exact_match"], 99.9, "%")

# %% [markdown]
# The longer run makes no mistake on the test split, in any stratum. It changed steps and repeats
# at once, so it does not say which one mattered.
#
# ## Summary
#
# - The data is generated, checked (the `num2words` errors) and split into strata, so that every
#   kind of number is tested; rare kinds are repeated in training.
# - Bucketing by length keeps the padding small. Teacher forcing shifts the target by one, so that
#   each position predicts the next token.
# - The recipe of §5: label-smoothed cross-entropy over real tokens, Adam (0.9, 0.98, 1e-9), a
#   warm-up then a 1/√step learning rate; we add gradient clipping.
# - The training loop repeats seven steps; `fit` is that loop with logging and evaluation.
# - A low loss is no proof (the unshifted target); answers to held-out inputs are. The strata show
#   where the mistakes are.
# - A checkpoint holds the model and the training state; it loads safely. The shipped one, run
#   longer with the rare numbers repeated more, makes no mistake on the test split.
#
# **Exercises:** [exercises/ex08_training.ipynb](../exercises/ex08_training.ipynb) asks you to write
# `transformer_lr` (ex08_1), `teacher_forcing` (ex08_2), `label_smoothed_cross_entropy` (ex08_3) and
# `train_step` (ex08_4). Stuck on one? `python -m transformer_course restore ex08_1` puts its worked
# answer in your student edition.

# %% [markdown]
# ## Check yourself
#
# 1. Why can a test split of numbers drawn at random below a million not show that a model
#    translates "seven" wrongly? What does the "seen" column of the strata table mean?
#    <details><summary>Answer</summary>
#
#    A random number almost always has six digits; "seven" is one number in a million. "Seen"
#    strata are also in training: their score measures memory, not generalisation.
#    </details>
# 2. For the target `<bos> y1 y2 y3 <eos>`, what are the decoder input and the labels?
#    <details><summary>Answer</summary>
#
#    Input `<bos> y1 y2 y3`, labels `y1 y2 y3 <eos>`: position $t$ reads the tokens up to $t$ and is
#    asked for the next one.
#    </details>
# 3. What does label smoothing train towards, and why can the loss not reach 0?
#    <details><summary>Answer</summary>
#
#    $(1 - \varepsilon)\,\text{one\_hot}(y) + \varepsilon / V_\text{tgt}$; even a perfect model pays the
#    entropy of that target.
#    </details>
# 4. Where does the learning rate of equation (3) peak, and at which value?
#    <details><summary>Answer</summary>
#
#    At step `warmup_steps`, with $(d_{model} \cdot \text{warmup\_steps})^{-1/2}$; for the base model
#    $(512 \cdot 4000)^{-1/2} \approx 7.0 \times 10^{-4}$.
#    </details>
# 5. Name the seven steps of the training loop, in order.
#    <details><summary>Answer</summary>
#
#    Forward, loss, clear the old gradients, backward, clip the gradient norm, optimizer step,
#    scheduler step (it sets the next learning rate).
#    </details>
#
# ## Further reading
#
# - The paper: §5.1 (data and batching), §5.3 (Adam and equation (3)), §5.4 (dropout and label
#   smoothing), §6.1 (BLEU, and the output's length limit).
# - Szegedy et al. (2016), *Rethinking the Inception Architecture for Computer Vision*: label
#   smoothing.
# - Kingma and Ba (2015), *Adam: A Method for Stochastic Optimization*.
# - Popel and Bojar (2018), *Training Tips for the Transformer Model*: warm-up, batch size and
#   learning rate in practice.
# - Papineni et al. (2002) on BLEU; Popović (2015) on chrF; Post (2018), *A Call for Clarity in
#   Reporting BLEU Scores*, which introduced `sacrebleu`.

# %% [markdown]
# **Next:** [Chapter 09 — Decoding: from a trained model to a translator](09_decoding.ipynb): beam
# search, sampling and a key/value cache: other ways to read a translation from the trained model,
# and a faster one.
