"""Chapter 16's inverse converters (to_marian, to_llama, to_gpt2) against transformers' own models: the
same logits as the course's model within 1e-4 (the tolerance of chapter 15's converters), the same
greedy tokens, from_*(to_*(m)) giving back m's parameters bit for bit, and every refusal in one line."""

from __future__ import annotations

import re

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="pip install 'transformer-course[hub]'")

from transformer_course import (  # noqa: E402
    DecoderOnlyConfig,
    DecoderOnlyLM,
    Transformer,
    TransformerConfig,
    from_gpt2,
    from_llama,
    from_marian,
    generate,
    greedy_decode,
    interleaved_to_halves_order,
    join_conv1d,
    quantize,
    reorder_features,
    rope_halves_to_interleaved,
    rope_interleaved_to_halves,
    split_conv1d,
    to_gpt2,
    to_llama,
    to_marian,
)

TOLERANCE = 1e-4  # float32, as tests/test_convert.py
BF16_TOLERANCE = 0.15  # both compute in bfloat16 (8 bits of mantissa) with other kernels: measured ≤ 0.063 (2 steps of 1/32 at logits of 4–8)


def drawn(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """``model`` with every vector drawn too (gains around 1, biases around 0): a converter that swaps
    two norms or drops a bias then changes the logits (see tests/test_convert.py)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in model.named_parameters():
            if tensor.dim() == 1:
                noise = torch.randn(tensor.shape, generator=generator) * 0.5
                tensor.copy_(noise + (1.0 if "norm" in name else 0.0))
    return model.eval()


def translator(**overrides) -> Transformer:
    settings = dict(src_vocab_size=35, tgt_vocab_size=36, d_model=32, n_heads=4, d_ff=48, n_encoder_layers=2,
                    n_decoder_layers=2, max_len=64) | overrides  # fmt: skip
    torch.manual_seed(0)
    return drawn(Transformer(TransformerConfig(**settings)))


def language_model(**overrides) -> DecoderOnlyLM:
    settings = dict(d_model=32, n_heads=4, n_kv_heads=2, n_layers=2, max_len=64) | overrides
    torch.manual_seed(0)
    return drawn(DecoderOnlyLM(DecoderOnlyConfig.modern(50, **settings)))


def gpt2_like(**overrides) -> DecoderOnlyLM:
    settings = dict(d_model=32, n_heads=4, n_layers=2, d_ff=64, max_len=64, norm_first=True, positional="learned",
                    feed_forward="gelu_tanh", scale_embedding=False) | overrides  # fmt: skip
    torch.manual_seed(0)
    return drawn(DecoderOnlyLM(DecoderOnlyConfig(50, **settings)))


def sources(config: TransformerConfig, rows: int = 3, length: int = 9) -> torch.Tensor:
    """Source ids with <eos> and padding at different places (row 0 unpadded)."""
    src = torch.randint(3, config.src_vocab_size, (rows, length), generator=torch.Generator().manual_seed(1))
    for row, end in enumerate(range(length, 0, -3)[:rows]):
        src[row, end - 1], src[row, end:] = config.eos_id, config.pad_id
    return src


def marian_logits(hf, model: Transformer, src: torch.Tensor, tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad():
        theirs = hf(input_ids=src, attention_mask=(src != model.config.pad_id).long(), decoder_input_ids=tgt).logits
        return model(src, tgt), theirs.float()


def same_parameters(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    """The same tensors under the same names, bit for bit, and the same ties."""
    sa, sb = a.state_dict(), b.state_dict()
    tied = lambda m: {n for n, p in m.named_parameters(remove_duplicate=False)} - {n for n, _ in m.named_parameters()}  # noqa: E731
    return sorted(sa) == sorted(sb) and all(torch.equal(sa[k], sb[k]) for k in sa) and tied(a) == tied(b)


# -- Marian ----------------------------------------------------------------------------------------

MARIAN_CASES = {
    "the paper's: interleaved sinusoids, separate vocabularies, tied output": {},
    "shared vocabulary, swish": dict(src_vocab_size=40, tgt_vocab_size=40, share_embeddings=True, activation="swish"),
    "untied output, gelu, unscaled embeddings": dict(tie_output=False, activation="gelu", scale_embedding=False),
    "Marian's halves, gelu_tanh, bos = pad": dict(sinusoid_layout="halves", activation="gelu_tanh", bos_id=0),
}


@pytest.mark.parametrize("case", MARIAN_CASES)
def test_to_marian_gives_the_courses_logits_and_comes_back_exactly(case: str) -> None:
    model = translator(**MARIAN_CASES[case])
    hf = to_marian(model)
    assert isinstance(hf, transformers.MarianMTModel) and not hf.training
    config = model.config
    src = sources(config)
    tgt = torch.randint(3, config.tgt_vocab_size, (3, 7), generator=torch.Generator().manual_seed(2))
    tgt[:, 0] = config.bos_id
    ours, theirs = marian_logits(hf, model, src, tgt)
    assert (ours - theirs).abs().max() < TOLERANCE
    back = from_marian(hf, sinusoid_layout=config.sinusoid_layout)
    assert back.config == config and same_parameters(back, model)


def test_to_marian_gives_the_courses_greedy_tokens() -> None:
    model = translator()
    config = model.config
    src = sources(config)
    expected = to_marian(model).generate(
        input_ids=src, attention_mask=(src != config.pad_id).long(), do_sample=False, num_beams=1, max_new_tokens=12,
        suppress_tokens=[config.pad_id, config.bos_id],
    )[:, 1:]  # fmt: skip  # without the start token
    ours = greedy_decode(model, src, max_len=12)
    for a, b in zip(ours.tolist(), expected.tolist(), strict=True):  # up to <eos>: after it both pad
        cut = lambda row: row[: row.index(config.eos_id) + 1] if config.eos_id in row else row  # noqa: E731
        assert cut(a) == cut(b)


def test_the_reordering_keeps_the_function_and_the_wrong_one_does_not() -> None:
    """The paper's table with the weights reordered for Marian's halves: the same logits; with the
    norms' gains left in the old order (a plausible slip) the logits change by far more than rounding."""
    model = translator()
    order = interleaved_to_halves_order(32)
    assert order[:4].tolist() == [0, 2, 4, 6] and order[16:20].tolist() == [1, 3, 5, 7]
    halves = Transformer(TransformerConfig(**(model.config.to_dict() | {"sinusoid_layout": "halves"}))).eval()
    state = reorder_features(model.state_dict(), order)
    halves.load_state_dict(state)
    src, tgt = sources(model.config), torch.tensor([[1, 5, 6, 7]] * 3)
    with torch.no_grad():
        assert (halves(src, tgt) - model(src, tgt)).abs().max() < TOLERANCE
        slip = {k: (model.state_dict()[k] if ".norm" in k else v) for k, v in state.items()}
        halves.load_state_dict(slip)
        assert (halves(src, tgt) - model(src, tgt)).abs().max() > 0.1
    with pytest.raises(ValueError, match="order must be a permutation"):
        reorder_features(state, torch.tensor([0, 0, 1]))


# -- Llama and GPT-2 --------------------------------------------------------------------------------

LLAMA_CASES = {
    "grouped heads, tied, unscaled": dict(scale_embedding=False),
    "one key head, biases, untied, theta 5e5": dict(
        n_kv_heads=1, bias=True, tie_output=False, rope_base=5e5, scale_embedding=False
    ),  # fmt: skip
}
GPT2_CASES = {
    "learned positions, gelu_tanh, tied": {},
    "relu, untied, eps 1e-6": dict(feed_forward="relu", tie_output=False, layer_norm_eps=1e-6),
}


@pytest.mark.parametrize("case", LLAMA_CASES)
def test_to_llama_gives_the_courses_logits_and_comes_back_exactly(case: str) -> None:
    lm = language_model(**LLAMA_CASES[case])
    hf = to_llama(lm)
    assert isinstance(hf, transformers.LlamaForCausalLM)
    ids = torch.randint(0, 50, (3, 17), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert (lm(ids) - hf(ids).logits).abs().max() < TOLERANCE
    back = from_llama(hf)
    assert same_parameters(back, lm)
    assert back.config == lm.config


@pytest.mark.parametrize("case", GPT2_CASES)
def test_to_gpt2_gives_the_courses_logits_and_comes_back_exactly(case: str) -> None:
    lm = gpt2_like(**GPT2_CASES[case])
    hf = to_gpt2(lm)
    assert isinstance(hf, transformers.GPT2LMHeadModel)
    ids = torch.randint(0, 50, (2, 30), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert (lm(ids) - hf(ids).logits).abs().max() < TOLERANCE
    back = from_gpt2(hf)
    assert same_parameters(back, lm) and back.config == lm.config


@pytest.mark.parametrize(
    ("build", "convert"),
    [
        pytest.param(lambda: language_model(), to_llama, id="llama-scaled-embedding-tied"),
        pytest.param(lambda: gpt2_like(scale_embedding=True), to_gpt2, id="gpt2-scaled-embedding"),
        pytest.param(lambda: gpt2_like(positional="sinusoidal", bias=False), to_gpt2, id="gpt2-sinusoids-no-biases"),
    ],
)
def test_what_the_target_lacks_is_bridged_with_the_same_logits(build, convert) -> None:
    """√D folded into the embedding (the output layer keeps E: untied), sinusoids written into GPT-2's
    position table, zero biases: the same logits, and the same greedy tokens from transformers' generate."""
    lm = build()
    hf = convert(lm)
    ids = torch.randint(3, 50, (2, 12), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert (lm(ids) - hf(ids).logits).abs().max() < TOLERANCE
    if lm.config.scale_embedding:
        assert not hf.config.tie_word_embeddings
        assert torch.equal(hf.get_input_embeddings().weight, lm.embed.weight * lm.config.d_model**0.5)
    config = lm.config
    expected = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=10,
                           suppress_tokens=[config.pad_id, config.bos_id], pad_token_id=config.pad_id)  # fmt: skip
    ours = generate(lm, ids, 10)
    for a, b in zip(ours.tolist(), expected.tolist(), strict=True):
        cut = lambda row: row[: row.index(config.eos_id) + 1] if config.eos_id in row else row  # noqa: E731
        assert cut(a) == cut(b)


def test_llama_greedy_tokens_from_transformers_generate() -> None:
    lm = language_model(scale_embedding=False)
    config = lm.config
    prompt = torch.randint(3, 50, (2, 4), generator=torch.Generator().manual_seed(5))
    expected = to_llama(lm).generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                                     max_new_tokens=20, suppress_tokens=[config.pad_id, config.bos_id],
                                     pad_token_id=config.pad_id)  # fmt: skip
    ours = generate(lm, prompt, 20)
    n = min(ours.shape[1], expected.shape[1])
    assert torch.equal(ours[:, :n], expected[:, :n])


# -- bfloat16 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "convert"),
    [(lambda: translator(), to_marian), (lambda: language_model(scale_embedding=False), to_llama),
     (lambda: gpt2_like(), to_gpt2)],
    ids=["marian", "llama", "gpt2"],
)  # fmt: skip
def test_a_bfloat16_model_is_exported_in_bfloat16_with_the_same_numbers(build, convert) -> None:
    """chapter 16's bf16 model → transformers in bfloat16: its weights bit for bit, its logits within
    bfloat16's rounding (both compute in bfloat16, in another order)."""
    model = quantize(build(), "bf16")
    hf = convert(model)
    assert {p.dtype for p in hf.parameters()} == {torch.bfloat16}
    if isinstance(model, Transformer):
        back = from_marian(hf, sinusoid_layout="interleaved")  # float32 again: bf16 numbers are exact in float32
        assert same_parameters(back, quantize(back, "bf16").float()) and all(
            torch.equal(a.float(), b)
            for a, b in zip(model.state_dict().values(), back.state_dict().values(), strict=True)
        )
        src, tgt = sources(model.config), torch.tensor([[1, 5, 6, 7]] * 3)
        ours, theirs = marian_logits(hf, model, src, tgt)
    else:
        ids = torch.randint(3, 50, (2, 12), generator=torch.Generator().manual_seed(3))
        with torch.no_grad():
            ours, theirs = model(ids).float(), hf(ids).logits.float()
    assert (ours - theirs).abs().max() < BF16_TOLERANCE


def test_int8_models_are_refused_in_one_line() -> None:
    with pytest.raises(
        ValueError, match="to_llama: transformers' layers hold float weights, and this model's are int8"
    ):
        to_llama(quantize(language_model(scale_embedding=False), "int8"))


# -- what a family cannot express ----------------------------------------------------------------------

REFUSALS = [
    (lambda: translator(norm_first=True), to_marian, "to_marian: Marian normalises after each sub-layer (post-LN)"),
    (lambda: translator(layer_norm_eps=1e-6), to_marian, "to_marian: Marian's LayerNorms have eps=1e-05"),
    (lambda: translator(d_k=4, d_v=4), to_marian, "to_marian: Marian's heads have D / H features"),
    (lambda: language_model(), to_marian, "to_marian expects the course's Transformer, got DecoderOnlyLM"),
    (lambda: language_model(norm="layernorm"), to_llama, "to_llama: Llama's norms are RMSNorm"),
    (lambda: gpt2_like(norm_first=False), to_llama, "to_llama: Llama normalises before each sub-layer (pre-LN)"),
    (
        lambda: language_model(positional="sinusoidal"),
        to_llama,
        "to_llama: Llama rotates queries and keys (positional='rope'): this model has positional='sinusoidal' "
        "(to_gpt2 takes it)",
    ),
    (lambda: language_model(feed_forward="relu"), to_llama, "to_llama: Llama's feed-forward network is SwiGLU"),
    (lambda: gpt2_like(norm_first=False), to_gpt2, "to_gpt2: GPT-2 normalises before each sub-layer"),
    (lambda: language_model(), to_gpt2, "to_gpt2: GPT-2's norms are LayerNorm"),
    (lambda: gpt2_like(positional="rope"), to_gpt2, "to_gpt2: GPT-2 adds a position table"),
    (lambda: gpt2_like(n_kv_heads=2), to_gpt2, "to_gpt2: GPT-2 has one key/value head per query head"),
    (lambda: translator(), to_gpt2, "to_gpt2 expects the course's DecoderOnlyLM, got Transformer"),
]


@pytest.mark.parametrize(("build", "convert", "message"), REFUSALS, ids=[m.split(":")[-1][:40] for *_, m in REFUSALS])
def test_what_a_family_cannot_express_is_refused_in_one_line(build, convert, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as error:
        convert(build())
    assert "\n" not in str(error.value)


def test_a_part_of_another_kind_is_refused() -> None:
    from transformer_course.rmsnorm import RMSNorm

    torch.manual_seed(0)
    model = Transformer(TransformerConfig(20, 20, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1,
                                          n_decoder_layers=1), norm=RMSNorm)  # fmt: skip
    with pytest.raises(
        ValueError, match="to_marian: Marian's norms are LayerNorm: this model's encoder.layers.0.norm1"
    ):
        to_marian(model)


# -- the small functions, against their inverses ---------------------------------------------------


def test_rope_interleaved_to_halves_undoes_chapter_15s_reordering() -> None:
    weight = torch.randn(3 * 8, 5)
    assert torch.equal(rope_interleaved_to_halves(rope_halves_to_interleaved(weight, 3), 3), weight)
    assert torch.equal(rope_halves_to_interleaved(rope_interleaved_to_halves(weight, 3), 3), weight)
    assert rope_interleaved_to_halves(torch.arange(8.0), 1).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    with pytest.raises(ValueError, match="n_heads=3 heads of an even number of rows"):
        rope_interleaved_to_halves(torch.randn(9, 2), 3)


def test_join_conv1d_undoes_split_conv1d() -> None:
    weight, bias = torch.randn(6, 12), torch.randn(12)
    joined = join_conv1d(split_conv1d(weight, bias, 3))
    assert torch.equal(joined[0], weight) and torch.equal(joined[1], bias)
