"""Chapter 08 — how good is a translator? Read its answers greedily, score them, look inside.

Training only ever asks the model for the next token's probabilities given the correct target so
far. To test it on held-out sentences it must answer alone: :func:`read_greedily` encodes the source
once, then runs the decoder on the target so far and keeps the most probable next token, again and
again, until every sentence has said ``<eos>``. It runs the whole decoder again for every token: the
plain way, slow but clearly right. Chapter 09 makes the choice better (beam search, sampling) and
the loop faster (a key/value cache); its :func:`~transformer_course.decoding.greedy_decode` gives the
same tokens, and every function here takes it as ``decode=greedy_decode``.

Scores, all in percent:

* ``exact_match``: share of sentences whose text is exactly right (what matters for numbers);
* ``bleu``: corpus BLEU (``sacrebleu``) over target *tokens* (a German number is one word, so
  word-level BLEU would have no 2-, 3- or 4-grams: we count the pieces); for real sentences
  (chapter 12, ``bleu_on="text"``) over the written text, which sacrebleu tokenizes itself, so
  that the score does not depend on how the model cut its words;
* ``chrf``: character n-gram F-score of the written text (``task.detokenize``).

:func:`attention_maps` shows where each head of a trained model looks while it reads a translation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import Tensor, nn

from ._validate import check_ndim
from .batching import pad_sequences
from .config import TransformerConfig
from .data import Pair, Task
from .masks import padding_mask

# §6.1 of the paper: "we set the maximum output length during inference to input length + 50,
# but terminate early when possible".
EXTRA_OUTPUT_TOKENS = 50

DecodeFunction = Callable[[nn.Module, Tensor, "int | None"], Tensor]
"""A decoding function: ``decode(model, src, max_len)`` → target ids (B, T) without ``<bos>``."""


def max_output_length(model_or_config: nn.Module | TransformerConfig, src: Tensor) -> Tensor:
    """The longest translation of each source sentence: its length + 50 (paper §6.1).

    The length of a source row is its number of tokens that are not ``<pad>``. The limit is
    capped by the model's position table (``config.max_len`` rows): the decoder reads ``<bos>``
    and every output token but the last (the last is never fed back), so an output of
    ``config.max_len`` tokens uses exactly the whole table.

    Shape:
        src: (B, S) source ids → (B,) long, each in [1, config.max_len]
    """
    config = getattr(model_or_config, "config", model_or_config)
    check_ndim(src, 2, "src", "(B, S) of token ids")
    lengths = (src != config.pad_id).sum(dim=1)  # (B,) real source tokens of each row
    return (lengths + EXTRA_OUTPUT_TOKENS).clamp(max=config.max_len)  # (B,)


@contextmanager
def inference(model: nn.Module) -> Iterator[None]:
    """Evaluation mode (no dropout) and no autograd while the model answers; its mode is restored after."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def read_greedily(model: nn.Module, src: Tensor, max_len: int | None = None) -> Tensor:
    """Greedy decoding, the plain way: the most probable next token, again and again.

    The source is encoded once. At each step the decoder reads ``<bos>`` and every token chosen so
    far, and the most probable next token is kept (``<pad>`` and ``<bos>`` are never chosen). A row
    that says ``<eos>``, or reaches its limit, is finished and gets ``<pad>`` from then on; the loop
    stops when every row has finished. The limit is ``max_len`` tokens, or by default §6.1's rule,
    :func:`max_output_length`.

    Shape:
        src: (B, S) source ids → (B, T) target ids without ``<bos>``, T ≤ the longest limit
    """
    config = model.config
    check_ndim(src, 2, "src", "(B, S) of token ids")
    limits = max_output_length(config, src) if max_len is None else torch.full_like(src[:, 0], max_len)  # (B,)
    with inference(model):
        memory_mask = padding_mask(src, config.pad_id)  # (B, 1, 1, S)
        memory = model.encode(src, memory_mask)  # (B, S, D)
        tokens = src.new_full((src.shape[0], 1), config.bos_id)  # (B, 1): every row starts with <bos>
        finished = torch.zeros_like(src[:, 0], dtype=torch.bool)  # (B,)
        for step in range(int(limits.max()) if len(src) else 0):
            logits = model.decode(tokens, memory, memory_mask)[:, -1].float()  # (B, V): the whole target again
            logits[:, [config.pad_id, config.bos_id]] = float("-inf")  # never a next token
            next_tokens = logits.argmax(dim=-1).masked_fill(finished, config.pad_id)  # (B,)
            finished = finished | (next_tokens == config.eos_id) | (limits <= step + 1)  # (B,)
            tokens = torch.cat([tokens, next_tokens[:, None]], dim=1)  # (B, t+1)
            if finished.all():
                break
    return tokens[:, 1:]  # (B, T)


def translate(
    model: nn.Module,
    sources: Sequence[Sequence[str]],
    task: Task,
    batch_size: int = 500,
    max_len: int | None = None,
    use_cache: None = None,
    *,
    decode: DecodeFunction | None = None,
) -> list[list[str]]:
    """Translate tokenized sentences, ``batch_size`` at a time; returns the target tokens of each.

    ``decode(model, src, max_len)`` reads the model's answers: :func:`read_greedily` by default,
    chapter 09's faster ``greedy_decode`` (or ``beam_search``'s best) when passed. ``max_len=None``
    is §6.1's rule (each sentence's length + 50); an integer caps every sentence."""
    decode = _decoder(decode, use_cache)
    device = next(model.parameters()).device
    out: list[list[str]] = []
    for start in range(0, len(sources), batch_size):
        chunk = [task.src_vocab.encode(s) for s in sources[start : start + batch_size]]
        src = pad_sequences(chunk, task.src_vocab.pad_id).to(device)  # (B, S)
        out += [task.tgt_vocab.decode(row) for row in decode(model, src, max_len).tolist()]
    return out


def _decoder(decode: DecodeFunction | None, use_cache: object) -> DecodeFunction:
    if use_cache is not None:
        raise ValueError(
            "use_cache is gone: pass decode=greedy_decode (chapter 09's decoder, which caches) or leave decode out "
            "(read_greedily, no cache)"
        )
    return read_greedily if decode is None else decode


def _translate_pairs(
    model: nn.Module, pairs: Sequence[Pair], task: Task, batch_size: int, decode: DecodeFunction
) -> list[list[str]]:
    """Translate the sources of ``pairs``: the target tokens of each."""
    if not pairs:
        raise ValueError("pairs must not be empty")
    return translate(model, [s for s, _ in pairs], task, batch_size, decode=decode)  # §6.1's limit


def evaluate(
    model: nn.Module,
    pairs: Sequence[Pair],
    task: Task,
    batch_size: int = 500,
    use_cache: None = None,
    bleu_on: str = "tokens",
    *,
    decode: DecodeFunction | None = None,
) -> dict[str, float]:
    """Translate ``pairs`` (``decode``: as in :func:`translate`) and score them with
    :func:`score_translations`: ``{"exact_match", "bleu", "chrf"}``."""
    if bleu_on not in ("tokens", "text"):
        raise ValueError(f"bleu_on must be 'tokens' or 'text', got {bleu_on!r}")
    hypotheses = _translate_pairs(model, pairs, task, batch_size, _decoder(decode, use_cache))
    return score_translations(hypotheses, pairs, task, bleu_on)


def score_translations(
    hypotheses: Sequence[Sequence[str]], pairs: Sequence[Pair], task: Task, bleu_on: str = "tokens"
) -> dict[str, float]:
    """Score translations already made (target tokens, one per pair) against the pairs' targets
    (see the module): ``{"exact_match", "bleu", "chrf"}``, in percent, rounded to 2 decimals.

    ``bleu_on``: "tokens" counts n-grams of the task's tokens; "text" lets sacrebleu tokenize the
    detokenized text (its standard "13a" tokenizer), the comparable score for real sentences.
    """
    import sacrebleu

    if bleu_on not in ("tokens", "text"):
        raise ValueError(f"bleu_on must be 'tokens' or 'text', got {bleu_on!r}")
    if len(hypotheses) != len(pairs) or not pairs:
        raise ValueError(f"hypotheses must hold one translation per pair: got {len(hypotheses)} for {len(pairs)} pairs")
    hyp_text, ref_text = [task.detokenize(h) for h in hypotheses], [task.detokenize(t) for _, t in pairs]
    exact = sum(h == r for h, r in zip(hyp_text, ref_text, strict=True)) / len(pairs)
    if bleu_on == "text":
        bleu = sacrebleu.corpus_bleu(hyp_text, [ref_text])
    else:
        bleu = sacrebleu.corpus_bleu([" ".join(h) for h in hypotheses], [[" ".join(t) for _, t in pairs]])
    chrf = sacrebleu.corpus_chrf(hyp_text, [ref_text])
    return {"exact_match": round(100 * exact, 2), "bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2)}


def evaluate_strata(
    model: nn.Module, task: Task, split: str = "test", batch_size: int = 500, *, decode: DecodeFunction | None = None
) -> dict[str, dict[str, float | int | bool]]:
    """Exact match, in percent, for each stratum of ``split`` (the numbers task: ``info["strata"]``),
    translated by ``decode`` (as in :func:`translate`).

    Returns ``{stratum: {"count", "exact_match", "seen"}}``; ``seen`` is True when every number
    of the stratum is also a training number (its score then shows memory, not generalisation).
    Each number is translated once, however many strata it belongs to.
    """
    _check_strata(task, split)
    hypotheses = _translate_pairs(model, getattr(task, split), task, batch_size, _decoder(decode, None))
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


# which attention module of which layer stack each kind of map comes from
ATTENTION_KINDS: dict[str, tuple[str, str]] = {
    "encoder": ("encoder", "self_attn"),  # (B, H, S, S): source position → source position
    "decoder": ("decoder", "self_attn"),  # (B, H, T, T): target position → earlier target positions
    "cross": ("decoder", "cross_attn"),  # (B, H, T, S): target position → source position
}


def attention_maps(model: nn.Module, src: Tensor, hypotheses: Tensor) -> dict[str, Tensor]:
    """The attention weights of every layer and head while the model reads ``hypotheses``.

    The model runs once with teacher forcing on ``<bos>`` + the hypotheses; each attention module
    is asked for its weights (``need_weights=True``) for that one pass. Row t of a decoder or
    cross-attention map is what the decoder looked at when it chose ``hypotheses[:, t]``.

    Shape:
        src: (B, S), hypotheses: (B, T) without ``<bos>`` →
        ``{"encoder": (N_enc, B, H, S, S), "decoder": (N_dec, B, H, T, T), "cross": (N_dec, B, H, T, S)}``
    """
    check_ndim(hypotheses, 2, "hypotheses", "(B, T) of token ids")
    captured: dict[str, list[Tensor]] = {kind: [] for kind in ATTENTION_KINDS}

    def ask_for_weights(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        return args, {**kwargs, "need_weights": True}

    def keeper(kind: str):
        def keep_weights(module: nn.Module, args: tuple, kwargs: dict, output: tuple) -> None:
            captured[kind].append(output[1])  # (B, H, queries, keys)

        return keep_weights

    handles = []
    try:
        for kind, (stack, name) in ATTENTION_KINDS.items():
            for layer in getattr(model, stack).layers:
                attention = getattr(layer, name)
                handles.append(attention.register_forward_pre_hook(ask_for_weights, with_kwargs=True))
                handles.append(attention.register_forward_hook(keeper(kind), with_kwargs=True))
        with inference(model):
            bos = hypotheses.new_full((hypotheses.shape[0], 1), model.config.bos_id)
            model(src, torch.cat([bos, hypotheses[:, :-1]], dim=1))
    finally:
        for handle in handles:
            handle.remove()
    return {kind: torch.stack(maps) for kind, maps in captured.items()}  # (layers, B, H, queries, keys)


def cross_attention_maps(model: nn.Module, src: Tensor, hypotheses: Tensor) -> Tensor:
    """The cross-attention part of :func:`attention_maps`: (n_layers, B, H, T, S)."""
    return attention_maps(model, src, hypotheses)["cross"]
