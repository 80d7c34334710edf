"""``average``: one checkpoint whose weights are the mean of several of one run (paper §6.1).

python -m transformer_course average averaged.pt run/step-900.pt run/step-950.pt run/step-1000.pt

The output keeps the last input's step, vocabularies, tokenizer and notes, with the averaged
weights; it has no optimizer state (it is for translating and evaluating, not for resuming). The
command never overwrites an input, nor another existing file unless ``--force`` is given, and it
writes the output atomically: a failure leaves every file as it was.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from . import CLIError


def _same_file(a: Path, b: Path) -> bool:
    """``a`` and ``b`` are one file: the same path, a link to it, or a hard link."""
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return a.resolve() == b.resolve()


def _check_paths(out: Path, inputs: list[Path], force: bool) -> None:
    """Everything that can be refused before reading a checkpoint, refused first."""
    if len(inputs) < 2:
        raise CLIError(f"give at least 2 checkpoints to average after OUT, got {len(inputs)}")
    for i, path in enumerate(inputs):
        if not path.is_file():
            raise CLIError(f"checkpoint not found: {path}" if not path.exists() else f"{path} is not a file")
        if any(_same_file(path, earlier) for earlier in inputs[:i]):
            raise CLIError(f"{path} is given twice: each checkpoint counts once in the mean")
    if any(_same_file(out, path) for path in inputs):
        raise CLIError(f"OUT {out} is one of the checkpoints to average: write the average to a new file")
    if out.is_dir():
        raise CLIError(f"OUT {out} is a folder; give a file name such as {out / 'averaged.pt'}")
    if out.exists() and not force:
        raise CLIError(f"OUT {out} exists: give --force to replace it, or another file name")
    if not out.parent.is_dir():
        raise CLIError(f"OUT {out}: folder {out.parent} does not exist")


def _average(args: argparse.Namespace) -> int:
    from transformer_course.averaging import average_checkpoints
    from transformer_course.checkpoint import save_checkpoint
    from transformer_course.subwords import SubwordTokenizer

    _check_paths(args.out, args.inputs, args.force)
    averaged = average_checkpoints(args.inputs)
    tokenizer = None if averaged.tokenizer is None else SubwordTokenizer.from_dict(averaged.tokenizer)
    save_checkpoint(
        args.out, averaged.model, averaged.src_vocab, averaged.tgt_vocab,
        step=averaged.step, extra=averaged.extra, tokenizer=tokenizer,
    )  # fmt: skip
    steps = ", ".join(str(step) for step in averaged.extra["averaged_steps"])
    print(f"averaged {len(args.inputs)} checkpoints (steps {steps}) into {args.out}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    average = subparsers.add_parser(
        "average",
        help="average the weights of several checkpoints of one run into a new checkpoint (§6.1)",
        description=(
            "Writes OUT: the last input with its weights replaced by the mean of all the inputs' weights (paper "
            "§6.1), without optimizer state. Inputs are never overwritten, an existing OUT only with --force, "
            "and OUT is written atomically."
        ),
    )
    average.add_argument("out", type=Path, metavar="OUT", help="the checkpoint to write (a new file)")
    average.add_argument("inputs", type=Path, nargs="*", metavar="IN", help="two or more checkpoints of one run")
    average.add_argument("--force", action="store_true", help="replace OUT if it exists (never an input)")
    average.set_defaults(run=_average)
