"""Chapter 12 — what changes when a translator trains on sentences instead of number words.

The loop, the loss, the schedule and the model are chapter 08's. Three settings are new, and
:class:`SentenceProfile` holds them next to the model's size:

* the **vocabulary**: ``vocab_size`` subword tokens learned from the training text of *both*
  languages (:mod:`.subwords`), so that source, target and output layer can share one embedding
  matrix (``share_embeddings``, paper §3.4);
* the **batch**: a budget of ``max_tokens`` padded tokens per batch, source and target each
  (:mod:`.token_batches`, paper §5.1), instead of a number of sentences;
* **long pairs**: a training pair longer than ``max_sentence_tokens`` tokens is left out (real
  corpora hold a few pages-long "sentences" that would not fit any budget).

:func:`sentence_task` makes the chapter's task: the generated sentences (:mod:`.sentences`) in
subword tokens. :func:`training_examples` turns any task into id pairs that fit the budget.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from .batching import Batch, encode_pairs
from .data import Task
from .datasets.sentences import sentence_splits
from .subwords import SubwordTokenizer, subword_task, train_subwords
from .token_batches import token_batch_stream
from .training import TrainingProfile

Example = tuple[list[int], list[int]]  # (source ids, target ids with <bos> … <eos>)


@dataclass
class SentenceProfile(TrainingProfile):
    """Chapter 08's profile plus the settings of real sentences (``batch_size`` is not used)."""

    vocab_size: int = 1000  # BPE tokens shared by source and target (special tokens included)
    max_tokens: int = 2048  # token budget of a batch on one process: count × longest, source and target each
    max_sentence_tokens: int = 128  # training pairs with more tokens on either side are left out
    n_train: int = 60_000  # training pairs of the generated sentence task
    share_embeddings: bool = True  # one matrix for source, target and output (paper §3.4)

    def make_batches(
        self, task: Task, seed: int, start_step: int = 0, rank: int = 0, world_size: int = 1
    ) -> tuple[Iterator[Batch], int]:
        """Batches of ``max_tokens`` tokens, in an order drawn with ``seed``, from batch ``start_step``
        on; ``rank`` and ``world_size``: this process's share when several train together (see
        :func:`~transformer_course.token_batches.shard`). Returns (the stream, how many training pairs
        were left out for their length, see :func:`training_examples`)."""
        examples, left_out = training_examples(task, self)
        pad_id = task.tgt_vocab.pad_id
        return token_batch_stream(examples, self.max_tokens, pad_id, seed, start_step, rank, world_size), left_out


# The chapter's CPU run: chapter 08's model (d_model 128, 2 + 2 layers) on batches of ~60 sentences,
# without dropout: 1,400 steps see each training sentence about 1.4 times, too few to over-fit (measured
# on 300 validation sentences: 86% exact match without dropout, 74% with 0.1; batches of 2,048 tokens
# for as many tokens in all: 65%).
SENTENCE_CPU_PROFILE = SentenceProfile(
    max_tokens=1024, dropout=0.0, steps=1400, warmup_steps=300, lr_scale=0.5, eval_every=200
)
# On a GPU: the paper's base width and four layers, eight times the token budget, in bfloat16.
SENTENCE_GPU_PROFILE = SentenceProfile(
    d_model=512, n_heads=8, d_ff=2048, n_layers=4, max_tokens=16384, vocab_size=4000, n_train=200_000,
    warmup_steps=1000, lr_scale=1.0, steps=5000, eval_every=1000,
)  # fmt: skip
# For tests and CI: the same code path in seconds (set TRANSFORMER_COURSE_PROFILE=tiny for the CLI).
SENTENCE_TINY_PROFILE = SentenceProfile(
    d_model=32, n_heads=2, d_ff=64, n_layers=1, max_tokens=512, vocab_size=300, n_train=2000,
    warmup_steps=20, steps=40, eval_every=0,
)  # fmt: skip


def pick_sentence_profile(device: torch.device | str) -> SentenceProfile:
    """The GPU profile on CUDA, the CPU profile elsewhere (as chapter 08's ``pick_profile``)."""
    return SENTENCE_GPU_PROFILE if torch.device(device).type == "cuda" else SENTENCE_CPU_PROFILE


def shared_tokenizer(train_pairs: list[tuple[str, str]], vocab_size: int, seed: int = 0) -> SubwordTokenizer:
    """One BPE vocabulary learned from the source *and* target sides of the training pairs.

    At most 400,000 texts are used (a sample, chosen with ``seed``): enough for the merges of a
    few thousand tokens, and quick on any corpus.
    """
    return train_subwords([text for pair in train_pairs for text in pair], vocab_size, seed, max_texts=400_000)


def sentence_task(profile: SentenceProfile, tokenizer: SubwordTokenizer | None = None) -> Task:
    """The generated English → German sentences (``profile.n_train`` for training, 1,000 each for
    validation and test, always with the data's seed 0) in subword tokens: ``tokenizer``, or one
    learned from the training text."""
    texts = sentence_splits(n_train=profile.n_train)
    tokenizer = tokenizer or shared_tokenizer(texts["train"], profile.vocab_size, profile.seed)
    return subword_task(texts, tokenizer, name="sentences-en-de")


def training_examples(task: Task, profile: SentenceProfile) -> tuple[list[Example], int]:
    """The task's training pairs as ids, without those longer than the profile allows.

    Returns (examples, how many pairs were left out). The limit is ``max_sentence_tokens``, and
    never more than ``max_tokens``: a pair longer than the budget fits no batch.
    """
    limit = min(profile.max_sentence_tokens, profile.max_tokens)
    examples = encode_pairs(task.train, task.src_vocab, task.tgt_vocab)
    kept = [(s, t) for s, t in examples if len(s) <= limit and len(t) <= limit]
    if not kept:
        raise ValueError(f"every training pair is longer than {limit} tokens: raise max_sentence_tokens")
    return kept, len(examples) - len(kept)
