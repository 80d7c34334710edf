"""The full Transformer (chapter 06): behaviour tests, parameter counts next to the paper's
Table 3, shared embeddings, and clear errors for bad input."""

from __future__ import annotations

import pytest
import torch

from transformer_course import Transformer, TransformerConfig
from transformer_course.config import TABLE3_VOCAB_SIZE
from transformer_course.rmsnorm import RMSNorm

V = 23  # a small shared vocabulary; id 0 is padding, 1 is <bos>, 2 is <eos>
B, S, T = 2, 5, 7


def _model(dropout: float = 0.0, **overrides) -> Transformer:
    settings = (
        dict(
            d_model=12,
            n_heads=3,
            d_ff=20,
            n_encoder_layers=2,
            n_decoder_layers=2,
            max_len=16,
            dropout=dropout,
            share_embeddings=True,
        )
        | overrides
    )
    return Transformer(TransformerConfig(V, V, **settings))


def _tokens(*rows: list[int]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long)


SRC = _tokens([5, 6, 7, 0, 0], [4, 9, 10, 11, 12])  # (B, S): sequence 0 padded
TGT = _tokens([1, 8, 9, 10, 11, 0, 0], [1, 3, 4, 5, 6, 7, 8])  # (B, T): sequence 0 padded


def test_forward_gives_logits_of_shape_b_t_v_with_odd_sizes() -> None:
    logits = _model().eval()(SRC, TGT)
    assert logits.shape == (B, T, V)
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("mode", ["eval", "train"])
def test_future_target_tokens_do_not_change_earlier_logits(norm_first: bool, mode: str) -> None:
    model = _model(norm_first=norm_first).train(mode == "train")
    t = 3
    changed = TGT.clone()
    changed[:, t:] = torch.randint(3, V, (B, T - t))
    before, after = model(SRC, TGT), model(SRC, changed)
    torch.testing.assert_close(after[:, :t], before[:, :t], atol=1e-5, rtol=0)
    assert not torch.allclose(after[:, t:], before[:, t:]), "the changed positions themselves should change"


def test_future_tokens_do_not_leak_in_training_with_dropout_either() -> None:
    model = _model(dropout=0.1).train()
    t = 4
    changed = TGT.clone()
    changed[:, t:] = torch.randint(3, V, (B, T - t))
    torch.manual_seed(1)
    before = model(SRC, TGT)
    torch.manual_seed(1)  # the same dropout masks for both calls
    after = model(SRC, changed)
    torch.testing.assert_close(after[:, :t], before[:, :t], atol=1e-5, rtol=0)


def test_changing_padded_source_tokens_changes_nothing() -> None:
    model = _model().eval()
    src_mask = (SRC != 0)[:, None, None, :]  # (B, 1, 1, S): positions 3, 4 of sequence 0 are padding
    changed = SRC.clone()
    changed[0, 3:] = torch.tensor([13, 14])  # other ids in the padded slots, under the same mask
    before = model.decode(TGT, model.encode(SRC, src_mask), src_mask)
    after = model.decode(TGT, model.encode(changed, src_mask), src_mask)
    torch.testing.assert_close(after, before, atol=1e-5, rtol=0)
    assert not torch.allclose(model(changed, TGT)[0], before[0]), "as real tokens, the new ids should matter"


def test_appending_more_padding_changes_nothing() -> None:
    model = _model().eval()
    with torch.no_grad():  # a non-zero <pad> vector, so that only the mask can hide the padding
        model.src_embed.weight[0] = torch.randn(12)
    before = model(SRC, TGT)
    longer = torch.cat([SRC, torch.zeros(B, 3, dtype=torch.long)], dim=1)  # three more pads
    torch.testing.assert_close(model(longer, TGT), before, atol=1e-5, rtol=0)


def test_perturbing_the_encoder_memory_changes_the_decoder_output() -> None:
    model = _model().eval()
    src_mask = (SRC != 0)[:, None, None, :]
    memory = model.encode(SRC, src_mask)
    base = model.decode(TGT, memory, src_mask)
    perturbed = model.decode(TGT, memory + 0.1 * torch.randn_like(memory), src_mask)
    assert (perturbed - base).abs().max() > 1e-3


def test_a_padded_batch_gives_the_same_logits_as_each_sequence_alone() -> None:
    model = _model().eval()
    pairs = [([5, 6, 7], [1, 8, 9, 10, 11]), ([4, 9, 10, 11, 12], [1, 3]), ([13], [1, 3, 4, 5, 6, 7, 8])]
    src = torch.zeros(len(pairs), S, dtype=torch.long)
    tgt = torch.zeros(len(pairs), T, dtype=torch.long)
    for i, (s, t) in enumerate(pairs):
        src[i, : len(s)], tgt[i, : len(t)] = torch.tensor(s), torch.tensor(t)
    batched = model(src, tgt)
    for i, (s, t) in enumerate(pairs):
        alone = model(_tokens(s), _tokens(t))[0]  # (len(t), V)
        torch.testing.assert_close(batched[i, : len(t)], alone, atol=1e-5, rtol=1e-5)


def test_a_fully_padded_source_gives_finite_logits() -> None:
    model = _model().eval()
    src = SRC.clone()
    src[0] = 0  # sequence 0 is nothing but padding
    logits = model(src, TGT)
    assert torch.isfinite(logits).all()


def test_shared_embeddings_are_one_matrix_for_source_target_and_output() -> None:
    model = _model()
    assert model.src_embed.weight is model.tgt_embed.weight is model.output.weight
    untied = _model(share_embeddings=False, tie_output=False)
    assert untied.num_parameters() - model.num_parameters() == 2 * V * 12  # target embedding + output matrix


# -- parameter counts next to Table 3 ---------------------------------------------------------------


def _count(config: TransformerConfig) -> int:
    with torch.device("meta"):  # no memory is allocated: the count is instant even for "big"
        return Transformer(config).num_parameters()


def _closed_form(vocab: int, d: int, d_ff: int, n: int) -> int:
    """Count by hand: attention 4 (D×D + D), FFN 2 D·d_ff + d_ff + D, LayerNorm 2D, one shared
    (V, D) matrix and the output bias V."""
    attention, ffn, norm = 4 * (d * d + d), 2 * d * d_ff + d_ff + d, 2 * d
    return n * (attention + ffn + 2 * norm) + n * (2 * attention + ffn + 3 * norm) + vocab * d + vocab


def test_counting_on_the_meta_device_matches_a_real_model() -> None:
    config = TransformerConfig(V, V, d_model=12, n_heads=3, d_ff=20, share_embeddings=True)
    assert _count(config) == Transformer(config).num_parameters() == _closed_form(V, 12, 20, 6)


def test_paper_counts_at_the_papers_37000_token_vocabulary() -> None:
    assert _count(TransformerConfig.paper_base(37_000)) == _closed_form(37_000, 512, 2048, 6) == 63_119_496
    assert _count(TransformerConfig.paper_big(37_000)) == _closed_form(37_000, 1024, 4096, 6) == 214_282_376


@pytest.mark.parametrize(
    ("factory", "paper"), [(TransformerConfig.paper_base, 65e6), (TransformerConfig.paper_big, 213e6)]
)
def test_base_and_big_are_within_2_percent_of_table_3(factory, paper: float) -> None:
    count = _count(factory(TABLE3_VOCAB_SIZE))
    assert abs(count - paper) / paper < 0.02, f"{count / 1e6:.1f}M vs {paper / 1e6:.0f}M"


# -- clear errors ------------------------------------------------------------------------------------


def test_src_and_tgt_batch_sizes_must_match() -> None:
    with pytest.raises(ValueError, match="same batch size"):
        _model()(SRC, TGT[:1])


@pytest.mark.parametrize("name", ["src", "tgt"])
def test_tokens_must_be_integers(name: str) -> None:
    inputs = {"src": SRC, "tgt": TGT}
    inputs[name] = inputs[name].float()
    with pytest.raises(ValueError, match=f"{name} must hold integer token ids"):
        _model()(**inputs)


@pytest.mark.parametrize(("name", "bad_id"), [("src", V), ("tgt", V + 5), ("src", -1)])
def test_token_ids_must_lie_in_the_vocabulary(name: str, bad_id: int) -> None:
    inputs = {"src": SRC.clone(), "tgt": TGT.clone()}
    inputs[name][0, 1] = bad_id
    with pytest.raises(ValueError, match=rf"{name} contains id {bad_id}, outside the vocabulary range \[0, {V}\)"):
        _model()(**inputs)


@pytest.mark.parametrize("name", ["src", "tgt"])
def test_sequences_longer_than_max_len_are_rejected(name: str) -> None:
    inputs = {"src": SRC, "tgt": TGT}
    inputs[name] = torch.ones(B, 17, dtype=torch.long)  # max_len is 16
    with pytest.raises(ValueError, match=f"{name} has length 17, longer than max_len=16"):
        _model()(**inputs)


def test_shared_embeddings_need_one_vocabulary() -> None:
    with pytest.raises(ValueError, match="share_embeddings=True needs one vocabulary"):
        TransformerConfig(100, 120, share_embeddings=True)


def test_tokens_must_be_two_dimensional() -> None:
    with pytest.raises(ValueError, match=r"src must have shape \(B, length\)"):
        _model()(SRC[0], TGT)


# -- parts passed in --------------------------------------------------------------------------


def _parts_config(norm_first: bool = False, share: bool = False) -> TransformerConfig:
    return TransformerConfig(20, 20, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=2, n_decoder_layers=2,
                             norm_first=norm_first, share_embeddings=share, dropout=0.1)  # fmt: skip


def _parts_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    return torch.randint(1, 20, (3, 7)), torch.randint(1, 20, (3, 5))


# Drawn with seed 0 by the Transformer before it took parts: sum over the parameters, in the order of
# named_parameters(), of (position + 1) · sum |entries|; then two sums of the eval-mode logits.
_TODAYS_MODEL = {
    (False, False): (87, 93321.36323712918, 171.9640872371383, 257.6551113608293),
    (False, True): (86, 91431.46853190922, 115.37409914750606, 276.595932173077),
    (True, False): (91, 97960.30310184744, 302.0276412377134, 265.98744496982545),
    (True, True): (90, 96050.50805854774, -45.209820932883304, 300.729677936004),
}


@pytest.mark.parametrize(("norm_first", "share"), list(_TODAYS_MODEL))
def test_the_default_parts_give_the_same_model_as_before_parts_existed(norm_first: bool, share: bool) -> None:
    from torch import nn

    from transformer_course import PositionalEncoding, PositionwiseFeedForward, residual
    from transformer_course.embeddings import TokenEmbedding

    count, weights, weighted_logits, abs_logits = _TODAYS_MODEL[(norm_first, share)]
    config = _parts_config(norm_first, share)
    torch.manual_seed(0)
    model = Transformer(config).eval()
    named = list(model.named_parameters())
    assert len(named) == count
    assert sum((i + 1) * p.double().abs().sum().item() for i, (_, p) in enumerate(named)) == pytest.approx(
        weights, rel=1e-12
    )
    src, tgt = _parts_inputs()
    logits = model(src, tgt).double()  # (B, T, V)
    w = torch.arange(logits.numel(), dtype=torch.float64).reshape(logits.shape) % 7 + 1
    assert (logits * w).sum().item() == pytest.approx(weighted_logits, rel=1e-5)
    assert logits.abs().sum().item() == pytest.approx(abs_logits, rel=1e-5)
    # the defaults spelled out build the same model, weight for weight, and compute the same logits
    torch.manual_seed(0)
    spelled = Transformer(config, embedding=TokenEmbedding, positional=PositionalEncoding,
                          feed_forward=PositionwiseFeedForward, norm=lambda d: nn.LayerNorm(d, eps=config.layer_norm_eps),
                          connection=residual).eval()  # fmt: skip
    assert [n for n, _ in spelled.named_parameters()] == [n for n, _ in named]
    for (_, ours), (_, theirs) in zip(spelled.named_parameters(), named, strict=True):
        assert torch.equal(ours, theirs)
    torch.testing.assert_close(spelled(src, tgt).double(), logits, rtol=0, atol=0)


def test_passed_parts_are_the_ones_the_model_uses() -> None:
    from torch import nn

    from transformer_course import EncoderLayer, LearnedPositionalEmbedding
    from transformer_course.embeddings import TokenEmbedding

    built = []

    class GeluFeedForward(nn.Sequential):
        def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
            super().__init__(nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))
            built.append((d_model, d_ff, dropout))

    config = _parts_config(norm_first=True)
    torch.manual_seed(0)
    model = Transformer(config, embedding=lambda v, d, pad: TokenEmbedding(v, d, pad, init_std=1.0),
                        positional=LearnedPositionalEmbedding, feed_forward=GeluFeedForward, norm=RMSNorm)  # fmt: skip
    assert built == [(16, 32, 0.1)] * 4  # one per layer, 2 encoder + 2 decoder
    layers = [*model.encoder.layers, *model.decoder.layers]
    assert all(isinstance(layer.ffn, GeluFeedForward) for layer in layers)
    norms = [m for m in model.modules() if isinstance(m, RMSNorm)]
    assert len(norms) == 2 * 2 + 2 * 3 + 2 and not any(isinstance(m, nn.LayerNorm) for m in model.modules())
    assert model.encoder.norm is not None and isinstance(model.decoder.norm, RMSNorm)  # pre-LN's final norms
    assert isinstance(model.positional, LearnedPositionalEmbedding) and model.positional.max_len == config.max_len
    assert 0.8 < model.src_embed.weight[1:].std().item() < 1.25  # the embedding part's N(0, 1), not N(0, 1/16)
    assert model.tgt_embed.weight is model.output.weight, "the output layer stays tied to the target embedding"
    assert isinstance(EncoderLayer(16, 2, 32, feed_forward=GeluFeedForward).ffn, GeluFeedForward)
    src, tgt = _parts_inputs()
    assert model(src, tgt).shape == (3, 5, 20)


def test_a_model_without_residual_connections_uses_no_residual_in_every_layer() -> None:
    from transformer_course.sublayer import no_residual

    torch.manual_seed(0)
    model = Transformer(_parts_config(), connection=no_residual).eval()
    assert all(layer.connection is no_residual for layer in [*model.encoder.layers, *model.decoder.layers])
    layer, x = model.encoder.layers[0], torch.randn(2, 5, 16)
    h = layer.norm1(layer.self_attn(x, x, x)[0])  # LayerNorm(f(x)): no "x +"
    torch.testing.assert_close(layer(x), layer.norm2(layer.ffn(h)))


@pytest.mark.parametrize("part", ["embedding", "positional", "feed_forward", "norm"])
def test_a_part_must_be_a_builder_not_a_built_module(part: str) -> None:
    from torch import nn

    with pytest.raises(
        ValueError, match=f"{part} must be a class or a function that builds the module, called as {part}"
    ):
        Transformer(_parts_config(), **{part: nn.Identity()})
