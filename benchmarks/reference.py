"""The baseline every benchmark compares with: ``torch.nn.Transformer`` wrapped with the same
embeddings, positional table, output layer and initialisation scheme as our model.

:func:`ours_with_the_same_weights` copies its weights into ours; the two then compute the same
function (checked at the start of every benchmark run), so the benchmark compares two
implementations of one model, not two models."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from transformer_course import (
    DecoderLayer,
    EncoderLayer,
    Transformer,
    TransformerConfig,
    sinusoidal_positional_encoding,
)


class TorchTransformer(nn.Module):
    """``nn.Transformer`` (batch_first) + embeddings scaled by √D + sinusoidal positions + a
    tied output layer: the same model as ours, built from PyTorch's own layers.

    ``nn.Transformer`` always ends its encoder and decoder with a LayerNorm; with post-LN (the
    paper's order, ours) each layer already ends with one, and the paper has no extra one, so
    those two final norms are removed (as ours, and a little less work for the baseline)."""

    def __init__(self, c: TransformerConfig) -> None:
        super().__init__()
        self.config = c
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, c.d_model, padding_idx=c.pad_id)
        for embedding in (self.src_embed, self.tgt_embed):
            nn.init.normal_(embedding.weight, std=c.d_model**-0.5)
        self.register_buffer("pe", sinusoidal_positional_encoding(c.max_len, c.d_model), persistent=False)
        self.dropout = nn.Dropout(c.dropout)
        # its constructor applies xavier_uniform_ to every matrix, as ours does
        self.transformer = nn.Transformer(
            c.d_model, c.n_heads, c.n_encoder_layers, c.n_decoder_layers, c.d_ff, c.dropout,
            batch_first=True, norm_first=c.norm_first, layer_norm_eps=c.layer_norm_eps,
        )  # fmt: skip
        if not c.norm_first:
            self.transformer.encoder.norm = self.transformer.decoder.norm = None
        self.output = nn.Linear(c.d_model, c.tgt_vocab_size)
        self.output.weight = self.tgt_embed.weight
        nn.init.zeros_(self.output.bias)

    def _embed(self, embedding: nn.Embedding, tokens: Tensor) -> Tensor:
        x = embedding(tokens) * math.sqrt(self.config.d_model)  # (B, L, D)
        return self.dropout(x + self.pe[: tokens.shape[1]])

    def encode(self, src: Tensor) -> Tensor:
        return self.transformer.encoder(
            self._embed(self.src_embed, src), src_key_padding_mask=src == self.config.pad_id
        )  # (B, S, D); PyTorch's masks: True = blocked

    def decode(self, tgt: Tensor, memory: Tensor, src: Tensor) -> Tensor:
        causal = torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool, device=tgt.device).triu(1)  # True = blocked
        x = self.transformer.decoder(
            self._embed(self.tgt_embed, tgt), memory, tgt_mask=causal, tgt_is_causal=True,
            tgt_key_padding_mask=tgt == self.config.pad_id, memory_key_padding_mask=src == self.config.pad_id,
        )  # fmt: skip
        return self.output(x)  # (B, T, V)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        return self.decode(tgt, self.encode(src), src)

    @torch.no_grad()
    def greedy(self, src: Tensor, max_len: int) -> Tensor:
        """Greedy decoding the only way nn.Transformer allows: re-run the decoder on the whole
        prefix at every step."""
        memory = self.encode(src)
        tokens = torch.full((src.shape[0], 1), self.config.bos_id, dtype=torch.long, device=src.device)
        for _ in range(max_len):
            next_token = self.decode(tokens, memory, src)[:, -1].argmax(-1, keepdim=True)  # (B, 1)
            tokens = torch.cat([tokens, next_token], dim=1)
        return tokens[:, 1:]


@torch.no_grad()
def ours_with_the_same_weights(theirs: TorchTransformer) -> Transformer:
    """Our Transformer with the weights of ``theirs`` (through the layers' ``from_torch``)."""
    c = theirs.config
    if c.norm_first:
        raise ValueError("the comparison model is post-LN (norm_first=False)")
    ours = Transformer(c).to(theirs.output.weight.device)
    ours.src_embed.embedding.weight.copy_(theirs.src_embed.weight)
    ours.tgt_embed.embedding.weight.copy_(theirs.tgt_embed.weight)  # tied with ours.output
    ours.output.bias.copy_(theirs.output.bias)
    ours.encoder.layers = nn.ModuleList(EncoderLayer.from_torch(layer) for layer in theirs.transformer.encoder.layers)
    ours.decoder.layers = nn.ModuleList(DecoderLayer.from_torch(layer) for layer in theirs.transformer.decoder.layers)
    return ours.train(theirs.training)
