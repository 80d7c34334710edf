"""Reading a model into a :class:`~.plan.Plan`, as CTranslate2 and llama.cpp convert a checkpoint.

The engine runs the course's own parts: the translator of chapter 06 (``Transformer``) and the
language model of chapter 13 (``DecoderOnlyLM``), with every choice of their configurations and
the checkpoints chapter 15 converts (Marian, GPT-2, Llama), in float32, bfloat16 or int8
(``quantize``). A part it does not know (a learner's own ``positional=...``, a ``connection``
other than ``residual``) is refused in one line that says to decode with ``path="modules"``.

The learner's rooms are imported here, when a model is read, never when the engine is imported:
a room that is still being written cannot stop the engine from loading.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .parts import CrossAttention, Embedding, FeedForward, Layer, Norm, Plan, SelfAttention
from .weights import read_dense


class NotSupported(ValueError):
    """A model, or a part of it, that the engine does not run."""


def refuse(where: str, what: object) -> NotSupported:
    kind = type(what).__name__
    return NotSupported(
        f"the engine runs the course's own parts, and {where} is a {kind}: decode this model with path='modules'"
    )


def read_model(model: nn.Module) -> Plan:
    """The plan of a ``Transformer`` (chapter 06) or a ``DecoderOnlyLM`` (chapter 13).

    The two are told apart by their parts, not by importing their classes: chapter 13's ``generate``
    hands its calls to the engine, which must not import it back. Each part is then read by its
    class, and a part of another class is refused.
    """
    if _has(model, "src_embed", "tgt_embed", "encoder", "decoder", "output"):
        return _read_translator(model)
    if _has(model, "embed", "positional", "layers", "norm", "output"):
        return _read_language_model(model)
    raise refuse("the model", model)


def _has(model: nn.Module, *parts: str) -> bool:
    return all(isinstance(getattr(model, part, None), nn.Module) for part in parts)


def _read_translator(model: nn.Module) -> Plan:
    c = model.config
    encoder = [_read_layer(layer, "encoder") for layer in model.encoder.layers]
    decoder = [_read_layer(layer, "decoder") for layer in model.decoder.layers]
    kv = [linear for layer in model.decoder.layers for linear in (layer.cross_attn.w_k, layer.cross_attn.w_v)]
    fold = _folds(model.decoder.norm, model.output.weight)  # the last norm folds into the output layer
    return Plan(
        layers=decoder,
        embed=_read_embedding(model.tgt_embed, model.positional),
        final_norm=_read_final_norm(model.decoder.norm, folded=fold),
        output=read_dense([model.output], fold=_fold(model.decoder.norm) if fold else None,
                          forbidden=(c.pad_id, c.bos_id)),  # never a next token
        d_model=c.d_model, max_len=c.max_len, **_where(model), pad_id=c.pad_id, bos_id=c.bos_id, eos_id=c.eos_id,
        src_embed=_read_embedding(model.src_embed, model.positional),
        encoder=encoder,
        encoder_norm=_read_final_norm(model.encoder.norm),
        memory_kv=read_dense(kv) if kv else None,
    )  # fmt: skip


def _read_language_model(model: nn.Module) -> Plan:
    c = model.config
    fold = _folds(model.norm, model.output.weight)  # the last norm folds into the output layer
    return Plan(
        layers=[_read_layer(layer, "layer") for layer in model.layers],
        embed=_read_embedding(model.embed, None if c.positional == "rope" else model.positional),
        final_norm=_read_final_norm(model.norm, folded=fold),
        output=read_dense([model.output], fold=_fold(model.norm) if fold else None),
        d_model=c.d_model, max_len=c.max_len, **_where(model), pad_id=c.pad_id, bos_id=c.bos_id, eos_id=c.eos_id,
    )  # fmt: skip


def _where(model: nn.Module) -> dict:
    weight = next(model.parameters())
    dtype = weight.dtype if weight.dtype.is_floating_point else torch.float32  # int8 models compute in float32
    return {"dtype": next((p.dtype for p in model.parameters() if p.dtype.is_floating_point), dtype),
            "device": weight.device}  # fmt: skip


def _read_layer(layer: nn.Module, where: str) -> Layer:
    from transformer_course.sublayer import residual

    if getattr(layer, "connection", residual) is not residual:
        raise refuse(f"the {where} layer's connection", layer.connection)
    cross = getattr(layer, "cross_attn", None)
    n_norms = 3 if cross is not None else 2
    norms = [getattr(layer, f"norm{i}") for i in range(1, n_norms + 1)]
    # pre-LN: each norm's gain and shift fold into the matrix that reads its output, in float32 only
    # (folded into bfloat16 or int8 weights, they would round differently from the model's own numbers)
    fold = layer.norm_first and layer.self_attn.w_q.weight.dtype == torch.float32
    self_attn = _read_self_attention(layer.self_attn, norms[0] if fold else None)
    cross_attn = None if cross is None else _read_cross_attention(cross, norms[1] if fold else None)
    ffn = _read_feed_forward(layer.ffn, norms[-1] if fold else None)
    return Layer(layer.norm_first, [_read_norm(n, folded=fold) for n in norms], self_attn, cross_attn, ffn)


def _folds(model_norm: nn.Module, weight: nn.Parameter) -> bool:
    """Whether a final pre-LN norm folds into the output layer: float32 weights and a norm."""
    return not isinstance(model_norm, nn.Identity) and weight.dtype == torch.float32


def _read_self_attention(attention: nn.Module, norm: nn.Module | None) -> SelfAttention:
    from transformer_course.grouped import GroupedQueryAttention
    from transformer_course.multihead import MultiHeadAttention
    from transformer_course.rotary import RotaryAttention

    if type(attention) not in (MultiHeadAttention, GroupedQueryAttention, RotaryAttention):
        raise refuse("an attention", attention)
    a = attention
    qkv = read_dense([a.w_q, a.w_k, a.w_v], fold=_fold(norm))
    rope = a.base if isinstance(a, RotaryAttention) else None
    return SelfAttention(qkv, read_dense([a.w_o]), a.n_heads, a.n_kv_heads, a.d_k, a.d_v, rope)


def _read_cross_attention(attention: nn.Module, norm: nn.Module | None) -> CrossAttention:
    a = attention
    q = read_dense([a.w_q], fold=_fold(norm))
    return CrossAttention(q, read_dense([a.w_o]), a.n_heads, a.d_k, a.d_v)


def _read_feed_forward(ffn: nn.Module, norm: nn.Module | None) -> FeedForward:
    from transformer_course.feedforward import PositionwiseFeedForward
    from transformer_course.swiglu import SwiGLU

    if type(ffn) is SwiGLU:
        return FeedForward(read_dense([ffn.w1, ffn.w3], fold=_fold(norm)), read_dense([ffn.w2]), "swish", True)
    if type(ffn) is PositionwiseFeedForward:
        up = read_dense([ffn.linear1], fold=_fold(norm))
        return FeedForward(up, read_dense([ffn.linear2]), ffn.activation_name, False)
    raise refuse("a feed-forward network", ffn)


def _read_norm(norm: nn.Module, folded: bool) -> Norm:
    from transformer_course.rmsnorm import RMSNorm

    if type(norm) is nn.LayerNorm:
        weight, bias = norm.weight, norm.bias
        return Norm("layer", None if folded else _copy(weight), None if folded else _copy(bias), norm.eps)
    if type(norm) is RMSNorm:
        if norm.weight.dtype != torch.float32:  # bfloat16: RMSNorm's own steps, which round as the module's do
            return Norm("rms", _copy(norm.weight), None, norm.eps)
        size = norm.weight.shape[0]
        gain = None if folded else norm.weight.detach() * size**0.5  # √D · g (see Norm)
        floor = torch.full((1,), (size * norm.eps) ** 0.5, device=norm.weight.device)  # √(D·ε)
        return Norm("rms_sum", gain, None, norm.eps, floor)
    raise refuse("a norm", norm)


def _read_final_norm(norm: nn.Module, folded: bool = False) -> Norm | None:
    return None if isinstance(norm, nn.Identity) else _read_norm(norm, folded)


def _fold(norm: nn.Module | None) -> tuple[Tensor, Tensor | None] | None:
    """A pre-LN norm's (gain, shift) to fold into the next matrix; None where nothing is folded. An
    RMSNorm's gain comes times √D (see :class:`~.plan.Norm`)."""
    if norm is None:
        return None
    kind = _read_norm(norm, folded=True).kind  # refuses a norm the engine does not know
    gain = norm.weight.detach() * (norm.weight.shape[0] ** 0.5 if kind == "rms_sum" else 1.0)
    return gain, None if getattr(norm, "bias", None) is None else norm.bias.detach()


def _read_embedding(embedding: nn.Module, positional: nn.Module | None) -> Embedding:
    from transformer_course.embeddings import TokenEmbedding, UnscaledEmbedding
    from transformer_course.positional import LearnedPositionalEmbedding, PositionalEncoding

    if type(embedding) not in (TokenEmbedding, UnscaledEmbedding):
        raise refuse("an embedding", embedding)
    lookup = embedding.embedding  # nn.Embedding, or chapter 16's Int8Embedding (weight q, scale)
    scale = 1.0 if type(embedding) is UnscaledEmbedding else math.sqrt(embedding.d_model)
    row_scale = _copy(lookup.scale) if hasattr(lookup, "scale") else None
    if positional is None:
        positions = None
    elif type(positional) is PositionalEncoding:
        positions = _copy(positional.pe)
    elif type(positional) is LearnedPositionalEmbedding:
        positions = _copy(positional.embedding.weight)
    else:
        raise refuse("the positional part", positional)
    table = lookup.weight.detach()
    if positions is not None and row_scale is None:
        positions = positions.to(table.dtype)
    return Embedding(table, row_scale, scale, positions)


def _copy(t: Tensor | None) -> Tensor | None:
    return None if t is None else t.detach().clone()
