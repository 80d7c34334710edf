"""The published configurations (transformer_course_tools/models/published.py) against what transformers'
own configuration classes say of those checkpoints, offline: the classes' documented defaults, the
parameter counts of the models they build (the model cards' sizes), and the course's configuration
the converters make from each; and no second copy of them typed elsewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from transformer_course import DecoderOnlyLM, Transformer
from transformer_course.convert import config_from_gpt2, config_from_llama, config_from_marian
from transformer_course_tools.models import published
from transformer_course_tools.models.published import GPT2, OPUS_MT_EN_DE, SMOLLM2_135M

transformers = pytest.importorskip("transformers", reason="pip install 'transformer-course[hub]'")
ROOT = Path(__file__).resolve().parent.parent
CLASSES = {OPUS_MT_EN_DE: "MarianMTModel", GPT2: "GPT2LMHeadModel", SMOLLM2_135M: "LlamaForCausalLM"}
CONVERTERS = {OPUS_MT_EN_DE: config_from_marian, GPT2: config_from_gpt2, SMOLLM2_135M: config_from_llama}


def test_gpt2_is_gpt2_configs_defaults() -> None:
    """transformers' GPT2Config() is GPT-2 small (its documentation says so): every published field agrees."""
    defaults = transformers.GPT2Config()
    assert {k: getattr(defaults, k) for k in published.config(GPT2)} == published.config(GPT2)


def test_marians_defaults_have_opus_mt_en_des_vocabulary() -> None:
    """MarianConfig()'s defaults take their vocabulary and special ids from opus-mt-en-de (its sizes are another
    Marian's): those fields agree."""
    defaults, fields = transformers.MarianConfig(), published.config(OPUS_MT_EN_DE)
    shared = ("vocab_size", "decoder_vocab_size", "pad_token_id", "decoder_start_token_id", "eos_token_id",
              "share_encoder_decoder_embeddings", "dropout")  # fmt: skip
    assert {k: getattr(defaults, k) for k in shared} == {k: fields[k] for k in shared}


@pytest.mark.parametrize(
    ("name", "size"),
    [(OPUS_MT_EN_DE, "74.4M"), (GPT2, "124,439,808"), (SMOLLM2_135M, "134,515,008")],  # the model cards' sizes
)
def test_transformers_builds_the_published_size(name: str, size: str) -> None:
    transformers.logging.set_verbosity_error()
    with torch.device("meta"):  # the shapes only, nothing allocated
        model = getattr(transformers, CLASSES[name])(published.hf_config(name))
    count = sum(p.numel() for p in model.parameters())
    assert (f"{count / 1e6:.1f}M" if size.endswith("M") else f"{count:,}") == size


@pytest.mark.parametrize("name", [OPUS_MT_EN_DE, GPT2, SMOLLM2_135M])
def test_the_course_configuration_is_the_converters(name: str) -> None:
    """course_config (from the fields alone) is what the converter makes of transformers' own configuration
    object, defaults filled in: no field the converter reads is missing; fewer layers carry over."""
    assert published.course_config(name) == CONVERTERS[name](published.hf_config(name))
    layers = {OPUS_MT_EN_DE: "encoder_layers", GPT2: "n_layer", SMOLLM2_135M: "num_hidden_layers"}[name]
    fewer = published.course_config(name, **{layers: 2})
    assert fewer == CONVERTERS[name](published.hf_config(name, **{layers: 2}))
    with torch.device("meta"):
        model = (Transformer if name == OPUS_MT_EN_DE else DecoderOnlyLM)(fewer)
    assert model.num_parameters() > 0


def test_smollm2_reads_8192_positions() -> None:
    """The context length SmolLM2-135M's config.json gives (a benchmark had 2,048)."""
    assert published.course_config(SMOLLM2_135M).max_len == 8192


def test_a_wrong_name_or_field_is_refused_in_one_line() -> None:
    with pytest.raises(KeyError, match="no published configuration for 'gpt-2'; known: Helsinki-NLP"):
        published.config("gpt-2")
    with pytest.raises(ValueError, match="openai-community/gpt2 has no field n_layers; its fields: vocab_size"):
        published.config(GPT2, n_layers=2)


def test_no_second_copy_of_a_published_shape() -> None:
    """The vocabulary sizes of the three checkpoints appear in code only in published.py (the chapters'
    prose may quote them): the chapters, the benchmarks and the course's side import the configurations."""
    sizes = re.compile(r"\b(58_?101|50_?257|49_?152)\b")
    sources = [*(ROOT / "chapters").glob("*.py"), *(ROOT / "benchmarks").glob("*.py"),
               *(ROOT / "transformer_course_tools").rglob("*.py"), *(ROOT / "transformer_course").rglob("*.py")]  # fmt: skip
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sources
        if path.name != "published.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1)
        if sizes.search(line.split("#")[0])
    ]
    assert not found, "\n".join(found)
