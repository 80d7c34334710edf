"""Checkpoints: round trip, resuming the same run, clear errors, the shipped model and its hash."""

from __future__ import annotations

import pickle
import shutil

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, from PyPI (pyproject.toml asks for it there)
    import tomli as tomllib
from pathlib import Path

import pytest
import torch

from transformer_course import Transformer, TransformerConfig
from transformer_course.batching import batch_stream, encode_pairs
from transformer_course.checkpoint import load_checkpoint, save_checkpoint
from transformer_course.data import copy_task
from transformer_course.datasets.numbers import english_tokens, german_text
from transformer_course.decoding import greedy_decode
from transformer_course.schedule import make_optimizer, transformer_scheduler
from transformer_course.training import FitOptions, fit
from transformer_course_tools.models.pretrained import (
    PRETRAINED_PATH,
    PRETRAINED_SHA256_PATH,
    UNDERTRAINED_PATH,
    UNDERTRAINED_SHA256_PATH,
    ChecksumError,
    load_pretrained,
    load_verified,
    recorded_sha256,
    sha256_of,
)

QUIET = FitOptions(progress=False)

ROOT = Path(__file__).resolve().parent.parent


def _setup(dropout: float = 0.1, d_model: int = 16):
    task = copy_task(n_train=200, n_eval=20, n_symbols=6)
    config = TransformerConfig(
        len(task.src_vocab), len(task.tgt_vocab), d_model=d_model, n_heads=2, d_ff=32,
        n_encoder_layers=1, n_decoder_layers=1, dropout=dropout, max_len=32,
    )  # fmt: skip
    torch.manual_seed(0)
    model = Transformer(config)
    optimizer = make_optimizer(model)
    scheduler = transformer_scheduler(optimizer, d_model, warmup_steps=4)
    examples = encode_pairs(task.train, task.src_vocab, task.tgt_vocab)
    return task, model, optimizer, scheduler, examples


def test_round_trip_keeps_weights_vocabularies_step_and_extra(tmp_path: Path) -> None:
    task, model, optimizer, scheduler, _ = _setup()
    path = save_checkpoint(
        tmp_path / "m.pt", model, task.src_vocab, task.tgt_vocab, optimizer, scheduler, 7, {"note": "hi"}
    )
    loaded = load_checkpoint(path)
    assert not loaded.model.training
    assert loaded.config == model.config and loaded.step == 7 and loaded.extra == {"note": "hi"}
    assert loaded.src_vocab == task.src_vocab and loaded.tgt_vocab == task.tgt_vocab
    src, tgt = torch.tensor([[4, 5, 6]]), torch.tensor([[1, 4, 5]])
    model.eval()
    assert torch.equal(loaded.model(src, tgt), model(src, tgt))
    assert loaded.model.output.weight is loaded.model.tgt_embed.weight, "weight tying survives loading"
    assert loaded.optimizer_state is not None and loaded.scheduler_state["last_epoch"] == 0


def test_resume_continues_exactly_like_an_uninterrupted_run(tmp_path: Path) -> None:
    task, model, optimizer, scheduler, examples = _setup(dropout=0.2)  # dropout: the RNG must be restored too
    torch.manual_seed(1)
    full = fit(model, batch_stream(examples, 16, 0, seed=5), optimizer, scheduler, 8, options=QUIET).losses

    task, model, optimizer, scheduler, examples = _setup(dropout=0.2)
    torch.manual_seed(1)
    first = fit(model, batch_stream(examples, 16, 0, seed=5), optimizer, scheduler, 4, options=QUIET).losses
    save_checkpoint(tmp_path / "m.pt", model, task.src_vocab, task.tgt_vocab, optimizer, scheduler, step=4)
    torch.manual_seed(999)  # whatever happens in between must not matter

    checkpoint = load_checkpoint(tmp_path / "m.pt")
    optimizer = make_optimizer(checkpoint.model)
    scheduler = transformer_scheduler(optimizer, 16, warmup_steps=4)
    checkpoint.restore(optimizer, scheduler)
    stream = batch_stream(examples, 16, 0, seed=5, start_step=checkpoint.step)
    rest = fit(checkpoint.model, stream, optimizer, scheduler, 8, start_step=4, options=QUIET).losses
    assert first + rest == pytest.approx(full, abs=1e-6)
    assert first + rest == full, "bit-identical on the same machine"


def test_missing_corrupt_and_foreign_files_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        load_checkpoint(tmp_path / "nothing.pt")
    (tmp_path / "junk.pt").write_bytes(b"this is not a checkpoint")
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        load_checkpoint(tmp_path / "junk.pt")
    task, model, *_ = _setup()
    good = save_checkpoint(tmp_path / "m.pt", model, task.src_vocab, task.tgt_vocab)
    (tmp_path / "cut.pt").write_bytes(good.read_bytes()[:3000])
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        load_checkpoint(tmp_path / "cut.pt")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a transformer-course checkpoint"):
        load_checkpoint(tmp_path / "other.pt")


class _Payload:
    def __reduce__(self):
        return (print, ("code ran while loading",))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_loading_never_runs_code_from_the_file(tmp_path: Path) -> None:
    (tmp_path / "evil.pt").write_bytes(pickle.dumps({"format": _Payload()}))
    torch.save({"format": _Payload()}, tmp_path / "evil2.pt")
    for name in ("evil.pt", "evil2.pt"):
        with pytest.raises(ValueError, match="not a readable checkpoint"):
            load_checkpoint(tmp_path / name)


def test_weights_that_do_not_fit_the_config_are_refused(tmp_path: Path) -> None:
    task, model, *_ = _setup()
    path = save_checkpoint(tmp_path / "m.pt", model, task.src_vocab, task.tgt_vocab)
    payload = torch.load(path, weights_only=True)
    payload["config"]["d_ff"] = 64
    torch.save(payload, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="do not fit the saved config"):
        load_checkpoint(tmp_path / "bad.pt")
    payload["config"]["d_ff"], payload["config"]["colour"] = 32, "blue"
    torch.save(payload, tmp_path / "bad2.pt")
    with pytest.raises(ValueError, match="invalid configuration"):
        load_checkpoint(tmp_path / "bad2.pt")


def test_optimizer_of_another_model_is_refused(tmp_path: Path) -> None:
    task, model, optimizer, scheduler, examples = _setup()
    fit(model, batch_stream(examples, 16, 0), optimizer, scheduler, 2, options=QUIET)
    path = save_checkpoint(tmp_path / "m.pt", model, task.src_vocab, task.tgt_vocab, optimizer, scheduler, 2)
    _, other, other_optimizer, *_ = _setup(d_model=32)
    with pytest.raises(ValueError, match="another model configuration"):
        load_checkpoint(path).restore(other_optimizer)


def test_the_shipped_model_translates_and_its_hash_is_checked(tmp_path: Path) -> None:
    checkpoint = load_pretrained()
    assert sha256_of(PRETRAINED_PATH) == recorded_sha256()
    assert checkpoint.extra["task"] == "numbers-en-de" and checkpoint.extra["test"]["exact_match"] >= 98
    src = torch.tensor([checkpoint.src_vocab.encode(english_tokens("three hundred and forty-seven thousand"))])
    out = greedy_decode(checkpoint.model, src, max_len=16)
    assert german_text(checkpoint.tgt_vocab.decode(out[0].tolist())) == "dreihundertsiebenundvierzigtausend"
    damaged = tmp_path / "damaged.pt"
    shutil.copy(PRETRAINED_PATH, damaged)
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match="SHA-256"):
        load_verified(damaged, recorded_sha256())


def test_the_undertrained_model_is_hashed_and_still_makes_mistakes(tmp_path: Path) -> None:
    """Chapter 09's second model: the same recipe stopped early, its SHA-256 checked like the shipped one's."""
    checkpoint = load_pretrained("numbers-en-de-undertrained")
    assert sha256_of(UNDERTRAINED_PATH) == recorded_sha256(UNDERTRAINED_SHA256_PATH) != recorded_sha256()
    assert checkpoint.extra["task"] == "numbers-en-de" and checkpoint.step < load_pretrained().step
    assert 70 <= checkpoint.extra["test"]["exact_match"] <= 90, "wrong often enough to show its errors"
    assert checkpoint.model.config == load_pretrained().model.config, "the shipped model's size and vocabularies"
    damaged = tmp_path / "damaged.pt"
    data = bytearray(UNDERTRAINED_PATH.read_bytes())
    data[len(data) // 3] ^= 0xFF
    damaged.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match="SHA-256"):
        load_verified(damaged, recorded_sha256(UNDERTRAINED_SHA256_PATH))
    with pytest.raises(ValueError, match="name must be one of"):
        load_pretrained("numbers-en-fr")


def test_the_checkpoint_ships_with_the_package() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "models/assets/*" in pyproject["tool"]["setuptools"]["package-data"]["transformer_course_tools"]
    for path, sha_path in ((PRETRAINED_PATH, PRETRAINED_SHA256_PATH), (UNDERTRAINED_PATH, UNDERTRAINED_SHA256_PATH)):
        assert path.parent.name == "assets" and sha_path.exists()
        assert path.stat().st_size < 8_000_000, "keep the committed checkpoints a few MB"
