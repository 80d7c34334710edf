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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from . import _validate
from ._validate import check_ndim
from .cache import DecoderCache
from .evaluation import inference as _inference
from .evaluation import max_output_length
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
        scores: (B, K) summed log-probabilities of the hypotheses (``-inf`` for an empty slot).
        log_probs: (B, K, V) log-probabilities of the next token after each hypothesis.
        finished: (B, K) bool; lengths: (B, K) number of tokens generated so far.

    Returns:
        ``(origin, tokens, scores, finished, lengths)``, each (B, K): which old hypothesis (0…K-1)
        each survivor extends, the token it adds, its summed log-probability (not penalised),
        whether it is finished, and its length.
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


# -- the decoding loops --------------------------------------------------------------------------


# Who computes the next token's logits: your modules, step by step (chapter 09's way), or the
# inference engine (transformer_course_tools/engine/), which reads the trained model once into a plan of its own.
PATHS = ("modules", "engine")


def check_path(path: str) -> None:
    """One line naming the argument unless ``path`` is one of :data:`PATHS`."""
    if path not in PATHS:
        raise ValueError(f"path must be 'modules' (your modules, step by step) or 'engine', got {path!r}")


# On an accelerator the loops ask "has every row finished?" only every this many steps: the
# answer is read on the host, which makes the CPU wait for the GPU. On the CPU reading is free
# and every step is checked (a step saved costs more than the question).
STOP_CHECK_EVERY = 8


@dataclass(frozen=True)
class _Plan:
    """What a decoding loop checked once, before its first step."""

    limits: Tensor | None  # (B,) each row's longest output; None when every row has the same one
    steps: int  # the most tokens any row may get


def _plan(model: nn.Module, src: Tensor, max_len: int | None, path: str = "modules") -> _Plan:
    """Validate a loop's inputs and read what it needs from them, once (one host read)."""
    check_path(path)
    check_ndim(src, 2, "src", "(B, S) of token ids")
    device = next(model.parameters()).device
    if src.device != device:
        raise ValueError(f"src is on {src.device} but the model is on {device}: move one of them")
    config = model.config
    if max_len is not None:
        if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 1:
            raise ValueError(f"max_len must be None (input length + 50) or an integer >= 1, got {max_len!r}")
        if max_len > config.max_len:
            raise ValueError(f"max_len={max_len} is longer than the model's max_len={config.max_len}")
    if src.shape[0] == 0:
        return _Plan(None, max_len or 0)
    if max_len is not None:
        return _Plan(None, max_len)
    limits = max_output_length(model, src)  # (B,)
    longest, shortest = torch.stack([limits.max(), limits.min()]).tolist()  # the one host read, before the loop
    return _Plan(None if shortest == longest else limits, longest)


def _cut(plan: _Plan, step: int, finished: Tensor) -> Tensor:
    """Rows whose limit is reached after ``step + 1`` tokens are finished (nothing after it)."""
    if plan.limits is None:
        return finished
    at_limit = plan.limits <= step + 1  # (B,)
    return finished | (at_limit if finished.dim() == 1 else at_limit[:, None])


def _stop_check_every(src: Tensor) -> int:
    return 1 if _validate.reads_are_free(src) else STOP_CHECK_EVERY


class _Steps:
    """The next-token logits of a decoding loop, step after step, for the rows it holds: your
    modules at work (``path="modules"``).

    The source is encoded once. With the cache (``use_cache=True``) each step feeds
    ``Transformer.decode`` the newest token only; without it the whole prefix goes through
    ``decode`` again (the slow reference the tests compare with). ``<pad>`` and ``<bos>`` are
    never a valid next token: both get probability 0 through an additive bias made once.
    """

    def __init__(self, model: nn.Module, src: Tensor, plan: _Plan, use_cache: bool, repeat: int = 1) -> None:
        self.model = model
        memory_mask = padding_mask(src, model.config.pad_id)  # (B, 1, 1, S)
        memory = model.encode(src, memory_mask)  # (B, S, D)
        self.memory = memory.repeat_interleave(repeat, dim=0)  # (B·K, S, D): row b·K + k is copy k of row b
        self.memory_mask = memory_mask.repeat_interleave(repeat, dim=0)  # (B·K, 1, 1, S)
        self.cache = DecoderCache.for_model(model) if use_cache else None
        self.banned = _special_bias(model, memory.device)  # (V,)

    def next_logits(self, tokens: Tensor, newest: Tensor) -> Tensor:
        """Logits (B, V) of the token after ``tokens`` (B, t), whose last column is ``newest`` (B, 1),
        float32, specials forbidden."""
        if self.cache is None:
            logits = self.model.decode(tokens, self.memory, self.memory_mask)  # (B, t, V): the whole prefix again
        else:
            logits = self.model.decode(newest, self.memory, self.memory_mask, self.cache)  # (B, 1, V)
        return logits[:, -1].float() + self.banned  # (B, V)

    def reorder(self, rows: Tensor) -> None:
        """Beam search: row i continues the earlier row ``rows[i]``."""
        if self.cache is not None:
            self.cache.reorder(rows)

    def beam_step(self, step: Callable) -> Callable:
        """The function that chooses beam search's survivors: your :func:`beam_step` as it is."""
        return step


def _steps(model: nn.Module, src: Tensor, plan: _Plan, use_cache: bool, path: str, repeat: int = 1):
    """The loop's source of next-token logits: your modules (``path="modules"``), or the inference
    engine (``path="engine"``, which reads the model once into a plan of its own and always keeps
    a cache)."""
    if path == "modules":
        return _Steps(model, src, plan, use_cache, repeat)
    if not use_cache:
        raise ValueError("use_cache=False is the modules' reference without a cache: pass path='modules' with it")
    from transformer_course_tools.engine import translation_steps  # the course's engine, read only when asked for

    return translation_steps(model, src, max(plan.steps, 1), repeat)


def _special_bias(model: nn.Module, device: torch.device) -> Tensor:
    """(V,) float32: 0, and ``-inf`` for ``<pad>`` and ``<bos>``; added to logits it forbids them."""
    bias = torch.zeros(model.config.tgt_vocab_size, device=device)  # (V,)
    bias[[model.config.pad_id, model.config.bos_id]] = float("-inf")
    return bias


def _forbid_specials(model: nn.Module, logits: Tensor) -> Tensor:
    """``<pad>`` and ``<bos>`` are never a valid next token: give them probability 0.

    Shape:
        logits: (..., V) → (..., V) float32
    """
    return logits.float() + _special_bias(model, logits.device)


def _generate(
    model: nn.Module,
    src: Tensor,
    max_len: int | None,
    pick: Callable[[Tensor, Tensor], tuple[Tensor, Tensor]],
    use_cache: bool,
    path: str,
) -> Tensor:
    """The loop shared by greedy decoding and sampling; ``pick(logits, finished)`` chooses.

    Inside the loop nothing is read back to the host except the early stop (see
    :data:`STOP_CHECK_EVERY`); a row that reaches its own limit is finished (padding after it).
    """
    plan = _plan(model, src, max_len, path)
    with _inference(model):
        steps = _steps(model, src, plan, use_cache, path)
        tokens = src.new_full((src.shape[0], 1), model.config.bos_id)  # (B, 1): every row starts with <bos>
        finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)  # (B,)
        every = _stop_check_every(src)
        newest = tokens  # (B, 1)
        for step in range(plan.steps):
            next_tokens, finished = pick(steps.next_logits(tokens, newest), finished)  # (B,), (B,)
            finished = _cut(plan, step, finished)
            newest = next_tokens[:, None]  # (B, 1)
            tokens = torch.cat([tokens, newest], dim=1)  # (B, t+1)
            if (step + 1) % every == 0 and finished.all():
                break
        return tokens[:, 1:]  # (B, ≤ plan.steps) without <bos>


def greedy_decode(
    model: nn.Module, src: Tensor, max_len: int | None = None, use_cache: bool = True, *, path: str = "modules"
) -> Tensor:
    """Translate a batch by always taking the most probable next token.

    The source is encoded once; each row stops at its ``<eos>`` (padding after it) and the loop
    stops when every row has finished or reached its limit. The limit is ``max_len`` tokens for
    every row, or by default (``max_len=None``) §6.1's rule, :func:`max_output_length`: each
    row's source length + 50, so that a sentence gets the same translation alone or in a batch.
    The model is put in evaluation mode for the call (its mode is restored afterwards).

    ``path="modules"`` (the default) runs your modules step by step; ``path="engine"`` runs the
    same model through the inference engine (:mod:`transformer_course_tools.engine`): the same tokens,
    faster.

    Shape:
        src: (B, S) source ids (padded with ``pad_id``) → (B, T) target ids without ``<bos>``,
        T ≤ the longest limit
    """
    config = model.config
    pick = lambda lg, fin: greedy_step(lg, fin, config.eos_id, config.pad_id)  # noqa: E731
    return _generate(model, src, max_len, pick, use_cache, path)


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
    path: str = "modules",
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
    _filtered(torch.zeros(1, 2), temperature, top_k, top_p)  # check the arguments before decoding
    config = model.config

    def pick(logits: Tensor, finished: Tensor) -> tuple[Tensor, Tensor]:
        noisy = _noisy_log_probs(logits, temperature, top_k, top_p, generator)  # (B, V)
        return greedy_step(noisy, finished, config.eos_id, config.pad_id)

    return _generate(model, src, max_len, pick, use_cache, path)


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
    path: str = "modules",
) -> tuple[Tensor, Tensor]:
    """Translate a batch with beam search, all sentences and all beams at once.

    Each sentence keeps ``beam_size`` hypotheses; :func:`beam_step` extends them and keeps the
    best by ``log P(Y | X) / lp(Y)`` with the GNMT length penalty ``lp`` (``length_penalty`` is
    its α; the paper used beam 4 and α = 0.6; α = 0 ranks by plain log-probability). A finished
    hypothesis stays in the beam, unchanged, competing with the unfinished ones; the search stops
    when every hypothesis of every sentence is finished or has reached its sentence's limit
    (``max_len``, or by default §6.1's source length + 50: see :func:`greedy_decode`). ``path``:
    your modules (the default) or the inference engine, as in :func:`greedy_decode`.

    Returns:
        ``(tokens, scores)``, always with an axis for the ``n_best`` best hypotheses of each
        sentence, best first: tokens (B, n_best, T) without ``<bos>`` (padding after ``<eos>``)
        and their length-penalised scores (B, n_best). ``tokens[:, 0]`` is the translation.
    """
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be an integer >= 1, got {beam_size!r}")
    if not isinstance(n_best, int) or not 1 <= n_best <= beam_size:
        raise ValueError(f"n_best must be an integer in [1, beam_size={beam_size}], got {n_best!r}")
    if length_penalty < 0:
        raise ValueError(f"length_penalty (alpha) must be >= 0, got {length_penalty}")
    plan = _plan(model, src, max_len, path)
    config, batch, beams = model.config, src.shape[0], beam_size
    with _inference(model):
        steps = _steps(model, src, plan, use_cache, path, repeat=beams)
        choose = steps.beam_step(beam_step)  # your beam_step (the engine may give it a shortlist of tokens)
        tokens = src.new_full((batch * beams, 1), config.bos_id)  # (B·K, 1)
        scores = torch.full((batch, beams), float("-inf"), device=src.device)  # (B, K)
        scores[:, 0] = 0.0  # one real hypothesis (<bos>) per sentence; the other slots are empty
        finished = torch.zeros(batch, beams, dtype=torch.bool, device=src.device)  # (B, K)
        lengths = torch.zeros(batch, beams, dtype=torch.long, device=src.device)  # (B, K)
        first_row = torch.arange(batch, device=src.device)[:, None] * beams  # (B, 1)
        every = _stop_check_every(src)
        newest = tokens  # (B·K, 1)
        for step in range(plan.steps):
            log_probs = steps.next_logits(tokens, newest).log_softmax(dim=-1).view(batch, beams, -1)  # (B, K, V)
            origin, new, scores, finished, lengths = choose(
                scores, log_probs, finished, lengths, config.eos_id, config.pad_id, length_penalty
            )
            finished = _cut(plan, step, finished)  # (B, K)
            rows = (first_row + origin).view(-1)  # (B·K,) the batch row each survivor continues
            newest = new.view(-1, 1)  # (B·K, 1)
            tokens = torch.cat([tokens.index_select(0, rows), newest], dim=1)  # (B·K, t+1)
            steps.reorder(rows)
            if (step + 1) % every == 0 and (finished | scores.isneginf()).all():
                break
        ranked = scores / gnmt_length_penalty(lengths, length_penalty)  # (B, K)
        ranked, order = ranked.sort(dim=1, descending=True)  # (B, K), best first
        out = tokens[:, 1:].view(batch, beams, -1)  # (B, K, T)
        out = out.gather(1, order[..., None].expand_as(out))  # (B, K, T) best first
        out = _pad_after_eos(out, config.eos_id, config.pad_id)
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
    with _inference(model):
        bos = hypotheses.new_full((hypotheses.shape[0], 1), config.bos_id)
        logits = _forbid_specials(model, model(src, torch.cat([bos, hypotheses[:, :-1]], dim=1)))  # (B, T, V)
        token_log_probs = logits.log_softmax(-1).gather(-1, hypotheses[..., None])[..., 0]  # (B, T)
        is_eos = (hypotheses == config.eos_id).long()
        counted = (is_eos.cumsum(-1) - is_eos) == 0  # (B, T): up to and including the first eos
        total = token_log_probs.where(counted, 0.0).sum(-1)  # (B,)
        return total / gnmt_length_penalty(counted.sum(-1), length_penalty)
