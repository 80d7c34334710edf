"""The shipped numbers translator and a tiny translator of chapter 12 exported, then run by transformers
(generate on text) and CTranslate2 (greedy and beam 4): the same German as the course's `translate`,
on 50 numbers; the int8 and bf16 exports against the course's own int8 and bf16 models."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="pip install 'transformer-course[hub]'")
ctranslate2 = pytest.importorskip("ctranslate2", reason="pip install ctranslate2 (make install does)")

from transformer_course.batching import pad_sequences  # noqa: E402
from transformer_course.datasets.numbers import number_to_english  # noqa: E402
from transformer_course.decoding import beam_search, greedy_decode  # noqa: E402
from transformer_course.quantize import quantize  # noqa: E402
from transformer_course_tools.cli import main  # noqa: E402
from transformer_course_tools.models.export.ct2 import write_ctranslate2  # noqa: E402
from transformer_course_tools.models.export.folders import write_transformers  # noqa: E402
from transformer_course_tools.models.export.sources import load_source  # noqa: E402

MAX_NEW = 20  # a number's German has at most 11 pieces


def _fifty() -> list[int]:
    rng = random.Random(50)
    return [0, 7, 19, 100, 101, 1000, 21_000, 100_000, 101_001, 999_999] + [rng.randrange(1_000_000) for _ in range(40)]


FIFTY = _fifty()  # a few of each kind, then random ones


def fifty_numbers() -> list[str]:
    return [number_to_english(n) for n in FIFTY]


def translate_cli(inputs: list[str], capsys) -> list[str]:
    """What ``python -m transformer_course translate`` prints for each input, in order."""
    assert main(["translate", *inputs]) == 0
    lines = capsys.readouterr().out.splitlines()
    return [lines[i + 1].strip() for i in range(0, len(lines), 2)]


@pytest.fixture(scope="module")
def numbers(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("numbers")
    source = load_source("numbers-en-de")
    ct2 = {p: write_ctranslate2(source, root / f"ct2-{p}", p, root / f"hf-{p}") for p in ("float32", "int8", "bf16")}
    return {"source": source, "hf": root / "hf-float32", "ct2": ct2}


def test_transformers_generate_on_text_gives_translates_german(numbers, capsys) -> None:
    texts = fifty_numbers()
    tok = transformers.AutoTokenizer.from_pretrained(numbers["hf"])
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(numbers["hf"])
    assert isinstance(tok, transformers.PreTrainedTokenizerFast) and isinstance(model, transformers.MarianMTModel)
    out = model.generate(**tok(texts, return_tensors="pt", padding=True), max_new_tokens=MAX_NEW)
    assert tok.batch_decode(out, skip_special_tokens=True) == translate_cli(texts, capsys)


def _ct2_translate(path: Path, source, texts: list[str], **options) -> list[list[str]]:
    translator = ctranslate2.Translator(str(path))
    pieces = [source.tokenizer.encode(t).tokens for t in texts]
    results = translator.translate_batch(pieces, max_decoding_length=MAX_NEW, min_decoding_length=0, **options)
    return [r.hypotheses[0] for r in results]


def _course_translate(model, source, texts: list[str], beam: int = 1) -> list[list[str]]:
    src = pad_sequences([source.tokenizer.encode(t).ids for t in texts], model.config.pad_id)  # (B, S)
    with torch.no_grad():
        out = greedy_decode(model, src, MAX_NEW) if beam == 1 else beam_search(model, src, beam, MAX_NEW, 0.0)[0][:, 0]
    words = [[source.tokenizer.id_to_token(i) for i in row] for row in out.tolist()]
    return [row[: row.index("<eos>")] if "<eos>" in row else row for row in words]


def test_ctranslate2_greedy_gives_translates_german(numbers, capsys) -> None:
    texts = fifty_numbers()
    greedy = _ct2_translate(numbers["ct2"]["float32"], numbers["source"], texts, beam_size=1)
    assert ["".join(pieces) for pieces in greedy] == translate_cli(texts, capsys)


def test_ctranslate2_beam_4_gives_the_courses_tokens(numbers) -> None:
    """Both rank the hypotheses by log-probability (length penalty 0). CTranslate2 takes a finished
    hypothesis out of its beam, the course keeps it in: with patience 2 CTranslate2 waits for 8 finished
    hypotheses, enough to meet the course's best (with 1, four short ones can end the search first)."""
    texts = fifty_numbers()
    source = numbers["source"]
    theirs = _ct2_translate(numbers["ct2"]["float32"], source, texts, beam_size=4, length_penalty=0.0, patience=2)
    assert theirs == _course_translate(source.model, source, texts, beam=4)


@pytest.mark.parametrize("precision", ["int8", "bf16"])
def test_ctranslate2_int8_and_bf16_give_the_courses_quantized_tokens(numbers, precision: str) -> None:
    """CTranslate2's int8 (one scale per weight row, the input rounded to 8 bits per call) and bf16
    weights against the course's quantize(model, ...): different kernels, the same greedy tokens here."""
    texts = fifty_numbers()
    source = numbers["source"]
    theirs = _ct2_translate(numbers["ct2"][precision], source, texts, beam_size=1)
    ours = _course_translate(quantize(source.model, precision), source, texts)
    assert theirs == ours


# -- chapter 12's translator: subword tokens, the tokenizer inside the checkpoint -----------------------------


@pytest.fixture(scope="module")
def subword_translators(tmp_path_factory) -> dict[str, Path]:
    """A translator of chapter 12 trained for a few steps with the tiny profile by the CLI's `train` (it
    mostly stops at once), and the same checkpoint with every weight drawn at random (it writes long
    strings of subwords, which the engines must all decode alike)."""
    from transformer_course.checkpoint import load_checkpoint, save_checkpoint
    from transformer_course.subwords import SubwordTokenizer

    root = tmp_path_factory.mktemp("bpe")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRANSFORMER_COURSE_PROFILE", "tiny")
        argv = ["train", "--task", "sentences-en-de", "--steps", "30", "--out", str(root / "s.pt"), "--quiet"]
        assert main(argv) == 0
    trained = load_checkpoint(root / "s.pt")
    torch.manual_seed(0)
    with torch.no_grad():
        for name, parameter in trained.model.named_parameters():
            mean, std = (0.0, 1.0) if parameter.dim() > 1 else (1.0 if "norm" in name else 0.0, 0.2)
            parameter.normal_(mean, std)
    tokenizer = SubwordTokenizer.from_dict(trained.tokenizer)
    save_checkpoint(root / "random.pt", trained.model, trained.src_vocab, trained.tgt_vocab, tokenizer=tokenizer)
    return {"trained": root / "s.pt", "random": root / "random.pt"}


@pytest.mark.parametrize("weights", ["trained", "random"])
def test_a_subword_translator_runs_in_transformers_and_ctranslate2(subword_translators, weights: str, tmp_path,
                                                                   capsys) -> None:  # fmt: skip
    from transformer_course.datasets.sentences import sentence_splits

    capsys.readouterr()
    texts = [en for en, _ in sentence_splits(n_train=10, n_valid=10, n_test=12)["test"]]
    checkpoint = subword_translators[weights]
    expected = translate_cli([str(checkpoint), *texts, "--max-len", str(MAX_NEW)], capsys)
    assert weights == "trained" or sum(len(t) for t in expected) > 10 * len(texts)  # a real test of the text
    source = load_source(str(checkpoint))
    write_transformers(source, tmp_path / "hf")
    tok = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf")
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "hf")
    out = model.generate(**tok(texts, return_tensors="pt", padding=True), max_new_tokens=MAX_NEW)
    assert [" ".join(t.split()) for t in tok.batch_decode(out, skip_special_tokens=True)] == expected
    write_ctranslate2(source, tmp_path / "ct2", "float32", tmp_path / "hf2")
    pieces = _ct2_translate(tmp_path / "ct2", source, texts, beam_size=1)
    written = [source.tokenizer.decode([source.tokenizer.token_to_id(p) for p in row]) for row in pieces]
    assert [" ".join(t.split()) for t in written] == expected


def test_the_undertrained_translator_makes_its_own_mistakes_in_both_engines(tmp_path: Path, capsys) -> None:
    """The shipped model stopped early (chapter 10's): wrong German, the same wrong German everywhere."""
    texts = fifty_numbers()
    capsys.readouterr()
    expected = translate_cli([str(load_pretrained_path("numbers-en-de-undertrained")), *texts], capsys)
    source = load_source("numbers-en-de-undertrained")
    write_ctranslate2(source, tmp_path / "ct2", "float32", tmp_path / "hf")
    tok = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf")
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "hf")
    out = model.generate(**tok(texts, return_tensors="pt", padding=True), max_new_tokens=MAX_NEW)
    assert tok.batch_decode(out, skip_special_tokens=True) == expected
    greedy = _ct2_translate(tmp_path / "ct2", source, texts, beam_size=1)
    assert ["".join(pieces) for pieces in greedy] == expected
    from transformer_course.datasets.numbers import number_to_german

    right = sum(g == number_to_german(n) for g, n in zip(expected, FIFTY, strict=True))
    assert right < len(texts), "it still makes mistakes (else this test shows nothing)"


def load_pretrained_path(name: str) -> Path:
    from transformer_course_tools.models.pretrained import PRETRAINED

    return PRETRAINED[name]
