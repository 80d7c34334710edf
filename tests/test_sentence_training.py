"""Chapter 12 — training on sentences: shared embeddings, the length filter, the profiles, BLEU on
written text, and the tokenizer that travels inside a checkpoint (old checkpoints still load)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import sacrebleu
import torch

from transformer_course import evaluation
from transformer_course.checkpoint import load_checkpoint, save_checkpoint
from transformer_course.evaluation import evaluate
from transformer_course.sentence_training import (
    SENTENCE_CPU_PROFILE,
    SENTENCE_GPU_PROFILE,
    SENTENCE_TINY_PROFILE,
    SentenceProfile,
    pick_sentence_profile,
    sentence_task,
    training_examples,
)
from transformer_course.subwords import task_tokenizer
from transformer_course.training import build_model
from transformer_course_tools.models.pretrained import PRETRAINED_PATH


@pytest.fixture(scope="module")
def task():
    return sentence_task(SENTENCE_TINY_PROFILE)


def test_the_task_shares_one_vocabulary_and_keeps_its_tokenizer(task) -> None:
    assert task.name == "sentences-en-de" and task.src_vocab is task.tgt_vocab
    assert len(task.train) == SENTENCE_TINY_PROFILE.n_train and len(task.test) == 1000
    tokenizer = task_tokenizer(task)
    assert tokenizer.id_to_token == task.src_vocab.id_to_token and len(tokenizer) <= SENTENCE_TINY_PROFILE.vocab_size
    source, target = task.test[0]
    assert task.detokenize(target) == sentence_task(SENTENCE_TINY_PROFILE).info["texts"]["test"][0][1]
    assert tokenizer.tokens(task.info["texts"]["test"][0][0]) == source


def test_shared_embeddings_are_one_matrix(task) -> None:
    shared = build_model(task, SENTENCE_TINY_PROFILE, share_embeddings=True)
    separate = build_model(task, SENTENCE_TINY_PROFILE)
    assert shared.src_embed.weight is shared.tgt_embed.weight is shared.output.weight
    assert separate.src_embed.weight is not separate.tgt_embed.weight
    size = len(task.src_vocab) * SENTENCE_TINY_PROFILE.d_model
    assert separate.num_parameters() - shared.num_parameters() == size, "one V×D matrix fewer"


def test_long_pairs_are_left_out(task) -> None:
    examples, left_out = training_examples(task, SENTENCE_TINY_PROFILE)
    assert left_out == 0 and len(examples) == len(task.train)
    limit = 12
    short, left_out = training_examples(task, replace(SENTENCE_TINY_PROFILE, max_sentence_tokens=limit))
    too_long = sum(len(s) > limit or len(t) + 2 > limit for s, t in task.train)  # targets get <bos>, <eos>
    assert left_out == too_long > 0 and len(short) == len(task.train) - too_long
    assert all(len(s) <= limit and len(t) <= limit for s, t in short)
    with pytest.raises(ValueError, match="every training pair is longer than 2 tokens"):
        training_examples(task, replace(SENTENCE_TINY_PROFILE, max_tokens=2))


def test_profiles() -> None:
    assert pick_sentence_profile("cpu") is SENTENCE_CPU_PROFILE
    assert pick_sentence_profile("cuda") is SENTENCE_GPU_PROFILE
    gpu, cpu = SENTENCE_GPU_PROFILE, SENTENCE_CPU_PROFILE
    assert gpu.d_model > cpu.d_model and gpu.max_tokens > cpu.max_tokens and gpu.n_layers > cpu.n_layers
    for profile in (cpu, gpu, SENTENCE_TINY_PROFILE):
        assert SentenceProfile(**profile.to_dict()) == profile and profile.share_embeddings


def test_bleu_on_the_written_text(task, monkeypatch) -> None:
    pairs = task.test[:40]
    hypotheses = [list(t) for _, t in pairs]
    hypotheses[0] = hypotheses[0][:-3]  # a few pieces short
    hypotheses[1] = list(pairs[2][1])  # another sentence
    monkeypatch.setattr(evaluation, "translate", lambda *args, **kwargs: hypotheses)
    model = build_model(task, SENTENCE_TINY_PROFILE)  # not asked: translate is replaced
    by_text, by_pieces = (evaluate(model, pairs, task, bleu_on=on) for on in ("text", "tokens"))
    hyp_text = [task.detokenize(h) for h in hypotheses]
    ref_text = [task.detokenize(t) for _, t in pairs]
    assert by_text["bleu"] == round(sacrebleu.corpus_bleu(hyp_text, [ref_text]).score, 2)
    assert by_text["exact_match"] == by_pieces["exact_match"] == 95.0 and by_text["chrf"] == by_pieces["chrf"]
    assert by_text["bleu"] != by_pieces["bleu"]
    with pytest.raises(ValueError, match="bleu_on must be 'tokens' or 'text'"):
        evaluate(model, pairs, task, bleu_on="words")


def test_the_tokenizer_travels_in_the_checkpoint(task, tmp_path: Path) -> None:
    model = build_model(task, SENTENCE_TINY_PROFILE, share_embeddings=True)
    tokenizer = task_tokenizer(task)
    path = save_checkpoint(tmp_path / "m.pt", model, task.src_vocab, task.tgt_vocab, tokenizer=tokenizer)
    loaded = load_checkpoint(path)
    assert loaded.tokenizer == tokenizer.to_dict() and loaded.model.src_embed is loaded.model.tgt_embed
    assert torch.load(path, weights_only=True)["tokenizer"]["tokenizer"].startswith("{")
    other = sentence_task(replace(SENTENCE_TINY_PROFILE, vocab_size=200))
    with pytest.raises(ValueError, match="the tokenizer's tokens must be the vocabularies' tokens"):
        save_checkpoint(tmp_path / "x.pt", model, task.src_vocab, task.tgt_vocab, tokenizer=task_tokenizer(other))


def test_checkpoints_without_a_tokenizer_still_load(tmp_path: Path) -> None:
    assert load_checkpoint(PRETRAINED_PATH).tokenizer is None  # the shipped model, written before chapter 12
    payload = torch.load(PRETRAINED_PATH, weights_only=True)
    assert "tokenizer" not in payload
    payload["tokenizer"] = ["not", "a", "dict"]
    torch.save(payload, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="invalid tokenizer"):
        load_checkpoint(tmp_path / "bad.pt")


def test_one_over_long_training_pair_does_not_size_the_position_table(task) -> None:
    long_pair = (["▁a"] * 5000, ["▁a"] * 5000)  # a pages-long line of a corpus, left out of training
    wide = replace(task, train=[*task.train[:50], long_pair])
    model = build_model(wide, SENTENCE_TINY_PROFILE, share_embeddings=True)
    assert model.config.max_len == 2 * SENTENCE_TINY_PROFILE.max_sentence_tokens + 2
