"""A whole training run, as the command line's ``train`` and ``scripts/make_checkpoint.py`` need it:
build (or resume) the model, train it, score it on the test split, save it.

The chapters run the same pieces one by one (chapters 07 and 09); this puts them together. A
chapter-07 profile trains on batches of a number of sentences; a chapter-09
:class:`~transformer_course.sentence_training.SentenceProfile` on batches of a token budget, with
shared embeddings, BLEU on the written text and the tokenizer saved in the checkpoint, and it may
be one of several processes (``world``, see :mod:`transformer_course.distributed`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from ..batching import Batch, batch_stream, encode_pairs
from ..checkpoint import load_checkpoint, save_checkpoint
from ..data import Pair, Task
from ..distributed import World
from ..evaluation import evaluate, evaluate_strata
from ..model import Transformer
from ..schedule import make_optimizer, transformer_scheduler
from ..sentence_training import SentenceProfile, training_examples
from ..step import MixedPrecision
from ..subwords import task_tokenizer
from ..token_batches import token_batch_stream
from ..training import History, TrainingProfile, build_model, fit


@dataclass
class RunResult:
    model: Transformer
    history: History
    metrics: dict  # exact_match, bleu, chrf on the test split, seconds, steps ({} on ranks other than 0)
    task: Task
    left_out: int = 0  # training pairs longer than a SentenceProfile allows


def scorer(task: Task) -> Callable[[Transformer, list[Pair]], dict]:
    """How ``task`` is scored: BLEU on the written text for subword tasks, on tokens otherwise."""
    bleu_on = "text" if task_tokenizer(task) is not None else "tokens"
    return lambda model, pairs: evaluate(model, pairs, task, bleu_on=bleu_on)


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
    world: World | None = None,
    extra: dict | None = None,
) -> RunResult:
    """Train ``task`` with ``profile`` on ``device``, evaluate on the test split, save to ``out``.

    ``steps`` (default ``profile.steps``) and ``max_seconds`` both stop training, whichever
    comes first. ``resume`` continues from a checkpoint: same weights, optimizer, scheduler,
    random state and data order, so the run goes on as if it had never stopped.
    ``save_optimizer=False`` leaves the optimizer and scheduler out of the file (a third of the size).
    ``world``: this process is one rank of a distributed run (needs a ``SentenceProfile``); only
    rank 0 evaluates and writes the checkpoint. ``extra`` is added to the checkpoint's ``extra``.
    """
    device = torch.device(device)
    if world is not None and not isinstance(profile, SentenceProfile):
        raise ValueError("several processes share token batches: train a chapter-09 task (e.g. sentences-en-de)")
    main = world is None or world.is_main
    steps = profile.steps if steps is None else steps
    history, start_step = History(), 0
    if resume is not None:
        checkpoint = load_checkpoint(resume, map_location=device)
        if checkpoint.extra.get("task") not in (None, task.name):
            raise ValueError(f"{resume} was trained on task {checkpoint.extra.get('task')!r}, not {task.name!r}")
        if checkpoint.src_vocab != task.src_vocab or checkpoint.tgt_vocab != task.tgt_vocab:
            raise ValueError(f"{resume} was saved with other vocabularies than task {task.name!r}")
        profile = type(profile)(**checkpoint.extra.get("profile", profile.to_dict()))
        model, start_step = checkpoint.model, checkpoint.step
        history = History.from_dict(checkpoint.extra["history"]) if "history" in checkpoint.extra else History()
    else:
        share = isinstance(profile, SentenceProfile) and profile.share_embeddings
        model = build_model(task, profile, share_embeddings=share)
    model.to(device)
    optimizer = make_optimizer(model)
    scheduler = transformer_scheduler(optimizer, profile.d_model, profile.warmup_steps, profile.lr_scale)
    if resume is not None:
        checkpoint.restore(optimizer, scheduler)
    else:
        torch.manual_seed(profile.seed)
    if world is not None:
        torch.manual_seed(profile.seed + 1_000 * start_step + world.rank)  # other dropout masks on each rank
    batches, left_out = _batches(task, profile, start_step, world)
    trained = model if world is None else world.wrap(model)
    score = scorer(task)
    valid = task.valid[:eval_pairs]
    history = fit(
        trained, batches, optimizer, scheduler, max(steps, start_step),
        start_step=start_step, max_seconds=max_seconds, smoothing=profile.smoothing,
        max_grad_norm=profile.max_grad_norm, precision=MixedPrecision.for_device(device),
        evaluate_fn=lambda _: score(model, valid), eval_every=profile.eval_every,
        history=history, progress=progress, world=world,
    )  # fmt: skip
    step = history.steps[-1] if history.steps else start_step
    metrics = {}
    if main:
        metrics = {**score(model, task.test), "seconds": round(history.seconds, 1), "steps": step}
        if "strata" in task.info:  # the numbers task: the test score of each kind of number too
            metrics["strata"] = evaluate_strata(model, task, "test")
    if out is not None and main:
        info = {"task": task.name, "profile": profile.to_dict(), "history": history.to_dict(), "test": metrics}
        if "oversampling" in task.info:  # how the training data was weighted, to re-create the run
            info["oversampling"] = task.info["oversampling"]
        if world is not None:
            info["world_size"] = world.world_size
        if not save_optimizer:
            optimizer = scheduler = None  # a smaller file that can be used but not resumed
        save_checkpoint(
            out, model, task.src_vocab, task.tgt_vocab, optimizer, scheduler, step, {**info, **(extra or {})},
            tokenizer=task_tokenizer(task),
        )  # fmt: skip
    if world is not None:
        world.barrier()  # the other ranks wait for rank 0's test scores and checkpoint
    return RunResult(model, history, metrics, task, left_out)


def _batches(task: Task, profile: TrainingProfile, start_step: int, world: World | None) -> tuple[Iterator[Batch], int]:
    """Chapter 07: batches of ``batch_size`` sentences; chapter 09: batches of a token budget, this
    rank's share. Returns (the stream, how many training pairs were left out for their length)."""
    pad_id = task.tgt_vocab.pad_id
    if not isinstance(profile, SentenceProfile):
        examples = encode_pairs(task.train, task.src_vocab, task.tgt_vocab)
        return batch_stream(examples, profile.batch_size, pad_id, profile.seed, start_step), 0
    examples, left_out = training_examples(task, profile)
    rank, world_size = (0, 1) if world is None else (world.rank, world.world_size)
    stream = token_batch_stream(examples, profile.max_tokens, pad_id, profile.seed, start_step, rank, world_size)
    return stream, left_out
