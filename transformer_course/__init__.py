"""transformer_course — the Transformer that a learner builds chapter by chapter.

Every module at this level is one of the learner's *rooms*, one idea each, in the order the
chapters build them (later rooms import earlier ones, never the other way round):

====  ==================================================================================
ch.   rooms
====  ==================================================================================
01    ``vocab`` (tokens and ids), ``embeddings`` (lookup, √d_model, weight tying)
02    ``positional`` (the sinusoidal table)
03    ``attention`` (scaled dot-product attention, masks)
04    ``multihead`` (heads, W^O)
05    ``feedforward``, ``sublayer`` (residual + LayerNorm), ``encoder``
06    ``masks``, ``decoder``, ``config``, ``model`` (the full Transformer)
07    ``counting`` (parameter counts as formulas)
08    ``data`` (pairs, tasks, the copy task), ``batching``, ``loss``, ``schedule``, ``step``,
      ``training`` (the loop), ``checkpoint``, ``evaluation`` (greedy answers, scores)
09    ``cache`` (keys and values kept between steps), ``decoding``
12    ``subwords`` (BPE), ``token_batches``, ``sentence_training``, ``averaging`` (checkpoint
      averaging), ``distributed`` (DDP)
13    ``rmsnorm``, ``grouped`` (grouped key/value heads), ``rotary`` (RoPE), ``swiglu``, ``blocked``
      (attention with an online softmax), ``lm`` (a decoder-only language model, generation)
14    ``recipe`` (AdamW, warm-up + cosine), ``lm_checkpoint`` (a language model's checkpoint, with its
      tokenizer)
15    ``convert`` (real checkpoints)
16    ``quantize`` (bfloat16 and int8 weights), ``export`` (the course's models as ``transformers``
      checkpoints, for other engines)
====  ===========================================================================
Everything else of the course (the exercise checks, the student edition, grading, the command
line, the notebooks' helpers, the shipped models, the inference engine) is another package,
``transformer_course_tools``: no room imports it, and you never need to open it to follow the course.
The loops of ``decoding`` and ``lm`` take its engine as an argument (``greedy_decode(..., path=ENGINE)``,
with ``from transformer_course_tools.engine import ENGINE``).

Importing this package runs nothing: each name below is looked up in its room the first time it
is used, so a room you are still writing cannot break the chapters that come before it.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# name → the room (or tool) that defines it
_EXPORTS: dict[str, str] = {
    "SPECIAL_TOKENS": "vocab", "Vocab": "vocab", "tokenize": "vocab",
    "TokenEmbedding": "embeddings", "one_hot_lookup": "embeddings", "tie_weights": "embeddings",
    "UnscaledEmbedding": "embeddings",
    "LearnedPositionalEmbedding": "positional", "PositionalEncoding": "positional",
    "relative_position_map": "positional", "sinusoidal_positional_encoding": "positional",
    "apply_mask": "attention", "attention_scores": "attention", "fast_attention": "attention",
    "scaled_dot_product_attention": "attention", "band_mask": "attention",
    "MultiHeadAttention": "multihead", "merge_heads": "multihead", "split_heads": "multihead",
    "PositionwiseFeedForward": "feedforward",
    "residual": "sublayer",
    "Encoder": "encoder", "EncoderLayer": "encoder",
    "causal_mask": "masks", "padding_mask": "masks", "target_mask": "masks",
    "Decoder": "decoder", "DecoderLayer": "decoder",
    "TransformerConfig": "config",
    "Transformer": "model",
    "attention_parameters": "counting", "layer_parameters": "counting", "transformer_parameters": "counting",
    "pick_device": "device",
    "load_task": "datasets",
    "english_tokens": "datasets.numbers", "german_text": "datasets.numbers", "german_tokens": "datasets.numbers",
    "number_to_english": "datasets.numbers", "number_to_german": "datasets.numbers",
    "label_smoothed_cross_entropy": "loss",
    "transformer_lr": "schedule", "transformer_scheduler": "schedule",
    "train_step": "step",
    "load_checkpoint": "checkpoint", "save_checkpoint": "checkpoint",
    "DecoderCache": "cache", "KVCache": "cache", "with_cache": "cache",
    "beam_search": "decoding", "greedy_decode": "decoding", "sample": "decoding", "greedy_step": "decoding",
    "top_p_filter": "decoding", "beam_step": "decoding",
    "max_output_length": "evaluation", "evaluate": "evaluation",
    "RMSNorm": "rmsnorm",
    "apply_rope": "rotary", "Rotary": "rotary", "RotaryAttention": "rotary",
    "SwiGLU": "swiglu",
    "blocked_attention": "blocked", "online_softmax_update": "blocked",
    "repeat_kv": "grouped", "GroupedQueryAttention": "grouped",
    "DecoderOnlyConfig": "lm", "DecoderOnlyLM": "lm", "generate": "lm",
    "make_adamw": "recipe", "warmup_cosine_lr": "recipe", "warmup_cosine_scheduler": "recipe", "adamw_step": "recipe",
    "load_lm_checkpoint": "lm_checkpoint", "save_lm_checkpoint": "lm_checkpoint",
    "from_gpt2": "convert", "from_llama": "convert", "from_marian": "convert", "marian_layer_names": "convert",
    "rope_halves_to_interleaved": "convert", "split_conv1d": "convert", "interleaved_to_halves_order": "convert",
    "reorder_features": "convert",
    "to_gpt2": "export", "to_llama": "export", "to_marian": "export", "rope_interleaved_to_halves": "export",
    "join_conv1d": "export",
    "quantize": "quantize", "Int8Linear": "quantize", "Int8Embedding": "quantize", "dequantize_rows": "quantize",
    "quantize_rows": "quantize", "int8_linear": "quantize",
    "teacher_forcing": "batching",
    "pack": "token_batches",
    "average_state_dicts": "averaging",
    "bpe_merges": "subwords",
}  # fmt: skip

# names that live on the course's side now (transformer_course_tools), still found here
_TOOLS: dict[str, str] = {"load_pretrained": "transformer_course_tools.models.pretrained"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import the room that defines ``name`` on first use (PEP 562)."""
    if name in _TOOLS:
        return getattr(importlib.import_module(_TOOLS[name]), name)
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value  # found once, then an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(_TOOLS))


class _Package(types.ModuleType):
    """This package, where a room named like its function (``quantize``) never hides the function.

    Python binds a submodule to its package's name when it is first imported
    (``transformer_course.quantize`` would become the room, whoever imported it first); here that
    binding gives the function instead. ``from transformer_course.quantize import …`` still works.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:  # for editors and type checkers only: at run time nothing is imported here
    from .attention import apply_mask, attention_scores, band_mask, fast_attention, scaled_dot_product_attention
    from .averaging import average_state_dicts
    from .batching import teacher_forcing
    from .blocked import blocked_attention, online_softmax_update
    from .cache import DecoderCache, KVCache, with_cache
    from .checkpoint import load_checkpoint, save_checkpoint
    from .config import TransformerConfig
    from .convert import (
        from_gpt2,
        from_llama,
        from_marian,
        interleaved_to_halves_order,
        marian_layer_names,
        reorder_features,
        rope_halves_to_interleaved,
        split_conv1d,
    )
    from .counting import attention_parameters, layer_parameters, transformer_parameters
    from .datasets import load_task
    from .datasets.numbers import english_tokens, german_text, german_tokens, number_to_english, number_to_german
    from .decoder import Decoder, DecoderLayer
    from .decoding import beam_search, beam_step, greedy_decode, greedy_step, sample, top_p_filter
    from .device import pick_device
    from .embeddings import TokenEmbedding, UnscaledEmbedding, one_hot_lookup, tie_weights
    from .encoder import Encoder, EncoderLayer
    from .evaluation import evaluate, max_output_length
    from .export import join_conv1d, rope_interleaved_to_halves, to_gpt2, to_llama, to_marian
    from .feedforward import PositionwiseFeedForward
    from .grouped import GroupedQueryAttention, repeat_kv
    from .lm import DecoderOnlyConfig, DecoderOnlyLM, generate
    from .lm_checkpoint import load_lm_checkpoint, save_lm_checkpoint
    from .loss import label_smoothed_cross_entropy
    from .masks import causal_mask, padding_mask, target_mask
    from .model import Transformer
    from .multihead import MultiHeadAttention, merge_heads, split_heads
    from .positional import (
        LearnedPositionalEmbedding,
        PositionalEncoding,
        relative_position_map,
        sinusoidal_positional_encoding,
    )
    from .quantize import Int8Embedding, Int8Linear, dequantize_rows, int8_linear, quantize, quantize_rows
    from .recipe import adamw_step, make_adamw, warmup_cosine_lr, warmup_cosine_scheduler
    from .rmsnorm import RMSNorm
    from .rotary import Rotary, RotaryAttention, apply_rope
    from .schedule import transformer_lr, transformer_scheduler
    from .step import train_step
    from .sublayer import residual
    from .subwords import bpe_merges
    from .swiglu import SwiGLU
    from .token_batches import pack
    from .vocab import SPECIAL_TOKENS, Vocab, tokenize
