"""transformer_course — the package a learner builds chapter by chapter.

Chapter by chapter: vocab (01), embeddings (01), positional (02), attention (03),
multihead (04), feedforward / sublayer / encoder (05), masks / decoder / model (06).
"""

from .attention import apply_mask, attention_scores, fast_attention, scaled_dot_product_attention
from .config import TransformerConfig
from .decoder import Decoder, DecoderLayer
from .device import pick_device
from .embeddings import TokenEmbedding, one_hot_lookup, tie_weights
from .encoder import Encoder, EncoderLayer
from .feedforward import PositionwiseFeedForward
from .masks import causal_mask, padding_mask, target_mask
from .model import Transformer
from .multihead import MultiHeadAttention, merge_heads, split_heads
from .positional import (
    LearnedPositionalEmbedding,
    PositionalEncoding,
    relative_position_map,
    sinusoidal_positional_encoding,
)
from .sublayer import residual
from .vocab import SPECIAL_TOKENS, Vocab, tokenize

__version__ = "0.1.0"

__all__ = [
    "SPECIAL_TOKENS", "Decoder", "DecoderLayer", "Encoder", "EncoderLayer", "LearnedPositionalEmbedding",
    "MultiHeadAttention", "PositionalEncoding", "PositionwiseFeedForward", "TokenEmbedding", "Transformer",
    "TransformerConfig", "Vocab", "apply_mask", "attention_scores", "causal_mask", "fast_attention",
    "merge_heads", "one_hot_lookup", "padding_mask", "pick_device", "relative_position_map", "residual",
    "scaled_dot_product_attention", "sinusoidal_positional_encoding", "split_heads", "target_mask",
    "tie_weights", "tokenize",
]  # fmt: skip
