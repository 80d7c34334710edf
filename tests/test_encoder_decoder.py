"""Encoder and decoder (chapters 05–06): equal to PyTorch's layers through ``from_torch``, and the
behaviours that catch the classic bugs (future leaks, padding leaks, cross-attention on itself)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer_course import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    PositionwiseFeedForward,
    causal_mask,
    padding_mask,
    residual,
    target_mask,
)
from transformer_course.rmsnorm import RMSNorm

# odd sizes so that a wrong axis cannot broadcast by luck: B=2, S=5, T=7, D=12, H=3
B, S, T, D, H, D_FF = 2, 5, 7, 12, 3, 20
SRC = torch.tensor([[5, 6, 7, 0, 0], [4, 4, 4, 4, 4]])  # (B, S), pad id 0
TGT = torch.tensor([[1, 5, 6, 7, 0, 0, 0], [1, 2, 3, 4, 5, 6, 7]])  # (B, T)
ATOL = 1e-5  # float32


def _randomise_norms(module: nn.Module) -> None:
    with torch.no_grad():
        for norm in (m for m in module.modules() if isinstance(m, nn.LayerNorm)):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.normal_(0.0, 0.5)


def _torch_encoder_layer(norm_first: bool, dropout: float = 0.0) -> nn.TransformerEncoderLayer:
    layer = nn.TransformerEncoderLayer(D, H, D_FF, dropout=dropout, batch_first=True, norm_first=norm_first)
    _randomise_norms(layer)
    return layer


def _torch_decoder_layer(norm_first: bool, dropout: float = 0.0) -> nn.TransformerDecoderLayer:
    layer = nn.TransformerDecoderLayer(D, H, D_FF, dropout=dropout, batch_first=True, norm_first=norm_first)
    _randomise_norms(layer)
    return layer


# -- equality with PyTorch's layers -------------------------------------------------------------


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("masked", [False, True], ids=["no-mask", "padding-mask"])
@pytest.mark.parametrize("torch_mode", ["train", "eval"])
def test_encoder_layer_equals_pytorchs(norm_first: bool, masked: bool, torch_mode: str) -> None:
    reference = _torch_encoder_layer(norm_first)
    ours = EncoderLayer.from_torch(reference).eval()
    reference.train(torch_mode == "train")  # eval + no_grad lets PyTorch take its fused fast path
    x = torch.randn(B, S, D)
    with torch.no_grad():
        want = reference(x, src_key_padding_mask=(SRC == 0) if masked else None)  # PyTorch: True = blocked
        got = ours(x, padding_mask(SRC, 0) if masked else None)  # ours: True = may attend
    torch.testing.assert_close(got, want, atol=ATOL, rtol=0)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("masked", [False, True], ids=["no-mask", "causal+padding-masks"])
def test_decoder_layer_equals_pytorchs(norm_first: bool, masked: bool) -> None:
    reference = _torch_decoder_layer(norm_first)
    ours = DecoderLayer.from_torch(reference).eval()
    x, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    theirs = dict(tgt_mask=~causal_mask(T), tgt_key_padding_mask=TGT == 0, memory_key_padding_mask=SRC == 0)
    with torch.no_grad():
        want = reference(x, memory, **theirs) if masked else reference(x, memory)
        got = ours(x, memory, target_mask(TGT, 0), padding_mask(SRC, 0)) if masked else ours(x, memory)
    torch.testing.assert_close(got, want, atol=ATOL, rtol=0)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_encoder_and_decoder_stacks_equal_pytorchs(norm_first: bool) -> None:
    n_layers = 3
    final = nn.LayerNorm(D) if norm_first else None  # pre-LN stacks end with a LayerNorm
    torch_encoder = nn.TransformerEncoder(
        _torch_encoder_layer(norm_first), n_layers, norm=final, enable_nested_tensor=False
    )
    torch_decoder = nn.TransformerDecoder(
        _torch_decoder_layer(norm_first), n_layers, norm=nn.LayerNorm(D) if norm_first else None
    )
    for stack in (torch_encoder, torch_decoder):
        for layer in stack.layers:  # make the copies differ, so a layer used twice would show
            nn.init.normal_(layer.linear1.weight, std=0.2)
        _randomise_norms(stack)

    def copy_norm(norm: nn.Module | None) -> nn.Module | None:
        if norm is None:
            return None
        ours = nn.LayerNorm(D)
        ours.load_state_dict(norm.state_dict())
        return ours

    encoder = Encoder([EncoderLayer.from_torch(la) for la in torch_encoder.layers], copy_norm(torch_encoder.norm))
    decoder = Decoder([DecoderLayer.from_torch(la) for la in torch_decoder.layers], copy_norm(torch_decoder.norm))
    encoder.eval(), decoder.eval(), torch_encoder.train(), torch_decoder.train()  # dropout 0: same numbers
    src, tgt = torch.randn(B, S, D), torch.randn(B, T, D)
    with torch.no_grad():
        want_memory = torch_encoder(src, src_key_padding_mask=SRC == 0)
        want = torch_decoder(
            tgt, want_memory, tgt_mask=~causal_mask(T), tgt_key_padding_mask=TGT == 0, memory_key_padding_mask=SRC == 0
        )
        memory = encoder(src, padding_mask(SRC, 0))
        got = decoder(tgt, memory, target_mask(TGT, 0), padding_mask(SRC, 0))
    torch.testing.assert_close(memory, want_memory, atol=ATOL, rtol=0)
    torch.testing.assert_close(got, want, atol=ATOL, rtol=0)


def test_from_torch_keeps_float64_precision() -> None:
    encoder_ref = _torch_encoder_layer(norm_first=False).double()
    decoder_ref = _torch_decoder_layer(norm_first=True).double()
    encoder, decoder = EncoderLayer.from_torch(encoder_ref).eval(), DecoderLayer.from_torch(decoder_ref).eval()
    assert all(p.dtype == torch.float64 for p in [*encoder.parameters(), *decoder.parameters()])
    x, memory = torch.randn(B, T, D, dtype=torch.float64), torch.randn(B, S, D, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(encoder(x), encoder_ref(x), atol=1e-12, rtol=0)
        torch.testing.assert_close(decoder(x, memory, None, None), decoder_ref(x, memory), atol=1e-12, rtol=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(batch_first=False), "batch_first=True"),
        (dict(batch_first=True, activation="gelu"), "ReLU"),
        (dict(batch_first=True, bias=False), "bias=True"),
    ],
)
def test_from_torch_rejects_layers_it_cannot_copy(kwargs: dict, message: str) -> None:
    for layer_class, ours in ((nn.TransformerEncoderLayer, EncoderLayer), (nn.TransformerDecoderLayer, DecoderLayer)):
        with pytest.raises(ValueError, match=message):
            ours.from_torch(layer_class(D, H, D_FF, **kwargs))


# -- the building blocks --------------------------------------------------------------------------


def test_feed_forward_is_equation_2_applied_to_each_position_alone() -> None:
    ffn = PositionwiseFeedForward(D, D_FF).eval()
    x = torch.randn(B, T, D)
    want = F.linear(F.relu(F.linear(x, ffn.linear1.weight, ffn.linear1.bias)), ffn.linear2.weight, ffn.linear2.bias)
    torch.testing.assert_close(ffn(x), want)
    changed = x.clone()
    changed[:, 3] += 1.0  # change one position: only that position's output may change
    diff = (ffn(changed) - ffn(x)).abs().amax(dim=-1)  # (B, T)
    assert torch.all(diff[:, 3] > 0)
    assert torch.all(diff[:, [0, 1, 2, 4, 5, 6]] == 0)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_residual_is_post_ln_or_pre_ln(norm_first: bool) -> None:
    norm = nn.LayerNorm(D)
    _randomise_norms(norm)
    linear = nn.Linear(D, D)
    x = 3 * torch.randn(B, T, D) + 1
    got = residual(x, lambda h: torch.tanh(linear(h)), norm, nn.Dropout(0.0), norm_first)
    want = x + torch.tanh(linear(norm(x))) if norm_first else norm(x + torch.tanh(linear(x)))
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_no_residual_is_residual_without_the_shortcut(norm_first: bool) -> None:
    from transformer_course.sublayer import no_residual

    norm, linear, x = nn.LayerNorm(D), nn.Linear(D, D), torch.randn(B, T, D)
    _randomise_norms(norm)
    got = no_residual(x, lambda h: torch.tanh(linear(h)), norm, nn.Dropout(0.0), norm_first)
    want = torch.tanh(linear(norm(x))) if norm_first else norm(torch.tanh(linear(x)))
    torch.testing.assert_close(got, want)


def test_the_decoder_layer_is_its_own_class_with_pytorchs_names() -> None:
    layer = DecoderLayer(D, H, D_FF)
    assert not isinstance(layer, EncoderLayer)
    names = {name.split(".")[0] for name, _ in layer.named_modules() if name}
    assert names == {"self_attn", "cross_attn", "ffn", "norm1", "norm2", "norm3", "dropout1", "dropout2", "dropout3"}
    keys = {key.rsplit(".", 1)[0] for key in layer.state_dict() if key.startswith("norm")}
    assert keys == {"norm1", "norm2", "norm3"}  # what the shipped checkpoint holds
    torch.manual_seed(0)
    theirs = nn.TransformerDecoderLayer(D, H, D_FF, dropout=0.0, batch_first=True)
    _randomise_norms(theirs)
    ours = DecoderLayer.from_torch(theirs)
    for i in (1, 2, 3):  # PyTorch's norm{i} lands in our norm{i}
        torch.testing.assert_close(getattr(ours, f"norm{i}").weight, getattr(theirs, f"norm{i}").weight)


def test_a_layer_uses_its_norm_and_feed_forward_parts() -> None:
    for layer in (EncoderLayer(D, H, D_FF, norm=RMSNorm, feed_forward=lambda d, f, p: nn.Linear(d, d)),
                  DecoderLayer(D, H, D_FF, norm=RMSNorm, feed_forward=lambda d, f, p: nn.Linear(d, d))):  # fmt: skip
        assert isinstance(layer.ffn, nn.Linear)
        assert all(isinstance(m, RMSNorm) for name, m in layer.named_children() if name.startswith("norm"))
    with pytest.raises(ValueError, match="feed_forward must be a class or a function"):
        EncoderLayer(D, H, D_FF, feed_forward=PositionwiseFeedForward(D, D_FF))


def test_dropout_makes_training_random_and_evaluation_deterministic() -> None:
    layer = EncoderLayer(D, H, D_FF, dropout=0.3)
    x = torch.randn(B, S, D)
    assert not torch.allclose(layer.train()(x), layer(x))
    layer.eval()
    assert torch.equal(layer(x), layer(x))


# -- behaviours -------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_encoder_ignores_what_sits_in_padded_positions(norm_first: bool) -> None:
    layer = EncoderLayer(D, H, D_FF, dropout=0.0, norm_first=norm_first).eval()
    x = torch.randn(B, S, D)
    changed = x.clone()
    changed[0, 3:] = torch.randn(2, D)  # sequence 0 is padded at positions 3 and 4
    mask = padding_mask(SRC, 0)
    torch.testing.assert_close(layer(changed, mask)[0, :3], layer(x, mask)[0, :3], atol=ATOL, rtol=0)
    assert not torch.allclose(layer(changed)[0, :3], layer(x)[0, :3]), "without the mask the change should show"


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_decoder_layer_never_looks_at_the_future(mode: str) -> None:
    layer = DecoderLayer(D, H, D_FF, dropout=0.0).train(mode == "train")
    x, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    changed = x.clone()
    changed[:, 4:] += torch.randn(B, T - 4, D)
    before = layer(x, memory, causal_mask(T))
    after = layer(changed, memory, causal_mask(T))
    torch.testing.assert_close(after[:, :4], before[:, :4], atol=ATOL, rtol=0)
    assert not torch.allclose(after[:, 4:], before[:, 4:])


def test_decoder_output_depends_on_the_memory_but_not_on_its_padding() -> None:
    decoder = Decoder([DecoderLayer(D, H, D_FF, dropout=0.0) for _ in range(2)]).eval()
    x, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    mask = padding_mask(SRC, 0)
    base = decoder(x, memory, causal_mask(T), mask)
    assert not torch.allclose(decoder(x, memory + torch.randn_like(memory), causal_mask(T), mask), base)
    padded_changed = memory.clone()
    padded_changed[0, 3:] = torch.randn(2, D)  # padded source positions of sequence 0
    torch.testing.assert_close(decoder(x, padded_changed, causal_mask(T), mask), base, atol=ATOL, rtol=0)


def test_layers_reject_inputs_of_the_wrong_shape() -> None:
    encoder_layer, decoder_layer = EncoderLayer(D, H, D_FF), DecoderLayer(D, H, D_FF)
    with pytest.raises(ValueError, match="query"):
        encoder_layer(torch.randn(S, D))  # no batch axis
    with pytest.raises(ValueError, match="d_model=12"):
        encoder_layer(torch.randn(B, S, D + 1))
    with pytest.raises(ValueError, match="batch size"):
        decoder_layer(torch.randn(B, T, D), torch.randn(B + 1, S, D))
    with pytest.raises(ValueError, match="mask"):
        decoder_layer(torch.randn(B, T, D), torch.randn(B, S, D), memory_mask=padding_mask(SRC[:, :4], 0))
