"""A cached decoding step is small: its time goes into the number of operations, not their size.

We count the ATen operations (every call that reaches PyTorch's dispatcher, with the
``TorchDispatchMode`` of ``benchmarks/decoding.py``) of greedy decoding with the KV cache at d_model 128, 4 heads, 2 encoder +
2 decoder layers, batch 32, with ``<eos>`` switched off so that every run makes exactly the tokens
asked for. One generated token costs ``ops(T + 1 tokens) - ops(T tokens)``: the encoder, the set-up
and the one read before the loop cancel out, and what is left is one whole step (decoder layers,
embedding, output layer, the choice of the token, the early-stop check). Divided by the number of
decoder layers, it must stay at or below 45 operations per layer per token (it was 91.5 before the
step was made lean: 87-92 depending on the step).
"""

from __future__ import annotations

import pytest
import torch

from benchmarks.decoding import step_ops
from transformer_course import Transformer, TransformerConfig

TARGET = 45  # ATen operations per decoder layer per generated token, at most


def _model(norm_first: bool) -> Transformer:
    torch.manual_seed(0)
    config = TransformerConfig(
        1000, 1000, d_model=128, n_heads=4, d_ff=512, n_encoder_layers=2, n_decoder_layers=2, max_len=64,
        norm_first=norm_first,
    )  # fmt: skip
    model = Transformer(config).eval()
    with torch.no_grad():
        model.output.bias[config.eos_id] = -1e4  # never stop early
    return model


@pytest.mark.parametrize("padded", [False, True], ids=["no padding", "padded sources"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_a_cached_step_costs_at_most_45_operations_per_decoder_layer(norm_first: bool, padded: bool) -> None:
    model = _model(norm_first)
    src = torch.randint(4, 1000, (32, 32), generator=torch.Generator().manual_seed(1))  # (B, S)
    if padded:  # half the sentences shorter: the cross-attention hides their padding at every step
        src[:16, 20:] = model.config.pad_id
    for tokens in (10, 20):  # a step costs the same early and late
        per_layer, step = step_ops(model, src, tokens)
        assert per_layer <= TARGET, f"{per_layer} operations per layer per token: {step}"
