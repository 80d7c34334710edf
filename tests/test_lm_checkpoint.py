"""The language model's checkpoint (lm_checkpoint.py), the Shakespeare text it learns from
(datasets/shakespeare.py), and the shipped language model (its hash, its recipe, its samples)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from transformer_course import DecoderOnlyConfig, DecoderOnlyLM, generate, load_checkpoint
from transformer_course.datasets.shakespeare import PLAYS, pack_passages, passages, play_text, shakespeare_splits
from transformer_course.lm_checkpoint import load_lm_checkpoint, save_lm_checkpoint
from transformer_course.subwords import SubwordTokenizer, train_subwords
from transformer_course_tools.models.pretrained import (
    LM_PATH,
    PRETRAINED_PATH,
    ChecksumError,
    load_pretrained_lm,
    recorded_sha256,
    sha256_of,
    sha256_path,
    verify_sha256,
)

# -- the text ---------------------------------------------------------------------------------------------


def test_the_plays_are_shipped_with_their_licence() -> None:
    readme = (Path(play_text.__code__.co_filename).parent / "texts" / "README.md").read_text(encoding="utf-8")
    assert "public domain" in readme.lower() and "Licence" in readme
    sizes = {name: len(play_text(name)) for name in PLAYS}
    assert all(s > 80_000 for s in sizes.values()) and 600_000 < sum(sizes.values()) < 1_000_000
    assert play_text("hamlet").startswith("HAMLET, PRINCE OF DENMARK")
    with pytest.raises(ValueError, match="unknown play 'lear'; choose one of hamlet"):
        play_text("lear")


def test_passages_and_the_splits() -> None:
    assert passages("Ber.\nWho's there?\n\n \nFran.\n  Nay,   answer me.\n") == [
        "Ber. Who's there?",
        "Fran. Nay, answer me.",
    ]
    splits = shakespeare_splits()
    hamlet = passages(play_text("hamlet"))
    assert splits["train"][0] == hamlet[0] and hamlet[-1] in splits["test"]
    n = {name: len(part) for name, part in splits.items()}
    assert n["valid"] > 100 and n["test"] > 100 and n["train"] > 15 * n["test"]
    assert splits == shakespeare_splits(), "the same splits every time"
    for name in PLAYS:  # every play's end is held out, its beginning trained on
        blocks = passages(play_text(name))
        assert blocks[-1] in splits["test"] and blocks[1] in splits["train"]


def test_pack_passages_keeps_every_token_in_order_within_the_length() -> None:
    ids = [[5] * 3, [6] * 4, [7] * 10, [8] * 2, [9] * 25, [10]]
    texts = pack_passages(ids, max_tokens=12, bos_id=1, eos_id=2)
    assert all(len(t) <= 12 and t[0] == 1 for t in texts)
    inner = [i for t in texts for i in t if i not in (1, 2)]
    assert inner == [i for passage in ids for i in passage]
    assert texts[0] == [1, 5, 5, 5, 6, 6, 6, 6, 2]  # two passages together, then <eos>
    long = [t for t in texts if 9 in t]
    assert [t[-1] for t in long[:-1]] == [9] * (len(long) - 1), "no <eos> inside a passage cut in pieces"
    with pytest.raises(ValueError, match="max_tokens must be >= 3"):
        pack_passages(ids, 2, 1, 2)


# -- the checkpoint --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tokenizer() -> SubwordTokenizer:
    return train_subwords(["the cat sat on the mat", "a dog ran"] * 5, vocab_size=50)


def test_a_language_model_comes_back_from_its_file(tokenizer, tmp_path: Path) -> None:
    torch.manual_seed(0)
    lm = DecoderOnlyLM(DecoderOnlyConfig.modern(len(tokenizer), d_model=16, n_heads=2, n_layers=1, max_len=32))
    path = save_lm_checkpoint(tmp_path / "lm.pt", lm, tokenizer, step=7, extra={"note": "hi"})
    back = load_lm_checkpoint(path)
    assert back.config == lm.config and back.step == 7 and back.extra == {"note": "hi"} and not back.model.training
    assert all(
        torch.equal(a, b) for a, b in zip(lm.state_dict().values(), back.model.state_dict().values(), strict=True)
    )
    assert SubwordTokenizer.from_dict(back.tokenizer) == tokenizer
    assert not list(tmp_path.glob("*.partial"))


def test_a_file_of_another_kind_is_named(tokenizer, tmp_path: Path) -> None:
    torch.manual_seed(0)
    lm = DecoderOnlyLM(DecoderOnlyConfig.modern(len(tokenizer), d_model=16, n_heads=2, n_layers=1, max_len=32))
    path = save_lm_checkpoint(tmp_path / "lm.pt", lm)
    with pytest.raises(ValueError, match="is not a transformer-course checkpoint"):
        load_checkpoint(path)
    with pytest.raises(ValueError, match="holds a translator \\(chapter 08's checkpoint\\), not a language model"):
        load_lm_checkpoint(PRETRAINED_PATH)
    (tmp_path / "bad.pt").write_bytes(b"not torch")
    with pytest.raises(ValueError, match="is not a readable checkpoint"):
        load_lm_checkpoint(tmp_path / "bad.pt")
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        load_lm_checkpoint(tmp_path / "none.pt")
    with pytest.raises(ValueError, match=f"the tokenizer has {len(tokenizer)} tokens, the model's vocabulary 60"):
        save_lm_checkpoint(tmp_path / "x.pt", DecoderOnlyLM(DecoderOnlyConfig(60, d_model=16, n_heads=2)), tokenizer)


# -- the shipped language model --------------------------------------------------------------------------


def test_the_shipped_language_model_is_small_hashed_and_writes_english(tmp_path: Path) -> None:
    assert LM_PATH.stat().st_size < 5_000_000
    assert sha256_of(LM_PATH) == recorded_sha256(sha256_path(LM_PATH))
    shipped = load_pretrained_lm()
    c = shipped.config
    assert (c.norm, c.positional, c.feed_forward, c.scale_embedding) == ("rmsnorm", "rope", "swiglu", False)
    extra = shipped.extra
    assert extra["text"] == "shakespeare" and extra["recipe"]["steps"] == shipped.step
    assert math.exp(extra["valid_loss"]) < 200, "far better than guessing among the 2,000 tokens"
    tok = SubwordTokenizer.from_dict(shipped.tokenizer)
    out = generate(shipped.model, torch.tensor([tok.encode("Ham. To be, or not", add_bos=True)]), 30)[0].tolist()
    text = tok.decode(out)
    words = [w.strip(".,;:!?'[]-") for w in text.split()]
    english = {"the", "and", "to", "of", "i", "my", "a", "you", "that", "is", "in", "not", "me", "it", "lord"}
    assert sum(w.lower() in english for w in words) >= 3, text
    damaged = bytearray(LM_PATH.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF  # one byte of one weight
    copy = tmp_path / LM_PATH.name
    copy.write_bytes(bytes(damaged))
    with pytest.raises(ChecksumError, match="the file is damaged or was replaced"):
        verify_sha256(copy, recorded_sha256(sha256_path(LM_PATH)))
