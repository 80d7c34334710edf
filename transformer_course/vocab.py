"""Chapter 01 — tokens, vocabulary and special tokens.

A :class:`Vocab` maps tokens (strings) to integer ids and back. The first four ids are
reserved for special tokens that every sequence model needs:

====  =========  =====================================================
id    token      why it exists
====  =========  =====================================================
0     ``<pad>``  fills short sequences so a batch is a rectangle
1     ``<bos>``  "begin of sequence": the decoder's first input
2     ``<eos>``  "end of sequence": the decoder says it is done
3     ``<unk>``  stands for every token the vocabulary does not know
====  =========  =====================================================
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, BOS, EOS, UNK)

_TOKEN_PATTERN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Lower-case ``text`` and split it into words and punctuation marks.

    >>> tokenize("The cat sat.")
    ['the', 'cat', 'sat', '.']
    """
    return _TOKEN_PATTERN.findall(text.lower())


class Vocab:
    """A bidirectional map between tokens and integer ids.

    Args:
        tokens: the ordinary tokens, in the order their ids should be given. Special tokens
            always come first (ids 0–3) and duplicates are ignored.
    """

    def __init__(self, tokens: Iterable[str] = ()) -> None:
        self.id_to_token: list[str] = []
        self.token_to_id: dict[str, int] = {}
        for token in (*SPECIAL_TOKENS, *tokens):
            if not isinstance(token, str):
                raise TypeError(f"tokens must be strings, got {type(token).__name__}: {token!r}")
            if token not in self.token_to_id:
                self.token_to_id[token] = len(self.id_to_token)
                self.id_to_token.append(token)
        # the special ids (0, 1, 2, 3: the special tokens always come first)
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = (self.token_to_id[t] for t in (PAD, BOS, EOS, UNK))

    @classmethod
    def build(cls, sentences: Iterable[Sequence[str]], min_freq: int = 1) -> Vocab:
        """Build a vocabulary from tokenized sentences.

        Tokens seen fewer than ``min_freq`` times are left out (they will map to ``<unk>``).
        The most frequent tokens get the smallest ids; ties are broken alphabetically so that
        the result does not depend on the order of the sentences.
        """
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        counts = Counter(token for sentence in sentences for token in sentence)
        kept = [t for t, c in counts.items() if c >= min_freq and t not in SPECIAL_TOKENS]
        kept.sort(key=lambda t: (-counts[t], t))
        return cls(kept)

    def __len__(self) -> int:
        return len(self.id_to_token)

    def __contains__(self, token: object) -> bool:
        return token in self.token_to_id

    def __repr__(self) -> str:
        preview = ", ".join(self.id_to_token[len(SPECIAL_TOKENS) : len(SPECIAL_TOKENS) + 5])
        return f"Vocab(size={len(self)}, tokens=[{preview}, ...])"

    # -- the two directions ----------------------------------------------------------------
    def encode(self, tokens: Sequence[str], add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Turn a list of tokens into a list of ids.

        Unknown tokens become ``unk_id``; ``add_bos`` / ``add_eos`` wrap the result in the
        begin / end ids.

        >>> Vocab(["a", "b"]).encode(["b", "zebra"], add_eos=True)
        [5, 3, 2]
        """
        if isinstance(tokens, str):
            raise TypeError("encode expects a list of tokens, not a string: call tokenize(text) first")
        ### BEGIN SOLUTION
        ids = [self.token_to_id.get(token, self.unk_id) for token in tokens]
        if add_bos:
            ids.insert(0, self.bos_id)
        if add_eos:
            ids.append(self.eos_id)
        return ids
        ### END SOLUTION

    def decode(self, ids: Iterable[int], skip_special: bool = True) -> list[str]:
        """Turn ids back into tokens, stopping at the first ``<eos>``.

        With ``skip_special`` the ``<pad>`` and ``<bos>`` ids are dropped as well.
        """
        tokens = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self):
                raise ValueError(f"id {i} is out of range for a vocabulary of size {len(self)}")
            if skip_special and i == self.eos_id:
                break
            if skip_special and i in (self.pad_id, self.bos_id):
                continue
            tokens.append(self.id_to_token[i])
        return tokens

    # -- persistence -----------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"tokens": self.id_to_token}

    @classmethod
    def from_dict(cls, data: dict) -> Vocab:
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, list) or tuple(tokens[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            raise ValueError("not a saved Vocab: expected {'tokens': ['<pad>', '<bos>', '<eos>', '<unk>', ...]}")
        return cls(tokens[len(SPECIAL_TOKENS) :])

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.id_to_token == other.id_to_token
