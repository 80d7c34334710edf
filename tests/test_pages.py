"""transformer_course_tools/notebook/pages.py: the model's code on one page is the code that runs, and a profile reads as one sentence."""

from __future__ import annotations

import functools
from unittest import mock

import torch

from transformer_course import MultiHeadAttention, Transformer, TransformerConfig, scaled_dot_product_attention
from transformer_course.decoder import DecoderLayer
from transformer_course.encoder import EncoderLayer
from transformer_course.sentence_training import SENTENCE_CPU_PROFILE
from transformer_course.training import CPU_PROFILE
from transformer_course_tools.notebook.pages import code_page, function_text, functions_called, run_settings


def test_a_function_on_the_page_keeps_its_lines_but_not_its_docstring_and_checks() -> None:
    text = function_text(Transformer.forward)
    assert text.splitlines()[0] == "def forward(self, src, tgt):"
    assert "_check_tokens" not in text and "raise ValueError" not in text and "checked here" not in text
    assert "padding_mask(src, self.config.pad_id)" in text and "self._decode(" in text
    sdpa = function_text(scaled_dot_product_attention)
    assert '"""' not in sdpa and "_check_qkv" not in sdpa and "softmax(dim=-1)" in sdpa
    assert "### BEGIN SOLUTION" not in function_text(DecoderLayer.forward)


def test_the_page_leaves_out_the_formatters_markers() -> None:
    source = Transformer.__init__.__code__.co_filename
    assert "# fmt: skip" in open(source, encoding="utf-8").read()  # the constructor's file has some to leave out
    text = function_text(Transformer.__init__)
    assert "fmt: skip" not in text and "sizes = dict(" in text and "connection=connection," in text


def test_the_page_names_each_function_and_its_file() -> None:
    page = code_page([Transformer.forward, EncoderLayer.forward])
    assert "# Transformer.forward  (model.py)" in page and "# EncoderLayer.forward  (encoder.py)" in page


def test_functions_called_sees_the_teaching_path_only_when_asked() -> None:
    torch.manual_seed(0)
    config = TransformerConfig(20, 20, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1)
    model = Transformer(config).eval()
    src, tgt = torch.randint(4, 20, (2, 5)), torch.randint(4, 20, (2, 6))
    with torch.no_grad():
        default = functions_called(lambda: model(src, tgt))
        teaching = functools.partialmethod(MultiHeadAttention.forward, fast=False)
        with mock.patch.object(MultiHeadAttention, "forward", teaching):
            printed = functions_called(lambda: model(src, tgt))
    assert Transformer.forward.__code__ in default and DecoderLayer.forward.__code__ in default
    assert scaled_dot_product_attention.__code__ not in default  # PyTorch's fused kernel by default
    assert scaled_dot_product_attention.__code__ in printed
    assert all(name.startswith("transformer_course.") for name in printed.values())


def test_a_profile_reads_as_one_sentence() -> None:
    sentence = run_settings(CPU_PROFILE)
    assert sentence.startswith("On this machine (cpu, float32): ") and sentence.endswith(".")
    assert f"{CPU_PROFILE.steps:,} steps of {CPU_PROFILE.batch_size} sentences" in sentence
    assert "tokens shared by both languages" in run_settings(SENTENCE_CPU_PROFILE)
    assert "mixed precision, bfloat16" in run_settings(SENTENCE_CPU_PROFILE, "cuda", torch.bfloat16, where="On a GPU")
