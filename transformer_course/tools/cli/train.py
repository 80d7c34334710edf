"""``train`` and ``evaluate``: train a translator from the command line, then score it.

    python -m transformer_course train --task numbers-en-de --max-seconds 90 --out model.pt
    python -m transformer_course evaluate model.pt --task numbers-en-de

Both end with one JSON line on stdout: ``{"task", "exact_match", "bleu", "chrf", "seconds", "steps"}``
(scores in percent on the test split; seconds and steps of training). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

from . import CLIError

DEVICES = ("auto", "cpu", "cuda", "mps")


def _task_names() -> tuple[str, ...]:
    from ...data import TASKS

    return tuple(TASKS)


def _task(name: str):
    from ...data import load_task

    if name not in _task_names():
        raise CLIError(f"--task: unknown task {name!r}; choose one of {', '.join(_task_names())}")
    return load_task(name)


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

    from ...device import pick_device

    if name == "auto":
        return pick_device()
    if name == "cuda" and not torch.cuda.is_available():
        raise CLIError("--device cuda: a CUDA GPU is not available on this machine (use --device cpu or auto)")
    mps = getattr(torch.backends, "mps", None)
    if name == "mps" and not (mps is not None and mps.is_available()):
        raise CLIError("--device mps: Apple's MPS is not available on this machine (use --device cpu or auto)")
    return torch.device(name)


def _print_result(task: str, metrics: dict) -> None:
    result = {"task": task, **{k: metrics.get(k) for k in ("exact_match", "bleu", "chrf", "seconds", "steps")}}
    if "strata" in metrics:  # the numbers task: the score of each kind of number too
        result["strata"] = metrics["strata"]
    print(json.dumps(result), flush=True)


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


def _train(args: argparse.Namespace) -> int:
    import torch

    from ...training import pick_profile
    from ..runs import run_training

    _check_train_args(args)
    task = _task(args.task)
    device = _device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    profile = pick_profile(device, task.name)
    if args.seed is not None:
        profile = replace(profile, seed=args.seed)
    # --max-seconds alone trains until the time is up; --steps alone (or the profile) counts steps
    steps = args.steps if args.steps is not None else (10**9 if args.max_seconds is not None else profile.steps)
    print(f"training {task.name} on {device} for {args.max_seconds or '∞'} s / {steps} steps", file=sys.stderr)
    result = run_training(
        task, profile, device, steps=steps, max_seconds=args.max_seconds,
        out=None if args.out is None else str(args.out),
        resume=None if args.resume is None else str(args.resume), progress=not args.quiet,
    )  # fmt: skip
    if args.out is not None:
        print(f"saved {args.out}", file=sys.stderr)
    _print_result(task.name, result.metrics)
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from ...checkpoint import load_checkpoint
    from ...evaluation import evaluate, evaluate_strata

    task = _task(args.task)
    device = _device(args.device)
    checkpoint = load_checkpoint(args.checkpoint, map_location=device)
    trained_on = checkpoint.extra.get("task")
    if (trained_on is not None and trained_on != task.name) or (
        checkpoint.src_vocab != task.src_vocab or checkpoint.tgt_vocab != task.tgt_vocab
    ):
        raise CLIError(f"{args.checkpoint} was trained on {trained_on or 'another task'}, not {task.name}")
    pairs = getattr(task, args.split)
    metrics = evaluate(checkpoint.model, pairs, task)
    if "strata" in task.info:  # the numbers task: every kind of number scored on its own too
        metrics["strata"] = evaluate_strata(checkpoint.model, task, args.split)
    history = checkpoint.extra.get("history") or {}
    _print_result(task.name, {**metrics, "seconds": round(history.get("seconds", 0.0), 1), "steps": checkpoint.step})
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    tasks = ", ".join(_task_names())
    train = subparsers.add_parser("train", help="train a translator (chapter 07) and print its test scores as JSON")
    train.add_argument("--task", default="numbers-en-de", help=f"one of {tasks}")
    train.add_argument("--max-seconds", type=float, default=None, help="stop after this many seconds of training")
    train.add_argument("--steps", type=int, default=None, help="stop after this many steps (default: the profile's)")
    train.add_argument("--out", type=Path, default=None, help="write the checkpoint here")
    train.add_argument("--resume", type=Path, default=None, help="continue the run saved in this checkpoint")
    train.add_argument("--device", default="auto", choices=DEVICES)
    train.add_argument("--seed", type=int, default=None)
    train.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: PyTorch's choice)")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.set_defaults(run=_train)
    evaluate = subparsers.add_parser("evaluate", help="score a checkpoint on a task's test split (JSON line)")
    evaluate.add_argument("checkpoint", type=Path)
    evaluate.add_argument("--task", default="numbers-en-de", help=f"one of {tasks}")
    evaluate.add_argument("--split", default="test", choices=("test", "valid"))
    evaluate.add_argument("--device", default="auto", choices=DEVICES)
    evaluate.set_defaults(run=_evaluate)
