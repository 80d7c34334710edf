"""``translate``: English → German with a trained checkpoint.

python -m transformer_course translate "three hundred and forty-two"
python -m transformer_course translate model.pt "twenty-one" "one thousand and one" --beam 4
python -m transformer_course translate sentences.pt "The old man gives the child a ball."
python -m transformer_course translate --hub Helsinki-NLP/opus-mt-en-de "The old man gives the child a ball."

A checkpoint of number words (chapter 08) reads English number words; a checkpoint of subword
tokens (chapter 12) reads any text, with the tokenizer saved in it, and prints written text.
``--hub`` takes a real Marian translator (chapters 15 and 16): its tokenizer, and its weights converted
into the course's Transformer, which translates with the course's own decoding and cache.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from . import CLIError, quoted


def _split_checkpoint(inputs: list[str]) -> tuple[Path | None, list[str]]:
    """The first argument is a checkpoint when it names a file or ends with ``.pt``."""
    first = inputs[0]
    if len(inputs) > 1 and (first.endswith(".pt") or Path(first).is_file()):
        return Path(first), inputs[1:]
    if len(inputs) == 1 and first.endswith(".pt"):
        raise CLIError(f"nothing to translate: give a sentence after the checkpoint {first}")
    return None, inputs


def _encode(sentences: list[str], src_vocab, numbers: bool) -> list[list[int]]:
    """Source ids of each sentence; ``numbers``: the checkpoint knows the numbers task only, so
    a sentence must be one of its numbers (a guess for anything else would look like an answer)."""
    from transformer_course.datasets.numbers import MAX_NUMBER, english_to_number, english_tokens, number_to_english
    from transformer_course.vocab import SPECIAL_TOKENS

    encoded = []
    for text in sentences:
        tokens = english_tokens(text)
        if not tokens:
            raise CLIError(f"nothing to translate in {quoted(text)}: write a number in English words")
        unknown = list(dict.fromkeys(t for t in tokens if t not in src_vocab))
        if unknown:
            words = src_vocab.id_to_token[len(SPECIAL_TOKENS) :]
            known = ", ".join(words[:8])
            digits = "; write numbers in words" if any(w.isdigit() for w in unknown) else ""
            named = ", ".join(quoted(w, 30) for w in unknown[:5]) + (
                f" and {len(unknown) - 5} more" if unknown[5:] else ""
            )
            raise CLIError(
                f"unknown word{'s' if len(unknown) > 1 else ''} {named} in {quoted(text)}: "
                f"the model knows only the {len(words)} words it was trained on ({known}, …){digits}"
            )
        if numbers and english_to_number(tokens) is None:
            raise CLIError(
                f"{quoted(text)} is not a number this model knows: it translates the numbers from zero to "
                f"{number_to_english(MAX_NUMBER)}, written as in 'three hundred and forty-two thousand, five'"
            )
        encoded.append(src_vocab.encode(tokens))
    return encoded


def _subword_codec(tokenizer_data: dict) -> tuple[Callable[[list[str]], list[list[int]]], Callable[[list[int]], str]]:
    """(sentences → ids, ids → text) with a checkpoint's subword tokenizer."""
    from transformer_course.subwords import SubwordTokenizer

    tokenizer = SubwordTokenizer.from_dict(tokenizer_data)

    def encode(sentences: list[str]) -> list[list[int]]:
        encoded = tokenizer.encode_batch(sentences)
        for text, ids in zip(sentences, encoded, strict=True):
            if not ids:
                raise _nothing_to_translate(text)
        return encoded

    return encode, tokenizer.decode


def _hub_codec(tokenizer) -> tuple[Callable[[list[str]], list[list[int]]], Callable[[list[int]], str]]:
    """(sentences → ids, ids → text) with a Hub checkpoint's tokenizer (``transformers``'): each
    source ends with ``</s>``, as Marian was trained (its tokenizer appends it; added if not)."""
    eos = tokenizer.eos_token_id

    def encode(sentences: list[str]) -> list[list[int]]:
        encoded = []
        for text in sentences:
            if not text.strip():
                raise _nothing_to_translate(text)
            ids = list(tokenizer(text)["input_ids"])
            encoded.append(ids if eos is None or ids[-1:] == [eos] else [*ids, eos])
        return encoded

    return encode, (lambda ids: tokenizer.decode(ids, skip_special_tokens=True))


def _nothing_to_translate(text: str) -> CLIError:
    return CLIError(f"nothing to translate in {quoted(text)}: write a sentence")


def _word_codec(
    src_vocab, tgt_vocab, numbers: bool
) -> tuple[Callable[[list[str]], list[list[int]]], Callable[[list[int]], str]]:
    """(sentences → ids, ids → text) for number words: English words in, German pieces joined."""
    from transformer_course.datasets.numbers import german_text

    return (lambda sentences: _encode(sentences, src_vocab, numbers)), (lambda ids: german_text(tgt_vocab.decode(ids)))


def _check_options(args: argparse.Namespace) -> None:
    if args.beam < 1:
        raise CLIError(f"--beam must be >= 1, got {args.beam}")
    if args.max_len is not None and args.max_len < 1:
        raise CLIError(f"--max-len must be >= 1, got {args.max_len}")
    if not 1 <= args.n_best <= args.beam:
        raise CLIError(f"--n-best must be between 1 and --beam ({args.beam}), got {args.n_best}")


class _Translator(NamedTuple):
    model: object  # the course's Transformer
    pad_id: int  # pads the batch of sources
    encode: Callable[[list[str]], list[list[int]]]  # sentences → source ids
    decode: Callable[[list[int]], str]  # output ids → text
    unit: str  # what an id is, for messages: "words" or "tokens"


def _checkpoint_translator(path: Path | None) -> _Translator:
    """The translator of a course checkpoint (None: the committed one)."""
    from transformer_course.checkpoint import load_checkpoint
    from transformer_course_tools.models.pretrained import load_pretrained

    checkpoint = load_pretrained() if path is None else load_checkpoint(path)
    if checkpoint.tokenizer is None:
        encode, decode = _word_codec(
            checkpoint.src_vocab, checkpoint.tgt_vocab, numbers=checkpoint.extra.get("task") == "numbers-en-de"
        )
        return _Translator(checkpoint.model, checkpoint.src_vocab.pad_id, encode, decode, "words")
    return _Translator(checkpoint.model, checkpoint.src_vocab.pad_id, *_subword_codec(checkpoint.tokenizer), "tokens")


def _hub_translator(name: str) -> _Translator:
    """The translator of a Marian checkpoint of the Hub (or its local folder), converted."""
    from transformer_course_tools.models.hub import course_model, load_hub

    tokenizer, hf_model = load_hub(name, "translation")
    model = course_model(name, hf_model)
    return _Translator(model, model.config.pad_id, *_hub_codec(tokenizer), "tokens")


def _translate(args: argparse.Namespace) -> int:
    import torch

    from transformer_course.batching import pad_sequences
    from transformer_course.decoding import beam_search, greedy_decode

    if args.hub is None:
        path, sentences = _split_checkpoint(args.inputs)
    elif args.inputs[0].endswith(".pt"):
        raise CLIError(f"give either a checkpoint file ({args.inputs[0]}) or --hub {args.hub}, not both")
    else:
        sentences = args.inputs
    _check_options(args)
    translator = _checkpoint_translator(path) if args.hub is None else _hub_translator(args.hub)
    model, decode = translator.model, translator.decode
    encoded = translator.encode(sentences)
    longest = max(len(ids) for ids in encoded)
    if longest > model.config.max_len:
        raise CLIError(f"a sentence has {longest} {translator.unit}; the model reads at most {model.config.max_len}")
    device = next(model.parameters()).device
    src = pad_sequences(encoded, translator.pad_id).to(device)  # (B, S)
    # None: §6.1's rule, each sentence's length + 50 (decoding.max_output_length); --max-len caps it
    max_len = None if args.max_len is None else min(args.max_len, model.config.max_len)
    with torch.no_grad():
        if args.beam == 1:
            hypotheses, scores = greedy_decode(model, src, max_len)[:, None], None  # (B, 1, T)
        else:
            hypotheses, scores = beam_search(model, src, args.beam, max_len, args.alpha, n_best=args.n_best)
    for i, text in enumerate(sentences):
        german = [decode(h.tolist()) for h in hypotheses[i]]
        if len(sentences) > 1 or args.n_best > 1:
            print(f"{text} →")
            for k, word in enumerate(german):
                score = f"  (score {float(scores[i, k]):.3f})" if scores is not None else ""
                print(f"  {word}{score}")
        else:
            print(german[0])
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "translate",
        usage="%(prog)s [CHECKPOINT.pt | --hub NAME] TEXT [TEXT ...] [--beam N] [--n-best N] [--alpha A] [--max-len N]",
        help="translate English to German with a trained model",
        description="Translate English to German: number words with a checkpoint of chapter 08, sentences with "
        "one of chapter 12 (its tokenizer is inside). Without a checkpoint the committed one (trained in chapter 08) "
        "is used. --hub NAME takes a real Marian translator from the Hugging Face Hub (chapters 15 and 16).",
    )
    parser.add_argument(
        "inputs", nargs="+", metavar="TEXT", help="sentences to translate, after an optional checkpoint file (.pt)"
    )
    parser.add_argument(
        "--hub",
        metavar="NAME",
        help="a Marian checkpoint of the Hugging Face Hub (e.g. Helsinki-NLP/opus-mt-en-de) or its local folder: "
        "downloaded once (needs transformer-course[hub]), then read from the local cache",
    )
    parser.add_argument("--beam", type=int, default=1, help="beam size (1 = greedy decoding, the default)")
    parser.add_argument("--n-best", type=int, default=1, help="with --beam: print the n best translations")
    parser.add_argument("--alpha", type=float, default=0.6, help="GNMT length penalty of beam search (default 0.6)")
    parser.add_argument(
        "--max-len",
        type=int,
        default=None,
        help="longest translation in tokens (default: the source's length + 50, as in the paper's §6.1, "
        "at most the model's max_len)",
    )
    parser.set_defaults(run=_translate)
