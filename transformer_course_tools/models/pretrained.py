"""The trained models that ship with the course, and the SHA-256 check that guards them.

Two checkpoints of chapter 08's recipe ship, both made by ``scripts/make_checkpoint.py``, which
records each file's hash next to it:

- ``"numbers-en-de"``: trained to the end; ``translate`` and most of chapter 09 use it;
- ``"numbers-en-de-undertrained"``: the same run stopped early (``--undertrained``), so that it
  still makes mistakes: chapter 10 sorts them into search errors and model errors.

One language model ships beside them, made by ``scripts/make_lm_checkpoint.py`` (hash recorded the
same way): ``"shakespeare-lm"``, today's block trained on six plays by Shakespeare
(:func:`load_pretrained_lm`).

:func:`load_pretrained` refuses a file whose hash differs (damaged, or replaced by something else),
so chapter 09 and ``translate`` never run on a model nobody made on purpose.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

from transformer_course.checkpoint import Checkpoint, load_checkpoint
from transformer_course.lm_checkpoint import LMCheckpoint, load_lm_checkpoint

ASSETS = Path(__file__).resolve().parent / "assets"
PRETRAINED_PATH = ASSETS / "numbers_en_de.pt"
PRETRAINED_SHA256_PATH = ASSETS / "numbers_en_de.pt.sha256"
UNDERTRAINED_PATH = ASSETS / "numbers_en_de_undertrained.pt"
UNDERTRAINED_SHA256_PATH = ASSETS / "numbers_en_de_undertrained.pt.sha256"

# name → the file; its hash is recorded next to it (``<file>.sha256``)
PRETRAINED: dict[str, Path] = {"numbers-en-de": PRETRAINED_PATH, "numbers-en-de-undertrained": UNDERTRAINED_PATH}
# The language model that ships (scripts/make_lm_checkpoint.py): Shakespeare's plays, chapter 12's BPE
LM_PATH = ASSETS / "shakespeare_lm.pt"
PRETRAINED_LM: dict[str, Path] = {"shakespeare-lm": LM_PATH}


class ChecksumError(ValueError):
    """A file's SHA-256 is not the one recorded for it."""


def sha256_of(path: str | Path) -> str:
    """Hex SHA-256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_sha256(path: str | Path, expected: str) -> None:
    """Raise :class:`ChecksumError` unless ``path`` has the SHA-256 ``expected``."""
    actual = sha256_of(path)
    if actual != expected.strip().lower():
        raise ChecksumError(
            f"{path} has SHA-256 {actual}, expected {expected.strip()}: the file is damaged or was replaced "
            "(re-create it with scripts/make_checkpoint.py, or restore it from git)"
        )


def recorded_sha256(sha_path: str | Path = PRETRAINED_SHA256_PATH) -> str:
    """The hash written next to a file, in ``sha256sum`` format (``<hex>  <name>``)."""
    text = Path(sha_path).read_text(encoding="utf-8").split()
    if not text or len(text[0]) != 64:
        raise ValueError(f"{sha_path} does not hold a SHA-256 hash")
    return text[0]


def sha256_path(path: str | Path) -> Path:
    """Where ``path``'s SHA-256 is recorded: ``<file>.sha256`` next to it."""
    path = Path(path)
    return path.with_name(path.name + ".sha256")


def write_sha256(path: str | Path) -> Path:
    """Record ``path``'s SHA-256 next to it (``<file>.sha256``, ``sha256sum`` format)."""
    path = Path(path)
    sha_path = sha256_path(path)
    sha_path.write_text(f"{sha256_of(path)}  {path.name}\n", encoding="utf-8")
    return sha_path


def load_verified(path: str | Path, sha256: str, map_location: str | torch.device = "cpu") -> Checkpoint:
    """:func:`~transformer_course.checkpoint.load_checkpoint` after checking the file's SHA-256."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    verify_sha256(path, sha256)
    return load_checkpoint(path, map_location)


def load_pretrained(name: str = "numbers-en-de", map_location: str | torch.device = "cpu") -> Checkpoint:
    """An English → German numbers model that ships with the course, its SHA-256 checked.

    ``name`` is one of :data:`PRETRAINED`: ``"numbers-en-de"`` (trained to the end) or
    ``"numbers-en-de-undertrained"`` (the same recipe stopped early; it still makes mistakes).
    Made by ``scripts/make_checkpoint.py``; ``extra`` records how (profile, steps, test scores).
    """
    if name not in PRETRAINED:
        raise ValueError(f"name must be one of {sorted(PRETRAINED)}, got {name!r}")
    path = PRETRAINED[name]
    if not path.is_file():
        raise FileNotFoundError(f"the pretrained checkpoint {path} is missing: run scripts/make_checkpoint.py")
    return load_verified(path, recorded_sha256(sha256_path(path)), map_location)


def load_pretrained_lm(name: str = "shakespeare-lm", map_location: str | torch.device = "cpu") -> LMCheckpoint:
    """The language model that ships with the course, its SHA-256 checked: today's block
    (``DecoderOnlyConfig.modern``) trained on six plays by Shakespeare
    (:mod:`transformer_course.datasets.shakespeare`) with chapter 12's byte-pair tokenizer, which
    the checkpoint carries. Made by ``scripts/make_lm_checkpoint.py``; ``extra`` records how."""
    if name not in PRETRAINED_LM:
        raise ValueError(f"name must be one of {sorted(PRETRAINED_LM)}, got {name!r}")
    path = PRETRAINED_LM[name]
    if not path.is_file():
        raise FileNotFoundError(f"the pretrained language model {path} is missing: run scripts/make_lm_checkpoint.py")
    verify_sha256(path, recorded_sha256(sha256_path(path)))
    return load_lm_checkpoint(path, map_location)
