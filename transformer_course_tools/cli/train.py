"""``train`` and ``evaluate``: train a translator from the command line, then score it.

    python -m transformer_course train --task numbers-en-de --max-seconds 90 --out model.pt
    python -m transformer_course evaluate model.pt --task numbers-en-de

Chapter 12's text, in subword tokens, the tokenizer saved in the checkpoint:

    python -m transformer_course train --task sentences-en-de --out model.pt     # generated here
    python -m transformer_course train --dataset multi30k --out model.pt         # Hugging Face, cached
    python -m transformer_course train --data-dir DIR --out model.pt             # DIR/train.en, train.de, valid.*, test.*
    torchrun --nproc-per-node 2 -m transformer_course train --task sentences-en-de --out model.pt

Both end with one JSON line on stdout: ``{"task", "exact_match", "bleu", "chrf", "seconds", "steps"}``
(scores in percent on the test split; seconds and steps of training), plus ``"world_size"`` (the
number of processes) for chapter 12's text. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import replace
from pathlib import Path

from . import CLIError

DEVICES = ("auto", "cpu", "cuda", "mps")
PROFILE_VARIABLE = "TRANSFORMER_COURSE_PROFILE"  # chapter 12's profile: auto (default), cpu, gpu or tiny (tests)


def _task_names() -> tuple[str, ...]:
    from transformer_course.datasets import TASK_NAMES  # (no room: the parser never imports one)
    from transformer_course_tools.models import SENTENCE_TASKS

    return (*TASK_NAMES, *SENTENCE_TASKS)


def _task(name: str):
    from transformer_course.datasets import load_task

    if name not in _task_names():
        raise CLIError(f"--task: unknown task {name!r}; choose one of {', '.join(_task_names())}")
    return load_task(name)


def _source(args: argparse.Namespace):
    """Chapter 12's text that the flags name, or None for a task of chapter 08 (``--task numbers-en-de`` …)."""
    from transformer_course_tools.models.sources import SENTENCE_TASKS, Source

    max_pairs = getattr(args, "max_pairs", None)
    if args.dataset is not None:
        return Source("dataset", args.dataset, max_pairs)
    if args.data_dir is not None:
        return Source("data_dir", str(args.data_dir), max_pairs)
    if args.task in SENTENCE_TASKS:
        return Source("task", args.task, max_pairs)
    return None


def _sentence_profile(device, vocab_size: int | None, seed: int | None):
    """Chapter 12's profile for ``device``, or the one ``$TRANSFORMER_COURSE_PROFILE`` names."""
    from transformer_course.sentence_training import (
        SENTENCE_CPU_PROFILE,
        SENTENCE_GPU_PROFILE,
        SENTENCE_TINY_PROFILE,
        pick_sentence_profile,
    )
    from transformer_course_tools.models.sources import with_vocab_size

    profiles = {"cpu": SENTENCE_CPU_PROFILE, "gpu": SENTENCE_GPU_PROFILE, "tiny": SENTENCE_TINY_PROFILE}
    name = os.environ.get(PROFILE_VARIABLE, "auto").strip().lower() or "auto"
    if name != "auto" and name not in profiles:
        raise CLIError(f"${PROFILE_VARIABLE}={name!r}: choose auto, {', '.join(profiles)}")
    profile = pick_sentence_profile(device) if name == "auto" else profiles[name]
    profile = with_vocab_size(profile, vocab_size)
    return profile if seed is None else replace(profile, seed=seed)


def _check_writable(path: Path) -> None:
    """Fail now, not after minutes of training, if the checkpoint cannot be written."""
    target = path.resolve() if path.is_symlink() else path
    if target.is_dir():
        raise CLIError(f"--out {path} is a folder; give a file name such as {path / 'model.pt'}")
    if target.exists() and not target.is_file():
        raise CLIError(f"--out {path} is not a regular file (a device or a pipe?): give a file name")
    folder = target.parent
    if folder.exists() and not folder.is_dir():
        raise CLIError(f"--out {path}: {folder} is not a folder")
    if not folder.is_dir():
        raise CLIError(f"--out {path}: folder {folder} does not exist")
    existed = target.exists()
    try:
        with open(target, "ab"):
            pass
    except OSError as error:
        raise CLIError(f"--out {path} is not writable: {error.strerror}") from None
    if not existed:
        target.unlink()


def _device(name: str):
    """The torch device for ``--device``, or one line saying why it cannot be used here."""
    import torch

    from transformer_course.device import pick_device

    if name == "auto":
        return pick_device()
    if name == "cuda" and not torch.cuda.is_available():
        raise CLIError("--device cuda: a CUDA GPU is not available on this machine (use --device cpu or auto)")
    mps = getattr(torch.backends, "mps", None)
    if name == "mps" and not (mps is not None and mps.is_available()):
        raise CLIError("--device mps: Apple's MPS is not available on this machine (use --device cpu or auto)")
    return torch.device(name)


def _print_result(task: str, metrics: dict, world_size: int | None = None) -> None:
    keys = ("exact_match", "bleu", "chrf", "seconds", "steps")
    shown = {"task": task, **{k: metrics.get(k) for k in keys}}
    if world_size is not None:
        shown["world_size"] = world_size
    if "strata" in metrics:  # the numbers task: the score of each kind of number too
        shown["strata"] = metrics["strata"]
    print(json.dumps(shown), flush=True)


def _steps(args: argparse.Namespace, profile) -> int:
    """--max-seconds alone trains until the time is up; --steps alone (or the profile) counts steps."""
    return args.steps if args.steps is not None else (10**9 if args.max_seconds is not None else profile.steps)


def _budget(args: argparse.Namespace, steps: int) -> str:
    """What stops the run, as the announcement says it: the time limit, the steps, or both."""
    if args.max_seconds is None:
        return f"{steps} steps"
    if args.steps is None:  # a time limit only: the step count is a formality (10**9)
        return f"{args.max_seconds:g} s"
    return f"{args.max_seconds:g} s or {steps} steps, whichever ends first"


def _check_train_args(args: argparse.Namespace) -> None:
    if args.max_seconds is not None and not (math.isfinite(args.max_seconds) and args.max_seconds > 0):
        raise CLIError(f"--max-seconds must be a number > 0, got {args.max_seconds}")
    if args.steps is not None and args.steps < 1:
        raise CLIError(f"--steps must be >= 1, got {args.steps}")
    if args.threads is not None and args.threads < 1:
        raise CLIError(f"--threads must be >= 1, got {args.threads}")
    if args.out is not None:
        _check_writable(args.out)
    if args.resume is not None and not args.resume.is_file():
        raise CLIError(f"--resume: checkpoint not found: {args.resume}")
    for flag, value in (("--max-pairs", args.max_pairs), ("--vocab-size", args.vocab_size)):
        if value is not None and value < 1:
            raise CLIError(f"{flag} must be >= 1, got {value}")
    if args.vocab_size is not None and args.vocab_size < 5:
        raise CLIError(f"--vocab-size must be >= 5 (4 special tokens and one more), got {args.vocab_size}")


def _train(args: argparse.Namespace) -> int:
    import torch

    from transformer_course.distributed import launched_by_torchrun
    from transformer_course.training import pick_profile
    from transformer_course_tools.models.runs import run_training

    _check_train_args(args)
    source = _source(args)
    if source is not None:
        return _train_sentences(args, source)
    args.task = args.task or "numbers-en-de"
    if args.max_pairs is not None or args.vocab_size is not None:
        raise CLIError(
            "--max-pairs and --vocab-size are for chapter 12's text (--task sentences-en-de, --dataset, --data-dir)"
        )
    if launched_by_torchrun():
        raise CLIError(
            f"several processes (torchrun) train chapter 12's text, not {args.task}: use --task sentences-en-de, --dataset or --data-dir"
        )
    task = _task(args.task)
    device = _device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    profile = pick_profile(device, task.name)
    if args.seed is not None:
        profile = replace(profile, seed=args.seed)
    steps = _steps(args, profile)
    print(f"training {task.name} on {device} for {_budget(args, steps)}", file=sys.stderr)
    result = run_training(
        task, profile, device, steps=steps, max_seconds=args.max_seconds,
        out=None if args.out is None else str(args.out),
        resume=None if args.resume is None else str(args.resume), progress=not args.quiet,
    )  # fmt: skip
    if args.out is not None:
        print(f"saved {args.out}", file=sys.stderr)
    _print_result(task.name, result.metrics)
    return 0


def _train_sentences(args: argparse.Namespace, source) -> int:
    """``train`` on chapter 12's text: subword tokens, token batches, one or several processes."""
    import torch

    from transformer_course.checkpoint import load_checkpoint
    from transformer_course.distributed import join, leave
    from transformer_course.subwords import SubwordTokenizer
    from transformer_course_tools.models.runs import run_training
    from transformer_course_tools.models.sources import source_task

    device = _device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    profile = _sentence_profile(device, args.vocab_size, args.seed)
    tokenizer = None
    if args.resume is not None:  # go on with the tokens the checkpoint was trained on
        saved = load_checkpoint(args.resume).tokenizer
        if saved is None:
            raise CLIError(f"--resume: {args.resume} was trained on word tokens (chapter 08), not on {source.name}")
        tokenizer = SubwordTokenizer.from_dict(saved)
    world, device = join(device)  # several processes under torchrun: each one is a rank
    try:
        task = source_task(source, profile, tokenizer)  # every rank makes the same task (seeded)
        main = world is None or world.is_main
        processes = 1 if world is None else world.world_size
        steps = _steps(args, profile)
        if main:
            print(f"training {task.name} on {device.type} × {processes} for {_budget(args, steps)}; "
                  f"{len(task.src_vocab)} subword tokens", file=sys.stderr)  # fmt: skip
        result = run_training(
            task, profile, device, steps=steps, max_seconds=args.max_seconds,
            out=None if args.out is None else str(args.out), resume=None if args.resume is None else str(args.resume),
            progress=not args.quiet, world=world, extra={"source": source.to_dict()},
        )  # fmt: skip
        if main:
            if result.left_out:
                limit = min(profile.max_sentence_tokens, profile.max_tokens)
                print(f"left out {result.left_out} training pairs longer than {limit} tokens", file=sys.stderr)
            if args.out is not None:
                print(f"saved {args.out}", file=sys.stderr)
            _print_result(task.name, result.metrics, processes)
    finally:
        leave(world)
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from transformer_course.checkpoint import load_checkpoint
    from transformer_course.decoding import greedy_decode
    from transformer_course.evaluation import evaluate, evaluate_strata

    device = _device(args.device)
    checkpoint = load_checkpoint(args.checkpoint, map_location=device)
    trained_on = checkpoint.extra.get("task")
    source = _source(args)
    if checkpoint.tokenizer is not None:
        return _evaluate_sentences(args, checkpoint, source)
    if source is not None:
        raise CLIError(
            f"{args.checkpoint} was trained on {trained_on or 'another task'} (word tokens), not {source.name}"
        )
    task = _task(args.task or (trained_on if trained_on in _task_names() else "numbers-en-de"))
    if (trained_on is not None and trained_on != task.name) or (
        checkpoint.src_vocab != task.src_vocab or checkpoint.tgt_vocab != task.tgt_vocab
    ):
        raise CLIError(f"{args.checkpoint} was trained on {trained_on or 'another task'}, not {task.name}")
    pairs = getattr(task, args.split)
    metrics = evaluate(checkpoint.model, pairs, task, decode=greedy_decode)
    if "strata" in task.info:  # the numbers task: every kind of number scored on its own too
        metrics["strata"] = evaluate_strata(checkpoint.model, task, args.split, decode=greedy_decode)
    _print_result(task.name, {**metrics, **_training_time(checkpoint)})
    return 0


def _training_time(checkpoint) -> dict:
    history = checkpoint.extra.get("history") or {}
    return {"seconds": round(history.get("seconds", 0.0), 1), "steps": checkpoint.step}


def _evaluate_sentences(args: argparse.Namespace, checkpoint, source) -> int:
    """``evaluate`` a checkpoint of subword tokens: its own tokenizer, on the text it names or was trained on."""
    from transformer_course.subwords import SubwordTokenizer
    from transformer_course_tools.models.runs import scorer
    from transformer_course_tools.models.sources import Source, held_out_task

    trained_on = checkpoint.extra.get("task")
    if source is None and args.task is not None:  # a task of chapter 08
        raise CLIError(f"{args.checkpoint} was trained on {trained_on}, not {args.task}")
    if source is None:
        if "source" not in checkpoint.extra:
            raise CLIError(
                f"{args.checkpoint} does not say what it was trained on: give --task, --dataset or --data-dir"
            )
        source = Source.from_dict(checkpoint.extra["source"])
    task = held_out_task(source, SubwordTokenizer.from_dict(checkpoint.tokenizer))
    pairs = getattr(task, args.split)
    if not pairs:
        raise CLIError(f"the {args.split} split of {source.name} is empty")
    metrics = scorer(task)(checkpoint.model, pairs)
    _print_result(task.name, {**metrics, **_training_time(checkpoint)}, checkpoint.extra.get("world_size", 1))
    return 0


def _add_source_flags(parser: argparse.ArgumentParser, what: str) -> None:
    """--task / --dataset / --data-dir: one of them names the text (chapter 08's tasks or chapter 12's)."""
    from transformer_course.datasets.corpora import HUB_DATASETS

    group = parser.add_mutually_exclusive_group()
    group.add_argument("--task", default=None, help=f"one of {', '.join(_task_names())} ({what})")
    group.add_argument("--dataset", default=None, metavar="NAME",
                       help=f"a Hugging Face corpus, downloaded once and cached: {', '.join(HUB_DATASETS)}")  # fmt: skip
    group.add_argument("--data-dir", type=Path, default=None, metavar="DIR",
                       help="a folder of plain-text files: train.en, train.de, valid.en, valid.de, test.en, test.de")  # fmt: skip


def register(subparsers: argparse._SubParsersAction) -> None:
    train = subparsers.add_parser(
        "train", help="train a translator (chapters 08, 12) and print its test scores as JSON"
    )
    _add_source_flags(train, "default numbers-en-de")
    train.add_argument("--max-seconds", type=float, default=None, help="stop after this many seconds of training")
    train.add_argument("--steps", type=int, default=None, help="stop after this many steps (default: the profile's)")
    train.add_argument("--out", type=Path, default=None, help="write the checkpoint here")
    train.add_argument("--resume", type=Path, default=None, help="continue the run saved in this checkpoint")
    train.add_argument("--device", default="auto", choices=DEVICES)
    train.add_argument("--seed", type=int, default=None)
    train.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: PyTorch's choice)")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.add_argument("--max-pairs", type=int, default=None, help="chapter 12: at most this many pairs per split")
    train.add_argument(
        "--vocab-size", type=int, default=None, help="chapter 12: subword tokens (default: the profile's)"
    )
    train.set_defaults(run=_train)
    evaluate = subparsers.add_parser("evaluate", help="score a checkpoint on a task's test split (JSON line)")
    evaluate.add_argument("checkpoint", type=Path)
    _add_source_flags(evaluate, "default: what the checkpoint was trained on")
    evaluate.add_argument("--split", default="test", choices=("test", "valid"))
    evaluate.add_argument("--device", default="auto", choices=DEVICES)
    evaluate.set_defaults(run=_evaluate)
