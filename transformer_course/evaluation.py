"""Chapter 08 — how good is a translator? Decode held-out sentences greedily and score them.

Chapter 07 uses these functions while it trains (they need chapter 08's greedy decoder, so a
learner who builds the course in order writes ``greedy_step``, exercise ex08_1, before chapter
07 can score its model).

Scores, all in percent:

* ``exact_match``: share of sentences whose text is exactly right (what matters for numbers);
* ``bleu``: corpus BLEU (``sacrebleu``) over target *tokens* (a German number is one word, so
  word-level BLEU would have no 2-, 3- or 4-grams: we count the pieces); for real sentences
  (chapter 09, ``bleu_on="text"``) over the written text, which sacrebleu tokenizes itself, so
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
    ``batch_size`` at a time; returns the target tokens of each. ``use_cache=False`` serves models
    without a key/value cache (a baseline built on ``nn.Transformer``, say)."""
    device = next(model.parameters()).device
    max_len = max_len or model.config.max_len - 1
    out: list[list[str]] = []
    for start in range(0, len(sources), batch_size):
        chunk = [task.src_vocab.encode(s) for s in sources[start : start + batch_size]]
        src = pad_sequences(chunk, task.src_vocab.pad_id).to(device)  # (B, S)
        out += [task.tgt_vocab.decode(row) for row in greedy_decode(model, src, max_len, use_cache).tolist()]
    return out


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

    if not pairs:
        raise ValueError("pairs must not be empty")
    if bleu_on not in ("tokens", "text"):
        raise ValueError(f"bleu_on must be 'tokens' or 'text', got {bleu_on!r}")
    longest = max(len(t) for _, t in pairs) + 2
    max_len = min(2 * longest, model.config.max_len - 1)
    hypotheses = translate(model, [s for s, _ in pairs], task, batch_size, max_len, use_cache)
    references = [t for _, t in pairs]
    hyp_text = [task.detokenize(h) for h in hypotheses]
    ref_text = [task.detokenize(r) for r in references]
    exact = sum(h == r for h, r in zip(hyp_text, ref_text, strict=True)) / len(pairs)
    if bleu_on == "text":
        bleu = sacrebleu.corpus_bleu(hyp_text, [ref_text])
    else:
        bleu = sacrebleu.corpus_bleu([" ".join(h) for h in hypotheses], [[" ".join(r) for r in references]])
    chrf = sacrebleu.corpus_chrf(hyp_text, [ref_text])
    return {"exact_match": round(100 * exact, 2), "bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2)}
