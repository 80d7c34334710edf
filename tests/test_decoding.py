"""Decoding (chapter 09): the KV cache changes nothing but speed; greedy, beam search and
sampling agree with each other and with brute force where they must; bad arguments are refused."""

from __future__ import annotations

import itertools

import pytest
import torch

from transformer_course import MultiHeadAttention, PositionalEncoding, Transformer, TransformerConfig
from transformer_course.cache import DecoderCache, KVCache, with_cache
from transformer_course.decoding import (
    beam_search,
    gnmt_length_penalty,
    greedy_decode,
    sample,
    sample_next_token,
    sampling_distribution,
    score_sequences,
)
from transformer_course.masks import causal_mask, padding_mask

PAD, BOS, EOS = 0, 1, 2


def _model(norm_first: bool = False, vocab: int = 13, seed: int = 0, layers: int = 2, d_model: int = 12) -> Transformer:
    torch.manual_seed(seed)
    config = TransformerConfig(
        src_vocab_size=11, tgt_vocab_size=vocab, d_model=d_model, n_heads=3, d_ff=20,
        n_encoder_layers=layers, n_decoder_layers=layers, dropout=0.1, max_len=24, norm_first=norm_first,
    )  # fmt: skip
    return Transformer(config).eval()


def _src(batch: int = 5, length: int = 7, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 11, (batch, length), generator=g)
    src[1, 4:] = PAD  # a padded sentence
    src[-1, 2:] = PAD
    return src


# -- the cache -----------------------------------------------------------------------------------


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_cached_decoding_gives_the_same_logits_as_the_full_decoder(norm_first: bool) -> None:
    model = _model(norm_first)
    src = _src()
    tgt = torch.randint(3, 13, (5, 9))
    tgt[:, 0] = BOS
    tgt[2, 6:] = PAD  # padding inside the target is masked in both paths
    memory_mask = padding_mask(src, PAD)
    with torch.no_grad():
        memory = model.encode(src, memory_mask)
        full = model.decode(tgt, memory, memory_mask)  # (B, T, V)
        cache = DecoderCache(model)
        steps = [cache.decode(tgt[:, :3], memory, memory_mask)]  # a chunk of 3, then one at a time
        steps += [cache.decode(tgt[:, t : t + 1], memory, memory_mask) for t in range(3, 9)]
    assert cache.length == 9
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=1e-5)  # float32 precision


def test_cached_logits_also_match_with_autograd_on() -> None:
    model = _model()
    src, tgt = _src(), torch.randint(3, 13, (5, 6))
    memory = model.encode(src)
    full = model.decode(tgt, memory, padding_mask(src, PAD))
    cache = DecoderCache(model)
    steps = [cache.decode(tgt[:, t : t + 1], memory, padding_mask(src, PAD)) for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-5, atol=1e-5)
    torch.cat(steps, 1).sum().backward()  # the cache's concatenation path keeps autograd working


def test_kv_cache_on_one_attention_module() -> None:
    torch.manual_seed(0)
    attention = MultiHeadAttention(12, 3).eval()
    x, memory = torch.randn(2, 5, 12), torch.randn(2, 4, 12)
    want_self, _ = attention(x, x, x, causal_mask(5))
    want_cross, _ = attention(x, memory, memory)
    self_cache, cross_cache = KVCache(), KVCache(static=True)
    got_self = [
        with_cache(attention, self_cache)(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1])[0] for t in range(5)
    ]
    got_cross = [with_cache(attention, cross_cache)(x[:, t : t + 1], memory, memory)[0] for t in range(5)]
    torch.testing.assert_close(torch.cat(got_self, 1), want_self, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.cat(got_cross, 1), want_cross, rtol=1e-5, atol=1e-6)
    assert len(self_cache) == 5 and len(cross_cache) == 4
    assert self_cache.keys.shape == (2, 5, 12) and cross_cache.values.shape == (2, 4, 12)  # (B, L, H·Dk)
    for projection in (attention.w_k, attention.w_v):  # the cache never touches the modules
        assert type(projection) is torch.nn.Linear
        assert not projection._forward_hooks and not projection._forward_pre_hooks


def test_cross_attention_memory_is_projected_only_once() -> None:
    attention = MultiHeadAttention(12, 3).eval()
    rows = []
    attention.w_k.register_forward_hook(lambda module, args, out: rows.append(args[0].shape[1]))
    cache, memory, x = KVCache(static=True), torch.randn(2, 6, 12), torch.randn(2, 1, 12)
    for _ in range(4):
        with_cache(attention, cache)(x, memory, memory)
    assert rows == [6], "the memory's keys are projected at the first step only"
    assert len(cache) == 6


def test_positional_encoding_with_an_offset_reads_the_right_rows() -> None:
    pe = PositionalEncoding(8, max_len=10)
    x = torch.randn(2, 10, 8)
    torch.testing.assert_close(pe(x[:, 4:7], offset=4), pe(x)[:, 4:7])
    with pytest.raises(ValueError, match="max_len"):
        pe(x[:, :3], offset=8)


def test_cached_decoding_past_max_len_is_a_clear_error() -> None:
    model = _model()
    src = _src()
    memory = model.encode(src)
    cache = DecoderCache(model)
    cache.decode(torch.ones(5, 24, dtype=torch.long), memory)
    with pytest.raises(ValueError, match="max_len"):
        cache.decode(torch.ones(5, 1, dtype=torch.long), memory)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_decoders_give_the_same_tokens_with_and_without_the_cache(norm_first: bool) -> None:
    model, src = _model(norm_first), _src()
    assert torch.equal(greedy_decode(model, src, 12), greedy_decode(model, src, 12, use_cache=False))
    cached = beam_search(model, src, 3, 12, n_best=3)
    without = beam_search(model, src, 3, 12, n_best=3, use_cache=False)
    assert torch.equal(cached[0], without[0])
    torch.testing.assert_close(cached[1], without[1], rtol=1e-5, atol=1e-5)
    draws = [sample(model, src, 12, generator=torch.Generator().manual_seed(7), use_cache=c) for c in (True, False)]
    assert torch.equal(*draws)


# -- greedy, beam, sampling ---------------------------------------------------------------------


def _assert_well_formed(tokens: torch.Tensor, max_len: int) -> None:
    """Nothing but padding after the first <eos>; never <pad> or <bos> before it."""
    assert tokens.dtype == torch.long and tokens.shape[-1] <= max_len
    for row in tokens.reshape(-1, tokens.shape[-1]).tolist():
        end = row.index(EOS) + 1 if EOS in row else len(row)
        assert all(t == PAD for t in row[end:]), f"tokens after <eos>: {row}"
        assert all(t not in (PAD, BOS) for t in row[:end]), f"<pad> or <bos> generated: {row}"


def test_greedy_output_shape_stops_at_eos_and_restores_training_mode() -> None:
    model, src = _model(seed=3), _src()
    model.train()
    out = greedy_decode(model, src, 10)
    assert model.training, "greedy_decode must restore the model's mode"
    assert out.shape[0] == 5
    _assert_well_formed(out, 10)
    assert torch.equal(out, greedy_decode(model.eval(), src, 10)), "decoding must run without dropout"


def test_greedy_rows_do_not_depend_on_the_batch() -> None:
    model, src = _model(seed=4), _src()
    together = greedy_decode(model, src, 10)
    for i in range(src.shape[0]):
        alone = greedy_decode(model, src[i : i + 1], 10)[0]
        assert torch.equal(together[i, : len(alone)], alone)
        assert (together[i, len(alone) :] == PAD).all()


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_beam_of_size_one_is_greedy(alpha: float) -> None:
    for seed in range(3):
        model, src = _model(seed=seed), _src(seed=seed)
        greedy = greedy_decode(model, src, 12)
        beam, scores = beam_search(model, src, 1, 12, length_penalty=alpha)  # (B, 1, T), (B, 1)
        assert beam.shape[:2] == (5, 1) and scores.shape == (5, 1), "beam_search keeps the n_best axis"
        beam, scores = beam[:, 0], scores[:, 0]
        assert torch.equal(beam[:, : greedy.shape[1]], greedy) and (beam[:, greedy.shape[1] :] == PAD).all()
        torch.testing.assert_close(scores, score_sequences(model, src, greedy, alpha), rtol=1e-5, atol=1e-5)


def test_beam_scores_are_the_scores_of_its_hypotheses() -> None:
    model, src = _model(seed=5), _src()
    tokens, scores = beam_search(model, src, 4, 12, length_penalty=0.6, n_best=4)
    _assert_well_formed(tokens, 12)
    assert (scores[:, :-1] >= scores[:, 1:]).all(), "n-best list must be sorted, best first"
    for k in range(4):
        torch.testing.assert_close(scores[:, k], score_sequences(model, src, tokens[:, k], 0.6), rtol=1e-5, atol=1e-5)


def test_beam_search_scores_at_least_as_high_as_greedy_on_a_tiny_model() -> None:
    # Not a theorem for every input (beam search may drop the greedy prefix), but on these small
    # random models with a small vocabulary a wider beam never does worse.
    for seed in range(6):
        model, src = _model(vocab=7, seed=seed), _src(batch=8, seed=seed)
        greedy_scores = score_sequences(model, src, greedy_decode(model, src, 8), 0.6)
        beam_scores = beam_search(model, src, 4, 8, length_penalty=0.6)[1][:, 0]  # (B,) the best
        assert (beam_scores >= greedy_scores - 1e-5).all(), (seed, beam_scores, greedy_scores)


def _exhaustive_best(model: Transformer, src: torch.Tensor, max_len: int, alpha: float) -> tuple[list, float]:
    """Score every possible output of at most max_len tokens (ending in <eos> or cut at max_len)."""
    tokens = [t for t in range(model.config.tgt_vocab_size) if t not in (PAD, BOS)]
    words = [t for t in tokens if t != EOS]
    candidates = [[*p, EOS] for n in range(max_len) for p in itertools.product(words, repeat=n)]
    candidates += [list(p) for p in itertools.product(words, repeat=max_len)]
    padded = torch.tensor([c + [PAD] * (max_len - len(c)) for c in candidates])  # (N, max_len)
    scores = score_sequences(model, src.expand(len(candidates), -1), padded, alpha)
    best = int(scores.argmax())
    return candidates[best], float(scores[best])


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_a_beam_that_holds_everything_finds_the_exhaustive_optimum(alpha: float) -> None:
    max_len = 3
    for seed in range(3):
        model = _model(vocab=6, seed=seed)  # next-token choices: <eos>, <unk> and two words
        src = _src(batch=3, seed=seed)
        tokens, scores = beam_search(model, src, beam_size=64, max_len=max_len, length_penalty=alpha)
        for i in range(src.shape[0]):
            want, want_score = _exhaustive_best(model, src[i : i + 1], max_len, alpha)
            got = [t for t in tokens[i, 0].tolist() if t != PAD]
            assert got == want, (seed, i, got, want)
            assert abs(float(scores[i, 0]) - want_score) < 1e-4


def test_length_penalty_follows_gnmt() -> None:
    lengths = torch.tensor([1, 4, 10])
    torch.testing.assert_close(gnmt_length_penalty(lengths, 0.6), ((5 + lengths.float()) / 6) ** 0.6)
    assert torch.equal(gnmt_length_penalty(lengths, 0.0), torch.ones(3))


def test_top_k_one_sampling_is_greedy() -> None:
    model, src = _model(seed=6), _src()
    for seed in range(3):
        drawn = sample(model, src, 10, top_k=1, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(drawn, greedy_decode(model, src, 10))


def test_sampling_with_a_fixed_generator_is_reproducible() -> None:
    model, src = _model(seed=7), _src()
    first = sample(model, src, 10, temperature=1.5, top_p=0.9, generator=torch.Generator().manual_seed(3))
    again = sample(model, src, 10, temperature=1.5, top_p=0.9, generator=torch.Generator().manual_seed(3))
    other = sample(model, src, 10, temperature=1.5, top_p=0.9, generator=torch.Generator().manual_seed(4))
    assert torch.equal(first, again)
    assert not torch.equal(first, other)
    _assert_well_formed(first, 10)


def test_sampled_tokens_follow_the_filtered_distribution() -> None:
    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0, -3.0]])
    for kwargs in ({}, {"temperature": 0.5}, {"temperature": 2.0, "top_k": 3}, {"top_p": 0.8}):
        probs = sampling_distribution(logits, **kwargs)[0]
        draws = sample_next_token(
            logits.expand(40_000, -1), generator=torch.Generator().manual_seed(0), **kwargs
        )  # (N,) one draw per row
        freq = torch.bincount(draws, minlength=6).float() / len(draws)
        torch.testing.assert_close(freq, probs, atol=0.012, rtol=0), kwargs
        assert (freq[probs == 0] == 0).all(), f"a filtered token was drawn with {kwargs}"


def test_top_p_keeps_the_smallest_nucleus() -> None:
    probs = sampling_distribution(torch.tensor([0.5, 0.3, 0.15, 0.05]).log(), top_p=0.8)
    torch.testing.assert_close(probs, torch.tensor([0.625, 0.375, 0.0, 0.0]))
    probs = sampling_distribution(torch.tensor([0.5, 0.3, 0.15, 0.05]).log(), top_p=0.81)
    assert (probs > 0).tolist() == [True, True, True, False]


# -- bad arguments ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda m, s: beam_search(m, s, 0, 5), "beam_size"),
        (lambda m, s: beam_search(m, s, 2, 5, n_best=3), "n_best"),
        (lambda m, s: beam_search(m, s, 2, 5, n_best=None), "n_best"),
        (lambda m, s: beam_search(m, s, 2, 5, length_penalty=-1.0), "length_penalty"),
        (lambda m, s: sample(m, s, 5, temperature=0.0), "temperature"),
        (lambda m, s: sample(m, s, 5, temperature=-1.0), "temperature"),
        (lambda m, s: sample(m, s, 5, top_p=0.0), "top_p"),
        (lambda m, s: sample(m, s, 5, top_p=1.5), "top_p"),
        (lambda m, s: sample(m, s, 5, top_k=0), "top_k"),
        (lambda m, s: greedy_decode(m, s, 0), "max_len"),
        (lambda m, s: greedy_decode(m, s, 100), "max_len"),
        (lambda m, s: greedy_decode(m, s[0], 5), "src"),
    ],
    ids=["beam 0", "n_best>beam", "n_best None", "alpha<0", "T=0", "T<0", "top_p 0", "top_p>1", "top_k 0", "max_len 0",
         "max_len too long", "1-D src"],
)  # fmt: skip
def test_bad_arguments_give_clear_errors(call, message: str) -> None:
    model, src = _model(), _src()
    with pytest.raises(ValueError, match=message):
        call(model, src)


def test_cross_attention_maps_are_distributions_over_the_real_source_tokens() -> None:
    from transformer_course.evaluation import cross_attention_maps

    model, src = _model(seed=8), _src()
    hypotheses = greedy_decode(model, src, 6)
    maps = cross_attention_maps(model, src, hypotheses)  # (layers, B, H, T, S)
    assert maps.shape == (2, 5, 3, hypotheses.shape[1], src.shape[1])
    torch.testing.assert_close(maps.sum(-1), torch.ones(maps.shape[:-1]))
    assert (maps[:, 1, ..., 4:] == 0).all(), "padding in the source gets no attention"
    for layer in model.decoder.layers:
        assert not layer.cross_attn._forward_hooks and not layer.cross_attn._forward_pre_hooks


def test_attention_maps_capture_all_three_kinds_once_and_leave_no_hook() -> None:
    from transformer_course.evaluation import attention_maps, cross_attention_maps

    model, src = _model(seed=8), _src()
    hypotheses = greedy_decode(model, src, 6)
    T, S = hypotheses.shape[1], src.shape[1]
    maps = attention_maps(model, src, hypotheses)
    assert {kind: tuple(m.shape) for kind, m in maps.items()} == {
        "encoder": (2, 5, 3, S, S), "decoder": (2, 5, 3, T, T), "cross": (2, 5, 3, T, S),
    }  # fmt: skip
    for m in maps.values():
        torch.testing.assert_close(m.sum(-1), torch.ones(m.shape[:-1]))
    assert (maps["decoder"].triu(diagonal=1) == 0).all(), "the decoder never looks ahead"
    assert (maps["encoder"][:, 1, ..., 4:] == 0).all(), "nor the encoder at padding"
    torch.testing.assert_close(cross_attention_maps(model, src, hypotheses), maps["cross"])
    for module in model.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks


# -- the output-length rule (paper §6.1: input length + 50) -----------------------------------------


def _never_stopping(max_len: int, seed: int = 0) -> Transformer:
    """A model whose <eos> is never chosen: every row runs to its limit."""
    torch.manual_seed(seed)
    config = TransformerConfig(
        src_vocab_size=11, tgt_vocab_size=13, d_model=12, n_heads=3, d_ff=20, n_encoder_layers=1,
        n_decoder_layers=1, max_len=max_len,
    )  # fmt: skip
    model = Transformer(config).eval()
    with torch.no_grad():
        model.output.bias[EOS] = -1e4
    return model


def test_max_output_length_is_the_source_length_plus_50_capped_by_the_position_table() -> None:
    from transformer_course import max_output_length

    src = torch.tensor([[5, 6, 7, PAD, PAD], [5, 6, 7, 8, 9], [PAD] * 5])
    model = _never_stopping(max_len=100)
    assert max_output_length(model, src).tolist() == [53, 55, 50]  # non-pad tokens + 50
    assert max_output_length(model.config, src).tolist() == [53, 55, 50]  # a config will do
    assert max_output_length(_never_stopping(max_len=54), src).tolist() == [53, 54, 50]  # capped


@pytest.mark.parametrize("use_cache", [True, False], ids=["cache", "no cache"])
def test_an_output_as_long_as_the_position_table_fits_it(use_cache: bool) -> None:
    """<bos> and every output token but the last are fed back: an output of max_len tokens uses
    the whole table (max_len positions); one more is refused."""
    model = _never_stopping(max_len=20)
    src = torch.tensor([[5, 6, 7], [8, 9, 10]])  # 3 + 50 > 20: the table is the limit
    assert greedy_decode(model, src, use_cache=use_cache).shape == (2, 20)
    assert greedy_decode(model, src, 20, use_cache=use_cache).shape == (2, 20)
    assert beam_search(model, src, 2, use_cache=use_cache)[0].shape == (2, 1, 20)
    assert sample(model, src, use_cache=use_cache).shape == (2, 20)
    with pytest.raises(ValueError, match="max_len=21 is longer than the model's max_len=20"):
        greedy_decode(model, src, 21, use_cache=use_cache)


def test_each_row_stops_at_its_own_limit_so_a_sentence_decodes_alike_alone_and_in_a_batch() -> None:
    """With a batch the loop runs to the longest row's limit; a shorter row is cut at its own
    (padding after it), as it would be if it were decoded alone."""
    model = _never_stopping(max_len=64)
    src = torch.tensor([[5, 6, PAD, PAD, PAD], [5, 6, 7, 8, 9]])  # limits 52 and 55
    for decode, deterministic in (
        (lambda s: greedy_decode(model, s), True),
        (lambda s: greedy_decode(model, s, use_cache=False), True),
        (lambda s: beam_search(model, s, 3)[0][:, 0], True),
        (lambda s: sample(model, s, generator=torch.Generator().manual_seed(0)), False),  # draws depend on B
    ):
        together = decode(src)
        assert together.shape == (2, 55)
        assert (together[0, :52] != PAD).all() and (together[0, 52:] == PAD).all(), "row 0 stops at 2 + 50"
        assert (together[1] != PAD).all(), "row 1 runs to 5 + 50"
        if deterministic:
            assert torch.equal(decode(src[:1, :2])[0], together[0, :52])


def test_an_explicit_max_len_caps_every_row() -> None:
    model = _never_stopping(max_len=64)
    src = torch.tensor([[5, 6, PAD], [5, 6, 7]])
    assert greedy_decode(model, src, 7).shape == (2, 7)
    assert (greedy_decode(model, src, 7) != PAD).all()


# -- no hidden state ------------------------------------------------------------------------------


def test_the_cache_mask_is_a_pure_function_and_recording_is_explicit() -> None:
    cache = DecoderCache(_model())
    cache.record(torch.tensor([[BOS, 5], [BOS, PAD]]))
    assert cache.length == 2
    first, again = cache.self_attention_mask(2), cache.self_attention_mask(2)
    assert torch.equal(first, again) and cache.length == 2, "asking for the mask changes nothing"
    assert first.tolist() == [[[[True, False], [True, True]]], [[[True, False], [True, False]]]]
    cache.record(torch.tensor([[6], [7]]))
    assert cache.self_attention_mask(1).tolist() == [[[[True, True, True]]], [[[True, False, True]]]]
    with pytest.raises(ValueError, match="new must be between 1 and the 3 recorded positions"):
        cache.self_attention_mask(4)


def test_the_attention_path_is_an_argument_not_a_switch() -> None:
    torch.manual_seed(0)
    attention = MultiHeadAttention(12, 3).eval()
    assert not hasattr(attention, "fast_path")
    x = torch.randn(2, 5, 12)
    fast, no_weights = attention(x, x, x, causal_mask(5))
    teaching, weights = attention(x, x, x, causal_mask(5), fast=False)
    assert no_weights is None and weights.shape == (2, 3, 5, 5)
    torch.testing.assert_close(fast, teaching, rtol=1e-5, atol=1e-6)


# -- one position at a time ---------------------------------------------------------------------------


@pytest.mark.parametrize(("bias", "d_k", "d_v"), [(True, None, None), (False, None, None), (True, 5, 3)])
def test_a_cached_step_of_one_position_equals_the_full_pass(bias: bool, d_k: int | None, d_v: int | None) -> None:
    """Chapter 09's cache, one position at a time, gives the full pass's numbers, with and without
    biases, with d_k != d_v, with a padding mask, and leaves the state dict alone."""
    torch.manual_seed(0)
    attention = MultiHeadAttention(12, 3, d_k=d_k, d_v=d_v, bias=bias).eval()
    keys_before = set(attention.state_dict())
    x, memory = torch.randn(2, 5, 12), torch.randn(2, 4, 12)
    memory_mask = torch.tensor([[True] * 4, [True, True, False, False]])[:, None, None, :]  # (B, 1, 1, S)
    with torch.no_grad():
        want_self, _ = attention(x, x, x, causal_mask(5), fast=False)
        want_cross, _ = attention(x, memory, memory, memory_mask, fast=False)
        self_cache, cross_cache = KVCache(), KVCache(static=True)
        got_self = [
            with_cache(attention, self_cache)(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1])[0] for t in range(5)
        ]
        got_cross = [
            with_cache(attention, cross_cache)(x[:, t : t + 1], memory, memory, memory_mask)[0] for t in range(5)
        ]
    torch.testing.assert_close(torch.cat(got_self, 1), want_self, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.cat(got_cross, 1), want_cross, rtol=1e-5, atol=1e-6)
    assert self_cache.keys.shape == (2, 5, 3 * attention.d_k) and self_cache.values.shape == (2, 5, 3 * attention.d_v)
    assert (
        set(attention.state_dict())
        == keys_before
        == {f"w_{n}.{p}" for n in "qkvo" for p in (("weight", "bias") if bias else ("weight",))}
    )


# -- chapter 08's plain loop: the same tokens as chapter 09's greedy decoder ------------------------


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_len", [None, 9])
def test_reading_greedily_gives_the_tokens_of_greedy_decoding(seed: int, max_len: int | None) -> None:
    """Chapter 08 scores its model with ``read_greedily`` (the whole target through the decoder at every
    step); chapter 09's ``greedy_decode`` (one token a step, a cache) must answer the same, row for row,
    limits and padding included."""
    from transformer_course.evaluation import read_greedily

    torch.manual_seed(seed)
    config = TransformerConfig(src_vocab_size=11, tgt_vocab_size=13, d_model=12, n_heads=3, d_ff=20, n_encoder_layers=1,
                               n_decoder_layers=2, max_len=56, norm_first=bool(seed % 2))  # fmt: skip
    model = Transformer(config).eval()
    src = _src(batch=6, seed=seed)  # rows of 7, 4 and 2 tokens: §6.1 limits of 56 (the table), 54 and 52
    torch.testing.assert_close(read_greedily(model, src, max_len), greedy_decode(model, src, max_len))


def test_reading_the_shipped_translator_greedily_gives_its_greedy_translations() -> None:
    from transformer_course.datasets.numbers import numbers_task
    from transformer_course.evaluation import evaluate, read_greedily
    from transformer_course_tools.models.pretrained import load_pretrained

    model, task = load_pretrained().model, numbers_task()
    pairs = task.test[:200]
    assert evaluate(model, pairs, task) == evaluate(model, pairs, task, decode=greedy_decode)
    src = torch.tensor([task.src_vocab.encode(s) for s, _ in pairs[:1]])
    assert torch.equal(read_greedily(model, src), greedy_decode(model, src))
    with pytest.raises(ValueError, match="use_cache is gone: pass decode=greedy_decode"):
        evaluate(model, pairs, task, use_cache=False)
