"""Chapter 08 — the training loop: model sizes for each kind of machine, and the loop itself.

The pieces it puts together live in their own rooms: the batches (:mod:`.batching`), the loss
(:mod:`.loss`), the schedule (:mod:`.schedule`) and one update (:mod:`.step`). This file only
decides how big the model is (:class:`TrainingProfile`), puts a run together in one fixed order
(:func:`prepare_training`: seed, model, optimizer, scheduler, batches) and runs step after step
(:func:`fit`), recording the loss and, from time to time, a score on held-out data.

On a GPU the loop reads values back from the GPU only when it logs (every ``log_every`` steps):
reading a value makes the CPU wait until the GPU has finished, which would stall every step.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial

import torch
from torch import Tensor, nn
from torch.optim.lr_scheduler import LambdaLR

from .batching import Batch, batch_stream, encode_pairs
from .checkpoint import Checkpoint
from .config import TransformerConfig
from .data import Task
from .model import Transformer
from .schedule import make_optimizer, transformer_scheduler
from .step import MixedPrecision, train_step

# -- how big, how long: one profile per kind of machine ----------------------------------------------


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

    def make_batches(self, task: Task, seed: int, start_step: int = 0) -> tuple[Iterator[Batch], int]:
        """Chapter 08's batches: ``batch_size`` training sentences each, in an order drawn with
        ``seed``, from batch ``start_step`` on. Returns (the stream, the pairs left out: none here;
        chapter 12's :class:`~transformer_course.sentence_training.SentenceProfile` leaves out long ones)."""
        examples = encode_pairs(task.train, task.src_vocab, task.tgt_vocab)
        return batch_stream(examples, self.batch_size, task.tgt_vocab.pad_id, seed, start_step), 0


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


def build_model(task: Task, profile: TrainingProfile, share_embeddings: bool = False) -> Transformer:
    """A :class:`Transformer` sized by ``profile`` for ``task``'s vocabularies (seeded).

    ``share_embeddings=True`` (chapter 12, paper §3.4) gives source, target and output one matrix:
    the task must use one vocabulary for both languages.
    """
    longest = max(max(len(s), len(t)) for s, t in task.train)
    limit = getattr(profile, "max_sentence_tokens", None)  # chapter 12 leaves longer pairs out
    longest = longest if limit is None else min(longest, limit)
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
        share_embeddings=share_embeddings,
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


@dataclass
class FitOptions:
    """How :func:`fit` makes each step, when it stops early, and how it reports.

    ``smoothing``, ``max_grad_norm`` and ``precision`` go to :func:`~transformer_course.step.train_step`.
    ``max_seconds`` stops training after that much training time (evaluations not counted).
    The losses are read every ``log_every`` steps (see the module's note on GPUs); ``progress``
    shows a progress bar.
    """

    smoothing: float = 0.1
    max_grad_norm: float | None = 1.0
    precision: MixedPrecision | None = None  # None: float32
    max_seconds: float | None = None  # None: no time limit
    log_every: int = 50
    progress: bool = True

    def __post_init__(self) -> None:
        if self.log_every < 1:
            raise ValueError(f"log_every must be >= 1, got {self.log_every}")
        if self.max_seconds is not None and self.max_seconds < 0:
            raise ValueError(f"max_seconds must be >= 0 or None, got {self.max_seconds}")


@dataclass
class Evaluation:
    """A score taken while training: ``fn(model)`` gives a dict (``{"exact_match": …}``), every
    ``every`` steps and once at the end (``every=0``: only at the end). An empty dict records
    nothing: a callback that only keeps a copy of the weights now and then returns ``{}``."""

    fn: Callable[[nn.Module], dict]
    every: int = 0

    def __post_init__(self) -> None:
        if self.every < 0:
            raise ValueError(f"Evaluation.every must be >= 0 (0: only at the end), got {self.every}")

    def due(self, step: int, steps: int) -> bool:
        """Is there an evaluation after ``step``, before the last of ``steps``?"""
        return self.every > 0 and step % self.every == 0 and step < steps


def fit(
    model: nn.Module,
    batches: Iterator[Batch],
    optimizer: torch.optim.Optimizer,
    scheduler: LambdaLR | None,
    steps: int,
    *,
    start_step: int = 0,
    options: FitOptions | None = None,
    evaluation: Evaluation | None = None,
    history: History | None = None,
    update: Callable[..., Tensor] | None = None,
) -> History:
    """The training loop: take a batch, make one step, record, sometimes evaluate.

    Runs from ``start_step`` until ``steps`` steps are done or ``options.max_seconds`` have passed,
    whichever comes first (:class:`FitOptions`: the step's settings, the time limit, the logging).
    The losses are read every ``options.log_every`` steps, all at once (see the module's note on
    GPUs), and checked to be finite. ``evaluation`` (:class:`Evaluation`) scores the model from time
    to time and at the end; each score is stored in ``history.evals`` with the step and the training
    seconds so far. ``history`` is continued when given (a run trained in several calls).
    Training also stops when ``batches`` runs out (a finite list of batches is trained on once).

    ``update`` makes one step and returns its loss; it takes :func:`~transformer_course.step.train_step`'s
    arguments and is that function unless given (chapter 12's processes pass one that also talks to the others).
    """
    with warnings.catch_warnings():  # without ipywidgets tqdm.auto warns, then falls back to a text bar: fine
        warnings.simplefilter("ignore")
        from tqdm.auto import tqdm

    if steps < start_step:
        raise ValueError(f"steps ({steps}) must be >= start_step ({start_step})")
    options = options if options is not None else FitOptions()
    history = history if history is not None else History()
    update = update if update is not None else train_step
    device = next(model.parameters()).device
    endless = steps >= 10**8  # "until the time is up" (or the batches run out): no total to show
    bar = tqdm(
        total=None if endless else steps, initial=start_step, disable=not options.progress,
        desc="training", unit="step", file=_progress_file(),
    )  # fmt: skip
    clock = _Clock(history.seconds)
    pending: list[Tensor] = []  # losses not read yet
    step = start_step
    while step < steps and not _time_is_up(clock, options):
        batch = next(batches, None)
        if batch is None:  # a finite stream ran out
            break
        batch = batch.to(device)
        history.lrs.append(optimizer.param_groups[0]["lr"])
        loss = update(
            model, batch, optimizer, scheduler, options.smoothing, options.max_grad_norm, options.precision
        )  # 0-dim tensor, not read yet
        pending.append(loss)
        step += 1
        history.steps.append(step)
        bar.update(1)
        due = evaluation is not None and evaluation.due(step, steps)
        if len(pending) == options.log_every or due:
            _log(history, pending, step, bar)
        if due:
            with clock.paused():
                _record(history, step, clock.seconds(), evaluation.fn(model), bar)
    if pending:
        _log(history, pending, step, bar)
    bar.close()
    history.seconds = clock.seconds()
    if evaluation is not None and (not history.evals or history.evals[-1]["step"] != step):
        _record(history, step, history.seconds, evaluation.fn(model), bar)  # written below the closed bar
    return history


# -- one run put together: seed → model → optimizer → scheduler → batches ------------------------------


@dataclass
class Training:
    """Everything :func:`fit` needs for one run, made by :func:`prepare_training`::

    run = prepare_training(task, profile, device)
    history = fit(run.model, run.batches, run.optimizer, run.scheduler, profile.steps, options=run.options)
    """

    model: nn.Module  # on the device (chapter 12's several processes wrap it: the Transformer is model.module)
    batches: Iterator[Batch]
    optimizer: torch.optim.Optimizer
    scheduler: LambdaLR
    options: FitOptions  # the profile's smoothing and clipping, the device's precision
    left_out: int = 0  # training pairs too long for the profile's batches (chapter 12)
    start_step: int = 0  # where a resumed run goes on


def prepare_training(
    task: Task,
    profile: TrainingProfile,
    device: torch.device | str = "cpu",
    *,
    seed: int | None = None,
    build: Callable[[], nn.Module] | None = None,
    schedule: Callable[[int], float] | None = None,
    resume: Checkpoint | None = None,
    make_batches: Callable[[int, int], tuple[Iterator[Batch], int]] | None = None,
) -> Training:
    """Put one training run together, always in the same order: seed, model, optimizer, scheduler, batches.

    * the **seed** (``seed``, default ``profile.seed``) fixes the initial weights, the dropout masks
      and the order of the batches;
    * the **model**: ``build()`` (default :func:`build_model` for ``task`` and ``profile``, with
      shared embeddings if the profile asks for them), moved to ``device``;
    * the **optimizer**: Adam with the paper's settings (:func:`~transformer_course.schedule.make_optimizer`);
    * the **scheduler**: the paper's warm-up schedule with the profile's settings, or
      ``schedule(count)``, the learning rate of update ``count`` (counted from 0);
    * the **batches**: ``make_batches(seed, start_step)`` (default ``profile.make_batches`` for
      ``task``), sentences or a token budget; it returns (the stream, the training pairs left out).

    ``resume`` goes on from a checkpoint (the caller checks that it fits ``task``): its model,
    optimizer, scheduler and random state, and the batches from its step on.
    """
    if resume is not None and build is not None:
        raise ValueError("give build (a new model) or resume (the checkpoint's model), not both")
    seed = profile.seed if seed is None else seed
    start_step = 0 if resume is None else resume.step
    torch.manual_seed(seed)
    if resume is not None:
        build = lambda: resume.model  # noqa: E731
    elif build is None:
        build = partial(build_model, task, profile, share_embeddings=getattr(profile, "share_embeddings", False))
    model = build().to(device)
    optimizer = make_optimizer(model)
    if schedule is None:
        scheduler = transformer_scheduler(optimizer, profile.d_model, profile.warmup_steps, profile.lr_scale)
    else:
        scheduler = LambdaLR(optimizer, schedule)
    if resume is not None:
        resume.restore(optimizer, scheduler)  # the saved state, random numbers included
    make_batches = make_batches if make_batches is not None else partial(profile.make_batches, task)
    batches, left_out = make_batches(seed, start_step)
    options = FitOptions(profile.smoothing, profile.max_grad_norm, MixedPrecision.for_device(device))
    return Training(model, batches, optimizer, scheduler, options, left_out, start_step)


class _Clock:
    """Seconds of training, without the time spent evaluating."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.start = time.perf_counter() - seconds

    def seconds(self) -> float:
        return time.perf_counter() - self.start

    @contextmanager
    def paused(self) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.start += time.perf_counter() - began


def _progress_file():
    """Where the progress bar goes: stdout in a notebook, where stderr shows pink like an error
    (the course's environment has no ipywidgets, so the bar is text); stderr in a terminal, so that
    a command's own output (the CLI's JSON line) stays clean."""
    return sys.stdout if "ipykernel" in sys.modules else sys.stderr


def _time_is_up(clock: _Clock, options: FitOptions) -> bool:
    """Has training used its ``max_seconds``?"""
    return options.max_seconds is not None and clock.seconds() >= options.max_seconds


def _log(history: History, pending: list[Tensor], step: int, bar) -> None:
    """Read the pending losses with one transfer, check them, and show the last one."""
    losses = torch.stack(pending).float().tolist()  # (steps,): the one place the loop waits for a GPU
    pending.clear()
    bad = next((loss for loss in losses if not math.isfinite(loss)), None)
    if bad is not None:
        raise FloatingPointError(f"the loss became {bad} before step {step}: lower the learning rate")
    history.losses.extend(losses)
    bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)


def _record(history: History, step: int, seconds: float, metrics: dict, bar) -> None:
    if not metrics:  # the callback measured nothing this time
        return
    history.evals.append({"step": step, "seconds": round(seconds, 1), **metrics})
    bar.write(f"step {step:5d}: " + ", ".join(f"{k} {v}" for k, v in metrics.items()), file=_progress_file())
