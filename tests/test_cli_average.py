"""``python -m transformer_course average OUT IN1 IN2 …``: the mean checkpoint, and one-line refusals
that never touch a file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer_course import Transformer, TransformerConfig
from transformer_course.checkpoint import load_checkpoint, save_checkpoint
from transformer_course.vocab import Vocab
from transformer_course_tools.cli import main

VOCAB = Vocab([chr(ord("a") + i) for i in range(6)])


def _save(path: Path, seed: int, step: int, vocab: Vocab = VOCAB, **overrides) -> Path:
    torch.manual_seed(seed)
    sizes = {"d_model": 8, "n_heads": 2, "d_ff": 16, "n_encoder_layers": 1, "n_decoder_layers": 1, "max_len": 16}
    config = TransformerConfig(len(vocab), len(vocab), **{**sizes, **overrides})
    return save_checkpoint(path, Transformer(config), vocab, vocab, step=step, extra={"task": "tiny"})


@pytest.fixture
def run(tmp_path: Path, monkeypatch) -> Path:
    """Three checkpoints of one tiny model, in the current folder."""
    monkeypatch.chdir(tmp_path)
    for seed, step in ((1, 100), (2, 200), (3, 300)):
        _save(tmp_path / f"step-{step}.pt", seed, step)
    return tmp_path


def test_the_average_of_three(run: Path, capsys) -> None:
    assert main(["average", "avg.pt", "step-100.pt", "step-200.pt", "step-300.pt"]) == 0
    assert capsys.readouterr().out.strip() == "averaged 3 checkpoints (steps 100, 200, 300) into avg.pt"
    averaged = load_checkpoint("avg.pt")
    states = [load_checkpoint(f"step-{step}.pt").model.state_dict() for step in (100, 200, 300)]
    for key, tensor in averaged.model.state_dict().items():
        mean = torch.stack([s[key].double() for s in states]).mean(0)  # (*shape)
        assert torch.allclose(tensor.double(), mean, atol=1e-6), key
    assert averaged.step == 300 and averaged.optimizer_state is None
    assert averaged.extra == {"task": "tiny", "averaged_steps": [100, 200, 300]}


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() if path.is_file() else None for path in sorted(folder.iterdir())}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["average", "avg.pt"], "give at least 2 checkpoints to average after OUT, got 0"),
        (["average", "avg.pt", "step-100.pt"], "give at least 2 checkpoints to average after OUT, got 1"),
        (["average", "avg.pt", "step-100.pt", "missing.pt"], "checkpoint not found: missing.pt"),
        (["average", "avg.pt", "step-100.pt", "step-100.pt"], "step-100.pt is given twice"),
        (["average", "step-100.pt", "step-100.pt", "step-200.pt"], "OUT step-100.pt is one of the checkpoints"),
        (["average", "step-300.pt", "step-100.pt", "step-200.pt"], "OUT step-300.pt exists: give --force"),
        (["average", "--force", "step-200.pt", "step-100.pt", "step-200.pt"], "OUT step-200.pt is one of the"),
        (["average", "link.pt", "step-100.pt", "step-200.pt", "--force"], "OUT link.pt is one of the checkpoints"),
        (["average", "sub", "step-100.pt", "step-200.pt"], "OUT sub is a folder"),
        (["average", "no/such/avg.pt", "step-100.pt", "step-200.pt"], "folder no/such does not exist"),
        (["average", "avg.pt", "step-100.pt", "other-config.pt"], "has another model configuration"),
        (["average", "avg.pt", "step-100.pt", "other-vocab.pt"], "has other tokens than other-vocab.pt"),
        (["average", "avg.pt", "step-100.pt", "junk.pt"], "junk.pt is not a readable checkpoint"),
    ],
)
def test_bad_input_gives_one_line_status_2_and_changes_no_file(run: Path, argv, message, capsys) -> None:
    _save(run / "other-config.pt", 4, 400, d_ff=32)
    _save(run / "other-vocab.pt", 5, 500, Vocab([chr(ord("n") + i) for i in range(6)]))
    (run / "junk.pt").write_bytes(b"not a checkpoint" * 100)
    (run / "link.pt").symlink_to(run / "step-200.pt")
    (run / "sub").mkdir()
    before = _files(run)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error:") and message in err, err
    assert _files(run) == before  # nothing written, nothing replaced, no partial file left


def test_force_replaces_an_existing_output(run: Path, capsys) -> None:
    (run / "avg.pt").write_bytes(b"an older average")
    assert main(["average", "avg.pt", "step-100.pt", "step-200.pt"]) == 2
    assert (run / "avg.pt").read_bytes() == b"an older average"
    assert main(["average", "--force", "avg.pt", "step-100.pt", "step-200.pt"]) == 0
    assert load_checkpoint(run / "avg.pt").extra["averaged_steps"] == [100, 200]


def test_from_a_real_process(run: Path) -> None:
    command = [sys.executable, "-m", "transformer_course", "average", "avg.pt", "step-100.pt"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=run)
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "at least 2" in done.stderr
    done = subprocess.run([*command, "step-200.pt"], capture_output=True, text=True, cwd=run)
    assert done.returncode == 0 and (run / "avg.pt").is_file(), done.stderr
