"""Chapter 12 token-count batches: the budget, the packing, determinism, ranks' shares, the stream."""

from __future__ import annotations

import random
from itertools import islice

import pytest
import torch

from transformer_course.batching import batch_indices
from transformer_course.token_batches import (
    pack,
    padding_stats,
    shard,
    token_batch_stream,
    token_batches,
)


def _random_lengths(n: int, seed: int = 0) -> tuple[list[int], list[int]]:
    rng = random.Random(seed)
    src = [rng.randint(1, 30) for _ in range(n)]
    return src, [max(1, s + rng.randint(-5, 8)) for s in src]


def test_pack_by_hand():
    # lengths 1…8 in a shuffled order; budget 8 slots: {1,2} (2×2=4; adding 3 would make 3×3=9),
    # {3,4} (2×4=8), then 5, 6, 7 and 8 alone (two of them would need at least 2×6=12)
    lengths = [5, 1, 8, 3, 2, 7, 4, 6]
    order = sorted(range(8), key=lambda i: lengths[i])
    assert pack(order, lengths, lengths, 8) == [[1, 4], [3, 6], [0], [7], [5], [2]]


def test_the_target_side_counts_too():
    src, tgt = [1, 1, 1, 1], [4, 4, 4, 4]
    assert pack(range(4), src, tgt, 8) == [[0, 1], [2, 3]]  # 4 source slots would fit, 16 target slots not
    assert pack(range(4), tgt, src, 8) == [[0, 1], [2, 3]]


def test_padding_stats_by_hand():
    stats = padding_stats([[0, 1]], [2, 4], [3, 3])
    assert stats == {"batches": 1, "real": 12, "padded": 14, "waste": pytest.approx(2 / 14)}


def test_budget_kept_and_every_example_used_once():
    src, tgt = _random_lengths(2000)
    batches = token_batches(src, tgt, max_tokens=200, seed=3, epoch=1)
    assert sorted(i for b in batches for i in b) == list(range(2000))
    for batch in batches:
        assert len(batch) * max(src[i] for i in batch) <= 200
        assert len(batch) * max(tgt[i] for i in batch) <= 200
    # similar lengths travel together: far less padding than random batches of the same mean size
    mean_size = round(2000 / len(batches))
    fixed = batch_indices([s + t for s, t in zip(src, tgt, strict=True)], mean_size, seed=3, epoch=1, bucket=1)
    assert padding_stats(batches, src, tgt)["waste"] < 0.5 * padding_stats(fixed, src, tgt)["waste"]


def test_deterministic_per_seed_and_epoch():
    src, tgt = _random_lengths(500)
    a = token_batches(src, tgt, 150, seed=0, epoch=0)
    assert a == token_batches(src, tgt, 150, seed=0, epoch=0)
    assert a != token_batches(src, tgt, 150, seed=0, epoch=1)
    assert a != token_batches(src, tgt, 150, seed=1, epoch=0)
    # another epoch shuffles the order and, among equal lengths, the company
    assert sorted(map(sorted, a)) != sorted(map(sorted, token_batches(src, tgt, 150, seed=0, epoch=1)))


def test_shard_by_hand():
    batches = [[i] for i in range(7)]
    # 7 batches for 3 ranks: topped up with batches 0 and 1 to 9, then every third one
    assert shard(batches, 0, 3) == [[0], [3], [6]]
    assert shard(batches, 1, 3) == [[1], [4], [0]]
    assert shard(batches, 2, 3) == [[2], [5], [1]]
    assert shard(batches, 0, 1) == batches
    assert shard([], 0, 2) == []


@pytest.mark.parametrize("world_size", [2, 3, 8])
def test_every_rank_gets_as_many_batches_and_all_examples_are_covered(world_size):
    src, tgt = _random_lengths(1000, seed=world_size)
    whole = token_batches(src, tgt, 120, seed=5, epoch=2)
    shares = [token_batches(src, tgt, 120, seed=5, epoch=2, rank=r, world_size=world_size) for r in range(world_size)]
    assert len({len(s) for s in shares}) == 1
    assert len(shares[0]) == -(-len(whole) // world_size)
    assert {i for s in shares for b in s for i in b} == set(range(1000))
    # the ranks interleave the single-process list: rank r holds batches r, r + w, …
    assert [b for step in zip(*shares, strict=True) for b in step][: len(whole)] == whole


def test_errors():
    with pytest.raises(ValueError, match="example 1 has 9 source and 2 target tokens, more than max_tokens=8"):
        token_batches([1, 9], [1, 2], 8)
    with pytest.raises(ValueError, match="differ in length: 2 vs 1"):
        token_batches([1, 2], [1], 8)
    with pytest.raises(ValueError, match="rank=2, world_size=2"):
        token_batches([1], [1], 8, rank=2, world_size=2)
    with pytest.raises(ValueError, match="max_tokens must be >= 1"):
        token_batches([1], [1], 0)


def _examples(n: int = 300) -> list[tuple[list[int], list[int]]]:
    src, tgt = _random_lengths(n, seed=9)
    return [
        ([4 + i] * s, [1, *[4 + i] * t, 2]) for i, (s, t) in enumerate(zip(src, tgt, strict=True))
    ]  # ids name the example


def test_stream_batches_fit_the_budget_as_tensors():
    for batch in islice(token_batch_stream(_examples(), max_tokens=160, pad_id=0), 40):
        assert batch.src.numel() <= 160
        assert batch.tgt_in.shape[0] * (batch.tgt_in.shape[1] + 1) <= 160  # (B, T+1) before the shift


def test_stream_resumes_where_it_stopped():
    examples = _examples()
    full = list(islice(token_batch_stream(examples, 160, 0, seed=2), 30))  # crosses an epoch boundary
    resumed = list(islice(token_batch_stream(examples, 160, 0, seed=2, start_step=17), 13))
    for a, b in zip(full[17:], resumed, strict=True):
        assert torch.equal(a.src, b.src) and torch.equal(a.tgt_out, b.tgt_out)


def test_stream_shares_by_rank():
    examples = _examples()
    one = next(token_batch_stream(examples, 160, 0, seed=4))
    second = next(token_batch_stream(examples, 160, 0, seed=4, rank=1, world_size=2))
    assert torch.equal(next(token_batch_stream(examples, 160, 0, seed=4, rank=0, world_size=2)).src, one.src)
    assert not torch.equal(second.src, one.src)
    with pytest.raises(ValueError, match="empty"):
        next(token_batch_stream([], 160, 0))
