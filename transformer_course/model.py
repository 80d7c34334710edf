"""Chapter 06 — the full encoder-decoder Transformer (paper §3, Figure 1)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from torch import Tensor, nn

from ._validate import check_ndim, check_token_ids
from .config import TransformerConfig
from .decoder import Decoder, DecoderLayer
from .embeddings import TokenEmbedding, UnscaledEmbedding, tie_weights
from .encoder import Encoder, EncoderLayer
from .feedforward import PositionwiseFeedForward
from .masks import padding_mask, target_mask
from .positional import PositionalEncoding
from .sublayer import Connection, build_part, make_norm


def xavier_init(model: nn.Module) -> None:
    """Xavier-uniform for every linear layer of ``model`` and zero biases (``nn.Transformer`` draws
    its matrices the same way but keeps the default biases of its feed-forward layers); embeddings
    keep their N(0, 1/D) initialisation (see :class:`TokenEmbedding`)."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)


def check_decoder_inputs(tgt: Tensor, memory: Tensor, config: TransformerConfig, offset: int = 0) -> None:
    """Refuse, in one line, target ids that are not (B, T) ids of ``config``'s target vocabulary, that
    would reach past ``config.max_len`` from position ``offset``, or a memory that is not (B, S, D)
    with the targets' batch size."""
    check_ndim(tgt, 2, "tgt", "(B, T) target ids")
    check_token_ids(tgt, config.tgt_vocab_size, "tgt")
    check_ndim(memory, 3, "memory", "(B, S, D)")
    if memory.shape[0] != tgt.shape[0]:
        raise ValueError(f"memory has batch size {memory.shape[0]} but tgt has {tgt.shape[0]}")
    if offset + tgt.shape[1] > config.max_len:
        raise ValueError(f"the target would reach length {offset + tgt.shape[1]} > max_len={config.max_len}")


class Transformer(nn.Module):
    """Embeddings + positional encoding → encoder; embeddings + positional encoding → decoder
    (attending to the encoder memory) → linear layer to target-vocabulary logits.

    Masks are built from ``config.pad_id``: source padding is hidden from every attention over
    the source, and the decoder sees neither the future nor target padding.

    Shape:
        src: (B, S) ids, tgt: (B, T) ids (the *shifted* target, starting with ``<bos>``)
        → logits (B, T, V_tgt)

    Parts: left out, every piece is the paper's. Each part is a class, or a function, that the model
    calls to *build* its modules, with the arguments shown (so the class itself is the simplest part)::

        embedding(vocab_size, d_model, padding_idx)   # default TokenEmbedding (UnscaledEmbedding if not config.scale_embedding)
        positional(d_model, max_len, dropout)         # default PositionalEncoding(..., layout=config.sinusoid_layout)
        feed_forward(d_model, d_ff, dropout)          # default PositionwiseFeedForward(..., activation=config.activation)
        norm(d_model)                                 # default nn.LayerNorm(d_model, eps=config.layer_norm_eps)
        connection                                    # not built: a function like residual (sublayer.py)

    For example ``Transformer(config, positional=LearnedPositionalEmbedding)`` learns its position
    vectors (chapter 02), ``Transformer(config, norm=RMSNorm)`` (chapter 13) normalises with RMSNorm, and
    ``Transformer(config, connection=no_residual)`` has no shortcuts (chapter 05). Every
    ``nn.Linear``, a part's too, starts from Xavier's initialisation (:func:`xavier_init`), except
    in the positional part: built last, it keeps its own.
    """

    def __init__(
        self,
        config: TransformerConfig,
        *,
        embedding: Callable[[int, int, int | None], nn.Module] | None = None,
        positional: Callable[[int, int, float], nn.Module] | None = None,
        feed_forward: Callable[[int, int, float], nn.Module] | None = None,
        norm: Callable[[int], nn.Module] | None = None,
        connection: Connection | None = None,
    ) -> None:
        super().__init__()
        self.config = c = config
        if feed_forward is None and c.activation != "relu":
            feed_forward = partial(PositionwiseFeedForward, activation=c.activation)
        self.src_embed = self._embedding(embedding, c.src_vocab_size)
        self.tgt_embed = self.src_embed if c.share_embeddings else self._embedding(embedding, c.tgt_vocab_size)
        self.positional: nn.Module = nn.Identity()  # holds its place in the order of Figure 1; built last, below
        sizes = dict(
            d_model=c.d_model, n_heads=c.n_heads, d_ff=c.d_ff, dropout=c.dropout, norm_first=c.norm_first,
            layer_norm_eps=c.layer_norm_eps, d_k=c.d_k, d_v=c.d_v, feed_forward=feed_forward, norm=norm,
            connection=connection,
        )  # fmt: skip
        self.encoder = Encoder([EncoderLayer(**sizes) for _ in range(c.n_encoder_layers)], self._final_norm(norm))
        self.decoder = Decoder([DecoderLayer(**sizes) for _ in range(c.n_decoder_layers)], self._final_norm(norm))
        self.output = nn.Linear(c.d_model, c.tgt_vocab_size)
        xavier_init(self)
        if c.tie_output or c.share_embeddings:
            tie_weights(self.tgt_embed, self.output)
        nn.init.zeros_(self.output.bias)
        # The positional part is built last: a learned table then draws its random numbers after all
        # the other weights, and a seed gives those the values it gives the paper's model (chapter
        # 11's experiment on positions compares two position tables, not two sets of other weights).
        if positional is None:
            positional = partial(PositionalEncoding, layout=c.sinusoid_layout)
        self.positional = build_part(
            positional, "positional(d_model, max_len, dropout)", c.d_model, c.max_len, c.dropout
        )

    def _embedding(self, embedding: Callable[[int, int, int | None], nn.Module] | None, vocab_size: int) -> nn.Module:
        if embedding is None:
            embedding = TokenEmbedding if self.config.scale_embedding else UnscaledEmbedding
        return build_part(embedding, "embedding(vocab_size, d_model, padding_idx)", vocab_size, self.config.d_model,
                          self.config.pad_id)  # fmt: skip

    def _final_norm(self, norm: Callable[[int], nn.Module] | None) -> nn.Module | None:
        """Pre-LN stacks end with one more normalisation (see :class:`~.encoder.LayerStack`); post-LN need none."""
        return make_norm(norm, self.config.d_model, self.config.layer_norm_eps) if self.config.norm_first else None

    # -- the two halves ----------------------------------------------------------------------
    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> Tensor:
        """Source ids (B, S) → memory (B, S, D). ``src_mask`` defaults to the padding mask."""
        self._check_tokens(src, "src", self.config.src_vocab_size)
        return self._encode(src, src_mask)

    def decode(self, tgt: Tensor, memory: Tensor, memory_mask: Tensor | None = None) -> Tensor:
        """Shifted target ids (B, T) and memory (B, S, D) → logits (B, T, V_tgt).

        ``memory_mask`` is the source padding mask (B, 1, 1, S); pass the one ``encode`` used.
        """
        check_decoder_inputs(tgt, memory, self.config)
        return self._decode(tgt, memory, memory_mask)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        # The ids are checked here, once, where they enter the model; the steps below trust them.
        self._check_tokens(src, "src", self.config.src_vocab_size)
        self._check_tokens(tgt, "tgt", self.config.tgt_vocab_size)
        if src.shape[0] != tgt.shape[0]:
            raise ValueError(f"src and tgt must have the same batch size, got {src.shape[0]} and {tgt.shape[0]}")
        src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S)
        return self._decode(tgt, self._encode(src, src_mask), src_mask)

    def _encode(self, src: Tensor, src_mask: Tensor | None) -> Tensor:
        if src_mask is None:
            src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S)
        x = self.positional(self.src_embed(src))  # (B, S, D)
        return self.encoder(x, src_mask)  # (B, S, D)

    def _decode(self, tgt: Tensor, memory: Tensor, memory_mask: Tensor | None) -> Tensor:
        x = self.positional(self.tgt_embed(tgt))  # (B, T, D)
        tgt_mask = target_mask(tgt, self.config.pad_id)  # (B, 1, T, T)
        if self.config.bos_id == self.config.pad_id:  # Marian starts with <pad>: position 0 is never padding
            tgt_mask[..., 0] = True
        x = self.decoder(x, memory, tgt_mask, memory_mask)  # (B, T, D)
        return self.output(x)  # (B, T, V)

    def _check_tokens(self, tokens: Tensor, name: str, vocab_size: int) -> None:
        check_ndim(tokens, 2, name, "(B, length) of token ids")
        check_token_ids(tokens, vocab_size, name)
        if tokens.shape[1] > self.config.max_len:
            raise ValueError(f"{name} has length {tokens.shape[1]}, longer than max_len={self.config.max_len}")

    def num_parameters(self) -> int:
        """Number of distinct parameters (a tied matrix counts once)."""
        return sum(p.numel() for p in self.parameters())
