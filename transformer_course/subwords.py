"""Chapter 12 — subword tokens: one byte-pair vocabulary shared by English and German.

Words make a poor vocabulary for real text: every new name, number or German compound is a
new word, and a vocabulary big enough to hold them all is mostly rare words the model sees a
handful of times. Characters never run out but make sequences five times longer. **Byte-pair
encoding** (BPE) sits between: start from characters and repeatedly merge the most frequent
adjacent pair into a new symbol, until the vocabulary has ``vocab_size`` entries. Frequent words
end as one token ("▁Hund"), rare ones as a few pieces ("▁Königin" → "▁König", "in").

The paper (§5.1) encodes English–German with BPE into **one vocabulary of ~37,000 tokens
shared by source and target**, which lets it tie the source embedding, the target embedding
and the output projection together (§3.4): names and numbers that are spelled the same in both
languages get the same vectors.

Library: Hugging Face ``tokenizers``
-----------------------------------
* it trains offline from any iterator of strings (``train_from_iterator``), in Rust, in well
  under a second for the sentence task;
* a trained tokenizer is one JSON string: :meth:`SubwordTokenizer.to_dict` puts it in a plain
  dict that travels inside a checkpoint read with ``torch.load(weights_only=True)``, and a learner
  can open it and read the merges;
* its steps are separate, visible objects (normalizer, pre-tokenizer, model, decoder);
* one ``abi3`` wheel serves every Python version, on Linux, macOS, Windows and Colab.

``sentencepiece`` would do the job as well; its model is a binary protocol buffer (~240 kB even
for a tiny vocabulary, mostly a normalisation table) rather than readable text.

Pipeline: NFC-normalise and collapse whitespace; split at spaces, marking each word start with
"▁" (as sentencepiece does), and cut punctuation off words; BPE within each piece. Decoding turns
"▁" back into spaces, so ``decode(encode(text))`` gives ``text`` back (whitespace collapsed), ready
for ``sacrebleu``. BPE training has no randomness: the same texts give the same tokenizer, in
any order (tested).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence

from .data import Task
from .vocab import SPECIAL_TOKENS, Vocab

FORMAT = "transformer-course-subwords"
VERSION = 1
WORD_START = "▁"  # U+2581, marks a token that begins a word: "▁Hund" vs "hund" inside "Bluthund"
# Always in the vocabulary, seen in training or not: printable ASCII and the German letters, so a
# capital "Ö" that only the test set holds is not <unk>. Other unseen characters still are.
BASE_ALPHABET = "".join(chr(c) for c in range(33, 127)) + "äöüÄÖÜß"


def _tokenizers():
    """Import ``tokenizers`` lazily, with a one-line hint when it is missing."""
    try:
        import tokenizers
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("subword tokens need the 'tokenizers' package: pip install 'tokenizers>=0.19'") from error
    return tokenizers


class SubwordTokenizer:
    """A trained BPE tokenizer whose ids 0–3 are ``<pad>``, ``<bos>``, ``<eos>``, ``<unk>``.

    Make one with :func:`train_subwords` or :meth:`from_dict`; ``len(tokenizer)`` is V.
    """

    def __init__(self, tokenizer) -> None:
        for expected_id, token in enumerate(SPECIAL_TOKENS):
            if tokenizer.token_to_id(token) != expected_id:
                raise ValueError(
                    f"special token {token!r} must have id {expected_id}, got {tokenizer.token_to_id(token)}"
                )
        # "<eos>" typed in a text is five characters, not the end: only our code may make special ids
        tokenizer.encode_special_tokens = True
        self._tok = tokenizer
        self.id_to_token: list[str] = [tokenizer.id_to_token(i) for i in range(tokenizer.get_vocab_size())]

    pad_id, bos_id, eos_id, unk_id = 0, 1, 2, 3

    def __len__(self) -> int:
        return len(self.id_to_token)

    def __repr__(self) -> str:
        return f"SubwordTokenizer(size={len(self)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SubwordTokenizer) and self._tok.to_str() == other._tok.to_str()

    # -- text → ids --------------------------------------------------------------------------------
    def tokens(self, text: str) -> list[str]:
        """The subword pieces of ``text``: ``"Der Hund."`` → ``['▁Der', '▁Hund', '.']``."""
        return self._tok.encode(_check_text(text), add_special_tokens=False).tokens

    def encode(self, text: str, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """``text`` → ids, optionally wrapped in ``<bos>`` … ``<eos>``; unseen characters → ``<unk>``."""
        ids = self._tok.encode(_check_text(text), add_special_tokens=False).ids
        return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos

    def encode_batch(self, texts: Sequence[str], add_bos: bool = False, add_eos: bool = False) -> list[list[int]]:
        """:meth:`encode` for many texts at once (in parallel, in Rust)."""
        encodings = self._tok.encode_batch([_check_text(t) for t in texts], add_special_tokens=False)
        return [[self.bos_id] * add_bos + e.ids + [self.eos_id] * add_eos for e in encodings]

    # -- ids → text --------------------------------------------------------------------------------
    def decode(self, ids: Iterable[int]) -> str:
        """Ids → detokenised text. Stops at the first ``<eos>``; ``<pad>``, ``<bos>`` and ``<unk>`` are dropped."""
        kept = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self):
                raise ValueError(f"id {i} is out of range for a vocabulary of size {len(self)}")
            if i == self.eos_id:
                break
            kept.append(i)
        return " ".join(self._tok.decode(kept, skip_special_tokens=True).split())  # a dropped <unk> leaves no gap

    def decode_tokens(self, tokens: Sequence[str]) -> str:
        """Pieces (strings) → text: the ``detokenize`` of a subword :class:`~transformer_course.data.Task`."""
        if isinstance(tokens, str):
            raise TypeError("decode_tokens expects a list of pieces, not a string")
        return " ".join(self._tok.decoder.decode([t for t in tokens if t not in SPECIAL_TOKENS]).split())

    def merges(self) -> list[str]:
        """The merges BPE learned, first learned first: ``['▁ d', 'e r', ...]`` (a look inside)."""
        model = json.loads(self._tok.to_str())["model"]
        return [" ".join(m) if isinstance(m, list) else m for m in model["merges"]]

    # -- as chapter 01's vocabulary, and as plain data ------------------------------------------------
    def as_vocab(self) -> Vocab:
        """A :class:`~transformer_course.vocab.Vocab` with the same ids, for code that works on tokens."""
        vocab = Vocab(self.id_to_token[len(SPECIAL_TOKENS) :])
        assert vocab.id_to_token == self.id_to_token  # the specials lead both lists in the same order
        return vocab

    def to_dict(self) -> dict:
        """Plain data (str and int only): safe in a checkpoint loaded with ``weights_only=True``."""
        return {"format": FORMAT, "version": VERSION, "tokenizer": self._tok.to_str()}

    @classmethod
    def from_dict(cls, data: dict) -> SubwordTokenizer:
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("tokenizer"), str):
            raise ValueError(f"not a saved SubwordTokenizer: expected {{'format': {FORMAT!r}, 'tokenizer': '<json>'}}")
        if data.get("version") != VERSION:
            raise ValueError(f"saved SubwordTokenizer has version {data.get('version')!r}, this code reads {VERSION}")
        return cls(_tokenizers().Tokenizer.from_str(_merges_as_strings(data["tokenizer"])))


def _merges_as_strings(saved: str) -> str:
    """``saved`` with its merges written ``"a b"``, the form every ``tokenizers`` reads (before 0.20 it
    reads no other; later ones write ``["a", "b"]``). Left as it is where a piece holds a space."""
    data = json.loads(saved)
    merges = data.get("model", {}).get("merges") or []
    if not all(isinstance(m, list) and len(m) == 2 and " " not in "".join(m) for m in merges):
        return saved
    data["model"]["merges"] = [f"{left} {right}" for left, right in merges]
    return json.dumps(data, ensure_ascii=False)


def _check_text(text: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return text


def _empty_bpe(tokenizers):
    """An untrained BPE tokenizer with the pipeline described in the module docstring."""
    from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers

    tok = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence(
        [normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()]
    )  # composed umlauts (ü, not u + ¨), and one space between words, so decoding gives the text back
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always"),
            pre_tokenizers.Punctuation("isolated"),  # "Hund." and "Hund" share the token "▁Hund"
        ]
    )
    tok.decoder = decoders.Metaspace(replacement=WORD_START, prepend_scheme="always")
    return tok


def train_subwords(
    texts: Iterable[str],
    vocab_size: int = 2000,
    seed: int = 0,
    min_frequency: int = 2,
    max_texts: int | None = None,
    alphabet: str = BASE_ALPHABET,
) -> SubwordTokenizer:
    """Learn a BPE vocabulary of about ``vocab_size`` tokens (special tokens included) from ``texts``:
    at most ``vocab_size``, unless the characters alone (one token each, below) are more.

    Give it the source *and* target training texts for one shared vocabulary. Pairs seen fewer
    than ``min_frequency`` times are never merged. Every character of ``texts`` and of
    ``alphabet`` gets a token. BPE itself has no randomness; ``seed`` picks the sample when
    ``max_texts`` caps how many texts are used (for large corpora).
    """
    tokenizers = _tokenizers()
    if vocab_size < len(SPECIAL_TOKENS) + 1:
        raise ValueError(f"vocab_size must be at least {len(SPECIAL_TOKENS) + 1}, got {vocab_size}")
    texts = [_check_text(t) for t in texts]
    if not texts:
        raise ValueError("texts is empty: nothing to learn a vocabulary from")
    if max_texts is not None and len(texts) > max_texts:
        texts = random.Random(seed).sample(texts, max_texts)
    tok = _empty_bpe(tokenizers)
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=sorted(set(alphabet)),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return SubwordTokenizer(tok)


def subword_task(
    texts: dict[str, Sequence[tuple[str, str]]], tokenizer: SubwordTokenizer, name: str = "sentences-en-de-bpe"
) -> Task:
    """Chapter 08's :class:`~transformer_course.data.Task` whose tokens are ``tokenizer``'s pieces.

    ``texts`` maps "train" / "valid" / "test" to (source text, target text) pairs (for example
    :func:`~transformer_course.datasets.sentences.sentence_splits`). Source and target share one
    vocabulary, so the model may share its embeddings; ``detokenize`` gives written text for BLEU.
    """
    missing = [k for k in ("train", "valid", "test") if k not in texts]
    if missing:
        raise ValueError(f"texts needs the splits train, valid and test; missing: {', '.join(missing)}")
    pairs = {k: [(tokenizer.tokens(s), tokenizer.tokens(t)) for s, t in texts[k]] for k in ("train", "valid", "test")}
    vocab = tokenizer.as_vocab()
    info = {"tokenizer": tokenizer.to_dict(), "texts": {k: list(v) for k, v in texts.items()}}
    return Task(name, vocab, vocab, **pairs, detokenize=tokenizer.decode_tokens, info=info)


def task_tokenizer(task: Task) -> SubwordTokenizer | None:
    """The tokenizer a :func:`subword_task` was made with; None for a task of word tokens."""
    data = task.info.get("tokenizer")
    return None if data is None else SubwordTokenizer.from_dict(data)


def tokenizer_summary(tokenizer: SubwordTokenizer, texts: Sequence[str]) -> dict[str, float]:
    """Tokens per text and per word, and the share of ``<unk>``: what a vocabulary size trades."""
    ids = tokenizer.encode_batch(list(texts))
    n_tokens = sum(len(x) for x in ids)
    n_words = sum(len(t.split()) for t in texts)
    n_unk = sum(x.count(tokenizer.unk_id) for x in ids)
    return {
        "vocab_size": len(tokenizer),
        "tokens_per_text": n_tokens / max(len(texts), 1),
        "tokens_per_word": n_tokens / max(n_words, 1),
        "unk_share": n_unk / max(n_tokens, 1),
    }


# -- byte-pair merges from scratch (exercise ex12_3) -------------------------------------------------
def pretokenized_words(texts: Iterable[str]) -> dict[str, int]:
    """How often each pre-token occurs in ``texts``, cut exactly as :func:`train_subwords` cuts them
    before BPE ("▁" at word starts, punctuation split off): the input of :func:`bpe_merges`.

    ``{"▁Der": 2, "▁Hund": 1, ".": 2, ...}``: BPE never merges across these pieces.
    """
    tok = _empty_bpe(_tokenizers())
    counts: dict[str, int] = {}
    for text in texts:
        for piece, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(_check_text(text))):
            counts[piece] = counts.get(piece, 0) + 1
    return counts


def _check_words(words: Mapping[str, int], n_merges: int) -> None:
    if not isinstance(words, Mapping):
        raise TypeError(f"words must map each word to its count, got {type(words).__name__}")
    for word, count in words.items():
        if not isinstance(word, str) or not word:
            raise ValueError(f"words must have non-empty str keys, got {word!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"words[{word!r}] must be a count >= 1, got {count!r}")
    if isinstance(n_merges, bool) or not isinstance(n_merges, int) or n_merges < 0:
        raise ValueError(f"n_merges must be an int >= 0, got {n_merges!r}")


def bpe_merges(words: Mapping[str, int], n_merges: int) -> list[tuple[str, str]]:
    """The first ``n_merges`` merges that byte-pair encoding learns from word counts.

    Each word starts as its characters. One merge: count every pair of neighbouring symbols,
    each occurrence weighted by its word's count ("aaa" holds the pair ("a", "a") twice); take the
    most frequent pair; replace, in every word and from left to right, each occurrence of it by
    one symbol (the two strings joined). Repeat; stop early when no word has two symbols left.

    Ties between equally frequent pairs are broken as Hugging Face ``tokenizers`` breaks them,
    so the merges are the library's: the pair whose *left* symbol is older wins, then the one whose
    right symbol is older. Single characters are the oldest, in code-point order; a merged
    symbol is as old as the first merge that made its string.

    Args:
        words: word → how often it occurs (see :func:`pretokenized_words`).
        n_merges: how many merges to learn.

    Returns:
        The merges in the order learned: ``[("▁", "d"), ("e", "r"), ...]``.
    """
    _check_words(words, n_merges)
    ### BEGIN SOLUTION
    segmented = {word: list(word) for word in words}  # each word as its current symbols
    age = {char: ord(char) for word in words for char in word}  # characters first, in code-point order
    merges: list[tuple[str, str]] = []
    while len(merges) < n_merges:
        counts: dict[tuple[str, str], int] = {}
        for word, symbols in segmented.items():
            for pair in zip(symbols[:-1], symbols[1:], strict=True):  # overlapping: "aaa" has ("a", "a") twice
                counts[pair] = counts.get(pair, 0) + words[word]
        if not counts:
            break
        best = min(counts, key=lambda pair: (-counts[pair], age[pair[0]], age[pair[1]]))
        joined = best[0] + best[1]
        age.setdefault(joined, 0x110000 + len(merges))  # younger than every character
        merges.append(best)
        for symbols in segmented.values():
            i = 0
            while i < len(symbols) - 1:
                if (symbols[i], symbols[i + 1]) == best:
                    symbols[i : i + 2] = [joined]
                i += 1
    ### END SOLUTION
    return merges
