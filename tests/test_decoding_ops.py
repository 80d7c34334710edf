"""A cached decoding step is small: its time goes into the number of operations, not their size.

We count the ATen operations (every call that reaches PyTorch's dispatcher, with a
``TorchDispatchMode``) of greedy decoding with the KV cache at d_model 128, 4 heads, 2 encoder +
2 decoder layers, batch 32, with ``<eos>`` switched off so that every run makes exactly the tokens
asked for. One generated token costs ``ops(T + 1 tokens) - ops(T tokens)``: the encoder, the set-up
and the one read before the loop cancel out, and what is left is one whole step (decoder layers,
embedding, output layer, the choice of the token, the early-stop check). Divided by the number of
decoder layers, it must stay at or below 45 operations per layer per token (it was 91.5 before the
step was made lean: 87-92 depending on the step).
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from transformer_course import Transformer, TransformerConfig
from transformer_course.decoding import greedy_decode

TARGET = 45  # ATen operations per decoder layer per generated token, at most


class CountOps(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - PyTorch's signature
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


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


def _ops(model: Transformer, src: torch.Tensor, tokens: int) -> Counter[str]:
    with CountOps() as counter:
        out = greedy_decode(model, src, tokens)
    assert out.shape == (src.shape[0], tokens)
    return counter.ops


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_a_cached_step_costs_at_most_45_operations_per_decoder_layer(norm_first: bool) -> None:
    model = _model(norm_first)
    src = torch.randint(4, 1000, (32, 32), generator=torch.Generator().manual_seed(1))  # (B, S)
    for tokens in (10, 20):  # a step costs the same early and late
        before, after = _ops(model, src, tokens), _ops(model, src, tokens + 1)
        per_layer = (after.total() - before.total()) / model.config.n_decoder_layers
        assert per_layer <= TARGET, f"{per_layer} operations per layer per token: {after - before}"
