"""What ``export`` reads: a course checkpoint (a file, or the name of a shipped model), as a model
and the fast tokenizer that cuts text for it exactly as the course does.

A translator leaves the course with **one vocabulary** (:func:`one_vocabulary`): a
``transformers`` tokenizer, and CTranslate2's Marian models, have one list of tokens for source and
target, and CTranslate2 expects ``<pad>`` to be the last. The course's numbers translators have two
(English words, German pieces); chapter 12's has one with ``<pad>`` first. Both become one list
(the source's tokens, then the target's that are new, ``<pad>`` last), the model's rows reordered
to it; a token the target never had gets a zero row and an output bias of -∞, and so do ``<pad>``
and ``<bos>``, which the course's decoders never produce: every translation stays the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from torch import Tensor

from transformer_course.checkpoint import FORMAT as TRANSLATOR_FORMAT
from transformer_course.checkpoint import load_checkpoint
from transformer_course.lm import DecoderOnlyLM
from transformer_course.lm_checkpoint import FORMAT as LM_FORMAT
from transformer_course.lm_checkpoint import load_lm_checkpoint
from transformer_course.model import Transformer
from transformer_course_tools.models.pretrained import PRETRAINED, PRETRAINED_LM, load_pretrained, load_pretrained_lm

from .hf_tokenizers import subword_tokenizer, word_tokenizer


@dataclass
class Source:
    """A model ready to leave the course: ``tokenizer`` (``tokenizers``) gives the ids ``model`` reads."""

    model: Transformer | DecoderOnlyLM
    tokenizer: object  # a tokenizers.Tokenizer
    translator: bool  # an encoder-decoder Transformer, else a DecoderOnlyLM

    @property
    def max_len(self) -> int:
        return self.model.config.max_len


def shipped_names() -> list[str]:
    return sorted([*PRETRAINED, *PRETRAINED_LM])


def load_source(spec: str) -> Source:
    """The checkpoint file ``spec``, or the shipped model of that name (``numbers-en-de``,
    ``shakespeare-lm`` …), as a :class:`Source`. A missing file, a file of another kind, a language
    model without its tokenizer: one line each."""
    if spec in PRETRAINED:
        return translator_source(load_pretrained(spec))
    if spec in PRETRAINED_LM:
        return lm_source(load_pretrained_lm(spec))
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(
            f"no checkpoint {spec}: give a .pt file written by the course, or a shipped name ({', '.join(shipped_names())})"
        )
    kind = _format_of(path)
    if kind == TRANSLATOR_FORMAT:
        return translator_source(load_checkpoint(path))
    if kind == LM_FORMAT:
        return lm_source(load_lm_checkpoint(path))
    raise ValueError(f"{path} is not a course checkpoint (a translator's or a language model's)")


def translator_source(checkpoint) -> Source:
    """A translator's checkpoint (chapter 08's or 09's) with one vocabulary, pad last (see the module)."""
    src, tgt = checkpoint.src_vocab.id_to_token, checkpoint.tgt_vocab.id_to_token
    model, tokens = one_vocabulary(checkpoint.model, src, tgt)
    if checkpoint.tokenizer is None:  # word tokens: english_tokens in, German pieces out (as `translate`)
        return Source(model, word_tokenizer(tokens), translator=True)
    return Source(model, subword_tokenizer(checkpoint.tokenizer, tokens), translator=True)


def lm_source(checkpoint) -> Source:
    if checkpoint.tokenizer is None:
        raise ValueError("this language model's checkpoint holds no tokenizer: an export needs one (tokenizer.json)")
    from transformer_course.subwords import SubwordTokenizer

    tokens = SubwordTokenizer.from_dict(checkpoint.tokenizer).id_to_token
    return Source(checkpoint.model, subword_tokenizer(checkpoint.tokenizer, tokens, add_bos=True), translator=False)


def one_vocabulary(model: Transformer, src_tokens: list[str], tgt_tokens: list[str]) -> tuple[Transformer, list[str]]:
    """``model`` reading and writing one token list (see the module): (the new model, its tokens).

    Its greedy and beam translations are the old ones, token for token (each id maps to the same
    string); a shared vocabulary stays shared.
    """
    c = model.config
    pad = tgt_tokens[c.pad_id]
    if src_tokens[c.pad_id] != pad:
        raise ValueError("the source and target vocabularies must have their padding token at the same id")
    tokens = [*dict.fromkeys(t for t in (*src_tokens, *tgt_tokens) if t != pad), pad]
    new_id = {t: i for i, t in enumerate(tokens)}
    shared = c.share_embeddings and list(src_tokens) == list(tgt_tokens)
    config = replace(c, src_vocab_size=len(tokens), tgt_vocab_size=len(tokens), share_embeddings=shared,
                     pad_id=new_id[pad], bos_id=new_id[tgt_tokens[c.bos_id]], eos_id=new_id[tgt_tokens[c.eos_id]])  # fmt: skip
    state = dict(model.state_dict())
    state["src_embed.embedding.weight"] = _rows(state["src_embed.embedding.weight"], src_tokens, tokens)
    state["tgt_embed.embedding.weight"] = _rows(state["tgt_embed.embedding.weight"], tgt_tokens, tokens)
    state["output.weight"] = _rows(state["output.weight"], tgt_tokens, tokens)
    bias = _rows(state["output.bias"], tgt_tokens, tokens, fill=-math.inf)  # (V,): never a source-only token
    bias[[config.pad_id, config.bos_id]] = -math.inf  # nor <pad> and <bos>, which the course's decoders forbid
    bias[config.eos_id] = state["output.bias"][c.eos_id]  # (unless one is <eos>)
    state["output.bias"] = bias
    merged = Transformer(config).to(next(model.parameters()).dtype)
    merged.load_state_dict(state, strict=True)
    return merged.eval(), tokens


def _rows(weight: Tensor, old_tokens: list[str], tokens: list[str], fill: float = 0.0) -> Tensor:
    """``weight``'s rows (one per token of ``old_tokens``) in the order of ``tokens``; ``fill`` for a
    token ``old_tokens`` lacks. Shape: (V_old, ...) → (V, ...)"""
    old_id = {t: i for i, t in enumerate(old_tokens)}
    index = torch.tensor([old_id.get(t, 0) for t in tokens])
    rows = weight.index_select(0, index).clone()  # (V, ...)
    known = torch.tensor([t in old_id for t in tokens])
    rows[~known] = fill
    return rows


def _format_of(path: Path) -> str | None:
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:
        raise ValueError(f"{path} is not a readable checkpoint (corrupt, or not made by the course)") from None
    return payload.get("format") if isinstance(payload, dict) else None
