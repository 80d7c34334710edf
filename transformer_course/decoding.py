"""Chapter 09 — turning a trained model into a translator: greedy decoding, beam search, sampling.

The model gives a distribution over the next target token given the source and the target so
far. Decoding chooses tokens one at a time, feeding each choice back in, until ``<eos>``:

* :func:`greedy_decode` takes the most probable token at each step;
* :func:`beam_search` keeps the ``beam_size`` best partial translations (paper §6.1: beam 4 and
  the length penalty of Wu et al. 2016 with α = 0.6);
* :func:`sample` draws each token at random, sharpened or flattened by a temperature and
  restricted by top-k or top-p (nucleus) filtering.

All three work on a batch of sentences, on any device, encode the source once, and by default
use a :class:`~transformer_course.cache.DecoderCache` so that each step feeds the decoder only
the newest token (``use_cache=False`` recomputes the whole prefix, to compare).

How long may a translation get? The paper's rule (§6.1): the source's length + 50 tokens, stopping
early when possible. :func:`max_output_length` computes it for each row; it is the default of all
three (``max_len=None``), and an integer ``max_len`` caps every row instead.

Outputs are padded token ids **without** the leading ``<bos>``; each row ends with its
``<eos>`` (if it produced one within its limit), followed by padding. ``<pad>`` and
``<bos>`` are never valid next tokens, so all three give them probability 0.

Where do the logits come from? Each loop asks a :class:`Predictor` for them, step after step:
your modules (:class:`ModulePredictor`), or, with ``path=ENGINE``, an inference engine that reads
the trained model its own way (:class:`Engine`; the course's is ``transformer_course_tools.engine``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor, nn

from . import _validate
from ._validate import check_ndim, check_same_device, check_token_ids
from .cache import DecoderCache
from .evaluation import inference, max_output_length
from .masks import padding_mask

# -- pieces of one decoding step -----------------------------------------------------------------


def greedy_step(logits: Tensor, finished: Tensor, eos_id: int, pad_id: int) -> tuple[Tensor, Tensor]:
    """One step of greedy decoding for a batch: the most probable next token of every row.

    A row that has already produced ``<eos>`` is finished: it gets ``pad_id`` instead (nothing is
    generated after ``<eos>``). A row that picks ``eos_id`` now becomes finished.

    Shape:
        logits: (B, V) scores of the next token, finished: (B,) bool
        → (next_tokens (B,) long, finished (B,) bool)

    Neither input is modified.
    """
    ### BEGIN SOLUTION
    next_tokens = logits.argmax(dim=-1)  # (B,)
    next_tokens = next_tokens.masked_fill(finished, pad_id)  # finished rows only pad
    return next_tokens, finished | (next_tokens == eos_id)  # (B,), (B,)
    ### END SOLUTION


def top_k_filter(logits: Tensor, top_k: int) -> Tensor:
    """Keep the ``top_k`` largest logits of each row; the others become ``-inf`` (probability 0).

    Shape:
        logits: (..., V) → (..., V)
    """
    if not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an integer >= 1, got {top_k!r}")
    if top_k >= logits.shape[-1]:
        return logits
    threshold = logits.topk(top_k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest
    return logits.masked_fill(logits < threshold, float("-inf"))


def top_p_filter(logits: Tensor, top_p: float) -> Tensor:
    """Nucleus filtering (Holtzman et al. 2020): keep the smallest set of most probable tokens
    whose probabilities add up to at least ``top_p``; the others become ``-inf``.

    A token is kept when the tokens more probable than it add up to less than ``top_p``, so the
    most probable token is always kept and ``top_p = 1`` keeps every token.

    A filtered token gets probability 0 after the softmax, the course's one rule for masked
    logits (chapter 03, ex03_2). ``-inf`` gives it here: the kept set is never empty, so no row
    turns into NaN.

    Shape:
        logits: (..., V) → (..., V), in the original token order
    """
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    ### BEGIN SOLUTION
    sorted_logits, order = logits.sort(dim=-1, descending=True)  # (..., V), most probable first
    probs = sorted_logits.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs  # (..., V): mass of the strictly more probable tokens
    drop_sorted = before >= top_p
    drop = drop_sorted.scatter(-1, order, drop_sorted)  # (..., V): back to vocabulary order
    return logits.masked_fill(drop, float("-inf"))
    ### END SOLUTION


def gnmt_length_penalty(lengths: Tensor, alpha: float) -> Tensor:
    """The length penalty of Wu et al. (2016), eq. 14: ``lp(Y) = ((5 + |Y|) / 6) ** alpha``.

    Beam search ranks hypotheses by ``log P(Y | X) / lp(Y)``. Log-probabilities only go down as
    a hypothesis grows, so without the penalty (``alpha = 0``) short translations win; a larger
    ``alpha`` favours longer ones. ``|Y|`` counts the generated tokens, ``<eos>`` included.

    Shape:
        lengths: any shape → the same shape, float
    """
    return ((5.0 + lengths.float()) / 6.0) ** alpha


def beam_step(
    scores: Tensor,
    log_probs: Tensor,
    finished: Tensor,
    lengths: Tensor,
    eos_id: int,
    pad_id: int,
    alpha: float = 0.6,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """One step of beam search for B sentences with K hypotheses each.

    Every hypothesis that is not finished is extended by every token of the vocabulary; a
    finished one (it ended with ``<eos>``) has exactly one continuation, ``pad_id``, which keeps
    its score and its length (so it is neither extended nor copied K times). Among the K·V
    candidates of each sentence the K with the best *length-penalised* score
    ``score / gnmt_length_penalty(length, alpha)`` survive, best first; a candidate whose new
    token is ``eos_id`` is finished.

    Args:
        scores: the summed log-probabilities of the hypotheses.
        log_probs: the log-probabilities of the next token after each hypothesis, used as
            they are: ``-inf`` for a token that cannot come next, and a row may sum to less than
            1 (an engine may pass a shortlist: the K most probable tokens, ``<eos>`` and ``<pad>``).
        finished: whether each hypothesis is finished; lengths: the number of tokens it has generated.
        eos_id, pad_id: ``<eos>`` and ``<pad>``, two different ids in [0, V).

    Returns:
        ``(origin, tokens, scores, finished, lengths)``: which old hypothesis (0…K-1)
        each survivor extends, the token it adds, its summed log-probability (not penalised),
        whether it is finished, and its length.

    Shape:
        scores: (B, K) (``-inf`` for an empty slot), log_probs: (B, K, V), finished: (B, K) bool,
        lengths: (B, K) long → five tensors (B, K)
    """
    ### BEGIN SOLUTION
    batch, beams, vocab = log_probs.shape
    frozen = torch.full_like(log_probs, float("-inf"))  # (B, K, V)
    frozen[..., pad_id] = 0.0  # the only continuation of a finished hypothesis: pad, for free
    step = torch.where(finished[..., None], frozen, log_probs)  # (B, K, V)
    candidates = scores[..., None] + step  # (B, K, V) summed log-probabilities
    new_lengths = lengths + (~finished).long()  # (B, K): finished ones do not grow
    ranked = candidates / gnmt_length_penalty(new_lengths, alpha)[..., None]  # (B, K, V)
    flat = ranked.reshape(batch, beams * vocab).topk(beams, dim=-1).indices  # (B, K) in K·V
    origin, tokens = flat // vocab, flat % vocab  # (B, K), (B, K)
    new_scores = candidates.reshape(batch, beams * vocab).gather(1, flat)  # (B, K)
    new_finished = finished.gather(1, origin) | (tokens == eos_id)  # (B, K)
    return origin, tokens, new_scores, new_finished, new_lengths.gather(1, origin)
    ### END SOLUTION


# -- where the next token's logits come from -----------------------------------------------------

BeamStep = Callable[..., tuple[Tensor, Tensor, Tensor, Tensor, Tensor]]  # beam_step's signature and result


class Predictor(Protocol):
    """The logits of the next token, step after step, for one decoding call: all that the loops
    below ask of whatever computes them. Your modules are one (:class:`ModulePredictor` for a
    translator, chapter 13's ``LanguageModelModules`` for a language model); an inference engine
    is another (``path=ENGINE``, chapter 16's section 3), and must give the same tokens.
    """

    def next_logits(self, tokens: Tensor, new: Tensor) -> Tensor:
        """The float32 logits of the token after each row of ``tokens``; the tokens that are never
        next (:func:`never_next`) get ``-inf``.

        Shape:
            tokens: (B, t) everything so far, new: (B, n) its last n columns, which this predictor
            has not read yet (at the first call every column) → (B, V)
        """
        ...

    def reorder(self, rows: Tensor) -> None:
        """Beam search: row i now continues the earlier row ``rows[i]`` (rows: (B·K,))."""
        ...

    def survivors(self, beam_step: BeamStep) -> BeamStep:
        """What beam search chooses its survivors with: ``beam_step`` itself, or a function that
        calls it with arguments its docstring allows and returns the same survivors."""
        ...


class Engine(Protocol):
    """Something that decodes a model in place of your modules: pass it as ``path``."""

    def predictor(self, model: nn.Module, inputs: Tensor, capacity: int, repeat: int = 1) -> Predictor:
        """A :class:`Predictor` for one call: ``inputs`` is a translator's source (B, S) or a
        language model's prompt (B, T), ``capacity`` the most positions a row will hold, and
        ``repeat`` the rows that follow each input row (beam search's hypotheses)."""
        ...


def never_next(config: object) -> list[int]:
    """The ids that are never a valid next token: ``<pad>`` and ``<bos>``, unless one of them is
    also ``<eos>`` (GPT-2 and Llama have one id for all three, and it must end a text)."""
    return sorted({config.pad_id, config.bos_id} - {config.eos_id})


def never_next_bias(config: object, vocab_size: int, device: torch.device) -> Tensor:
    """(V,) float32: 0, and ``-inf`` for :func:`never_next`; added to logits it forbids them."""
    bias = torch.zeros(vocab_size, device=device)  # (V,)
    bias[never_next(config)] = float("-inf")
    return bias


class ModulePredictor:
    """Your modules as a translator's :class:`Predictor` (chapter 06's ``Transformer``).

    The source is encoded once. With the cache (``use_cache=True``) each step feeds
    ``Transformer.decode`` the new token only; without it the whole prefix goes through ``decode``
    again (the slow reference the tests compare with).
    """

    def __init__(self, model: nn.Module, src: Tensor, use_cache: bool = True, repeat: int = 1) -> None:
        self.model = model
        memory_mask = padding_mask(src, model.config.pad_id)  # (B, 1, 1, S)
        memory = model.encode(src, memory_mask)  # (B, S, D)
        self.memory = memory.repeat_interleave(repeat, dim=0)  # (B·K, S, D): row b·K + k is copy k of row b
        self.memory_mask = memory_mask.repeat_interleave(repeat, dim=0)  # (B·K, 1, 1, S)
        self.cache = DecoderCache(model) if use_cache else None
        self.never = never_next_bias(model.config, model.config.tgt_vocab_size, memory.device)  # (V,)

    def next_logits(self, tokens: Tensor, new: Tensor) -> Tensor:
        if self.cache is None:
            logits = self.model.decode(tokens, self.memory, self.memory_mask)  # (B, t, V): the whole prefix again
        else:
            logits = self.cache.decode(new, self.memory, self.memory_mask)  # (B, 1, V)
        return logits[:, -1].float() + self.never  # (B, V)

    def reorder(self, rows: Tensor) -> None:
        if self.cache is not None:
            self.cache.reorder(rows)

    def survivors(self, beam_step: BeamStep) -> BeamStep:
        return beam_step


def start_predictor(
    path: str | Engine,
    model: nn.Module,
    inputs: Tensor,
    capacity: int,
    repeat: int,
    use_cache: bool,
    modules: Callable[[], Predictor],
) -> Predictor:
    """The predictor a loop runs on: your ``modules()`` for ``path="modules"``, else the engine
    ``path`` (which always keeps a cache)."""
    if isinstance(path, str):
        if path == "engine":  # the spelling before the engine became an argument
            raise ValueError("path='engine' is now the engine itself: from transformer_course_tools.engine import ENGINE, "
                             "then path=ENGINE")  # fmt: skip
        if path != "modules":
            raise ValueError(f"path must be 'modules' (your modules, step by step) or an engine, got {path!r}")
        return modules()
    if not callable(getattr(path, "predictor", None)):
        raise ValueError(f"path must be 'modules' or an engine (an object with a predictor method), got {path!r}")
    if not use_cache:
        raise ValueError("use_cache=False is the modules' reference without a cache: pass path='modules' with it")
    return path.predictor(model, inputs, capacity, repeat)


# -- the decoding loops --------------------------------------------------------------------------


# On an accelerator the loops ask "has every row finished?" only every this many steps: the
# answer is read on the host, which makes the CPU wait for the GPU. On the CPU reading is free
# and every step is checked (a step saved costs more than the question).
STOP_CHECK_EVERY = 8


@dataclass(frozen=True)
class _Limits:
    """How long a loop may run, read once before its first step."""

    rows: Tensor | None  # (B,) each row's longest output; None when every row has the same one
    longest: int  # the most tokens any row may get (0 for an empty batch: no step)


def _limits(model: nn.Module, src: Tensor, max_len: int | None) -> _Limits:
    """Validate a loop's inputs and read what it needs from them, once (one host read)."""
    config = model.config
    check_ndim(src, 2, "src", "(B, S) of token ids")
    check_same_device(model, src, "src")
    check_token_ids(src, config.src_vocab_size, "src")
    if src.shape[1] == 0:
        raise ValueError("src must hold at least one token per row: (B, S) with S >= 1")
    if src.shape[1] > config.max_len:
        raise ValueError(f"src has length {src.shape[1]}, longer than max_len={config.max_len}")
    if max_len is not None:
        if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 1:
            raise ValueError(f"max_len must be None (input length + 50) or an integer >= 1, got {max_len!r}")
        if max_len > config.max_len:
            raise ValueError(f"max_len={max_len} is longer than the model's max_len={config.max_len}")
    if src.shape[0] == 0:
        return _Limits(None, 0)
    if max_len is not None:
        return _Limits(None, max_len)
    limits = max_output_length(model, src)  # (B,)
    longest, shortest = torch.stack([limits.max(), limits.min()]).tolist()  # the one host read, before the loop
    return _Limits(None if shortest == longest else limits, longest)


def _cut(limits: Tensor | None, step: int, finished: Tensor) -> Tensor:
    """Rows whose limit is reached after ``step + 1`` tokens are finished (nothing after it)."""
    if limits is None:
        return finished
    at_limit = limits <= step + 1  # (B,)
    return finished | (at_limit if finished.dim() == 1 else at_limit[:, None])


class _Stop:
    """When a loop may stop, and whether its logits are sound (no NaN, no +inf): asked at every
    step on the CPU, where reading is free; on an accelerator only every :data:`STOP_CHECK_EVERY`
    steps, both questions in one read. Logits that are not sound are refused in one line that
    names the first weight holding NaN or inf (:func:`~._validate.first_non_finite`)."""

    def __init__(self, model: nn.Module, x: Tensor) -> None:
        self.model, self.free = model, _validate.reads_are_free(x)
        self.every = 1 if self.free else STOP_CHECK_EVERY
        self.sound = torch.ones((), dtype=torch.bool, device=x.device)  # every logit seen so far, on the device

    def see(self, logits: Tensor, step: int) -> None:
        """Logits (or beam scores made from them) of this step: NaN or +inf makes them unsound."""
        sound = logits.amax() < float("inf")  # False for NaN and +inf (-inf: a token never next)
        if self.free:
            if not sound:
                self._refuse(step)
        else:
            self.sound = self.sound & sound

    def now(self, step: int, done: Tensor) -> bool:
        """Whether every row is ``done`` (checked at this step)."""
        if (step + 1) % self.every:
            return False
        if self.free:
            return bool(done.all())
        if not bool(done.all() | ~self.sound):  # one read for both questions
            return False
        if not bool(self.sound):
            self._refuse(step)
        return True

    def last(self, step: int) -> None:
        """After the loop: the logits since the last question."""
        if not self.free and (step + 1) % self.every and not bool(self.sound):
            self._refuse(step)

    def _refuse(self, step: int) -> None:
        culprit = _validate.first_non_finite(self.model)
        where = f"the logits at step {step + 1} are NaN or infinite"
        raise ValueError(f"{culprit}: the model cannot decode ({where})" if culprit else f"{where}, though every "
                         "weight is finite: look at the inputs")  # fmt: skip


def token_chooser(
    eos_id: int,
    pad_id: int,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]:
    """``choose(logits, finished) → (next_tokens, finished)``: the most probable token
    (``temperature=0``, :func:`greedy_step`) or a draw from the filtered distribution (the
    Gumbel-max trick: greedy on noisy log-probabilities, see :func:`sample`). The sampling
    arguments are checked here, once, before decoding.

    Shape:
        logits: (B, V), finished: (B,) bool → (B,) long, (B,) bool
    """
    _filtered(torch.zeros(1, 2), temperature if temperature != 0 else 1.0, top_k, top_p)  # checks the arguments
    if temperature == 0:
        return lambda logits, finished: greedy_step(logits, finished, eos_id, pad_id)

    def choose(logits: Tensor, finished: Tensor) -> tuple[Tensor, Tensor]:
        noisy = _noisy_log_probs(logits, temperature, top_k, top_p, generator)  # (B, V)
        return greedy_step(noisy, finished, eos_id, pad_id)

    return choose


def generate_tokens(
    model: nn.Module,
    predictor: Predictor,
    tokens: Tensor,
    steps: int,
    choose: Callable[[Tensor, Tensor], tuple[Tensor, Tensor]],
    limits: Tensor | None = None,
) -> Tensor:
    """The loop of greedy decoding and sampling, and of chapter 13's ``generate``: at most ``steps``
    times, ``choose`` (:func:`token_chooser`) picks each row's next token from the ``predictor``'s
    logits and it is appended. A row that has produced ``<eos>`` gets padding after it; a row that
    reaches its own limit (``limits``, (B,)) is finished too; the loop stops when every row is.

    Inside the loop nothing is read back to the host but that question (see :data:`STOP_CHECK_EVERY`).

    Shape:
        tokens: (B, t) what each row starts from (``<bos>``, or a prompt) → (B, t + n), n ≤ steps
    """
    finished = torch.zeros(tokens.shape[0], dtype=torch.bool, device=tokens.device)  # (B,)
    if tokens.shape[0] == 0:  # an empty batch: nothing to choose
        return tokens
    stop, new, step = _Stop(model, tokens), tokens, -1
    for step in range(steps):
        logits = predictor.next_logits(tokens, new)  # (B, V)
        stop.see(logits, step)
        next_tokens, finished = choose(logits, finished)  # (B,), (B,)
        finished = _cut(limits, step, finished)
        new = next_tokens[:, None]  # (B, 1)
        tokens = torch.cat([tokens, new], dim=1)  # (B, t+1)
        if stop.now(step, finished):
            return tokens
    stop.last(step)
    return tokens


def _decode(
    model: nn.Module, src: Tensor, max_len: int | None, choose: Callable, use_cache: bool, path: str | Engine
) -> Tensor:
    """Greedy decoding or sampling of a translator: the source is encoded once, every row starts
    with ``<bos>``, and :func:`generate_tokens` runs."""
    limits = _limits(model, src, max_len)
    with inference(model):
        modules = lambda: ModulePredictor(model, src, use_cache)  # noqa: E731
        predictor = start_predictor(path, model, src, max(limits.longest, 1), 1, use_cache, modules)
        tokens = src.new_full((src.shape[0], 1), model.config.bos_id)  # (B, 1): every row starts with <bos>
        return generate_tokens(model, predictor, tokens, limits.longest, choose, limits.rows)[:, 1:]  # without <bos>


def greedy_decode(
    model: nn.Module,
    src: Tensor,
    max_len: int | None = None,
    use_cache: bool = True,
    *,
    path: str | Engine = "modules",
) -> Tensor:
    """Translate a batch by always taking the most probable next token.

    The source is encoded once; each row stops at its ``<eos>`` (padding after it) and the loop
    stops when every row has finished or reached its limit. The limit is ``max_len`` tokens for
    every row, or by default (``max_len=None``) §6.1's rule, :func:`max_output_length`: each
    row's source length + 50, so that a sentence gets the same translation alone or in a batch.
    The model is put in evaluation mode for the call (its mode is restored afterwards).

    ``path="modules"`` (the default) runs your modules step by step; an engine (``path=ENGINE``,
    ``from transformer_course_tools.engine import ENGINE``) runs the same model its own way
    (:class:`Engine`): the same tokens, faster.

    Shape:
        src: (B, S) source ids (padded with ``pad_id``) → (B, T) target ids without ``<bos>``,
        T ≤ the longest limit
    """
    config = model.config
    choose = lambda logits, finished: greedy_step(logits, finished, config.eos_id, config.pad_id)  # noqa: E731
    return _decode(model, src, max_len, choose, use_cache, path)


def sample(
    model: nn.Module,
    src: Tensor,
    max_len: int | None = None,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
    *,
    path: str | Engine = "modules",
) -> Tensor:
    """Translate a batch by drawing each next token at random from the model's distribution.

    The logits are divided by ``temperature`` (below 1 sharpens the distribution, above 1
    flattens it), then optionally restricted to the ``top_k`` most probable tokens and/or the
    nucleus of mass ``top_p``. The draw uses the Gumbel-max trick: adding independent Gumbel
    noise ``-log(-log U)`` to the log-probabilities and taking the arg-max picks token i with
    probability ``p_i`` exactly, so sampling is greedy decoding on noisy logits (and
    ``top_k=1`` is greedy decoding). Pass a ``generator`` (on the model's device) for
    reproducible draws. ``max_len`` and ``path``: as in :func:`greedy_decode`.

    Shape:
        src: (B, S) → (B, T) target ids without ``<bos>``, T ≤ the longest limit
    """
    _filtered(torch.zeros(1, 2), temperature, top_k, top_p)  # temperature 0 is greedy_decode's, not a sample
    config = model.config
    choose = token_chooser(config.eos_id, config.pad_id, temperature, top_k, top_p, generator)
    return _decode(model, src, max_len, choose, use_cache, path)


def sampling_distribution(
    logits: Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> Tensor:
    """The probabilities :func:`sample` draws from: temperature, then top-k, then top-p.

    Shape:
        logits: (..., V) → probabilities (..., V), each row summing to 1
    """
    return _filtered(logits, temperature, top_k, top_p).softmax(dim=-1)


def sample_next_token(
    logits: Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Draw one token per row from :func:`sampling_distribution` (the Gumbel-max trick).

    Shape:
        logits: (B, V) → token ids (B,)
    """
    return _noisy_log_probs(logits, temperature, top_k, top_p, generator).argmax(dim=-1)  # (B,)


def _filtered(logits: Tensor, temperature: float, top_k: int | None, top_p: float | None) -> Tensor:
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature} (for the most probable token use greedy_decode)")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be None or an integer >= 1, got {top_k!r}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be None or in (0, 1], got {top_p}")
    logits = logits.float() / temperature  # (..., V)
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return logits


def _noisy_log_probs(
    logits: Tensor, temperature: float, top_k: int | None, top_p: float | None, generator: torch.Generator | None
) -> Tensor:
    """Log-probabilities plus Gumbel noise: their arg-max is a sample of the distribution."""
    log_probs = _filtered(logits, temperature, top_k, top_p).log_softmax(dim=-1)  # (B, V)
    uniform = torch.rand(log_probs.shape, device=log_probs.device, generator=generator)  # (B, V) in [0, 1)
    gumbel = -torch.log(-torch.log(uniform.clamp_min(torch.finfo(uniform.dtype).tiny)))  # finite everywhere
    return log_probs + gumbel


def beam_search(
    model: nn.Module,
    src: Tensor,
    beam_size: int,
    max_len: int | None = None,
    length_penalty: float = 0.6,
    n_best: int = 1,
    use_cache: bool = True,
    *,
    path: str | Engine = "modules",
) -> tuple[Tensor, Tensor]:
    """Translate a batch with beam search, all sentences and all beams at once.

    Each sentence keeps ``beam_size`` hypotheses; :func:`beam_step` extends them and keeps the
    best by ``log P(Y | X) / lp(Y)`` with the GNMT length penalty ``lp`` (``length_penalty`` is
    its α; the paper used beam 4 and α = 0.6; α = 0 ranks by plain log-probability). A finished
    hypothesis stays in the beam, unchanged, competing with the unfinished ones; the search stops
    when every hypothesis of every sentence is finished or has reached its sentence's limit
    (``max_len``, or by default §6.1's source length + 50: see :func:`greedy_decode`). ``path``:
    your modules (the default) or an engine, as in :func:`greedy_decode`.

    Returns:
        ``(tokens, scores)``, always with an axis for the ``n_best`` best hypotheses of each
        sentence, best first: tokens (B, n_best, T) without ``<bos>`` (padding after ``<eos>``)
        and their length-penalised scores (B, n_best). ``tokens[:, 0]`` is the translation. A
        beam wider than the translations there are keeps empty slots: score ``-inf``, all padding.
    """
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be an integer >= 1, got {beam_size!r}")
    if not isinstance(n_best, int) or not 1 <= n_best <= beam_size:
        raise ValueError(f"n_best must be an integer in [1, beam_size={beam_size}], got {n_best!r}")
    if length_penalty < 0:
        raise ValueError(f"length_penalty (alpha) must be >= 0, got {length_penalty}")
    limits = _limits(model, src, max_len)
    config, batch, beams = model.config, src.shape[0], beam_size
    with inference(model):
        modules = lambda: ModulePredictor(model, src, use_cache, repeat=beams)  # noqa: E731
        predictor = start_predictor(path, model, src, max(limits.longest, 1), beams, use_cache, modules)
        choose = predictor.survivors(beam_step)  # your beam_step (an engine may hand it fewer columns)
        tokens = src.new_full((batch * beams, 1), config.bos_id)  # (B·K, 1)
        scores = torch.full((batch, beams), float("-inf"), device=src.device)  # (B, K)
        scores[:, 0] = 0.0  # one real hypothesis (<bos>) per sentence; the other slots are empty
        finished = torch.zeros(batch, beams, dtype=torch.bool, device=src.device)  # (B, K)
        lengths = torch.zeros(batch, beams, dtype=torch.long, device=src.device)  # (B, K)
        first_row = torch.arange(batch, device=src.device)[:, None] * beams  # (B, 1)
        stop, newest, step = _Stop(model, src), tokens, -1
        for step in range(limits.longest):
            log_probs = predictor.next_logits(tokens, newest).log_softmax(dim=-1).view(batch, beams, -1)  # (B, K, V)
            origin, new, scores, finished, lengths = choose(
                scores, log_probs, finished, lengths, config.eos_id, config.pad_id, length_penalty
            )
            stop.see(scores, step)  # NaN or +inf logits make NaN scores: (B, K) read, not (B·K, V)
            finished = _cut(limits.rows, step, finished)  # (B, K)
            rows = (first_row + origin).view(-1)  # (B·K,) the batch row each survivor continues
            newest = new.view(-1, 1)  # (B·K, 1)
            tokens = torch.cat([tokens.index_select(0, rows), newest], dim=1)  # (B·K, t+1)
            predictor.reorder(rows)
            if stop.now(step, finished | scores.isneginf()):
                break
        else:
            stop.last(step)
        ranked = scores / gnmt_length_penalty(lengths, length_penalty)  # (B, K)
        ranked, order = ranked.sort(dim=1, descending=True)  # (B, K), best first
        out = tokens[:, 1:].view(batch, beams, tokens.shape[1] - 1)  # (B, K, T)
        out = out.gather(1, order[..., None].expand_as(out))  # (B, K, T) best first
        out = _pad_after_eos(out, config.eos_id, config.pad_id)
        out = out.masked_fill(ranked.isneginf()[..., None], config.pad_id)  # an empty slot holds no translation
        return out[:, :n_best], ranked[:, :n_best]  # (B, n, T), (B, n)


def _pad_after_eos(tokens: Tensor, eos_id: int, pad_id: int) -> Tensor:
    """Replace everything after the first ``eos_id`` of each row by ``pad_id``.

    Shape:
        tokens: (..., T) → (..., T)
    """
    seen = (tokens == eos_id).long().cumsum(dim=-1)  # (..., T): eos seen so far, the eos itself included
    after = (seen - (tokens == eos_id).long()) > 0  # strictly after the first eos
    return tokens.masked_fill(after, pad_id)


def score_sequences(model: nn.Module, src: Tensor, hypotheses: Tensor, length_penalty: float = 0.0) -> Tensor:
    """Score given translations with teacher forcing: ``log P(Y | X) / lp(|Y|)``.

    ``hypotheses`` are decoder outputs as the functions above return them (no ``<bos>``,
    padding after ``<eos>``); the tokens up to and including the first ``<eos>`` count (all of
    them when there is none). Useful to compare greedy and beam outputs under one objective.

    Shape:
        src: (B, S), hypotheses: (B, T) → (B,) float
    """
    check_ndim(hypotheses, 2, "hypotheses", "(B, T) of token ids")
    if hypotheses.shape[0] != src.shape[0]:
        raise ValueError(f"src has {src.shape[0]} rows but hypotheses has {hypotheses.shape[0]}")
    config = model.config
    with inference(model):
        bos = hypotheses.new_full((hypotheses.shape[0], 1), config.bos_id)
        logits = model(src, torch.cat([bos, hypotheses[:, :-1]], dim=1)).float()  # (B, T, V)
        logits = logits + never_next_bias(config, config.tgt_vocab_size, logits.device)  # never-next tokens: -inf
        token_log_probs = logits.log_softmax(-1).gather(-1, hypotheses[..., None])[..., 0]  # (B, T)
        is_eos = (hypotheses == config.eos_id).long()
        counted = (is_eos.cumsum(-1) - is_eos) == 0  # (B, T): up to and including the first eos
        total = token_log_probs.where(counted, 0.0).sum(-1)  # (B,)
        return total / gnmt_length_penalty(counted.sum(-1), length_penalty)
