"""Chapter 12 — real parallel corpora: your own text files, or a Hugging Face dataset by name.

Two sources, one result (:class:`Corpus`: train / valid / test lists of (source, target) text):

* **plain-text files** in a folder: ``train.en`` and ``train.de``, ``valid.*``, ``test.*``, one
  sentence per line, line *n* of one file the translation of line *n* of the other. Nothing to
  install, nothing to download: the form every corpus can be put in.
* **a dataset from the Hugging Face Hub**, by a short name (:data:`HUB_DATASETS`). Only when
  asked, and only with a network: the ``datasets`` package is optional and imported when needed.
  What comes down is written to a cache folder *as plain-text files with SHA-256 sums*, so the
  second time needs neither the network nor ``datasets``, and a damaged cache is noticed.

Every failure raises :class:`CorpusError` with one line that names the argument and says what
was expected, so the command line can print it as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

SPLITS = ("train", "valid", "test")
Pair = tuple[str, str]


class CorpusError(ValueError):
    """A corpus could not be loaded; the message is one line meant for the user."""


@dataclass
class Corpus:
    """Parallel text: ``train`` / ``valid`` / ``test`` lists of (source text, target text)."""

    name: str
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    src_lang: str = "en"
    tgt_lang: str = "de"
    origin: str = ""  # the folder the text was read from
    info: dict = field(default_factory=dict)  # e.g. {"dropped_empty": {"train": 3}}

    def splits(self) -> dict[str, list[Pair]]:
        """The three splits as a dict, the shape :func:`~transformer_course.subwords.subword_task` takes."""
        return {"train": self.train, "valid": self.valid, "test": self.test}


# -- plain-text files ------------------------------------------------------------------------------


def _read_lines(path: Path, where: str) -> list[str]:
    """The lines of a UTF-8 file, without line ends. Only "\\n" ends a line: ``str.splitlines``
    would also cut at form feeds or U+2028 inside a sentence and shift the alignment."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark at the start is tolerated
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise CorpusError(
            f"{where}: {path.name} is not UTF-8 text (byte 0x{data[error.start]:02x} on line {line}); "
            "convert it to UTF-8, e.g. iconv -t UTF-8"
        ) from None
    if not text:
        raise CorpusError(f"{where}: {path.name} is empty; expected one sentence per line")
    if text.endswith("\n"):
        text = text[:-1]
    return [line.rstrip("\r") for line in text.split("\n")]


def read_parallel(src_path: Path, tgt_path: Path, where: str, max_pairs: int | None = None) -> tuple[list[Pair], int]:
    """Aligned (source, target) lines of two files, and how many pairs were dropped for an empty side."""
    src, tgt = _read_lines(src_path, where), _read_lines(tgt_path, where)
    if len(src) != len(tgt):
        raise CorpusError(
            f"{where}: {src_path.name} has {len(src)} lines but {tgt_path.name} has {len(tgt)}; "
            "a parallel corpus needs the same number of lines in both files"
        )
    pairs = [(s.strip(), t.strip()) for s, t in zip(src, tgt, strict=True)]
    kept = [(s, t) for s, t in pairs if s and t]  # a pair with an empty side teaches nothing
    return kept[:max_pairs] if max_pairs is not None else kept, len(pairs) - len(kept)


def load_text_corpus(
    data_dir: str | Path, src_lang: str = "en", tgt_lang: str = "de", max_pairs: int | None = None
) -> Corpus:
    """Read ``{train,valid,test}.{src_lang,tgt_lang}`` from ``data_dir``.

    ``max_pairs`` keeps at most that many pairs of each split (the first ones).
    """
    folder = Path(data_dir)
    where = f"data_dir {str(data_dir)!r}"
    if not folder.exists():
        raise CorpusError(f"{where} does not exist; expected a folder with train.{src_lang} and train.{tgt_lang}")
    if not folder.is_dir():
        raise CorpusError(f"{where} is a file; expected a folder with train.{src_lang} and train.{tgt_lang}")
    if max_pairs is not None and max_pairs < 1:
        raise CorpusError(f"max_pairs must be >= 1 or None, got {max_pairs}")
    splits, dropped = {}, {}
    for split in SPLITS:
        paths = [folder / f"{split}.{lang}" for lang in (src_lang, tgt_lang)]
        absent = [p.name for p in paths if not p.is_file()]
        if absent:
            found = ", ".join(sorted(p.name for p in folder.iterdir() if p.is_file())) or "no files"
            raise CorpusError(f"{where}: missing split {split!r}: expected {' and '.join(absent)} (found: {found})")
        splits[split], dropped[split] = read_parallel(*paths, where=where, max_pairs=max_pairs)
        if not splits[split]:
            raise CorpusError(f"{where}: split {split!r} has no pair with text on both sides")
    info = {"dropped_empty": dropped}
    return Corpus(folder.name, **splits, src_lang=src_lang, tgt_lang=tgt_lang, origin=str(folder), info=info)


def write_text_corpus(corpus: Corpus, data_dir: str | Path) -> dict[str, str]:
    """Write ``corpus`` as the plain-text files :func:`load_text_corpus` reads; returns their SHA-256."""
    folder = Path(data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    sums = {}
    for split, pairs in corpus.splits().items():
        for side, lang in enumerate((corpus.src_lang, corpus.tgt_lang)):
            # a line break inside a sentence would break the one-line-per-sentence alignment
            text = "".join(" ".join(pair[side].split()) + "\n" for pair in pairs)
            path = folder / f"{split}.{lang}"
            path.write_text(text, encoding="utf-8")
            sums[path.name] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return sums


# -- the Hugging Face Hub --------------------------------------------------------------------------


@dataclass(frozen=True)
class HubDataset:
    """Where a corpus lives on the Hub and how its rows hold the two languages."""

    repo: str
    config: str | None = None
    revision: str | None = None
    data_dir: str | None = None
    layout: str = "translation"  # rows {"translation": {"en": …, "de": …}}, or "columns": {"en": …, "de": …}
    splits: tuple[tuple[str, str], ...] = (("train", "train"), ("valid", "validation"), ("test", "test"))


HUB_DATASETS: dict[str, HubDataset] = {
    # 29k image captions: short, simple sentences (the Annotated Transformer's corpus)
    "multi30k": HubDataset("bentrevett/multi30k", layout="columns"),
    # 206k sentences of TED talks; read from the Hub's Parquet conversion (the repo itself holds a script)
    "iwslt2017-en-de": HubDataset("IWSLT/iwslt2017", revision="refs/convert/parquet", data_dir="iwslt2017-en-de"),
    # 4.5M sentences of news and parliament (the paper's corpus): use max_pairs
    "wmt14-en-de": HubDataset("wmt/wmt14", config="de-en"),
}


def default_cache_dir() -> Path:
    """``$TRANSFORMER_COURSE_CACHE/corpora``, or ``~/.cache/transformer_course/corpora``."""
    root = os.environ.get("TRANSFORMER_COURSE_CACHE") or Path.home() / ".cache" / "transformer_course"
    return Path(root) / "corpora"


def _import_datasets():
    """The optional ``datasets`` package (tests replace this function with a fake)."""
    import datasets

    return datasets


def _offline_flag() -> str | None:
    """The environment variable that sets Hugging Face offline, if one does."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE"):
            return name
    return None


def _hub_reachable(timeout: float = 5.0) -> bool:
    """Can a connection to the Hub be opened? Asked once, so that no network fails in seconds,
    not after the retries of the download code. Behind a proxy we cannot tell: assume yes."""
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
    except OSError:
        return False
    return True


def _cache_folder(name: str, max_pairs: int | None, cache_dir: str | Path | None) -> Path:
    return Path(cache_dir or default_cache_dir()) / f"{name}-{max_pairs or 'all'}"


def _load_cached(folder: Path, where: str) -> Corpus | None:
    """The cached corpus, or None when there is none; a cache whose files changed is an error."""
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        expected_sums, langs = dict(manifest["sha256"]), (manifest["src_lang"], manifest["tgt_lang"])
    except (ValueError, KeyError, TypeError):
        raise CorpusError(f"{where}: the cache manifest {manifest_path} is unreadable; delete the folder") from None
    for filename, expected in expected_sums.items():
        path = folder / filename
        actual = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"
        if actual != expected:
            raise CorpusError(
                f"{where}: the cached {filename} in {folder} is damaged (SHA-256 differs); delete the folder"
            )
    corpus = load_text_corpus(folder, *langs)
    corpus.name, corpus.info = manifest["dataset"], {**corpus.info, "cached": True}
    return corpus


def _rows_to_pairs(rows, spec: HubDataset, src_lang: str, tgt_lang: str, limit: int | None) -> list[Pair]:
    pairs = []
    for row in rows:
        texts = row["translation"] if spec.layout == "translation" else row
        pairs.append((texts[src_lang], texts[tgt_lang]))
        if limit is not None and len(pairs) >= limit:
            break
    return pairs


def _download(name: str, spec: HubDataset, where: str, max_pairs: int | None) -> dict[str, list[Pair]]:
    """Stream each split from the Hub (streaming reads only the rows kept, not all of WMT14)."""
    try:
        datasets = _import_datasets()
    except ImportError:
        raise CorpusError(f"{where} needs the Hugging Face 'datasets' package: pip install 'datasets>=2.19'") from None
    splits = {}
    for ours, theirs in spec.splits:
        try:
            rows = datasets.load_dataset(
                spec.repo, spec.config, split=theirs, streaming=True, revision=spec.revision, data_dir=spec.data_dir
            )
            splits[ours] = _rows_to_pairs(rows, spec, "en", "de", max_pairs)
        except Exception as error:  # the library raises many types; sort them into our lines
            raise _hub_error(error, where, spec, theirs) from None
    return splits


def _hub_error(error: Exception, where: str, spec: HubDataset, split: str) -> CorpusError:
    """One line for an error from ``datasets`` / ``huggingface_hub``."""
    kind = type(error).__name__
    text = (str(error).strip().splitlines() or [""])[0]
    if isinstance(error, ConnectionError) or "Offline" in kind or "Connect" in kind or "Timeout" in kind:
        return CorpusError(
            f"{where}: cannot reach the Hugging Face Hub ({kind}); connect to a network, or use data_dir"
        )
    if "split" in text.lower() and ("unknown" in text.lower() or "bad" in text.lower()):
        return CorpusError(f"{where}: the Hub dataset {spec.repo} has no split {split!r} ({text})")
    if "NotFound" in kind:
        return CorpusError(f"{where}: {spec.repo} was not found on the Hub ({kind}); it may have moved")
    return CorpusError(f"{where}: loading {spec.repo} failed: {kind}: {text}")


def load_hub_corpus(
    dataset: str,
    max_pairs: int | None = None,
    cache_dir: str | Path | None = None,
    reachable: Callable[[], bool] = _hub_reachable,
) -> Corpus:
    """English → German corpus ``dataset`` (a key of :data:`HUB_DATASETS`), from the cache or the Hub.

    ``max_pairs`` keeps at most that many pairs per split (the first ones); each cap has its own
    cache folder under ``cache_dir`` (default :func:`default_cache_dir`).
    """
    where = f"dataset {dataset!r}"
    if dataset not in HUB_DATASETS:
        raise CorpusError(f"{where} is not known; choose one of {', '.join(HUB_DATASETS)}, or give data_dir")
    if max_pairs is not None and max_pairs < 1:
        raise CorpusError(f"max_pairs must be >= 1 or None, got {max_pairs}")
    folder = _cache_folder(dataset, max_pairs, cache_dir)
    cached = _load_cached(folder, where)
    if cached is not None:
        return cached
    flag = _offline_flag()
    if flag:
        raise CorpusError(f"{where} is not in the cache ({folder}) and {flag} is set: run once online, or use data_dir")
    if not reachable():
        raise CorpusError(
            f"{where} is not in the cache ({folder}) and the Hugging Face Hub cannot be reached (offline?)"
        )
    splits = _download(dataset, HUB_DATASETS[dataset], where, max_pairs)
    for split, pairs in splits.items():
        if not pairs:
            raise CorpusError(f"{where}: the Hub's split {split!r} came back empty")
    corpus = Corpus(dataset, **splits, origin=str(folder))
    _save_cache(corpus, folder)
    return _load_cached(folder, where)  # what later runs will read: the same text, whitespace tidied


def _save_cache(corpus: Corpus, folder: Path) -> None:
    """Write the files, then the manifest: a run cut short leaves no manifest, hence no cache."""
    partial = folder.with_name(folder.name + ".partial")
    sums = write_text_corpus(corpus, partial)
    manifest = {"dataset": corpus.name, "src_lang": corpus.src_lang, "tgt_lang": corpus.tgt_lang, "sha256": sums}
    (partial / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    if folder.exists():  # another run filled it meanwhile
        shutil.rmtree(partial)
        return
    partial.rename(folder)


def load_corpus(
    dataset: str | None = None, data_dir: str | Path | None = None, max_pairs: int | None = None, **kwargs
) -> Corpus:
    """Exactly one of ``dataset`` (a Hub name) or ``data_dir`` (a folder of text files)."""
    if (dataset is None) == (data_dir is None):
        raise CorpusError(
            "give exactly one of dataset (a name: " + ", ".join(HUB_DATASETS) + ") or data_dir (a folder)"
        )
    if data_dir is not None:
        return load_text_corpus(data_dir, max_pairs=max_pairs, **kwargs)
    return load_hub_corpus(dataset, max_pairs=max_pairs, **kwargs)


def describe(corpus: Corpus, show: int = 2) -> str:
    """A short text summary: sizes and the first pairs."""
    lines = [f"{corpus.name}: " + ", ".join(f"{k} {len(v):,}" for k, v in corpus.splits().items())]
    lines += [f"  {s}  →  {t}" for s, t in corpus.train[:show]]
    return "\n".join(lines)


__all__ = [
    "HUB_DATASETS",
    "Corpus",
    "CorpusError",
    "HubDataset",
    "default_cache_dir",
    "load_corpus",
    "load_hub_corpus",
    "load_text_corpus",
    "read_parallel",
    "write_text_corpus",
]
