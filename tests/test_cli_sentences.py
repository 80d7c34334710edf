"""Chapter 12 on the command line: ``train --task sentences-en-de / --dataset / --data-dir``, the
tokenizer inside the checkpoint, ``evaluate`` and ``translate`` on it, and one line per bad input.

Every run uses the tiny profile (``TRANSFORMER_COURSE_PROFILE=tiny``) and small files the tests
write; no test reaches a network (the Hub is replaced by a fake ``datasets`` module)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from transformer_course.checkpoint import load_checkpoint
from transformer_course.datasets import corpora
from transformer_course.datasets.corpora import Corpus, write_text_corpus
from transformer_course.datasets.sentences import sentence_splits
from transformer_course_tools.cli import main
from transformer_course_tools.models.pretrained import PRETRAINED_PATH


@pytest.fixture(autouse=True)
def tiny(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRANSFORMER_COURSE_PROFILE", "tiny")
    monkeypatch.setenv("TRANSFORMER_COURSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def texts() -> dict[str, list[tuple[str, str]]]:
    return sentence_splits(n_train=300, n_valid=20, n_test=30)


def _corpus(texts: dict) -> Corpus:
    return Corpus("mine", texts["train"], texts["valid"], texts["test"])


def _last_json(text: str) -> dict:
    return json.loads(text.strip().splitlines()[-1])


def _one_line_error(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    return err


def test_data_dir_train_evaluate_translate(tmp_path: Path, texts, capsys) -> None:
    write_text_corpus(_corpus(texts), tmp_path / "corpus")
    argv = ["train", "--data-dir", "corpus", "--steps", "6", "--out", "m.pt", "--quiet", "--vocab-size", "200"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    trained = _last_json(out)
    assert trained["task"] == "corpus" and trained["steps"] == 6 and trained["world_size"] == 1, out
    assert "200 subword tokens" in err and "saved m.pt" in err
    payload = torch.load(tmp_path / "m.pt", weights_only=True)  # plain data, tokenizer included
    assert payload["tokenizer"]["format"] == "transformer-course-subwords"
    assert payload["extra"]["source"] == {"kind": "data_dir", "value": "corpus", "max_pairs": None}
    assert main(["evaluate", "m.pt"]) == 0  # the text it was trained on, by default
    scores = _last_json(capsys.readouterr().out)
    assert scores == {**trained, "seconds": scores["seconds"]}, "evaluate repeats train's test scores"
    assert main(["evaluate", "m.pt", "--data-dir", "corpus", "--split", "valid"]) == 0
    assert set(_last_json(capsys.readouterr().out)) == set(trained)
    assert main(["translate", "m.pt", "The dog sees the cat.", "--max-len", "5"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.count("\n") == 1 and "<" not in out and "▁" not in out  # written text, one line


def test_sentence_task_resume_and_evaluate(capsys) -> None:
    assert main(["train", "--task", "sentences-en-de", "--steps", "4", "--out", "s.pt", "--quiet"]) == 0
    first = _last_json(capsys.readouterr().out)
    assert first["task"] == "sentences-en-de" and first["steps"] == 4
    argv = ["train", "--task", "sentences-en-de", "--steps", "8", "--resume", "s.pt", "--out", "s.pt", "--quiet"]
    assert main(argv) == 0
    assert _last_json(capsys.readouterr().out)["steps"] == 8
    checkpoint = load_checkpoint("s.pt")
    assert checkpoint.step == 8 and checkpoint.model.src_embed is checkpoint.model.tgt_embed, "shared embeddings"
    assert main(["evaluate", "s.pt", "--task", "sentences-en-de"]) == 0
    assert _last_json(capsys.readouterr().out)["steps"] == 8


def test_dataset_is_downloaded_once_then_trains_from_the_cache(tmp_path: Path, texts, monkeypatch, capsys) -> None:
    splits = {"train": texts["train"], "validation": texts["valid"], "test": texts["test"]}
    rows = {split: [{"en": en, "de": de} for en, de in pairs] for split, pairs in splits.items()}

    class FakeDatasets:  # what datasets.load_dataset(..., streaming=True) gives for bentrevett/multi30k
        calls = 0

        def load_dataset(self, repo, config=None, *, split, streaming, revision=None, data_dir=None):
            FakeDatasets.calls += 1
            return iter(rows[split])

    monkeypatch.setattr(corpora, "_import_datasets", FakeDatasets)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:1")  # "reachable": the fake answers, nothing connects
    assert main(["train", "--dataset", "multi30k", "--steps", "3", "--out", "d.pt", "--quiet"]) == 0
    assert _last_json(capsys.readouterr().out)["task"] == "multi30k" and FakeDatasets.calls == 3
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # now offline: the cache serves train and evaluate
    assert main(["train", "--dataset", "multi30k", "--steps", "2", "--quiet"]) == 0
    assert main(["evaluate", "d.pt"]) == 0 and FakeDatasets.calls == 3
    assert _last_json(capsys.readouterr().out)["task"] == "multi30k"


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: None, "does not exist; expected a folder with train.en and train.de"),
        (lambda d: d.write_text("x"), "is a file; expected a folder"),
        (lambda d: (d.mkdir(), (d / "train.en").write_text("a\n")), "missing split 'train': expected train.de"),
        (lambda d: _files(d, de_test="Eins.\nZwei.\n"), "test.en has 1 lines but test.de has 2"),
        (lambda d: _files(d, de_test=b"\xff\xfe"), "test.de is not UTF-8 text"),
        (lambda d: _files(d, de_test=""), "test.de is empty"),
    ],
    ids=["missing", "a-file", "missing-split", "line-counts", "not-utf8", "empty"],
)
def test_data_dir_errors(tmp_path: Path, make, message: str, capsys) -> None:
    make(tmp_path / "corpus")
    assert message in _one_line_error(["train", "--data-dir", "corpus", "--steps", "1"], capsys)


def _files(folder: Path, de_test: str | bytes) -> None:
    folder.mkdir()
    for split in ("train", "valid", "test"):
        (folder / f"{split}.en").write_text("One.\n")
        (folder / f"{split}.de").write_text("Eins.\n")
    target = folder / "test.de"
    target.write_bytes(de_test) if isinstance(de_test, bytes) else target.write_text(de_test)


@pytest.mark.parametrize(
    "argv, env, message",
    [
        (["--dataset", "klingon"], {}, "dataset 'klingon' is not known; choose one of multi30k"),
        (["--dataset", "multi30k"], {"HF_HUB_OFFLINE": "1"}, "is not in the cache"),
        (["--dataset", "multi30k"], {"HF_ENDPOINT": "https://hub.invalid"}, "cannot be reached (offline?)"),
        (["--task", "sentences-en-de", "--vocab-size", "3"], {}, "--vocab-size must be >= 5"),
        (["--task", "sentences-en-de", "--max-pairs", "0"], {}, "--max-pairs must be >= 1, got 0"),
        (["--task", "numbers-en-de", "--max-pairs", "10"], {}, "--max-pairs and --vocab-size are for chapter 12"),
        (["--task", "sentences-en-de"], {"TRANSFORMER_COURSE_PROFILE": "huge"}, "choose auto, cpu, gpu, tiny"),
        (["--task", "sentences-en-de", "--resume", str(PRETRAINED_PATH)], {}, "was trained on word tokens"),
    ],
    ids=["unknown", "offline-flag", "no-network", "vocab-size", "max-pairs", "numbers", "profile", "resume"],
)
def test_train_errors(argv, env: dict, message: str, monkeypatch, capsys) -> None:
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert message in _one_line_error(["train", *argv, "--steps", "1"], capsys)


def test_world_size_without_torchrun_is_one_line(monkeypatch, capsys) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    for name in ("RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    message = _one_line_error(["train", "--task", "sentences-en-de", "--steps", "1"], capsys)
    assert (
        "WORLD_SIZE is set but RANK, LOCAL_RANK, MASTER_ADDR, MASTER_PORT not: start the processes with torchrun"
        in message
    )


def test_a_dataset_and_a_task_together_are_refused(capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["train", "--task", "sentences-en-de", "--dataset", "multi30k"])
    assert stop.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_evaluate_and_translate_errors(tmp_path: Path, texts, capsys) -> None:
    write_text_corpus(_corpus(texts), tmp_path / "corpus")
    assert main(["train", "--data-dir", "corpus", "--steps", "1", "--out", "m.pt", "--quiet"]) == 0
    capsys.readouterr()
    assert "was trained on corpus, not numbers-en-de" in _one_line_error(
        ["evaluate", "m.pt", "--task", "numbers-en-de"], capsys
    )
    assert "(word tokens), not sentences-en-de" in _one_line_error(
        ["evaluate", str(PRETRAINED_PATH), "--task", "sentences-en-de"], capsys
    )
    (tmp_path / "corpus" / "test.en").unlink()
    assert "missing split 'test'" in _one_line_error(["evaluate", "m.pt"], capsys)
    assert "nothing to translate in ' '" in _one_line_error(["translate", "m.pt", "The dog.", " "], capsys)
    assert "--max-len must be >= 1" in _one_line_error(["translate", "m.pt", "The dog.", "--max-len", "0"], capsys)
