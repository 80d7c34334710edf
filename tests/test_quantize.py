"""Chapter 16's quantize: bfloat16 and int8 copies that decode as the float32 model does."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer_course import (
    DecoderOnlyConfig,
    DecoderOnlyLM,
    Int8Embedding,
    Int8Linear,
    Transformer,
    TransformerConfig,
    beam_search,
    generate,
    greedy_decode,
    load_pretrained,
    load_task,
    quantize,
)
from transformer_course.quantize import dequantize_rows, quantize_rows
from transformer_course_tools.engine import ENGINE


def _translator() -> Transformer:
    torch.manual_seed(0)
    config = TransformerConfig(
        60, 60, d_model=64, n_heads=4, d_ff=128, n_encoder_layers=2, n_decoder_layers=2, max_len=64,
        share_embeddings=True,
    )  # fmt: skip
    return Transformer(config).eval()


def _lm(**overrides) -> DecoderOnlyLM:
    torch.manual_seed(0)
    config = DecoderOnlyConfig.modern(70, d_model=64, n_heads=4, n_layers=2, d_ff=128, max_len=64, **overrides)
    return DecoderOnlyLM(config).eval()


@pytest.fixture(scope="module")
def numbers():
    """The shipped numbers translator and 16 sentences of its test split, as padded ids."""
    checkpoint, task = load_pretrained(), load_task("numbers-en-de")
    sources = [task.src_vocab.encode(s) for s, _ in task.test[:16]]
    longest = max(map(len, sources))
    src = torch.tensor([s + [task.src_vocab.pad_id] * (longest - len(s)) for s in sources])  # (16, S)
    return checkpoint.model.eval(), src


# -- the int8 numbers ------------------------------------------------------------------------------


def test_rows_are_rounded_to_their_own_scale() -> None:
    weight = torch.tensor([[1.0, -0.5, 0.2], [0.0, 0.0, 0.0], [-4.0, 1.0, 3.0]])
    q, scale = quantize_rows(weight)
    assert q.dtype == torch.int8 and scale.dtype == torch.float32
    assert torch.allclose(scale, torch.tensor([1 / 127, 1.0, 4 / 127]))  # a row of zeros: scale 1
    assert q.tolist() == [[127, -64, 25], [0, 0, 0], [-127, 32, 95]]  # 63.5 → 64 (half to even), 25.4, 31.75, 95.25


def test_dequantized_weights_are_within_half_a_step_of_the_float_ones() -> None:
    weight = torch.randn(300, 90) * torch.logspace(-3, 1, 300)[:, None]  # rows of very different sizes
    q, scale = quantize_rows(weight)
    error = (dequantize_rows(q, scale) - weight).abs()  # (300, 90)
    assert (error <= scale[:, None] / 2 * (1 + 1e-5)).all()
    assert q.abs().amax(dim=1).eq(127).all()  # every row uses the whole range


def _activation_bound(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """How far the kernel may stray from x @ Wᵀ by rounding x to 7 bits (one step per entry at most)."""
    step = (x.max().clamp_min(0) - x.min().clamp_max(0)) / 127
    return step * weight.abs().sum(dim=1) + 1e-5  # (out,)


def test_int8_linear_multiplies_by_the_dequantized_weight() -> None:
    linear = nn.Linear(48, 20)
    layer = Int8Linear.from_linear(linear)
    x = torch.randn(5, 3, 48)
    reference = F.linear(x, dequantize_rows(layer.weight, layer.scale), linear.bias)  # (5, 3, 20)
    with torch.no_grad():
        out = layer(x)
    assert out.shape == (5, 3, 20) and out.dtype == torch.float32
    bound = _activation_bound(x, dequantize_rows(layer.weight, layer.scale))
    assert ((out - reference).abs() <= bound).all()
    layer.packed = None  # the path without fbgemm (a GPU, a build without it): no rounding of x
    torch.testing.assert_close(layer(x), reference, atol=1e-5, rtol=1e-5)


def test_int8_embedding_looks_up_the_dequantized_rows() -> None:
    weight = torch.randn(30, 8)
    embedding = Int8Embedding(*quantize_rows(weight))
    tokens = torch.tensor([[3, 0, 29], [7, 7, 1]])
    expected = dequantize_rows(embedding.weight, embedding.scale)[tokens]  # (2, 3, 8)
    assert torch.equal(embedding(tokens), expected)
    assert (embedding(tokens) - weight[tokens]).abs().max() <= weight.abs().max() / 254 * 1.0001


# -- whole models ----------------------------------------------------------------------------------


@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_the_original_is_untouched(precision: str) -> None:
    model = _translator().train()
    before = {name: t.clone() for name, t in model.state_dict().items()}
    quantized = quantize(model, precision)
    assert quantized is not model and not quantized.training and model.training
    after = model.state_dict()
    assert before.keys() == after.keys()
    for name, tensor in before.items():
        assert after[name].dtype == tensor.dtype and torch.equal(after[name], tensor), name
    assert isinstance(model.output, nn.Linear) and model.output.weight is model.tgt_embed.weight


def test_bf16_stores_every_float_in_bfloat16() -> None:
    quantized = quantize(_translator(), "bf16")
    floats = [t for t in [*quantized.parameters(), *quantized.buffers()] if t.is_floating_point()]
    assert floats and all(t.dtype == torch.bfloat16 for t in floats)


def test_int8_stores_every_matrix_as_int8_and_keeps_the_tie() -> None:
    model = _translator()
    quantized = quantize(model, "int8")
    linears = [m for m in quantized.modules() if isinstance(m, nn.Linear)]
    assert not linears, f"{len(linears)} float layers left"
    assert quantized.output.weight is quantized.tgt_embed.weight is quantized.src_embed.weight  # one (V, D) matrix
    assert quantized.output.scale is quantized.tgt_embed.embedding.scale
    weight_bytes = sum(p.numel() * p.element_size() for p in quantized.parameters())
    float_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    assert weight_bytes < 0.35 * float_bytes  # int8 matrices; norms, biases and scales stay float32


@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_logits_stay_close_to_float32(precision: str) -> None:
    model = _translator()
    src, tgt = torch.randint(4, 60, (3, 9)), torch.randint(4, 60, (3, 7))
    with torch.no_grad():
        expected, got = model(src, tgt), quantize(model, precision)(src, tgt).float()  # (3, 7, V)
    assert got.shape == expected.shape
    relative = (got - expected).norm() / expected.norm()
    assert relative < 0.03, f"{precision}: relative error {relative:.4f}"


@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_the_shipped_translator_decodes_the_same_tokens(numbers, precision: str) -> None:
    model, src = numbers
    quantized = quantize(model, precision)
    assert torch.equal(greedy_decode(quantized, src), greedy_decode(model, src))
    assert torch.equal(beam_search(quantized, src[:4], 4)[0], beam_search(model, src[:4], 4)[0])
    assert torch.equal(greedy_decode(quantized, src[:4], use_cache=False), greedy_decode(model, src[:4]))


def test_the_engine_stacks_an_int8_models_projections_into_one_int8_product() -> None:
    """The engine's plan stacks W^Q, W^K and W^V of an int8 model into one int8 product (whole numbers
    and scales row by row), packed once, and decodes the tokens the int8 modules decode."""
    from transformer_course_tools.engine.plan import plan_for
    from transformer_course_tools.engine.weights import Int8Dense

    model, src = _translator(), torch.randint(4, 60, (3, 7), generator=torch.Generator().manual_seed(1))
    quantized = quantize(model, "int8")
    qkv = plan_for(quantized).layers[0].self_attn.qkv
    attention = quantized.decoder.layers[0].self_attn
    assert isinstance(qkv, Int8Dense) and qkv.q.shape == (3 * attention.d_model, attention.d_model)
    assert torch.equal(qkv.q[: attention.d_model], attention.w_q.weight)  # W^Q's whole numbers first, untouched
    assert torch.equal(greedy_decode(quantized, src, path=ENGINE), greedy_decode(quantized, src))


@pytest.mark.parametrize("precision", ["bf16", "int8"])
@pytest.mark.parametrize("tied", [True, False], ids=["tied output", "own output"])
def test_a_decoder_only_model_generates(precision: str, tied: bool) -> None:
    model = _lm(tie_output=tied)
    prompt = torch.randint(4, 70, (2, 5))
    quantized = quantize(model, precision)
    if precision == "int8":
        assert (quantized.output.weight is quantized.embed.weight) == tied
    out = generate(quantized, prompt, 12)
    assert out.shape == (2, 17) and torch.equal(out[:, :5], prompt)
    with torch.no_grad():
        expected, got = model(prompt), quantized(prompt).float()  # (2, 5, V)
    assert (got - expected).norm() / expected.norm() < 0.05  # random weights: no margin to speak of
    assert torch.equal(generate(quantized, prompt, 12, use_cache=False)[:, :6], out[:, :6])


def test_a_bad_precision_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^precision must be one of 'bf16', 'int8', got 'fp8'$"):
        quantize(_translator(), "fp8")
