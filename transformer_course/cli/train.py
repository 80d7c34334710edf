"""``train`` and ``evaluate``: train a translator from the command line, then score it.

    python -m transformer_course train --task numbers-en-de --max-seconds 90 --out model.pt
    python -m transformer_course evaluate model.pt --task numbers-en-de

Both end with one JSON line on stdout: ``{"task", "exact_match", "bleu", "chrf", "seconds", "steps"}``
(scores in percent on the test split; seconds and steps of training). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from . import CLIError

TASK_NAMES = ("numbers-en-de", "copy", "reverse")


def _task(name: str):
    from ..data import load_task

    if name not in TASK_NAMES:
        raise CLIError(f"unknown task {name!r}; choose one of {', '.join(TASK_NAMES)}")
    return load_task(name)


def _check_writable(path: Path) -> None:
    """Fail now, not after minutes of training, if the checkpoint cannot be written."""
    folder = path.parent
    if path.is_dir():
        raise CLIError(f"--out {path} is a folder; give a file name such as {path / 'model.pt'}")
    if folder.exists() and not folder.is_dir():
        raise CLIError(f"--out {path}: {folder} is not a folder")
    if not folder.is_dir():
        raise CLIError(f"--out {path}: folder {folder} does not exist")
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
    except OSError as error:
        raise CLIError(f"--out {path} is not writable: {error.strerror}") from None
    if not existed:
        path.unlink()


def _device(name: str):
    import torch

    from ..device import pick_device

    if name == "auto":
        return pick_device()
    if name == "cuda" and not torch.cuda.is_available():
        raise CLIError("--device cuda: no CUDA GPU is available")
    return torch.device(name)


def _print_result(task: str, metrics: dict) -> None:
    keys = ("exact_match", "bleu", "chrf", "seconds", "steps")
    print(json.dumps({"task": task, **{k: metrics.get(k) for k in keys}}), flush=True)


def _train(args: argparse.Namespace) -> int:
    import torch

    from ..training import pick_profile, run_training

    if args.max_seconds is not None and args.max_seconds <= 0:
        raise CLIError(f"--max-seconds must be > 0, got {args.max_seconds}")
    if args.steps is not None and args.steps < 1:
        raise CLIError(f"--steps must be >= 1, got {args.steps}")
    if args.out is not None:
        _check_writable(args.out)
    if args.resume is not None and not args.resume.is_file():
        raise CLIError(f"--resume: checkpoint not found: {args.resume}")
    if args.threads:
        torch.set_num_threads(args.threads)
    task = _task(args.task)
    device = _device(args.device)
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
    from ..checkpoint import load_checkpoint
    from ..device import pick_device
    from ..training import evaluate

    task = _task(args.task)
    checkpoint = load_checkpoint(args.checkpoint, map_location=pick_device() if args.device == "auto" else args.device)
    if checkpoint.src_vocab != task.src_vocab or checkpoint.tgt_vocab != task.tgt_vocab:
        trained_on = checkpoint.extra.get("task", "another task")
        raise CLIError(f"{args.checkpoint} was trained on {trained_on}, not {task.name} (the vocabularies differ)")
    pairs = getattr(task, args.split)
    metrics = evaluate(checkpoint.model, pairs, task)
    history = checkpoint.extra.get("history") or {}
    _print_result(task.name, {**metrics, "seconds": round(history.get("seconds", 0.0), 1), "steps": checkpoint.step})
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    train = subparsers.add_parser("train", help="train a translator (chapter 07) and print its test scores as JSON")
    train.add_argument("--task", default="numbers-en-de", help=f"one of {', '.join(TASK_NAMES)}")
    train.add_argument("--max-seconds", type=float, default=None, help="stop after this many seconds of training")
    train.add_argument("--steps", type=int, default=None, help="stop after this many steps (default: the profile's)")
    train.add_argument("--out", type=Path, default=None, help="write the checkpoint here")
    train.add_argument("--resume", type=Path, default=None, help="continue the run saved in this checkpoint")
    train.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda", "mps"))
    train.add_argument("--seed", type=int, default=None)
    train.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: PyTorch's choice)")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.set_defaults(run=_train)
    evaluate = subparsers.add_parser("evaluate", help="score a checkpoint on a task's test split (JSON line)")
    evaluate.add_argument("checkpoint", type=Path)
    evaluate.add_argument("--task", default="numbers-en-de", help=f"one of {', '.join(TASK_NAMES)}")
    evaluate.add_argument("--split", default="test", choices=("test", "valid"))
    evaluate.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda", "mps"))
    evaluate.set_defaults(run=_evaluate)
