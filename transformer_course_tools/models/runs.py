"""A whole training run, as the command line's ``train`` and ``scripts/make_checkpoint.py`` need it:
build (or resume) the model, train it, score it on the test split, save it.

The run is put together by :func:`~transformer_course.training.prepare_training` and trained by
:func:`~transformer_course.training.fit`, as in chapters 08 and 12. Chapter 08's profile trains on
batches of a number of sentences; chapter 12's
:class:`~transformer_course.sentence_training.SentenceProfile` on batches of a token budget, with
shared embeddings, BLEU on the written text and the tokenizer saved in the checkpoint, and it may
be one of several processes (``world``: :mod:`transformer_course.distributed`'s ``prepare_rank`` and
``fit_together`` in place of ``prepare_training`` and ``fit``).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial

import torch

from transformer_course.checkpoint import load_checkpoint, save_checkpoint
from transformer_course.data import Pair, Task
from transformer_course.decoding import greedy_decode
from transformer_course.distributed import World, fit_together, prepare_rank
from transformer_course.evaluation import evaluate, evaluate_strata
from transformer_course.model import Transformer
from transformer_course.subwords import task_tokenizer
from transformer_course.training import Evaluation, History, TrainingProfile, fit, prepare_training


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
    return lambda model, pairs: evaluate(model, pairs, task, bleu_on=bleu_on, decode=greedy_decode)


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
    main = world is None or world.is_main
    steps = profile.steps if steps is None else steps
    history, checkpoint = History(), None
    if resume is not None:
        checkpoint = load_checkpoint(resume, map_location=device)
        if checkpoint.extra.get("task") not in (None, task.name):
            raise ValueError(f"{resume} was trained on task {checkpoint.extra.get('task')!r}, not {task.name!r}")
        if checkpoint.src_vocab != task.src_vocab or checkpoint.tgt_vocab != task.tgt_vocab:
            raise ValueError(f"{resume} was saved with other vocabularies than task {task.name!r}")
        profile = type(profile)(**checkpoint.extra.get("profile", profile.to_dict()))
        history = History.from_dict(checkpoint.extra["history"]) if "history" in checkpoint.extra else History()
    if world is None:
        run = prepare_training(task, profile, device, resume=checkpoint)
        train = fit
    else:
        run = prepare_rank(world, task, profile, device, resume=checkpoint)
        train = partial(fit_together, world)
    model = run.model if world is None else run.model.module  # the Transformer, to score and save
    score = scorer(task)
    valid = task.valid[:eval_pairs]
    options = replace(run.options, max_seconds=max_seconds, progress=progress)
    with _ctrl_c_ends_the_run(options, alone=world is None) as interrupted:
        history = train(
            run.model, run.batches, run.optimizer, run.scheduler, max(steps, run.start_step),
            start_step=run.start_step, options=options, history=history,
            evaluation=Evaluation(lambda _: {} if interrupted else score(model, valid), profile.eval_every),
        )  # fmt: skip
    step = history.steps[-1] if history.steps else run.start_step
    metrics = {}
    if main and not interrupted:
        metrics = {**score(model, task.test), "seconds": round(history.seconds, 1), "steps": step}
        if "strata" in task.info:  # the numbers task: the test score of each kind of number too
            metrics["strata"] = evaluate_strata(model, task, "test", decode=greedy_decode)
    if out is not None and main:
        info = {"task": task.name, "profile": profile.to_dict(), "history": history.to_dict(), "test": metrics}
        if "oversampling" in task.info:  # how the training data was weighted, to re-create the run
            info["oversampling"] = task.info["oversampling"]
        if world is not None:
            info["world_size"] = world.world_size
        optimizer, scheduler = (run.optimizer, run.scheduler) if save_optimizer else (None, None)  # None: smaller
        save_checkpoint(
            out, model, task.src_vocab, task.tgt_vocab, optimizer, scheduler, step, {**info, **(extra or {})},
            tokenizer=task_tokenizer(task),
        )  # fmt: skip
    if interrupted:
        saved = f"; saved {out} (go on with --resume {out})" if out is not None else "; nothing saved (no --out)"
        raise TrainingInterrupted(f"interrupted (Ctrl-C) after step {step}{saved}")
    if world is not None:
        world.barrier()  # the other ranks wait for rank 0's test scores and checkpoint
    return RunResult(model, history, metrics, task, run.left_out)


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C ended a run after a whole step; the message says the step and what was saved."""


@contextmanager
def _ctrl_c_ends_the_run(options, alone: bool) -> Iterator[list]:  # noqa: ANN001 - the run's FitOptions
    """While training on one process, Ctrl-C lets the step under way finish and ends the loop there (its
    time limit set to 0), so that the run can be saved whole; a second Ctrl-C interrupts at once. Yields a
    list that holds True once Ctrl-C was pressed (empty, so false, until then)."""
    pressed: list[bool] = []
    if not alone or threading.current_thread() is not threading.main_thread():
        yield pressed
        return

    def stop(signum: int, frame: object) -> None:
        pressed.append(True)
        options.max_seconds = 0.0  # fit reads it before each step
        signal.signal(signal.SIGINT, previous)

    previous = signal.signal(signal.SIGINT, stop)
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, previous)
