"""Chapter 10's cached step is as lean as the translator's (``tests/test_decoding_ops.py``).

Today's block (pre-LN, RMSNorm, RoPE, SwiGLU, 8 query heads sharing 2 key/value heads), 2 layers,
batch 8: one generated token costs ``ops(T + 1 tokens) - ops(T tokens)`` ATen operations (the
``TorchDispatchMode`` of ``benchmarks/decoding.py``), divided by the layers. It was 119 before the
step was made lean (the copies of ``repeat_kv``, the rotation of q and k from their angles at every
step, the norms' weights, W₁ and W₃ apart); it must stay at or below 45. A step must also never copy
the cached keys and values to every query head: no operation of a step may make a (B, H, L, Dk)
tensor, and none may expand, repeat or gather.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarks.decoding import CountOps
from transformer_course.lm import DecoderOnlyConfig, DecoderOnlyLM, generate

# ATen operations per layer per generated token, at most. Torch before 2.5 (the floor is 2.3) returns the
# attention of a group's queries strided, so joining the heads copies that output (one clone and a view
# per layer, never of the keys or values): its count is 46.5.
TARGET = 45 if tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 5) else 47
B, H, D, PROMPT = 8, 8, 128, 5
COPIES = {"expand", "repeat", "repeat_interleave", "index_select", "index", "gather"}  # what repeat_kv would do


def _model(n_kv_heads: int, **overrides) -> DecoderOnlyLM:
    torch.manual_seed(0)
    config = DecoderOnlyConfig.modern(500, d_model=D, n_heads=H, n_kv_heads=n_kv_heads, n_layers=2, max_len=64,
                                      **overrides)  # fmt: skip
    return DecoderOnlyLM(config).eval()


def _prompt() -> torch.Tensor:
    return torch.randint(4, 500, (B, PROMPT), generator=torch.Generator().manual_seed(1))  # (B, T)


def _step_ops(model: DecoderOnlyLM, tokens: int) -> tuple[float, Counter]:
    counts = []
    for n in (tokens, tokens + 1):
        with CountOps() as counter:
            out = generate(model, _prompt(), n)
        assert out.shape == (B, PROMPT + n), "no early stop: every row generates every token"
        counts.append(counter.ops)
    return (counts[1].total() - counts[0].total()) / model.config.n_layers, counts[1] - counts[0]


class Shapes(TorchDispatchMode):
    """The shape of every tensor each ATen operation returns."""

    def __init__(self) -> None:
        super().__init__()
        self.made: list[tuple[str, tuple]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - PyTorch's signature
        out = func(*args, **(kwargs or {}))
        for x in out if isinstance(out, tuple | list) else (out,):
            if isinstance(x, torch.Tensor):
                self.made.append((func.overloadpacket.__name__, tuple(x.shape)))
        return out


@pytest.mark.parametrize("n_kv_heads", [2, 8])
def test_a_cached_step_costs_at_most_45_operations_per_layer(n_kv_heads: int) -> None:
    model = _model(n_kv_heads)
    for tokens in (10, 20):  # early and late, the cache's buffer not growing in between
        per_layer, step = _step_ops(model, tokens)
        assert per_layer <= TARGET, f"{per_layer} operations per layer per token: {step}"
        assert not COPIES & set(step), f"a step copies: {step}"


@pytest.mark.parametrize("n_kv_heads", [2, 1])
def test_no_step_copies_the_grouped_keys_and_values_to_every_query_head(n_kv_heads: int) -> None:
    model, d_k = _model(n_kv_heads), D // H
    with Shapes() as shapes:
        generate(model, _prompt(), 12)
    repeated = {(B, H, length, d_k) for length in range(PROMPT + 1, PROMPT + 13)}  # the steps' lengths L
    assert not [made for made in shapes.made if made[1] in repeated]
    prompt_pass = {(B, H, PROMPT, d_k)}  # the prompt's pass repeats them (repeat_kv): the test can see it
    assert [made for made in shapes.made if made[1] in prompt_pass]


def test_the_test_sees_a_step_that_repeats_the_keys(monkeypatch) -> None:  # noqa: ANN001
    """With the lean step switched off, the general path repeats the keys at every step: counted."""
    monkeypatch.setattr(DecoderOnlyLM, "_lean", lambda self, tokens, cache: False)
    monkeypatch.setattr("transformer_course.multihead.MultiHeadAttention._one_step", lambda self, q, mask: False)
    per_layer, step = _step_ops(_model(2), 10)
    assert per_layer > TARGET and COPIES & set(step)


@pytest.mark.parametrize(
    "overrides",
    [dict(n_kv_heads=8), dict(n_kv_heads=2), dict(n_kv_heads=1), dict(n_kv_heads=2, bias=True, tie_output=False)],
    ids=["modern", "grouped 8/2", "grouped 8/1", "biases, untied"],
)
def test_cached_and_uncached_generation_give_the_same_tokens(overrides: dict) -> None:
    model = _model(**overrides)
    for sampling in ({}, dict(temperature=1.0, top_k=50)):
        cached, uncached = (
            generate(model, _prompt(), 30, use_cache=use, generator=torch.Generator().manual_seed(3), **sampling)
            for use in (True, False)
        )
        assert torch.equal(cached, uncached), sampling


@pytest.mark.parametrize("n_kv_heads", [8, 2, 1])
def test_the_lean_step_gives_the_layers_logits(n_kv_heads: int) -> None:
    """The lean step against the layers' own forward for the same new token (autograd on: the general path)."""
    model, prompt = _model(n_kv_heads), _prompt()
    with torch.no_grad():
        cache = model.new_cache()
        model(prompt, cache)
        lean = model(prompt[:, :1], cache)  # (B, 1, V): the lean step at position PROMPT
        assert cache[0].projections is not None and "feed_forward" in cache[0].prepared, "the lean step ran"
    general_cache = model.new_cache()
    with torch.no_grad():
        model(prompt, general_cache)
    with torch.enable_grad():
        general = model(prompt[:, :1], general_cache)
    assert general_cache[0].projections is None, "the general path ran"
    torch.testing.assert_close(lean, general.detach(), atol=1e-4, rtol=1e-4)
