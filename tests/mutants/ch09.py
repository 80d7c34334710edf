"""Wrong answers for chapter 09: batches, means and merges that look right and are not."""

from __future__ import annotations

import torch

# ex09_1 — pack


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


_budget_on_the_sum = _pack_with(lambda batch, lengths, budget: sum(lengths[i] for i in batch) <= budget)
_off_by_one = _pack_with(lambda batch, lengths, budget: len(batch) * max(lengths[i] for i in batch) < budget)
_last_length_not_longest = _pack_with(lambda batch, lengths, budget: len(batch) * lengths[batch[-1]] <= budget)


def _drops_the_last_batch(order, src_lengths, tgt_lengths, max_tokens):
    return _pack_with(lambda batch, lengths, budget: len(batch) * max(lengths[i] for i in batch) <= budget)(
        order, src_lengths, tgt_lengths, max_tokens
    )[:-1]


def _target_side_only(order, src_lengths, tgt_lengths, max_tokens):
    right = _pack_with(lambda batch, lengths, budget: len(batch) * max(lengths[i] for i in batch) <= budget)
    return right(order, tgt_lengths, tgt_lengths, max_tokens)


def _keeps_a_too_long_example(order, src_lengths, tgt_lengths, max_tokens):
    longest = max(max(src_lengths), max(tgt_lengths))
    right = _pack_with(lambda batch, lengths, budget: len(batch) * max(lengths[i] for i in batch) <= budget)
    return right(order, src_lengths, tgt_lengths, max(max_tokens, longest))  # alone in its batch, over the budget


# ex09_2 — average_state_dicts


def _average_keys_of(states, pick):
    keys = list(states[0])
    for state in states[1:]:
        if list(state) != keys:
            raise ValueError("other keys")
    averaged = {}
    for key in keys:
        tensors = [state[key] for state in states]
        if any(t.shape != tensors[0].shape for t in tensors):
            raise ValueError(f"{key}: other shapes")
        averaged[key] = pick(tensors)
    return averaged


def _mean_of(tensors):
    if not tensors[0].is_floating_point():
        if any(not torch.equal(t, tensors[0]) for t in tensors):
            raise ValueError("integer buffer differs")
        return tensors[0].clone()
    return torch.stack([t.double() for t in tensors]).mean(0).to(tensors[0].dtype)


def _first_two_only(states):
    return _average_keys_of(states[:2], _mean_of) if len(states) > 1 else _average_keys_of(states, _mean_of)


def _sum_not_mean(states):
    return _average_keys_of(states, lambda ts: _mean_of(ts) * len(ts) if ts[0].is_floating_point() else _mean_of(ts))


def _integers_into_floats(states):
    return _average_keys_of(states, lambda ts: torch.stack([t.double() for t in ts]).mean(0).to(torch.float32))


def _accepts_other_keys(states):
    return {key: _mean_of([state[key] for state in states if key in state]) for key in states[0]}


def _accumulates_into_the_first_state(states):
    total = states[0]  # the caller's tensors: += changes their model (a [1, 1, 1] weight becomes [2, 2, 2])
    for state in states[1:]:
        for key, tensor in state.items():
            if tensor.is_floating_point():
                total[key] += tensor
    return {key: t / len(states) if t.is_floating_point() else t.clone() for key, t in total.items()}


def _integer_buffers_not_compared(states):
    return _average_keys_of(states, lambda ts: _mean_of(ts) if ts[0].is_floating_point() else ts[0].clone())


# ex09_3 — bpe_merges


def _bpe(words, n_merges, count, choose, replace):
    """Byte-pair merges with one step swapped: ``count(segmented, words)``, ``choose(counts, age)``,
    ``replace(symbols, pair)``."""
    segmented = {word: list(word) for word in words}
    age = {char: ord(char) for word in words for char in word}
    merges = []
    while len(merges) < n_merges:
        counts = count(segmented, words)
        if not counts:
            break
        best = choose(counts, age)
        age.setdefault(best[0] + best[1], 0x110000 + len(merges))
        merges.append(best)
        for word, symbols in segmented.items():
            segmented[word] = replace(symbols, best)
    return merges


def _weighted(segmented, words):
    counts = {}
    for word, symbols in segmented.items():
        for pair in zip(symbols[:-1], symbols[1:], strict=True):
            counts[pair] = counts.get(pair, 0) + words[word]
    return counts


def _once_per_word_type(segmented, words):
    return _weighted(segmented, dict.fromkeys(words, 1))


def _non_overlapping(segmented, words):
    counts = {}
    for word, symbols in segmented.items():
        i = 0
        while i < len(symbols) - 1:
            pair = (symbols[i], symbols[i + 1])
            counts[pair] = counts.get(pair, 0) + words[word]
            i += 2 if i + 2 < len(symbols) and symbols[i + 2] == symbols[i + 1] == symbols[i] else 1
    return counts


def _older_first(counts, age):
    return min(counts, key=lambda pair: (-counts[pair], age[pair[0]], age[pair[1]]))


def _alphabetical_ties(counts, age):
    return min(counts, key=lambda pair: (-counts[pair], pair))


def _first_seen_ties(counts, age):
    return max(counts, key=counts.get)


def _replace_all(symbols, pair):
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(pair[0] + pair[1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def _replace_first(symbols, pair):
    for i in range(len(symbols) - 1):
        if (symbols[i], symbols[i + 1]) == pair:
            return [*symbols[:i], pair[0] + pair[1], *symbols[i + 2 :]]
    return symbols


def _mutant(count=_weighted, choose=_older_first, replace=_replace_all):
    return lambda words, n_merges: _bpe(words, n_merges, count, choose, replace)


MUTANTS = {
    "ex09_1": [
        ("budget on the sum of the lengths, not count × longest", _budget_on_the_sum),
        ("off by one: a batch of exactly max_tokens slots is split", _off_by_one),
        ("drops the last batch", _drops_the_last_batch),
        ("only the target side is budgeted", _target_side_only),
        ("the last example's length taken as the longest", _last_length_not_longest),
        ("an example longer than the budget is kept", _keeps_a_too_long_example),
    ],
    "ex09_2": [
        ("averages only the first two states", _first_two_only),
        ("sums without dividing", _sum_not_mean),
        ("turns integer buffers into floats", _integers_into_floats),
        ("accepts states with other keys", _accepts_other_keys),
        ("accumulates into states[0] in place", _accumulates_into_the_first_state),
        ("keeps an integer buffer that differs between the states", _integer_buffers_not_compared),
    ],
    "ex09_3": [
        ("counts each pair once per word type, not weighted by frequency", _mutant(count=_once_per_word_type)),
        ("counts 'aaa' as holding (a, a) once", _mutant(count=_non_overlapping)),
        ("merges only the first occurrence in a word", _mutant(replace=_replace_first)),
        ("breaks ties alphabetically", _mutant(choose=_alphabetical_ties)),
        ("breaks ties by the first pair counted", _mutant(choose=_first_seen_ties)),
    ],
}
