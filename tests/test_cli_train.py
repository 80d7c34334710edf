"""``python -m transformer_course train`` / ``evaluate``: JSON results, resuming, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_course_tools.cli import main
from transformer_course_tools.models.pretrained import PRETRAINED_PATH

ROOT = Path(__file__).resolve().parent.parent
KEYS = {"task", "exact_match", "bleu", "chrf", "seconds", "steps"}


def _last_json(text: str) -> dict:
    return json.loads(text.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "--task", "klingon"], "unknown task 'klingon'"),
        (["train", "--task", "copy", "--out", "/no/such/folder/model.pt"], "does not exist"),
        (["train", "--task", "copy", "--max-seconds", "-1"], "--max-seconds must be a number > 0"),
        (["train", "--task", "copy", "--max-seconds", "nan"], "--max-seconds must be a number > 0, got nan"),
        (["train", "--task", "copy", "--threads", "-1"], "--threads must be >= 1, got -1"),
        (["train", "--task", "copy", "--threads", "0"], "--threads must be >= 1, got 0"),
        (["train", "--task", "copy", "--resume", "missing.pt"], "checkpoint not found"),
        (["train", "--task", "copy", "--out", "/dev/full"], "is not a regular file"),
        (["evaluate", "missing.pt"], "checkpoint not found"),
        (["evaluate", "bad.pt"], "bad.pt is not a readable checkpoint (corrupt, or not made by save_checkpoint)"),
        (["evaluate", str(PRETRAINED_PATH), "--task", "copy"], "trained on numbers-en-de, not copy"),
        (["evaluate", "copy.pt", "--task", "reverse"], "trained on copy, not reverse"),
    ],
)
def test_bad_arguments_give_one_line_and_status_2(argv, message, capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.pt").write_bytes(os.urandom(4096))
    if "copy.pt" in argv:
        assert main(["train", "--task", "copy", "--steps", "2", "--out", "copy.pt", "--quiet"]) == 0
        capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error:") and message in err, err


def test_unwritable_output_is_refused(tmp_path: Path, capsys) -> None:
    (tmp_path / "a-file").write_text("")
    assert main(["train", "--task", "copy", "--out", str(tmp_path / "a-file" / "m.pt")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert main(["train", "--task", "copy", "--out", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("this user (root) can write into a read-only folder")
        assert main(["train", "--task", "copy", "--out", str(locked / "m.pt")]) == 2
        assert "not writable" in capsys.readouterr().err
    finally:
        locked.chmod(0o700)


def test_exit_status_from_a_real_process(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "transformer_course", "train", "--task", "klingon"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 2 and run.stderr.strip().count("\n") == 0 and "unknown task" in run.stderr


def test_train_then_resume_then_evaluate(tmp_path: Path, capsys) -> None:
    out = tmp_path / "copy.pt"
    assert main(["train", "--task", "copy", "--steps", "12", "--out", str(out), "--quiet"]) == 0
    first = _last_json(capsys.readouterr().out)
    assert set(first) == KEYS and first["steps"] == 12 and out.is_file()
    assert main(["train", "--task", "copy", "--steps", "20", "--resume", str(out), "--out", str(out), "--quiet"]) == 0
    assert _last_json(capsys.readouterr().out)["steps"] == 20
    assert main(["evaluate", str(out), "--task", "copy"]) == 0
    scores = _last_json(capsys.readouterr().out)
    assert set(scores) == KEYS and scores["steps"] == 20


def test_evaluate_the_shipped_model(capsys) -> None:
    assert main(["evaluate", str(PRETRAINED_PATH), "--task", "numbers-en-de"]) == 0
    scores = _last_json(capsys.readouterr().out)
    assert scores["exact_match"] >= 98 and scores["bleu"] > 95 and scores["chrf"] > 95
    strata = scores["strata"]  # the numbers task: each kind of number scored on its own
    assert "0-20" in strata and "round thousands" in strata and "full range" in strata
    assert all(row["exact_match"] >= 99.5 for row in strata.values()), strata


def test_devices_that_are_not_there_are_one_line_errors(capsys, monkeypatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    for command in (["train", "--task", "copy"], ["evaluate", str(PRETRAINED_PATH)]):
        for device in ("cuda", "mps"):
            assert main([*command, "--device", device]) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and f"--device {device}:" in err and "not available" in err, err


def test_out_through_a_symbolic_link_writes_its_target(tmp_path: Path, capsys) -> None:
    target, link = tmp_path / "real.pt", tmp_path / "link.pt"
    link.symlink_to(target)
    assert main(["train", "--task", "copy", "--steps", "2", "--out", str(link), "--quiet"]) == 0
    assert link.is_symlink() and target.is_file() and target.stat().st_size > 0


@pytest.mark.parametrize(
    "limits, announced",
    [
        (["--max-seconds", "0.5"], "for 0.5 s\n"),  # a time limit only: no step count of 10**9
        (["--steps", "3"], "for 3 steps\n"),
        (["--steps", "3", "--max-seconds", "60"], "for 60 s or 3 steps, whichever ends first\n"),
    ],
)
def test_the_announcement_names_the_limits_given(limits: list[str], announced: str, capsys) -> None:
    assert main(["train", "--task", "copy", "--quiet", *limits]) == 0
    first = capsys.readouterr().err.splitlines()[0] + "\n"
    assert first.startswith("training copy on ") and first.endswith(announced), first
