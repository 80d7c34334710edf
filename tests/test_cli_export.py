"""``python -m transformer_course export``: the shipped models by name or a checkpoint file, to
transformers, CTranslate2 and GGUF; each bad input one line with exit status 2, and never a
half-written OUT (nor a temporary folder left beside it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from transformer_course import DecoderOnlyConfig, DecoderOnlyLM
from transformer_course.lm_checkpoint import save_lm_checkpoint
from transformer_course.subwords import train_subwords
from transformer_course_tools.cli import main

pytest.importorskip("transformers", reason="pip install 'transformer-course[hub]'")


def one_line_error(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    return err


def only(folder: Path) -> list[str]:
    """What the folder holds (a temporary folder left behind would show here)."""
    return sorted(p.name for p in folder.iterdir())


def test_the_shipped_translator_to_transformers_and_ctranslate2(tmp_path: Path, capsys) -> None:
    assert main(["export", "numbers-en-de", str(tmp_path / "hf"), "--to", "transformers"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"wrote {tmp_path / 'hf'}: a transformers folder") and out.count("\n") == 1
    files = only(tmp_path / "hf")
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= set(files)
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"] == ["MarianMTModel"]
    pytest.importorskip("ctranslate2")
    assert main(["export", "numbers-en-de", str(tmp_path / "ct2"), "--to", "ctranslate2", "--precision", "int8"]) == 0
    assert {"model.bin", "tokenizer.json"} <= set(only(tmp_path / "ct2"))
    assert only(tmp_path) == ["ct2", "hf"]


def test_an_existing_out_is_replaced_only_with_force(tmp_path: Path, capsys) -> None:
    out = tmp_path / "hf"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    err = one_line_error(["export", "numbers-en-de", str(out), "--to", "transformers"], capsys)
    assert "exists: pass --force to replace it" in err and only(out) == ["mine.txt"]
    assert main(["export", "numbers-en-de", str(out), "--to", "transformers", "--force"]) == 0
    assert "mine.txt" not in only(out) and "config.json" in only(out) and only(tmp_path) == ["hf"]


@pytest.fixture(scope="module")
def post_ln_lm(tmp_path_factory) -> Path:
    """A language model that no target expresses: post-LN with sinusoids (the 2017 block)."""
    tokenizer = train_subwords(["the cat sat on the mat", "a dog"] * 5, vocab_size=60)
    torch.manual_seed(0)
    lm = DecoderOnlyLM(DecoderOnlyConfig(len(tokenizer), d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=16))
    return save_lm_checkpoint(tmp_path_factory.mktemp("lm") / "post_ln.pt", lm, tokenizer)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["missing.pt", "OUT", "--to", "transformers"], "no checkpoint missing.pt: give a .pt file written by the course, or a shipped name"),
        (["notes.txt", "OUT", "--to", "transformers"], "notes.txt is not a readable checkpoint"),
        (["other.pt", "OUT", "--to", "transformers"], "other.pt is not a course checkpoint"),
        (["numbers-en-de", "OUT", "--to", "gguf"], "--to gguf: llama.cpp runs decoder-only language models, and this checkpoint is a translator"),
        (["numbers-en-de", "OUT", "--to", "transformers", "--precision", "int8"], "--precision int8: transformers' layers hold float weights"),
        (["numbers-en-de", "no/such/folder/OUT", "--to", "transformers"], "folder no/such/folder does not exist"),
        (["POST_LN", "OUT", "--to", "transformers"], "to_gpt2: GPT-2 normalises before each sub-layer (pre-LN): this model is post-LN"),
        (["POST_LN", "OUT.gguf", "--to", "gguf"], "--to gguf: GPT-2 normalises before each sub-layer (pre-LN)"),
    ],
    ids=["missing", "not-torch", "other-torch-file", "gguf-translator", "int8-transformers", "no-folder", "post-ln-lm",
         "post-ln-gguf"],
)  # fmt: skip
def test_bad_input_is_one_line_and_leaves_nothing(argv, message: str, post_ln_lm: Path, tmp_path: Path, monkeypatch,
                                                  capsys) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    Path("notes.txt").write_text("not a checkpoint")
    torch.save({"format": "something else"}, "other.pt")
    argv = [str(post_ln_lm) if a == "POST_LN" else a for a in argv]
    before = only(tmp_path)
    err = one_line_error(["export", *argv], capsys)
    assert message in err
    assert only(tmp_path) == before, "no OUT, no temporary folder"


def test_a_failure_while_writing_leaves_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    from transformer_course_tools.models.export import folders

    def half_written(source, out, precision="float32"):  # noqa: ANN001, ANN202
        out.mkdir(parents=True)
        (out / "config.json").write_text("{}")
        raise ValueError("the disk is full")

    monkeypatch.setattr(folders, "write_transformers", half_written)
    err = one_line_error(["export", "numbers-en-de", str(tmp_path / "hf"), "--to", "transformers"], capsys)
    assert "the disk is full" in err and only(tmp_path) == []
