"""Chapter 02 — positional encoding (paper §3.5)."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ._validate import check_ndim

# Where a table puts the sine and the cosine of frequency i: the paper's features (2i, 2i+1), or
# sines in the first half and cosines in the second (i and i + D/2), as Marian's translators do.
SINUSOID_LAYOUTS = ("interleaved", "halves")


def sinusoidal_positional_encoding(max_len: int, d_model: int) -> Tensor:
    """The paper's table of positional encodings (§3.5).

    PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))
    PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))

    Returns:
        a float32 tensor of shape (max_len, d_model). An odd ``d_model`` is allowed: the
        last column is then a sine without its cosine partner.
    """
    if max_len < 1 or d_model < 1:
        raise ValueError(f"max_len and d_model must be >= 1, got max_len={max_len}, d_model={d_model}")
    ### BEGIN SOLUTION
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (ceil(D/2),)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)  # 1 / 10000^(2i/D)
    angle = position * frequency  # (max_len, ceil(D/2))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table
    ### END SOLUTION


def relative_position_map(k: int, d_model: int) -> Tensor:
    """The fixed linear map M_k with ``PE[pos + k] = M_k @ PE[pos]`` for every ``pos``.

    Each (sin, cos) pair of frequency w is a point on a circle; moving k positions turns it by
    the angle w·k, so M_k is block-diagonal with 2×2 rotation blocks
    ``[[cos wk, sin wk], [-sin wk, cos wk]]`` (the paper's remark in §3.5 that PE(pos+k) is a
    linear function of PE(pos)). Requires an even ``d_model``.

    Returns:
        a float32 tensor of shape (d_model, d_model).
    """
    if d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be even and >= 2, got {d_model}")
    ### BEGIN SOLUTION
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)  # (D/2,)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    m[0::2, 0::2] = torch.diag(cos)  # new sin = sin·cos(wk) + cos·sin(wk)
    m[0::2, 1::2] = torch.diag(sin)
    m[1::2, 0::2] = torch.diag(-sin)  # new cos = cos·cos(wk) - sin·sin(wk)
    m[1::2, 1::2] = torch.diag(cos)
    return m.float()
    ### END SOLUTION


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to a batch of embeddings, then applies dropout (§5.4).

    The table is a buffer (moves with ``.to(device)``) that is not saved in the state dict
    (``persistent=False``): it is a formula, not a learned weight.

    Shape:
        x: (B, T, D), batch-first → the same shape and dtype

    ``forward(x, offset=L)`` treats x as the positions L … L+T-1 of a longer sequence: chapter 09
    feeds the decoder one new token at a time, and token number L must get the vector of position L.

    ``layout="halves"`` (chapter 15) keeps the same numbers in another order: the sines of every
    frequency first, then the cosines (Marian's OPUS-MT translators). A model's weights are learned
    for one order, so a checkpoint must be run with the layout it was trained with.
    """

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0, layout: str = "interleaved") -> None:
        super().__init__()
        if layout not in SINUSOID_LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(map(repr, SINUSOID_LAYOUTS))}, got {layout!r}")
        self.d_model = d_model
        self.max_len = max_len
        self.dropout = nn.Dropout(dropout)
        table = sinusoidal_positional_encoding(max_len, d_model)  # (max_len, D), pairs interleaved
        if layout == "halves":
            table = torch.cat([table[:, 0::2], table[:, 1::2]], dim=1)  # sines, then cosines
        self.register_buffer("pe", table, persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        check_positions(x, offset, self.d_model, self.max_len)
        ### BEGIN SOLUTION
        seq_len = x.shape[1]  # batch-first: dim 1 is the position, not dim 0
        table = self.pe[offset : offset + seq_len]  # (T, D): the rows of positions offset … offset+T-1
        return self.dropout(x + table.to(x.dtype))  # (B, T, D) + (T, D)
        ### END SOLUTION


class LearnedPositionalEmbedding(nn.Module):
    """The alternative the paper compared in Table 3 row (E): one learned vector per position.

    It takes the arguments of :class:`PositionalEncoding`, so it can replace it as the Transformer's
    ``positional`` part (chapter 11's experiment), ``offset`` included (cached decoding, chapter 09).
    Unlike the sinusoids, the table has no vector for a position past ``max_len``, and positions it
    never saw in training keep their random initial vectors.

    Shape:
        x: (B, T, D) → (B, T, D)
    """

    def __init__(self, d_model: int, max_len: int = 512, dropout: float = 0.0) -> None:
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, std=0.02)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        check_positions(x, offset, self.d_model, self.max_len)
        positions = torch.arange(offset, offset + x.shape[1], device=x.device)  # (T,)
        return self.dropout(x + self.embedding(positions))  # (B, T, D) + (T, D)


def check_positions(x: Tensor, offset: int, d_model: int, max_len: int) -> None:
    """A ``ValueError`` unless ``x`` is (B, T, d_model) and its positions offset … offset+T-1 fit a
    table of ``max_len`` rows."""
    check_ndim(x, 3, "x", "(B, T, D)")
    if x.shape[-1] != d_model:
        raise ValueError(f"x must have last dimension d_model={d_model}, got shape {tuple(x.shape)}")
    if offset < 0 or offset + x.shape[1] > max_len:
        raise ValueError(
            f"positions {offset}…{offset + x.shape[1] - 1} do not fit a table of max_len={max_len}"
            if offset
            else f"sequence length {x.shape[1]} is longer than max_len={max_len}"
        )
