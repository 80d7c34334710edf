"""``python -m transformer_course translate``: translations, options, and clear one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer_course import Transformer, TransformerConfig
from transformer_course.checkpoint import save_checkpoint
from transformer_course.datasets.numbers import number_vocabs
from transformer_course_tools.cli import main

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained model with the vocabularies of the numbers task, saved as a checkpoint."""
    src_vocab, tgt_vocab = number_vocabs()
    torch.manual_seed(0)
    config = TransformerConfig(
        len(src_vocab), len(tgt_vocab), d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1,
        n_decoder_layers=1, max_len=32,
    )  # fmt: skip
    path = tmp_path_factory.mktemp("ckpt") / "tiny.pt"
    return save_checkpoint(path, Transformer(config), src_vocab, tgt_vocab)


def _run(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    status = main(["translate", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_translates_with_the_committed_checkpoint(capsys: pytest.CaptureFixture) -> None:
    status, out, err = _run(["three hundred and forty-two"], capsys)
    assert (status, out.strip(), err) == (0, "dreihundertzweiundvierzig", "")
    status, out, _ = _run(["three hundred and forty-two", "--beam", "4"], capsys)
    assert (status, out.strip()) == (0, "dreihundertzweiundvierzig")


def test_a_checkpoint_argument_several_sentences_and_n_best(tiny_checkpoint: Path, capsys) -> None:
    status, out, err = _run([str(tiny_checkpoint), "twenty-one", "one thousand and one"], capsys)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "twenty-one →" and lines[2] == "one thousand and one →" and len(lines) == 4
    status, out, _ = _run([str(tiny_checkpoint), "twenty-one", "--beam", "3", "--n-best", "2"], capsys)
    assert status == 0
    assert len(out.splitlines()) == 3 and out.count("(score ") == 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (["three hundred and fourty-two"], "unknown word 'fourty'"),
        (["Twenty-one apples and 3 pears"], "unknown words 'apples', '3', 'pears'"),
        (["  ,  "], "nothing to translate"),
        (["twenty-one", "--beam", "0"], "--beam"),
        (["twenty-one", "--beam", "2", "--n-best", "3"], "--n-best"),
        (["missing-model.pt", "twenty-one"], "checkpoint not found"),
        (["missing-model.pt"], "nothing to translate"),
    ],
    ids=["misspelt", "several unknown", "empty", "beam 0", "n-best > beam", "missing file", "no text"],
)
def test_user_errors_are_one_clear_line(argv: list[str], message: str, tiny_checkpoint: Path, capsys) -> None:
    if not argv[0].endswith(".pt"):
        argv = [str(tiny_checkpoint), *argv]
    status, out, err = _run(argv, capsys)
    assert status == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_unknown_words_from_the_real_command_line_give_no_traceback() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "transformer_course", "translate", "one zillion"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "unknown word 'zillion'" in result.stderr


@pytest.mark.parametrize(
    "text, german",
    [("zero", "null"), ("seven", "sieben"), ("eleven", "elf"), ("one hundred", "einhundert"),
     ("one thousand", "eintausend"), ("two hundred thousand", "zweihunderttausend"),
     ("one hundred thousand and one", "einhunderttausendeins")],
)  # fmt: skip
def test_short_and_round_numbers_come_out_right(text: str, german: str, capsys) -> None:
    status, out, err = _run([text], capsys)
    assert (status, out.strip(), err) == (0, german, "")


@pytest.mark.parametrize("text", ["one million", "and", "one thousand thousand", "one hundred five", "thousand"])
def test_words_outside_the_models_range_are_refused_not_guessed(text: str, capsys) -> None:
    status, out, err = _run([text], capsys)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert ("is not a number this model knows" in err) or ("unknown word" in err), err


@pytest.mark.parametrize("beam", ["1", "3"])
def test_the_output_length_is_the_papers_rule_unless_max_len_caps_it(
    tiny_checkpoint: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, beam: str
) -> None:
    """No length of its own: the decoders' default (§6.1, source length + 50, at most the model's
    max_len) unless --max-len is given (clamped to the model's table)."""
    from transformer_course import decoding

    asked = []
    greedy, beam_search = decoding.greedy_decode, decoding.beam_search

    def greedy_spy(model, src, max_len=None, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        asked.append(max_len)
        return greedy(model, src, max_len, *args, **kwargs)

    def beam_spy(model, src, beam_size, max_len=None, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        asked.append(max_len)
        return beam_search(model, src, beam_size, max_len, *args, **kwargs)

    monkeypatch.setattr(decoding, "greedy_decode", greedy_spy)
    monkeypatch.setattr(decoding, "beam_search", beam_spy)
    assert _run([str(tiny_checkpoint), "twenty-one", "--beam", beam], capsys)[0] == 0
    assert _run([str(tiny_checkpoint), "twenty-one", "--beam", beam, "--max-len", "99"], capsys)[0] == 0
    assert _run([str(tiny_checkpoint), "twenty-one", "--beam", beam, "--max-len", "5"], capsys)[0] == 0
    assert asked == [None, 32, 5]
