"""Chapter 01 — embedding lookup, √d_model scaling and weight tying (paper §3.4)."""

from __future__ import annotations

import math

import torch.nn.functional as F
from torch import Tensor, nn

from ._validate import check_token_dtype, check_token_ids


def one_hot_lookup(tokens: Tensor, weight: Tensor) -> Tensor:
    """Embedding lookup written as a matrix product: ``one_hot(tokens) @ weight``.

    This is what ``nn.Embedding`` computes, only slower: row ``i`` of ``weight`` is the vector
    of token ``i``, and multiplying a one-hot row vector by the matrix picks that row.

    Shape:
        tokens: (B, T) integer ids (any leading shape works); weight: (V, D) → output (B, T, D),
        with the dtype of ``weight``
    """
    if not isinstance(weight, Tensor) or weight.dim() != 2:
        raise ValueError(f"weight must be a (V, D) matrix, got shape {tuple(getattr(weight, 'shape', ()))}")
    check_token_ids(tokens, weight.shape[0])
    ### BEGIN SOLUTION
    one_hot = F.one_hot(tokens, num_classes=weight.shape[0]).to(weight.dtype)  # (B, T, V)
    return one_hot @ weight  # (B, T, D)
    ### END SOLUTION


class TokenEmbedding(nn.Module):
    """Token ids → vectors, multiplied by √d_model as in the paper (§3.4).

    Initialisation: entries are drawn from N(0, 1/d_model), so that after the √d_model
    scaling each embedding entry has unit variance — the same scale as the sinusoidal
    positional encoding that is added to it (values in [-1, 1]) — and a tied output layer
    ``h @ E.T`` starts with logits of variance ≈ 1.

    Args:
        vocab_size: number of rows V.
        d_model: vector size D.
        padding_idx: id whose row is kept at zero and receives no gradient (usually ``pad_id``).
        init_std: standard deviation of the initial entries; default ``d_model ** -0.5`` (above).
            ``init_std=1.0`` is PyTorch's default for ``nn.Embedding``, the mismatch chapter 01 measures.

    Shape:
        tokens: (B, T) integer ids (any shape works) → (B, T, D) float vectors, D = ``d_model``
    """

    def __init__(
        self, vocab_size: int, d_model: int, padding_idx: int | None = None, *, init_std: float | None = None
    ) -> None:
        super().__init__()
        if vocab_size < 1 or d_model < 1:
            raise ValueError(f"vocab_size and d_model must be >= 1, got {vocab_size} and {d_model}")
        if init_std is not None and not init_std > 0:
            raise ValueError(f"init_std must be a positive number (or None for d_model ** -0.5), got {init_std}")
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)
        nn.init.normal_(self.embedding.weight, mean=0.0, std=d_model**-0.5 if init_std is None else init_std)
        if padding_idx is not None:
            self.embedding.weight.data[padding_idx].zero_()

    @property
    def weight(self) -> nn.Parameter:
        """The (V, D) embedding matrix (shared with the output layer when tied)."""
        return self.embedding.weight

    def forward(self, tokens: Tensor) -> Tensor:
        # Only the dtype: the values are checked once, where the ids enter (Transformer.forward),
        # not again in every lookup (on a GPU each check would make the CPU wait; see _validate.py).
        check_token_dtype(tokens)
        ### BEGIN SOLUTION
        return self.embedding(tokens) * math.sqrt(self.d_model)  # (B, T, D)
        ### END SOLUTION


class UnscaledEmbedding(TokenEmbedding):
    """:class:`TokenEmbedding` without the √d_model: the lookup alone, as GPT-2 and Llama do it
    (chapter 15). Their embeddings were trained at the scale the model reads them, so a factor of
    √d_model (24 for D = 576) would feed every layer vectors 24 times too long.

    Shape:
        tokens: (B, T) integer ids → output (B, T, D)
    """

    def forward(self, tokens: Tensor) -> Tensor:
        check_token_dtype(tokens)
        return self.embedding(tokens)  # (B, T, D)


def tie_weights(embedding: TokenEmbedding, projection: nn.Linear) -> None:
    """Make ``projection`` (D → V) use the embedding matrix as its weight (paper §3.4).

    After tying there is one (V, D) parameter: the logits are ``h @ E.T (+ bias)``, so a token's
    input vector and its output vector are the same, and the model has V·D fewer parameters.
    """
    if projection.weight.shape != embedding.weight.shape:
        raise ValueError(
            f"cannot tie: projection.weight has shape {tuple(projection.weight.shape)}, "
            f"embedding.weight has shape {tuple(embedding.weight.shape)} (expected both (V, D))"
        )
    projection.weight = embedding.weight
