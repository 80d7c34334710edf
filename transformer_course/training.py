"""Chapter 07 — training: the loss, the learning-rate schedule, one step, the loop, evaluation.

The pieces follow the paper's §5:

* **label smoothing** (§5.4, ε = 0.1): the target distribution puts 1 − ε on the right token
  and spreads ε over the vocabulary, so the model is never pushed to infinite confidence;
* **Adam** with β₁ = 0.9, β₂ = 0.98, ε = 1e-9 (§5.3);
* the **learning rate** (§5.3, equation 3): a linear warm-up for ``warmup_steps`` steps, then a
  decay with the inverse square root of the step number, scaled by d_model^-0.5;
* gradient clipping (not in the paper; it makes short, aggressive runs safe);
* mixed precision on a GPU (bfloat16, or float16 with a gradient scaler on older GPUs).

Evaluation decodes greedily (:func:`greedy_translate`; chapter 08 builds the faster and richer
decoders) and reports exact match, BLEU and chrF (``sacrebleu``) in percent.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.optim.lr_scheduler import LambdaLR

from .config import TransformerConfig
from .data import Batch, Pair, Task, batch_stream, encode_pairs, pad_sequences
from .masks import padding_mask
from .model import Transformer

# -- the learning-rate schedule (§5.3) --------------------------------------------------------


def transformer_lr(step: int, d_model: int, warmup_steps: int, scale: float = 1.0) -> float:
    """Equation (3) of the paper: ``scale · d_model^-0.5 · min(step^-0.5, step · warmup_steps^-1.5)``.

    It rises linearly for ``warmup_steps`` steps, peaks at ``step == warmup_steps`` with
    ``scale · (d_model · warmup_steps)^-0.5``, then falls as ``1/√step``. Steps count from 1.
    """
    if step < 1:
        raise ValueError(f"step must be >= 1 (the paper counts steps from 1), got {step}")
    if d_model < 1 or warmup_steps < 1:
        raise ValueError(f"d_model and warmup_steps must be >= 1, got {d_model} and {warmup_steps}")
    ### BEGIN SOLUTION
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)
    ### END SOLUTION


def transformer_scheduler(
    optimizer: torch.optim.Optimizer, d_model: int, warmup_steps: int, scale: float = 1.0
) -> LambdaLR:
    """The schedule as a PyTorch scheduler: call ``scheduler.step()`` after each ``optimizer.step()``.

    ``LambdaLR`` multiplies each group's initial ``lr`` by the function's value, so make the
    optimizer with ``lr=1.0`` (see :func:`make_optimizer`). It counts from 0 and the paper from 1:
    the first update uses ``transformer_lr(1, …)``.
    """
    return LambdaLR(optimizer, lambda count: transformer_lr(count + 1, d_model, warmup_steps, scale))


def make_optimizer(model: nn.Module) -> torch.optim.Adam:
    """Adam with the paper's β₁ = 0.9, β₂ = 0.98, ε = 1e-9 and ``lr=1.0`` (the scheduler sets the rate)."""
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)


# -- the loss (§5.4) ----------------------------------------------------------------------------


def smoothed_targets(target: Tensor, vocab_size: int, smoothing: float) -> Tensor:
    """The distribution label smoothing trains towards: ``(1 − ε)·one_hot + ε/V`` everywhere.

    Shape:
        target: (...,) ids → (..., V) probabilities (each row sums to 1)
    """
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"smoothing must be in [0, 1], got {smoothing}")
    one_hot = F.one_hot(target, vocab_size).float()  # (..., V)
    return (1.0 - smoothing) * one_hot + smoothing / vocab_size


def label_smoothed_cross_entropy(logits: Tensor, target: Tensor, smoothing: float = 0.1, pad_id: int = 0) -> Tensor:
    """Cross-entropy against the label-smoothed targets, averaged over the non-padding tokens.

    The same number as ``F.cross_entropy(logits.reshape(-1, V), target.reshape(-1),
    label_smoothing=smoothing, ignore_index=pad_id)``: the smoothed target is
    ``(1 − ε)·one_hot + ε/V`` (PyTorch's choice; the ε/V also lands on ``<pad>`` and on the
    right token), and a padding position contributes nothing, to the sum or to the count.

    Shape:
        logits: (B, T, V) float, target: (B, T) ids → scalar
    """
    if logits.dim() != 3 or target.shape != logits.shape[:2]:
        raise ValueError(
            f"logits must be (B, T, V) and target (B, T), got logits {tuple(logits.shape)} and target {tuple(target.shape)}"
        )
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"smoothing must be in [0, 1], got {smoothing}")
    ### BEGIN SOLUTION
    log_probs = logits.float().log_softmax(dim=-1)  # (B, T, V)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (B, T): −log p(right token)
    uniform = -log_probs.mean(dim=-1)  # (B, T): cross-entropy with the uniform distribution
    per_token = (1.0 - smoothing) * nll + smoothing * uniform  # (B, T)
    keep = target != pad_id  # (B, T)
    return (per_token * keep).sum() / keep.sum().clamp(min=1)
    ### END SOLUTION


# -- one training step ---------------------------------------------------------------------------


def train_step(
    model: nn.Module,
    batch: Batch,
    optimizer: torch.optim.Optimizer,
    scheduler: LambdaLR | None = None,
    smoothing: float = 0.1,
    max_grad_norm: float | None = 1.0,
) -> float:
    """One update: forward with teacher forcing, loss, backward, clip, step. Returns the loss.

    ``model(batch.src, batch.tgt_in)`` gives logits (B, T, V) that are compared with
    ``batch.tgt_out`` (the targets shifted by one, see :func:`~transformer_course.data.teacher_forcing`).
    Gradients of the previous step are cleared first; the gradient norm is clipped to
    ``max_grad_norm`` (None: no clipping) before the optimizer step; then the scheduler steps.
    """
    ### BEGIN SOLUTION
    model.train()
    logits = model(batch.src, batch.tgt_in)  # (B, T, V)
    loss = label_smoothed_cross_entropy(logits, batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if max_grad_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item()
    ### END SOLUTION


@dataclass
class MixedPrecision:
    """How a GPU step runs in lower precision: ``dtype`` for autocast, and a gradient scaler
    (only needed for float16, whose small range lets tiny gradients underflow to zero)."""

    dtype: torch.dtype
    scaler: torch.amp.GradScaler

    @classmethod
    def for_device(cls, device: torch.device | str) -> MixedPrecision | None:
        """bfloat16 on GPUs that have it (A100, H100, L4…), float16 + scaler on older ones (T4);
        None (plain float32) on the CPU and on MPS."""
        device = torch.device(device)
        if device.type != "cuda":
            return None
        if torch.cuda.is_bf16_supported(including_emulation=False):
            return cls(torch.bfloat16, torch.amp.GradScaler("cuda", enabled=False))
        return cls(torch.float16, torch.amp.GradScaler("cuda"))


def train_step_mixed_precision(
    model: nn.Module,
    batch: Batch,
    optimizer: torch.optim.Optimizer,
    precision: MixedPrecision,
    scheduler: LambdaLR | None = None,
    smoothing: float = 0.1,
    max_grad_norm: float | None = 1.0,
) -> float:
    """:func:`train_step` with autocast and a gradient scaler; the differences are marked ``# AMP``.

    Part of exercise ex07_4 (it would show the answer of ``train_step`` otherwise); used on CUDA only.
    """
    ### BEGIN SOLUTION
    model.train()
    with torch.autocast(batch.src.device.type, dtype=precision.dtype):  # AMP: matmuls in low precision
        logits = model(batch.src, batch.tgt_in)  # precision.dtype, (B, T, V)
    loss = label_smoothed_cross_entropy(logits.float(), batch.tgt_out, smoothing, batch.pad_id)
    optimizer.zero_grad()
    precision.scaler.scale(loss).backward()  # AMP: scale the loss up so float16 gradients do not vanish
    if max_grad_norm is not None:
        precision.scaler.unscale_(optimizer)  # AMP: clip the true gradients, not the scaled ones
        nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    precision.scaler.step(optimizer)  # AMP: skips the step if a gradient overflowed
    precision.scaler.update()
    if scheduler is not None:
        scheduler.step()
    return loss.item()
    ### END SOLUTION


# -- greedy decoding and evaluation ---------------------------------------------------------


@torch.no_grad()
def greedy_translate(model: Transformer, src: Tensor, max_len: int) -> Tensor:
    """The simplest decoder, enough to measure a model while it trains (chapter 08 has more).

    Encode once; start every row with ``<bos>``; append the most probable next token (never
    ``<pad>`` or ``<bos>``) until every row has produced ``<eos>`` or ``max_len`` tokens.

    Shape:
        src: (B, S) → (B, T ≤ max_len) ids without ``<bos>``, ``<pad>`` after each ``<eos>``
    """
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    config = model.config
    was_training = model.training
    model.eval()
    memory_mask = padding_mask(src, config.pad_id)  # (B, 1, 1, S)
    memory = model.encode(src, memory_mask)  # (B, S, D)
    tokens = src.new_full((src.shape[0], 1), config.bos_id)  # (B, 1)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)  # (B,)
    for _ in range(min(max_len, config.max_len - 1)):
        logits = model.decode(tokens, memory, memory_mask)[:, -1].float()  # (B, V)
        logits[:, [config.pad_id, config.bos_id]] = float("-inf")
        next_token = logits.argmax(-1).masked_fill(done, config.pad_id)  # (B,)
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (B, t+1)
        done |= next_token == config.eos_id
        if done.all():
            break
    model.train(was_training)
    return tokens[:, 1:]


def translate(
    model: Transformer, sources: Sequence[Sequence[str]], task: Task, batch_size: int = 500, max_len: int | None = None
) -> list[list[str]]:
    """Translate tokenized sentences with :func:`greedy_translate`; returns target tokens."""
    device = next(model.parameters()).device
    max_len = max_len or model.config.max_len - 1
    out: list[list[str]] = []
    for start in range(0, len(sources), batch_size):
        chunk = [task.src_vocab.encode(s) for s in sources[start : start + batch_size]]
        src = pad_sequences(chunk, task.src_vocab.pad_id).to(device)  # (B, S)
        for row in greedy_translate(model, src, max_len).tolist():
            out.append(task.tgt_vocab.decode(row))
    return out


def evaluate(model: Transformer, pairs: Sequence[Pair], task: Task, batch_size: int = 500) -> dict[str, float]:
    """Greedy-translate ``pairs`` and score them, all in percent.

    * ``exact_match``: share of sentences whose text is exactly right (what matters for numbers);
    * ``bleu``: corpus BLEU over target *tokens* (a German number is one word, so word-level
      BLEU would have no 2-, 3- or 4-grams: we count the pieces);
    * ``chrf``: character n-gram F-score of the written text (``task.detokenize``).
    """
    import sacrebleu

    if not pairs:
        raise ValueError("pairs must not be empty")
    longest = max(len(t) for _, t in pairs) + 2
    hypotheses = translate(model, [s for s, _ in pairs], task, batch_size, min(2 * longest, model.config.max_len - 1))
    references = [t for _, t in pairs]
    hyp_text = [task.detokenize(h) for h in hypotheses]
    ref_text = [task.detokenize(r) for r in references]
    exact = sum(h == r for h, r in zip(hyp_text, ref_text, strict=True)) / len(pairs)
    bleu = sacrebleu.corpus_bleu([" ".join(h) for h in hypotheses], [[" ".join(r) for r in references]])
    chrf = sacrebleu.corpus_chrf(hyp_text, [ref_text])
    return {"exact_match": round(100 * exact, 2), "bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2)}


# -- profiles, the model and the loop -----------------------------------------------------------


@dataclass
class TrainingProfile:
    """Model size and training settings for one kind of machine."""

    d_model: int = 128
    n_heads: int = 4
    d_ff: int = 512
    n_layers: int = 2  # encoder layers = decoder layers
    dropout: float = 0.1
    batch_size: int = 128  # sentences per batch
    warmup_steps: int = 300
    lr_scale: float = 0.5  # multiplies the paper's schedule (1.0 overshoots at this small size)
    steps: int = 800
    smoothing: float = 0.1
    max_grad_norm: float = 1.0
    eval_every: int = 200  # validation exact match every this many steps (0: never)
    seed: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


CPU_PROFILE = TrainingProfile()
GPU_PROFILE = TrainingProfile(
    d_model=256, n_heads=8, d_ff=1024, n_layers=3, batch_size=256, warmup_steps=400, steps=3000
)


# the copy / reverse tasks are for debugging: a small model that learns them in seconds anywhere
TOY_PROFILE = TrainingProfile(
    d_model=64, n_heads=4, d_ff=128, n_layers=1, dropout=0.0, batch_size=64, warmup_steps=100, lr_scale=0.5,
    steps=1000, eval_every=0,
)  # fmt: skip


def pick_profile(device: torch.device | str, task: str = "numbers-en-de") -> TrainingProfile:
    """The toy profile for the copy / reverse tasks; for real tasks the larger GPU profile on
    CUDA and the CPU profile elsewhere."""
    if task in ("copy", "reverse"):
        return TOY_PROFILE
    return GPU_PROFILE if torch.device(device).type == "cuda" else CPU_PROFILE


def build_model(task: Task, profile: TrainingProfile) -> Transformer:
    """A :class:`Transformer` sized by ``profile`` for ``task``'s vocabularies (seeded)."""
    longest = max(max(len(s), len(t)) for s, t in task.train)
    config = TransformerConfig(
        src_vocab_size=len(task.src_vocab),
        tgt_vocab_size=len(task.tgt_vocab),
        d_model=profile.d_model,
        n_heads=profile.n_heads,
        d_ff=profile.d_ff,
        n_encoder_layers=profile.n_layers,
        n_decoder_layers=profile.n_layers,
        dropout=profile.dropout,
        max_len=max(64, 2 * longest + 2),
        pad_id=task.tgt_vocab.pad_id,
        bos_id=task.tgt_vocab.bos_id,
        eos_id=task.tgt_vocab.eos_id,
    )
    torch.manual_seed(profile.seed)
    return Transformer(config)


@dataclass
class History:
    """What happened during training: a row per step, and the evaluations made along the way."""

    steps: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)  # {"step", "seconds", "exact_match", ...}
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> History:
        return cls(**data)


def fit(
    model: nn.Module,
    batches: Iterator[Batch],
    optimizer: torch.optim.Optimizer,
    scheduler: LambdaLR | None,
    steps: int,
    *,
    start_step: int = 0,
    max_seconds: float | None = None,
    smoothing: float = 0.1,
    max_grad_norm: float | None = 1.0,
    precision: MixedPrecision | None = None,
    evaluate_fn: Callable[[nn.Module], dict] | None = None,
    eval_every: int = 0,
    history: History | None = None,
    progress: bool = True,
    on_step: Callable[[int], None] | None = None,
) -> History:
    """The training loop: take a batch, make one step, record, sometimes evaluate.

    Runs from ``start_step`` until ``steps`` steps are done or ``max_seconds`` have passed
    (training time only; evaluations are not counted), whichever comes first.
    ``evaluate_fn(model)`` runs every ``eval_every`` steps and at the end; its dict is stored in
    ``history.evals`` with the step and the training seconds so far.
    """
    with warnings.catch_warnings():  # without ipywidgets tqdm.auto warns, then falls back to a text bar: fine
        warnings.simplefilter("ignore")
        from tqdm.auto import tqdm

    if steps < start_step:
        raise ValueError(f"steps ({steps}) must be >= start_step ({start_step})")
    history = history if history is not None else History()
    device = next(model.parameters()).device
    seconds = history.seconds
    total = None if max_seconds is not None and steps >= 10**8 else steps  # "until the time is up": no total
    bar = tqdm(total=total, initial=start_step, disable=not progress, desc="training", unit="step")
    step = start_step
    while step < steps and (max_seconds is None or seconds < max_seconds):
        tick = time.perf_counter()
        batch = next(batches).to(device)
        lr = optimizer.param_groups[0]["lr"]
        if precision is None:
            loss = train_step(model, batch, optimizer, scheduler, smoothing, max_grad_norm)
        else:
            loss = train_step_mixed_precision(model, batch, optimizer, precision, scheduler, smoothing, max_grad_norm)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds += time.perf_counter() - tick
        step += 1
        if not math.isfinite(loss):
            raise FloatingPointError(f"the loss became {loss} at step {step}: lower the learning rate")
        history.steps.append(step)
        history.losses.append(loss)
        history.lrs.append(lr)
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.3f}", refresh=False)
        if on_step is not None:
            on_step(step)
        if evaluate_fn is not None and eval_every and step % eval_every == 0 and step < steps:
            _record(history, step, seconds, evaluate_fn(model), bar)
    bar.close()
    history.seconds = seconds
    if evaluate_fn is not None and (not history.evals or history.evals[-1]["step"] != step):
        _record(history, step, seconds, evaluate_fn(model), None)
    return history


def _record(history: History, step: int, seconds: float, metrics: dict, bar) -> None:
    history.evals.append({"step": step, "seconds": round(seconds, 1), **metrics})
    if bar is not None:
        bar.write(f"step {step:5d}: " + ", ".join(f"{k} {v}" for k, v in metrics.items()))


def plot_history(history: History, title: str = "Training"):
    """Loss per step (and its running mean) next to the validation exact match; returns the figure."""
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 3.6))
    ax_loss.plot(history.steps, history.losses, color="tab:blue", alpha=0.3, lw=0.8, label="batch loss")
    window = max(1, len(history.losses) // 50)
    smooth = (
        torch.tensor(history.losses).unfold(0, window, 1).mean(-1).tolist() if len(history.losses) >= window else []
    )
    ax_loss.plot(history.steps[window - 1 :], smooth, color="tab:blue", label=f"mean of {window} steps")
    ax_loss.set(xlabel="step", ylabel="label-smoothed cross-entropy", yscale="log", title=f"{title}: loss")
    ax_loss.legend()
    if history.evals:
        ax_acc.plot(
            [e["step"] for e in history.evals], [e["exact_match"] for e in history.evals], "o-", color="tab:green"
        )
        ax_acc.set_ylim(0, 100)
    ax_acc.set(xlabel="step", ylabel="exact match on validation (%)", title=f"{title}: held-out accuracy")
    ax_acc.grid(alpha=0.3)
    fig.tight_layout()
    return fig


# -- a whole run: what the command line and scripts/make_checkpoint.py call -------------------------


@dataclass
class RunResult:
    model: Transformer
    history: History
    metrics: dict  # exact_match, bleu, chrf on the test split, seconds, steps
    task: Task


def run_training(
    task: Task,
    profile: TrainingProfile,
    device: torch.device | str = "cpu",
    *,
    steps: int | None = None,
    max_seconds: float | None = None,
    out: str | None = None,
    resume: str | None = None,
    progress: bool = True,
    eval_pairs: int = 500,
    save_optimizer: bool = True,
) -> RunResult:
    """Train ``task`` with ``profile`` on ``device``, evaluate on the test split, save to ``out``.

    ``steps`` (default ``profile.steps``) and ``max_seconds`` both stop training, whichever
    comes first. ``resume`` continues from a checkpoint: same weights, optimizer, scheduler,
    random state and data order, so the run goes on as if it had never stopped.
    ``save_optimizer=False`` leaves the optimizer and scheduler out of the file (a third of the size).
    """
    from .checkpoint import load_checkpoint, save_checkpoint

    device = torch.device(device)
    steps = profile.steps if steps is None else steps
    history, start_step = History(), 0
    if resume is not None:
        checkpoint = load_checkpoint(resume, map_location=device)
        if checkpoint.extra.get("task") not in (None, task.name):
            raise ValueError(f"{resume} was trained on task {checkpoint.extra.get('task')!r}, not {task.name!r}")
        if checkpoint.src_vocab != task.src_vocab or checkpoint.tgt_vocab != task.tgt_vocab:
            raise ValueError(f"{resume} was saved with other vocabularies than task {task.name!r}")
        profile = TrainingProfile(**checkpoint.extra.get("profile", profile.to_dict()))
        model, start_step = checkpoint.model, checkpoint.step
        history = History.from_dict(checkpoint.extra["history"]) if "history" in checkpoint.extra else History()
    else:
        model = build_model(task, profile)
    model.to(device)
    optimizer = make_optimizer(model)
    scheduler = transformer_scheduler(optimizer, profile.d_model, profile.warmup_steps, profile.lr_scale)
    if resume is not None:
        checkpoint.restore(optimizer, scheduler)
    else:
        torch.manual_seed(profile.seed)
    examples = encode_pairs(task.train, task.src_vocab, task.tgt_vocab)
    batches = batch_stream(examples, profile.batch_size, task.tgt_vocab.pad_id, profile.seed, start_step)
    valid = task.valid[:eval_pairs]
    history = fit(
        model, batches, optimizer, scheduler, max(steps, start_step),
        start_step=start_step, max_seconds=max_seconds, smoothing=profile.smoothing,
        max_grad_norm=profile.max_grad_norm, precision=MixedPrecision.for_device(device),
        evaluate_fn=lambda m: evaluate(m, valid, task), eval_every=profile.eval_every,
        history=history, progress=progress,
    )  # fmt: skip
    step = history.steps[-1] if history.steps else start_step
    metrics = {**evaluate(model, task.test, task), "seconds": round(history.seconds, 1), "steps": step}
    if out is not None:
        extra = {"task": task.name, "profile": profile.to_dict(), "history": history.to_dict(), "test": metrics}
        if not save_optimizer:
            optimizer = scheduler = None  # a smaller file that can be used but not resumed
        save_checkpoint(out, model, task.src_vocab, task.tgt_vocab, optimizer, scheduler, step, extra)
    return RunResult(model, history, metrics, task)
