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
# # Chapter 14 — Training a modern language model
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/chapters/14_training_a_language_model.ipynb)
#
# Chapter 13 built the modern block and trained it for 300 steps on six plays by Shakespeare, with
# the paper's Adam and schedule. Its lines had the shape of a play and little sense. This chapter
# trains a larger model of the same block with today's recipe, then measures which of the modern
# changes pay.
#
# Section 1 sets out the recipe and section 2 trains with it. To keep the chapter short, a CPU runs
# only the first 100 of the run's 1,000 steps, the warm-up. Your loss lands on the shipped run's at
# that step, so the model the course ships is the rest of your run. Section 3 reads what it writes, and
# section 4 sets its size beside published models.
#
# Section 5 is the payoff. Small models, each with one modern change undone, race today's block in
# pairs. Fifteen runs (five models, three runs each) are too many for the plays on a CPU, so they
# read chapter 12's short German sentences. Each of these runs is whole, so there the cosine decay
# acts. You will see which changes beat the 2017 choice, and one that may lose.
#
# **Learning goals**
#
# - train a language model with today's recipe: AdamW with weight decay on the matrices, warm-up and
#   cosine decay, and bf16 on a GPU (a CPU trains in float32);
# - measure a language model by its loss and perplexity on held-out text, and read its samples;
# - sample with temperature and top-p, and check that the KV cache changes no token;
# - estimate a run's compute from its parameters and tokens;
# - compare the old and the new choices in paired runs, and tell a difference consistent in sign
#   from one where the runs do not overlap.
#
# **In the paper:** the 2017 choices that this chapter tests against today's.
#
# - §5.3, equation (3): Adam with the warm-up and inverse-square-root schedule;
# - §3.1: the LayerNorm of each residual block;
# - §3.3: the ReLU feed-forward network;
# - §3.5: the sinusoidal positions added to the embeddings.

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
import re
import time

import matplotlib.pyplot as plt
import torch
from IPython.display import Markdown, display

from transformer_course import pick_device
from transformer_course.batching import batch_stream
from transformer_course.datasets.shakespeare import PLAYS, pack_passages, play_text, shakespeare_splits
from transformer_course.lm import DecoderOnlyConfig, DecoderOnlyLM, WithoutSource, generate
from transformer_course.recipe import make_adamw, warmup_cosine_lr, warmup_cosine_scheduler
from transformer_course.schedule import transformer_lr
from transformer_course.step import MixedPrecision
from transformer_course.subwords import SubwordTokenizer
from transformer_course.swiglu import swiglu_hidden_size
from transformer_course.training import FitOptions, fit
from transformer_course_tools.models.pretrained import load_pretrained_lm
from transformer_course_tools.notebook.claims import (
    expect,
    expect_above,
    expect_at_least,
    expect_at_most,
    expect_between,
)
from transformer_course_tools.notebook.experiments import one_thread
from transformer_course_tools.notebook.figures import architecture_map
from transformer_course_tools.notebook.lm_experiments import (
    LONG_LOSS,
    VALID_LOSS,
    LMData,
    LMSetting,
    LMVariant,
    loss_by_position,
    paired_verdict,
    run_lm_experiment,
    token_losses,
)
from transformer_course_tools.notebook.setup import setup_chapter

torch.manual_seed(0)
setup_chapter("14")  # the short stop at an unwritten exercise; printing and plotting style

# %% [markdown]
# ## Where we are
#
# The map is chapter 13's model: one stack of blocks under a causal mask, with RMSNorm, rotary
# positions, grouped key/value heads and SwiGLU. This chapter's parts are highlighted: the loss and
# its training, and generation. The letters are those of the [notation page](../book/notation.md);
# $T$ is the length of a text, and $H_{kv}$ the number of key/value heads.
#
# <details><summary>The diagram in words</summary>
#
# One stack stands in the middle, with no encoder beside it. From the
# bottom, the token ids enter the token embedding. A dashed frame marks the block repeated N times:
# an RMSNorm before the causal self-attention, another before the SwiGLU feed-forward network, each
# sub-layer with a shortcut around it. Above the stack come a final RMSNorm, the output layer tied
# to the embedding, and the softmax. The softmax and the two boxes above it are highlighted. On the
# left, the loss against the next tokens is trained with AdamW and a cosine schedule. On the right,
# generation picks the next token and feeds it back to the token ids.
#
# </details>

# %%
architecture_map(["training", "decoding"], model="decoder-only")

# %% [markdown]
# ## 1. Today's recipe, on Shakespeare
#
# We start from the shipped model, because its file holds the recipe. The course trained it once
# on the plays and recorded every setting beside the weights. `load_pretrained_lm` reads the file
# and refuses one that was damaged or changed, as chapter 08 does for the translator. We take the
# recipe from there, so that our run below is the beginning of the same run.

# %%
shipped = load_pretrained_lm("shakespeare-lm")  # refuses a damaged or changed file
recipe = shipped.extra["recipe"]  # the settings of scripts/make_lm_checkpoint.py
tokenizer = SubwordTokenizer.from_dict(shipped.tokenizer)  # chapter 12's BPE, learned on the training passages
print(f"The shipped model: {shipped.model.num_parameters():,} parameters, D = {recipe['d_model']}, "
      f"{recipe['n_layers']} blocks, {recipe['n_heads']} query and {recipe['n_kv_heads']} key/value heads, "
      f"{len(tokenizer):,} tokens. {shipped.step:,} steps of {recipe['batch_size']} texts "
      f"of at most {recipe['max_tokens']} tokens.")
print(f"Its recipe: AdamW, peak learning rate {recipe['lr']}, weight decay {recipe['weight_decay']}, "
      f"{recipe['warmup_steps']} warm-up steps, then a cosine to step {recipe['steps']:,}.")

splits = shakespeare_splits()  # passages; the end of each play held out (validation, then test)


def pack(passages: list[str]) -> list[list[int]]:
    """Passages → texts <bos> … <eos> of at most max_tokens ids, several passages in a row (chapter 13)."""
    return pack_passages(tokenizer.encode_batch(passages), recipe["max_tokens"], tokenizer.bos_id, tokenizer.eos_id)


train, valid = pack(splits["train"]), pack(splits["valid"])
print(f"{len(train):,} training texts of {sum(len(ids) for ids in train):,} tokens; "
      f"{len(valid)} validation texts from the end of each play")

# %% [markdown]
# The paper trains with Adam and equation (3): a linear warm-up, then a decay as
# $1/\sqrt{\text{step}}$ that never ends (§5.3). Chapter 13 used it. Language models since GPT-3
# mostly use:
#
# - **AdamW** (Loshchilov & Hutter 2019): the weight decay is taken out of the adaptive update and
#   applied directly, each step multiplying every weight by $1 - \text{lr} \cdot \lambda$ (written
#   out below). It is applied to the matrices (and the embedding) only, not to biases and the
#   norms' gains, the per-feature scale ($\gamma$ in chapter 05, $g$ in 13). The box after
#   the schedule figure says why. `make_adamw` (in `recipe.py`) also takes $\beta_2 = 0.95$, as
#   GPT-3 and Llama do (the paper: 0.98);
# - a **linear warm-up and a cosine decay** to a tenth of the peak at the last step: a schedule that
#   knows how long the run is, and ends with small steps;
# - **gradient clipping**: gradients whose joint norm exceeds 1.0 are scaled down to norm 1.0, so one
#   unlucky batch cannot throw the weights far. Chapter 08's `fit` does it by default, as GPT-3 and
#   Llama do;
# - **bf16 autocast** on GPUs that have it (chapter 08's `MixedPrecision`): the matrix products in 16
#   bits with float32's range, the weights and the optimizer in float32.
#
# AdamW's step $t$ on a weight $\theta$ with gradient $g$: Adam's running means of $g$ and $g^2$,
# each corrected for starting at zero, and the decay beside them:
#
# $$m \leftarrow \beta_1 m + (1 - \beta_1)\, g, \qquad v \leftarrow \beta_2 v + (1 - \beta_2)\, g^2,$$
#
# $$\theta \leftarrow (1 - \text{lr} \cdot \lambda)\, \theta \;-\; \text{lr} \cdot
# \frac{m / (1 - \beta_1^t)}{\sqrt{v / (1 - \beta_2^t)} + \epsilon}.$$
#
# Adam's own weight decay adds $\lambda \theta$ to $g$ instead, so that decay is divided by
# $\sqrt{v}$ too, and a weight with large gradients is hardly decayed.
#
# The two schedules of the shipped run, at the same peak (the grey band is the warm-up they share):
#
# <details><summary>The figure in words</summary>
#
# Two learning-rate schedules with the same peak are drawn against the
# training step, over the whole run. A grey band covers the warm-up, where both rise along one
# straight line from 0. After it, today's schedule, a thick blue line, stays near the peak, then
# falls along a cosine to a tenth of the peak. The paper's equation (3), a dashed orange line, drops
# fast at first, then ever more slowly. It ends above a quarter of its peak, so the two lines cross.
#
# </details>

# %%
total, warmup, peak_lr = recipe["steps"], recipe["warmup_steps"], recipe["lr"]
steps = range(1, total + 1)
paper_peak = transformer_lr(warmup, recipe["d_model"], warmup)
fig, ax = plt.subplots(figsize=(8, 3.6))
ax.axvspan(0, warmup, color="0.9", zorder=0, label=f"both: the same warm-up ({warmup} steps)")
ax.plot(steps, [peak_lr * warmup_cosine_lr(s, warmup, total) for s in steps], lw=3.5,
        alpha=0.6, label="linear warm-up, cosine decay (today)")
ax.plot(steps, [peak_lr * transformer_lr(s, recipe["d_model"], warmup) / paper_peak for s in steps],
        ls="--", lw=1.6, color="C1", label="equation (3), the paper, scaled to the same peak")
ax.set(xlabel="training step", ylabel="learning rate",
       title="The cosine schedule ends low; the paper's is still above a quarter of its peak")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8)
plt.show()

# %% [markdown]
# > **Common mistake — weight decay on every parameter.** `torch.optim.AdamW(model.parameters(),
# > weight_decay=0.1)` decays the gains of the norms too. Each step multiplies every weight by
# > $1 - \text{lr} \cdot \lambda$, whatever the gradient says. A gain that drifts towards 0 switches
# > its feature off. Below, the final norm's gain of a small model after 1,000 steps with zero
# > gradients, under both optimizers. The check counts the one-dimensional parameters in a group that decays: the
# > gains, and the attention projections' biases, which our block keeps and Llama drops.

# %%
def decayed_vectors(optimizer: torch.optim.Optimizer) -> int:
    """How many numbers of biases and norm gains (one dimension) the optimizer decays."""
    return sum(p.numel() for group in optimizer.param_groups if group["weight_decay"] > 0
               for p in group["params"] if p.dim() < 2)


for label, make in (("AdamW(model.parameters())", lambda m: torch.optim.AdamW(m.parameters(), 3e-3, weight_decay=0.1)),
                    ("make_adamw(model)", lambda m: make_adamw(m, lr=3e-3, weight_decay=0.1))):
    small = DecoderOnlyLM(DecoderOnlyConfig.modern(50, d_model=32, n_heads=4, n_layers=2))
    optimizer = make(small)
    for _ in range(1000):
        for p in small.parameters():
            p.grad = torch.zeros_like(p)  # no signal from the loss: only the decay acts
        optimizer.step()
    print(f"{label:26s} decays {decayed_vectors(optimizer):3d} numbers of gains and biases; "
          f"mean norm gain after 1,000 steps: {small.norm.weight.mean():.2f}")
assert decayed_vectors(make_adamw(small)) == 0

# %% [markdown]
# ## 2. The run
#
# The model is chapter 13's block at the recipe's size, with three details of the shipped
# run. The SwiGLU width $d_{ff}$ is rounded up to a multiple of 32. Dropout is 0.1: the plays hold only a few hundred thousand training tokens, and a model of a
# million weights would learn them by heart. And the embeddings are looked up without the paper's
# √D scale, as Llama's are. The schedule is the whole run's. On a
# CUDA GPU the cell runs every step; elsewhere only the first 100, which are exactly the warm-up: the
# cosine decay never starts (section 5's short runs show it at work). `token_losses` gives each
# held-out next token's cross-entropy. The figure sets
# our run beside the shipped run's validation losses.
#
# <details><summary>The figure in words</summary>
#
# The loss in nats per token is drawn against the training step, over the shipped run's length. A
# thin blue line gives the cross-entropy of every batch of our run, which stops early on a CPU.
# Orange dots mark the shipped run's validation loss every 100 steps, falling steeply at first,
# then slowly. A blue star marks our run's validation loss at its last step. It lies on the shipped
# run's dot for the same step and hides it.
#
# </details>

# %% tags=["nbval-ignore-output"]
device = pick_device()  # CUDA, then Apple's MPS, then the CPU
steps = recipe["steps"] if device.type == "cuda" else 100  # a CPU runs the first 100, in a minute or two
torch.manual_seed(recipe["seed"])
config = DecoderOnlyConfig.modern(
    len(tokenizer), d_model=recipe["d_model"], n_heads=recipe["n_heads"], n_kv_heads=recipe["n_kv_heads"],
    n_layers=recipe["n_layers"], max_len=recipe["max_tokens"], dropout=recipe["dropout"], scale_embedding=False,
    d_ff=swiglu_hidden_size(recipe["d_model"], multiple_of=32),  # ⅔ · 4 · D rounded up to a multiple of 32 (LLaMA 1 uses 256)
)
assert config == shipped.config  # the shipped model's shape
model = DecoderOnlyLM(config).to(device)
optimizer = make_adamw(model, lr=recipe["lr"], weight_decay=recipe["weight_decay"])
scheduler = warmup_cosine_scheduler(optimizer, recipe["warmup_steps"], recipe["steps"])  # the whole run's
batches = batch_stream([([], ids) for ids in train], recipe["batch_size"], tokenizer.pad_id, seed=recipe["seed"])
options = FitOptions(smoothing=0.0, precision=MixedPrecision.for_device(device), progress=False)
history = fit(WithoutSource(model), batches, optimizer, scheduler, steps, options=options)
valid_loss = token_losses(model, valid, tokenizer.pad_id).nanmean().item()
recorded = shipped.extra["valid_losses"]  # {step: validation loss} of the shipped run
print(f"{history.seconds:.0f} s for {steps} steps; validation loss {valid_loss:.2f} nats per token, "
      f"the shipped run's at step {steps}: {recorded[steps]:.2f}")

fig, ax = plt.subplots(figsize=(8, 3.2))
ax.plot(history.steps, history.losses, lw=0.6, label="our run: training loss (one batch)")
ax.plot(list(recorded), list(recorded.values()), "o", color="C1", label="shipped run: validation loss")
ax.plot([steps], [valid_loss], "*", color="C0", markersize=14, label="our run: validation loss")
ax.set(xlabel="training step", ylabel="cross-entropy (nats per token)", xlim=(0, recipe["steps"] + 20),
       title="Our run is the beginning of the shipped run")
ax.legend()
plt.show()

# %% tags=["hide-cell"]
expect_between(f"validation loss after {steps} steps, near the shipped run's at that step (nats)", valid_loss,
               round(recorded[steps] - 0.1, 2), round(recorded[steps] + 0.1, 2))

# %% [markdown]
# The star lands on the shipped run's dot for the same step, within 0.1 nats: our run starts as the
# shipped run started. (On a GPU it lands near the last dot: your run is then the shipped run.)
#
# ### What the loss means
#
# Perplexity is $e$ raised to the loss per token. A model that picked among
# $V$ tokens uniformly would have a perplexity of exactly $V$. So a perplexity $p$ says that the
# model is, on average, as unsure as if it chose among $p$ tokens. Three references on the
# validation texts: guessing uniformly, the token frequencies of the training texts, and the
# shipped model.

# %%
counts = torch.bincount(torch.tensor([i for ids in train for i in ids[1:]]), minlength=len(tokenizer))  # (V,)
frequency = counts.float() / counts.sum()  # (V,): how often each token occurs
targets = torch.tensor([i for ids in valid for i in ids[1:]])  # every next token of the validation texts
references = {
    f"uniform among the {len(tokenizer):,} tokens": torch.tensor(len(tokenizer)).log().item(),
    "the token frequencies alone": -frequency.clamp_min(1e-9)[targets].log().mean().item(),
    f"the shipped model ({shipped.step:,} steps)": shipped.extra["valid_loss"],  # recorded in its file
}
for name, loss in references.items():
    print(f"{name:32s} loss {loss:.2f} nats per token, perplexity {torch.tensor(loss).exp():5.0f}")

# %% [markdown]
# The frequencies alone bring the perplexity from 2,000 to 518. Reading the tokens before brings the
# shipped model to 71: at each step it is about as unsure as a choice among 71 tokens. On a CPU our
# run, after its warm-up, lies in between: below the frequencies, well above the shipped model.

# %% tags=["hide-cell"]
shipped_loss = token_losses(shipped.model, valid, tokenizer.pad_id).nanmean().item()
expect_between("the shipped model's validation loss, recomputed (nats)", shipped_loss,
               shipped.extra["valid_loss"] - 0.01, shipped.extra["valid_loss"] + 0.01)
expect("our short run predicts better than the token frequencies alone", valid_loss < references[
    "the token frequencies alone"], f"{valid_loss:.2f} nats")
if device.type != "cuda":  # the CPU's 100 steps: section 3 says how far below the frequencies they end
    expect_at_most("our 100 steps end less than half a nat below the token frequencies (nats)",
                   references["the token frequencies alone"] - valid_loss, 0.5)

# %% [markdown]
# ## 3. Generation
#
# `generate(model, prompt, max_new_tokens)` continues each row of the prompt. It is
# greedy by default, or samples with a temperature and chapter 09's top-$k$ / top-$p$ filters. A row
# stops at `<eos>`. With `use_cache=True` each step feeds only the newest token and keeps every
# layer's keys and values (the KV cache). With `use_cache=False` it reads
# the whole text again at every step. First our short run, from four prompts, sampled. On a CPU it
# ended with its warm-up, at its peak learning rate, so expect words more than sense:

# %%
prompts = ("HAMLET.", "Ham. To be", "Rom. What", "Enter")


def write(lm: DecoderOnlyLM, prompt: str, n: int = 40, **sampling) -> str:
    """``prompt`` continued by up to ``n`` tokens: greedy, or sampled with chapter 09's settings."""
    ids = torch.tensor([tokenizer.encode(prompt, add_bos=True)], device=next(lm.parameters()).device)  # (1, T)
    return tokenizer.decode(generate(lm, ids, n, **sampling)[0].tolist())


sampler = torch.Generator(device=device).manual_seed(0)
ours = [write(model, prompt, temperature=0.8, top_p=0.9, generator=sampler) for prompt in prompts]

# %% tags=["nbval-ignore-output"]
print(*ours, sep="\n")

# %% [markdown]
# On a CPU, our run strings words, names and stage marks of the plays together, with broken words
# between them. Judge a run by its loss; samples only illustrate it. Chapter 13's model ended more than a nat per token
# below the token frequencies; ours ends less than half a nat below them. Ours ran a third of
# chapter 13's steps, with twice its batch.
#
# The shipped model is the whole run, with the lowest loss of the three references. It differs
# from chapter 13's in more than the recipe: twice the blocks and the batch, more than three times
# the steps, and dropout. Its file recorded greedy continuations of five prompts:

# %%
print(*shipped.extra["samples"], sep="\n")

# %% [markdown]
# Sampled here, from our run's prompts (60 new tokens each; ours wrote 40):

# %%
shipped_model = shipped.model.to(device)
sampler = torch.Generator(device=device).manual_seed(0)
theirs = [write(shipped_model, prompt, 60, temperature=0.8, top_p=0.9, generator=sampler) for prompt in prompts]

# %% tags=["nbval-ignore-output"]
print(*theirs, sep="\n")

# %% [markdown]
# The greedy lines are short sentences that parse: "Ham. To be the king of it?", "Rom. What, my
# lord?". Greedy decoding also repeats itself ("I am a man"). Sampled, the model shows its limits.
# Its sense rarely lasts beyond a clause. It may string speaker names together, from plays other
# than the prompt's, and it coins words the plays lack (its tokens are pieces of words). Still, at
# least 85 % of the words it samples are words of the plays. It learned their form and their
# vocabulary from the 217,133 tokens of its training texts.

# %% tags=["hide-cell"]
known = {w.lower() for name in PLAYS for w in re.findall(r"[A-Za-z']+", play_text(name))}  # every word of the plays


def share_of_known(texts: list[str]) -> float:
    words = [w.lower() for text in texts for w in re.findall(r"[A-Za-z']+", text)]
    return 100 * sum(w in known for w in words) / len(words)


expect_at_least("words of the plays among those the shipped model samples", share_of_known(theirs), 85, "%")

# %% [markdown]
# The cache must not change a single token, greedy or sampled (the same random draws). And it should
# be faster, since each step then reads one position instead of the whole text.

# %%
def timed(use_cache: bool) -> tuple[torch.Tensor, float]:
    """16 texts of up to 100 tokens, sampled; on a CPU on one thread, which other programs disturb least."""
    sampler = torch.Generator(device=device).manual_seed(1)
    with one_thread():
        start = time.perf_counter()
        out = generate(shipped_model, torch.full((16, 1), tokenizer.bos_id, device=device), 100,
                       use_cache=use_cache, temperature=0.8, top_p=0.9, generator=sampler)  # fmt: skip
        return out, time.perf_counter() - start


(with_cache, fast), (without_cache, slow) = timed(True), timed(False)
prompt = torch.tensor([tokenizer.encode("Ham. To be", add_bos=True)], device=device)
identical = torch.equal(with_cache, without_cache) and torch.equal(
    generate(shipped_model, prompt, 40, use_cache=False), generate(shipped_model, prompt, 40)
)
print("greedy and sampled texts identical with and without the cache:", identical)
assert identical

# %% tags=["nbval-ignore-output"]
print(f"16 texts of up to 100 tokens: {fast:.2f} s with the cache, {slow:.2f} s without ({slow / fast:.1f}× the time)")

# %% tags=["hide-cell"]
expect("the cache saves time", slow > fast, f"{slow:.2f} s without it, {fast:.2f} s with it")

# %% [markdown]
# The saving grows with the length of the text: without a cache, step $t$ repeats the work on all
# $t$ positions before it.
#
# ## 4. How small is our run?
#
# The shipped model learned from a few hundred thousand tokens; published
# models read trillions. One number gives the distance: the compute of a training run. Training a
# Transformer costs about 6 floating-point operations per parameter and per token: 2 forward (a
# multiply and an add per weight), and about twice that backward (the gradients of the activations
# and of the weights). So a training run costs
#
# $$C \approx 6 \times \text{parameters} \times \text{training tokens}.$$
#
# The scaling-law papers write it $C \approx 6ND$. This book already uses $N$ for the number of
# blocks and $D$ for $d_{model}$, so it writes parameters × tokens. Attention adds a term that grows with the text length, small at these models'
# lengths. The table puts the shipped run beside three published ones, with the token counts their
# papers report. Training tokens count the tokens *processed*: the published models read (nearly)
# every token once, the plays many times over.

# %%
distinct = sum(len(ids) - 1 for ids in train)  # every next token of the training texts, once
tokens_seen = distinct / len(train) * recipe["batch_size"] * shipped.step  # processed: batches × steps
runs = [
    ("the shipped model", shipped.model.num_parameters(), tokens_seen),
    ("Llama 2 7B (2023)", 7e9, 2.0e12),
    ("Chinchilla 70B (2022)", 70e9, 1.4e12),
    ("GPT-3 175B (2020)", 175e9, 300e9),
]
print(f"{'model':26s}{'parameters':>12s}{'training tokens':>17s}{'per parameter':>15s}{'C (FLOPs)':>12s}")
for name, n, d in runs:
    print(f"{name:26s}{n:12.3g}{d:17.3g}{d / n:15.1f}{6 * n * d:12.2e}")
print(f"the shipped model: {distinct / 1e6:.2f} M distinct tokens, read {tokens_seen / distinct:.1f} times "
      f"({distinct / shipped.model.num_parameters():.2f} distinct tokens per parameter)")
our_compute, gpt3_compute = (6 * n * d for _, n, d in (runs[0], runs[-1]))
print(f"GPT-3's training took {gpt3_compute / our_compute:.0e} times the operations of the shipped model's")

# %% [markdown]
# The last line measures the distance from our scale to that of the models whose recipe we copied.
# The LLaMA papers chose RMSNorm, RoPE and SwiGLU, and GPT-3 the cosine, at that scale. Section 5
# asks whether each choice pays at ours.
#
# <details><summary>What scaling laws say</summary>
#
# Kaplan et al. (2020) found that a language model's loss falls as a power law in its parameters,
# its tokens and its compute, while neither of the other two limits it. Hoffmann et al. (2022,
# "Chinchilla") redid the analysis with schedules fitted to each run's length. For a fixed compute
# budget, parameters and tokens should grow together: about 20 tokens per parameter, each read once
# (a token read again is worth less: Muennighoff et al. 2023). Models meant for heavy use now read
# far more (Llama 2 7B: about 286 tokens per parameter), since a smaller model is cheaper to run.
#
# </details>

# %% [markdown]
# ## 5. Which of the changes pay at our scale?
#
# The shipped model changed many things at once, so its lower loss credits none of them alone.
# We train small models (D = 64, 2 blocks, 300 steps): today's block, and four variants that each
# undo one change.
#
# - LayerNorm instead of RMSNorm;
# - sinusoids added to the embeddings instead of RoPE;
# - the ReLU network with $d_{ff} = 4D$ instead of SwiGLU, with nearly the same number of
#   parameters;
# - the paper's schedule (warm-up, then $1/\sqrt{\text{step}}$, same peak) instead of the cosine.
#
# Grouped key/value heads are left out: they save cache memory, which no loss shows. For a CPU,
# these runs read chapter 12's German sentences: each sentence a text, each word or mark a token (so
# the losses are per word).
# The plays might rank the changes otherwise. All runs use pre-LN and AdamW. Each is measured on
# held-out sentences (the validation loss), and, as in chapter 11, past the training length: on
# four held-out sentences in a row, scored past the longest training text. A sentence's first word is not scored there: nothing in
# the sentence before predicts it.

# %%
data = LMData.german()
print(f"{len(data.vocab)} words and marks; {len(data.train):,} training sentences, the longest "
      f"{data.train_length} tokens; {len(data.valid)} held-out sentences")
setting = LMSetting()  # every run's model and training
print(f"Every run: D = {setting.d_model}, {setting.n_heads} heads, {setting.n_layers} blocks; {setting.steps} steps "
      f"of {setting.batch_size} sentences; AdamW, peak learning rate {setting.lr}, weight decay "
      f"{setting.weight_decay}, {setting.warmup_steps} warm-up steps; seeds {setting.seeds}")

# %% [markdown]
# `run_lm_experiment` runs the comparison and prints its table. The comparison is paired, as the box
# on testing a claim (the book's front page) describes: each variant is trained three times, each
# time beside a run of today's block. The two runs of a pair share their
# batches and every initial tensor they have in common, so their difference shows the change, not the
# luck of the draw. The table and the figure name a pair by the seed its two runs share. All
# variants train at the peak learning rate chosen for today's block: the comparison measures early
# training at that rate.
#
# <details><summary>The figure in words</summary>
#
# The left of three panels draws the training loss of the five models over the 300 steps, each in
# its own colour and line style. A line gives the mean of the three runs, and a band reaches from
# the lowest run to the highest. The other two panels have one row per variant, with one mark per
# pair of runs: a circle, a square or a triangle. Each mark is the variant's loss minus that of
# today's block in its pair: on held-out sentences in the middle, past the training length on the
# right. A dashed line marks 0, a mark right of it means a higher loss for the variant, and a short
# black tick marks the mean.
#
# </details>

# %% tags=["nbval-ignore-output"]
ablation = run_lm_experiment({
    "today (RMSNorm, RoPE, SwiGLU, cosine)": LMVariant(),
    "LayerNorm instead of RMSNorm": LMVariant(overrides={"norm": "layernorm"}),
    "sinusoids instead of RoPE": LMVariant(overrides={"positional": "sinusoidal"}),
    "ReLU, d_ff = 4·D, instead of SwiGLU": LMVariant(overrides={"feed_forward": "relu", "d_ff": 4 * 64}),  # D = 64
    "the paper's schedule": LMVariant(schedule="paper"),
}, data, setting)

# %% [markdown]
# The table gives today's block once, then each variant's three paired differences. The figure draws
# them: one dot per pair, right of the dashed line where the variant ended with the higher loss.
# Two words grade a difference. It is **consistent** when the three pairs agree in sign. With no
# real difference, three pairs still agree by chance one time in four, so that alone shows little.
# It is **beyond the spread** when every run of one model beats every run of the other (chapter 11):
# the strongest verdict three runs can give. It says nothing of the size. Today's three runs end
# close together (the range in the table's first row), so even a gap of a hundredth of a nat can
# clear that bar. `paired_verdict` states your run's verdicts:

# %% tags=["nbval-ignore-output"]
today, names = "today (RMSNorm, RoPE, SwiGLU, cosine)", list(ablation.variants)[1:]
display(Markdown("\n".join(f"- {paired_verdict(ablation, VALID_LOSS, name, today)}" for name in names)
                 + f"\n- {paired_verdict(ablation, LONG_LOSS, 'sinusoids instead of RoPE', today)}"))

# %% [markdown]
# Position by position on the long texts, for the two ways of giving positions (the mean of the three
# runs, and a band from the lowest to the highest):
#
# <details><summary>The figure in words</summary>
#
# The loss in nats per token is drawn against the position in a text of four
# sentences. A blue line is today's block with RoPE, a green line the variant with sinusoids, each
# with a band from its lowest run to its highest. A grey region on the left marks the positions seen
# in training. To its right the texts are longer than any training text, and fewer texts reach each
# position. Past the grey region, the green line lies higher on average.
#
# </details>

# %%
fig, ax = plt.subplots(figsize=(9, 3.4))
for color, name in (("C0", today), ("C2", "sinusoids instead of RoPE")):
    curves = torch.stack([loss_by_position(run.model, data) for run in ablation.variants[name].runs])  # (seeds, L-1)
    positions = range(curves.shape[1])
    ax.plot(positions, curves.mean(0), color=color, label=name)
    ax.fill_between(positions, curves.min(0).values, curves.max(0).values, color=color, alpha=0.2, lw=0)
ax.axvspan(0, data.train_length - 1, color="0.9", zorder=0, label="positions seen in training")
ax.set(xlabel="position in a text of four sentences", ylabel="loss (nats per token)",
       title="Loss by position on texts of four sentences (band: lowest to highest run)")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# The validation texts are no longer than the training texts, and on them the sinusoids already end
# higher (the verdicts above). So the gap on the long texts does not isolate extrapolation: it is
# that gap and possibly more, which three runs cannot separate.
#
# **What the experiment shows.** Your verdicts describe your run. The book claims what the folded
# cell below tests each time the notebook runs:
#
# - **The schedule pays.** Every run with the paper's schedule ends with a higher validation loss
#   than every run with warm-up and cosine. (The cosine keeps a high rate longer and ends with small
#   steps; this experiment does not separate the two.)
# - **Rotary positions pay.** Every run with sinusoids ends higher than every run with RoPE, and
#   their mean loss past the training lengths is higher too.
# - **SwiGLU pays on average.** The ReLU network's mean validation loss is above SwiGLU's, at equal
#   parameters. Your verdict says whether their runs overlapped.
# - **The norms end close, and LayerNorm may win.** The two end within 0.05 nats of each other. If
#   your verdict puts LayerNorm beyond the spread, the 2017 choice won this race, by a gap that three
#   runs of one small task cannot show to be general. RMSNorm is chosen for its lower cost.
#
# These are small models on easy text; chapter 13's papers chose for models many orders of
# magnitude larger (section 4's compute table).

# %% tags=["hide-cell"]
def values(name: str, metric: str = VALID_LOSS) -> list[float]:
    return ablation.variants[name].values(metric)


expect_above("the paper's schedule: higher validation loss than the cosine, beyond the spread",
             values("the paper's schedule"), values(today))
expect_above(
    "sinusoids: higher validation loss than RoPE, beyond the spread", values("sinusoids instead of RoPE"), values(today)
)
expect("sinusoids: higher mean loss than RoPE past the training lengths",
       ablation.variants["sinusoids instead of RoPE"].mean(LONG_LOSS) > ablation.variants[today].mean(LONG_LOSS),
       f"{ablation.variants['sinusoids instead of RoPE'].mean(LONG_LOSS):.3f} vs "
       f"{ablation.variants[today].mean(LONG_LOSS):.3f}")
expect("ReLU: higher mean validation loss than SwiGLU at equal parameters",
       ablation.variants["ReLU, d_ff = 4·D, instead of SwiGLU"].mean(VALID_LOSS) > ablation.variants[today].mean(VALID_LOSS),
       f"{ablation.variants['ReLU, d_ff = 4·D, instead of SwiGLU'].mean(VALID_LOSS):.3f} vs "
       f"{ablation.variants[today].mean(VALID_LOSS):.3f}")
gap = ablation.variants["LayerNorm instead of RMSNorm"].mean(VALID_LOSS) - ablation.variants[today].mean(VALID_LOSS)
expect("LayerNorm and RMSNorm: mean validation losses within 0.05 nats of each other", abs(gap) < 0.05,
       f"LayerNorm − RMSNorm = {gap:+.3f}")

# %% [markdown]
# ## Summary
#
# - Today's recipe: AdamW with weight decay on the matrices only, warm-up and cosine decay, gradient
#   clipping, bf16 on GPUs.
# - On six plays by Shakespeare, the CPU run is the recipe's warm-up: its loss lands on the shipped
#   run's at that step. The shipped model, trained ten times as long, writes short lines of
#   English in the form of a play. Perplexity is $e$ to the loss per token.
# - `generate` samples with a temperature and top-p. The KV cache gives the same tokens as a full
#   pass, and saves time.
# - Training costs about 6 operations per parameter and per token. Chinchilla's compute-optimal
#   ratio is about 20 tokens per parameter.
# - Runs that do not overlap say more than pairs that agree in sign. At our scale every run of the new choice beats every run of the old for
#   the cosine schedule and RoPE, and SwiGLU's mean loss is below ReLU's. LayerNorm and RMSNorm end
#   within 0.05 nats of each other, and LayerNorm may win.

# %% [markdown]
# **Exercises:**
# [exercises/ex14_training_a_language_model.ipynb](../exercises/ex14_training_a_language_model.ipynb)
# asks you to write `warmup_cosine_lr` (ex14_1), `make_adamw` (ex14_2) and `adamw_step` (ex14_3).
# Stuck on one? `python -m transformer_course restore ex14_1` puts its worked answer in your student
# edition. The chapter also runs your answers to earlier exercises, chapter 13's blocks among them:
# the exercise notebook lists them.
#
# ## Check yourself
#
# 1. Why does `make_adamw` decay the matrices but not the gains of the norms?
#    <details><summary>Answer</summary>
#
#    Decay shrinks every weight it acts on at each step, whatever the gradient says. A gain scales
#    one feature: pulled towards 0, it switches that feature off. So the gains and the biases are
#    left alone.
#    </details>
# 2. A variant ends above today's block in all three pairs of runs. What does that show, and what
#    would show more?
#    <details><summary>Answer</summary>
#
#    It is consistent, and that alone shows little: with no real difference, three pairs still agree
#    in sign by chance one time in four. Beyond the spread says more: every run of the
#    variant above every run of today's block. Neither says the gap is large enough to matter.
#    </details>
# 3. The shipped model's validation loss is 4.26 nats per token. What is its perplexity, and what
#    does the number say?
#    <details><summary>Answer</summary>
#
#    $e^{4.26} \approx 71$. At each step the model is, on average, as unsure as if it chose uniformly
#    among 71 tokens, against 2,000 for a uniform guess.
#    </details>
# 4. About how many floating-point operations does training a 1-billion-parameter model on 20
#    billion tokens take, and why 20 billion?
#    <details><summary>Answer</summary>
#
#    $6 \cdot 10^9 \cdot 2 \cdot 10^{10} = 1.2 \cdot 10^{20}$. Twenty tokens per parameter is
#    Chinchilla's compute-optimal ratio (Hoffmann et al. 2022).
#    </details>
#
# ## Further reading
#
# - The paper: §5.3 (Adam and equation (3)); §3.1, §3.3 and §3.5 (the choices that section 5 tests).
# - Loshchilov and Hutter (2019), *Decoupled Weight Decay Regularization* (AdamW).
# - Brown et al. (2020), *Language Models are Few-Shot Learners* (GPT-3; warm-up and cosine decay).
# - Touvron et al. (2023), *Llama 2: Open Foundation and Fine-Tuned Chat Models* (the recipe, and
#   the token count of section 4's compute table).
# - Kaplan et al. (2020), *Scaling Laws for Neural Language Models*; Hoffmann et al. (2022),
#   *Training Compute-Optimal Large Language Models* (Chinchilla).
# - Muennighoff et al. (2023), *Scaling Data-Constrained Language Models* (tokens read more than once).
# - From a language model to an assistant (trained further on good answers, then on preferred
#   ones): Ouyang et al. (2022), *Training language models to follow instructions with human
#   feedback* (RLHF); Rafailov et al. (2023), *Direct Preference Optimization* (DPO).

# %% [markdown]
# **Next:** [Chapter 15 — Converting checkpoints: OPUS-MT, GPT-2 and Llama in the course's
# model](15_real_weights.ipynb): the published architectures, built with random weights of the real
# shapes, converted into the course's own model and checked against `transformers`. Chapter 16 loads
# the real weights only in an aside, to run at home.
