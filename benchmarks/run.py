"""Speed of our Transformer against ``torch.nn.Transformer``, measured side by side.

    python -m benchmarks.run                 # all sizes (a few minutes on a 2-core CPU)
    python -m benchmarks.run --sizes small   # one size, quicker

One process, interleaved: in every round each variant runs the same number of training steps
in turn (the order rotates), so a burst of load on a shared machine hits all variants alike;
the medians are compared. Measured in the same run: the machine's float32 matmul peak, the
FLOPs of one training step (counted by ``torch.utils.flop_counter``), greedy decoding
throughput, and peak memory (each variant in a fresh subprocess). Writes
``benchmarks/results.md`` and ``benchmarks/results.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from transformer_course import MultiHeadAttention, Transformer, TransformerConfig

from .reference import TorchTransformer

HERE = Path(__file__).resolve().parent
VOCAB, BATCH, LENGTH = 1000, 64, 32
SIZES = {  # name: (d_model, heads, d_ff, layers per stack)
    "small": (128, 4, 512, 2),
    "medium": (256, 4, 1024, 3),
    "base": (512, 8, 2048, 6),
}
VARIANTS = ("torch", "ours-fast", "ours-teaching")


def make_config(size: str, dropout: float = 0.1) -> TransformerConfig:
    d_model, heads, d_ff, layers = SIZES[size]
    return TransformerConfig(
        VOCAB, VOCAB, d_model=d_model, n_heads=heads, d_ff=d_ff, n_encoder_layers=layers,
        n_decoder_layers=layers, dropout=dropout, max_len=128,
    )  # fmt: skip


def make_model(variant: str, config: TransformerConfig, device: torch.device) -> torch.nn.Module:
    torch.manual_seed(0)
    if variant == "torch":
        return TorchTransformer(config).to(device)
    model = Transformer(config).to(device)
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.fast_path = variant == "ours-fast"
    return model


def make_batch(config: TransformerConfig, device: torch.device, batch: int = BATCH) -> tuple[torch.Tensor, ...]:
    """Random tokens with realistic padding: lengths between 3/4 of LENGTH and LENGTH."""
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, VOCAB, (batch, LENGTH), generator=g)
    tgt = torch.randint(4, VOCAB, (batch, LENGTH + 1), generator=g)
    for row in range(batch):
        src[row, torch.randint(3 * LENGTH // 4, LENGTH + 1, (1,), generator=g).item() :] = config.pad_id
        tgt[row, torch.randint(3 * LENGTH // 4, LENGTH + 1, (1,), generator=g).item() :] = config.pad_id
    return src.to(device), tgt[:, :-1].to(device), tgt[:, 1:].to(device)


def training_step(model, optimizer, batch, autocast_dtype=None) -> Callable[[], None]:
    src, tgt_in, tgt_out = batch

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(src.device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            logits = model(src, tgt_in)
            loss = F.cross_entropy(logits.flatten(0, 1).float(), tgt_out.flatten(), ignore_index=0)
        loss.backward()
        optimizer.step()

    return step


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(fn: Callable[[], None], device: torch.device, n: int) -> float:
    """Seconds per call, over n calls."""
    _sync(device)
    start = time.perf_counter()
    for _ in range(n):
        fn()
    _sync(device)
    return (time.perf_counter() - start) / n


def matmul_peak(device: torch.device, dtype=torch.float32, n: int = 2048, repeats: int = 7) -> float:
    """FLOP/s of a large square matmul: the practical ceiling for these models."""
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    a @ b
    times = [timed(lambda: a @ b, device, 3) for _ in range(repeats)]
    return 2 * n**3 / statistics.median(times)


def step_flops(config: TransformerConfig, device: torch.device) -> int:
    """FLOPs of one forward + backward pass (matmuls, counted on nn.Transformer; ours does the same)."""
    model = make_model("torch", config, device)
    batch = make_batch(config, device)
    counter = FlopCounterMode(display=False)
    with counter:
        logits = model(batch[0], batch[1])
        F.cross_entropy(logits.flatten(0, 1), batch[2].flatten(), ignore_index=0).backward()
    return counter.get_total_flops()


def interleaved(fns: dict[str, Callable[[], None]], device: torch.device, rounds: int, steps: int) -> dict:
    """Median seconds per call of each function, measured in rotating order."""
    for fn in fns.values():  # warm-up (allocator, lazy init, autotuning)
        timed(fn, device, 2)
    samples: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name].append(timed(fns[name], device, steps))
    return {name: statistics.median(s) for name, s in samples.items()}


def bench_training(size: str, device: torch.device, rounds: int, steps: int, autocast_dtype=None) -> dict:
    config = make_config(size)
    batch = make_batch(config, device)
    fns = {}
    for variant in VARIANTS:
        model = make_model(variant, config, device).train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        fns[variant] = training_step(model, optimizer, batch, autocast_dtype)
    seconds = interleaved(fns, device, rounds, steps)
    tokens = int((batch[2] != config.pad_id).sum())
    return {variant: {"seconds": s, "tokens_per_s": tokens / s} for variant, s in seconds.items()}


def bench_inference(size: str, device: torch.device, rounds: int, new_tokens: int = 32, batch: int = 32) -> dict:
    """Encoder + greedy decoding of ``new_tokens`` tokens. <eos> is made impossible in both
    models (output bias) so that every run decodes the same number of tokens."""
    from transformer_course.decoding import greedy_decode

    config = make_config(size, dropout=0.0)
    src = make_batch(config, device, batch)[0]
    ours, theirs = make_model("ours-fast", config, device).eval(), make_model("torch", config, device).eval()
    with torch.no_grad():
        for model in (ours, theirs):
            model.output.bias[config.eos_id] = -1e4
    fns = {
        "torch": lambda: theirs.greedy(src, new_tokens),
        "ours-cache": lambda: greedy_decode(ours, src, new_tokens),
    }
    with torch.inference_mode():
        seconds = interleaved(fns, device, rounds, 1)
    return {name: {"seconds": s, "tokens_per_s": batch * new_tokens / s} for name, s in seconds.items()}


_MEMORY_CHILD = """
import json, resource, sys, torch
from benchmarks.run import make_batch, make_config, make_model, training_step
size, variant, device = sys.argv[1], sys.argv[2], torch.device(sys.argv[3])
config = make_config(size)
model = make_model(variant, config, device).train()
step = training_step(model, torch.optim.AdamW(model.parameters(), lr=1e-4), make_batch(config, device))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for _ in range(3):
    step()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
cuda = torch.cuda.max_memory_allocated() if device.type == "cuda" else 0
print(json.dumps({"peak_rss_mb": peak / 1024, "training_rss_mb": (peak - before) / 1024, "cuda_mb": cuda / 2**20}))
"""


def bench_memory(size: str, device: torch.device) -> dict:
    results = {}
    for variant in VARIANTS:
        out = subprocess.run(
            [sys.executable, "-c", _MEMORY_CHILD, size, variant, str(device)],
            cwd=HERE.parent, capture_output=True, text=True, check=True,
        )  # fmt: skip
        results[variant] = json.loads(out.stdout.strip().splitlines()[-1])
    return results


def machine_description(device: torch.device) -> dict:
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
    }
    if hasattr(os, "getloadavg"):
        info["load_at_start"] = round(os.getloadavg()[0], 2)
    return info


def format_report(info: dict, peak: float, results: dict) -> str:
    lines = ["# Benchmark: our Transformer vs torch.nn.Transformer", ""]
    lines += ["Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), ""]
    lines += [f"float32 matmul peak measured in this run: {peak / 1e9:.0f} GFLOP/s", ""]
    lines += ["## Training (forward + backward + AdamW), batch 64, source/target length 32, vocabulary 1000", ""]
    lines += ["| size | variant | target tok/s | ms/step | ratio vs torch | % of matmul peak | peak RSS MB |"]
    lines += ["| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for size, r in results.items():
        base = r["training"]["torch"]["seconds"]
        for variant, t in r["training"].items():
            achieved = r["flops"] / t["seconds"]
            memory = r.get("memory", {}).get(variant, {}).get("peak_rss_mb", float("nan"))
            lines.append(
                f"| {size} | {variant} | {t['tokens_per_s']:,.0f} | {t['seconds'] * 1e3:.1f} | "
                f"{base / t['seconds']:.2f} | {100 * achieved / peak:.0f}% | {memory:.0f} |"
            )
    if any("inference" in r for r in results.values()):
        lines += ["", "## Inference: encoder + greedy decoding of 32 tokens, batch 32", ""]
        lines += ["| size | variant | generated tok/s | ratio vs torch |", "| --- | --- | ---: | ---: |"]
        for size, r in results.items():
            if "inference" not in r:
                continue
            base = r["inference"]["torch"]["seconds"]
            for variant, t in r["inference"].items():
                lines.append(f"| {size} | {variant} | {t['tokens_per_s']:,.0f} | {base / t['seconds']:.2f} |")
    lines += ["", "Ratio = torch's seconds / the variant's seconds (above 1: faster than nn.Transformer).", ""]
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = list(results)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.8 / len(VARIANTS)
    for i, variant in enumerate(VARIANTS):
        ratios = [results[s]["training"]["torch"]["seconds"] / results[s]["training"][variant]["seconds"] for s in sizes]
        ax.bar([x + i * width for x in range(len(sizes))], ratios, width, label=variant)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks([x + width for x in range(len(sizes))], sizes)
    ax.set_ylabel("speed relative to nn.Transformer")
    ax.set_title("Training throughput (higher is faster)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="small,medium,base", help="comma-separated: small, medium, base")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (the median is reported)")
    parser.add_argument("--steps", type=int, default=0, help="training steps per round (default: by size)")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory subprocesses")
    parser.add_argument("--no-inference", action="store_true", help="skip greedy decoding")
    parser.add_argument("--bf16", action="store_true", help="CUDA only: bf16 autocast")
    parser.add_argument("--out", type=Path, default=HERE / "results.md")
    args = parser.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sizes = [s.strip() for s in args.sizes.split(",")]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        parser.error(f"unknown size(s) {unknown}; choose from {list(SIZES)}")
    autocast_dtype = torch.bfloat16 if args.bf16 and device.type == "cuda" else None
    info = machine_description(device)
    peak = matmul_peak(device, torch.bfloat16 if autocast_dtype else torch.float32)
    print(f"matmul peak {peak / 1e9:.0f} GFLOP/s on {info['device']}", flush=True)
    results: dict[str, dict] = {}
    for size in sizes:
        steps = args.steps or {"small": 4, "medium": 2, "base": 1}[size]
        r = results[size] = {"flops": step_flops(make_config(size), device)}
        r["training"] = bench_training(size, device, args.rounds, steps, autocast_dtype)
        if not args.no_inference:
            r["inference"] = bench_inference(size, device, args.rounds)
        if not args.no_memory:
            r["memory"] = bench_memory(size, device)
        print(format_report(info, peak, {size: r}).split("## Training")[1], flush=True)
    if hasattr(os, "getloadavg"):
        info["load_at_end"] = round(os.getloadavg()[0], 2)
    report = format_report(info, peak, results)
    print(report)
    args.out.write_text(report + f"\n![training ratios]({args.out.with_suffix('.png').name})\n")
    plot(results, args.out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
