"""``translate``: English number words → German with a trained checkpoint.

python -m transformer_course translate "three hundred and forty-two"
python -m transformer_course translate model.pt "twenty-one" "one thousand and one" --beam 4
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import CLIError


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
    from ...data import MAX_NUMBER, english_to_number, english_tokens, number_to_english
    from ...vocab import SPECIAL_TOKENS

    encoded = []
    for text in sentences:
        tokens = english_tokens(text)
        if not tokens:
            raise CLIError(f"nothing to translate in {text!r}: write a number in English words")
        unknown = list(dict.fromkeys(t for t in tokens if t not in src_vocab))
        if unknown:
            words = src_vocab.id_to_token[len(SPECIAL_TOKENS) :]
            known = ", ".join(words[:8])
            digits = "; write numbers in words" if any(w.isdigit() for w in unknown) else ""
            raise CLIError(
                f"unknown word{'s' if len(unknown) > 1 else ''} {', '.join(repr(w) for w in unknown)} in {text!r}: "
                f"the model knows only the {len(words)} words it was trained on ({known}, …){digits}"
            )
        if numbers and english_to_number(tokens) is None:
            raise CLIError(
                f"{text!r} is not a number this model knows: it translates the numbers from zero to "
                f"{number_to_english(MAX_NUMBER)}, written as in 'three hundred and forty-two thousand, five'"
            )
        encoded.append(src_vocab.encode(tokens))
    return encoded


def _translate(args: argparse.Namespace) -> int:
    import torch

    from ...batching import pad_sequences
    from ...checkpoint import load_checkpoint
    from ...data import german_text
    from ...decoding import beam_search, greedy_decode
    from ..pretrained import load_pretrained

    path, sentences = _split_checkpoint(args.inputs)
    if args.beam < 1:
        raise CLIError(f"--beam must be >= 1, got {args.beam}")
    if not 1 <= args.n_best <= args.beam:
        raise CLIError(f"--n-best must be between 1 and --beam ({args.beam}), got {args.n_best}")
    checkpoint = load_pretrained() if path is None else load_checkpoint(path)
    model, src_vocab, tgt_vocab = checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab
    encoded = _encode(sentences, src_vocab, numbers=checkpoint.extra.get("task") == "numbers-en-de")
    longest = max(len(ids) for ids in encoded)
    if longest > model.config.max_len:
        raise CLIError(f"a sentence has {longest} words; the model reads at most {model.config.max_len}")
    device = next(model.parameters()).device
    src = pad_sequences(encoded, src_vocab.pad_id).to(device)  # (B, S)
    max_len = min(args.max_len, model.config.max_len)
    with torch.no_grad():
        if args.beam == 1:
            hypotheses, scores = greedy_decode(model, src, max_len)[:, None], None  # (B, 1, T)
        else:
            hypotheses, scores = beam_search(model, src, args.beam, max_len, args.alpha, n_best=args.n_best)
    for i, text in enumerate(sentences):
        german = [german_text(tgt_vocab.decode(h.tolist())) for h in hypotheses[i]]
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
        usage="%(prog)s [CHECKPOINT.pt] TEXT [TEXT ...] [--beam N] [--n-best N] [--alpha A] [--max-len N]",
        help="translate English number words to German with a trained model",
        description="Translate English number words to German. Without a checkpoint the committed one "
        "(trained in chapter 07) is used.",
    )
    parser.add_argument(
        "inputs", nargs="+", metavar="TEXT", help="sentences to translate, after an optional checkpoint file (.pt)"
    )
    parser.add_argument("--beam", type=int, default=1, help="beam size (1 = greedy decoding, the default)")
    parser.add_argument("--n-best", type=int, default=1, help="with --beam: print the n best translations")
    parser.add_argument("--alpha", type=float, default=0.6, help="GNMT length penalty of beam search (default 0.6)")
    parser.add_argument("--max-len", type=int, default=32, help="longest translation in tokens (default 32)")
    parser.set_defaults(run=_translate)
