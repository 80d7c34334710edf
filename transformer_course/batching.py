"""Chapter 08 — from token ids to training batches: padding, teacher forcing, length buckets.

* :func:`pad_sequences` makes a rectangle of id lists of different lengths;
* :func:`teacher_forcing` cuts a ``<bos> … <eos>`` target into the decoder's input and its labels;
* :func:`batch_stream` yields an endless, deterministic stream of batches whose sentences have
  similar lengths (little padding), epoch after epoch.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from .data import Pair
from .vocab import Vocab


def pad_sequences(sequences: Sequence[Sequence[int]], pad_id: int) -> Tensor:
    """Stack id lists of different lengths into one rectangle, filling the ends with ``pad_id``.

    Shape:
        B lists of lengths ≤ L → (B, L) long
    """
    if not sequences:
        raise ValueError("sequences must not be empty")
    out = torch.full((len(sequences), max(len(s) for s in sequences)), pad_id, dtype=torch.long)  # (B, L)
    for row, seq in enumerate(sequences):
        out[row, : len(seq)] = torch.as_tensor(seq, dtype=torch.long)
    return out


def teacher_forcing(tgt: Tensor) -> tuple[Tensor, Tensor]:
    """Split a padded ``<bos> … <eos>`` target into the decoder input and the labels.

    The decoder reads ``<bos> y1 … yn`` and must predict ``y1 … yn <eos>``: position t sees the
    tokens before t+1 and is asked for token t+1. The last column is dropped from the input
    (it is ``<eos>`` or padding: nothing comes after it) and the first from the labels.

    Shape:
        tgt: (B, T+1) → (decoder input (B, T), labels (B, T))
    """
    if tgt.dim() != 2 or tgt.shape[1] < 2:
        raise ValueError(f"tgt must have shape (B, T+1) with T+1 >= 2 (<bos> ... <eos>), got {tuple(tgt.shape)}")
    ### BEGIN SOLUTION
    return tgt[:, :-1], tgt[:, 1:]  # (B, T), (B, T)
    ### END SOLUTION


@dataclass
class Batch:
    """A training batch. ``src`` (B, S), ``tgt_in`` (B, T) = ``<bos> y…``, ``tgt_out`` (B, T) = ``y… <eos>``,
    padded with ``pad_id``."""

    src: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    pad_id: int = 0

    @property
    def n_tokens(self) -> int:
        """Number of real (non-padding) target tokens: what the loss averages over."""
        return int((self.tgt_out != self.pad_id).sum())

    def to(self, device: torch.device | str) -> Batch:
        return Batch(self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device), self.pad_id)


def encode_pairs(pairs: Sequence[Pair], src_vocab: Vocab, tgt_vocab: Vocab) -> list[tuple[list[int], list[int]]]:
    """Token pairs → id pairs: the source as is, the target wrapped in ``<bos> … <eos>``."""
    return [(src_vocab.encode(s), tgt_vocab.encode(t, add_bos=True, add_eos=True)) for s, t in pairs]


def make_batch(examples: Sequence[tuple[list[int], list[int]]], pad_id: int) -> Batch:
    """Pad encoded examples into one :class:`Batch` (teacher forcing applied)."""
    src = pad_sequences([s for s, _ in examples], pad_id)  # (B, S)
    tgt_in, tgt_out = teacher_forcing(pad_sequences([t for _, t in examples], pad_id))  # (B, T) each
    return Batch(src, tgt_in, tgt_out, pad_id)


def batch_indices(lengths: Sequence[int], batch_size: int, seed: int, epoch: int, bucket: int = 50) -> list[list[int]]:
    """One epoch of example indices grouped into batches, with length bucketing.

    The examples are shuffled (with ``seed`` and ``epoch``), cut into pools of
    ``bucket × batch_size`` examples, each pool sorted by length and cut into batches, and the
    batches shuffled: every batch holds examples of similar length (little padding) and the
    order still changes from epoch to epoch. ``bucket=1`` turns bucketing off.
    """
    if batch_size < 1 or bucket < 1:
        raise ValueError(f"batch_size and bucket must be >= 1, got {batch_size} and {bucket}")
    rng = random.Random(seed * 1_000_003 + epoch)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches = []
    pool = bucket * batch_size
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: lengths[i])
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def batch_stream(
    examples: Sequence[tuple[list[int], list[int]]],
    batch_size: int,
    pad_id: int,
    seed: int = 0,
    start_step: int = 0,
    bucket: int = 50,
) -> Iterator[Batch]:
    """An endless, deterministic stream of training batches, epoch after epoch.

    Batch number ``k`` depends only on ``(examples, batch_size, seed, k)``, so a resumed run
    that starts at ``start_step`` sees exactly the batches the uninterrupted run would have seen.
    """
    lengths = [len(s) + len(t) for s, t in examples]
    return epoch_stream(
        lambda epoch: batch_indices(lengths, batch_size, seed, epoch, bucket), examples, pad_id, start_step
    )


def epoch_stream(
    epoch_batches: Callable[[int], list[list[int]]],
    examples: Sequence[tuple[list[int], list[int]]],
    pad_id: int,
    start_step: int = 0,
) -> Iterator[Batch]:
    """The batches of ``epoch_batches(0)``, then of ``epoch_batches(1)``, … made into :class:`Batch` es.

    ``epoch_batches(epoch)`` gives one epoch as lists of example indices; the first ``start_step``
    batches are skipped (whole epochs without building their tensors).
    """
    if not examples:
        raise ValueError("examples must not be empty")
    step, epoch = 0, 0
    while True:
        batches = epoch_batches(epoch)
        if step + len(batches) <= start_step:  # skip a whole epoch without building tensors
            step += len(batches)
        else:
            for indices in batches:
                if step >= start_step:
                    yield make_batch([examples[i] for i in indices], pad_id)
                step += 1
        epoch += 1
