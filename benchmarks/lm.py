"""Chapter 13's measurements: the memory of attention, the size of the KV cache, generation with it.

    python -m benchmarks.lm                          # all three parts (≈ 2 minutes on a 2-core CPU)
    python -m benchmarks.lm --part memory --lengths 2048 4096
    python -m benchmarks.lm --part kv
    python -m benchmarks.lm --part generate --rounds 5
    python -m benchmarks.lm --part memory --device cuda   # on a GPU: torch.cuda.max_memory_allocated

* **memory**: the peak memory of one attention call, B=1, H=4, d=64, T=S, with a causal mask, for
  chapter 03's teaching path (the whole (B, H, T, S) matrix of weights), ``blocked_attention``
  (64 keys at a time, an online softmax) and PyTorch's fused kernel (with the same boolean mask,
  and with ``is_causal=True``). On the CPU three ways, which must agree: the tensors' peak
  (``transformer_course_tools.notebook.memory.peak_memory_mib``), the allocator's events seen by
  ``torch.profiler`` (``profile_memory=True``), and the resident memory of a fresh process per
  call (its peak, ``VmHWM``, reset through ``/proc/self/clear_refs`` just before the call, minus
  the resident memory then). On CUDA: ``torch.cuda.max_memory_allocated``.
* **kv**: the bytes of a :class:`~transformer_course.lm.DecoderOnlyLM`'s KV cache after a prompt,
  for Hkv = H, H/4 and 1 key/value heads: the formula 2 · layers · B · Hkv · L · Dk · bytes, and the
  cache's own tensors (the positions held, and the buffer with its spare room).
* **generate**: ``generate`` with and without the cache on a small model, one thread, CPU time
  (the load of other programs does not count), interleaved rounds, medians; ``<eos>`` is pushed
  down so that every run makes the same number of tokens.

Appends its tables to ``benchmarks/results.md`` (``--no-append``: only print them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from transformer_course.attention import scaled_dot_product_attention
from transformer_course.blocked import blocked_attention
from transformer_course.lm import DecoderOnlyConfig, DecoderOnlyLM, generate
from transformer_course_tools.notebook.memory import MIB, peak_memory_mib

from .decoding import interleaved
from .grading import machine

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.md"
HEADS, HEAD_DIM, BLOCK = 4, 64, 64
ATTENTION = ("teaching", "blocked", "fused, bool mask", "fused, is_causal")
KV_MODEL = dict(d_model=256, n_heads=8, n_layers=4)  # Dk = 32
KV_BATCH, KV_LENGTH = 4, 512


# -- memory of one attention call --------------------------------------------------------------------
def attention_inputs(length: int, device: torch.device) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, HEADS, length, HEAD_DIM, generator=generator).to(device) for _ in range(3))
    causal = torch.ones(length, length, dtype=torch.bool, device=device).tril()  # (T, S)
    return q, k, v, causal


def attention_call(name: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: torch.Tensor) -> Callable:
    """One attention variant as a function of no arguments (what the memory measurements call)."""
    calls = {
        "teaching": lambda: scaled_dot_product_attention(q, k, v, causal)[0],
        "blocked": lambda: blocked_attention(q, k, v, causal, BLOCK),
        "fused, bool mask": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=causal),
        "fused, is_causal": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    }
    return calls[name]


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 (the profiler's C++ library logs each start and stop there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _start_ns(event) -> int:
    """When a profiler event began, in ns: ``start_ns`` where PyTorch has it, else (PyTorch 2.3)
    ``start_us``, whose ties keep the profiler's order (sorted() is stable)."""
    return event.start_ns() if hasattr(event, "start_ns") else 1000 * event.start_us()


def profiler_peak_mib(fn: Callable[[], object]) -> float:
    """The peak of the CPU allocator's bytes while ``fn`` runs, from the profiler's memory events."""
    with quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"), key=_start_ns)
    live = peak = 0
    for event in events:
        live += event.nbytes()  # negative for a free
        peak = max(peak, live)
    return peak / MIB


def _kib(field: str) -> int:
    return int(re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M).group(1))


def rss_growth_child(name: str, length: int) -> None:
    """In a fresh process: the growth of resident memory during one call (printed as JSON)."""
    torch.set_num_threads(1)
    q, k, v, causal = attention_inputs(length, torch.device("cpu"))
    attention_call(name, *attention_inputs(64, torch.device("cpu")))()  # load the kernels at a small size
    Path("/proc/self/clear_refs").write_text("5")  # peak resident memory := resident memory now
    before = _kib("VmRSS")
    attention_call(name, q, k, v, causal)()
    print(json.dumps({"growth_mib": (_kib("VmHWM") - before) / 1024}))


def rss_growth_mib(name: str, length: int) -> float:
    if not Path("/proc/self/clear_refs").exists():
        return math.nan  # Linux only
    command = [sys.executable, "-m", "benchmarks.lm", "--child", name, str(length)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(command, check=True, capture_output=True, text=True, cwd=HERE.parent, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])["growth_mib"]


def memory_part(lengths: list[int], device: torch.device) -> list[str]:
    cpu = device.type == "cpu"
    lines = [
        f"### Peak memory of one attention call (B=1, H={HEADS}, d={HEAD_DIM}, T=S, causal mask; {device.type})",
        "",
        "| T=S | (B, H, T, S) float32 MiB | variant | tensors' peak MiB | allocator (profiler) MiB "
        "| fresh process, RSS growth MiB | teaching / variant |",
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]  # fmt: skip
    for length in lengths:
        q, k, v, causal = attention_inputs(length, device)
        expected = attention_call("teaching", q, k, v, causal)()
        matrix = HEADS * length * length * 4 / MIB
        peaks = {}
        for name in ATTENTION:
            fn = attention_call(name, q, k, v, causal)
            error = (fn() - expected).abs().max().item()
            assert error < 1e-4, f"{name} differs from the teaching path by {error}"
            peaks[name] = peak_memory_mib(fn, device)
            profiled = f"{profiler_peak_mib(fn):.1f}" if cpu else "–"
            rss = f"{rss_growth_mib(name, length):.1f}" if cpu else "–"
            lines.append(
                f"| {length} | {matrix:.0f} | {name} | {peaks[name]:.1f} | {profiled} | {rss} "
                f"| **{peaks['teaching'] / peaks[name]:.1f}×** |"
            )
    lines += [
        "",
        "Tensors' peak: `peak_memory_mib` (`transformer_course_tools/notebook/memory.py`), the most bytes the tensors "
        "created by the call held at once (on CUDA: `torch.cuda.max_memory_allocated` minus the memory allocated "
        "before). Allocator: the same peak from `torch.profiler`'s memory events, which also see a kernel's "
        "scratch memory. RSS growth: a fresh process per cell, peak resident memory (VmHWM, reset just before the "
        "call) minus the resident memory then. The inputs (q, k, v and the (T, S) mask) exist before the call "
        "and are not counted; blocked attention was checked equal to the teaching path (max difference < 1e-4).",
        "",
    ]  # fmt: skip
    return lines


# -- the KV cache -------------------------------------------------------------------------------------
def kv_part() -> list[str]:
    heads, d_k = KV_MODEL["n_heads"], KV_MODEL["d_model"] // KV_MODEL["n_heads"]
    lines = [
        f"### KV cache after a prompt of {KV_LENGTH} tokens (batch {KV_BATCH}; D={KV_MODEL['d_model']}, "
        f"H={heads}, Dk={d_k}, {KV_MODEL['n_layers']} layers, float32)",
        "",
        "| Hkv | formula MiB | measured: positions held MiB | measured: buffers with spare room MiB "
        "| smaller than Hkv = H by | attention parameters of one block |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]  # fmt: skip
    held_full = None
    for kv in (heads, heads // 4, 1):
        torch.manual_seed(0)
        config = DecoderOnlyConfig.modern(1000, n_kv_heads=kv, max_len=KV_LENGTH, **KV_MODEL)
        model = DecoderOnlyLM(config).eval()
        cache = model.new_cache()
        with torch.no_grad():
            model(torch.randint(3, 1000, (KV_BATCH, KV_LENGTH)), cache)
        formula = 2 * KV_MODEL["n_layers"] * KV_BATCH * kv * KV_LENGTH * d_k * 4
        held = sum(c.keys.nbytes + c.values.nbytes for c in cache)
        allocated = sum(c._both.buffer.untyped_storage().nbytes() for c in cache)
        assert held == formula, (held, formula)
        held_full = held_full or held
        attention = sum(p.numel() for p in model.layers[0].self_attn.parameters())
        lines.append(
            f"| {kv} | {formula / MIB:.1f} | {held / MIB:.1f} | {allocated / MIB:.1f} | **{held_full / held:.0f}×** "
            f"| {attention:,} |"
        )
    lines += [
        "",
        "Formula: 2 (keys and values) · layers · B · Hkv · L · Dk · 4 bytes. Positions held: the `keys` and "
        "`values` of every layer's `KVCache` (equal to the formula, checked). Buffers: the storage behind them, "
        "which doubles when full (room for later tokens without a copy). Attention parameters: one block's "
        "W^Q, W^K, W^V, W^O with biases. For scale: a 70B-parameter model with 80 layers, 64 query heads, "
        "8 key/value heads of 128 features in 16-bit numbers holds 2 · 80 · 8 · 128 · 2 bytes = 320 KiB per token "
        "(2.5 MiB with 64 key/value heads): 1.25 GiB for one text of 4096 tokens.",
        "",
    ]  # fmt: skip
    return lines


# -- generation with and without the cache ---------------------------------------------------------------
def _no_eos(model: DecoderOnlyLM) -> None:
    """Push ``<eos>`` down (a hook on the output layer) so every run makes all its tokens."""
    eos = model.config.eos_id

    def push(module: torch.nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor:
        return out.index_fill(-1, torch.tensor([eos]), -1e4)

    model.output.register_forward_hook(push)


def time_generation(config: DecoderOnlyConfig, prompt: torch.Tensor, new: int, rounds: int) -> str:
    """One row of the table: ``generate`` with and without the cache, timed in interleaved rounds."""
    torch.manual_seed(0)
    model = DecoderOnlyLM(config).eval()
    _no_eos(model)
    cached, uncached = generate(model, prompt, new), generate(model, prompt, new, use_cache=False)
    assert cached.shape == (prompt.shape[0], prompt.shape[1] + new)
    fns = {"cache": lambda: generate(model, prompt, new), "none": lambda: generate(model, prompt, new, False)}
    times = interleaved(fns, torch.device("cpu"), rounds, time.process_time)
    med = {name: statistics.median(t) for name, t in times.items()}
    return (
        f"{1000 * med['cache']:.0f} | {1000 * med['none']:.0f} | **{med['none'] / med['cache']:.1f}×** "
        f"| {min(times['none']) / min(times['cache']):.1f}× | {'yes' if torch.equal(cached, uncached) else 'NO'}"
    )


def generate_part(rounds: int, batch: int = 8, prompt_length: int = 16, new: int = 112) -> list[str]:
    torch.set_num_threads(1)
    models = {
        "2017 (post-LN, LayerNorm, sinusoids, ReLU)": DecoderOnlyConfig(
            1000, d_model=128, n_heads=4, n_layers=2, d_ff=512, max_len=prompt_length + new, dropout=0.0
        ),
        "modern (pre-LN, RMSNorm, RoPE, SwiGLU), Hkv=1": DecoderOnlyConfig.modern(
            1000, d_model=128, n_heads=4, n_kv_heads=1, n_layers=2, max_len=prompt_length + new
        ),
    }
    lines = [
        f"### `generate` with and without the KV cache (batch {batch}, prompt {prompt_length}, {new} new tokens, "
        "vocabulary 1000, D=128, H=4, 2 layers; one thread, CPU time, "
        f"{rounds} interleaved rounds, medians)",
        "",
        "| model | KV cache ms | no cache ms | speed-up (medians) | speed-up (minima) | same tokens |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    prompt = torch.randint(3, 1000, (batch, prompt_length), generator=torch.Generator().manual_seed(1))  # (B, T)
    for label, config in models.items():
        lines.append(f"| {label} | " + time_generation(config, prompt, new, rounds) + " |")
    lines += ["", "Speed-up = the seconds without the cache / with it (above 1: the cache is faster).", ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("memory", "kv", "generate", "all"), default="all")
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096], help="T = S of the memory part")
    parser.add_argument("--device", default="cpu", help="memory part: cpu or cuda")
    parser.add_argument("--rounds", type=int, default=5, help="generate part: interleaved rounds")
    parser.add_argument("--no-append", action="store_true", help=f"do not append the tables to {RESULTS.name}")
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "LENGTH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        rss_growth_child(args.child[0], int(args.child[1]))
        return 0
    about = machine()
    lines = [
        f"## Chapter 13: attention memory, KV cache, generation (`python -m benchmarks.lm`, {time.strftime('%Y-%m-%d')})",
        "",
    ]
    lines += [f"Machine: {about}", ""]
    if args.part in ("memory", "all"):
        lines += memory_part(args.lengths, torch.device(args.device))
    if args.part in ("kv", "all"):
        lines += kv_part()
    if args.part in ("generate", "all"):
        lines += generate_part(args.rounds)
    lines += [f"Load average at end {os.getloadavg()[0]:.2f}.", ""]
    print("\n".join(lines))
    if not args.no_append:
        with open(RESULTS, "a", encoding="utf-8") as handle:
            handle.write("\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
