"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

from . import right, wrong

# -- mutants


def _pack_with(fits):
    """A greedy packing whose test "does one more example fit?" is ``fits(batch + [i], lengths, max_tokens)``."""

    def pack(order, src_lengths, tgt_lengths, max_tokens):
        batches, batch = [], []
        for i in order:
            if max(src_lengths[i], tgt_lengths[i]) > max_tokens:
                raise ValueError(f"example {i} is longer than max_tokens")
            if batch and not all(fits([*batch, i], lengths, max_tokens) for lengths in (src_lengths, tgt_lengths)):
                batches.append(batch)
                batch = []
            batch.append(i)
        if batch:
            batches.append(batch)
        return batches

    return pack


_budget_on_the_sum = wrong("mutant", "budget on the sum of the lengths, not count × longest")(
    _pack_with(lambda batch, lengths, budget: sum(lengths[i] for i in batch) <= budget)
)


_off_by_one = wrong("mutant", "off by one: a batch of exactly max_tokens slots is split")(
    _pack_with(lambda batch, lengths, budget: len(batch) * max(lengths[i] for i in batch) < budget)
)


_last_length_not_longest = wrong("mutant", "the last example's length taken as the longest")(
    _pack_with(lambda batch, lengths, budget: len(batch) * lengths[batch[-1]] <= budget)
)


@wrong("mutant", "the longest target is not reset when a batch is cut", says="target's longest is not reset")
def _target_longest_not_reset(order, src_lengths, tgt_lengths, max_tokens):
    batches, batch, longest_src, longest_tgt = [], [], 0, 0
    for i in order:
        s, t = src_lengths[i], tgt_lengths[i]
        if max(s, t) > max_tokens:
            raise ValueError(f"example {i} is longer than max_tokens")
        grown = len(batch) + 1
        if batch and (grown * max(longest_src, s) > max_tokens or grown * max(longest_tgt, t) > max_tokens):
            batches.append(batch)
            batch, longest_src = [], 0  # longest_tgt kept from the batches before
        batch.append(i)
        longest_src, longest_tgt = max(longest_src, s), max(longest_tgt, t)
    return [*batches, batch] if batch else batches


@wrong("mutant", "drops the last batch")
def _drops_the_last_batch(order, src_lengths, tgt_lengths, max_tokens):
    return _pack_with(lambda batch, lengths, budget: len(batch) * max(lengths[i] for i in batch) <= budget)(
        order, src_lengths, tgt_lengths, max_tokens
    )[:-1]


@wrong("mutant", "only the target side is budgeted")
def _target_side_only(order, src_lengths, tgt_lengths, max_tokens):
    right = _pack_with(lambda batch, lengths, budget: len(batch) * max(lengths[i] for i in batch) <= budget)
    return right(order, tgt_lengths, tgt_lengths, max_tokens)


@wrong("mutant", "an example longer than the budget is kept")
def _keeps_a_too_long_example(order, src_lengths, tgt_lengths, max_tokens):
    longest = max(max(src_lengths), max(tgt_lengths))
    right = _pack_with(lambda batch, lengths, budget: len(batch) * max(lengths[i] for i in batch) <= budget)
    return right(order, src_lengths, tgt_lengths, max(max_tokens, longest))  # alone in its batch, over the budget


# -- own mistakes and alternatives


def _pack(order, src_lengths, tgt_lengths, max_tokens, too_big):
    batches, batch = [], []
    for i in order:
        if batch and too_big(batch, i):
            batches.append(batch)
            batch = []
        batch.append(i)
    return batches + [batch] if batch else batches


@wrong("own", says="longest before the new example")
def _pack_old_longest(order, src_lengths, tgt_lengths, max_tokens):
    def too_big(batch, i):  # the longest of the batch so far, the new example's length left out
        longest = max(max(src_lengths[j], tgt_lengths[j]) for j in batch)
        return (len(batch) + 1) * longest > max_tokens

    return _pack(order, src_lengths, tgt_lengths, max_tokens, too_big)


@wrong("own", says="count before the new example")
def _pack_old_count(order, src_lengths, tgt_lengths, max_tokens):
    def too_big(batch, i):  # the count before the new example
        grown = [*batch, i]
        return any(len(batch) * max(n[j] for j in grown) > max_tokens for n in (src_lengths, tgt_lengths))

    return _pack(order, src_lengths, tgt_lengths, max_tokens, too_big)


@wrong("own", says="only the source side")
def _pack_source_only(order, src_lengths, tgt_lengths, max_tokens):
    def too_big(batch, i):
        return (len(batch) + 1) * max(src_lengths[j] for j in [*batch, i]) > max_tokens

    return _pack(order, src_lengths, tgt_lengths, max_tokens, too_big)


# -- tester set 'first'


@wrong("tester", "forgets to append the last, partial batch", by="first")
def ex12_1_forgets_last(order, src_lengths, tgt_lengths, max_tokens):
    batches, batch = [], []
    longest_src = longest_tgt = 0
    for i in order:
        s, t = src_lengths[i], tgt_lengths[i]
        if max(s, t) > max_tokens:
            raise ValueError(f"example {i} is longer than max_tokens={max_tokens}")
        grown = len(batch) + 1
        if batch and (grown * max(longest_src, s) > max_tokens or grown * max(longest_tgt, t) > max_tokens):
            batches.append(batch)
            batch, longest_src, longest_tgt = [], 0, 0
        batch.append(i)
        longest_src, longest_tgt = max(longest_src, s), max(longest_tgt, t)
    return batches  # the last, partial batch is lost


@wrong("tester", "budget treated as strict (a batch of exactly max_tokens is cut)", by="first")
def ex12_1_strict_budget(order, src_lengths, tgt_lengths, max_tokens):
    batches, batch = [], []
    longest_src = longest_tgt = 0
    for i in order:
        s, t = src_lengths[i], tgt_lengths[i]
        if max(s, t) > max_tokens:
            raise ValueError(f"example {i} is longer than max_tokens={max_tokens}")
        grown = len(batch) + 1
        if batch and (grown * max(longest_src, s) >= max_tokens or grown * max(longest_tgt, t) >= max_tokens):
            batches.append(batch)
            batch, longest_src, longest_tgt = [], 0, 0
        batch.append(i)
        longest_src, longest_tgt = max(longest_src, s), max(longest_tgt, t)
    if batch:
        batches.append(batch)
    return batches


@wrong("tester", "only the source lengths count toward the budget", by="first")
def ex12_1_source_only(order, src_lengths, tgt_lengths, max_tokens):
    batches, batch = [], []
    longest_src = 0
    for i in order:
        s = src_lengths[i]
        if s > max_tokens:
            raise ValueError(f"example {i} is longer than max_tokens={max_tokens}")
        grown = len(batch) + 1
        if batch and grown * max(longest_src, s) > max_tokens:
            batches.append(batch)
            batch, longest_src = [], 0
        batch.append(i)
        longest_src = max(longest_src, s)
    if batch:
        batches.append(batch)
    return batches


@wrong("tester", "longest source length not reset when a batch is cut", by="first")
def x09_1_src_longest_not_reset(order, src_lengths, tgt_lengths, max_tokens):
    batches, batch = [], []
    longest_src = longest_tgt = 0
    for i in order:
        s, t = src_lengths[i], tgt_lengths[i]
        if max(s, t) > max_tokens:
            raise ValueError(f"example {i} is longer than max_tokens={max_tokens}")
        grown = len(batch) + 1
        if batch and (grown * max(longest_src, s) > max_tokens or grown * max(longest_tgt, t) > max_tokens):
            batches.append(batch)
            batch, longest_tgt = [], 0  # longest_src not reset
        batch.append(i)
        longest_src, longest_tgt = max(longest_src, s), max(longest_tgt, t)
    if batch:
        batches.append(batch)
    return batches


# -- tester set 'second'


def _pack_second(order, src_lengths, tgt_lengths, max_tokens, fits):
    batches, batch = [], []
    for i in order:
        s, t = src_lengths[i], tgt_lengths[i]
        if max(s, t) > max_tokens:
            raise ValueError(f"example {i} has {s} source and {t} target tokens, more than max_tokens={max_tokens}")
        if batch and not fits(batch + [i]):
            batches.append(batch)
            batch = []
        batch.append(i)
    if batch:
        batches.append(batch)
    return batches


@wrong("tester", "budget check strict (< max_tokens): exactly max_tokens splits", by="second")
def pack_strict_budget(order, src_lengths, tgt_lengths, max_tokens):
    def fits(b):
        n = len(b)
        return n * max(src_lengths[j] for j in b) < max_tokens and n * max(tgt_lengths[j] for j in b) < max_tokens

    return _pack_second(order, src_lengths, tgt_lengths, max_tokens, fits)


@wrong("tester", "only source lengths considered", by="second")
def pack_source_only(order, src_lengths, tgt_lengths, max_tokens):
    def fits(b):
        return len(b) * max(src_lengths[j] for j in b) <= max_tokens

    return _pack_second(order, src_lengths, tgt_lengths, max_tokens, fits)


@wrong("tester", "counts summed lengths, not n x longest (padding ignored)", by="second")
def pack_sum_not_padded(order, src_lengths, tgt_lengths, max_tokens):
    def fits(b):
        return sum(src_lengths[j] for j in b) <= max_tokens and sum(tgt_lengths[j] for j in b) <= max_tokens

    return _pack_second(order, src_lengths, tgt_lengths, max_tokens, fits)


# -- tester set 'third'


def _pack_core(order, src_lengths, tgt_lengths, max_tokens, *, strict=False, src_only=False, keep_last=True):
    batches, batch = [], []
    longest_src = longest_tgt = 0
    for i in order:
        s, t = src_lengths[i], tgt_lengths[i]
        if max(s, t) > max_tokens:
            raise ValueError(
                f"example {i} has {s} source and {t} target tokens, more than max_tokens={max_tokens}: "
                "raise max_tokens or drop long examples first"
            )
        grown = len(batch) + 1
        too_src = grown * max(longest_src, s)
        too_tgt = 0 if src_only else grown * max(longest_tgt, t)
        over = (
            (too_src >= max_tokens or too_tgt >= max_tokens)
            if strict
            else (too_src > max_tokens or too_tgt > max_tokens)
        )
        if batch and over:
            batches.append(batch)
            batch, longest_src, longest_tgt = [], 0, 0
        batch.append(i)
        longest_src, longest_tgt = max(longest_src, s), max(longest_tgt, t)
    if batch and keep_last:
        batches.append(batch)
    return batches


@wrong("tester", ">= instead of >: a batch of exactly max_tokens slots is cut", by="third")
def pack_strict(order, src_lengths, tgt_lengths, max_tokens):
    return _pack_core(order, src_lengths, tgt_lengths, max_tokens, strict=True)


@wrong("tester", "only the source lengths are budgeted (targets ignored)", by="third")
def pack_src_only(order, src_lengths, tgt_lengths, max_tokens):
    return _pack_core(order, src_lengths, tgt_lengths, max_tokens, src_only=True)


@wrong("tester", "the last, not full batch is never appended", by="third")
def pack_drop_last(order, src_lengths, tgt_lengths, max_tokens):
    return _pack_core(order, src_lengths, tgt_lengths, max_tokens, keep_last=False)


@right("tester", by="third")
def pack_alt(order, src_lengths, tgt_lengths, max_tokens):
    out = []
    for i in order:
        if src_lengths[i] > max_tokens or tgt_lengths[i] > max_tokens:
            raise ValueError(f"example {i} is longer than max_tokens={max_tokens}")
        if out:
            cand = out[-1] + [i]
            n = len(cand)
            if (
                n * max(src_lengths[j] for j in cand) <= max_tokens
                and n * max(tgt_lengths[j] for j in cand) <= max_tokens
            ):
                out[-1] = cand
                continue
        out.append([i])
    return out
