"""transformer_course — the package a learner builds chapter by chapter.

Chapter by chapter: vocab (01), embeddings (01), positional (02), attention (03),
multihead (04), feedforward / sublayer / encoder (05), masks / decoder / model (06),
data / training / checkpoint (07), cache / decoding (08).
"""

from .attention import apply_mask, attention_scores, fast_attention, scaled_dot_product_attention
from .cache import DecoderCache, KVCache
from .checkpoint import load_checkpoint, load_pretrained, save_checkpoint
from .config import TransformerConfig
from .data import english_tokens, german_text, german_tokens, load_task, number_to_english, number_to_german
from .decoder import Decoder, DecoderLayer
from .decoding import beam_search, greedy_decode, sample
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
from .training import evaluate, label_smoothed_cross_entropy, train_step, transformer_lr, transformer_scheduler
from .vocab import SPECIAL_TOKENS, Vocab, tokenize

__version__ = "0.1.0"

from .edition import show_exercise_stubs_briefly as _show_stubs_briefly  # noqa: E402

_show_stubs_briefly()  # Jupyter: a chapter reaching an unwritten exercise stops with one clear message

__all__ = [
    "SPECIAL_TOKENS", "Decoder", "DecoderLayer", "Encoder", "EncoderLayer", "LearnedPositionalEmbedding",
    "MultiHeadAttention", "PositionalEncoding", "PositionwiseFeedForward", "TokenEmbedding", "Transformer",
    "TransformerConfig", "Vocab", "apply_mask", "attention_scores", "causal_mask", "fast_attention",
    "merge_heads", "one_hot_lookup", "padding_mask", "pick_device", "relative_position_map", "residual",
    "scaled_dot_product_attention", "sinusoidal_positional_encoding", "split_heads", "target_mask",
    "tie_weights", "tokenize",
    "english_tokens", "evaluate", "german_text", "german_tokens", "label_smoothed_cross_entropy", "load_checkpoint",
    "load_pretrained", "load_task", "number_to_english", "number_to_german", "save_checkpoint", "train_step",
    "transformer_lr", "transformer_scheduler",  # chapter 07
    "DecoderCache", "KVCache", "beam_search", "greedy_decode", "sample",  # chapter 08
]  # fmt: skip
