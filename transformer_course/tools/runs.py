"""A whole training run, as the command line's ``train`` and ``scripts/make_checkpoint.py`` need it:
build (or resume) the model, train it, score it on the test split, save it.

The chapters run the same pieces one by one (chapter 07); this puts them together.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..batching import batch_stream, encode_pairs
from ..checkpoint import load_checkpoint, save_checkpoint
from ..data import Task
from ..evaluation import evaluate, evaluate_strata
from ..model import Transformer
from ..schedule import make_optimizer, transformer_scheduler
from ..step import MixedPrecision
from ..training import History, TrainingProfile, build_model, fit


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
    if "strata" in task.info:  # the numbers task: the test score of each kind of number too
        metrics["strata"] = evaluate_strata(model, task, "test")
    if out is not None:
        extra = {"task": task.name, "profile": profile.to_dict(), "history": history.to_dict(), "test": metrics}
        if "oversampling" in task.info:  # how the training data was weighted, to re-create the run
            extra["oversampling"] = task.info["oversampling"]
        if not save_optimizer:
            optimizer = scheduler = None  # a smaller file that can be used but not resumed
        save_checkpoint(out, model, task.src_vocab, task.tgt_vocab, optimizer, scheduler, step, extra)
    return RunResult(model, history, metrics, task)
