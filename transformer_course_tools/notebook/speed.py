"""The timings chapter 16 shows, one call each: the harness lives here, the idea stays on the page.

Every timing runs on one thread (one core's share of the memory's speed), lets the things it
compares take turns, so that each sees the same load from other programs, and counts CPU time
(``time.process_time``: time the machine gave to other programs does not count).
``python -m benchmarks.engines --learners`` times the exported models with the same :func:`interleaved`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .experiments import one_thread


def interleaved(runs: dict[str, Callable[[], object]], rounds: int, warm_up: bool = True) -> dict[str, list[float]]:
    """CPU seconds of each run in each of ``rounds`` rounds; in a round the runs take turns, the order
    rotating from round to round. ``warm_up``: each run once first, untimed (a plan made, a cache filled)."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if warm_up:
        for run in runs.values():
            run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.process_time()
            runs[name]()
            times[name].append(time.process_time() - start)
    return times


# -- section 3: bytes per token, and the memory's speed ---------------------------------------------


@dataclass
class PrecisionTiming:
    """What :func:`time_precisions` measured: bytes each token reads and seconds per token, by precision,
    and one thread's read bandwidth (bytes per second)."""

    read: dict[str, int]
    seconds: dict[str, float]
    bandwidth: float

    def table(self) -> str:
        """One line per precision: MiB read per token, ms per token, the speed of reading it reached."""
        lines = [f"one thread reads memory at {self.bandwidth / 1e9:.1f} GB/s (a sum over 512 MiB)"]
        for precision, read in self.read.items():
            speed = read / self.seconds[precision]  # bytes per second, as the step read its weights
            lines.append(
                f"{precision:8s} {read / 2**20:6.1f} MiB read per token  {1000 * self.seconds[precision]:6.1f} ms "
                f"per token  {speed / 1e9:5.1f} GB/s: {speed / self.bandwidth:4.0%} of the memory's speed"
            )
        return "\n".join(lines)

    def sentence(self) -> str:
        """The finding in words, from this run's numbers."""
        fastest, t = min(self.seconds, key=self.seconds.get), self.seconds
        return (
            f"On this machine the fastest was **{fastest}**, at {1000 * t[fastest]:.1f} ms per token "
            f"({t['float32'] / t[fastest]:.1f}× float32). int8 read {self.read['float32'] / self.read['int8']:.2f}× "
            f"fewer bytes than float32 and ran {t['float32'] / t['int8']:.1f}× as fast. The float32 step read its "
            f"weights at {self.read['float32'] / t['float32'] / self.bandwidth:.0%} of the speed one thread reads "
            "memory at."
        )

    def plot(self):
        """Milliseconds per token against MiB read per token, one dot per precision, and the line of
        reading those bytes at the memory's speed; returns the figure."""
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.4))
        for precision, read in self.read.items():
            ax.scatter(read / 2**20, 1000 * self.seconds[precision], s=60)
            ax.annotate(precision, (read / 2**20, 1000 * self.seconds[precision]), xytext=(6, 4),
                        textcoords="offset points")  # fmt: skip
        x_max = 1.25 * max(self.read.values()) / 2**20
        ax.plot([0, x_max], [0, 1000 * x_max * 2**20 / self.bandwidth], "k--", lw=1,
                label="reading at the memory's speed")  # fmt: skip
        ax.set(xlabel="MiB of weights read per token", ylabel="ms per generated token", xlim=(0, x_max),
               ylim=(0, 1.3 * 1000 * max(self.seconds.values())),  # room for the labels
               title=f"{min(self.seconds, key=self.seconds.get)} was fastest on this CPU")  # fmt: skip
        ax.legend(loc="upper left", fontsize=8)
        fig.tight_layout()
        return fig


def time_precisions(
    variants: dict[str, torch.nn.Module], prompt: torch.Tensor, new_tokens: int = 16, rounds: int = 3
) -> PrecisionTiming:
    """Each model of ``variants`` (precision → a decoder-only model) generates ``new_tokens`` after
    ``prompt`` (1, T) through the course's engine, taking turns with a sum over 512 MiB of float32 (one
    thread's read bandwidth); the best of ``rounds`` of each. The bytes a token reads are the engine
    plan's bytes."""
    from transformer_course.lm import generate
    from transformer_course_tools.engine import ENGINE
    from transformer_course_tools.engine.plan import plan_for

    read = {precision: plan_for(model).nbytes for precision, model in variants.items()}
    numbers = torch.ones(2**27)  # 512 MiB of float32, far more than the caches hold
    runs: dict[str, Callable[[], object]] = {"memory": numbers.sum}  # reads every byte once, one add per number
    for precision, model in variants.items():
        runs[precision] = lambda model=model: generate(model, prompt, max_new_tokens=new_tokens, path=ENGINE)
    with one_thread(), torch.no_grad():
        made = {p: runs[p]().shape[1] - prompt.shape[1] for p in variants}  # the warm-up: the plan made once
        times = interleaved(runs, rounds, warm_up=False)
    bandwidth = numbers.numel() * 4 / min(times.pop("memory"))
    return PrecisionTiming(read, {p: min(s) / made[p] for p, s in times.items()}, bandwidth)


# -- section 5: the exported models, engine by engine ----------------------------------------------


def tokens_per_second(
    runs: dict[str, dict[str, Callable[[], object]]], made: dict[str, int], rounds: int = 5
) -> dict[str, dict[str, float]]:
    """For each model (``runs``: model → engine → a run that makes ``made[model]`` new tokens), each
    engine's tokens per second of the median CPU time, one thread, the engines taking turns."""
    with one_thread(), torch.no_grad():
        return {
            model: {engine: made[model] / statistics.median(s) for engine, s in interleaved(engines, rounds).items()}
            for model, engines in runs.items()
        }


def speed_table(speeds: dict[str, dict[str, float]], reference: str) -> str:
    """A Markdown table of :func:`tokens_per_second`, each speed also as a multiple of ``reference``'s,
    then a sentence per model naming its fastest engine."""
    rows = [f"| model | engine | tokens per second | × {reference} |", "| --- | --- | ---: | ---: |"]
    verdicts = []
    for model, speed in speeds.items():
        rows += [f"| {model} | {engine} | {s:,.0f} | {s / speed[reference]:.2f} |" for engine, s in speed.items()]
        fastest = max(speed, key=speed.get)
        verdicts.append(
            f"With the {model}, the fastest here was {fastest}, at {speed[fastest] / speed[reference]:.1f}× {reference}."
        )
    return "\n".join(rows) + "\n\n" + " ".join(verdicts)
