"""Time to accuracy: our Transformer against ``torch.nn.Transformer`` on English → German numbers.

    python benchmarks/time_to_accuracy.py                   # 30/60/90 s of training each
    python -m benchmarks.time_to_accuracy --marks 20,40 --threads 2

Both models have the chapter's CPU-profile size (d_model 128, 2 + 2 layers, 4 heads, d_ff 512,
dropout 0.1) and get the same data, batches, loss, schedule, clipping and seconds. Training runs
in alternating slices of a few seconds (ours, theirs, ours, …) so that a burst of load on a
shared machine hits both alike; only the training time counts (evaluation is paused time). At
each mark both models translate the 1,000 test numbers greedily and the exact match is printed,
with the steps taken, the machine's load and the thread count.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import torch
from torch import Tensor

from transformer_course.batching import batch_stream, encode_pairs
from transformer_course.datasets.numbers import numbers_task
from transformer_course.evaluation import evaluate
from transformer_course.schedule import make_optimizer, transformer_scheduler
from transformer_course.training import CPU_PROFILE, FitOptions, History, build_model, fit

if __package__ in (None, ""):  # run as a script: the repository, not benchmarks/, goes first on the path
    sys.path[0] = str(Path(__file__).resolve().parent.parent)  # (benchmarks/profile.py shadows the stdlib's)
from benchmarks.reference import TorchTransformer  # noqa: E402


class TorchBaseline(TorchTransformer):
    """The shared ``nn.Transformer`` baseline with our ``encode(src, mask)`` / ``decode(tgt, memory,
    mask)`` interface, so that the same greedy evaluation runs on it (masks: True = may attend)."""

    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> Tensor:
        return super().encode(src)

    def decode(self, tgt: Tensor, memory: Tensor, memory_mask: Tensor) -> Tensor:
        causal = torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool, device=tgt.device).triu(1)  # True = blocked
        x = self.transformer.decoder(
            self._embed(self.tgt_embed, tgt), memory, tgt_mask=causal, tgt_is_causal=True,
            tgt_key_padding_mask=tgt == self.config.pad_id, memory_key_padding_mask=~memory_mask[:, 0, 0, :],
        )  # fmt: skip
        return self.output(x)  # (B, T, V)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        return TorchTransformer.decode(self, tgt, TorchTransformer.encode(self, src), src)


class Runner:
    """One model with its optimizer, schedule, batch stream and history, trained slice by slice."""

    def __init__(self, name: str, model: torch.nn.Module, examples: list, profile) -> None:
        self.name, self.model = name, model
        self.optimizer = make_optimizer(model)
        self.scheduler = transformer_scheduler(self.optimizer, profile.d_model, profile.warmup_steps, profile.lr_scale)
        self.batches = batch_stream(examples, profile.batch_size, 0, seed=profile.seed)
        self.history, self.profile = History(), profile

    def train_until(self, seconds: float) -> None:
        fit(
            self.model, self.batches, self.optimizer, self.scheduler, 10**9,
            start_step=len(self.history.steps), history=self.history,
            options=FitOptions(self.profile.smoothing, self.profile.max_grad_norm, max_seconds=seconds, progress=False),
        )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--marks", default="30,60,90", help="training seconds at which to evaluate")
    parser.add_argument("--slice", type=float, default=5.0, help="seconds of training before switching model")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: PyTorch's choice)")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")  # nn.Transformer in eval()
    marks = sorted(float(m) for m in args.marks.split(","))
    task = numbers_task()
    examples = encode_pairs(task.train, task.src_vocab, task.tgt_vocab)
    profile = replace(CPU_PROFILE, eval_every=0)
    ours = build_model(task, profile)
    torch.manual_seed(profile.seed)
    theirs = TorchBaseline(ours.config)
    runners = [Runner("ours", ours, examples, profile), Runner("nn.Transformer", theirs, examples, profile)]
    params = {r.name: sum(p.numel() for p in r.model.parameters()) for r in runners}
    print(f"threads {torch.get_num_threads()}, parameters {params}, load {os.getloadavg()}", flush=True)
    rows, clock = [], 0.0
    for mark in marks:
        while clock < mark:
            clock = min(clock + args.slice, mark)
            for runner in runners:
                runner.train_until(clock)
        row = {"seconds": mark, "load": round(os.getloadavg()[0], 2)}
        for runner in runners:
            scores = evaluate(runner.model, task.test, task)  # the plain greedy loop: the baseline has no cache
            row[runner.name] = {
                "exact_match": scores["exact_match"],
                "bleu": scores["bleu"],
                "steps": len(runner.history.steps),
            }
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(
        f"\n{platform.processor() or platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} threads"
    )
    print(f"{'seconds':>7} | {'ours: exact match (steps)':>26} | {'nn.Transformer: exact match (steps)':>36} | load")
    for row in rows:
        a, b = row["ours"], row["nn.Transformer"]
        print(
            f"{row['seconds']:>7.0f} | {a['exact_match']:>17.1f}% ({a['steps']:>5}) | {b['exact_match']:>27.1f}% ({b['steps']:>5}) | {row['load']}"
        )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"params": params, "threads": torch.get_num_threads(), "rows": rows}, handle, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
