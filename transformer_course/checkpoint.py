"""Chapter 08 — checkpoints: everything needed to use a trained model, or to go on training it.

A checkpoint is one file written by ``torch.save`` holding plain data only (tensors, numbers,
strings, lists and dicts): the model's configuration and weights, both vocabularies, the
optimizer and scheduler states, the step, the random-number state and a free ``extra`` dict.
A model trained on subword tokens (chapter 12) also carries its tokenizer, as plain data too, so
that the file alone can turn text into ids and ids back into text.
It is read back with ``torch.load(weights_only=True)``, which refuses to run code hidden in a
file (a pickled object can execute anything when loaded), so opening a checkpoint from
somewhere else is safe.

The trained model that ships with the course, and the SHA-256 check that guards it, are the
course's business: see ``transformer_course_tools/models/pretrained.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Protocol

import torch

from .config import TransformerConfig
from .model import Transformer
from .vocab import Vocab

FORMAT = "transformer-course-checkpoint"
VERSION = 1  # the tokenizer (chapter 12) is an optional entry: files without one read as before


class SavesAsDict(Protocol):
    """A tokenizer that a checkpoint can carry: its token list and a plain-data form."""

    id_to_token: list[str]

    def to_dict(self) -> dict: ...


@dataclass
class Checkpoint:
    """A loaded checkpoint. ``model`` is built from ``config`` and in evaluation mode."""

    model: Transformer
    config: TransformerConfig
    src_vocab: Vocab
    tgt_vocab: Vocab
    step: int = 0
    optimizer_state: dict | None = None
    scheduler_state: dict | None = None
    rng_state: dict | None = None
    extra: dict = field(default_factory=dict)
    tokenizer: dict | None = None  # a subword tokenizer's to_dict() (chapter 12), None for word tokens

    def restore(
        self,
        optimizer: torch.optim.Optimizer | None = None,
        scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
        rng: bool = True,
    ) -> None:
        """Put the saved optimizer / scheduler / random state back, to resume the same run.

        ``optimizer`` must have been made for ``self.model``'s parameters.
        """
        if optimizer is not None:
            if self.optimizer_state is None:
                raise ValueError("this checkpoint holds no optimizer state: it cannot resume training")
            _check_optimizer_state(self.optimizer_state, optimizer)
            optimizer.load_state_dict(self.optimizer_state)
        if scheduler is not None:
            if self.scheduler_state is None:
                raise ValueError("this checkpoint holds no scheduler state")
            scheduler.load_state_dict(self.scheduler_state)
        if rng and self.rng_state is not None:
            torch.set_rng_state(self.rng_state["cpu"])
            if torch.cuda.is_available() and self.rng_state.get("cuda"):
                torch.cuda.set_rng_state_all(self.rng_state["cuda"])


def save_checkpoint(
    path: str | Path,
    model: Transformer,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    step: int = 0,
    extra: dict | None = None,
    tokenizer: SavesAsDict | None = None,
) -> Path:
    """Write a checkpoint to ``path`` (atomically: a crash never leaves half a file). Returns the path.

    ``tokenizer`` (chapter 12): an object with ``to_dict()`` (plain data) and ``id_to_token``, the
    same token list as both vocabularies, e.g. a :class:`~transformer_course.subwords.SubwordTokenizer`.

    A ``path`` that is a symbolic link is written through (its target gets the checkpoint); a path
    that exists but is not a regular file (a folder, a device such as ``/dev/full``) is refused.
    """
    path = _regular_file_path(Path(path))
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a transformer_course.Transformer, got {type(model).__name__}")
    config = model.config
    if len(src_vocab) != config.src_vocab_size or len(tgt_vocab) != config.tgt_vocab_size:
        raise ValueError(
            f"the vocabularies ({len(src_vocab)}, {len(tgt_vocab)} tokens) do not match the model "
            f"(src_vocab_size={config.src_vocab_size}, tgt_vocab_size={config.tgt_vocab_size})"
        )
    if tokenizer is not None and not (list(tokenizer.id_to_token) == src_vocab.id_to_token == tgt_vocab.id_to_token):
        raise ValueError("the tokenizer's tokens must be the vocabularies' tokens (one shared list, the same ids)")
    rng = {"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "config": config.to_dict(),
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "src_vocab": src_vocab.to_dict(),
        "tgt_vocab": tgt_vocab.to_dict(),
        "optimizer": None if optimizer is None else optimizer.state_dict(),
        "scheduler": None if scheduler is None else scheduler.state_dict(),
        "step": int(step),
        "rng": rng,
        "extra": dict(extra or {}),
        "tokenizer": None if tokenizer is None else tokenizer.to_dict(),
    }
    return save_atomically(payload, path)


def save_atomically(payload: dict, path: Path) -> Path:
    """``torch.save`` into ``<path>.partial``, then rename it to ``path``: a crash leaves the old
    file or the new one, never half of one."""
    partial = path.with_name(path.name + ".partial")
    try:
        torch.save(payload, partial)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def _regular_file_path(path: Path) -> Path:
    """Where a checkpoint for ``path`` can be written: the path itself, or a link's target."""
    if path.is_symlink():
        path = path.resolve()
    if path.exists() and not path.is_file():
        raise ValueError(f"cannot write the checkpoint to {path}: it exists and is not a regular file")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"cannot write the checkpoint: folder {path.parent} does not exist")
    return path


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> Checkpoint:
    """Read a checkpoint written by :func:`save_checkpoint` and rebuild its model (in eval mode).

    A missing file raises ``FileNotFoundError``; a corrupt file, a file of another kind, or
    weights that do not fit the saved configuration raise ``ValueError`` saying which.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # truncated, not a torch file, or holding code-bearing objects
        # PyTorch's own message suggests weights_only=False, which would run code from the file: not repeated
        raise ValueError(f"{path} is not a readable checkpoint (corrupt, or not made by save_checkpoint)") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not a transformer-course checkpoint")
    if payload.get("version") != VERSION:
        raise ValueError(f"{path} has checkpoint version {payload.get('version')}, this code reads version {VERSION}")
    try:
        known = {f.name for f in fields(TransformerConfig)}
        unknown = set(payload["config"]) - known
        if unknown:
            raise ValueError(f"unknown config fields {sorted(unknown)}")
        config = TransformerConfig(**payload["config"])
        src_vocab, tgt_vocab = Vocab.from_dict(payload["src_vocab"]), Vocab.from_dict(payload["tgt_vocab"])
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"{path} holds an invalid configuration or vocabulary: {error}") from None
    tokenizer = payload.get("tokenizer")  # absent from checkpoints written before chapter 12: None
    if tokenizer is not None and not isinstance(tokenizer, dict):
        raise ValueError(f"{path} holds an invalid tokenizer (expected a dict, got {type(tokenizer).__name__})")
    if (len(src_vocab), len(tgt_vocab)) != (config.src_vocab_size, config.tgt_vocab_size):
        raise ValueError(
            f"{path}: the vocabularies ({len(src_vocab)}, {len(tgt_vocab)} tokens) do not match the config "
            f"(src_vocab_size={config.src_vocab_size}, tgt_vocab_size={config.tgt_vocab_size})"
        )
    model = Transformer(config)
    try:
        model.load_state_dict(payload["model"])
    except (RuntimeError, KeyError) as error:
        first = str(error).strip().splitlines()
        raise ValueError(f"{path}: the saved weights do not fit the saved config: {' '.join(first[:3])}") from None
    model.to(map_location).eval()
    return Checkpoint(
        model=model,
        config=config,
        src_vocab=src_vocab,
        tgt_vocab=tgt_vocab,
        step=int(payload.get("step", 0)),
        optimizer_state=payload.get("optimizer"),
        scheduler_state=payload.get("scheduler"),
        rng_state=payload.get("rng"),
        extra=payload.get("extra") or {},
        tokenizer=tokenizer,
    )


def _check_optimizer_state(state: dict, optimizer: torch.optim.Optimizer) -> None:
    """A saved optimizer state must belong to parameters of the same shapes."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    saved_ids = [i for group in state.get("param_groups", []) for i in group["params"]]
    if len(saved_ids) != len(params):
        raise ValueError(
            f"the saved optimizer state is for {len(saved_ids)} parameters, this optimizer has {len(params)}: "
            "was the checkpoint made with another model configuration?"
        )
    for saved_id, param in zip(saved_ids, params, strict=True):
        moments = state.get("state", {}).get(saved_id, {})
        for name, value in moments.items():
            if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape != param.shape:
                raise ValueError(
                    f"the saved optimizer state has {name} of shape {tuple(value.shape)} for a parameter of "
                    f"shape {tuple(param.shape)}: the checkpoint was made with another model configuration"
                )
