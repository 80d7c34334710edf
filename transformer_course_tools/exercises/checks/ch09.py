"""Checks for chapter 09 — decoding.

References are independent of the package: plain Python loops over the rows and the
candidates (sorting lists, summing probabilities one by one), and small hand-made tables of
log-probabilities whose right answer can be worked out on paper.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import torch
from torch import Tensor

from transformer_course_tools.exercises.probe.calls import call, calls_case

from ._tools import (
    CheckFailure,
    Mistakes,
    expect_close,
    expect_dtype,
    expect_equal,
    expect_shape,
    expect_tuple,
    name_mistake,
)
from .case import Case, Outcome
from .registry import exercise

# -- ex09_1: one greedy step ----------------------------------------------------------------------


def _reference_greedy_step(logits: Tensor, finished: Tensor, eos_id: int, pad_id: int) -> tuple[Tensor, Tensor]:
    tokens, done = [], []
    for row, was_done in zip(logits.tolist(), finished.tolist(), strict=True):
        best = max(range(len(row)), key=lambda v: row[v])
        token = pad_id if was_done else best
        tokens.append(token)
        done.append(was_done or token == eos_id)
    return torch.tensor(tokens), torch.tensor(done)


@exercise("ex09_1", "transformer_course.decoding:greedy_step", "easy")
def greedy_step_cases(larger: bool = False) -> Iterator[Case]:
    """one greedy decoding step

    Nudge: greedy decoding takes the most probable next token; sentences that already ended keep receiving
    padding.

    Hint: take argmax over the last axis; put pad_id in the rows that were already finished (masked_fill); a row
    is now finished if it was, or if its new token is eos_id.
    """
    sizes = ((5, 7, 2, 0), (4, 9, 5, 3), (1, 3, 1, 0), (6, 11, 2, 0))
    if larger:  # the grader's hidden cases
        sizes = ((12, 50, 2, 0), (8, 31, 5, 3), (1, 20, 1, 0), (16, 100, 2, 0))
    for batch, vocab, eos_id, pad_id in sizes:
        logits = torch.randn(batch, vocab)
        logits[0, eos_id] = 10.0  # row 0 picks <eos> now
        finished = torch.zeros(batch, dtype=torch.bool)
        if batch > 2:
            finished[2] = True  # row 2 is already done...
            logits[2, eos_id] = 10.0  # ...even though <eos> is again its most probable token
        label = f"logits {tuple(logits.shape)}, finished {finished.tolist()}, eos_id={eos_id}, pad_id={pad_id}"
        yield Case(label, calls_case(call(logits, finished, eos_id, pad_id)), _judge_greedy)


def _judge_greedy(case: Case, got: Outcome) -> None:
    label, (logits, finished, eos_id, pad_id) = case.label, case.args()
    batch = logits.shape[0]
    tokens, done = expect_tuple(got.output(), "next_tokens, finished", label)
    want_tokens, want_done = _reference_greedy_step(logits, finished, eos_id, pad_id)
    expect_shape(tokens, (batch,), "next_tokens", label)
    expect_dtype(tokens, torch.long, "next_tokens", label)
    expect_shape(done, (batch,), "finished", label)
    expect_dtype(done, torch.bool, "finished", label)
    if batch > 2 and int(tokens[2]) != pad_id:
        raise CheckFailure(
            f"{label}: row 2 had already finished, so its next token must be pad_id={pad_id}, got {int(tokens[2])}: "
            "nothing is generated after <eos>"
        )
    if batch > 2 and not bool(done[2]):
        raise CheckFailure(f"{label}: row 2 had finished before this step and must stay finished")
    if int(tokens[0]) == eos_id and not bool(done[0]):  # said only where the row did produce <eos>
        raise CheckFailure(f"{label}: row 0 just produced eos_id={eos_id}, so it must now be finished")
    name_mistake((tokens, done), (want_tokens, want_done), _greedy_mistakes(logits, finished, eos_id, pad_id), label,
                 0.0, 0.0)  # fmt: skip
    expect_equal(tokens, want_tokens, "next_tokens", label)
    expect_equal(done, want_done, "finished", label)


def _greedy_mistakes(logits: Tensor, finished: Tensor, eos_id: int, pad_id: int) -> Mistakes:
    """The mistakes the checks of row 2 above leave unnamed (a finished row given eos_id or its argmax, or
    made unfinished again, is named there)."""
    best, worst = logits.argmax(-1), logits.argmin(-1).masked_fill(finished, pad_id)
    return [
        ((worst, finished | (worst == eos_id)), "the least probable token is picked (argmin); take argmax over the "
         "last axis"),
        ((best.masked_fill(finished | (best == eos_id), pad_id), finished | (best == eos_id)), f"the new eos_id={eos_id} is replaced by pad_id; emit <eos> "
         "itself, and pad only the rows finished before this step"),
    ]  # fmt: skip


# -- ex09_2: top-p (nucleus) filtering ------------------------------------------------------------


def _reference_nucleus(probs: list[float], top_p: float) -> list[bool]:
    """Keep the most probable tokens, one by one, until their mass reaches top_p."""
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    keep, mass = [False] * len(probs), 0.0
    for i in order:
        if mass >= top_p:
            break
        keep[i] = True
        mass += probs[i]
    return keep


def _distinct_logits(shape: tuple[int, ...], top_ps: tuple[float, ...]) -> Tensor:
    """Random logits whose cumulative probabilities stay clear of every top_p (no ties, no edge)."""
    while True:
        logits = torch.randn(shape) * 1.5
        probs = logits.double().softmax(-1).reshape(-1, shape[-1])
        cumulative = probs.sort(dim=-1, descending=True).values.cumsum(-1)
        gaps = min((cumulative - p).abs().min().item() for p in top_ps if p < 1)
        if gaps > 1e-3 and probs.min().item() > 0:
            return logits


@exercise("ex09_2", "transformer_course.decoding:top_p_filter", "medium")
def top_p_filter_cases(larger: bool = False) -> Iterator[Case]:
    """top-p (nucleus) filtering

    Nudge: nucleus sampling keeps the smallest set of most probable tokens whose total probability reaches p
    (Holtzman et al. 2020, §3.1).

    Hint: sort the logits in descending order, take the softmax and its cumsum; drop a token when the tokens
    *before* it already reach top_p (cumsum - probs >= top_p); scatter that mask back to the vocabulary order
    and mask the dropped logits (the course's rule, ex03_2: a masked logit has probability 0 after the softmax;
    -inf or torch.finfo(logits.dtype).min).
    """
    top_ps = (0.05, 0.3, 0.6, 0.9, 1.0)
    for shape in ((8, 32), (3, 4, 48), (128,)) if larger else ((4, 7), (2, 3, 10), (9,)):
        logits = _distinct_logits(shape, top_ps)
        yield from [Case(f"logits {tuple(shape)}, top_p={top_p}", calls_case(call(logits, top_p)), _judge_nucleus)
                  for top_p in top_ps]  # fmt: skip
    probs = [0.125, 0.5, 0.0625, 0.25, 0.0625]  # exact in binary: float32's softmax of their logs gives them back
    label = f"logits (5,) of probabilities {probs}, top_p=0.75 (tokens 1 and 3 reach top_p exactly: the rest go)"
    kept = [False, True, False, True, False]  # token 0: the mass before it, 0.75, is not < top_p
    yield Case(label, calls_case(call(torch.tensor(probs).log(), 0.75)), _judge_nucleus, given={"kept": kept})


def _judge_nucleus(case: Case, got: Outcome) -> None:
    label, (logits, top_p) = case.label, case.args()
    shape = tuple(logits.shape)
    filtered = expect_shape(got.output(), shape, "filtered logits", label)
    if "kept" not in case.given:  # the boundary case's rows say which token is wrong
        want = _nucleus_with(logits, top_p, lambda cum, p: cum - p >= top_p)
        mistakes = [(lambda wrong=wrong: _sampled(wrong()), what) for wrong, what in _nucleus_mistakes(logits, top_p)]
        name_mistake(_sampled(filtered), _sampled(want), mistakes, label, 1e-12, 1e-9)  # whatever the masked fill
    if torch.isnan(filtered).any():
        raise CheckFailure(f"{label}: the filtered logits contain NaN")
    rows, got_rows = logits.reshape(-1, shape[-1]), filtered.reshape(-1, shape[-1])
    for r, (row, got_row) in enumerate(zip(rows, got_rows, strict=True)):
        probs = [math.exp(x) for x in row.tolist()]
        total = sum(probs)
        kept = torch.tensor(case.given.get("kept") or _reference_nucleus([p / total for p in probs], top_p))
        dropped = torch.softmax(got_row.double(), -1) <= 1e-12  # probability 0 after filtering
        if not kept.any() or dropped.all():
            raise CheckFailure(f"{label}, row {r}: every token was dropped; the most probable one must stay")
        if (dropped & kept).any():
            i = int(torch.nonzero(dropped & kept)[0])
            raise CheckFailure(
                f"{label}, row {r}: token {i} is in the nucleus (kept tokens {torch.nonzero(kept).flatten().tolist()}) "
                "but was dropped; keep a token while the mass of the tokens before it is < top_p "
                "(the token that crosses top_p stays), and keep the vocabulary order"
            )
        if (~dropped & ~kept).any():
            i = int(torch.nonzero(~dropped & ~kept)[0])
            raise CheckFailure(
                f"{label}, row {r}: token {i} is outside the nucleus (kept tokens "
                f"{torch.nonzero(kept).flatten().tolist()}) but still has a non-zero probability"
            )
        want = torch.softmax(row.double(), -1)[kept]  # what sampling uses: the kept tokens' distribution
        expect_close(torch.softmax(got_row.double(), -1)[kept], want / want.sum(),
                     f"probabilities of the kept tokens of row {r}", label, atol=1e-7, rtol=1e-5)  # fmt: skip


def _sampled(logits: Tensor) -> Tensor:
    """What sampling uses: the distribution of the (filtered) logits, in float64."""
    return logits.double().softmax(-1)


def _nucleus_with(logits: Tensor, top_p: float, drop: Callable, fill: float = float("-inf"),
                  back: str = "scatter", descending: bool = True) -> Tensor:  # fmt: skip
    """The filtered logits where ``drop(cumsum, probs)`` (in ``descending`` order) says which tokens go;
    ``back``: how the mask returns to the vocabulary order ("scatter"; "gather" with the sort's order, a
    mistake; "" not at all, a mistake)."""
    probs, order = logits.double().softmax(-1).sort(dim=-1, descending=descending)
    dropped = drop(probs.cumsum(-1), probs)
    if back == "scatter":
        dropped = torch.zeros_like(dropped).scatter(-1, order, dropped)
    elif back == "gather":
        dropped = dropped.gather(-1, order)
    return logits.masked_fill(dropped, fill)


def _nucleus_mistakes(logits: Tensor, top_p: float) -> Mistakes:
    def nucleus(drop: Callable = lambda cum, p: cum - p >= top_p, **kwargs) -> Callable[[], Tensor]:
        return lambda: _nucleus_with(logits, top_p, drop, **kwargs)

    def sorted_output() -> Tensor:  # the sorted logits filtered, never put back
        ordered = logits.sort(dim=-1, descending=True).values
        probs = ordered.double().softmax(-1)
        return ordered.masked_fill(probs.cumsum(-1) - probs >= top_p, float("-inf"))

    return [
        (nucleus(lambda cum, p: cum > top_p), "the token that crosses top_p is dropped; keep a token while the mass "
         "of the tokens before it is < top_p (cumsum − probs < top_p)"),
        (nucleus(back=""), "the mask is applied in the sorted order; scatter it back to the vocabulary order "
         "first"),
        (sorted_output, "the filtered logits are returned in the sorted order: fill the original logits, "
         "with the mask scattered back to the vocabulary order"),
        (nucleus(back="gather"), "the mask is put back with gather(-1, order), which applies the sort again instead "
         "of undoing it: scatter(-1, order, mask) puts each entry back at its token"),
        (nucleus(descending=False), "the probabilities are sorted in ascending order, so the least probable tokens "
         "come first: the nucleus is the most probable ones, sort(descending=True)"),
        (nucleus(lambda cum, p: cum - p < top_p), "the nucleus is dropped and the tail kept: fill -inf where the "
         "mass before the token is >= top_p"),
        (nucleus(fill=0.0), "the dropped logits are set to 0, which still has a probability: mask them as ex03_2 "
         "does, so that their probability is 0 (torch.finfo(logits.dtype).min, or -inf)"),
    ]  # fmt: skip


# -- ex09_3: one beam-search step -----------------------------------------------------------------


def _reference_beam_step(scores, log_probs, finished, lengths, eos_id, pad_id, alpha, penalty=True, old=False,
                         penalised=False, grow=False, freeze=True, keep=True, times=False):  # fmt: skip
    """Every candidate of every sentence in a list, ranked with the GNMT penalty, best K kept. A
    known mistake replayed: no ``penalty``, the penalty of the ``old`` lengths, ``penalised`` scores
    returned, the finished hypotheses' lengths ``grow``n, not ``freeze``d (every token continues
    them), not ``keep``ing their finished flag, the penalty multiplied (``times``)."""

    def penalty_of(length: int, new: int) -> float:
        value = ((5 + (length if old else new)) / 6) ** alpha if penalty else 1.0
        return 1 / value if times else value

    batch, beams, vocab = tuple(log_probs.shape)
    out = {"origin": [], "tokens": [], "scores": [], "finished": [], "lengths": []}
    for b in range(batch):
        candidates = []  # (penalised score, raw score, origin, token, finished, length)
        for k in range(beams):
            before, done, length = float(scores[b, k]), bool(finished[b, k]), int(lengths[b, k])
            grown = length + (grow or not done)
            if done and freeze:  # one continuation: pad, same score, same length
                candidates.append((before / penalty_of(length, grown), before, k, pad_id, keep or pad_id == eos_id,
                                   grown))  # fmt: skip
                continue
            for v in range(vocab):
                raw = before + float(log_probs[b, k, v])
                candidates.append((raw / penalty_of(length, grown), raw, k, v, v == eos_id or (done and keep), grown))
        candidates.sort(key=lambda c: -c[0])
        best = candidates[:beams]
        for key, i in (("origin", 2), ("tokens", 3), ("scores", 0 if penalised else 1), ("finished", 4),
                       ("lengths", 5)):  # fmt: skip
            out[key].append([c[i] for c in best])
    return (
        torch.tensor(out["origin"]),
        torch.tensor(out["tokens"]),
        torch.tensor(out["scores"], dtype=torch.float32),
        torch.tensor(out["finished"]),
        torch.tensor(out["lengths"]),
    )


def _beam_cases(larger: bool = False) -> list[tuple[str, tuple, float]]:
    """``larger``: the grader's hidden cases, more sentences, beams and words."""
    cases = []
    # 1. the first step: one real hypothesis (<bos>) per sentence, the other slots empty (-inf)
    batch, beams, vocab = (3, 5, 20) if larger else (2, 3, 6)
    scores = torch.full((batch, beams), float("-inf"))
    scores[:, 0] = 0.0
    log_probs = torch.randn(batch, beams, vocab).log_softmax(-1)
    zeros = torch.zeros(batch, beams, dtype=torch.long)
    first = f"first step (slots 1, 2 empty = -inf), batch={batch}, beams={beams}, vocab={vocab}" if larger else ""
    cases.append((first or "first step (slots 1, 2 empty = -inf)", (scores, log_probs, zeros.bool(), zeros, 2, 0), 0.6))
    # 2. a middle step, some hypotheses finished, random log-probabilities, several alphas
    for alpha, (eos_id, pad_id) in ((0.0, (2, 0)), (0.6, (2, 0)), (1.0, (4, 3))):
        batch, beams, vocab = (4, 6, 25) if larger else (3, 4, 7)
        scores = -torch.rand(batch, beams) * 6 - 1
        finished = torch.rand(batch, beams) < 0.4
        finished[0, 0] = True
        finished[1] = False
        lengths = torch.randint(2, 6, (batch, beams))
        log_probs = (torch.randn(batch, beams, vocab) * 2).log_softmax(-1)
        log_probs[1, 2, eos_id] = -0.01  # sentence 1 will finish a hypothesis now
        case = f"a middle step, alpha={alpha}, eos_id={eos_id}, pad_id={pad_id}, finished {finished.tolist()}"
        cases.append((case, (scores, log_probs, finished, lengths, eos_id, pad_id), alpha))
    # 3. on paper: a short finished hypothesis against a longer one, where only the penalty decides
    scores = torch.tensor([[-2.0, -2.2]])  # hypothesis 0 ended after 1 token, hypothesis 1 is 3 tokens long
    finished, lengths = torch.tensor([[True, False]]), torch.tensor([[1, 3]])
    log_probs = torch.tensor([[0.02, 0.02, 0.06, 0.9]]).log().expand(1, 2, 4).clone()
    case = "a finished hypothesis of length 1 (score -2.0) against one of length 3 (score -2.2), alpha=1"
    cases.append((case, (scores, log_probs, finished, lengths, 2, 0), 1.0))
    # 4. a shortlist, as an inference engine passes it: each hypothesis's K best tokens, then <eos> and <pad> as
    #    columns K and K+1; its rows sum to less than 1 and are used as they are
    batch, beams = (3, 4) if larger else (2, 3)
    full = (torch.randn(batch, beams, 30) * 2).log_softmax(-1)  # (B, K, 30)
    best = full[..., 2:].topk(beams, dim=-1).values  # (B, K, K): the K best words
    log_probs = torch.cat([best, full[..., :1], torch.full((batch, beams, 1), float("-inf"))], dim=-1)  # (B, K, K+2)
    scores, lengths = -torch.rand(batch, beams) * 4 - 1, torch.randint(2, 6, (batch, beams))
    finished = torch.zeros(batch, beams, dtype=torch.bool)
    finished[0, -1] = True
    case = (f"a shortlist (K={beams} best words, then <eos> and <pad> as columns {beams} and {beams + 1}; rows summing "
            "to less than 1), alpha=0.6")  # fmt: skip
    cases.append((case, (scores, log_probs, finished, lengths, beams, beams + 1), 0.6))
    return cases


@exercise("ex09_3", "transformer_course.decoding:beam_step", "hard")
def beam_step_cases(larger: bool = False) -> list[Case]:
    """one beam-search step (GNMT length penalty)

    Nudge: every hypothesis is extended by every token, the candidates are ranked by their score divided by a
    length penalty, and the best K survive (paper §6.1; Wu et al. 2016, §7).

    Hint: give a finished hypothesis the single continuation pad_id at cost 0 (torch.where with a row of -inf
    and a 0 at pad_id); candidates = scores[..., None] + step; new lengths grow only where not finished; rank
    candidates / gnmt_length_penalty(new lengths, alpha) with topk over the flattened K·V axis; origin = index
    // V, token = index % V; gather scores, finished, lengths.
    """
    return [Case(label, calls_case(call(*args, alpha)), _judge_beam) for label, args, alpha in _beam_cases(larger)]


def _judge_beam(case: Case, got: Outcome) -> None:
    label, (*args, alpha) = case.label, case.args()
    names = "origin, tokens, scores, finished, lengths"
    result = expect_tuple(got.output(), names, label)
    want = _reference_beam_step(*args, alpha)
    shape = tuple(args[0].shape)
    for name, value in zip(names.split(", "), result, strict=True):
        expect_shape(value, shape, name, label)
    name_mistake(tuple(result), want, _beam_mistakes(args, alpha), label)
    origin, tokens, scores, finished, lengths = result
    if origin.dtype.is_floating_point or tokens.dtype.is_floating_point:
        raise CheckFailure(f"{label}: origin and tokens must be integer tensors (use // and %, not /)")
    beams, vocab = args[1].shape[-2:]
    flat = want[0] * vocab + want[1]  # (B, K): the chosen candidates' indices over beams × vocabulary
    if (
        beams < vocab
        and torch.equal(tokens, flat % beams)
        and torch.equal(origin, (flat // beams).clamp(max=beams - 1))
    ):
        raise CheckFailure(f"{label}: origin and token are split with the beam count (// K, % K): the flat index "
                           "runs over K × V candidates, so origin = index // V and token = index % V")  # fmt: skip
    got_pairs = list(zip(origin.tolist(), tokens.tolist(), strict=True))
    want_pairs = list(zip(want[0].tolist(), want[1].tolist(), strict=True))
    for b, (g, w) in enumerate(zip(got_pairs, want_pairs, strict=True)):
        if g == w:
            continue
        pairs = list(zip(g[0], g[1], strict=True))
        finished, pad_id = args[2][b].tolist(), args[5]
        grown = next(((o, token) for o, token in pairs if finished[o] and token != pad_id), None)
        if grown:
            raise CheckFailure(
                f"{label}: sentence {b} continues hypothesis {grown[0]}, which had finished, with token {grown[1]}: a "
                f"finished hypothesis gets one continuation only, pad_id={pad_id} (log-probability 0)"
            )
        if len(set(pairs)) < len(pairs) and bool(args[2][b].any()):
            raise CheckFailure(
                f"{label}: sentence {b} keeps the same (origin, token) twice, {pairs}: a finished "
                "hypothesis must have exactly one continuation (pad_id)"
            )
        raise CheckFailure(
            f"{label}: sentence {b} keeps (origin, token) = {pairs}, expected "
            f"{list(zip(w[0], w[1], strict=True))} (best first, ranked by score / length penalty)"
        )
    expect_close(scores, want[2], "scores (summed log-probabilities, not divided by the penalty)", label)
    expect_equal(finished.bool(), want[3], "finished", label)
    expect_equal(lengths.long(), want[4], "lengths", label)


def _beam_mistakes(args: list, alpha: float) -> Mistakes:
    def step(**mistake: bool) -> Callable[[], tuple]:
        return lambda: _reference_beam_step(*args, alpha, **mistake)

    origin, tokens, scores, finished, lengths = _reference_beam_step(*args, alpha)
    old_finished, old_lengths, eos_id = args[2], args[3], args[4]
    return [
        ((origin, tokens, scores, finished, old_lengths + (~old_finished).long()), "the new lengths are not "
         "reordered: gather them by origin (slot j now continues hypothesis origin[j])"),
        ((origin, tokens, scores, old_finished | (tokens == eos_id), lengths), "the finished flags are not "
         "reordered: gather them by origin, then add token == eos_id"),
        (step(times=True), "the candidates are multiplied by the length penalty; divide them by it before topk"),
        (step(penalty=False), "the candidates are ranked by their raw scores: divide them by the GNMT length "
         "penalty of their new lengths before topk"),
        (step(old=True), "the penalty uses the lengths before this step; a candidate that continues is one token "
         "longer (lengths + 1 where not finished)"),
        (step(penalised=True), "the scores returned are divided by the penalty; return the summed log-probabilities "
         "(rank by the penalised ones only)"),
        (step(grow=True), "a finished hypothesis grows too; its length stays (it continues with pad_id at cost 0)"),
        (step(freeze=False), "a finished hypothesis is continued by every token; give it the single continuation "
         "pad_id at cost 0"),
        (step(keep=False), "finished is only token == eos_id: a hypothesis finished before stays finished (gather "
         "finished by origin)"),
        (lambda: _reference_beam_step(args[0], args[1].log_softmax(-1), *args[2:], alpha), "the log-probabilities are "
         "normalised again (log_softmax): use log_probs as they are (a shortlist's rows sum to less than 1)"),
    ]  # fmt: skip
