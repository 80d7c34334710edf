"""Chapter 09 — how good is a translator? Decode held-out sentences greedily and score them.

Chapter 08 uses these functions while it trains (they need chapter 09's greedy decoder, so a
learner who builds the course in order writes ``greedy_step``, exercise ex09_1, before chapter
08 can score its model).

Scores, all in percent:

* ``exact_match``: share of sentences whose text is exactly right (what matters for numbers);
* ``bleu``: corpus BLEU (``sacrebleu``) over target *tokens* (a German number is one word, so
  word-level BLEU would have no 2-, 3- or 4-grams: we count the pieces); for real sentences
  (chapter 12, ``bleu_on="text"``) over the written text, which sacrebleu tokenizes itself, so
  that the score does not depend on how the model cut its words;
* ``chrf``: character n-gram F-score of the written text (``task.detokenize``).
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

from .batching import pad_sequences
from .data import Pair, Task
from .decoding import greedy_decode


def translate(
    model: nn.Module,
    sources: Sequence[Sequence[str]],
    task: Task,
    batch_size: int = 500,
    max_len: int | None = None,
    use_cache: bool = True,
) -> list[list[str]]:
    """Translate tokenized sentences with :func:`~transformer_course.decoding.greedy_decode`,
    ``batch_size`` at a time; returns the target tokens of each. ``max_len=None`` is §6.1's
    rule (each sentence's length + 50, :func:`~transformer_course.decoding.max_output_length`);
    an integer caps every sentence. ``use_cache=False`` serves models without a key/value cache
    (a baseline built on ``nn.Transformer``, say)."""
    device = next(model.parameters()).device
    out: list[list[str]] = []
    for start in range(0, len(sources), batch_size):
        chunk = [task.src_vocab.encode(s) for s in sources[start : start + batch_size]]
        src = pad_sequences(chunk, task.src_vocab.pad_id).to(device)  # (B, S)
        out += [task.tgt_vocab.decode(row) for row in greedy_decode(model, src, max_len, use_cache).tolist()]
    return out


def _translate_pairs(
    model: nn.Module, pairs: Sequence[Pair], task: Task, batch_size: int, use_cache: bool = True
) -> tuple[list[list[str]], list[str], list[str]]:
    """Translate the sources of ``pairs``: (hypothesis tokens, hypothesis texts, reference texts)."""
    if not pairs:
        raise ValueError("pairs must not be empty")
    hypotheses = translate(model, [s for s, _ in pairs], task, batch_size, None, use_cache)  # §6.1's limit
    return hypotheses, [task.detokenize(h) for h in hypotheses], [task.detokenize(t) for _, t in pairs]


def evaluate(
    model: nn.Module,
    pairs: Sequence[Pair],
    task: Task,
    batch_size: int = 500,
    use_cache: bool = True,
    bleu_on: str = "tokens",
) -> dict[str, float]:
    """Greedy-translate ``pairs`` and score them (see the module): ``{"exact_match", "bleu", "chrf"}``.

    ``bleu_on``: "tokens" counts n-grams of the task's tokens; "text" lets sacrebleu tokenize the
    detokenized text (its standard "13a" tokenizer), the comparable score for real sentences.
    """
    import sacrebleu

    if bleu_on not in ("tokens", "text"):
        raise ValueError(f"bleu_on must be 'tokens' or 'text', got {bleu_on!r}")
    hypotheses, hyp_text, ref_text = _translate_pairs(model, pairs, task, batch_size, use_cache)
    references = [t for _, t in pairs]
    exact = sum(h == r for h, r in zip(hyp_text, ref_text, strict=True)) / len(pairs)
    if bleu_on == "text":
        bleu = sacrebleu.corpus_bleu(hyp_text, [ref_text])
    else:
        bleu = sacrebleu.corpus_bleu([" ".join(h) for h in hypotheses], [[" ".join(r) for r in references]])
    chrf = sacrebleu.corpus_chrf(hyp_text, [ref_text])
    return {"exact_match": round(100 * exact, 2), "bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2)}


def evaluate_strata(
    model: nn.Module, task: Task, split: str = "test", batch_size: int = 500
) -> dict[str, dict[str, float | int | bool]]:
    """Greedy exact match, in percent, for each stratum of ``split`` (the numbers task: ``info["strata"]``).

    Returns ``{stratum: {"count", "exact_match", "seen"}}``; ``seen`` is True when every number
    of the stratum is also a training number (its score then shows memory, not generalisation).
    Each number is translated once, however many strata it belongs to.
    """
    _check_strata(task, split)
    hypotheses = _translate_pairs(model, getattr(task, split), task, batch_size)[0]
    return strata_scores(task, split, hypotheses)


def strata_scores(
    task: Task, split: str, hypotheses: Sequence[Sequence[str]]
) -> dict[str, dict[str, float | int | bool]]:
    """Per-stratum exact match of given translations (target tokens, one per pair of ``split``),
    however they were decoded (greedy, beam search …); the format of :func:`evaluate_strata`."""
    _check_strata(task, split)
    numbers, pairs = task.info["numbers"][split], getattr(task, split)
    if len(hypotheses) != len(pairs):
        raise ValueError(f"{len(hypotheses)} hypotheses for the {len(pairs)} pairs of split {split!r}")
    right = {
        n: task.detokenize(h) == task.detokenize(t) for n, h, (_, t) in zip(numbers, hypotheses, pairs, strict=True)
    }
    train = set(task.info["numbers"]["train"])
    return {
        stratum: {
            "count": len(members),
            "exact_match": round(100 * sum(right[n] for n in members) / max(len(members), 1), 2),
            "seen": all(n in train for n in members),
        }
        for stratum, members in task.info["strata"][split].items()
    }


def _check_strata(task: Task, split: str) -> None:
    if split not in ("valid", "test"):
        raise ValueError(f"split must be 'valid' or 'test', got {split!r}")
    if "strata" not in task.info:
        raise ValueError(f"task {task.name!r} has no strata (only the numbers task has)")
