"""Speed of our Transformer against ``torch.nn.Transformer``, measured side by side.

    python -m benchmarks.run                          # all three sizes (≈ 10 minutes on a 2-core CPU)
    python -m benchmarks.run --sizes small --rounds 3 # one size, quicker
    python -m benchmarks.run --compile                # add torch.compile'd ours (compile time reported)
    python -m benchmarks.run --bf16                   # on CUDA: bf16 autocast

What is measured, all in one process:

* **training** (forward + backward + AdamW step, batch 64, source and target length 32 with
  some padding, vocabulary 1000, dropout 0.1) of ``nn.Transformer`` (``torch``), ours on the
  fast path (``ours-fast``: ``F.scaled_dot_product_attention``) and ours on the teaching path
  (``ours-teaching``: matmul + softmax written out), same initialisation scheme, same batch;
* the machine's matmul peak (a 2048×2048 matmul), measured as one more entry of the same
  interleaved rounds, so that "% of peak" compares two numbers taken under the same load;
* **inference**: encoding + greedy decoding of 32 tokens for a batch of 32: ours with its KV
  cache, ours recomputing the prefix, and ``nn.Transformer`` (which can only recompute);
* **memory** of training, each variant in a fresh subprocess: peak RSS of the process and its
  growth during the training steps on CPU, ``torch.cuda.max_memory_allocated`` on CUDA.

Noise: in every round each entry runs in turn (the order rotates), so a burst of load from
other processes hits every entry alike; the ratios are given from the medians over the rounds
and from the minima. The report states the load average at the start and at the end. On a
machine shared with other processes, two PyTorch threads on two cores slow down by up to 10×
whenever another process takes a core, so take such numbers as ratios only; ``--threads 1
--clock cpu`` (CPU time of one thread) is the most load-proof setting, and ``--append TITLE``
adds such a run below the first in the same report.

Writes ``benchmarks/results.md`` (tables, machine, versions) and ``benchmarks/results.png``
(``results-cuda[-bf16].md`` on a GPU); ``--json`` keeps the raw numbers, ``--report-from``
rewrites a report from them.
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
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from transformer_course import MultiHeadAttention, Transformer, TransformerConfig

from .reference import TorchTransformer, ours_with_the_same_weights

HERE = Path(__file__).resolve().parent
VOCAB, BATCH, LENGTH = 1000, 64, 32
DECODE_BATCH, DECODE_TOKENS = 32, 32
SIZES = {  # name: (d_model, heads, d_ff, layers per stack)
    "small": (128, 4, 512, 2),
    "medium": (256, 4, 1024, 3),
    "base": (512, 8, 2048, 6),
}
STEPS = {"small": 4, "medium": 2, "base": 1}  # training steps per entry and round on a CPU (≈ 1 s each)
CUDA_STEPS = {"small": 20, "medium": 20, "base": 10}
VARIANTS = ("torch", "ours-fast", "ours-teaching")
COMPILED = "ours-compiled"
PEAK = "matmul-peak"
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


# -- the models and the data ----------------------------------------------------------------------
def make_config(size: str, dropout: float = 0.1) -> TransformerConfig:
    d_model, heads, d_ff, layers = SIZES[size]
    return TransformerConfig(
        VOCAB, VOCAB, d_model=d_model, n_heads=heads, d_ff=d_ff, n_encoder_layers=layers,
        n_decoder_layers=layers, dropout=dropout, max_len=128,
    )  # fmt: skip


def make_model(variant: str, config: TransformerConfig, device: torch.device) -> torch.nn.Module:
    """``torch``: nn.Transformer in the same wrapper as ours; ``ours-fast`` / ``ours-compiled``:
    ours on the fast path (the default); ``ours-teaching``: every attention on the teaching path."""
    torch.manual_seed(0)
    if variant == "torch":
        return TorchTransformer(config).to(device)
    model = Transformer(config).to(device)
    if variant == "ours-teaching":
        attention_path(model, fast=False)
    return model


def attention_path(model: torch.nn.Module, fast: bool) -> list:
    """Pass ``fast`` to every attention of ``model`` (the path is an argument of each call):
    a forward pre-hook per module; returns the hooks' handles (``handle.remove()`` undoes it)."""

    def with_path(module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        return args, {**kwargs, "fast": fast}

    return [
        module.register_forward_pre_hook(with_path, with_kwargs=True)
        for module in model.modules()
        if isinstance(module, MultiHeadAttention)
    ]


def make_batch(config: TransformerConfig, device: torch.device, batch: int = BATCH) -> tuple[torch.Tensor, ...]:
    """Random tokens with realistic padding at the end: lengths between 3/4 of LENGTH and LENGTH.

    Returns ``(src (B, S), tgt_in (B, T), tgt_out (B, T))``, the target shifted by one."""
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, VOCAB, (batch, LENGTH), generator=g)
    tgt = torch.randint(4, VOCAB, (batch, LENGTH + 1), generator=g)
    tgt[:, 0] = config.bos_id
    for row in range(batch):
        src[row, torch.randint(3 * LENGTH // 4, LENGTH + 1, (1,), generator=g).item() :] = config.pad_id
        tgt[row, torch.randint(3 * LENGTH // 4, LENGTH + 1, (1,), generator=g).item() + 1 :] = config.pad_id
    return src.to(device), tgt[:, :-1].to(device), tgt[:, 1:].to(device)


def make_optimizer(model: torch.nn.Module) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=1e-4)


def training_step(model, optimizer, batch, autocast_dtype=None) -> Callable[[], None]:
    """One optimisation step on ``batch``: the loss ignores padded target positions."""
    src, tgt_in, tgt_out = batch

    def step() -> None:
        optimizer.zero_grad()  # (sets gradients to None)
        with torch.autocast(src.device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            logits = model(src, tgt_in)
            loss = F.cross_entropy(logits.flatten(0, 1).float(), tgt_out.flatten(), ignore_index=0)
        loss.backward()
        optimizer.step()

    return step


@torch.no_grad()
def same_function_error(size: str, device: torch.device) -> float:
    """Largest difference between the logits of nn.Transformer and ours given its weights (both
    attention paths, real target positions): the two variants are one model."""
    config = make_config(size, dropout=0.0)
    theirs = make_model("torch", config, device).eval()
    ours = ours_with_the_same_weights(theirs).eval()
    src, tgt_in, _ = make_batch(config, device, batch=8)
    want, real = theirs(src, tgt_in), tgt_in != config.pad_id
    errors = []
    for fast in (True, False):
        handles = attention_path(ours, fast)
        errors.append((ours(src, tgt_in) - want)[real].abs().max().item())
        for handle in handles:
            handle.remove()
    return max(errors)


# -- timing -----------------------------------------------------------------------------------------
def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(
    fn: Callable[[], object], device: torch.device, n: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Seconds per call, over n calls."""
    _sync(device)
    start = clock()
    for _ in range(n):
        fn()
    _sync(device)
    return (clock() - start) / n


def interleaved(fns: dict[str, tuple[Callable[[], object], int]], device: torch.device, rounds: int, clock) -> dict:
    """Median seconds per call of each ``name: (function, calls per round)``, in rotating order."""
    for fn, _ in fns.values():  # warm-up (allocator, lazy initialisation, autotuning)
        timed(fn, device, 2)
    samples: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            fn, n = fns[name]
            samples[name].append(timed(fn, device, n, clock))
    return {name: {"seconds": statistics.median(s), "spread": (min(s), max(s))} for name, s in samples.items()}


def matmul(device: torch.device, dtype: torch.dtype) -> tuple[Callable[[], object], float]:
    """A large square matmul (the practical ceiling for these models) and its FLOPs."""
    n = 8192 if device.type == "cuda" else 2048
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    return (lambda: a @ b), 2.0 * n**3


def step_flops(config: TransformerConfig, device: torch.device) -> int:
    """FLOPs of one forward + backward pass (matmuls, counted by PyTorch on nn.Transformer)."""
    model = make_model("torch", config, device)
    batch = make_batch(config, device)
    counter = FlopCounterMode(display=False)
    with counter:
        logits = model(batch[0], batch[1])
        F.cross_entropy(logits.flatten(0, 1), batch[2].flatten(), ignore_index=0).backward()
    return counter.get_total_flops()


def saved_activation_bytes(model: torch.nn.Module, batch: tuple[torch.Tensor, ...], autocast_dtype=None) -> int:
    """Bytes of the tensors autograd keeps for the backward pass of one step, parameters excluded:
    the activation memory, counted exactly (independent of the load and of the allocator)."""
    src, tgt_in, tgt_out = batch
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    kept: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            kept[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        with torch.autocast(src.device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
            logits = model(src, tgt_in)
            F.cross_entropy(logits.flatten(0, 1).float(), tgt_out.flatten(), ignore_index=0)
    return sum(kept.values())


# -- the three measurements --------------------------------------------------------------------------
def compile_model(model: torch.nn.Module) -> None:
    """``torch.compile`` the encoder and decoder stacks in place (where the compute is; the
    embeddings and the input checks, which read token ids on the host, stay eager)."""
    model.encoder.compile()
    model.decoder.compile()


def first_step_seconds(step: Callable[[], None], device: torch.device) -> float:
    """Seconds of one step (after compile_model: the step that compiles)."""
    start = time.perf_counter()
    step()
    _sync(device)
    return time.perf_counter() - start


def bench_training(size: str, device: torch.device, args, autocast_dtype=None) -> dict:
    config = make_config(size)
    batch = make_batch(config, device)
    steps = args.steps or (CUDA_STEPS if device.type == "cuda" else STEPS)[size]
    dtype = autocast_dtype or torch.float32
    peak_fn, peak_flops = matmul(device, dtype)
    fns: dict[str, tuple[Callable[[], object], int]] = {PEAK: (peak_fn, 3 * steps)}
    compile_seconds, saved = None, {}
    for variant in args.variants:
        model = make_model(variant, config, device).train()
        # (not for the compiled model: its saved tensors are chosen by the compiler, out of the hooks' sight)
        saved[variant] = None if variant == COMPILED else saved_activation_bytes(model, batch, autocast_dtype)
        fns[variant] = (training_step(model, make_optimizer(model), batch, autocast_dtype), steps)
        if variant == COMPILED:
            compile_model(model)
            compile_seconds = first_step_seconds(fns[variant][0], device)
    times = interleaved(fns, device, args.rounds, CLOCKS[args.clock])
    peak = peak_flops / times.pop(PEAK)["seconds"]
    tokens = int((batch[2] != config.pad_id).sum())
    flops = step_flops(config, device)
    result = {
        "same_function_error": same_function_error(size, device),
        "peak_flops": peak,
        "step_flops": flops,
        "target_tokens": tokens,
        "variants": {},
    }
    for variant, t in times.items():
        result["variants"][variant] = {
            **t,
            "tokens_per_s": tokens / t["seconds"],
            "peak_fraction": flops / t["seconds"] / peak,
            "saved_mb": None if saved[variant] is None else saved[variant] / 2**20,
        }
    if compile_seconds is not None:
        result["compile_seconds"] = compile_seconds
    return result


def bench_inference(size: str, device: torch.device, args) -> dict:
    """Encoder + greedy decoding of DECODE_TOKENS tokens. ``<eos>`` is made impossible in both
    models (its output bias) so that every run decodes the same number of tokens."""
    from transformer_course.decoding import greedy_decode

    config = make_config(size, dropout=0.0)
    src = make_batch(config, device, DECODE_BATCH)[0]
    ours, theirs = make_model("ours-fast", config, device).eval(), make_model("torch", config, device).eval()
    with torch.no_grad():
        for model in (ours, theirs):
            model.output.bias[config.eos_id] = -1e4
    fns = {
        "torch": (lambda: theirs.greedy(src, DECODE_TOKENS), 1),
        "ours-cache": (lambda: greedy_decode(ours, src, DECODE_TOKENS, use_cache=True), 1),
        "ours-no-cache": (lambda: greedy_decode(ours, src, DECODE_TOKENS, use_cache=False), 1),
    }
    with torch.inference_mode():
        lengths = {name: fn().shape[1] for name, (fn, _) in fns.items()}
        if set(lengths.values()) != {DECODE_TOKENS}:
            raise RuntimeError(f"every variant must decode {DECODE_TOKENS} tokens, got {lengths}")
        times = interleaved(fns, device, args.rounds, CLOCKS[args.clock])
    return {name: {**t, "tokens_per_s": DECODE_BATCH * DECODE_TOKENS / t["seconds"]} for name, t in times.items()}


_MEMORY_CHILD = """
import json, sys, torch
from benchmarks.run import make_batch, make_config, make_model, make_optimizer, training_step
size, variant, device, bf16, threads = sys.argv[1], sys.argv[2], torch.device(sys.argv[3]), sys.argv[4] == "1", int(sys.argv[5])
torch.set_num_threads(threads)
def rss_mb(field):  # VmRSS: now; VmHWM: the peak so far (Linux)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field)) / 1024
config = make_config(size)
model = make_model(variant, config, device).train()
step = training_step(model, make_optimizer(model), make_batch(config, device), torch.bfloat16 if bf16 else None)
if variant == "ours-compiled":
    model.encoder.compile(); model.decoder.compile()
before = rss_mb("VmRSS:")
for _ in range(3):
    step()
cuda = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else None
print(json.dumps({"peak_rss_mb": rss_mb("VmHWM:"), "rss_growth_mb": rss_mb("VmHWM:") - before, "cuda_mb": cuda}))
"""


def bench_memory(size: str, device: torch.device, args, bf16: bool) -> dict:
    """Training memory of each variant, in a fresh process each (peak RSS can only grow)."""
    results = {}
    for variant in args.variants:
        out = subprocess.run(
            [sys.executable, "-c", _MEMORY_CHILD, size, variant, str(device), str(int(bf16)), str(torch.get_num_threads())],
            cwd=HERE.parent, capture_output=True, text=True,
        )  # fmt: skip
        if out.returncode:
            print(f"memory measurement of {variant} failed:\n{out.stderr[-2000:]}", file=sys.stderr)
            continue
        results[variant] = json.loads(out.stdout.strip().splitlines()[-1])
    return results


# -- the report ----------------------------------------------------------------------------------------
def machine_description(device: torch.device, args) -> dict:
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu": _cpu_name(),
        "cores": os.cpu_count(),
        "torch threads": torch.get_num_threads(),
        "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
        "clock": args.clock,
        "rounds": args.rounds,
    }
    if device.type == "cuda":
        info["cuda"] = torch.version.cuda
    if hasattr(os, "getloadavg"):
        info["load average at start"] = round(os.getloadavg()[0], 2)
    return info


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def format_report(info: dict, results: dict, autocast: str) -> str:
    lines = ["# Benchmark: our Transformer vs torch.nn.Transformer", ""]
    lines += ["Machine: " + "; ".join(f"{k} {v}" for k, v in info.items()), ""]
    lines += [
        f"## Training ({autocast}): forward + backward + AdamW, batch {BATCH}, source/target length {LENGTH}, "
        f"vocabulary {VOCAB}, dropout 0.1",
        "",
        "| size | variant | target tok/s | ms/step, median (min–max) | ratio vs torch (medians) | "
        "ratio vs torch (minima) | % of matmul peak |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size, r in results.items():
        t = r["training"]["variants"]
        for variant, v in t.items():
            lines.append(
                f"| {size} | {variant} | {v['tokens_per_s']:,.0f} | {_ms(v)} | **{_ratio(t, variant)}** | "
                f"{_ratio(t, variant, 0)} | {100 * v['peak_fraction']:.0f}% |"
            )
    lines += [""]
    for size, r in results.items():
        t = r["training"]
        note = f"; first compiled step (compilation) {t['compile_seconds']:.0f} s" if "compile_seconds" in t else ""
        lines.append(
            f"- {size}: matmul peak in this run {t['peak_flops'] / 1e9:.0f} GFLOP/s; one step = "
            f"{t['step_flops'] / 1e9:.1f} GFLOP (matmuls, counted on nn.Transformer); ours with nn.Transformer's "
            f"weights gives the same logits (largest difference {t['same_function_error']:.1e}){note}"
        )
    if any("memory" in r for r in results.values()):
        lines += _memory_table(results)
    if any("inference" in r for r in results.values()):
        lines += [
            "",
            f"## Inference: encoder + greedy decoding of {DECODE_TOKENS} tokens, batch {DECODE_BATCH}",
            "",
            "| size | variant | generated tok/s | ms per batch, median (min–max) | ratio vs torch (medians) | "
            "ratio vs torch (minima) |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for size, r in results.items():
            if "inference" not in r:
                continue
            t = r["inference"]
            for variant, v in t.items():
                lines.append(
                    f"| {size} | {variant} | {v['tokens_per_s']:,.0f} | {_ms(v)} | **{_ratio(t, variant)}** | "
                    f"{_ratio(t, variant, 0)} |"
                )
        lines += [
            "",
            "torch: nn.Transformer re-runs the decoder on the whole prefix at every step (its only option); "
            "ours-cache: our KV cache (chapter 09); ours-no-cache: ours re-running the prefix like torch.",
        ]
    lines += [
        "",
        "Ratio = nn.Transformer's seconds / the variant's seconds (above 1: faster than nn.Transformer), from "
        "the medians over the interleaved rounds and, less sensitive to bursts of load from other processes, "
        "from the minima. % of matmul peak = the step's matmul FLOPs / its median time / the FLOP/s of a large "
        "square matmul (2048² on CPU, 8192² on CUDA) measured in the same rounds: the model FLOP utilisation "
        "(MFU) against what this machine really reaches.",
        "",
    ]
    return "\n".join(lines)


def _memory_table(results: dict) -> list[str]:
    lines = [
        "",
        "## Training memory",
        "",
        "| size | variant | saved for backward MB | peak RSS MB | RSS growth in 3 steps MB | CUDA max allocated MB |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for size, r in results.items():
        for variant, v in r["training"]["variants"].items():
            mem = r.get("memory", {}).get(variant, {})
            lines.append(
                f"| {size} | {variant} | {_mb(v['saved_mb'])} | {_mb(mem.get('peak_rss_mb'))} | "
                f"{_mb(mem.get('rss_growth_mb'))} | {_mb(mem.get('cuda_mb'))} |"
            )
    lines += [
        "",
        "Saved for backward: the tensors autograd keeps between the forward and the backward pass "
        "(activations, parameters excluded), counted exactly. Peak RSS: the whole process (Python, PyTorch "
        "and its libraries ≈ 350 MB before the model exists), each variant in a fresh process; RSS growth: "
        "from just before the first training step to the peak of three steps (activations, gradients, AdamW "
        "state, allocator and thread buffers).",
    ]
    return lines


def _ms(v: dict) -> str:
    low, high = v["spread"]
    return f"{v['seconds'] * 1e3:.0f} ({low * 1e3:.0f}–{high * 1e3:.0f})"


def _ratio(table: dict, variant: str, which: int | None = None) -> str:
    """torch's time / the variant's: medians (``which=None``) or minima (``which=0``)."""
    if which is None:
        return f"{table['torch']['seconds'] / table[variant]['seconds']:.2f}"
    return f"{table['torch']['spread'][which] / table[variant]['spread'][which]:.2f}"


def _mb(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def plot(results: dict, path: Path, title: str) -> None:
    """Bars: ratio of medians; dots: ratio of minima (left: training, right: greedy decoding)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    panels = [("training", "Training throughput"), ("inference", f"Greedy decoding of {DECODE_TOKENS} tokens")]
    for ax, (part, panel_title) in zip(axes, panels, strict=True):
        sizes = [s for s in results if part in results[s]]
        if not sizes:
            ax.axis("off")
            continue
        table = {s: results[s][part]["variants"] if part == "training" else results[s][part] for s in sizes}
        names = list(table[sizes[0]])
        width = 0.8 / len(names)
        for i, name in enumerate(names):
            xs = [x + i * width for x in range(len(sizes))]
            medians = [table[s]["torch"]["seconds"] / table[s][name]["seconds"] for s in sizes]
            minima = [table[s]["torch"]["spread"][0] / table[s][name]["spread"][0] for s in sizes]
            bars = ax.bar(xs, medians, width, label=name)
            ax.bar_label(bars, fmt="%.2f", fontsize=7)
            ax.plot(xs, minima, "k.", ms=4)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(sizes))], sizes)
        ax.set_ylabel("speed relative to nn.Transformer")
        ax.set_title(f"{panel_title} (higher is faster)", fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="small,medium,base", help="comma-separated: small, medium, base")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (the median is reported)")
    parser.add_argument("--steps", type=int, default=0, help="training steps per entry and round (default: by size)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: PyTorch's choice)")
    parser.add_argument("--clock", choices=list(CLOCKS), default="wall", help="wall time, or CPU time of the process")
    parser.add_argument("--compile", action="store_true", help="add ours under torch.compile (ours-compiled)")
    parser.add_argument("--no-teaching", action="store_true", help="skip the teaching path")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory subprocesses")
    parser.add_argument("--no-inference", action="store_true", help="skip greedy decoding")
    parser.add_argument("--bf16", action="store_true", help="CUDA only: bf16 autocast (peak = bf16 matmul)")
    parser.add_argument("--out", type=Path, default=None, help="default: results.md (CPU), results-cuda[-bf16].md")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw numbers to this file")
    parser.add_argument("--append", metavar="TITLE", help="add this run to --out under TITLE (no plot)")
    parser.add_argument("--report-from", type=Path, metavar="JSON", help="no measuring: report a --json file")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sizes = [s.strip() for s in args.sizes.split(",")]
    if unknown := [s for s in sizes if s not in SIZES]:
        parser.error(f"unknown size(s) {unknown}; choose from {list(SIZES)}")
    if args.bf16 and device.type != "cuda":
        parser.error("--bf16 needs CUDA")
    args.variants = [v for v in VARIANTS if not (args.no_teaching and v == "ours-teaching")]
    args.variants += [COMPILED] if args.compile else []
    if args.out is None:
        args.out = HERE / ("results.md" if device.type == "cpu" else f"results-cuda{'-bf16' if args.bf16 else ''}.md")
    warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")  # nn.Transformer at eval
    autocast_dtype = torch.bfloat16 if args.bf16 else None
    autocast = "bf16 autocast" if args.bf16 else "float32"
    if args.report_from:
        saved = json.loads(args.report_from.read_text())
        return write_report(saved["machine"], saved["results"], saved["machine"].get("precision", autocast), args)
    info = machine_description(device, args) | {"precision": autocast}
    print("; ".join(f"{k} {v}" for k, v in info.items()), flush=True)
    results: dict[str, dict] = {}
    for size in sizes:
        r = results[size] = {"training": bench_training(size, device, args, autocast_dtype)}
        if not args.no_inference:
            r["inference"] = bench_inference(size, device, args)
        if not args.no_memory:
            r["memory"] = bench_memory(size, device, args, args.bf16)
        print(format_report({}, {size: r}, autocast).split("\n", 4)[4], flush=True)
    if hasattr(os, "getloadavg"):
        info["load average at end"] = round(os.getloadavg()[0], 2)
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "results": results}, indent=1))
    return write_report(info, results, autocast, args)


def write_report(info: dict, results: dict, autocast: str, args) -> int:
    report = format_report(info, results, autocast)
    print(report)
    if args.append:  # a second run (e.g. --threads 1 --clock cpu) below the first, headings one level down
        section = report.replace("\n## ", "\n### ").replace("# Benchmark: our Transformer vs torch.nn.Transformer", "")
        args.out.write_text(args.out.read_text() + f"\n## {args.append}\n{section}")
    else:
        args.out.write_text(report + f"\n![training and decoding speed ratios]({args.out.with_suffix('.png').name})\n")
        title = f"{info['device']} ({info['cpu']}), {autocast}; bars: medians, dots: minima"
        plot(results, args.out.with_suffix(".png"), title)
    return 0


if __name__ == "__main__":
    sys.exit(main())
