"""Speed of decoding: greedy with and without the KV cache, and beam search (4) against greedy.

    python -m benchmarks.decoding                    # batch 32, 64 new tokens, a "medium" model
    python -m benchmarks.decoding --size small --rounds 3
    python -m benchmarks.decoding --threads 1        # steadier on a CPU shared with other programs
    python -m benchmarks.decoding --size small --ops # and ATen operations per decoder layer per token

Every variant generates exactly ``--tokens`` tokens (the ``<eos>`` logit is pushed down so no
sentence stops early) for the same random batch. The variants run interleaved, round after
round, so that a burst of load on a shared machine hits them alike; medians are compared.
Prints one line per variant and the ratios; ``--json`` writes them to a file as well.

``--ops`` also counts the ATen operations of one cached greedy step (every call that reaches
PyTorch's dispatcher, seen by a ``TorchDispatchMode``): ``ops(T + 1 tokens) - ops(T tokens)``, so
that the encoder, the set-up and the read before the loop cancel out, divided by the number of
decoder layers. ``tests/test_decoding_ops.py`` holds it at 45 or fewer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import torch

from transformer_course import Transformer, TransformerConfig
from transformer_course.decoding import beam_search, greedy_decode
from transformer_course_tools.engine import ENGINE
from transformer_course_tools.notebook.operations import CountOps

SIZES = {  # name: (d_model, heads, d_ff, layers per stack)
    "small": (128, 4, 512, 2),
    "medium": (256, 4, 1024, 3),
    "base": (512, 8, 2048, 6),
}
VOCAB, SRC_LEN = 1000, 32


def make_model(size: str, device: torch.device, max_len: int) -> Transformer:
    d_model, heads, d_ff, layers = SIZES[size]
    torch.manual_seed(0)
    config = TransformerConfig(
        VOCAB, VOCAB, d_model=d_model, n_heads=heads, d_ff=d_ff, n_encoder_layers=layers,
        n_decoder_layers=layers, dropout=0.1, max_len=max_len,
    )  # fmt: skip
    model = Transformer(config).to(device).eval()
    with torch.no_grad():
        model.output.bias[config.eos_id] = -1e4  # never stop early: every run makes the same number of tokens
    return model


def step_ops(model: Transformer, src: torch.Tensor, tokens: int, path: object = ENGINE) -> tuple[float, Counter[str]]:
    """ATen operations of one cached greedy step per decoder layer, and the step's operations by
    name: the difference between decoding ``tokens + 1`` and ``tokens`` tokens (``<eos>`` off)."""
    greedy_decode(model, src, 1, path=path)  # the engine's plan is made once, before counting
    counts = []
    for n in (tokens, tokens + 1):
        with CountOps() as counter:
            out = greedy_decode(model, src, n, path=path)
        assert out.shape == (src.shape[0], n), "the model must not stop early: switch its <eos> off"
        counts.append(counter.ops)
    step = counts[1] - counts[0]
    return (counts[1].total() - counts[0].total()) / model.config.n_decoder_layers, step


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def interleaved(
    fns: dict[str, Callable[[], object]],
    device: torch.device,
    rounds: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Seconds of each call, ``rounds`` times per variant, the order rotating every round.

    ``clock=time.process_time`` (CPU time of this process) with one thread is steadier than the
    wall clock on a machine shared with other programs: their load does not count."""
    names = list(fns)
    for fn in fns.values():  # warm-up (allocator, lazy initialisation)
        fn()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            _sync(device)
            start = clock()
            fns[name]()
            _sync(device)
            times[name].append(clock() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=SIZES, default="medium")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per sentence")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall: elapsed time; cpu: this process's CPU time (with --threads 1, load-proof)")  # fmt: skip
    parser.add_argument("--ops", action="store_true", help="also count the ATen operations of one cached step")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    device = torch.device(args.device)
    model = make_model(args.size, device, max_len=max(args.tokens, SRC_LEN) + 1)
    generator = torch.Generator().manual_seed(1)
    src = torch.randint(4, VOCAB, (args.batch, SRC_LEN), generator=generator).to(device)  # (B, S)
    n = args.tokens
    fns = {
        "greedy, KV cache": lambda: greedy_decode(model, src, n),
        "greedy, no cache": lambda: greedy_decode(model, src, n, use_cache=False),
        f"beam {args.beam}, KV cache": lambda: beam_search(model, src, args.beam, n),
    }
    out = greedy_decode(model, src, n)
    assert out.shape == (args.batch, n), f"expected {n} tokens per sentence, got {tuple(out.shape)}"

    load_start = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    times = interleaved(fns, device, args.rounds, clock)
    load_end = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    median = {name: statistics.median(t) for name, t in times.items()}

    d_model, heads, d_ff, layers = SIZES[args.size]
    print(
        f"model {args.size} (D={d_model}, H={heads}, d_ff={d_ff}, {layers}+{layers} layers, V={VOCAB}), "
        f"batch {args.batch}, source {SRC_LEN} tokens, {n} new tokens; {device}, {torch.get_num_threads()} threads, "
        f"torch {torch.__version__}, {platform.processor() or platform.machine()}"
    )
    print(
        f"load average (1 min): {load_start:.2f} at start, {load_end:.2f} at end; {args.rounds} rounds, medians; "
        f"{args.clock} clock; ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', '(unset)')}"
    )
    for name, seconds in median.items():
        spread = f"{min(times[name]):.3f}–{max(times[name]):.3f}"
        print(f"  {name:18} {seconds:8.3f} s  ({spread})  {args.batch * n / seconds:8.0f} tokens/s")
    speedup = median["greedy, no cache"] / median["greedy, KV cache"]
    beam_cost = median[f"beam {args.beam}, KV cache"] / median["greedy, KV cache"]
    print(f"KV cache speed-up (greedy, no cache / KV cache): {speedup:.2f}×")
    print(f"beam {args.beam} / greedy (both cached): {beam_cost:.2f}× the time")
    ops = None
    if args.ops:
        ops, step = step_ops(model, src, n // 2)
        print(f"ATen operations per decoder layer per generated token (cached greedy step): {ops:.1f}")
        print("  one step: " + ", ".join(f"{name} {k}" for name, k in step.most_common()))
    if args.json:
        result = {
            "size": args.size, "batch": args.batch, "tokens": n, "beam": args.beam, "device": str(device),
            "threads": torch.get_num_threads(), "load": [load_start, load_end], "clock": args.clock, "seconds": times,
            "median": median, "cache_speedup": speedup, "beam_over_greedy": beam_cost, "ops_per_layer": ops,
        }  # fmt: skip
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
