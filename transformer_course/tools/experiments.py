"""Small training experiments that test the chapters' claims (each about a minute on a 2-core CPU).

A chapter calls one experiment in one cell::

    from transformer_course.tools.experiments import run_experiment
    result = run_experiment("warm-up")  # trains the variants, prints a table, draws the figure

Every variant is the course's own :class:`~transformer_course.model.Transformer`, changed from the
outside (no switch inside a room): a different schedule, ``norm_first``, a wrapped embedding, a
sub-layer that cancels its own shortcut, a learned position table. Each variant is trained from
several seeds (:attr:`Setting.seeds`) on one CPU thread; the table and the figure show the mean and
the spread over the seeds, and :meth:`ExperimentResult.verdict` states a difference only where the
seeds' ranges do not overlap. The numbers differ from one CPU to another (see ``tools/claims.py``):
a chapter prints them in a cell the notebook tests do not compare, and checks its claims with
margins.

=======================  =============================================================  =========
experiment               what changes                                                   chapter
=======================  =============================================================  =========
``"embedding-scale"``    token vectors × √d_model (the paper), without the factor,      01
                         or PyTorch's N(0, 1) initialisation × √d_model
``"positions"``          sinusoidal or learned positions, tested on longer inputs       02
``"warm-up"``            post-LN with / without warm-up, pre-LN without warm-up         05
``"residuals"``          with and without the residual connections                      05
``"label-smoothing"``    ε = 0 or ε = 0.1: confidence, calibration and exact match      07
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

from ..batching import encode_pairs, make_batch
from ..config import TransformerConfig
from ..data import Task, copy_pairs
from ..evaluation import evaluate
from ..model import Transformer
from ..positional import LearnedPositionalEmbedding
from ..schedule import transformer_lr
from ..training import TOY_PROFILE, TrainingProfile, fit, prepare_training
from ..vocab import Vocab

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


# the debugging profile of chapter 07 (d_model 64, one layer each side, no dropout), no smoothing
BASE = Setting(**(TOY_PROFILE.to_dict() | {"steps": 500, "smoothing": 0.0}))


@dataclass
class Variant:
    """One line of an experiment: how to build the model and how to train it."""

    name: str
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

    def metrics(self) -> list[str]:
        return list(next((r.metrics for v in self.variants.values() for r in v.runs if r.metrics), {}))

    def table(self) -> str:
        """Every variant's final metrics over the seeds: the mean, then the lowest and highest seed
        (the "positions" experiment: one row per length, one column per variant and score)."""
        if self.name == "positions":
            return self._lengths_table()
        metrics = self.metrics()
        widths = [max(len(m), 19) + 2 for m in metrics]
        rows = [f"{'variant':<34}" + "".join(f"{m:>{w}}" for m, w in zip(metrics, widths, strict=True))]
        rows.append(f"{f'({len(self.setting.seeds)} seeds: mean [lowest, highest])':<34}")
        for name, result in self.variants.items():
            cells = "".join(f"{_mean_spread(result, m):>{w}}" for m, w in zip(metrics, widths, strict=True))
            note = f"  ({result.diverged} of {len(result.runs)} runs diverged)" if result.diverged else ""
            rows.append(f"{name:<34}{cells}{note}")
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
        """One sentence comparing variants ``a`` and ``b`` on ``metric``: a difference is stated only
        where the seeds' ranges do not overlap."""
        ranges = f"{a}: {_mean_spread(self.variants[a], metric)}; {b}: {_mean_spread(self.variants[b], metric)}"
        for high, low in ((a, b), (b, a)):
            if self.beyond_spread(metric, high, low):
                return f"**{metric}**: *{high}* above *{low}*, **beyond the spread of the seeds** ({ranges})."
        return f"**{metric}**: *{a}* and *{b}* **differ by less than the spread of the seeds** ({ranges})."


def _mean_spread(result: VariantResult, metric: str) -> str:
    low, high = result.spread(metric)
    digits = 2 if metric in ("perplexity", FINAL_LOSS) else 1
    return f"{result.mean(metric):.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


# -- the reverse task at chosen lengths ----------------------------------------------------------


def reverse_task(setting: Setting) -> Task:
    """The reverse task with training strings of ``min_len … max_len`` letters. Validation holds
    ``n_test`` held-out strings of those lengths; with ``test_lengths``, the test split holds
    ``n_test`` strings of every length from ``min_len`` to the longest test length."""
    vocab = Vocab(chr(ord("a") + i) for i in range(10))
    train = copy_pairs(setting.n_train, setting.min_len, setting.max_len, reverse=True, seed=setting.seed)
    valid = copy_pairs(setting.n_test, setting.min_len, setting.max_len, reverse=True, seed=setting.seed + 1)
    test = [
        pair
        for length in range(setting.min_len, max(setting.test_lengths, default=0) + 1)
        for pair in copy_pairs(setting.n_test, length, length, reverse=True, seed=setting.seed + 2 + length)
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
    return {"exact match %": evaluate(model, task.valid, task)["exact_match"]}


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
        "exact match %": evaluate(model, task.valid, task)["exact_match"],
        "token accuracy %": 100 * tokens["correct"].float().mean().item(),
        "mean confidence %": 100 * tokens["confidence"].mean().item(),
        "calibration error %": 100 * calibration_error(tokens["confidence"], tokens["correct"]),
        "perplexity": math.exp(-tokens["log_p_right"].mean().item()),
    }


def scores_by_length(model: nn.Module, task: Task) -> dict[str, float]:
    """For the test strings of each length n: ``"n exact"``, the share (%) written exactly right,
    and ``"n letters"``, the share (%) of letters right at their place (the "positions" experiment)."""
    from ..evaluation import translate

    hypotheses = translate(model, [s for s, _ in task.test], task)
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


# -- variants built from the outside -----------------------------------------------------------------


class _Unscaled(nn.Module):
    """A token embedding whose output is divided back by √d_model: the paper's layer without the factor."""

    def __init__(self, embedding: nn.Module) -> None:
        super().__init__()
        self.inner = embedding

    def forward(self, tokens: Tensor) -> Tensor:
        return self.inner(tokens) / math.sqrt(self.inner.d_model)


def without_scale(config: TransformerConfig) -> Transformer:
    """The Transformer with token vectors of N(0, 1/D) entries, not multiplied by √D."""
    model = Transformer(config)
    wrapped = {id(m): _Unscaled(m) for m in (model.src_embed, model.tgt_embed)}  # one wrapper per matrix
    model.src_embed, model.tgt_embed = wrapped[id(model.src_embed)], wrapped[id(model.tgt_embed)]
    return model


def unit_init_scaled(config: TransformerConfig) -> Transformer:
    """PyTorch's default embedding initialisation, N(0, 1), times √D (the mismatch chapter 01 warns of)."""
    model = Transformer(config)
    with torch.no_grad():
        for embedding in {id(m): m for m in (model.src_embed, model.tgt_embed)}.values():
            embedding.weight.normal_(0.0, 1.0)
            embedding.weight[config.pad_id].zero_()
    return model


class _NoShortcut(nn.Module):
    """Wraps a sub-layer f so that it returns f(x) − x: post-LN's LayerNorm(x + f(x) − x) is then
    LayerNorm(f(x)), the layer without its residual connection (with dropout 0)."""

    def __init__(self, sublayer: nn.Module) -> None:
        super().__init__()
        self.inner = sublayer

    def forward(self, x: Tensor, *args, **kwargs):
        out = self.inner(x, *args, **kwargs)
        if isinstance(out, tuple):  # attention returns (output, weights); x is the query
            return (out[0] - x, *out[1:])
        return out - x


def without_residuals(config: TransformerConfig) -> Transformer:
    """A post-LN Transformer whose every sub-layer (attention and feed-forward) has lost its shortcut."""
    if config.norm_first or config.dropout:
        raise ValueError("the shortcut is cancelled exactly only in post-LN without dropout")
    model = Transformer(config)
    for layer in [*model.encoder.layers, *model.decoder.layers]:
        for name in ("self_attn", "cross_attn", "ffn"):
            if hasattr(layer, name):
                setattr(layer, name, _NoShortcut(getattr(layer, name)))
    return model


class LearnedPositions(LearnedPositionalEmbedding):
    """Learned position vectors that also take the ``offset`` cached decoding passes (chapter 08)."""

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        if offset + x.shape[1] > self.max_len:
            raise ValueError(f"positions up to {offset + x.shape[1] - 1} do not fit max_len={self.max_len}")
        positions = torch.arange(offset, offset + x.shape[1], device=x.device)  # (T,)
        return self.dropout(x + self.embedding(positions))  # (B, T, D)


def learned_positions(config: TransformerConfig) -> Transformer:
    """The Transformer with a learned position table (Table 3, row (E)) instead of the sinusoids."""
    model = Transformer(config)
    model.positional = LearnedPositions(config.d_model, config.max_len, config.dropout)
    return model


# -- the experiments -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Experiment:
    setting: Setting
    variants: tuple[Variant, ...]
    measure: Callable[[nn.Module, Task], dict[str, float]]
    question: str  # the figure's title: what the experiment asks (its answer depends on the run)


EXPERIMENTS: dict[str, Experiment] = {
    "embedding-scale": Experiment(
        BASE,
        (Variant("× √D, N(0, 1/D) init (the course)"), Variant("no √D factor", build=without_scale),
         Variant("× √D, N(0, 1) init", build=unit_init_scaled)),
        exact_match, "Does the factor √d_model matter? And the size of the initial embeddings?",
    ),
    "positions": Experiment(
        replace(BASE, steps=700, test_lengths=(16,), n_test=100),
        (Variant("sinusoidal (the paper)"), Variant("learned (Table 3, row E)", build=learned_positions)),
        scores_by_length, "Do sinusoidal or learned positions carry a model beyond its training lengths?",
    ),
    "warm-up": Experiment(
        replace(BASE, n_layers=3, steps=400, max_grad_norm=None),
        (Variant("post-LN, warm-up"), Variant("post-LN, no warm-up", warmup=False),
         Variant("pre-LN, no warm-up", norm_first=True, warmup=False)),
        exact_match, "Does post-LN need the warm-up? Does pre-LN?",
    ),
    "residuals": Experiment(
        replace(BASE, n_layers=3, steps=400),
        (Variant("with residual connections"), Variant("without residual connections", build=without_residuals)),
        exact_match, "What do the residual connections do for training?",
    ),
    "label-smoothing": Experiment(
        replace(BASE, steps=800),
        (Variant("ε = 0", smoothing=0.0), Variant("ε = 0.1 (the paper)", smoothing=0.1)),
        confidence_metrics, "What does label smoothing change: confidence, perplexity, accuracy?",
    ),
}  # fmt: skip


def run_experiment(name: str, show: bool = True, **overrides) -> ExperimentResult:
    """Train every variant of experiment ``name`` (see :data:`EXPERIMENTS`) and measure it.

    ``overrides`` change the :class:`Setting` (``steps=50`` for a quick look). With ``show``,
    prints the table and draws the figure.
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose one of {', '.join(EXPERIMENTS)}")
    experiment = EXPERIMENTS[name]
    unknown = sorted(set(overrides) - {f.name for f in fields(Setting)})
    if unknown:
        raise ValueError(
            f"unknown setting(s) {', '.join(unknown)}; choose among {', '.join(f.name for f in fields(Setting))}"
        )
    setting = replace(experiment.setting, **overrides)
    task = reverse_task(setting)
    result = ExperimentResult(name, setting, task)
    with one_thread():
        for variant in experiment.variants:
            runs = [train_variant(variant, task, setting, experiment.measure, seed) for seed in setting.seeds]
            result.variants[variant.name] = VariantResult(variant.name, runs)
    if show:
        import matplotlib.pyplot as plt

        print(result.table())
        plot_experiment(result)
        plt.show()
    return result


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
    fig.suptitle(EXPERIMENTS[result.name].question, y=1.02)
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
