"""A ``transformers`` folder from a :class:`~.sources.Source`: ``config.json`` and ``model.safetensors``
(the room's ``to_marian``, ``to_llama`` or ``to_gpt2``), ``generation_config.json``, and the
tokenizer (``tokenizer.json``, ``tokenizer_config.json``).

It loads with ``AutoTokenizer`` and ``AutoModelForSeq2SeqLM`` (a translator) or
``AutoModelForCausalLM`` (a language model), and ``generate`` on text gives the course's text:
greedy by default, ``<pad>`` and ``<bos>`` never produced (a translator's output bias forbids them,
:mod:`.sources`; a language model's generation settings suppress them, Llama and GPT-2 having no
output bias), at most the model's ``max_len`` tokens.
"""

from __future__ import annotations

from pathlib import Path

from transformer_course.export import to_gpt2, to_llama, to_marian
from transformer_course.quantize import quantize

from .hf_tokenizers import fast_tokenizer
from .sources import Source

PRECISIONS = ("float32", "bf16")  # what transformers' layers hold; int8 is the engines' business


def hf_model(source: Source, precision: str = "float32"):
    """The source's model as a ``transformers`` model (float32, or bfloat16 with ``precision="bf16"``)."""
    if precision not in PRECISIONS:
        raise ValueError(
            f"--precision {precision} cannot be written for transformers, whose layers hold float weights: "
            f"choose {' or '.join(PRECISIONS)} (int8: --to ctranslate2 or --to gguf)"
        )
    model = source.model if precision == "float32" else quantize(source.model, "bf16")
    if source.translator:
        return to_marian(model)
    return (to_llama if model.config.positional == "rope" else to_gpt2)(model)


def generation_settings(source: Source) -> dict:
    """``generate``'s defaults for the exported model: the course's greedy decoding."""
    c = source.model.config
    settings = {"bos_token_id": c.bos_id, "eos_token_id": c.eos_id, "pad_token_id": c.pad_id, "do_sample": False,
                "num_beams": 1, "max_length": c.max_len}  # fmt: skip
    if source.translator:
        return settings | {"decoder_start_token_id": c.bos_id}
    banned = sorted({c.pad_id, c.bos_id} - {c.eos_id})  # the course's generate never produces them
    return settings | ({"suppress_tokens": banned} if banned else {})


def write_transformers(source: Source, out: Path, precision: str = "float32") -> Path:
    """Write the ``transformers`` folder of ``source`` into ``out`` (an empty or new folder)."""
    from transformers import GenerationConfig

    model = hf_model(source, precision)
    model.generation_config = GenerationConfig(**generation_settings(source))
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    fast_tokenizer(source.tokenizer, source.max_len).save_pretrained(out)
    return out
