"""The course's tokenizers as Hugging Face ``tokenizers`` fast tokenizers (``tokenizer.json``), so that
``AutoTokenizer`` reads an exported folder and cuts text exactly as the course does.

- Number words (chapter 08): the source is cut by ``english_tokens`` (lower case, runs of letters or
  of digits; hyphens, commas and spaces only separate) and a translation is its German pieces
  joined without spaces (``german_text``). :func:`word_tokenizer` is a ``WordLevel`` model behind
  the same two steps: ``Lowercase``, then a ``Split`` that keeps the runs ``english_tokens``' regular
  expression finds and drops what lies between; the decoder ``Fuse`` joins the pieces.
- Subwords (chapter 12): the checkpoint already holds a ``tokenizers`` tokenizer; :func:`subword_tokenizer`
  gives its ids a new order (the export may move ``<pad>`` last, see :mod:`.sources`) and, for a
  language model, puts ``<bos>`` before every text as the course's prompts start.

The special tokens are ``tokenizers``' special tokens, so ``decode(..., skip_special_tokens=True)``
drops them, as the course's decoders do; typed in a text, "<eos>" stays five characters
(``split_special_tokens``), as in :class:`~transformer_course.subwords.SubwordTokenizer`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from transformer_course.vocab import BOS, EOS, PAD, SPECIAL_TOKENS, UNK

# english_tokens' pattern, [^\W\d_]+|\d+ in Python: a run of letters (Python's word characters that
# are neither decimal digits nor "_": letters and the other numerals, such as ² or Ⅻ) or a run of
# decimal digits; spelled with Unicode categories for the Oniguruma expressions of `tokenizers`
WORD_PATTERN = r"[\p{L}\p{Nl}\p{No}]+|\p{Nd}+"


def word_tokenizer(tokens: Sequence[str]):
    """A ``tokenizers`` tokenizer of whole words with id ``i`` for ``tokens[i]`` (the specials among
    them): text cut as ``english_tokens`` cuts it, ids written back as German pieces joined."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    _check_tokens(tokens)
    tok = Tokenizer(models.WordLevel({t: i for i, t in enumerate(tokens)}, unk_token=UNK))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(WORD_PATTERN), behavior="removed", invert=True)
    tok.decoder = decoders.Fuse()  # "ein" "und" "zwanzig" → "einundzwanzig"
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tok.encode_special_tokens = True  # typed, "<eos>" is five characters (transformers: split_special_tokens)
    return tok


def subword_tokenizer(data: dict, tokens: Sequence[str], add_bos: bool = False):
    """Chapter 12's tokenizer (``SubwordTokenizer.to_dict()``) with id ``i`` for ``tokens[i]``, the
    same tokens in the order the export gives them; ``add_bos``: ``<bos>`` before every text."""
    from tokenizers import Tokenizer, processors

    from transformer_course.subwords import SubwordTokenizer

    _check_tokens(tokens)
    saved = SubwordTokenizer.from_dict(data)  # checks the format
    if sorted(saved.id_to_token) != sorted(tokens):
        raise ValueError("the export's token list is not the tokenizer's: the same tokens are needed, in any order")
    spec = json.loads(data["tokenizer"])
    new_id = {t: i for i, t in enumerate(tokens)}
    spec["model"]["vocab"] = {t: new_id[t] for t in spec["model"]["vocab"]}
    for added in spec["added_tokens"]:
        added["id"] = new_id[added["content"]]
    tok = Tokenizer.from_str(json.dumps(spec, ensure_ascii=False))
    tok.encode_special_tokens = True  # as SubwordTokenizer: only the course's code makes special ids
    if add_bos:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, new_id[BOS])]
        )
    return tok


def fast_tokenizer(tok, max_len: int):
    """``transformers``' fast tokenizer around ``tok``: what ``save_pretrained`` writes as
    ``tokenizer.json`` and ``tokenizer_config.json``, and ``AutoTokenizer`` reads back."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=BOS, eos_token=EOS, unk_token=UNK, pad_token=PAD,
        model_max_length=max_len, clean_up_tokenization_spaces=False, split_special_tokens=True,
    )  # fmt: skip


def _check_tokens(tokens: Sequence[str]) -> None:
    if len(set(tokens)) != len(tokens) or not set(SPECIAL_TOKENS) <= set(tokens):
        raise ValueError("tokens must be distinct and hold the four special tokens")
