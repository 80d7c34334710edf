"""Chapter 14's experiments: small decoder-only language models on the course's German sentences.

The same spirit as :mod:`~transformer_course_tools.notebook.experiments` (chapter 11): the
chapter names its variants, each a change of :class:`~transformer_course.lm.DecoderOnlyConfig`
(``LMVariant(overrides={"norm": "layernorm"})``) or of the schedule (``LMVariant(schedule="paper")``);
every variant is trained from several seeds on one CPU thread, and the result (the same
:class:`~transformer_course_tools.notebook.experiments.ExperimentResult`: table, verdict, spread) states a
difference only where the seeds' ranges do not overlap. Seed ``s`` gives every variant the same
batches, and the same initial value of every tensor whose name and shape agree (:func:`paired_init`),
so two variants of one seed form a pair: :func:`paired_verdict` calls a difference consistent where
the n seeds' paired differences all have one sign (which chance alone gives 1 time in 2^(n-1)), and
beyond the spread where every run of one variant beats every run of the other.

What is measured, on sentences never trained on:

* ``"valid loss"``: the cross-entropy of the next token, per token, on held-out German sentences
  (the texts the model was trained on look like them: one sentence, ``<bos> … <eos>``);
* ``"loss beyond training length"``: the same, on texts of several held-out sentences in a row, at
  the positions past the longest training text (the words inside each sentence only: a sentence's
  first word after the previous one's full stop is a guess the model never learned, see
  :class:`LMData`). :func:`loss_by_position` gives it position by position.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.optim.lr_scheduler import LambdaLR

from transformer_course.batching import batch_stream, pad_sequences
from transformer_course.datasets.sentences import sentence_splits, sentence_tokens
from transformer_course.evaluation import inference
from transformer_course.lm import DecoderOnlyConfig, DecoderOnlyLM, WithoutSource, lm_examples
from transformer_course.recipe import make_adamw, warmup_cosine_scheduler
from transformer_course.schedule import transformer_lr, transformer_scheduler
from transformer_course.training import FitOptions, fit
from transformer_course.vocab import Vocab

from .experiments import FINAL_LOSS, ExperimentResult, Run, VariantResult, _smooth, one_thread

VALID_LOSS = "valid loss"
LONG_LOSS = "loss beyond training length"


@dataclass
class LMData:
    """German sentences as token ids, with a word vocabulary built from the training sentences.

    ``train``: examples for :func:`~transformer_course.batching.batch_stream` (``<bos> sentence <eos>``);
    ``valid``: held-out sentences, the same form; ``long``: texts of ``per_long`` held-out sentences
    in a row (``<bos> s₁ s₂ … <eos>``), each with ``scored``, True for the targets a model trained
    on single sentences can be asked to predict (every word inside a sentence, not the first
    word of the second and later sentences, nor the final ``<eos>``).
    """

    vocab: Vocab
    train: list[tuple[list[int], list[int]]]
    valid: list[list[int]]
    long: list[list[int]]
    scored: list[list[bool]]

    @classmethod
    def german(cls, n_train: int = 20_000, n_valid: int = 500, n_long: int = 100, per_long: int = 4) -> LMData:
        """The German side of :func:`~transformer_course.datasets.sentences.sentence_splits`, word tokens."""
        if n_train < 1 or n_valid < 1 or n_long < 1 or per_long < 1:
            raise ValueError(
                f"need n_train, n_valid, n_long, per_long >= 1, got {n_train}, {n_valid}, {n_long}, {per_long}"
            )
        splits = sentence_splits(n_train=n_train, n_valid=n_valid, n_test=n_long * per_long)
        german = {name: [sentence_tokens(de) for _, de in pairs] for name, pairs in splits.items()}
        vocab = Vocab.build(german["train"])
        valid = [ids for _, ids in lm_examples(german["valid"], vocab)]
        long, scored = [], []
        for start in range(0, n_long * per_long, per_long):
            ids, keep = [vocab.bos_id], []
            for k, tokens in enumerate(german["test"][start : start + per_long]):
                words = vocab.encode(tokens)
                keep += [k == 0] + [True] * (len(words) - 1)  # the target words[0] follows "." unless k == 0
                ids += words
            long.append([*ids, vocab.eos_id])
            scored.append([*keep, False])  # the final <eos>: never after a full stop in training
        return cls(vocab, lm_examples(german["train"], vocab), valid, long, scored)

    @property
    def train_length(self) -> int:
        """The longest training input (``<bos>`` + sentence): positions from here on were never seen."""
        return max(len(target) for _, target in self.train) - 1


@dataclass
class LMSetting:
    """The model's size and the training of every run (each seed of ``seeds`` draws one run)."""

    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    batch_size: int = 64
    steps: int = 300
    lr: float = 3e-3  # the peak rate, for both schedules
    warmup_steps: int = 30
    weight_decay: float = 0.1
    seeds: tuple[int, ...] = (0, 1, 2)


@dataclass
class LMVariant:
    """One line of an experiment: ``overrides`` of :meth:`DecoderOnlyConfig.modern` and the schedule,
    ``"cosine"`` (linear warm-up, cosine decay) or ``"paper"`` (warm-up, then 1/√step, same peak)."""

    name: str = ""
    overrides: dict = field(default_factory=dict)
    schedule: str = "cosine"

    def __post_init__(self) -> None:
        if self.schedule not in ("cosine", "paper"):
            raise ValueError(f"schedule must be 'cosine' or 'paper', got {self.schedule!r}")


def lm_config(data: LMData, setting: LMSetting, overrides: dict | None = None) -> DecoderOnlyConfig:
    """Today's block (:meth:`DecoderOnlyConfig.modern`) at the setting's size, long enough for ``data.long``."""
    longest = max(len(ids) for ids in data.long)
    sizes = dict(d_model=setting.d_model, n_heads=setting.n_heads, n_layers=setting.n_layers, max_len=longest)
    return DecoderOnlyConfig.modern(len(data.vocab), **(sizes | (overrides or {})))


def paired_init(model: nn.Module, seed: int) -> nn.Module:
    """Draw every weight matrix of ``model`` again from a generator seeded by ``(seed, its name)``,
    so that two variants built from one seed share every tensor whose name and shape agree (the
    attention of a SwiGLU and of a ReLU model, say), whatever else they build first.

    Each keeps its module's distribution: a linear layer's Xavier-uniform (:func:`~transformer_course.model.xavier_init`),
    an embedding's normal at the scale it was given (its padding row stays zero). Vectors (biases,
    norm scales) start as constants already. Returns ``model``.
    """
    seen: set[int] = set()
    with torch.no_grad():
        for prefix, module in model.named_modules():
            for name, weight in module.named_parameters(recurse=False):
                if weight.dim() < 2 or id(weight) in seen:  # a tied matrix is drawn once, under its first name
                    continue
                seen.add(id(weight))
                full = f"{prefix}.{name}" if prefix else name
                generator = torch.Generator().manual_seed(zlib.crc32(f"{seed}:{full}".encode()))
                if isinstance(module, nn.Linear):
                    fan_out, fan_in = weight.shape
                    bound = math.sqrt(6 / (fan_in + fan_out))  # Xavier-uniform
                    new = (torch.rand(weight.shape, generator=generator) * 2 - 1) * bound
                else:  # an embedding: a normal draw at the scale of its own initialisation
                    rows = (weight != 0).any(dim=1)  # (V,): False for a padding row
                    scale = weight[rows].float().pow(2).mean().sqrt()  # the RMS it was drawn with
                    new = torch.randn(weight.shape, generator=generator) * scale
                    new[~rows] = 0.0  # a padding row stays zero
                weight.copy_(new)
    return model


def paired_verdict(result: ExperimentResult, metric: str, a: str, b: str) -> str:
    """One sentence on ``a`` against ``b`` on ``metric``, from the seeds' paired differences
    (:meth:`~transformer_course_tools.notebook.experiments.ExperimentResult.paired_differences`: both
    variants of a seed share their batches and every initial tensor they have in common).

    It gives the direction of the mean difference, in how many pairs it holds, and one of three
    verdicts: **beyond the spread** (every run of one beats every run of the other, chapter 08's
    rule), **consistent** (every pair has the same sign, but the runs overlap: with no real effect,
    n pairs agree by chance 1 time in 2^(n-1), which the sentence says), or the pairs disagree."""
    differences = result.paired_differences(metric, a, b)
    n, mean = len(differences), sum(differences) / len(differences)
    direction = "higher" if mean > 0 else "lower"
    agreeing = sum((d > 0) == (mean > 0) for d in differences)
    head = f"*{a}*, {metric}: {direction} than *{b}* by {abs(mean):.3f} nats on average, in {agreeing} of {n} pairs"
    high, low = (a, b) if mean > 0 else (b, a)
    if result.beyond_spread(metric, high, low):
        return f"{head}; **beyond the spread**: every run of one beats every run of the other."
    if paired_consistent(result, metric, a, b):
        return (
            f"{head}; **consistent**, within the spread (with no real difference, {n} pairs agree "
            f"in sign 1 time in {2 ** (n - 1)})."
        )
    return f"{head}; the pairs disagree in sign: no difference."


def paired_consistent(result: ExperimentResult, metric: str, a: str, b: str) -> bool:
    """Whether every paired difference ``a − b`` on ``metric`` has one sign, over at least 3 seeds.
    Consistent is not shown: with no real effect, n pairs agree by chance 1 time in 2^(n-1)."""
    differences = result.paired_differences(metric, a, b)
    return len(differences) >= 3 and (all(d > 0 for d in differences) or all(d < 0 for d in differences))


def paper_scheduler(optimizer: torch.optim.Optimizer, warmup_steps: int, d_model: int) -> LambdaLR:
    """Equation (3) of the paper scaled so that its peak (at ``warmup_steps``) is the optimizer's ``lr``."""
    return transformer_scheduler(
        optimizer, d_model, warmup_steps, scale=1 / transformer_lr(warmup_steps, d_model, warmup_steps)
    )


def token_losses(model: DecoderOnlyLM, texts: Sequence[Sequence[int]], pad_id: int) -> Tensor:
    """The cross-entropy of every next token, teacher-forced; NaN where the target is padding.

    Shape:
        texts: N lists of ids (the longest L) → (N, L - 1)
    """
    batch = pad_sequences(texts, pad_id).to(next(model.parameters()).device)  # (N, L)
    with inference(model):  # evaluation mode, restored after
        logits = model(batch[:, :-1])  # (N, L-1, V)
    losses = F.cross_entropy(logits.transpose(1, 2).float(), batch[:, 1:], reduction="none")  # (N, L-1)
    return losses.masked_fill(batch[:, 1:] == pad_id, math.nan).cpu()


def loss_by_position(model: DecoderOnlyLM, data: LMData) -> Tensor:
    """The mean loss of the scored targets of ``data.long`` at every input position (NaN where none).

    Shape:
        → (L - 1,), entry t: predicting the token after input position t
    """
    losses = token_losses(model, data.long, data.vocab.pad_id)  # (N, L-1)
    scored = torch.zeros_like(losses, dtype=torch.bool)  # (N, L-1)
    for row, keep in enumerate(data.scored):
        scored[row, : len(keep)] = torch.tensor(keep)
    return losses.where(scored, math.nan).nanmean(dim=0)  # (L-1,)


def lm_metrics(model: DecoderOnlyLM, data: LMData) -> dict[str, float]:
    """The validation loss, and the loss on the long texts past the training length (see the module)."""
    valid = token_losses(model, data.valid, data.vocab.pad_id).nanmean().item()
    beyond = loss_by_position(model, data)[data.train_length :]
    return {VALID_LOSS: valid, LONG_LOSS: beyond.nanmean().item()}


def train_lm(variant: LMVariant, data: LMData, setting: LMSetting, seed: int) -> Run:
    """Build, train (AdamW, chapter 08's ``fit``) and measure one variant from one seed."""
    torch.manual_seed(seed)
    model = paired_init(DecoderOnlyLM(lm_config(data, setting, variant.overrides)), seed)  # pairs share weights
    optimizer = make_adamw(model, setting.lr, setting.weight_decay)
    if variant.schedule == "cosine":
        scheduler = warmup_cosine_scheduler(optimizer, setting.warmup_steps, setting.steps)
    else:
        scheduler = paper_scheduler(optimizer, setting.warmup_steps, setting.d_model)
    batches = batch_stream(data.train, setting.batch_size, data.vocab.pad_id, seed=seed)
    options = FitOptions(smoothing=0.0, progress=False)
    start = time.process_time()
    try:
        history = fit(WithoutSource(model), batches, optimizer, scheduler, setting.steps, options=options)
    except FloatingPointError:
        return Run(seed, [], [], {}, time.process_time() - start, diverged=True)
    run = Run(seed, history.losses, history.lrs, lm_metrics(model, data), time.process_time() - start, model)
    run.metrics[FINAL_LOSS] = run.final_loss
    return run


def run_lm_experiment(
    variants: dict[str, LMVariant], data: LMData, setting: LMSetting | None = None, show: bool = True, **overrides
) -> ExperimentResult:
    """Train every variant from every seed of ``setting`` (``overrides`` change it: ``steps=50``).

    Returns an :class:`~transformer_course_tools.notebook.experiments.ExperimentResult` (``task`` holds
    ``data``); ``show`` prints :func:`paired_table` and draws :func:`plot_lm_experiment`, both
    against the first variant.
    """
    if not isinstance(variants, dict) or not variants or not all(isinstance(v, LMVariant) for v in variants.values()):
        raise ValueError(f"variants must be a non-empty dict {{name: LMVariant}}, got {variants!r}")
    setting = replace(setting or LMSetting(), **overrides)
    result = ExperimentResult("language-model", setting, data, question="What do the modern choices change?")
    with one_thread():
        for name, variant in variants.items():
            runs = [train_lm(replace(variant, name=name), data, setting, seed) for seed in setting.seeds]
            result.variants[name] = VariantResult(name, runs)
    if show:
        import matplotlib.pyplot as plt

        print(paired_table(result))
        plot_lm_experiment(result)
        plt.show()
    return result


def paired_table(result: ExperimentResult, baseline: str | None = None) -> str:
    """The baseline's measurements (mean [lowest, highest] over the seeds), then every other
    variant's paired differences from it, seed by seed (variant − baseline; above 0: a higher loss
    than the baseline's). ``baseline`` defaults to the first variant."""
    names = list(result.variants)
    baseline = baseline or names[0]
    metrics = [VALID_LOSS, LONG_LOSS]
    seeds = result.setting.seeds
    width = max(len(name) for name in names) + 2
    column = max(max(len(m) for m in metrics), 8 * len(seeds)) + 2
    rows = [f"{'':<{width}}" + "".join(f"{m:>{column}}" for m in metrics)]
    levels = "".join(f"{_mean_range(result.variants[baseline].values(m)):>{column}}" for m in metrics)
    rows.append(f"{baseline:<{width}}{levels}")
    rows.append(f"above: mean [lowest, highest] of the {len(seeds)} seeds; below: variant − baseline, "
                f"seed by seed ({', '.join(map(str, seeds))})")  # fmt: skip
    for name in names:
        if name != baseline:
            cells = "".join(
                f"{' '.join(f'{d:+.3f}' for d in result.paired_differences(m, name, baseline)):>{column}}"
                for m in metrics
            )
            rows.append(f"{name:<{width}}{cells}")
    return "\n".join(rows)


def _mean_range(values: list[float]) -> str:
    """Three decimals, as the paired differences below it: runs a few thousandths apart stay apart."""
    return f"{sum(values) / len(values):.3f} [{min(values):.3f}, {max(values):.3f}]"


def plot_lm_experiment(result: ExperimentResult, baseline: str | None = None):
    """Left, the training loss of every variant (mean over the seeds, band from the lowest to the
    highest seed). Then one panel per measurement with the paired differences from ``baseline``
    (the first variant by default): one dot per seed, variant − baseline, and a line at 0. A pair
    shares its initial weights and its batches, so its difference is free of the seed's luck."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    names = list(result.variants)
    baseline = baseline or names[0]
    others = [name for name in names if name != baseline]
    metrics = [VALID_LOSS, LONG_LOSS]
    fig, (left, *right) = plt.subplots(
        1, 1 + len(metrics), figsize=(14, 4.4), layout="constrained", gridspec_kw={"width_ratios": [1.1, 1, 1]}
    )
    window = 20
    styles = ["-", "--", ":", "-."]  # curves that nearly coincide stay apart
    for i, variant in enumerate(result.variants.values()):
        curves = torch.stack([_smooth(run.losses, window) for run in variant.runs if run.losses])  # (seeds, steps)
        steps = range(window, window + curves.shape[1])
        left.plot(steps, curves.mean(0), color=f"C{i}", ls=styles[i % len(styles)], label=variant.name, lw=1.4)
        left.fill_between(steps, curves.min(0).values, curves.max(0).values, color=f"C{i}", alpha=0.2, lw=0)
    left.set(xlabel="training step", ylabel=f"training loss (mean of {window} steps)",
             title="Training loss (band: lowest to highest seed)")  # fmt: skip
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    markers = "os^Dv"
    for ax, metric in zip(right, metrics, strict=True):
        for row, name in enumerate(others):
            differences = result.paired_differences(metric, name, baseline)
            colour = f"C{names.index(name)}"
            for k, d in enumerate(differences):
                ax.plot([d], [row], markers[k % len(markers)], color=colour, markersize=7)
            ax.plot([sum(differences) / len(differences)], [row], "|", color="black", markersize=16)
        ax.axvline(0.0, color="black", lw=1.0, ls="--")
        ax.set_yticks(range(len(others)), others if ax is right[0] else [""] * len(others))
        ax.set_ylim(len(others) - 0.5, -0.5)
        ax.set(xlabel="variant − baseline, nats/token (tick: mean)", title=f"{metric}: right of 0 is worse")
        ax.grid(alpha=0.3, axis="x")
    seed_marks = [
        Line2D([], [], marker=markers[k % len(markers)], color="0.3", ls="", label=f"seed {seed}")
        for k, seed in enumerate(result.setting.seeds)
    ]
    right[-1].legend(handles=seed_marks, fontsize=8, loc="lower right")
    fig.suptitle(
        f"{result.question} Each variant against {baseline}, seed by seed "
        f"({len(result.setting.seeds)} seeds, {result.setting.steps} steps each)"
    )
    return fig
