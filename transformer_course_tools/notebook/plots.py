"""Figures the chapters draw from the package's data (notebook helpers, not part of the model)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch

from transformer_course.training import History

from .experiments import one_thread


def plot_history(history: History, title: str = "Training"):
    """Loss per step (and its running mean) next to the validation exact match; returns the figure."""
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 3.6))
    ax_loss.plot(history.steps, history.losses, color="tab:blue", alpha=0.3, lw=0.8, label="batch loss")
    window = max(1, len(history.losses) // 50)
    smooth = (
        torch.tensor(history.losses).unfold(0, window, 1).mean(-1).tolist() if len(history.losses) >= window else []
    )
    ax_loss.plot(history.steps[window - 1 :], smooth, color="tab:blue", label=f"mean of {window} steps")
    ax_loss.set(xlabel="step", ylabel="label-smoothed cross-entropy", yscale="log", title=f"{title}: loss")
    ax_loss.legend()
    if history.evals:
        ax_acc.plot(
            [e["step"] for e in history.evals], [e["exact_match"] for e in history.evals], "o-", color="tab:green"
        )
        ax_acc.set_ylim(0, 100)
    ax_acc.set(xlabel="step", ylabel="exact match on validation (%)", title=f"{title}: held-out accuracy")
    ax_acc.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def strata_table(*columns: dict[str, dict], names: Sequence[str] | None = None) -> str:
    """Per-stratum scores (``evaluate_strata``) as a small text table: count, exact match, seen in training.

    Several results (greedy and beam search, say) give several exact-match columns, headed by ``names``.
    """
    if not columns:
        raise ValueError("strata_table needs at least one result of evaluate_strata")
    names = list(names) if names is not None else ["exact match %"] * len(columns)
    if len(names) != len(columns):
        raise ValueError(f"{len(names)} names for {len(columns)} columns")
    widths = [max(len(n), 8) for n in names]
    lines = [f"{'stratum':<24} {'count':>5} " + " ".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True))
             + "  seen in training"]  # fmt: skip
    for name, row in columns[0].items():
        cells = " ".join(f"{c[name]['exact_match']:>{w}.2f}" for c, w in zip(columns, widths, strict=True))
        lines.append(f"{name:<24} {row['count']:>5} {cells}  {'yes' if row['seen'] else 'no'}")
    return "\n".join(lines)


def fastest_seconds(fn: Callable[[], object], repeats: int = 3) -> float:
    """Seconds of the fastest of ``repeats`` calls of ``fn`` on one thread (:func:`.experiments.one_thread`):
    the run that other programs on the machine disturbed least."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    times = []
    with one_thread():
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return min(times)


def plot_cache_speedup(lengths: Sequence[int], timings: dict[str, Sequence[float]]):
    """Chapter 09, section 5: milliseconds against tokens generated (log-log), one line per entry of
    ``timings`` ("no cache", "KV cache": seconds per length), and the speed-up, the first divided by the
    second. Returns the figure (closed: as a cell's last value a notebook shows it once)."""
    import matplotlib.pyplot as plt

    if set(timings) != {"no cache", "KV cache"} or any(len(v) != len(lengths) for v in timings.values()):
        raise ValueError(f"timings must hold 'no cache' and 'KV cache', one time per length, got {list(timings)}")
    speedup = [a / b for a, b in zip(timings["no cache"], timings["KV cache"], strict=True)]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.5))
    for name, values in timings.items():
        ax1.plot(lengths, [v * 1000 for v in values], "o-", label=name)
    ax1.set(xlabel="tokens generated", ylabel="milliseconds (batch of 32)", xscale="log", yscale="log",
            title="Without a cache the cost grows faster than the length")  # fmt: skip
    ax1.set_xscale("log", base=2)
    ax1.legend()
    ax2.plot(lengths, speedup, "o-", color="tab:green")
    ax2.set(
        xlabel="tokens generated", ylabel="speed-up ×", title="The cache saves at every length, most at the longest"
    )
    ax2.set_xscale("log", base=2)
    fig.tight_layout()
    plt.close(fig)
    return fig
