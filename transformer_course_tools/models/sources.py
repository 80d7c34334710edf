"""Where the command line's text of chapter 12 comes from: ``--task sentences-en-de`` (generated here),
``--dataset NAME`` (the Hugging Face Hub, cached) or ``--data-dir DIR`` (your own text files).

A :class:`Source` names one of them; it is recorded in the checkpoint (``extra["source"]``) so
that ``evaluate model.pt`` scores the test split of the text the model was trained on. The text
becomes a task of subword tokens with a tokenizer learned from its training pairs, or, for
``evaluate``, ``translate`` and ``--resume``, with the checkpoint's own tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from transformer_course.data import Task
from transformer_course.datasets.corpora import load_hub_corpus, load_text_corpus
from transformer_course.datasets.sentences import sentence_splits
from transformer_course.sentence_training import SentenceProfile, shared_tokenizer
from transformer_course.subwords import SubwordTokenizer, subword_task

from . import SENTENCE_TASKS  # noqa: F401 - the generated tasks of chapter 12, where they were always found

TextPairs = dict[str, list[tuple[str, str]]]


@dataclass(frozen=True)
class Source:
    """``kind`` is "task", "dataset" or "data_dir"; ``value`` the task name, dataset name or folder;
    ``max_pairs`` caps the pairs of each split (the first ones; for the generated task, training only)."""

    kind: str
    value: str
    max_pairs: int | None = None

    @property
    def name(self) -> str:
        """The task name recorded in a checkpoint: the task or dataset, or the folder's name."""
        return Path(self.value).name if self.kind == "data_dir" else self.value

    def to_dict(self) -> dict:
        return {"kind": self.kind, "value": self.value, "max_pairs": self.max_pairs}

    @classmethod
    def from_dict(cls, data: dict) -> Source:
        return cls(str(data["kind"]), str(data["value"]), data.get("max_pairs"))


def load_texts(source: Source, n_train: int = 60_000, training: bool = True) -> TextPairs:
    """The (source text, target text) pairs of each split. ``training=False`` leaves train empty
    (evaluating needs only the held-out splits)."""
    if source.kind == "task":
        # the data's seed is fixed: a training --seed changes the model, never the test set
        n_train = min(n_train, source.max_pairs or n_train) if training else 0
        return {name: list(pairs) for name, pairs in sentence_splits(n_train=n_train).items()}
    if source.kind == "dataset":
        corpus = load_hub_corpus(source.value, max_pairs=source.max_pairs)
    else:
        corpus = load_text_corpus(source.value, max_pairs=source.max_pairs)
    texts = corpus.splits()
    return texts if training else {**texts, "train": []}


def source_task(source: Source, profile: SentenceProfile, tokenizer: SubwordTokenizer | None = None) -> Task:
    """The training task of ``source`` in subword tokens: ``tokenizer`` (resuming), or one learned
    from the training pairs (for the generated task the same as ``sentence_training.sentence_task``)."""
    texts = load_texts(source, profile.n_train)
    if tokenizer is None:
        tokenizer = shared_tokenizer(texts["train"], profile.vocab_size, profile.seed)
    return subword_task(texts, tokenizer, name=source.name)


def held_out_task(source: Source, tokenizer: SubwordTokenizer) -> Task:
    """The validation and test pairs of ``source`` in ``tokenizer``'s tokens (no training pairs)."""
    return subword_task(load_texts(source, training=False), tokenizer, name=source.name)


def with_vocab_size(profile: SentenceProfile, vocab_size: int | None) -> SentenceProfile:
    return profile if vocab_size is None else replace(profile, vocab_size=vocab_size)
