"""Checks for chapter 12 — token-budget batches, checkpoint averaging, byte-pair merges.

References are independent of the package: Hugging Face ``tokenizers``' own BPE trainer for the
merges, plain Python loops for the batches and element-by-element sums in float64 for the means.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator

import torch
from torch import Tensor

from transformer_course_tools.exercises.probe.calls import call, calls_case, ref
from transformer_course_tools.exercises.probe.wire import MalformedResult, kind

from ._tools import CheckFailure, Mistakes, expect_close, expect_equal, name_mistake, same_tensor
from .case import Case, Outcome, raised
from .registry import exercise

# -- ex12_1: packing length-sorted examples under a token budget ---------------------------------


def _pack_with(order: list[int], src: list[int], tgt: list[int], fits: Callable) -> list[list[int]]:
    """Try each example in the open batch; keep it there if ``fits(batch, i)``, else open a new batch."""
    packed: list[list[int]] = []
    for i in order:
        if packed and fits(packed[-1], i):
            packed[-1] = [*packed[-1], i]
        else:
            packed.append([i])
    return packed


def _padded(batch: list[int], lengths: list[int]) -> int:
    return len(batch) * max(lengths[j] for j in batch)


def _reference_pack(order, src_lengths, tgt_lengths, max_tokens) -> list[list[int]]:
    """The padded sizes, count × longest, of the batch with the example stay within the budget on both sides."""
    sides = (src_lengths, tgt_lengths)
    return _pack_with(order, *sides, lambda b, i: all(_padded([*b, i], n) <= max_tokens for n in sides))


def _pack_mistakes(order: list[int], src: list[int], tgt: list[int], max_tokens: int) -> Mistakes:
    """The batches of typical mistakes in the budget test, replayed."""
    sides = (src, tgt)

    def packed(fits: Callable) -> Callable[[], list[list[int]]]:
        return lambda: _pack_with(order, src, tgt, fits)

    def carried(lengths: list[int], b: list[int], i: int) -> bool:  # the longest of every example so far
        return (len(b) + 1) * max(lengths[j] for j in order[: order.index(i) + 1]) <= max_tokens

    def not_reset(whose: str) -> str:
        return (
            f"{whose} longest is not reset when a new batch starts (it keeps the longest of the earlier "
            "batches): start each batch's longest at 0"
        )

    return [
        (packed(lambda b, i: all(sum(n[j] for j in [*b, i]) <= max_tokens for n in sides)), "the budget is tested "
         "on the sum of the lengths: the budget is count × longest, not the sum (every example is padded to "
         "the batch's longest)"),
        (packed(lambda b, i: all((len(b) + 1) * max(n[j] for j in b) <= max_tokens for n in sides)), "the budget "
         "is tested with the batch's longest before the new example: take the new example's length into the "
         "longest first, then test (count + 1) × longest"),
        (packed(lambda b, i: all(len(b) * max(n[j] for j in [*b, i]) <= max_tokens for n in sides)), "the budget "
         "is tested with the count before the new example: (count + 1) × the new longest must stay within "
         "max_tokens"),
        (packed(lambda b, i: all((len(b) + 1) * n[i] <= max_tokens for n in sides)), "the new example's length is "
         "taken as the batch's longest: the longest is the maximum over every example in the batch (the order "
         "need not be sorted by length on both sides)"),
        (packed(lambda b, i: all(_padded([*b, i], n) < max_tokens for n in sides)), "a batch of exactly max_tokens "
         "slots is within the budget: test ≤ max_tokens, not <"),
        (packed(lambda b, i: _padded([*b, i], tgt) <= max_tokens), "only the target side is tested: the source's "
         "padded size must stay within max_tokens too"),
        (packed(lambda b, i: _padded([*b, i], src) <= max_tokens), "only the source side is tested: the target's "
         "padded size must stay within max_tokens too"),
        (packed(lambda b, i: carried(src, b, i) and carried(tgt, b, i)), not_reset("the batch's")),
        (packed(lambda b, i: carried(src, b, i) and _padded([*b, i], tgt) <= max_tokens), not_reset("the source's")),
        (packed(lambda b, i: _padded([*b, i], src) <= max_tokens and carried(tgt, b, i)), not_reset("the target's")),
    ]  # fmt: skip


def _sorted_order(src_lengths: list[int], tgt_lengths: list[int]) -> list[int]:
    return sorted(range(len(src_lengths)), key=lambda i: (tgt_lengths[i], src_lengths[i], i))


_PACK_CASES = (
    ("all 4 tokens long, exactly 3 fit in 12", [4] * 7, [4] * 7, 12, None),
    ("lengths 2, 3, 5: padded 3 × 5 = 15, though only 10 real tokens", [2, 3, 5, 5], [2, 3, 5, 5], 12, None),
    ("the source is the longer side", [9, 9, 9, 2, 2], [1, 1, 2, 2, 3], 20, None),
    ("one example fills the budget alone", [3, 6, 2], [3, 6, 2], 6, None),
    # the first batch's longest target (4) would refuse example 3 to the second batch if it were not reset
    ("not sorted: the batch's longest may come first", [7, 3, 3, 2, 3, 3], [2, 4, 1, 2, 1, 2], 14, [0, 1, 2, 5, 4, 3]),
)


@exercise("ex12_1", "transformer_course.token_batches:pack", "easy")
def pack_cases(larger: bool = False) -> Iterator[Case]:
    """greedy packing under a token budget

    Nudge: batches are filled greedily so that the padded size of each batch, on either side, stays under the
    token budget (paper §5.1).

    Hint: walk order, keeping the current batch and its longest source and target; if the batch is not empty and
    (count + 1) × the new longest exceeds max_tokens for the source or the target, close the batch and start a new
    one; an example with more than max_tokens tokens on either side is a ValueError; do not forget the last batch.
    """
    for label, src, tgt, max_tokens, order in _PACK_CASES:
        order = _sorted_order(src, tgt) if order is None else order
        probe = calls_case(call(order, src, tgt, max_tokens))
        yield Case(f"{label}: order {order}, src {src}, tgt {tgt}, max_tokens={max_tokens}", probe, _judge_pack)
    rng = random.Random(3 if larger else 2)  # larger: the grader's hidden cases
    for n, max_tokens in ((80, 60), (400, 128), (1000, 200)) if larger else ((40, 30), (200, 64), (500, 100)):
        src = [rng.randint(1, 20) for _ in range(n)]
        tgt = [rng.randint(1, 25) for _ in range(n)]
        label = f"{n} random examples of 1 to 25 tokens, length-sorted, max_tokens={max_tokens}"
        yield Case(label, calls_case(call(_sorted_order(src, tgt), src, tgt, max_tokens)), _judge_pack)
    src, tgt = [3, 4, 11, 2], [3, 5, 4, 2]
    label = f"an example longer than the budget: src {src}, tgt {tgt}, max_tokens=10"  # last: it must raise
    yield Case(label, calls_case(call([3, 0, 1, 2], src, tgt, 10)), _judge_too_long)


def _judge_pack(case: Case, got: Outcome) -> None:
    label, (order, src, tgt, max_tokens) = case.label, case.args()
    batches = got.output()
    if not isinstance(batches, list) or not all(isinstance(b, list) and b for b in batches):
        raise CheckFailure(f"{label}: return a list of non-empty lists of example indices, got {kind(batches)}")
    flat = [i for batch in batches for i in batch]
    if flat != list(order):
        missing = [i for i in order if i not in flat]
        raise CheckFailure(
            f"{label}: the batches, one after the other, must be order itself (every example once, in order); "
            + (f"examples {missing} are missing (the last batch?)" if missing else f"got {batches}")
        )
    want = _reference_pack(order, src, tgt, max_tokens)
    name_mistake(batches, want, _pack_mistakes(order, src, tgt, max_tokens), label)
    for k, batch in enumerate(batches):
        for side, lengths in (("source", src), ("target", tgt)):
            padded = len(batch) * max(lengths[i] for i in batch)
            if padded > max_tokens and len(batch) > 1:
                raise CheckFailure(
                    f"{label}: batch {k} {batch} pads to {len(batch)} × {max(lengths[i] for i in batch)} = {padded} "
                    f"{side} slots, over max_tokens={max_tokens}"
                )
    for k, batch in enumerate(batches[:-1]):
        grown = [*batch, batches[k + 1][0]]
        sizes = [len(grown) * max(lengths[i] for i in grown) for lengths in (src, tgt)]
        if max(sizes) <= max_tokens:
            exact = " (a batch of exactly max_tokens slots is within the budget)" if max(sizes) == max_tokens else ""
            raise CheckFailure(
                f"{label}: batch {k} {batch} could also hold example {grown[-1]}: its padded size would still be "
                f"{max(sizes)} ≤ max_tokens={max_tokens}{exact}"
            )
    expect_equal(batches, want, "the batches", label)


def _expect_value_error(case: Case, got: Outcome, why: str) -> None:
    """The case's one call must raise ``ValueError``; ``why`` says what the learner's code should see."""
    if len(got.calls) != 1:
        raise MalformedResult("call 1 of the case is missing")
    error = got.calls[0]["error"]
    if error is not None and error["stub"]:
        raise NotImplementedError(error["message"])
    if error is None:
        output = got.calls[0]["output"]
        shown = repr(output) if len(repr(output)) <= 200 else f"a {kind(output)}"  # not a dict of tensors in full
        raise CheckFailure(f"{case.label}: {why}, got {shown}")
    if error["type"] != "ValueError":
        message = f"{case.label}: should raise ValueError, {raised(error, case.label)}"
        raise CheckFailure(message, brief=message)  # what it raised is all "what", no fix


def _judge_too_long(case: Case, got: Outcome) -> None:
    _expect_value_error(case, got, "example 2 can never fit, so pack must raise ValueError (saying which example)")


# -- ex12_2: checkpoint averaging ----------------------------------------------------------------


def _states(n: int, seed: int, dtype: torch.dtype = torch.float32, size: tuple[int, int] = (5, 4)):
    generator = torch.Generator().manual_seed(seed)
    steps = torch.tensor(1000 + seed)
    vocab, d_model = size
    return [
        {
            "embed.weight": torch.randn(vocab, d_model, generator=generator).to(dtype),  # (V, D)
            "layer.bias": torch.randn(d_model, generator=generator).to(dtype),  # (D,)
            "norm.num_batches": steps.clone(),  # an integer buffer, the same in every state
        }
        for _ in range(n)
    ]


def _reference_mean(states: list[dict[str, Tensor]]) -> dict[str, Tensor]:
    mean = {}
    for key, first in states[0].items():
        if first.is_floating_point():
            total = torch.zeros(first.shape, dtype=torch.float64)
            for state in states:
                total = total + state[key].double()
            mean[key] = total / len(states)
        else:
            mean[key] = first
    return mean


@exercise("ex12_2", "transformer_course.averaging:average_state_dicts", "medium")
def average_cases(larger: bool = False) -> Iterator[Case]:
    """the mean of several state dicts

    Nudge: the averaged model takes, for every parameter, the mean of its values in the checkpoints (paper
    §6.1).

    Hint: check that every state has the keys of states[0] and, key by key, the same shapes and dtypes (ValueError
    otherwise); average floating-point tensors (stack them in float64, mean over the new axis, back to their
    dtype); keep other tensors only if they are equal in all states.
    """
    counts = ((2, torch.float32), (3, torch.float32), (5, torch.float64), (4, torch.bfloat16))
    if larger:  # the grader's hidden cases: more states, larger tensors, other seeds
        counts = ((4, torch.float32), (6, torch.float32), (9, torch.float64), (7, torch.bfloat16))
    for n, dtype in counts:
        size = (50, 32) if larger else (5, 4)
        states = _states(n, seed=n + 10 * larger, dtype=dtype, size=size)
        probe = calls_case(call(ref("states")), objects={"states": states}, report={"after": ["states"]})
        shapes = f" (embed.weight {size})" if larger else ""
        yield Case(f"{n} states of {dtype}{shapes}", probe, _judge_mean, given={"states": states})
    states = [{key: 30000 + 100 * t if t.is_floating_point() else t for key, t in s.items()} for s in _states(3, 9)]
    states = [{key: t.half() if t.is_floating_point() else t for key, t in s.items()} for s in states]
    probe = calls_case(call(ref("states")), objects={"states": states}, report={"after": ["states"]})
    yield Case("3 states of torch.float16 near 30000 (their sum is past float16's largest, 65504)", probe,
               _judge_mean, given={"states": states})  # fmt: skip
    # the text asks for the sum in float64: in float32, 2^24 + 1 rounds back to 2^24, so the result would depend on
    # the order of the checkpoints (the first column holds 2^24 first, the second last)
    big = float(2**24)
    states = [{"w": torch.tensor([a, b])} for a, b in ((big, 1.0), (1.0, 1.0), (1.0, 1.0), (1.0, big))]
    yield Case("4 float32 states w whose values are 2^24 = 16777216 once and 1 three times, in two orders", calls_case(
        call(states)), _judge_float64_sum, given={"states": states})  # fmt: skip
    states = _states(3, seed=7)
    states[2]["extra.weight"] = torch.ones(2)
    yield Case("3 states, the last with an extra key", calls_case(call(states)), _judge_refused)
    states = _states(3, seed=8)
    states[1]["norm.num_batches"] = torch.tensor(999)
    label = "3 states whose integer buffer norm.num_batches differs (1008, 999, 1008)"
    yield Case(label, calls_case(call(states)), _judge_buffers_differ)


def _judge_mean(case: Case, got: Outcome) -> None:
    label, states = case.label, case.given["states"]
    averaged = got.output()
    if not isinstance(averaged, dict):
        raise CheckFailure(f"{label}: return a dict of tensors, got {kind(averaged)}")
    if list(averaged) != list(states[0]):
        raise CheckFailure(f"{label}: the keys should be {list(states[0])}, got {list(averaged)}")
    for key, want in _reference_mean(states).items():
        tensor = averaged[key]
        if not isinstance(tensor, Tensor) or tensor.dtype != states[0][key].dtype:
            raise CheckFailure(
                f"{label}: {key} should keep its dtype {states[0][key].dtype}, got "
                f"{tensor.dtype if isinstance(tensor, Tensor) else kind(tensor)}"
            )
        if tensor.is_floating_point():
            if not tensor.isfinite().all():
                raise CheckFailure(f"{label}: {key} holds inf or NaN though every state is finite: the sum overflowed "
                                   f"{tensor.dtype}: add the states up in float64, then divide and convert back")  # fmt: skip
            tolerance = {torch.bfloat16: 1e-2, torch.float16: 1e-3}.get(tensor.dtype, 1e-6)
            what, names = f"{key} (the mean of the {len(states)} states)", {"the number of states": len(states)}
            expect_close(tensor, want, what, label, tolerance, tolerance, names=names,
                         mistakes=_mean_mistakes([state[key] for state in states]))  # fmt: skip
        else:
            expect_equal(tensor, want, key, label)
    after = got.report("after")  # the states once the function has returned
    if not (isinstance(after, list) and len(after) == len(states)):
        raise CheckFailure(f"{label}: the list of states passed in was changed; leave it as it is")
    for i, (before, now) in enumerate(zip(states, after, strict=True)):
        now = now if isinstance(now, dict) else {}
        changed = [key for key, tensor in before.items() if not same_tensor(now.get(key), tensor)]
        if changed or list(now) != list(before):
            raise CheckFailure(
                f"{label}: the states passed in were changed (states[{i}], {changed or 'its keys'}): average into "
                "new tensors (accumulating into states[0] in place changes the caller's model)"
            )


def _judge_float64_sum(case: Case, got: Outcome) -> None:
    label, states = case.label, case.given["states"]
    averaged = got.output()
    tensor = averaged.get("w") if isinstance(averaged, dict) else None
    want = (torch.stack([s["w"].double() for s in states]).sum(0) / len(states)).float()  # (2,): exact, then float32
    if not isinstance(tensor, Tensor) or tensor.shape != want.shape or tensor.dtype != torch.float32:
        raise CheckFailure(f"{label}: w should be a float32 tensor of shape (2,), got {kind(tensor)}")
    if not torch.equal(tensor, want):
        what = f"{label}: w should be {want.tolist()} (added up in float64, then float32), got {tensor.tolist()}"
        raise CheckFailure(f"{what}: in float32, 16777216 + 1 rounds back to 16777216, so the mean depends on the "
                           "order of the states; add them up in float64, divide, then convert back to float32",
                           brief=what)  # fmt: skip


def _mean_mistakes(tensors: list[Tensor]) -> Mistakes:
    """The averages of typical mistakes over one key's ``tensors`` (one per state), in float64."""
    stacked = torch.stack([t.double() for t in tensors])  # (n, ...)
    n = len(tensors)
    return [
        (stacked.sum(0), f"the states are summed; divide the sum by the number of states, {n}"),
        (stacked.sum(0) / (n - 1) if n > 1 else stacked[0], f"the sum is divided by n − 1 = {n - 1}; divide it by "
         f"the number of states, n = {n}"),
        (stacked[0], "the first state is returned as it is: average every state"),
        (stacked[-1], "the last state is returned as it is: average every state"),
        (stacked[:2].mean(0), "only the first two states are averaged: average every state"),
        ((stacked[0] + stacked[-1]) / 2, "only the first and the last states are averaged: average every state"),
    ]  # fmt: skip


def _judge_refused(case: Case, got: Outcome) -> None:
    _expect_value_error(case, got, "these states cannot be averaged; raise ValueError saying why")


def _judge_buffers_differ(case: Case, got: Outcome) -> None:
    _expect_value_error(case, got, "an integer buffer that differs cannot be averaged nor picked from one state; "
                                   "raise ValueError saying which")  # fmt: skip


# -- ex12_3: byte-pair merges --------------------------------------------------------------------


def _library_merges(words: dict[str, int], n_merges: int) -> list[tuple[str, str]]:
    """The first merges of ``tokenizers``' BPE trainer on these word counts (words split at spaces only)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=1_000_000, min_frequency=0, show_progress=False)
    tok.train_from_iterator([" ".join([word] * count) for word, count in words.items()], trainer=trainer)
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges][:n_merges]


def _course_words(n_sentences: int) -> dict[str, int]:
    """Word counts of the chapter's training sentences, English and German, cut as ``train_subwords`` cuts them."""
    from transformer_course.datasets.sentences import sentence_splits
    from transformer_course.subwords import pretokenized_words

    pairs = sentence_splits(n_train=n_sentences, n_valid=10, n_test=10)["train"]
    return pretokenized_words(text for pair in pairs for text in pair)


_SMALL_CASES = (
    ("Sennrich's example", {"low": 5, "lower": 2, "newest": 6, "widest": 3}, 10),
    ("counts weigh more than word types", {"ab": 1, "xab": 1, "yab": 1, "cd": 10}, 2),
    ("'aaa' holds the pair (a, a) twice", {"aaa": 2, "bc": 3}, 3),
    ("every occurrence in a word is merged", {"abab": 3, "cd": 4}, 4),
    ("ties between characters", {"ba": 1, "ab": 1, "ca": 1, "ac": 1}, 4),
    ("ties between merged symbols: the older one first", {"zzq": 2, "zz": 2, "aaq": 2, "aa": 1, "zx": 1}, 4),
    ("stops when nothing is left to merge", {"to": 3, "a": 9}, 5),
)


@exercise("ex12_3", "transformer_course.subwords:bpe_merges", "hard")
def bpe_merges_cases(larger: bool = False) -> Iterator[Case]:
    """byte-pair merges from word counts

    Nudge: byte-pair encoding repeatedly merges the most frequent pair of neighbouring symbols (Sennrich et al.
    2016, §3.2).

    Hint: keep each word as a list of symbols; count neighbouring pairs (zip(symbols[:-1], symbols[1:])), adding the
    word's count for every occurrence; pick the most frequent pair, ties to the pair whose left (then right) symbol
    is older (characters by ord(), then merged symbols in the order made); replace it in every word from left to
    right; repeat.
    """
    for label, words, n_merges in _SMALL_CASES:
        yield Case(f"{label}: words {words}, n_merges={n_merges}", calls_case(call(words, n_merges)), _judge_bpe)
    # larger: the grader's hidden cases, more and longer random words, more merges
    rng = random.Random(10 if larger else 9)
    n_words, longest, n_merges = (16, 12, 60) if larger else (6, 7, 30)
    for alphabet in ("ab", "abc▁", "xyzäb"):
        words = {
            "".join(rng.choice(alphabet) for _ in range(rng.randint(1, longest))): rng.randint(1, 4)
            for _ in range(n_words)
        }
        yield Case(f"random words {words}, n_merges={n_merges}", calls_case(call(words, n_merges)), _judge_bpe)
    words, n_merges = _course_words(3000), 120 if larger else 60
    label = f"the {len(words)} words of chapter 12's first 3,000 training pairs, n_merges={n_merges}"
    yield Case(label, calls_case(call(words, n_merges)), _judge_bpe)


def _judge_bpe(case: Case, got: Outcome) -> None:
    words, n_merges = case.args()
    label = case.label if len(case.label) < 120 else case.label.split(":")[0]
    merges = got.output()
    if not isinstance(merges, list) or not all(isinstance(m, tuple) and len(m) == 2 for m in merges):
        raise CheckFailure(f"{label}: return a list of (left, right) tuples of str, got {kind(merges)}")
    want = _library_merges(words, n_merges)
    if len(words) <= 200:  # the replays are plain Python: the small cases only
        name_mistake(merges, want, _bpe_mistakes(words, n_merges), label)
    for i, (mine, theirs) in enumerate(zip(merges, want, strict=False)):
        if mine != theirs:
            raise CheckFailure(
                f"{label}: merge {i} should be {theirs} (as tokenizers' BPE trainer learns it), got {mine}"
                + (f"; the merges before it agree (the last ones: {want[max(i - 3, 0) : i]})" if i else "")
            )
    if len(merges) != len(want):
        raise CheckFailure(
            f"{label}: {len(want)} merges expected (n_merges, or fewer when no word has two symbols left), "
            f"got {len(merges)}"
        )


def _bpe_replay(words: dict[str, int], n_merges: int, per_type: bool = False, overlapping: bool = True,
                choose: Callable | None = None, merge: str = "every") -> list[tuple[str, str]]:  # fmt: skip
    """Byte-pair merges with a known mistake: each word type counted once (``per_type``), the pairs of a run
    of one symbol counted without overlap, another ``choose(counts, age)`` among ties, the pair merged at its
    ``first`` place only or from the ``right``."""
    segmented, age = {word: list(word) for word in words}, {c: ord(c) for word in words for c in word}
    choose = choose or (lambda counts, age: min(counts, key=lambda p: (-counts[p], age[p[0]], age[p[1]])))
    made: list = []  # the merges so far
    while len(made) < n_merges:
        tally: dict = {}  # pair → count
        for word, symbols in segmented.items():
            i = 0
            while i < len(symbols) - 1:
                pair = (symbols[i], symbols[i + 1])
                tally[pair] = tally.get(pair, 0) + (1 if per_type else words[word])
                run = i + 2 < len(symbols) and symbols[i] == symbols[i + 1] == symbols[i + 2]
                i += 2 if run and not overlapping else 1
        if not tally:
            break
        best = choose(tally, age)
        age.setdefault(best[0] + best[1], 0x110000 + len(made))
        made.append(best)
        segmented = {word: _merged(symbols, best, merge) for word, symbols in segmented.items()}
    return made


def _merged(symbols: list[str], pair: tuple[str, str], how: str) -> list[str]:
    """``symbols`` with ``pair`` merged: at ``every`` place from the left, at the ``first`` only, or from the ``right``."""
    if how == "right":  # from the left on the mirrored word, mirrored back
        mirrored = _merged([s[::-1] for s in symbols[::-1]], (pair[1][::-1], pair[0][::-1]), "every")
        return [s[::-1] for s in mirrored[::-1]]
    out, i, merged = [], 0, False
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair and not (merged and how == "first"):
            out, i, merged = [*out, pair[0] + pair[1]], i + 2, True
        else:
            out, i = [*out, symbols[i]], i + 1
    return out


def _bpe_mistakes(words: dict[str, int], n_merges: int) -> Mistakes:
    def replay(**mistake: object) -> Callable[[], list[tuple[str, str]]]:
        return lambda: _bpe_replay(words, n_merges, **mistake)

    def ties(key: Callable) -> Callable:
        return lambda counts, age: min(counts, key=lambda p: (-counts[p], key(p, age)))

    return [
        (replay(per_type=True), "each word type counts once; a pair counts the word's count, once for every place "
         "it occurs"),
        (replay(overlapping=False), "the pairs inside a run of one symbol are counted without overlap; 'aaa' holds "
         "the pair (a, a) twice"),
        (replay(choose=ties(lambda p, age: p)), "ties are broken alphabetically; break them by age: the pair whose "
         "left (then right) symbol is older (characters by ord(), merged symbols in the order made)"),
        (replay(choose=lambda counts, age: max(counts, key=counts.get)), "ties are broken by the pair seen first; "
         "break them by age: the pair whose left (then right) symbol is older"),
        (replay(choose=lambda counts, age: max(reversed(counts), key=counts.get)), "ties are broken by the pair "
         "seen last; break them by age: the pair whose left (then right) symbol is older"),
        (replay(choose=ties(lambda p, age: (-age[p[0]], -age[p[1]]))), "ties go to the newer symbols; they go to "
         "the older: the pair whose left (then right) symbol was made first"),
        (replay(merge="first"), "the pair is merged at its first place in a word only; merge it everywhere"),
        (replay(merge="right"), "the pair is merged from the right; replace it from left to right ('aaa' with (a, a) "
         "becomes 'aa' + 'a')"),
    ]  # fmt: skip
