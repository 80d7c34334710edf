"""The references of chapter 15's checks against transformers' own Marian layers: the table of
Marian's names and shapes, and the post-LN layer the judge of ex15_3 writes out."""

from __future__ import annotations

import inspect

import pytest
import torch

from transformer_course_tools.exercises.checks.ch15 import _shapes, marian_names, post_ln_layer

transformers = pytest.importorskip("transformers")
marian = pytest.importorskip("transformers.models.marian.modeling_marian")


def _config():
    config = transformers.MarianConfig(
        vocab_size=20, d_model=8, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=12, decoder_ffn_dim=12, activation_function="swish",
        pad_token_id=19, decoder_start_token_id=19, eos_token_id=0, dropout=0.0, attention_dropout=0.0,
    )  # fmt: skip
    config._attn_implementation = "eager"
    return config


def _layer(config, decoder: bool):
    """One of Marian's layers; transformers ≥ 4.42 gives a decoder layer its index, 4.41 (the floor) does not."""
    if not decoder:
        return marian.MarianEncoderLayer(config)
    takes_index = "layer_idx" in inspect.signature(marian.MarianDecoderLayer.__init__).parameters
    return marian.MarianDecoderLayer(config, layer_idx=0) if takes_index else marian.MarianDecoderLayer(config)


@pytest.mark.parametrize("decoder", [False, True])
def test_the_table_of_marian_names_and_shapes_is_transformers(decoder: bool) -> None:
    torch.manual_seed(0)
    layer = _layer(_config(), decoder)
    theirs = {name: tuple(p.shape) for name, p in layer.named_parameters()}
    assert set(theirs) == set(marian_names(decoder))
    assert all(_shapes(8, 12)[name] == shape for name, shape in theirs.items())


@pytest.mark.parametrize("decoder", [False, True])
def test_the_judge_s_post_ln_layer_is_marian_s(decoder: bool) -> None:
    torch.manual_seed(0)
    config = _config()
    layer = _layer(config, decoder).eval()
    with torch.no_grad():
        for p in layer.parameters():  # norms not at 1 and 0, so that a norm in the wrong place shows
            p.copy_(torch.randn_like(p) * 0.5 + (1.0 if p.dim() == 1 else 0.0))
    x, memory = torch.randn(1, 5, 8), torch.randn(1, 4, 8)
    tensors = {name: p.detach().double() for name, p in layer.named_parameters()}
    with torch.no_grad():
        if decoder:
            causal = torch.full((5, 5), float("-inf")).triu(1).view(1, 1, 5, 5)
            out = layer(x, attention_mask=causal, encoder_hidden_states=memory, encoder_attention_mask=None,
                        use_cache=False)  # fmt: skip
        else:
            head_mask = "layer_head_mask" in inspect.signature(layer.forward).parameters  # required in 4.41
            out = layer(x, attention_mask=None, **({"layer_head_mask": None} if head_mask else {}))
    out = out[0] if isinstance(out, tuple) else out
    mine = post_ln_layer(x[0].double(), memory[0].double() if decoder else None, tensors, marian_names(decoder), 2)
    assert torch.allclose(out[0].double(), mine, atol=1e-5)
    # and a broken reference (no causal mask in the decoder, or the norms swapped) does not
    broken = dict(tensors)
    broken["self_attn_layer_norm.weight"], broken["final_layer_norm.weight"] = (
        tensors["final_layer_norm.weight"], tensors["self_attn_layer_norm.weight"])  # fmt: skip
    wrong = post_ln_layer(x[0].double(), memory[0].double() if decoder else None, broken, marian_names(decoder), 2)
    assert not torch.allclose(out[0].double(), wrong, atol=1e-3)
