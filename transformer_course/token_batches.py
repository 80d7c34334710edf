"""Chapter 12 — batches by token count (paper §5.1), and each process's share of them.

A batch of a fixed number of sentences is a rectangle as long as its longest sentence: mix a
4-token sentence with a 40-token one and 36 of the short one's slots are padding, computed and
thrown away. The paper instead batches "sentence pairs together by approximate sequence length",
each batch holding about 25,000 source and 25,000 target tokens. Two gains:

* little padding, because every batch holds sentences of nearly the same length;
* an even amount of work per step: many short sentences or few long ones, the padded size
  ``count × longest`` stays under the budget, so memory use is flat and a budget that fits once
  fits always.

Recipe (one epoch): shuffle the examples, sort them by length (the shuffle breaks ties at
random), walk the sorted list filling a batch until one more example would push
``count × longest`` over ``max_tokens`` for the source or the target, then shuffle the batches so
that training does not see the lengths in order. The same ``(seed, epoch)`` always gives the same
batches, which makes runs reproducible and resumable.

Several processes (DistributedDataParallel, ``torchrun``): every rank computes the same list of
batches and takes every ``world_size``-th one, starting at its ``rank``. DDP needs every rank to
make the same number of steps (each step waits for all ranks' gradients), so the list is first
topped up, by repeating its first batches, to a multiple of ``world_size``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from .batching import Batch, epoch_stream

Example = tuple[list[int], list[int]]  # (source ids, target ids)


def _check(src_lengths: Sequence[int], tgt_lengths: Sequence[int], max_tokens: int, rank: int, world_size: int) -> None:
    if len(src_lengths) != len(tgt_lengths):
        raise ValueError(f"src_lengths and tgt_lengths differ in length: {len(src_lengths)} vs {len(tgt_lengths)}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"need 0 <= rank < world_size, got rank={rank}, world_size={world_size}")


def length_sorted(src_lengths: Sequence[int], tgt_lengths: Sequence[int], rng: random.Random) -> list[int]:
    """Example indices sorted by (target, source) length; equal lengths in random order."""
    order = list(range(len(src_lengths)))
    rng.shuffle(order)
    order.sort(key=lambda i: (tgt_lengths[i], src_lengths[i]))  # a stable sort keeps the shuffle among ties
    return order


def pack(
    order: Sequence[int], src_lengths: Sequence[int], tgt_lengths: Sequence[int], max_tokens: int
) -> list[list[int]]:
    """Cut ``order`` into consecutive batches whose padded sizes stay within ``max_tokens``.

    A batch of n examples pads to n × (longest source) source slots and n × (longest target)
    target slots; both must be ≤ ``max_tokens``: a batch of exactly ``max_tokens`` slots is within
    the budget. An example too long to fit even alone is a ``ValueError``.

    ``[3, 0, 1, 2]`` with source lengths ``[2, 3, 5, 2]`` (targets alike) and ``max_tokens=10``:
    ``[[3, 0, 1], [2]]`` (3 × 3 = 9 slots; a fourth example of 5 tokens would make 4 × 5 = 20).
    """
    ### BEGIN SOLUTION
    batches: list[list[int]] = []
    batch: list[int] = []
    longest_src = longest_tgt = 0
    for i in order:
        s, t = src_lengths[i], tgt_lengths[i]
        if max(s, t) > max_tokens:
            raise ValueError(
                f"example {i} has {s} source and {t} target tokens, more than max_tokens={max_tokens}: "
                "raise max_tokens or drop long examples first"
            )
        grown = len(batch) + 1
        if batch and (grown * max(longest_src, s) > max_tokens or grown * max(longest_tgt, t) > max_tokens):
            batches.append(batch)
            batch, longest_src, longest_tgt = [], 0, 0
        batch.append(i)
        longest_src, longest_tgt = max(longest_src, s), max(longest_tgt, t)
    if batch:
        batches.append(batch)  # the last batch, not full
    ### END SOLUTION
    return batches


def shard(batches: Sequence[list[int]], rank: int, world_size: int) -> list[list[int]]:
    """Rank ``rank``'s share: batches ``rank``, ``rank + world_size``, … after topping the list up
    (repeating its first batches) to a multiple of ``world_size``, so every rank gets as many."""
    if not batches:
        return []
    missing = -len(batches) % world_size
    topped = list(batches) + [batches[i % len(batches)] for i in range(missing)]
    return topped[rank::world_size]


def token_batches(
    src_lengths: Sequence[int],
    tgt_lengths: Sequence[int],
    max_tokens: int,
    seed: int = 0,
    epoch: int = 0,
    rank: int = 0,
    world_size: int = 1,
) -> list[list[int]]:
    """One epoch of batches (lists of example indices) under a token budget, for one rank.

    Args:
        src_lengths, tgt_lengths: the lengths of the id lists that will be padded, per example.
        max_tokens: the budget: ``count × longest`` of each batch, for source and for target.
        seed, epoch: fix the shuffles; the same pair always gives the same batches.
        rank, world_size: this process's share (see :func:`shard`); every rank gets
            ``ceil(n_batches / world_size)`` batches.
    """
    _check(src_lengths, tgt_lengths, max_tokens, rank, world_size)
    rng = random.Random(seed * 1_000_003 + epoch)
    batches = pack(length_sorted(src_lengths, tgt_lengths, rng), src_lengths, tgt_lengths, max_tokens)
    rng.shuffle(batches)
    return shard(batches, rank, world_size)


def padding_stats(batches: Sequence[Sequence[int]], src_lengths: Sequence[int], tgt_lengths: Sequence[int]) -> dict:
    """Real tokens, padded slots and the share of slots that are padding, source and target together."""
    real = padded = 0
    for batch in batches:
        for lengths in (src_lengths, tgt_lengths):
            sizes = [lengths[i] for i in batch]
            real += sum(sizes)
            padded += len(sizes) * max(sizes)
    return {"batches": len(batches), "real": real, "padded": padded, "waste": 1 - real / padded if padded else 0.0}


def token_batch_stream(
    examples: Sequence[Example],
    max_tokens: int,
    pad_id: int,
    seed: int = 0,
    start_step: int = 0,
    rank: int = 0,
    world_size: int = 1,
) -> Iterator[Batch]:
    """An endless stream of :class:`~transformer_course.batching.Batch` es under a token budget, epoch after epoch.

    Like :func:`~transformer_course.batching.batch_stream`, batch number ``k`` depends only on
    ``(examples, max_tokens, seed, rank, world_size, k)``: a run resumed at ``start_step`` sees
    the batches the uninterrupted run would have seen. Target lengths count ``<bos>`` and ``<eos>``.
    """
    src_lengths = [len(s) for s, _ in examples]
    tgt_lengths = [len(t) for _, t in examples]
    return epoch_stream(
        lambda epoch: token_batches(src_lengths, tgt_lengths, max_tokens, seed, epoch, rank, world_size),
        examples, pad_id, start_step,
    )  # fmt: skip
