"""The published configurations the course converts and measures, in one place: OPUS-MT's English →
German translator, GPT-2 small and SmolLM2-135M.

Each is the checkpoint's ``config.json`` on the Hugging Face Hub, in ``transformers``' names: the fields
that give its shape and the settings chapter 15's converters read (what only generation or training
uses is left out). Chapters 15 and 16, the benchmarks and the tests take them from here:

* :func:`config`: the fields, with changes (``config(name, num_hidden_layers=4)``: 4 of its 30 layers);
* :func:`hf_config`: ``transformers``' own configuration object of the checkpoint (it needs
  ``transformers``);
* :func:`course_config`: the course's configuration of the same model, made from the fields by the
  converter's first half (:func:`~transformer_course.convert.config_from_marian` …), so the shapes
  chapter 16 builds are the ones a converted checkpoint has.

They live on the course's side, not in a room: no room needs a published shape (a converter reads the
loaded model's own configuration), and a room imports nothing of the course's side.
``tests/test_published.py`` checks them against what ``transformers``' configuration classes say.
"""

from __future__ import annotations

from typing import Any

OPUS_MT_EN_DE = "Helsinki-NLP/opus-mt-en-de"
GPT2 = "openai-community/gpt2"  # GPT-2 small, 124 M parameters
SMOLLM2_135M = "HuggingFaceTB/SmolLM2-135M"

PUBLISHED: dict[str, dict[str, Any]] = {
    OPUS_MT_EN_DE: {
        "model_type": "marian", "vocab_size": 58101, "decoder_vocab_size": 58101, "d_model": 512,
        "encoder_layers": 6, "decoder_layers": 6, "encoder_attention_heads": 8, "decoder_attention_heads": 8,
        "encoder_ffn_dim": 2048, "decoder_ffn_dim": 2048, "max_position_embeddings": 512,
        "activation_function": "swish", "scale_embedding": True, "normalize_before": False, "dropout": 0.1,
        "share_encoder_decoder_embeddings": True, "pad_token_id": 58100, "decoder_start_token_id": 58100,
        "eos_token_id": 0,
    },
    GPT2: {
        "model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
        "activation_function": "gelu_new", "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1,
        "layer_norm_epsilon": 1e-5, "bos_token_id": 50256, "eos_token_id": 50256,
    },
    SMOLLM2_135M: {
        "model_type": "llama", "vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536,
        "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "hidden_act": "silu",
        "max_position_embeddings": 8192, "rope_theta": 100000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": True,
        "attention_bias": False, "bos_token_id": 0, "eos_token_id": 0,
    },
}  # fmt: skip

# model_type → transformers' configuration class
_CLASSES = {"marian": "MarianConfig", "gpt2": "GPT2Config", "llama": "LlamaConfig"}


def config(name: str, **changes: Any) -> dict[str, Any]:
    """The published fields of checkpoint ``name`` (a copy), ``changes`` applied; ``model_type`` left out
    (transformers' classes set it themselves)."""
    if name not in PUBLISHED:
        raise KeyError(f"no published configuration for {name!r}; known: {', '.join(PUBLISHED)}")
    fields = {k: v for k, v in PUBLISHED[name].items() if k != "model_type"}
    unknown = sorted(set(changes) - set(fields))
    if unknown:
        raise ValueError(f"{name} has no field {', '.join(unknown)}; its fields: {', '.join(fields)}")
    return fields | changes


def hf_config(name: str, **changes: Any):  # noqa: ANN201 - a transformers PretrainedConfig
    """``transformers``' configuration object of checkpoint ``name`` (``changes`` applied)."""
    import transformers

    return getattr(transformers, _CLASSES[PUBLISHED[name]["model_type"]])(**config(name, **changes))


def course_config(name: str, **changes: Any):  # noqa: ANN201 - a TransformerConfig or DecoderOnlyConfig
    """The course's configuration of checkpoint ``name`` (``changes`` applied, in transformers' names), as
    chapter 15's converter makes it from the checkpoint's settings; no ``transformers`` needed."""
    from types import SimpleNamespace

    from transformer_course import convert

    converter = getattr(convert, f"config_from_{PUBLISHED[name]['model_type']}")
    return converter(SimpleNamespace(**config(name, **changes)))
