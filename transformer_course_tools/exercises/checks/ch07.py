"""Checks for chapter 07 — counting parameters: one attention, one layer, the whole model.

The reference is a count read from a real module: the course's ``MultiHeadAttention``,
``EncoderLayer``, ``DecoderLayer`` and ``Transformer`` built on PyTorch's meta device (shapes, no
storage), each distinct ``Parameter`` counted once. No formula of the answer's is used: each known
mistake is the reference plus or minus the part it gets wrong (a bias, a tied matrix counted again,
a LayerNorm's gain without its bias …), so that the message names it.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor, nn

from transformer_course_tools.course import PACKAGE
from transformer_course_tools.exercises.probe.calls import call, calls_case, new
from transformer_course_tools.exercises.probe.wire import kind

from ._tools import CheckFailure, Mistakes, name_mistake
from .case import Case, Outcome
from .registry import exercise


def _meta_count(build) -> int:  # noqa: ANN001 - a function that builds a module
    """The number of distinct parameters of ``build()``, built on the meta device (no memory)."""
    with torch.device("meta"):
        built: nn.Module = build()
    return sum(p.numel() for p in built.parameters())  # parameters() yields a tied matrix once


def _expect_count(got: object, want: int, mistakes: Mistakes, label: str) -> None:
    """``got`` is the int ``want``; a known mistake is named, any other difference measured."""
    if isinstance(got, Tensor) and got.numel() == 1 and not got.is_floating_point():
        got = int(got.item())
    if isinstance(got, bool) or not isinstance(got, int):
        what = f"{label}: the result is {kind(got)}, not an int (a number of parameters)"
        fix = "use integer arithmetic (// rather than /)" if isinstance(got, float) else "return the count as an int"
        raise CheckFailure(f"{what}: {fix}", brief=what)
    name_mistake(got, want, mistakes, label, 0.0, 0.0)
    if got != want:
        raise CheckFailure(f"{label}: expected {want:,} parameters, got {got:,} ({got - want:+,})")


def _sizes_label(**sizes: object) -> str:
    return ", ".join(f"{name}={value}" for name, value in sizes.items() if value is not None)


# -- ex07_1: one multi-head attention ------------------------------------------------------------

# (D, H, d_k, d_v, bias): per-head sizes given with H·d_k ≠ D, one head, no biases, the paper's base
_ATTENTION = [(12, 3, None, None, True), (12, 3, 5, 7, True), (10, 2, 4, 6, False), (8, 2, None, None, False),
              (6, 1, None, None, True), (9, 3, 2, 2, True), (512, 8, None, None, True)]  # fmt: skip
_ATTENTION_LARGER = [(64, 8, None, None, True), (48, 4, 16, 10, True), (30, 5, 7, 3, False), (7, 7, None, None, True),
                     (20, 4, 9, 9, False), (1024, 16, None, None, True), (40, 2, 64, 8, True)]  # fmt: skip


def attention_parameters(d_model: int, n_heads: int, d_k: int | None = None, d_v: int | None = None,
                         bias: bool = True) -> int:  # fmt: skip
    """The stand-in: the four projections' (inputs, outputs), each with its weights and, with ``bias``, a bias."""
    d_k, d_v = d_k or d_model // n_heads, d_v or d_model // n_heads
    shapes = [(d_model, n_heads * d_k)] * 2 + [(d_model, n_heads * d_v), (n_heads * d_v, d_model)]
    return sum(inputs * outputs + (outputs if bias else 0) for inputs, outputs in shapes)


@exercise("ex07_1", "transformer_course.counting:attention_parameters", "easy", standin=attention_parameters)
def attention_parameters_cases(larger: bool = False) -> Iterator[Case]:
    """the parameters of one multi-head attention

    Nudge: four projections, each a matrix from its input features to its output features, plus a
    bias of its output size when there are biases; the heads sit side by side, so a projection's
    output holds the features of every head, not of one (paper §3.2.2).

    Hint: take d_k and d_v as given (the check of the arguments fills them in); W^Q and W^K each
    hold D × (n_heads·d_k) weights, W^V holds D × (n_heads·d_v) and W^O (n_heads·d_v) × D; with
    bias, add each one's output size; return the sum as an int.
    """
    from transformer_course.multihead import MultiHeadAttention  # the course's class, counted on the meta device

    for d, h, d_k, d_v, bias in _ATTENTION_LARGER if larger else _ATTENTION:
        label = f"attention_parameters({_sizes_label(d_model=d, n_heads=h, d_k=d_k, d_v=d_v)}, bias={bias})"
        count = _meta_count(lambda d=d, h=h, d_k=d_k, d_v=d_v, bias=bias: MultiHeadAttention(d, h, d_k, d_v, bias=bias))
        yield Case(label, calls_case(call(d, h, d_k, d_v, bias)), _judge_attention, {"count": count})


def _judge_attention(case: Case, got: Outcome) -> None:
    d, h, d_k, d_v, bias = case.args()
    d_k, d_v = (d // h if d_k is None else d_k), (d // h if d_v is None else d_v)
    want = case.given["count"]
    _expect_count(got.output(), want, _attention_mistakes(want, d, h, d_k, d_v, bias), case.label)


def _attention_mistakes(want: int, d: int, h: int, d_k: int, d_v: int, bias: bool) -> Mistakes:
    biases = 2 * h * d_k + h * d_v + d  # W^Q, W^K, W^V and W^O's biases: their output sizes
    weights = want - (biases if bias else 0)
    with_biases = bias or 0  # 1 when the biases count, 0 when not

    def count(q: int, v: int, out_bias: int = d, has_bias: int = with_biases) -> int:
        return 2 * (d * q + has_bias * q) + d * v + has_bias * v + v * d + has_bias * out_bias

    return [
        (weights, "the four biases are missing: with bias=True add each projection's bias, of its output size "
         "(n_heads·d_k, n_heads·d_k, n_heads·d_v and d_model)"),
        (want + biases, "the biases are counted though bias=False: count them only when bias is True"),
        (count(d, d), "the projections are counted as d_model × d_model, which holds only when d_k = d_v = "
         "d_model / n_heads: use n_heads·d_k features for W^Q and W^K, n_heads·d_v for W^V and W^O"),
        (count(d_k, d_v), "each projection is counted for one head (d_model × d_k): the heads sit side by side, "
         "so multiply d_k and d_v by n_heads"),
        (count(h * d_k, h * d_k), "the values are counted with d_k: W^V and W^O have n_heads·d_v features"),
        (want - (h * d_v * d + with_biases * d), "W^O is missing: add the output projection, n_heads·d_v → "
         "d_model"),
        (count(h * d_k, h * d_v, out_bias=h * d_v), "W^O's bias is counted with n_heads·d_v numbers: a bias has "
         "the output size, d_model for W^O"),
    ]  # fmt: skip


# -- ex07_2: one encoder or decoder layer --------------------------------------------------------

# (D, H, d_ff, d_k, d_v): the paper's base, per-head sizes given, one head, d_ff smaller than D
_LAYERS = [(12, 3, 20, None, None), (12, 3, 20, 5, 7), (8, 1, 32, None, None), (10, 2, 6, 3, 4),
           (512, 8, 2048, None, None)]  # fmt: skip
_LAYERS_LARGER = [(64, 8, 256, None, None), (48, 4, 100, 16, 10), (30, 5, 31, 7, 3), (16, 16, 8, None, None),
                  (1024, 16, 4096, None, None)]  # fmt: skip


def layer_parameters(d_model: int, n_heads: int, d_ff: int, d_k: int | None = None, d_v: int | None = None,
                     decoder: bool = False) -> int:  # fmt: skip
    """The stand-in: the attentions, the network's two linear layers with biases, a LayerNorm per sub-layer."""
    attentions = (2 if decoder else 1) * attention_parameters(d_model, n_heads, d_k, d_v)
    network = (d_model + 1) * d_ff + (d_ff + 1) * d_model
    return attentions + network + 2 * d_model * (3 if decoder else 2)


@exercise(
    "ex07_2", "transformer_course.counting:layer_parameters", "medium", needs=("ex07_1",), standin=layer_parameters
)
def layer_parameters_cases(larger: bool = False) -> Iterator[Case]:
    """the parameters of one encoder or decoder layer

    Nudge: a layer is its sub-layers: attention (two of them in the decoder: self- and
    cross-attention), the feed-forward network of two linear layers with biases, and one LayerNorm
    per sub-layer, which holds a gain and a bias (paper §3.1, §3.3).

    Hint: count one attention with attention_parameters, passing d_k and d_v on (the layers' attentions
    have biases); the network holds W₁ (d_model × d_ff), b₁ (d_ff), W₂ (d_ff × d_model) and b₂ (d_model);
    each LayerNorm 2·d_model; an encoder layer has two sub-layers, a decoder layer three, of which two
    are attentions.
    """
    from transformer_course.decoder import DecoderLayer  # the course's classes, counted on the meta device
    from transformer_course.encoder import EncoderLayer

    for d, h, d_ff, d_k, d_v in _LAYERS_LARGER if larger else _LAYERS:
        for decoder, layer in ((False, EncoderLayer), (True, DecoderLayer)):
            label = f"layer_parameters({_sizes_label(d_model=d, n_heads=h, d_ff=d_ff, d_k=d_k, d_v=d_v)}, decoder={decoder})"
            count = _meta_count(
                lambda layer=layer, d=d, h=h, d_ff=d_ff, d_k=d_k, d_v=d_v: layer(d, h, d_ff, d_k=d_k, d_v=d_v)
            )
            yield Case(label, calls_case(call(d, h, d_ff, d_k, d_v, decoder=decoder)), _judge_layer, {"count": count})


def _judge_layer(case: Case, got: Outcome) -> None:
    d, h, d_ff, d_k, d_v = case.args()
    d_k, d_v = (d // h if d_k is None else d_k), (d // h if d_v is None else d_v)
    want = case.given["count"]
    mistakes = _layer_mistakes(want, d, h, d_ff, d_k, d_v, case.kwargs()["decoder"])
    _expect_count(got.output(), want, mistakes, case.label)


def _layer_mistakes(want: int, d: int, h: int, d_ff: int, d_k: int, d_v: int, decoder: bool) -> Mistakes:
    attention = 2 * d * h * d_k + 2 * h * d_k + 2 * d * h * d_v + h * d_v + d  # one attention, with its biases
    attention_biases = 2 * h * d_k + h * d_v + d
    default = d // h  # the per-head size when d_k and d_v are left out
    default_attention = 4 * d * h * default + 3 * h * default + d
    attentions, norms = (2, 3) if decoder else (1, 2)
    mistakes = [
        (want - norms * d, "each LayerNorm is counted as d_model numbers: it holds a gain and a bias, 2·d_model"),
        (want - norms * 2 * d, "the LayerNorms are missing: add one per sub-layer, 2·d_model each (gain and bias)"),
        (want - d_ff - d, "the feed-forward biases are missing: add b₁ (d_ff numbers) and b₂ (d_model)"),
        (want - d * d_ff, "the feed-forward network is counted with one matrix: it holds W₁ (d_model × d_ff) and "
         "W₂ (d_ff × d_model)"),
        (want - attentions * attention_biases, "the attentions are counted without biases: the layers' attentions "
         "have them (MultiHeadAttention's default, bias=True)"),
        (want + attentions * (default_attention - attention), "d_k and d_v are not passed on: the attention "
         "counted with d_model // n_heads per head; pass d_k and d_v to attention_parameters"),
    ]  # fmt: skip
    if decoder:
        mistakes += [
            (want - attention - 2 * d, "the decoder layer is counted as an encoder layer: add its cross-attention "
             "and the LayerNorm around it"),
            (want - attention, "the cross-attention is missing: a decoder layer has two attentions, self- and "
             "cross-attention"),
            (want - 2 * d, "the decoder layer has two LayerNorms here: it has one per sub-layer, three"),
        ]  # fmt: skip
    else:
        mistakes.append((want + attention + 2 * d, "the encoder layer is counted with a cross-attention: only "
                         "a decoder layer (decoder=True) has one"))  # fmt: skip
    return mistakes


# -- ex07_3: the whole model ---------------------------------------------------------------------

_CONFIG = f"{PACKAGE}.config:TransformerConfig"
_SMALL = dict(d_model=12, n_heads=3, d_ff=20)
# (V_src, V_tgt, the fields that differ from the defaults): the paper's base (one shared matrix),
# separate vocabularies with the output tied or not, pre-LN, per-head sizes given, other depths
_MODELS = [
    (37_000, 37_000, dict(share_embeddings=True)),
    (50, 70, _SMALL | dict(n_encoder_layers=2, n_decoder_layers=3)),
    (50, 70, _SMALL | dict(n_encoder_layers=2, n_decoder_layers=1, tie_output=False)),
    (60, 60, _SMALL | dict(n_encoder_layers=2, n_decoder_layers=2, norm_first=True, share_embeddings=True)),
    (37_000, 37_000, dict(norm_first=True)),
    (40, 30, _SMALL | dict(n_encoder_layers=3, n_decoder_layers=2, d_k=5, d_v=7, norm_first=True, tie_output=False)),
    (80, 80, _SMALL | dict(n_encoder_layers=0, n_decoder_layers=2, max_len=64)),
    (37_000, 37_000, dict(d_model=1024, n_heads=16, d_ff=4096, share_embeddings=True)),
]
# fmt: off
_MODELS_LARGER = [
    (32_000, 32_000, dict(share_embeddings=True, norm_first=True)),
    (300, 500, dict(d_model=64, n_heads=4, d_ff=128, n_encoder_layers=4, n_decoder_layers=2)),
    (300, 500, dict(d_model=64, n_heads=4, d_ff=128, n_encoder_layers=1, n_decoder_layers=5, tie_output=False)),
    (257, 257, dict(d_model=48, n_heads=6, d_ff=96, n_encoder_layers=3, n_decoder_layers=3, norm_first=True,
                    share_embeddings=True, d_k=10, d_v=6)),
    (1000, 900, dict(d_model=40, n_heads=5, d_ff=50, n_encoder_layers=2, n_decoder_layers=0, norm_first=True,
                     tie_output=False)),
    (37_000, 37_000, dict(d_model=1024, n_heads=16, d_ff=4096, norm_first=True)),
]
# fmt: on


@exercise("ex07_3", "transformer_course.counting:transformer_parameters", "hard", needs=("ex07_2",))
def transformer_parameters_cases(larger: bool = False) -> Iterator[Case]:
    """the parameters of the whole Transformer, from its configuration

    Nudge: the model is its embeddings, N encoder and N decoder layers and the output layer; a matrix
    shared by several parts is one set of parameters, counted once (paper §3.4), and a pre-LN stack
    ends with one more LayerNorm.

    Hint: count the layers with layer_parameters (n_encoder_layers encoder layers, n_decoder_layers
    decoder layers, d_k and d_v passed on); add the source embedding (src_vocab_size × d_model) and,
    unless share_embeddings, the target's; the output layer has a bias of tgt_vocab_size and a
    matrix of its own only when neither tie_output nor share_embeddings; with norm_first add
    2·d_model for each stack's final LayerNorm; the positional table has no parameters.
    """
    from transformer_course.config import TransformerConfig  # the course's classes, counted on the meta device
    from transformer_course.model import Transformer

    for v_src, v_tgt, fields in _MODELS_LARGER if larger else _MODELS:
        label = f"TransformerConfig({v_src}, {v_tgt}{''.join(f', {k}={v}' for k, v in fields.items())})"
        count = _meta_count(lambda v_src=v_src, v_tgt=v_tgt, fields=fields: Transformer(
            TransformerConfig(v_src, v_tgt, **fields), positional=_fixed_positions))  # fmt: skip
        config = TransformerConfig(v_src, v_tgt, **fields)  # the judge's copy: every field, defaults too
        probe = calls_case(call(new(_CONFIG, v_src, v_tgt, **fields)))
        yield Case(label, probe, _judge_transformer, {"count": count, "config": config})


def _fixed_positions(d_model: int, max_len: int, dropout: float) -> nn.Module:
    """The positional part without its sinusoid table, which is a buffer (no parameters) and whose
    code is another exercise's (ex02_1): the reference must not run it."""
    return nn.Dropout(dropout)


def _judge_transformer(case: Case, got: Outcome) -> None:
    want, config = case.given["count"], case.given["config"]
    _expect_count(got.output(), want, _transformer_mistakes(want, config), case.label)


def _encoder_layer(config) -> int:  # noqa: ANN001 - a TransformerConfig
    """One encoder layer of ``config``, counted on the meta device."""
    from transformer_course.encoder import EncoderLayer

    return _meta_count(
        lambda: EncoderLayer(config.d_model, config.n_heads, config.d_ff, d_k=config.d_k, d_v=config.d_v)
    )


def _decoder_layer(config) -> int:  # noqa: ANN001 - a TransformerConfig
    """One decoder layer of ``config``, counted on the meta device."""
    from transformer_course.decoder import DecoderLayer

    return _meta_count(
        lambda: DecoderLayer(config.d_model, config.n_heads, config.d_ff, d_k=config.d_k, d_v=config.d_v)
    )


def _transformer_mistakes(want: int, c) -> Mistakes:  # noqa: ANN001 - a TransformerConfig
    d, shared, tied = c.d_model, c.share_embeddings, c.tie_output or c.share_embeddings
    encoder_layer, decoder_layer = _encoder_layer(c), _decoder_layer(c)
    mistakes = [
        (want - c.tgt_vocab_size, "the output layer's bias (tgt_vocab_size numbers) is missing: add it; tying "
         "shares the matrix, not the bias"),
        (want + c.max_len * d, "the positional table (max_len × d_model) is counted: the sinusoids are a fixed "
         "table, not parameters; leave it out"),
        (want + c.n_decoder_layers * (encoder_layer - decoder_layer), "the decoder's layers are counted as encoder "
         "layers: pass decoder=True to layer_parameters for them"),
        (want + (c.n_encoder_layers - c.n_decoder_layers) * decoder_layer, "the decoder is counted with "
         "n_encoder_layers: use n_decoder_layers for it"),
        (want + (c.n_decoder_layers - c.n_encoder_layers) * encoder_layer, "the encoder is counted with "
         "n_decoder_layers: use n_encoder_layers for it"),
    ]  # fmt: skip
    if c.src_vocab_size != c.tgt_vocab_size:
        wrong_rows = c.src_vocab_size - c.tgt_vocab_size
        target_matrices = (0 if shared else 1) + (0 if tied else 1)  # the target embedding and the output matrix
        mistakes.append((want + wrong_rows * (target_matrices * d + 1), "the target side is counted with "
                         "src_vocab_size: the target embedding and the output layer have tgt_vocab_size rows"))  # fmt: skip
    if tied:
        mistakes.append((want + c.tgt_vocab_size * d, "the output matrix is counted though it is tied to the "
                         "target embedding (tie_output or share_embeddings): a tied matrix is one parameter, "
                         "count it once"))  # fmt: skip
    else:
        mistakes.append((want - c.tgt_vocab_size * d, "the output matrix is missing: with tie_output=False it is "
                         "a matrix of its own, d_model × tgt_vocab_size"))  # fmt: skip
    if shared:
        mistakes += [
            (want + c.src_vocab_size * d, "the shared embedding is counted for the source and the target: with "
             "share_embeddings one matrix serves both, count it once"),
            (want + 2 * c.src_vocab_size * d, "the one shared matrix is counted three times (source, target, "
             "output): count it once"),
        ]  # fmt: skip
    else:
        mistakes.append((want - c.tgt_vocab_size * d, "the target embedding is missing: without share_embeddings "
                         "the target has a matrix of its own, tgt_vocab_size × d_model"))  # fmt: skip
    if c.norm_first:
        mistakes += [
            (want - 4 * d, "the final LayerNorms of pre-LN are missing: with norm_first each stack, the encoder "
             "and the decoder, ends with one more LayerNorm (2·d_model)"),
            (want - 2 * d, "one final LayerNorm is counted: with norm_first both stacks, the encoder and the "
             "decoder, end with one (2·d_model each)"),
        ]  # fmt: skip
    else:
        mistakes.append((want + 4 * d, "final LayerNorms are counted for a post-LN model: only pre-LN stacks "
                         "(norm_first=True) end with one"))  # fmt: skip
    return mistakes
