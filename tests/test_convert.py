"""Chapter 15's converters against Hugging Face transformers' own models (random weights made here):
the same logits within 1e-4, the same greedy tokens, the weights loaded strictly, bad input refused."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="pip install 'transformer-course[hub]'")

from transformer_course import (  # noqa: E402
    DecoderOnlyLM,
    Transformer,
    from_gpt2,
    from_llama,
    from_marian,
    generate,
    greedy_decode,
    marian_layer_names,
    rope_halves_to_interleaved,
    split_conv1d,
)
from transformer_course_tools.engine import ENGINE  # noqa: E402
from transformer_course_tools.models import published  # noqa: E402

TOLERANCE = 1e-4


def _every_tensor_drawn(model):
    """``model`` with every tensor random, not only the matrices: transformers starts every norm's gain
    at 1 and every bias (Marian's ``final_logits_bias`` too) at 0, where a converter that swaps two
    norms, swaps two biases or drops one gives the same logits. Marian's sinusoid tables stay."""
    with torch.no_grad():
        for name, tensor in model.named_parameters():
            if tensor.dim() == 1 and "embed_positions" not in name:
                tensor.normal_(0.0, 0.5) if name.endswith("bias") else tensor.normal_(1.0, 0.5)
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.normal_()
    return model.eval()


def _llama(drawn: bool = True, **overrides):
    settings = dict(
        vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=8,
        num_key_value_heads=2, rope_theta=5e5, tie_word_embeddings=False, max_position_embeddings=128,
        initializer_range=0.2, bos_token_id=1, eos_token_id=2,
    ) | overrides  # fmt: skip
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**settings))
    return _every_tensor_drawn(model) if drawn else model.eval()


def _gpt2(drawn: bool = True, **overrides):
    settings = dict(vocab_size=128, n_embd=64, n_head=4, n_layer=2, n_positions=96, bos_token_id=127,
                    eos_token_id=127, initializer_range=0.2) | overrides  # fmt: skip
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**settings))
    return _every_tensor_drawn(model) if drawn else model.eval()


def _marian(drawn: bool = True, **overrides):
    """A MarianMTModel as OPUS-MT's: swish, √D-scaled shared embeddings, the decoder starting from <pad>."""
    settings = dict(
        vocab_size=101, decoder_vocab_size=101, d_model=64, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96, decoder_ffn_dim=96,
        activation_function="swish", scale_embedding=True, pad_token_id=100, decoder_start_token_id=100,
        eos_token_id=0, forced_eos_token_id=None, max_position_embeddings=128, init_std=0.2,
    ) | overrides  # fmt: skip
    torch.manual_seed(0)
    model = transformers.MarianMTModel(transformers.MarianConfig(**settings))
    return _every_tensor_drawn(model) if drawn else model.eval()


def _ids(vocab: int, shape: tuple[int, int], low: int = 3, seed: int = 1) -> torch.Tensor:
    return torch.randint(low, vocab - 1, shape, generator=torch.Generator().manual_seed(seed))


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: _llama(), id="llama-gqa-theta5e5-untied"),
        pytest.param(
            lambda: _llama(
                num_key_value_heads=8, tie_word_embeddings=True, bos_token_id=0, eos_token_id=0, rope_theta=1e5
            ),
            id="smollm-tied-bos=eos",
        ),  # fmt: skip
        pytest.param(lambda: _llama(num_key_value_heads=1, attention_bias=True), id="llama-mqa-biases"),
    ],
)
def test_from_llama_gives_transformers_logits(build) -> None:
    hf = build()
    ours = from_llama(hf)
    assert isinstance(ours, DecoderOnlyLM) and not ours.training
    assert ours.config.tie_output == hf.config.tie_word_embeddings
    ids = _ids(hf.config.vocab_size, (3, 17))
    with torch.no_grad():
        assert _max_diff(ours(ids), hf(ids).logits) < TOLERANCE


def test_from_gpt2_gives_transformers_logits() -> None:
    hf = _gpt2()
    ours = from_gpt2(hf)
    assert ours.config.positional == "learned" and ours.config.feed_forward == "gelu_tanh"
    ids = _ids(128, (2, 40))
    with torch.no_grad():
        assert _max_diff(ours(ids), hf(ids).logits) < TOLERANCE


def test_from_marian_gives_transformers_logits_with_padded_sources() -> None:
    hf = _marian()
    ours = from_marian(hf)
    assert isinstance(ours, Transformer) and ours.config.bos_id == ours.config.pad_id == 100
    src = _ids(101, (3, 12), low=1)
    src[:, -1] = 0  # <eos> ends each source, then padding
    src[1, 7:], src[1, 6] = 100, 0
    src[2, 4:], src[2, 3] = 100, 0
    tgt = torch.cat([torch.full((3, 1), 100), _ids(101, (3, 9), low=1, seed=2)], dim=1)  # starts with <pad>
    with torch.no_grad():
        theirs = hf(input_ids=src, attention_mask=(src != 100).long(), decoder_input_ids=tgt).logits
        assert _max_diff(ours(src, tgt), theirs) < TOLERANCE


def test_from_marian_at_opus_mt_en_de_shape() -> None:
    """The real translator's published shape (58,101 tokens, D = 512, 6 + 6 layers, 8 heads), random weights."""
    c = published.config(published.OPUS_MT_EN_DE)
    hf = _marian(**c, init_std=0.02)
    ours = from_marian(hf)
    # HF keeps the two sinusoid tables as frozen parameters and final_logits_bias as a buffer; ours, a
    # formula (no parameter) and the output layer's bias
    tables = 2 * c["max_position_embeddings"] * c["d_model"]
    assert ours.num_parameters() == sum(p.numel() for p in hf.parameters()) - tables + c["vocab_size"]
    vocab, pad = c["vocab_size"], c["pad_token_id"]
    src = _ids(vocab, (2, 24), low=1)
    src[1, 20:] = pad
    tgt = torch.cat([torch.full((2, 1), pad), _ids(vocab, (2, 7), low=1, seed=3)], dim=1)
    with torch.no_grad():
        theirs = hf(input_ids=src, attention_mask=(src != pad).long(), decoder_input_ids=tgt).logits
        assert _max_diff(ours(src, tgt), theirs) < TOLERANCE


def _same_until_eos(ours: torch.Tensor, theirs: torch.Tensor, eos: int) -> None:
    """Row by row, the tokens up to and including the first <eos> (or all of them) are equal."""
    for a, b in zip(ours.tolist(), theirs.tolist(), strict=True):
        a, b = (row[: row.index(eos) + 1] if eos in row else row for row in (a, b))
        n = min(len(a), len(b))
        assert a[:n] == b[:n] and (eos in a) == (eos in b)


@pytest.mark.parametrize("family", ["llama", "smollm", "gpt2"])
def test_generate_gives_transformers_greedy_tokens(family: str) -> None:
    hf = {"llama": _llama, "gpt2": _gpt2, "smollm": lambda: _llama(tie_word_embeddings=True, bos_token_id=0,
                                                                   eos_token_id=0)}[family]()  # fmt: skip
    ours = (from_gpt2 if family == "gpt2" else from_llama)(hf)
    config = ours.config
    banned = sorted({config.pad_id, config.bos_id} - {config.eos_id})  # what the course never generates
    prompt = _ids(128, (2, 5))
    expected = hf.generate(
        prompt, attention_mask=torch.ones_like(prompt), do_sample=False, num_beams=1, max_new_tokens=20,
        pad_token_id=config.pad_id, suppress_tokens=banned or None,
    )  # fmt: skip
    for use_cache in (True, False):
        _same_until_eos(generate(ours, prompt, 20, use_cache=use_cache), expected, config.eos_id)
    _same_until_eos(generate(ours, prompt, 20, path=ENGINE), expected, config.eos_id)  # the inference engine too


def test_greedy_decode_gives_marians_greedy_tokens() -> None:
    hf = _marian()
    ours = from_marian(hf)
    src = _ids(101, (2, 10), low=1)
    src[:, -1] = 0
    src[1, 6:], src[1, 5] = 100, 0
    expected = hf.generate(
        input_ids=src,
        attention_mask=(src != 100).long(),
        do_sample=False,
        num_beams=1,
        max_new_tokens=15,
        suppress_tokens=[100],
    )[:, 1:]  # without the start token
    for use_cache in (True, False):
        _same_until_eos(greedy_decode(ours, src, max_len=15, use_cache=use_cache), expected, 0)
    _same_until_eos(greedy_decode(ours, src, max_len=15, path=ENGINE), expected, 0)  # the inference engine too


# -- mistakes a strict load accepts: only the logits show them -------------------------------------


def _swap(state: dict, a: str, b: str, parts: tuple[str, ...] = ("weight", "bias")) -> None:
    """Exchange the tensors of two modules of the same shapes (their weights, and biases if any)."""
    for t in parts:
        if f"{a}.{t}" in state:
            state[f"{a}.{t}"], state[f"{b}.{t}"] = state[f"{b}.{t}"], state[f"{a}.{t}"]


def _drop_ffn_biases(state: dict, hf) -> None:  # noqa: ARG001
    for name in [n for n in state if ".ffn.linear" in n and n.endswith("bias")]:
        state[name] = torch.zeros_like(state[name])


def _c_attn_bias_interleaved(state: dict, hf) -> None:
    """q, k and v's biases taken as every third value of c_attn's, not as its three blocks."""
    bias = hf.transformer.h[0].attn.c_attn.bias
    for i, part in enumerate("qkv"):
        state[f"layers.0.self_attn.w_{part}.bias"] = bias[i::3]


def _rotary_biases_not_reordered(state: dict, hf) -> None:
    """W^Q's and W^K's rows reordered for our rotary pairs, their biases left in the halves layout."""
    attn = hf.model.layers[0].self_attn
    state["layers.0.self_attn.w_q.bias"], state["layers.0.self_attn.w_k.bias"] = attn.q_proj.bias, attn.k_proj.bias


# each mistake: the family, and what it does to the state the converter loads (our names)
MISTAKES = {
    "marian-decoder-norms-swapped": ("marian", lambda s, hf: _swap(s, "decoder.layers.0.norm2", "decoder.layers.0.norm3")),
    "marian-encoder-norms-swapped": ("marian", lambda s, hf: _swap(s, "encoder.layers.1.norm1", "encoder.layers.1.norm2")),
    "marian-q-k-biases-swapped": ("marian", lambda s, hf: _swap(s, "encoder.layers.0.self_attn.w_q", "encoder.layers.0.self_attn.w_k", ("bias",))),
    "marian-ffn-biases-dropped": ("marian", _drop_ffn_biases),
    "marian-final-logits-bias-forgotten": ("marian", lambda s, hf: s.update({"output.bias": torch.zeros_like(s["output.bias"])})),
    "gpt2-norms-swapped": ("gpt2", lambda s, hf: _swap(s, "layers.1.norm1", "layers.1.norm2")),
    "gpt2-ffn-biases-dropped": ("gpt2", _drop_ffn_biases),
    "gpt2-c-attn-bias-split-wrongly": ("gpt2", _c_attn_bias_interleaved),
    "llama-norms-swapped": ("llama", lambda s, hf: _swap(s, "layers.0.norm1", "layers.0.norm2")),
    "llama-rotary-biases-not-reordered": ("llama", _rotary_biases_not_reordered),
}  # fmt: skip


def _relative_difference(family: str, hf, ours) -> float:
    """Largest |ours − transformers'| over the logits of a few inputs, relative to the largest logit."""
    if family == "marian":
        src = _ids(101, (2, 8), low=1)
        src[1, 5:] = 100
        tgt = torch.cat([torch.full((2, 1), 100), _ids(101, (2, 6), low=1, seed=2)], dim=1)
        mine = ours(src, tgt)
        theirs = hf(input_ids=src, attention_mask=(src != 100).long(), decoder_input_ids=tgt).logits
    else:
        ids = _ids(128, (2, 12))
        mine, theirs = ours(ids), hf(ids).logits
    return (_max_diff(mine, theirs) / theirs.abs().max()).item()


@pytest.mark.parametrize("mistake", MISTAKES)
def test_each_mistake_a_strict_load_accepts_changes_the_logits(mistake: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With every tensor drawn, a swapped norm or bias, a dropped bias, a bias in the wrong order
    changes the logits by far more than rounding; on transformers' own start (gains 1, biases 0)
    the same mistake gives the same logits, which is why the models here draw every tensor."""
    from transformer_course import convert

    family, mutate = MISTAKES[mistake]
    build, converter = {"marian": (_marian, from_marian), "gpt2": (_gpt2, from_gpt2),
                        "llama": (lambda drawn: _llama(drawn, attention_bias=True), from_llama)}[family]  # fmt: skip
    loaded = convert._loaded
    differences = {}
    for drawn in (True, False):
        hf = build(drawn)

        def load_with_the_mistake(model, state, hf=hf):  # noqa: ANN001, ANN202
            mutate(state, hf)
            return loaded(model, state)

        monkeypatch.setattr(convert, "_loaded", load_with_the_mistake)
        with torch.no_grad():
            differences[drawn] = _relative_difference(family, hf, converter(hf))
    assert differences[True] > 1e-2, f"{mistake}: the logits differ by only {differences[True]:.1e} of the largest"
    assert differences[False] < 1e-5  # invisible where every gain is 1 and every bias 0


def test_the_converters_name_what_they_were_given() -> None:
    with pytest.raises(ValueError, match="expected a loaded transformers LlamaForCausalLM, got GPT2LMHeadModel"):
        from_llama(_gpt2())
    with pytest.raises(ValueError, match="expected a loaded transformers MarianMTModel, got Linear"):
        from_marian(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="rope scaling"):
        from_llama(_llama(rope_scaling={"type": "linear", "factor": 2.0}))


@pytest.mark.parametrize(
    ("build", "convert_with", "expected"),
    [
        (lambda: transformers.MarianModel(_marian().config), from_marian, "MarianMTModel, got MarianModel"),
        (lambda: _llama().model, from_llama, "LlamaForCausalLM, got LlamaModel"),
        (lambda: transformers.LlamaForSequenceClassification(_llama().config), from_llama,
         "LlamaForCausalLM, got LlamaForSequenceClassification"),
        (lambda: _gpt2().transformer, from_gpt2, "GPT2LMHeadModel, got GPT2Model"),
    ],
)  # fmt: skip
def test_a_model_of_the_right_family_but_another_class_is_named_in_one_line(build, convert_with, expected: str) -> None:
    """The model without its language-model head, or with a classification head: one line naming the class
    to load, not an AttributeError from deep inside the converter."""
    expected = f"expected a loaded transformers {expected}: load the checkpoint with"
    with pytest.raises(ValueError, match=expected) as error:
        convert_with(build())
    assert "\n" not in str(error.value)


def test_several_eos_ids_are_refused_in_one_line_and_one_is_read() -> None:
    """Llama 3's instruct checkpoints end a text at any of three ids; our generate stops at one."""
    with pytest.raises(ValueError, match=r"eos_token_id lists several ids \[2, 5\], and the course's generate stops"):
        from_llama(_llama(eos_token_id=[2, 5]))
    assert from_llama(_llama(eos_token_id=[2])).config.eos_id == 2
    assert from_llama(_llama(eos_token_id=[2, 2])).config.eos_id == 2


@pytest.mark.parametrize(("pad", "padding_idx"), [(None, None), (0, 0)])
def test_the_embedding_keeps_a_padding_row_only_where_padding_is_its_own_id(pad, padding_idx) -> None:
    """Without a padding token, pad = eos: <eos> must still learn (its row gets a gradient)."""
    ours = from_llama(_llama(pad_token_id=pad))
    assert ours.embed.embedding.padding_idx == padding_idx
    ours.train()
    ours(torch.tensor([[3, 2, 4, 0]])).sum().backward()
    grad = ours.embed.embedding.weight.grad
    assert grad[2].abs().sum() > 0 and (grad[0].abs().sum() > 0) == (padding_idx is None)


def test_the_original_is_left_untouched_and_ours_owns_its_weights() -> None:
    hf = _llama()
    before = {k: v.clone() for k, v in hf.state_dict().items()}
    ours = from_llama(hf)
    with torch.no_grad():
        for p in ours.parameters():
            p.add_(1.0)
    assert all(torch.equal(before[k], v) for k, v in hf.state_dict().items())


# -- the three exercises' functions, against direct formulas ----------------------------------------


def test_rope_halves_to_interleaved_turns_rotate_half_into_pairs() -> None:
    """A query rotated in HF's layout (rotate_half) and ours (pairs 2i, 2i+1) gives the same scores."""
    from transformer_course.rotary import apply_rope

    heads, d, model = 3, 8, 12
    w_q, w_k = torch.randn(heads * d, model), torch.randn(heads * d, model)
    x = torch.randn(5, model)
    positions = torch.arange(5)

    def rotate_half_layout(w: torch.Tensor) -> torch.Tensor:  # (T, H, d), pairs (i, i + d/2)
        h = (x @ w.T).view(5, heads, d)
        inv = 10000.0 ** (-torch.arange(0, d, 2).float() / d)
        angle = torch.cat([positions[:, None] * inv] * 2, dim=-1)[:, None]  # (T, 1, d)
        rotated = torch.cat([-h[..., d // 2 :], h[..., : d // 2]], dim=-1)
        return h * angle.cos() + rotated * angle.sin()

    theirs = torch.einsum("thd,shd->hts", rotate_half_layout(w_q), rotate_half_layout(w_k))

    def ours_layout(w: torch.Tensor) -> torch.Tensor:
        h = (x @ rope_halves_to_interleaved(w, heads).T).view(5, heads, d).transpose(0, 1)  # (H, T, d)
        return apply_rope(h, positions)

    assert torch.allclose(ours_layout(w_q) @ ours_layout(w_k).transpose(1, 2), theirs, atol=1e-4)
    with pytest.raises(ValueError, match="n_heads=3 heads of an even number of rows"):
        rope_halves_to_interleaved(torch.randn(9, 4), 3)


def test_split_conv1d_gives_linear_layers() -> None:
    weight, bias, x = torch.randn(6, 3 * 4), torch.randn(3 * 4), torch.randn(2, 6)
    parts = split_conv1d(weight, bias, 3)
    together = torch.cat([torch.nn.functional.linear(x, w, b) for w, b in parts], dim=-1)
    assert torch.allclose(together, x @ weight + bias, atol=1e-6)
    with pytest.raises(ValueError, match="weight must be"):
        split_conv1d(weight, bias[:5], 3)


@pytest.mark.parametrize("decoder", [False, True])
def test_marian_layer_names_cover_both_layers(decoder: bool) -> None:
    from transformer_course.decoder import DecoderLayer
    from transformer_course.encoder import EncoderLayer

    hf = _marian()
    theirs = (hf.model.decoder if decoder else hf.model.encoder).layers[0].state_dict()
    ours = (DecoderLayer if decoder else EncoderLayer)(64, 4, 96).state_dict()
    names = marian_layer_names(decoder)
    assert sorted(names) == sorted(ours) and sorted(names.values()) == sorted(theirs)
    assert all(ours[k].shape == theirs[v].shape for k, v in names.items())


def test_on_another_cpus_arithmetic() -> None:
    """The same comparisons on ATen's kernels without vector instructions, one thread."""
    script = textwrap.dedent(
        """
        import torch
        from tests import test_convert as t
        t.test_from_marian_gives_transformers_logits_with_padded_sources()
        t.test_from_gpt2_gives_transformers_logits()
        t.test_from_llama_gives_transformers_logits(lambda: t._llama())
        t.test_generate_gives_transformers_greedy_tokens("smollm")
        print("ok")
        """
    )
    env = os.environ | {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=root, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]


# -- the model's new choices, each against its formula ----------------------------------------------


def test_the_halves_layout_holds_the_papers_numbers_in_another_order() -> None:
    from transformer_course.positional import PositionalEncoding, sinusoidal_positional_encoding

    table = sinusoidal_positional_encoding(20, 8)
    halves = PositionalEncoding(8, 20, layout="halves").pe
    assert torch.equal(halves[:, :4], table[:, 0::2]) and torch.equal(halves[:, 4:], table[:, 1::2])
    with pytest.raises(ValueError, match="layout must be one of 'interleaved', 'halves', got 'split'"):
        PositionalEncoding(8, 20, layout="split")


@pytest.mark.parametrize(
    ("name", "formula"),
    [
        ("relu", lambda h: h.clamp(min=0)),
        ("swish", lambda h: h * torch.sigmoid(h)),
        ("gelu_tanh", lambda h: 0.5 * h * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (h + 0.044715 * h**3)))),
        ("gelu", lambda h: 0.5 * h * (1 + torch.erf(h / 2**0.5))),
    ],
)
def test_the_feed_forward_networks_activation(name: str, formula) -> None:
    from transformer_course import PositionwiseFeedForward

    ffn = PositionwiseFeedForward(6, 10, activation=name, bias=False)
    assert ffn.linear1.bias is None and ffn.linear2.bias is None
    x = torch.randn(2, 3, 6)
    assert torch.allclose(ffn(x), formula(x @ ffn.linear1.weight.T) @ ffn.linear2.weight.T, atol=1e-5)


def test_unscaled_embeddings_and_bad_choices_named() -> None:
    from transformer_course import DecoderOnlyConfig, TokenEmbedding, TransformerConfig, UnscaledEmbedding

    scaled, plain = TokenEmbedding(10, 16), UnscaledEmbedding(10, 16)
    plain.load_state_dict(scaled.state_dict())
    ids = torch.tensor([[1, 2, 3]])
    assert torch.allclose(scaled(ids), 4.0 * plain(ids))
    with pytest.raises(ValueError, match="activation must be one of 'relu', 'gelu', 'gelu_tanh', 'swish', got 'tanh'"):
        TransformerConfig(10, 10, activation="tanh")
    with pytest.raises(ValueError, match="eos_id and pad_id must differ"):
        TransformerConfig(10, 10, eos_id=0)
    lm = DecoderOnlyLM(DecoderOnlyConfig(10, d_model=16, n_heads=2, tie_output=False, bias=False))
    assert lm.output.weight is not lm.embed.weight and lm.layers[0].self_attn.w_q.bias is None


def test_a_decoder_that_starts_from_pad_sees_its_start_token() -> None:
    """bos = pad (Marian): position 0 is the start token, never hidden as padding; the cached
    and uncached paths agree."""
    from transformer_course import TransformerConfig
    from transformer_course.cache import DecoderCache

    torch.manual_seed(0)
    config = TransformerConfig(20, 20, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1,
                               dropout=0.0, pad_id=0, bos_id=0, eos_id=2)  # fmt: skip
    model = Transformer(config).eval()
    src, tgt = torch.tensor([[5, 6, 2]]), torch.tensor([[0, 7, 8]])
    with torch.no_grad():
        full = model(src, tgt)
        memory = model.encode(src)
        cache = DecoderCache(model)
        stepped = torch.cat([cache.decode(tgt[:, i : i + 1], memory) for i in range(3)], dim=1)
    assert torch.isfinite(full).all() and torch.allclose(full, stepped, atol=1e-5)
