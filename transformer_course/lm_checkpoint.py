"""Chapter 14 — a language model's checkpoint: its configuration, its weights and its tokenizer.

Chapter 08's checkpoint holds a translator (a :class:`~.model.Transformer` and two vocabularies);
a language model is a :class:`~.lm.DecoderOnlyLM`, read and written by the two functions here.
The file is one ``torch.save`` of plain data, as chapter 08's: the configuration, the weights, the
subword tokenizer of chapter 12 (``SubwordTokenizer.to_dict()``, so that the file alone turns text
into ids and back), the training step and a free ``extra`` dict. It is read with
``torch.load(weights_only=True)``, which runs no code from the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

import torch

from .checkpoint import FORMAT as TRANSLATOR_FORMAT
from .checkpoint import _regular_file_path, save_atomically
from .lm import DecoderOnlyConfig, DecoderOnlyLM

FORMAT = "transformer-course-lm-checkpoint"
VERSION = 1


@dataclass
class LMCheckpoint:
    """A loaded language model's checkpoint. ``model`` is built from ``config`` and in evaluation mode."""

    model: DecoderOnlyLM
    config: DecoderOnlyConfig
    tokenizer: dict | None = None  # a SubwordTokenizer's to_dict() (chapter 12), None without one
    step: int = 0
    extra: dict = field(default_factory=dict)


def save_lm_checkpoint(
    path: str | Path, model: DecoderOnlyLM, tokenizer=None, step: int = 0, extra: dict | None = None
) -> Path:
    """Write ``model`` (and its ``tokenizer``, an object with ``to_dict()`` and ``id_to_token``,
    e.g. a :class:`~.subwords.SubwordTokenizer` of the model's vocabulary) to ``path``, atomically.
    Returns the path."""
    path = _regular_file_path(Path(path))
    if not isinstance(model, DecoderOnlyLM):
        raise TypeError(f"model must be a transformer_course DecoderOnlyLM, got {type(model).__name__}")
    if tokenizer is not None and len(tokenizer.id_to_token) != model.config.vocab_size:
        raise ValueError(
            f"the tokenizer has {len(tokenizer.id_to_token)} tokens, the model's vocabulary {model.config.vocab_size}"
        )
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "config": model.config.to_dict(),
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "tokenizer": None if tokenizer is None else tokenizer.to_dict(),
        "step": int(step),
        "extra": dict(extra or {}),
    }
    return save_atomically(payload, path)


def load_lm_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> LMCheckpoint:
    """Read a checkpoint written by :func:`save_lm_checkpoint` and rebuild its model (in eval mode).

    A missing file raises ``FileNotFoundError``; a corrupt file, a translator's checkpoint or a file
    of another kind, or weights that do not fit the configuration, a ``ValueError`` saying which.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # truncated, not a torch file, or holding code-bearing objects
        raise ValueError(f"{path} is not a readable checkpoint (corrupt, or not made by save_lm_checkpoint)") from None
    kind = payload.get("format") if isinstance(payload, dict) else None
    if kind == TRANSLATOR_FORMAT:
        raise ValueError(f"{path} holds a translator (chapter 08's checkpoint), not a language model")
    if kind != FORMAT:
        raise ValueError(f"{path} is not a transformer-course language model's checkpoint")
    if payload.get("version") != VERSION:
        raise ValueError(f"{path} has version {payload.get('version')}, this code reads version {VERSION}")
    try:
        unknown = set(payload["config"]) - {f.name for f in fields(DecoderOnlyConfig)}
        if unknown:
            raise ValueError(f"unknown config fields {sorted(unknown)}")
        config = DecoderOnlyConfig(**payload["config"])
        model = DecoderOnlyLM(config)
        model.load_state_dict(payload["model"])
    except (KeyError, TypeError, ValueError, RuntimeError) as error:
        first = " ".join(str(error).strip().splitlines()[:3])
        raise ValueError(f"{path} holds an invalid configuration or weights that do not fit it: {first}") from None
    tokenizer = payload.get("tokenizer")
    if tokenizer is not None and not isinstance(tokenizer, dict):
        raise ValueError(f"{path} holds an invalid tokenizer (expected a dict, got {type(tokenizer).__name__})")
    return LMCheckpoint(
        model.to(map_location).eval(), config, tokenizer, int(payload.get("step", 0)), payload.get("extra") or {}
    )
