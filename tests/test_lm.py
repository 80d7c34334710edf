"""Chapter 13's decoder-only language model against independent references: a stack of PyTorch's
own ``nn.TransformerEncoderLayer`` with a causal mask, the closed-form sinusoids, and brute-force
generation (argmax over a full forward at every step)."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from functools import partial

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer_course.batching import batch_stream
from transformer_course.encoder import EncoderLayer
from transformer_course.feedforward import PositionwiseFeedForward
from transformer_course.grouped import GroupedQueryAttention
from transformer_course.lm import (
    DecoderOnlyConfig,
    DecoderOnlyLM,
    EmbeddingDropout,
    WithoutSource,
    causal_rows,
    generate,
    lm_examples,
)
from transformer_course.multihead import MultiHeadAttention
from transformer_course.positional import PositionalEncoding
from transformer_course.recipe import make_adamw, warmup_cosine_scheduler
from transformer_course.rmsnorm import RMSNorm
from transformer_course.rotary import RotaryAttention
from transformer_course.swiglu import SwiGLU
from transformer_course.training import FitOptions, fit
from transformer_course.vocab import Vocab

# small odd-ish sizes: V=29, D=16, H=4 (head size 4, even for RoPE), d_ff=24, 2 layers, T=10
V, D, H, D_FF, LAYERS, T = 29, 16, 4, 24, 2, 10
PAD, BOS, EOS = 0, 1, 2
ATOL = 1e-5  # float32


def _config(**fields) -> DecoderOnlyConfig:
    sizes = dict(vocab_size=V, d_model=D, n_heads=H, n_layers=LAYERS, d_ff=D_FF, max_len=32, dropout=0.0)
    return DecoderOnlyConfig(**(sizes | fields))


def _model(config: DecoderOnlyConfig, seed: int = 0) -> DecoderOnlyLM:
    """A model with random norm gains and shifts (all ones and zeros would hide a missing norm)."""
    torch.manual_seed(seed)
    model = DecoderOnlyLM(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.copy_(torch.empty_like(p).uniform_(0.5, 1.5) if name.endswith("weight") else torch.randn_like(p) / 2)
    return model.eval()


def _tokens(batch: int = 2, length: int = T, seed: int = 1) -> torch.Tensor:
    """Random ids without <pad>, <bos>, <eos> (so no row means "finished")."""
    return torch.randint(3, V, (batch, length), generator=torch.Generator().manual_seed(seed))  # (B, T)


# Every combination of the four choices (16), each with one key/value head per query head and with
# grouped heads (H/Hkv = 2), and the modern block with a single key/value head (multi-query).
CHOICES = list(itertools.product([False, True], ["layernorm", "rmsnorm"], ["sinusoidal", "rope"], ["relu", "swiglu"]))
CONFIGS = [
    dict(norm_first=nf, norm=norm, positional=pos, feed_forward=ff, n_kv_heads=kv)
    for (nf, norm, pos, ff), kv in itertools.product(CHOICES, [None, 2])
] + [dict(norm_first=True, norm="rmsnorm", positional="rope", feed_forward="swiglu", n_kv_heads=1)]


def _name(fields: dict) -> str:
    ln = "pre" if fields["norm_first"] else "post"
    return f"{ln}-{fields['norm']}-{fields['positional']}-{fields['feed_forward']}-kv{fields['n_kv_heads'] or H}"


# -- the 2017 block equals PyTorch's encoder layers with a causal mask -------------------------------


def _sinusoids(length: int, d_model: int) -> torch.Tensor:
    """PE(p, 2i) = sin(p / 10000^(2i/D)), PE(p, 2i+1) = cos(p / 10000^(2i/D)) (paper §3.5), computed in float64."""
    table = torch.zeros(length, d_model, dtype=torch.float64)
    for p in range(length):
        for i in range(0, d_model, 2):
            table[p, i] = math.sin(p / 10000 ** (i / d_model))
            table[p, i + 1] = math.cos(p / 10000 ** (i / d_model))
    return table.float()


def _torch_reference(model: DecoderOnlyLM) -> nn.ModuleList:
    """PyTorch's encoder layers carrying the weights of ``model``'s blocks."""
    c = model.config
    layers = nn.ModuleList(
        nn.TransformerEncoderLayer(c.d_model, c.n_heads, c.d_ff, 0.0, batch_first=True, norm_first=c.norm_first)
        for _ in range(c.n_layers)
    )
    with torch.no_grad():
        for ours, theirs in zip(model.layers, layers, strict=True):
            attn = ours.self_attn
            theirs.self_attn.in_proj_weight.copy_(torch.cat([attn.w_q.weight, attn.w_k.weight, attn.w_v.weight]))
            theirs.self_attn.in_proj_bias.copy_(torch.cat([attn.w_q.bias, attn.w_k.bias, attn.w_v.bias]))
            theirs.self_attn.out_proj.load_state_dict(attn.w_o.state_dict())
            for name in ("linear1", "linear2"):
                getattr(theirs, name).load_state_dict(getattr(ours.ffn, name).state_dict())
            for name in ("norm1", "norm2"):
                getattr(theirs, name).load_state_dict(getattr(ours, name).state_dict())
    return layers


def _reference_logits(model: DecoderOnlyLM, tokens: torch.Tensor, layers: nn.ModuleList) -> torch.Tensor:
    """Embedding × √D + sinusoids → PyTorch's layers (causal) → final LayerNorm (pre-LN) → h Eᵀ."""
    c, length = model.config, tokens.shape[1]
    embedding = model.embed.weight  # (V, D), the output matrix too
    x = F.embedding(tokens, embedding) * math.sqrt(c.d_model) + _sinusoids(length, c.d_model)  # (B, T, D)
    future = torch.ones(length, length, dtype=torch.bool).triu(1)  # PyTorch's convention: True = hidden
    for layer in layers:
        x = layer(x, src_mask=future)
    if c.norm_first:
        x = F.layer_norm(x, (c.d_model,), model.norm.weight, model.norm.bias, c.layer_norm_eps)
    return x @ embedding.T  # (B, T, V)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("torch_mode", ["train", "eval"])
def test_the_2017_block_equals_pytorchs_encoder_layers_with_a_causal_mask(norm_first: bool, torch_mode: str) -> None:
    model = _model(_config(norm_first=norm_first))
    reference = _torch_reference(model).train(torch_mode == "train")  # eval + no_grad: PyTorch's fused path
    tokens = _tokens(3)
    with torch.no_grad():
        expected = _reference_logits(model, tokens, reference)
        torch.testing.assert_close(model(tokens), expected, atol=ATOL, rtol=ATOL)


def test_the_reference_fails_a_model_without_the_causal_mask() -> None:
    """The comparison above can fail: PyTorch's stack without a mask differs from ours."""
    model = _model(_config())
    reference, tokens = _torch_reference(model), _tokens()
    with torch.no_grad():
        x = F.embedding(tokens, model.embed.weight) * math.sqrt(D) + _sinusoids(T, D)
        for layer in reference:
            x = layer(x)
        assert not torch.allclose(model(tokens), x @ model.embed.weight.T, atol=1e-3)


# -- every choice: runs, causal, cached forward = full forward ----------------------------------------


@pytest.mark.parametrize("fields", CONFIGS, ids=_name)
def test_every_choice_runs_and_is_causal(fields: dict) -> None:
    model, tokens = _model(_config(**fields)), _tokens()
    with torch.no_grad():
        logits = model(tokens)
        assert logits.shape == (2, T, V) and logits.isfinite().all()
        for t in (0, 4, T - 1):
            changed = tokens.clone()
            changed[:, t] = (changed[:, t] + 5 - 3) % (V - 3) + 3  # another ordinary token
            other = model(changed)
            torch.testing.assert_close(other[:, :t], logits[:, :t], atol=ATOL, rtol=0)  # the past is untouched
            assert (other[:, t] - logits[:, t]).abs().max() > 1e-3  # the changed position itself does change


@pytest.mark.parametrize("grad", [False, True], ids=["no-grad", "autograd"])
@pytest.mark.parametrize("fields", CONFIGS, ids=_name)
def test_a_cached_forward_equals_the_full_forward(fields: dict, grad: bool) -> None:
    """A prompt chunk, then one token at a time, then another chunk: the logits of the full text."""
    model, tokens = _model(_config(**fields)), _tokens()
    with torch.set_grad_enabled(grad):
        full = model(tokens)
        cache = model.new_cache()
        pieces = [model(tokens[:, :4], cache)]  # positions 0…3
        pieces += [model(tokens[:, t : t + 1], cache) for t in range(4, 7)]  # 4, 5, 6 one by one
        pieces.append(model(tokens[:, 7:], cache))  # 7…9
    assert [len(layer_cache) for layer_cache in cache] == [T] * LAYERS
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=ATOL, rtol=ATOL)


@pytest.mark.parametrize("fields", CONFIGS, ids=_name)
def test_every_choice_builds_its_parts(fields: dict) -> None:
    model = _model(_config(**fields))
    kv = fields["n_kv_heads"] or H
    norm = RMSNorm if fields["norm"] == "rmsnorm" else nn.LayerNorm
    attention = RotaryAttention if fields["positional"] == "rope" else GroupedQueryAttention
    feed_forward = SwiGLU if fields["feed_forward"] == "swiglu" else PositionwiseFeedForward
    for block in model.layers:
        assert type(block.self_attn) is attention and block.norm_first == fields["norm_first"]
        assert block.self_attn.n_kv_heads == kv and block.self_attn.w_k.out_features == kv * D // H
        assert type(block.ffn) is feed_forward and type(block.norm1) is norm and type(block.norm2) is norm
        assert block.norm1.eps == model.config.layer_norm_eps
    assert type(model.norm) is (norm if fields["norm_first"] else nn.Identity)
    assert type(model.positional) is (EmbeddingDropout if fields["positional"] == "rope" else PositionalEncoding)


def test_an_encoder_layer_builds_the_attention_part_it_is_given() -> None:
    layer = EncoderLayer(D, H, D_FF, attention=partial(RotaryAttention, n_kv_heads=2, base=500.0))
    assert type(layer.self_attn) is RotaryAttention and layer.self_attn.n_kv_heads == 2 and layer.self_attn.base == 500
    assert type(EncoderLayer(D, H, D_FF).self_attn) is MultiHeadAttention
    with pytest.raises(ValueError, match="attention must be a class or a function that builds the module"):
        EncoderLayer(D, H, D_FF, attention=MultiHeadAttention(D, H))


def test_causal_rows_are_the_last_rows_of_the_causal_mask() -> None:
    full = torch.ones(7, 7, dtype=torch.bool).tril()
    assert torch.equal(causal_rows(0, 7), full)
    assert torch.equal(causal_rows(4, 3), full[4:])
    assert torch.equal(causal_rows(6, 1), full[6:])


def test_the_model_rejects_a_cache_of_another_depth_and_texts_past_max_len() -> None:
    model = _model(_config(max_len=12, positional="rope"))  # no table of positions to stop it
    with pytest.raises(ValueError, match="cache must hold one KVCache per layer"):
        model(_tokens(), model.new_cache()[:1])
    cache = model.new_cache()
    model(_tokens(length=10), cache)
    with pytest.raises(ValueError, match="max_len=12"):
        model(_tokens(length=3), cache)
    with pytest.raises(ValueError, match="tokens must have shape"):
        model(torch.tensor([3, 4, 5]))
    with pytest.raises(ValueError, match=f"tokens contains id {V}"):
        model(torch.tensor([[3, V]]))


# -- tied embedding and parameter count ----------------------------------------------------------------


@pytest.mark.parametrize("modern", [False, True], ids=["2017", "modern+GQA"])
def test_the_output_layer_is_the_embedding_matrix_counted_once(modern: bool) -> None:
    config = DecoderOnlyConfig.modern(V, d_model=D, n_heads=H, n_kv_heads=2) if modern else _config()
    model = DecoderOnlyLM(config)
    assert model.output.weight is model.embed.weight and model.output.bias is None
    assert model.num_parameters() == sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    d_k, kv = D // H, config.n_kv_heads or H
    if modern:  # W^Q, W^K, W^V, W^O with biases; SwiGLU: 3 matrices; RMSNorm: a gain
        attention = D * H * d_k + 2 * D * kv * d_k + H * d_k * D + (H * d_k + 2 * kv * d_k + D)
        block = attention + 3 * D * config.d_ff + 2 * D
        final = D
    else:  # ReLU network with biases; LayerNorm: gain and shift; post-LN has no final norm
        attention = 4 * D * D + 4 * D
        block = attention + 2 * D * config.d_ff + config.d_ff + D + 4 * D
        final = 0
    assert model.num_parameters() == V * D + LAYERS * block + final
    logits = model.eval()(_tokens())
    grads = torch.autograd.grad(logits.sum(), model.embed.weight)
    assert grads[0].abs().sum() > 0  # one matrix receives both the lookup's and the output's gradient


# -- generate ---------------------------------------------------------------------------------------


def _brute_greedy(model: DecoderOnlyLM, prompt: torch.Tensor, max_new_tokens: int) -> torch.Tensor:
    """Greedy decoding with no cache and no shortcut: a full forward of the whole text per token,
    <pad> and <bos> forbidden, <pad> after a row's <eos>, stop when every row has ended."""
    c, tokens = model.config, prompt
    finished = torch.zeros(prompt.shape[0], dtype=torch.bool)
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(tokens)[:, -1].clone()  # (B, V)
            logits[:, [c.pad_id, c.bos_id]] = -math.inf
            chosen = torch.where(finished, c.pad_id, logits.argmax(-1))  # (B,)
            finished = finished | (chosen == c.eos_id)
            tokens = torch.cat([tokens, chosen[:, None]], dim=1)
            if finished.all():
                break
    return tokens


GENERATION_CONFIGS = [
    dict(),  # the 2017 block
    dict(norm_first=True, norm="rmsnorm", positional="rope", feed_forward="swiglu"),
    dict(norm_first=True, norm="rmsnorm", positional="rope", feed_forward="swiglu", n_kv_heads=2),
    dict(positional="rope", n_kv_heads=1),  # post-LN, RoPE, multi-query
    dict(n_kv_heads=2),  # sinusoids, grouped heads
]


@pytest.mark.parametrize(
    "fields", GENERATION_CONFIGS, ids=lambda f: "-".join(f"{k}={v}" for k, v in f.items()) or "2017"
)
def test_greedy_generation_equals_a_brute_loop_and_the_cache_changes_nothing(fields: dict) -> None:
    model, prompt = _model(_config(**fields)), _tokens(3, 4)
    expected = _brute_greedy(model, prompt, 12)
    assert torch.equal(generate(model, prompt, 12), expected)
    assert torch.equal(generate(model, prompt, 12, use_cache=False), expected)


@pytest.mark.parametrize(
    "fields", GENERATION_CONFIGS, ids=lambda f: "-".join(f"{k}={v}" for k, v in f.items()) or "2017"
)
@pytest.mark.parametrize(
    "filters", [dict(temperature=1.0), dict(temperature=0.7, top_k=5), dict(temperature=1.3, top_p=0.8)]
)
def test_sampling_with_a_seeded_generator_is_the_same_with_and_without_the_cache(fields: dict, filters: dict) -> None:
    model, prompt = _model(_config(**fields)), _tokens(3, 4)
    cached = generate(model, prompt, 12, generator=torch.Generator().manual_seed(7), **filters)
    uncached = generate(model, prompt, 12, use_cache=False, generator=torch.Generator().manual_seed(7), **filters)
    assert torch.equal(cached, uncached)
    again = generate(model, prompt, 12, generator=torch.Generator().manual_seed(8), **filters)
    assert not torch.equal(cached, again), "another seed, another text (the draws are really random)"
    assert torch.equal(cached[:, :4], prompt)


class _Pushed(DecoderOnlyLM):
    """A model whose logits are pushed: ``boost`` added to some ids everywhere, and ``<eos>`` made
    the choice right after the id ``trigger`` was read (so a row ends one token after it)."""

    def __init__(self, config: DecoderOnlyConfig, boost: dict[int, float], trigger: int | None = None) -> None:
        super().__init__(config)
        self.boost, self.trigger = boost, trigger

    def forward(self, tokens, cache=None):  # noqa: ANN001, ANN201 - DecoderOnlyLM's signature
        logits = super().forward(tokens, cache).clone()  # (B, T, V)
        for token_id, amount in self.boost.items():
            logits[..., token_id] += amount
        if self.trigger is not None:
            logits[..., self.config.eos_id] += torch.where(tokens == self.trigger, 1e4, -1e4)
        return logits


@pytest.mark.parametrize("use_cache", [True, False])
def test_eos_ends_a_row_the_others_go_on_and_finished_rows_get_padding(use_cache: bool) -> None:
    torch.manual_seed(0)
    trigger = 5
    model = _Pushed(_config(), boost={trigger: -1e4}, trigger=trigger).eval()  # the trigger is never generated
    prompt = torch.tensor([[BOS, 7, trigger], [BOS, 7, 8]])  # row 0 ends at once, row 1 runs to the limit
    out = generate(model, prompt, 6, use_cache)
    assert out.shape == (2, 3 + 6)
    assert out[0, 3:].tolist() == [EOS] + [PAD] * 5
    assert (out[1, 3:] > EOS).all(), "row 1 never ends and never pads"
    both = generate(model, torch.tensor([[BOS, trigger], [BOS, trigger]]), 6, use_cache)
    assert both.tolist() == [[BOS, trigger, EOS]] * 2, "generation stops when every row has ended"


@pytest.mark.parametrize("filters", [dict(), dict(temperature=2.0)], ids=["greedy", "sampled"])
def test_pad_and_bos_are_never_generated_however_likely(filters: dict) -> None:
    torch.manual_seed(0)
    model = _Pushed(_config(), boost={PAD: 50.0, BOS: 50.0, EOS: -1e4}).eval()
    out = generate(model, _tokens(4, 2), 20, generator=torch.Generator().manual_seed(0), **filters)
    new = out[:, 2:]
    assert new.shape == (4, 20) and not ((new == PAD) | (new == BOS)).any()


def test_generate_restores_the_models_mode_and_runs_in_evaluation_mode() -> None:
    model = _model(_config(dropout=0.3))
    modes = []
    model.register_forward_pre_hook(lambda module, args: modes.append(module.training))
    model.train()
    first = generate(model, _tokens(2, 3), 5)
    assert model.training and modes and not any(modes)
    assert torch.equal(generate(model, _tokens(2, 3), 5), first), "no dropout while generating"
    model.eval()
    generate(model, _tokens(2, 3), 5)
    assert not model.training

    def fail(module, args):  # noqa: ANN001, ANN202
        raise RuntimeError("stop")

    model.train()
    handle = model.register_forward_pre_hook(fail)
    with pytest.raises(RuntimeError, match="stop"):
        generate(model, _tokens(2, 3), 5)
    handle.remove()
    assert model.training, "the mode is restored after an error too"


def test_generate_with_no_new_tokens_returns_the_prompt() -> None:
    prompt = _tokens(2, 3)
    assert torch.equal(generate(_model(_config()), prompt, 0), prompt)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: generate(m, torch.tensor([BOS, 4]), 3), "prompt must have shape"),
        (lambda m: generate(m, torch.tensor([[BOS, V]]), 3), f"prompt contains id {V}"),
        (lambda m: generate(m, torch.tensor([[BOS, -1]]), 3), "prompt contains id -1"),
        (lambda m: generate(m, torch.zeros(2, 0, dtype=torch.long), 3), "prompt must hold at least one token"),
        (lambda m: generate(m, torch.tensor([[BOS]]), -1), "max_new_tokens must be an integer >= 0"),
        (lambda m: generate(m, torch.tensor([[BOS]]), 2.5), "max_new_tokens must be an integer >= 0"),
        (lambda m: generate(m, torch.tensor([[BOS, 4]]), 31), "exceeds max_len=32"),
        (lambda m: generate(m, torch.tensor([[BOS]]), 3, temperature=-1.0), "temperature must be > 0"),
        (lambda m: generate(m, torch.tensor([[BOS]]), 3, temperature=1.0, top_k=0), "top_k must be None or"),
        (lambda m: generate(m, torch.tensor([[BOS]]), 3, temperature=1.0, top_p=0.0), "top_p must be None or"),
        (lambda m: generate(m, torch.tensor([[BOS]]), 3, temperature=1.0, top_p=1.5), "top_p must be None or"),
        (lambda m: generate(m, torch.tensor([[BOS]]), 3, top_k=0), "top_k must be None or"),  # greedy too
        (lambda m: generate(m, torch.tensor([[BOS]]), 3, top_p=2.0), "top_p must be None or"),
    ],
)
def test_generate_rejects_bad_input_with_one_clear_error(call, message: str) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=message):
        call(_model(_config()))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (dict(n_kv_heads=3), "n_kv_heads must divide n_heads=4"),
        (dict(n_kv_heads=0), "n_kv_heads must divide n_heads=4"),
        (dict(n_kv_heads=8), "n_kv_heads must divide n_heads=4"),
        (dict(norm="batchnorm"), "norm must be one of 'layernorm', 'rmsnorm'"),
        (dict(positional="alibi"), "positional must be one of 'sinusoidal', 'rope', 'learned'"),
        (dict(feed_forward="tanh"), "feed_forward must be one of 'relu', 'swiglu', 'gelu', 'gelu_tanh', 'swish'"),
        (dict(d_model=12, n_heads=4, positional="rope"), "d_model / n_heads must be even, got 3"),
        (dict(d_model=18, n_heads=4), "d_model=18 is not divisible by n_heads=4"),
        (dict(n_layers=0), "n_layers must be an integer >= 1"),
        (dict(max_len=0), "max_len must be an integer >= 1"),
        (dict(dropout=1.0), "dropout must be in"),
        (dict(eos_id=V), f"eos_id={V} is outside the vocabulary"),
        (dict(bos_id=PAD), f"pad_id and bos_id must differ \\(unless both are eos_id\\), got {PAD}"),
        (dict(rope_base=1.0, positional="rope"), "rope_base must be > 1"),
        (dict(layer_norm_eps=0.0, norm="rmsnorm"), "layer_norm_eps must be > 0"),
    ],
)
def test_the_config_rejects_bad_fields_naming_them(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _config(**fields)


def test_the_model_wants_a_config() -> None:
    with pytest.raises(ValueError, match="config must be a DecoderOnlyConfig"):
        DecoderOnlyLM({"vocab_size": V})


def test_the_modern_config_is_llamas_block_with_the_relu_networks_parameters() -> None:
    config = DecoderOnlyConfig.modern(V, d_model=96, n_heads=4)
    assert (config.norm_first, config.norm, config.positional, config.feed_forward) == (
        True,
        "rmsnorm",
        "rope",
        "swiglu",
    )
    assert config.d_ff == 256 and config.dropout == 0.0  # ⅔ · 4 · 96
    assert DecoderOnlyConfig.modern(V, d_ff=100).d_ff == 100
    assert replace(config, n_kv_heads=2).n_kv_heads == 2


# -- training through chapter 08's loop, and bfloat16 ---------------------------------------------------


def _counting_texts(n: int) -> list[list[str]]:
    """Texts that count on from a random start, in words: "c d e f g" …: easy to predict after one word."""
    letters = [chr(ord("a") + i) for i in range(12)]
    generator = torch.Generator().manual_seed(0)
    texts = []
    for _ in range(n):
        start, length = (int(x) for x in torch.randint(0, 12, (2,), generator=generator))
        texts.append([letters[(start + i) % 12] for i in range(3 + length % 5)])
    return texts


def test_a_tiny_model_learns_through_fit_with_without_source_and_lm_examples() -> None:
    texts = _counting_texts(200)
    vocab = Vocab.build(texts)
    examples = lm_examples(texts, vocab)
    assert examples[0][0] == [] and examples[0][1][0] == vocab.bos_id and examples[0][1][-1] == vocab.eos_id
    torch.manual_seed(0)
    lm = DecoderOnlyLM(
        DecoderOnlyConfig.modern(len(vocab), d_model=32, n_heads=4, n_kv_heads=2, n_layers=2, max_len=16)
    )
    optimizer = make_adamw(lm, lr=3e-3)
    scheduler = warmup_cosine_scheduler(optimizer, 10, 100)
    options = FitOptions(smoothing=0.0, progress=False, log_every=20)
    history = fit(WithoutSource(lm), batch_stream(examples, 16, vocab.pad_id, seed=0), optimizer, scheduler, 100,
                  options=options)  # fmt: skip
    first, last = sum(history.losses[:10]) / 10, sum(history.losses[-10:]) / 10
    assert first > 2.0 and last < 0.6 * first, (first, last)
    assert history.lrs[0] == pytest.approx(3e-3 / 10) and max(history.lrs) == pytest.approx(3e-3)
    prompt = torch.tensor([[vocab.bos_id, *vocab.encode(["c", "d"])]])
    assert vocab.decode(generate(lm, prompt, 3)[0, 3:].tolist())[:2] == ["e", "f"]


def test_without_source_ignores_the_source_and_owns_no_weights() -> None:
    lm = _model(_config())
    wrapper = WithoutSource(lm)
    tokens = _tokens()
    assert torch.equal(wrapper(torch.zeros(2, 0, dtype=torch.long), tokens), lm(tokens))
    assert list(wrapper.parameters()) == list(lm.parameters())


@pytest.mark.parametrize("modern", [False, True], ids=["2017", "modern+GQA"])
def test_a_bfloat16_autocast_forward_on_the_cpu_works(modern: bool) -> None:
    config = DecoderOnlyConfig.modern(V, d_model=32, n_heads=4, n_kv_heads=2) if modern else _config(d_model=32)
    model, tokens = _model(config), _tokens()
    full = model(tokens)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = model(tokens)
        with torch.no_grad():
            cache = model.new_cache()
            steps = torch.cat(
                [model(tokens[:, :5], cache)] + [model(tokens[:, t : t + 1], cache) for t in range(5, T)], 1
            )
    assert low.dtype == torch.bfloat16 and low.isfinite().all()
    scale = full.abs().max()
    assert (low.float() - full).abs().max() < 0.05 * scale  # bfloat16 keeps ~3 significant digits
    assert (steps.float() - low.float()).abs().max() < 0.05 * scale
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(tokens).float().flatten(0, 1), tokens.roll(-1, 1).flatten())
    loss.backward()
    assert all(p.grad is not None and p.grad.isfinite().all() for p in model.parameters())


def test_the_modern_config_gives_other_networks_four_times_d() -> None:
    assert DecoderOnlyConfig.modern(V, d_model=96).d_ff == 256  # ⅔ · 4 · 96
    assert DecoderOnlyConfig.modern(V, d_model=96, feed_forward="relu").d_ff == 384  # 4 · 96, not ⅔ of it
    assert DecoderOnlyConfig.modern(V, d_model=96, feed_forward="gelu").d_ff == 384
    assert DecoderOnlyConfig.modern(V, d_model=96, feed_forward="relu", d_ff=100).d_ff == 100


def test_a_prompt_with_pad_is_refused_in_one_line_unless_pad_is_eos() -> None:
    model = _model(_config())
    prompt = torch.tensor([[BOS, 7, 8], [BOS, 7, PAD]])  # a shorter row padded: generate would read <pad> as text
    with pytest.raises(ValueError, match=r"^prompt contains <pad> \(id 0\).*generate prompts of different lengths"):
        generate(model, prompt, 2)
    torch.manual_seed(0)
    shared = DecoderOnlyLM(DecoderOnlyConfig(V, d_model=16, n_heads=2, d_ff=32, pad_id=EOS, bos_id=EOS)).eval()
    out = generate(shared, torch.tensor([[EOS, 7, EOS, 8]]), 2)  # GPT-2's <|endoftext|>: a real token inside a text
    assert out.shape[1] >= 4


def test_a_rope_models_positional_part_is_the_dropout_on_its_embeddings() -> None:
    torch.manual_seed(0)
    model = DecoderOnlyLM(DecoderOnlyConfig(V, d_model=16, n_heads=2, d_ff=32, positional="rope", dropout=0.25))
    assert isinstance(model.positional, EmbeddingDropout) and model.positional.p == 0.25
    assert not list(model.positional.parameters()) and not list(model.positional.buffers())
