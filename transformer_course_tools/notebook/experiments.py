"""Small training experiments that test the chapters' claims (each about a minute on a 2-core CPU).

A chapter builds its variants from the course's own parts and hands them to the runner in one cell::

    from transformer_course import LearnedPositionalEmbedding, Transformer
    from transformer_course_tools.notebook.experiments import run_experiment

    result = run_experiment("positions", variants={
        "sinusoidal (the paper)": Transformer,
        "learned (Table 3, row E)": lambda config: Transformer(config, positional=LearnedPositionalEmbedding),
    })  # trains the variants, prints a table, draws the figure

Each variant is a function that builds the model from a :class:`~transformer_course.config.TransformerConfig`
(the :class:`~transformer_course.model.Transformer` with other parts), or a :class:`Variant` that
also changes the training (no warm-up, another label smoothing, pre-LN). The experiment's name
picks its :class:`Setting`, what is measured and the figure (:data:`EXPERIMENTS`); a
:class:`Setting` instead of a name runs the chapter's own setting. Each variant is trained from
several seeds (:attr:`Setting.seeds`) on one CPU thread; the table and the figure show the mean and
the spread over the seeds, and :meth:`ExperimentResult.verdict` states a difference only where the
seeds' ranges do not overlap. The numbers differ from one CPU to another (see ``transformer_course_tools/notebook/claims.py``):
a chapter prints them in a cell the notebook tests do not compare, and checks its claims with
margins.

=======================  =============================================================  =========
experiment               what the chapter's variants change                             chapter
=======================  =============================================================  =========
``"embedding-scale"``    token vectors × √d_model (the paper), without the factor,      13
                         or PyTorch's N(0, 1) initialisation × √d_model
``"positions"``          sinusoidal or learned positions, tested on longer inputs       13
``"warm-up"``            post-LN with / without warm-up, pre-LN without warm-up         13
``"residuals"``          with and without the residual connections                      13
``"label-smoothing"``    ε = 0 or ε = 0.1: confidence, calibration and exact match      13
=======================  =============================================================  =========
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace

import torch
from torch import Tensor, nn

from transformer_course.batching import encode_pairs, make_batch
from transformer_course.config import TransformerConfig
from transformer_course.data import Task, copy_pairs
from transformer_course.decoding import greedy_decode
from transformer_course.evaluation import evaluate
from transformer_course.model import Transformer
from transformer_course.schedule import transformer_lr
from transformer_course.training import TOY_PROFILE, TrainingProfile, fit, prepare_training
from transformer_course.vocab import Vocab

# -- the small setting every experiment starts from ---------------------------------------------


@dataclass
class Setting(TrainingProfile):
    """A :class:`~transformer_course.training.TrainingProfile` (model size, training settings)
    plus the sizes of the reverse task and the seeds. :data:`BASE` holds the defaults of every
    experiment. ``seed`` draws the task's strings (the same for every run); each of ``seeds``
    draws one run's initial weights and batch order."""

    min_len: int = 3  # training strings of the reverse task: min_len … max_len letters
    max_len: int = 10
    test_lengths: tuple[int, ...] = ()  # longer test strings (the "positions" experiment)
    n_train: int = 20_000
    n_test: int = 300
    seeds: tuple[int, ...] = (0, 1, 2)  # one training run per seed and variant


# the debugging profile of chapter 08 (d_model 64, one layer each side, no dropout), no smoothing
BASE = Setting(**(TOY_PROFILE.to_dict() | {"steps": 500, "smoothing": 0.0}))


@dataclass
class Variant:
    """One line of an experiment: how to build the model and how to train it (``name``: the key
    of ``variants`` in :func:`run_experiment`)."""

    name: str = ""
    build: Callable[[TransformerConfig], nn.Module] = Transformer
    norm_first: bool = False
    warmup: bool = True  # False: the schedule's peak from the first step (then the same decay)
    smoothing: float | None = None  # None: the setting's


FINAL_LOSS = "final training loss"  # the mean of the last 50 steps' losses, in every run's metrics


@dataclass
class Run:
    """One training run of one variant, from one seed."""

    seed: int
    losses: list[float]
    lrs: list[float]
    metrics: dict[str, float]
    seconds: float  # CPU seconds of training (one thread): about the wall time on an idle machine
    model: nn.Module | None = None  # the trained model, to look at further
    diverged: bool = False

    @property
    def final_loss(self) -> float:
        """The mean training loss of the last 50 steps (NaN for a run that diverged): where training
        ended, less noisy than one step's loss and than a score at the edge of learning."""
        tail = self.losses[-50:]
        return sum(tail) / len(tail) if tail else math.nan


@dataclass
class VariantResult:
    """The runs of one variant, one per seed."""

    name: str
    runs: list[Run] = field(default_factory=list)

    def values(self, metric: str) -> list[float]:
        """The metric of every seed (NaN for a run that diverged)."""
        return [run.metrics.get(metric, math.nan) for run in self.runs]

    def mean(self, metric: str) -> float:
        values = self.values(metric)
        return sum(values) / len(values)

    def spread(self, metric: str) -> tuple[float, float]:
        """The lowest and the highest value over the seeds."""
        values = self.values(metric)
        return min(values), max(values)

    @property
    def diverged(self) -> int:
        """How many of the runs diverged."""
        return sum(run.diverged for run in self.runs)

    @property
    def model(self) -> nn.Module | None:
        """The first seed's trained model."""
        return self.runs[0].model if self.runs else None


@dataclass
class ExperimentResult:
    """What :func:`run_experiment` returns: one :class:`VariantResult` per variant."""

    name: str
    setting: Setting
    task: Task
    variants: dict[str, VariantResult] = field(default_factory=dict)
    question: str = ""  # the figure's title

    def metrics(self) -> list[str]:
        return list(next((r.metrics for v in self.variants.values() for r in v.runs if r.metrics), {}))

    def table(self) -> str:
        """Every variant's final metrics over the seeds: the mean, then the lowest and highest seed
        (the "positions" experiment: one row per length, one column per variant and score)."""
        if self.name == "positions":
            return self._lengths_table()
        metrics = self.metrics()
        widths = [max(len(m), 19) + 2 for m in metrics]
        first = max([34, *(len(name) + 1 for name in self.variants)])  # the names' column
        rows = [f"{'variant':<{first}}" + "".join(f"{m:>{w}}" for m, w in zip(metrics, widths, strict=True))]
        for name, result in self.variants.items():
            cells = "".join(f"{_mean_spread(result, m):>{w}}" for m, w in zip(metrics, widths, strict=True))
            note = f"  ({result.diverged} of {len(result.runs)} runs diverged)" if result.diverged else ""
            rows.append(f"{name:<{first}}{cells}{note}")
        rows.append(f"({len(self.setting.seeds)} seeds: mean [lowest, highest])")
        return "\n".join(rows)

    def _lengths_table(self) -> str:
        names = list(self.variants)
        lengths = sorted({int(k.split()[0]) for k in self.metrics() if k != FINAL_LOSS})
        rows = ["".ljust(8) + "".join(f"{n[:40]:>44}" for n in names)]
        rows.append("length".ljust(8) + f"{'exact %':>22}{'letters %':>22}" * len(names))
        for n in lengths:
            cells = "".join(
                f"{_mean_spread(v, f'{n} exact'):>22}{_mean_spread(v, f'{n} letters'):>22}"
                for v in self.variants.values()
            )
            rows.append(f"{n:<8}{cells}" + ("   (longer than in training)" if n > self.setting.max_len else ""))
        rows.append(f"({len(self.setting.seeds)} seeds: mean [lowest, highest])")
        return "\n".join(rows)

    def beyond_spread(self, metric: str, higher: str, lower: str) -> bool:
        """Is every seed of variant ``higher`` above every seed of variant ``lower`` on ``metric``?"""
        high, low = self.variants[higher].values(metric), self.variants[lower].values(metric)
        return not any(math.isnan(v) for v in (*high, *low)) and min(high) > max(low)

    def paired_differences(self, metric: str, a: str, b: str) -> list[float]:
        """``a − b`` on ``metric``, seed by seed: both variants of one seed start from the same initial
        weights and see the same batches, so the difference of a pair is free of the seed's luck."""
        return [x - y for x, y in zip(self.variants[a].values(metric), self.variants[b].values(metric), strict=True)]

    def verdict(self, metric: str, a: str, b: str) -> str:
        """A plain sentence comparing variants ``a`` and ``b`` on ``metric``: each one's lowest and
        highest run, then whether the ranges overlap. A difference is stated only where they do not."""
        ranges = ", ".join(f"{name} {_low_high(self.variants[name], metric)}" for name in (a, b))
        for high, low in ((a, b), (b, a)):
            if self.beyond_spread(metric, high, low):
                return f"{metric}, lowest to highest run: {ranges}. Every run of {high} is above every run of {low}."
        return f"{metric}, lowest to highest run: {ranges}. The ranges overlap: no difference beyond the seeds' spread."


def _digits(metric: str) -> int:
    return 2 if metric == "perplexity" or "loss" in metric else 1


def _low_high(result: VariantResult, metric: str) -> str:
    low, high = result.spread(metric)
    digits = _digits(metric)
    return f"{low:.{digits}f}–{high:.{digits}f}"


def _mean_spread(result: VariantResult, metric: str) -> str:
    low, high = result.spread(metric)
    digits = _digits(metric)
    return f"{result.mean(metric):.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


# -- the reverse task at chosen lengths ----------------------------------------------------------


def reverse_task(setting: Setting) -> Task:
    """The reverse task with training strings of ``min_len … max_len`` letters. Validation holds
    ``n_test`` held-out strings of those lengths; with ``test_lengths``, the test split holds
    ``n_test`` strings of every length from ``min_len`` to the longest test length. Held out: no
    validation or test string is a training string, and no test string a validation one."""
    vocab = Vocab(chr(ord("a") + i) for i in range(10))
    lengths = setting.min_len, setting.max_len
    train = copy_pairs(setting.n_train, *lengths, reverse=True, seed=setting.seed)
    valid = copy_pairs(setting.n_test, *lengths, reverse=True, seed=setting.seed + 1, unseen_in=train)
    seen = train + valid  # no test string is one of these
    test = [
        pair
        for length in range(setting.min_len, max(setting.test_lengths, default=0) + 1)
        for pair in copy_pairs(
            setting.n_test, length, length, reverse=True, seed=setting.seed + 2 + length, unseen_in=seen
        )
    ]
    return Task("reverse", vocab, vocab, train, valid, test)


def model_config(task: Task, setting: Setting, norm_first: bool = False) -> TransformerConfig:
    longest = max([setting.max_len, *setting.test_lengths])
    return TransformerConfig(
        len(task.src_vocab), len(task.tgt_vocab), d_model=setting.d_model, n_heads=setting.n_heads,
        d_ff=setting.d_ff, n_encoder_layers=setting.n_layers, n_decoder_layers=setting.n_layers, dropout=setting.dropout,
        max_len=2 * longest + 4, norm_first=norm_first,
    )  # fmt: skip


@contextmanager
def one_thread() -> Iterator[None]:
    """One CPU thread: the same numbers on every run, and fair timings on a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def schedule(setting: Setting, warmup: bool) -> Callable[[int], float]:
    """Equation (3) with the setting's warm-up and scale; ``warmup=False`` starts at the peak
    (the first ``warmup_steps`` steps get the peak rate, then the same 1/√step decay)."""
    w, d, s = setting.warmup_steps, setting.d_model, setting.lr_scale
    if warmup:
        return lambda count: transformer_lr(count + 1, d, w, s)
    return lambda count: transformer_lr(max(count + 1, w), d, w, s)


def train_variant(variant: Variant, task: Task, setting: Setting, measure: Callable, seed: int) -> Run:
    """Build, train and measure one variant from one seed (a diverging run is reported, not raised)."""
    run = prepare_training(
        task, setting, seed=seed, build=lambda: variant.build(model_config(task, setting, variant.norm_first)),
        schedule=schedule(setting, variant.warmup),
    )  # fmt: skip
    smoothing = setting.smoothing if variant.smoothing is None else variant.smoothing
    options = replace(run.options, smoothing=smoothing, progress=False)
    start = time.process_time()
    try:
        history = fit(run.model, run.batches, run.optimizer, run.scheduler, setting.steps, options=options)
    except FloatingPointError:
        return Run(seed, [], [], {}, time.process_time() - start, diverged=True)
    seconds = time.process_time() - start
    result = Run(seed, history.losses, history.lrs, measure(run.model, task), seconds, run.model)
    result.metrics[FINAL_LOSS] = result.final_loss
    return result


def exact_match(model: nn.Module, task: Task) -> dict[str, float]:
    return {"exact match %": evaluate(model, task.valid, task, decode=greedy_decode)["exact_match"]}


def token_confidence(model: nn.Module, task: Task) -> dict[str, Tensor]:
    """Teacher-forced on the validation references: for every real target token, the probability of the
    model's top choice (its confidence), whether that choice is right, and log P(right token)."""
    pad = task.tgt_vocab.pad_id
    batch = make_batch(encode_pairs(task.valid, task.src_vocab, task.tgt_vocab), pad)
    model.eval()
    with torch.no_grad():
        log_probs = model(batch.src, batch.tgt_in).log_softmax(-1)  # (B, T, V_tgt)
    real = batch.tgt_out != pad  # (B, T)
    top = log_probs.max(-1)
    return {
        "confidence": top.values.exp()[real],
        "correct": (top.indices == batch.tgt_out)[real],
        "log_p_right": log_probs.gather(-1, batch.tgt_out[..., None])[..., 0][real],
    }


def calibration_error(confidence: Tensor, correct: Tensor, bins: int = 10) -> float:
    """Expected calibration error: the gap between confidence and accuracy, averaged over
    confidence bins weighted by how many tokens fall in each."""
    edges = torch.linspace(0, 1, bins + 1)
    which = torch.bucketize(confidence, edges[1:-1])  # (n,) bin of each token
    gap = 0.0
    for b in range(bins):
        chosen = which == b
        if chosen.any():
            gap += chosen.sum().item() * abs(confidence[chosen].mean().item() - correct[chosen].float().mean().item())
    return gap / len(confidence)


def confidence_metrics(model: nn.Module, task: Task) -> dict[str, float]:
    """Exact match (greedy), mean confidence, token accuracy, calibration error and perplexity."""
    tokens = token_confidence(model, task)
    return {
        "exact match %": evaluate(model, task.valid, task, decode=greedy_decode)["exact_match"],
        "token accuracy %": 100 * tokens["correct"].float().mean().item(),
        "mean confidence %": 100 * tokens["confidence"].mean().item(),
        "calibration error %": 100 * calibration_error(tokens["confidence"], tokens["correct"]),
        "perplexity": math.exp(-tokens["log_p_right"].mean().item()),
    }


def scores_by_length(model: nn.Module, task: Task) -> dict[str, float]:
    """For the test strings of each length n: ``"n exact"``, the share (%) written exactly right,
    and ``"n letters"``, the share (%) of letters right at their place (the "positions" experiment)."""
    from transformer_course.evaluation import translate

    hypotheses = translate(model, [s for s, _ in task.test], task, decode=greedy_decode)
    exact: dict[int, list[float]] = {}
    letters: dict[int, list[float]] = {}
    for (src, tgt), hyp in zip(task.test, hypotheses, strict=True):
        exact.setdefault(len(src), []).append(float(hyp == tgt))
        letters.setdefault(len(src), []).append(sum(h == t for h, t in zip(hyp, tgt, strict=False)) / len(tgt))
    scores = {}
    for n in sorted(exact):
        scores[f"{n} exact"] = 100 * sum(exact[n]) / len(exact[n])
        scores[f"{n} letters"] = 100 * sum(letters[n]) / len(letters[n])
    return scores


# -- the experiments -----------------------------------------------------------------------------------


VariantSpec = Variant | Callable[[TransformerConfig], nn.Module]
"""A variant as a chapter writes it: a function that builds the model from the config, or a :class:`Variant`."""


@dataclass(frozen=True)
class Experiment:
    """What an experiment's name stands for: its setting, what it measures and the figure's title.
    Its variants live in its chapter, which passes them to :func:`run_experiment`."""

    setting: Setting
    measure: Callable[[nn.Module, Task], dict[str, float]]
    question: str  # the figure's title: what the experiment asks (its answer depends on the run)


# The variants live in chapter 11, built from the model's parts and Variant.
EXPERIMENTS: dict[str, Experiment] = {
    "embedding-scale": Experiment(
        BASE, exact_match, "Does the factor √d_model matter? And the size of the initial embeddings?"
    ),
    "positions": Experiment(
        replace(BASE, steps=700, test_lengths=(16,), n_test=100), scores_by_length,
        "Do sinusoidal or learned positions carry a model beyond its training lengths?",
    ),
    "warm-up": Experiment(
        replace(BASE, n_layers=3, steps=400, max_grad_norm=None), exact_match, "Does post-LN need the warm-up? Does pre-LN?"
    ),
    "residuals": Experiment(
        replace(BASE, n_layers=3, steps=400), exact_match, "What do the residual connections do for training?"
    ),
    "label-smoothing": Experiment(
        replace(BASE, steps=800), confidence_metrics,
        "What does label smoothing change: confidence, perplexity, accuracy?",
    ),
}  # fmt: skip


def run_experiment(
    experiment: str | Setting,
    variants: dict[str, VariantSpec] | None = None,
    show: bool = True,
    measure: Callable[[nn.Module, Task], dict[str, float]] = exact_match,
    **overrides,
) -> ExperimentResult:
    """Train every variant and measure it.

    Args:
        experiment: the name of one of :data:`EXPERIMENTS` (its setting, measurements and figure),
            or a :class:`Setting` of your own (then ``measure`` says what to measure).
        variants: ``{name: variant}``, in the order of the table; each variant a function that builds
            the model from a :class:`~transformer_course.config.TransformerConfig` (``Transformer``
            itself, or ``lambda config: Transformer(config, norm=RMSNorm)``) or a :class:`Variant`.
            Required: each chapter names what it compares.
        show: print the table and draw the figure.
        overrides: change the :class:`Setting` (``steps=50`` for a quick look).
    """
    if isinstance(experiment, Setting):
        name, spec = "experiment", Experiment(experiment, measure, "")
    elif experiment in EXPERIMENTS:
        name, spec = experiment, EXPERIMENTS[experiment]
    else:
        raise ValueError(
            f"unknown experiment {experiment!r}; choose one of {', '.join(EXPERIMENTS)}, or pass a Setting"
        )
    chosen = _variants(name, variants)
    unknown = sorted(set(overrides) - {f.name for f in fields(Setting)})
    if unknown:
        raise ValueError(
            f"unknown setting(s) {', '.join(unknown)}; choose among {', '.join(f.name for f in fields(Setting))}"
        )
    setting = replace(spec.setting, **overrides)
    task = reverse_task(setting)
    result = ExperimentResult(name, setting, task, question=spec.question)
    with one_thread():
        for variant in chosen:
            runs = [train_variant(variant, task, setting, spec.measure, seed) for seed in setting.seeds]
            result.variants[variant.name] = VariantResult(variant.name, runs)
    if show:
        import matplotlib.pyplot as plt

        print(result.table())
        plot_experiment(result)
        plt.show()
    return result


def _variants(name: str, variants: dict[str, VariantSpec]) -> list[Variant]:
    """The :class:`Variant` of every entry of ``variants``, named by its key."""
    if not isinstance(variants, dict) or not variants:
        raise ValueError(
            f"variants must be a non-empty dict {{name: build function or Variant}} (experiment {name!r}), "
            f"got {variants!r}"
        )
    chosen = []
    for key, variant in variants.items():
        if isinstance(variant, Variant):
            chosen.append(replace(variant, name=key))
        elif callable(variant):
            chosen.append(Variant(key, build=variant))
        else:
            raise ValueError(f"variant {key!r} must be a function that builds the model or a Variant, got {variant!r}")
    return chosen


def plot_experiment(result: ExperimentResult):
    """Training loss of every variant (mean over the seeds, the band from the lowest to the highest
    seed), and next to it the experiment's own measurements, one dot per seed."""
    import matplotlib.pyplot as plt

    panels = [_RIGHT_PANELS[result.name]] if result.name in _RIGHT_PANELS else []
    if result.name != "positions":  # its own panel already shows every length's spread
        panels.append(_metric_dots)
    fig, (left, *right) = plt.subplots(1, 1 + len(panels), figsize=(6 * (1 + len(panels)), 3.9))
    window = 20
    for i, variant in enumerate(result.variants.values()):
        curves = [_smooth(run.losses, window) for run in variant.runs if run.losses]
        if not curves:
            continue
        stacked = torch.stack(curves)  # (seeds, steps)
        steps = range(result.setting.steps - stacked.shape[1] + 1, result.setting.steps + 1)
        left.plot(steps, stacked.mean(0), color=f"C{i}", label=f"{variant.name} (mean of {len(curves)} seeds)")
        left.fill_between(steps, stacked.min(0).values, stacked.max(0).values, color=f"C{i}", alpha=0.2, lw=0)
    left.set(xlabel="training step", ylabel=f"training loss (mean of {window} steps)", yscale="log",
             title="Training loss")  # fmt: skip
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    for ax, panel in zip(right, panels, strict=True):
        panel(ax, result)
    fig.suptitle(result.question, y=1.02)
    fig.tight_layout()
    return fig


def _smooth(losses: list[float], window: int) -> Tensor:
    values = torch.tensor(losses)
    return values.unfold(0, window, 1).mean(-1) if len(values) >= window else values


def _metric_dots(ax, result: ExperimentResult) -> None:
    names = list(result.variants)
    for i, name in enumerate(names):
        values = result.variants[name].values("exact match %")
        ax.barh(i, result.variants[name].mean("exact match %"), color=f"C{i}", alpha=0.35)
        ax.plot(values, [i] * len(values), "o", color=f"C{i}", markersize=6)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set(xlim=(-2, 102), xlabel="exact match on held-out strings (%): bar = mean, dot = one seed",
           title=f"After {result.setting.steps} steps, {len(result.setting.seeds)} seeds")  # fmt: skip


def _lengths_panel(ax, result: ExperimentResult) -> None:
    for (name, variant), color in zip(result.variants.items(), ("tab:blue", "tab:orange"), strict=False):
        for kind, style in (("exact", "o-"), ("letters", "s--")):
            keys = [k for k in result.metrics() if k.endswith(kind)]
            lengths = [int(k.split()[0]) for k in keys]
            label = f"{name}: {'whole string right' if kind == 'exact' else 'letters right'}"
            ax.plot(lengths, [variant.mean(k) for k in keys], style, color=color, label=label, markersize=4)
            spreads = [variant.spread(k) for k in keys]
            ax.fill_between(lengths, [lo for lo, _ in spreads], [hi for _, hi in spreads], color=color, alpha=0.15)
    s = result.setting
    ax.axvspan(s.min_len - 0.5, s.max_len + 0.5, color="0.9", label="lengths seen in training", zorder=0)
    ax.set(xlabel="length of the input string", ylabel=f"held-out strings (%), {len(s.seeds)} seeds",
           ylim=(-3, 103), title="Held-out strings by length (band: lowest to highest seed)")  # fmt: skip
    ax.legend(fontsize=7.5, loc="center right")
    ax.grid(alpha=0.3)


def _lr_panel(ax, result: ExperimentResult) -> None:
    for variant in result.variants.values():
        run = variant.runs[0]
        ax.plot(range(1, len(run.lrs) + 1), run.lrs, label=variant.name)
    ax.set(xlabel="training step", ylabel="learning rate", title="The schedules (same peak, same decay)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)


def _confidence_panel(ax, result: ExperimentResult) -> None:
    import seaborn as sns

    for (name, variant), color in zip(result.variants.items(), ("tab:blue", "tab:orange"), strict=False):
        confidence = torch.cat([token_confidence(run.model, result.task)["confidence"] for run in variant.runs])
        sns.histplot(x=confidence.numpy(), bins=40, binrange=(0, 1), stat="percent", ax=ax, color=color, alpha=0.5,
                     label=name)  # fmt: skip
    ax.set(yscale="log", xlabel="probability of the model's top choice (one per target token, all seeds)",
           ylabel="% of the tokens", title="Confidence on held-out strings")  # fmt: skip
    ax.legend(fontsize=8, loc="upper left")


_RIGHT_PANELS = {"positions": _lengths_panel, "warm-up": _lr_panel, "label-smoothing": _confidence_panel}
