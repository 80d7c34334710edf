"""Chapter 12 corpora: text files the tests write, and the Hub path with a fake ``datasets`` (never a download)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from transformer_course.datasets import corpora
from transformer_course.datasets.corpora import (
    Corpus,
    CorpusError,
    load_corpus,
    load_hub_corpus,
    load_text_corpus,
    write_text_corpus,
)

EN = ["The dog sleeps.", "The cat runs.", "A bird sings."]
DE = ["Der Hund schläft.", "Die Katze läuft.", "Ein Vogel singt."]


def write(folder: Path, files: dict[str, str | bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = folder / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return folder


def good_files(n_test: int = 2) -> dict[str, str]:
    lines = lambda xs: "".join(x + "\n" for x in xs)
    return {
        "train.en": lines(EN),
        "train.de": lines(DE),
        "valid.en": lines(EN[:1]),
        "valid.de": lines(DE[:1]),
        "test.en": lines(EN[:n_test]),
        "test.de": lines(DE[:n_test]),
    }


def one_line_error(call) -> str:
    with pytest.raises(CorpusError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and message
    return message


# -- text files ------------------------------------------------------------------------------------


def test_reads_aligned_files(tmp_path):
    corpus = load_text_corpus(write(tmp_path / "c", good_files()))
    assert corpus.train == list(zip(EN, DE, strict=True))
    assert corpus.valid == [(EN[0], DE[0])] and len(corpus.test) == 2
    assert corpus.splits()["test"] == corpus.test and corpus.name == "c"


def test_windows_line_ends_bom_blank_pairs_and_max_pairs(tmp_path):
    files = good_files()
    files["train.en"] = "\ufeffThe dog sleeps.\r\n\r\nThe cat runs.\r\n  A bird sings.  \r\n"
    files["train.de"] = "Der Hund schläft.\r\nLeer.\r\nDie Katze läuft.\r\nEin Vogel singt.\r\n"
    corpus = load_text_corpus(write(tmp_path / "c", files))
    assert corpus.train == list(zip(EN, DE, strict=True))
    assert corpus.info["dropped_empty"]["train"] == 1  # the pair whose English side is empty
    assert load_text_corpus(tmp_path / "c", max_pairs=2).train == corpus.train[:2]


def test_only_newline_ends_a_line(tmp_path):
    files = good_files()
    files["train.en"] = "The dog\u2028sleeps.\nThe cat\x0cruns.\nA bird sings.\n"  # separators inside sentences
    corpus = load_text_corpus(write(tmp_path / "c", files))
    assert len(corpus.train) == 3 and corpus.train[2] == (EN[2], DE[2])


def test_other_languages(tmp_path):
    files = {name.replace(".de", ".fr"): text for name, text in good_files().items()}
    corpus = load_text_corpus(write(tmp_path / "c", files), tgt_lang="fr")
    assert corpus.tgt_lang == "fr" and corpus.train[0] == (EN[0], DE[0])


def test_missing_folder(tmp_path):
    assert one_line_error(lambda: load_text_corpus(tmp_path / "nope")) == (
        f"data_dir '{tmp_path / 'nope'}' does not exist; expected a folder with train.en and train.de"
    )
    (tmp_path / "file").write_text("x")
    assert "is a file; expected a folder" in one_line_error(lambda: load_text_corpus(tmp_path / "file"))


@pytest.mark.parametrize(
    "changes, expected",
    [
        (
            {"test.de": None, "test.en": None},
            "missing split 'test': expected test.en and test.de (found: train.de, train.en, valid.de, valid.en)",
        ),
        (
            {"train.de": "Der Hund schläft.\nDie Katze läuft.\n"},
            "train.en has 3 lines but train.de has 2; a parallel corpus needs the same number of lines in both files",
        ),
        ({"valid.de": ""}, "valid.de is empty; expected one sentence per line"),
        (
            {"train.de": "Der Hund schläft.\nDie Katze l".encode() + b"\xe4uft.\nEin Vogel singt.\n"},  # Latin-1 ä
            "train.de is not UTF-8 text (byte 0xe4 on line 2); convert it to UTF-8, e.g. iconv -t UTF-8",
        ),
    ],
    ids=["missing-split", "different-line-counts", "empty-file", "undecodable-bytes"],
)
def test_bad_files(tmp_path, changes: dict, expected: str):
    files = {**good_files(), **changes}
    folder = write(tmp_path / "c", {name: text for name, text in files.items() if text is not None})
    assert one_line_error(lambda: load_text_corpus(folder)) == f"data_dir '{folder}': {expected}"


def test_write_then_read_back(tmp_path):
    corpus = Corpus("x", [("a  b", "c\nd")], [("e", "f")], [("g", "h")])
    sums = write_text_corpus(corpus, tmp_path / "out")
    assert set(sums) == {f"{s}.{lang}" for s in ("train", "valid", "test") for lang in ("en", "de")}
    assert load_text_corpus(tmp_path / "out").train == [("a b", "c d")]  # one line per sentence, always


def test_load_corpus_needs_exactly_one_source(tmp_path):
    message = one_line_error(lambda: load_corpus())
    assert (
        message == "give exactly one of dataset (a name: multi30k, iwslt2017-en-de, wmt14-en-de) or data_dir (a folder)"
    )
    one_line_error(lambda: load_corpus("multi30k", tmp_path))
    assert load_corpus(data_dir=write(tmp_path / "c", good_files())).train[0] == (EN[0], DE[0])


# -- the Hub, with a fake datasets module ----------------------------------------------------------


class FakeDatasets:
    """Stands in for ``datasets``: records calls, serves rows, or raises what the real one would."""

    def __init__(self, rows: dict[str, list[dict]] | None = None, error: Exception | None = None) -> None:
        self.rows, self.error, self.calls = rows or {}, error, []

    def load_dataset(self, repo, config=None, *, split, streaming, revision=None, data_dir=None):
        self.calls.append((repo, config, split, streaming, revision, data_dir))
        if self.error is not None:
            raise self.error
        if split not in self.rows:
            raise ValueError(f"Bad split: {split}. Available splits: {sorted(self.rows)}")
        return iter(self.rows[split])


def _columns(n: int) -> list[dict]:
    return [{"en": f"Sentence {i}.", "de": f"Satz {i}."} for i in range(n)]


def _translation(n: int) -> list[dict]:
    return [{"translation": {"de": f"Satz {i}.", "en": f"Sentence {i}."}} for i in range(n)]


@pytest.fixture
def online(monkeypatch):
    """The Hub is 'reachable' and no offline flag is set; the fake is installed by each test."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)

    def install(fake: FakeDatasets) -> FakeDatasets:
        monkeypatch.setattr(corpora, "_import_datasets", lambda: fake)
        return fake

    return install


def test_hub_columns_layout_is_downloaded_once_then_cached(tmp_path, online):
    fake = online(FakeDatasets({"train": _columns(5), "validation": _columns(2), "test": _columns(3)}))
    corpus = load_hub_corpus("multi30k", cache_dir=tmp_path, reachable=lambda: True)
    assert corpus.train[4] == ("Sentence 4.", "Satz 4.") and len(corpus.valid) == 2 and len(corpus.test) == 3
    assert [c[:4] for c in fake.calls] == [
        ("bentrevett/multi30k", None, s, True) for s in ("train", "validation", "test")
    ]
    folder = tmp_path / "multi30k-all"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["dataset"] == "multi30k" and len(manifest["sha256"]) == 6
    online(FakeDatasets(error=AssertionError("the cache must be used")))
    again = load_hub_corpus("multi30k", cache_dir=tmp_path, reachable=lambda: False)
    assert again.splits() == corpus.splits() and again.info["cached"]


def test_hub_translation_layout_with_a_cap(tmp_path, online):
    fake = online(FakeDatasets({"train": _translation(50), "validation": _translation(9), "test": _translation(9)}))
    corpus = load_hub_corpus("wmt14-en-de", max_pairs=4, cache_dir=tmp_path, reachable=lambda: True)
    assert corpus.train == [(f"Sentence {i}.", f"Satz {i}.") for i in range(4)] and len(corpus.test) == 4
    assert fake.calls[0] == ("wmt/wmt14", "de-en", "train", True, None, None)
    assert (tmp_path / "wmt14-en-de-4" / "train.de").read_text().count("\n") == 4


def test_iwslt_reads_the_parquet_conversion(tmp_path, online):
    fake = online(FakeDatasets({"train": _translation(3), "validation": _translation(1), "test": _translation(1)}))
    load_hub_corpus("iwslt2017-en-de", cache_dir=tmp_path, reachable=lambda: True)
    assert fake.calls[0] == ("IWSLT/iwslt2017", None, "train", True, "refs/convert/parquet", "iwslt2017-en-de")


def test_damaged_cache(tmp_path, online):
    online(FakeDatasets({"train": _columns(3), "validation": _columns(1), "test": _columns(1)}))
    load_hub_corpus("multi30k", cache_dir=tmp_path, reachable=lambda: True)
    (tmp_path / "multi30k-all" / "train.de").write_text("changed\n")
    assert one_line_error(lambda: load_hub_corpus("multi30k", cache_dir=tmp_path)) == (
        f"dataset 'multi30k': the cached train.de in {tmp_path / 'multi30k-all'} is damaged (SHA-256 differs); "
        "delete the folder"
    )


def test_unreadable_manifest(tmp_path):
    write(tmp_path / "multi30k-all", {"manifest.json": "{not json"})
    assert one_line_error(lambda: load_hub_corpus("multi30k", cache_dir=tmp_path)) == (
        f"dataset 'multi30k': the cache manifest {tmp_path / 'multi30k-all' / 'manifest.json'} is unreadable; "
        "delete the folder"
    )


def test_unknown_dataset_name(tmp_path):
    assert one_line_error(lambda: load_hub_corpus("multi31k", cache_dir=tmp_path)) == (
        "dataset 'multi31k' is not known; choose one of multi30k, iwslt2017-en-de, wmt14-en-de, or give data_dir"
    )


def test_offline_flag(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert one_line_error(lambda: load_hub_corpus("multi30k", cache_dir=tmp_path)) == (
        f"dataset 'multi30k' is not in the cache ({tmp_path / 'multi30k-all'}) and HF_HUB_OFFLINE is set: "
        "run once online, or use data_dir"
    )


def test_no_network(tmp_path, online):
    online(FakeDatasets(error=AssertionError("must not be called")))
    assert one_line_error(lambda: load_hub_corpus("multi30k", cache_dir=tmp_path, reachable=lambda: False)) == (
        f"dataset 'multi30k' is not in the cache ({tmp_path / 'multi30k-all'}) and the Hugging Face Hub "
        "cannot be reached (offline?)"
    )


def test_datasets_not_installed(tmp_path, online, monkeypatch):
    def missing():
        raise ImportError("No module named 'datasets'")

    monkeypatch.setattr(corpora, "_import_datasets", missing)
    assert one_line_error(lambda: load_hub_corpus("multi30k", cache_dir=tmp_path, reachable=lambda: True)) == (
        "dataset 'multi30k' needs the Hugging Face 'datasets' package: pip install 'datasets>=2.19'"
    )


def test_missing_split_on_the_hub(tmp_path, online):
    online(FakeDatasets({"train": _columns(3), "test": _columns(1)}))
    assert one_line_error(lambda: load_hub_corpus("multi30k", cache_dir=tmp_path, reachable=lambda: True)) == (
        "dataset 'multi30k': the Hub dataset bentrevett/multi30k has no split 'validation' "
        "(Bad split: validation. Available splits: ['test', 'train'])"
    )
    assert not (tmp_path / "multi30k-all").exists()  # nothing half-written is taken for a cache


def test_connection_lost_during_download(tmp_path, online):
    online(
        FakeDatasets(error=ConnectionError("Couldn't reach 'bentrevett/multi30k' on the Hub (LocalEntryNotFoundError)"))
    )
    assert one_line_error(lambda: load_hub_corpus("multi30k", cache_dir=tmp_path, reachable=lambda: True)) == (
        "dataset 'multi30k': cannot reach the Hugging Face Hub (ConnectionError); connect to a network, or use data_dir"
    )


def test_real_datasets_library_offline_gives_our_line(tmp_path):
    """The installed ``datasets`` in offline mode (a fresh process, since it reads the flag on import)."""
    pytest.importorskip("datasets")
    code = (  # datasets/corpora.py imports nothing of the package: load the file alone, without torch
        "import importlib.util as u, sys\n"
        f"spec = u.spec_from_file_location('corpora', {corpora.__file__!r})\n"
        "m = sys.modules['corpora'] = u.module_from_spec(spec)\n"
        "spec.loader.exec_module(m)\n"
        "try:\n"
        "    m._download('multi30k', m.HUB_DATASETS['multi30k'], \"dataset 'multi30k'\", 3)\n"
        "except m.CorpusError as e:\n"
        "    print(e)\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip().startswith("dataset 'multi30k': cannot reach the Hugging Face Hub ("), out.stderr[-500:]


def test_a_split_with_only_blank_pairs_is_refused(tmp_path):
    files = {**good_files(), "valid.en": "\n\n", "valid.de": "Hallo.\n\n"}  # one side blank on every line
    with pytest.raises(CorpusError, match="split 'valid' has no pair with text on both sides"):
        load_text_corpus(write(tmp_path / "c", files))
