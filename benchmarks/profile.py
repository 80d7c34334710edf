"""Where the time of one training step goes: ``torch.profiler`` tables, ours against nn.Transformer.

    python -m benchmarks.profile                       # size "small", all variants
    python -m benchmarks.profile --size medium --variants torch,ours-fast --rows 15

Profile before optimising: the table shows which operators take the time (matmuls, the
attention kernel, softmax, masking, copies, LayerNorm, the optimizer), so that a change is
aimed at a real cost. Each variant runs a few warm-up steps, then ``--steps`` profiled steps;
the rows are sorted by self CPU time (self CUDA time on a GPU).
"""

from __future__ import annotations

import argparse

import torch
from torch.profiler import ProfilerActivity, profile

from .run import SIZES, VARIANTS, make_batch, make_config, make_model, make_optimizer, training_step


def profile_variant(variant: str, size: str, device: torch.device, steps: int, rows: int) -> str:
    config = make_config(size)
    model = make_model(variant, config, device).train()
    step = training_step(model, make_optimizer(model), make_batch(config, device))
    for _ in range(3):  # warm-up: allocator, lazy initialisation, (compilation)
        step()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            step()
    sort_by = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=rows, max_name_column_width=48)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="small", choices=list(SIZES))
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument(
        "--threads", type=int, default=0, help="torch threads (1 gives the steadiest table on a busy machine)"
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    for variant in args.variants.split(","):
        print(f"\n=== {variant}, size {args.size}, {args.steps} training steps on {device} ===")
        print(profile_variant(variant.strip(), args.size, device, args.steps, args.rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
