"""Reading a model into a :class:`~.plan.Plan`, as CTranslate2 and llama.cpp convert a checkpoint.

The engine runs the course's own parts: the translator of chapter 06 (``Transformer``) and the
language model of chapter 13 (``DecoderOnlyLM``), with every choice of their configurations and
the checkpoints chapter 15 converts (Marian, GPT-2, Llama), in float32, bfloat16 or int8
(``quantize``). A part it does not know (a learner's own ``positional=...``, a ``connection``
other than ``residual``) is refused in one line that says to decode with ``path="modules"``.

The engine imports no room when it loads, and reads only the rooms the model is made of: a part
is recognised by its class, looked up in its room only if that room is already imported (a model
holding a ``RotaryAttention`` imported ``rotary.py``). So a room that is still being written, in
a later chapter, cannot stop the engine from decoding an earlier chapter's model; where the engine
must import a room and cannot, one line names the file.

Where the engine would run its own version of a learner's part, it does so only in float32, whose
rounding errors are too small to change a token: an RMSNorm (chapter 13) folded into the matrix
after it, a SwiGLU network's two first matrices stacked. In bfloat16, and before int8 products
(which round each input row to whole numbers, so that a last-bit difference can move a value to
the next whole number), it runs the learner's own module there, so that the two paths round alike
however the learner wrote it. (In bfloat16 the heads of several positions also go through the
learner's own ``merge_heads`` before W^O: a bfloat16 product rounds by the layout it reads.)
"""

from __future__ import annotations

import copy
import importlib
import math
import sys

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

    The two are told apart by their parts, not by importing their classes (chapter 13's room is
    read only for a model made of it). Each part is then read by its class, and a part of another
    class is refused.
    """
    if _has(model, "src_embed", "tgt_embed", "encoder", "decoder", "output"):
        return _read_translator(model)
    if _has(model, "embed", "positional", "layers", "norm", "output"):
        return _read_language_model(model)
    raise refuse("the model", model)


def _has(model: nn.Module, *parts: str) -> bool:
    return all(isinstance(getattr(model, part, None), nn.Module) for part in parts)


def _read_translator(model: nn.Module) -> Plan:
    c, exact = model.config, _float32(model)
    encoder = [_read_layer(layer, "encoder", exact) for layer in model.encoder.layers]
    decoder = [_read_layer(layer, "decoder", exact) for layer in model.decoder.layers]
    kv = [linear for layer in model.decoder.layers for linear in (layer.cross_attn.w_k, layer.cross_attn.w_v)]
    fold = exact and not isinstance(model.decoder.norm, nn.Identity)  # the last norm folds into the output layer
    return Plan(
        layers=decoder,
        embed=_read_embedding(model.tgt_embed, model.positional),
        final_norm=_read_final_norm(model.decoder.norm, fold, exact),
        output=read_dense([model.output], fold=_fold(model.decoder.norm) if fold else None,
                          forbidden=room("decoding").never_next(c)),  # never a next token
        d_model=c.d_model, max_len=c.max_len, **_where(model), pad_id=c.pad_id, bos_id=c.bos_id, eos_id=c.eos_id,
        src_embed=_read_embedding(model.src_embed, model.positional),
        encoder=encoder,
        encoder_norm=_read_final_norm(model.encoder.norm, False, exact),
        memory_kv=read_dense(kv) if kv else None,
    )  # fmt: skip


def _read_language_model(model: nn.Module) -> Plan:
    c, exact = model.config, _float32(model)
    fold = exact and not isinstance(model.norm, nn.Identity)  # the last norm folds into the output layer
    rope = c.positional == "rope"
    return Plan(
        layers=[_read_layer(layer, "layer", exact) for layer in model.layers],
        embed=_read_embedding(model.embed, None if rope else model.positional),
        final_norm=_read_final_norm(model.norm, fold, exact),
        output=read_dense([model.output], fold=_fold(model.norm) if fold else None,
                          forbidden=room("decoding").never_next(c)),  # never a next token
        d_model=c.d_model, max_len=c.max_len, **_where(model), pad_id=c.pad_id, bos_id=c.bos_id, eos_id=c.eos_id,
    )  # fmt: skip


def _float32(model: nn.Module) -> bool:
    """Whether the model's products are float32 (not bfloat16, not int8): where the engine may run
    its own versions of the learner's parts (see the module)."""
    return model.output.weight.dtype == torch.float32


def _where(model: nn.Module) -> dict:
    weight = next(model.parameters())
    dtype = weight.dtype if weight.dtype.is_floating_point else torch.float32  # int8 models compute in float32
    return {"dtype": next((p.dtype for p in model.parameters() if p.dtype.is_floating_point), dtype),
            "device": weight.device}  # fmt: skip


# -- the learner's rooms: read only those the model is made of -----------------------------------

_ROOMS = "transformer_course"  # the rooms' package (the engine lives in the course's other one)


def loaded(room_name: str, name: str) -> type | None:
    """``name`` in the room ``room_name`` if that room is imported, else None (and nothing is
    imported: a model holding one of its parts has imported it)."""
    return getattr(sys.modules.get(f"{_ROOMS}.{room_name}"), name, None)


def _is(part: object, room_name: str, name: str) -> bool:
    cls = loaded(room_name, name)
    return cls is not None and type(part) is cls


def room(name: str):  # noqa: ANN201 - a module
    """The room ``name`` (one the model being read is made of, or chapter 09's decoding), imported;
    a room that does not import (a learner's file in progress) is one line that names the file."""
    try:
        return importlib.import_module(f"{_ROOMS}.{name}")
    except Exception as error:  # noqa: BLE001 - whatever stops a room being written: say which file
        first = (str(error).splitlines() or [""])[0]
        raise NotSupported(f"the engine reads {_ROOMS}/{name}.py, which does not import ({type(error).__name__}: "
                           f"{first}): fix it, or decode with path='modules'") from None  # fmt: skip


def _read_layer(layer: nn.Module, where: str, exact: bool) -> Layer:
    connection = getattr(layer, "connection", None)
    if connection is not None and connection is not room("sublayer").residual:
        raise refuse(f"the {where} layer's connection", connection)
    cross = getattr(layer, "cross_attn", None)
    n_norms = 3 if cross is not None else 2
    norms = [getattr(layer, f"norm{i}") for i in range(1, n_norms + 1)]
    # pre-LN: each norm's gain and shift fold into the matrix that reads its output, in float32 only
    # (folded into bfloat16 or int8 weights, they would round differently from the model's own numbers)
    fold = layer.norm_first and exact
    self_attn = _read_self_attention(layer.self_attn, norms[0] if fold else None)
    cross_attn = None if cross is None else _read_cross_attention(cross, norms[1] if fold else None)
    ffn = _read_feed_forward(layer.ffn, norms[-1] if fold else None, exact)
    return Layer(layer.norm_first, [_read_norm(n, fold, exact) for n in norms], self_attn, cross_attn, ffn)


def _read_self_attention(attention: nn.Module, norm: nn.Module | None) -> SelfAttention:
    known = (("multihead", "MultiHeadAttention"), ("grouped", "GroupedQueryAttention"), ("rotary", "RotaryAttention"))
    if not any(_is(attention, *part) for part in known):
        raise refuse("an attention", attention)
    a = attention
    qkv = read_dense([a.w_q, a.w_k, a.w_v], fold=_fold(norm))
    rope = a.base if _is(a, "rotary", "RotaryAttention") else None
    merge = loaded("multihead", "merge_heads") if a.w_o.weight.dtype == torch.bfloat16 else None
    kv_heads = getattr(a, "n_kv_heads", a.n_heads)  # chapter 04's attention has one per query head
    return SelfAttention(qkv, read_dense([a.w_o]), a.n_heads, kv_heads, a.d_k, a.d_v, rope, merge)


def _read_cross_attention(attention: nn.Module, norm: nn.Module | None) -> CrossAttention:
    a = attention
    q = read_dense([a.w_q], fold=_fold(norm))
    return CrossAttention(q, read_dense([a.w_o]), a.n_heads, a.d_k, a.d_v)


def _read_feed_forward(ffn: nn.Module, norm: nn.Module | None, exact: bool) -> FeedForward:
    if _is(ffn, "swiglu", "SwiGLU"):
        if not exact:  # bfloat16 or int8: the learner's own SwiGLU.forward (see the module)
            return FeedForward(None, None, "swish", True, module=_borrowed(ffn))
        return FeedForward(read_dense([ffn.w1, ffn.w3], fold=_fold(norm)), read_dense([ffn.w2]), "swish", True)
    if _is(ffn, "feedforward", "PositionwiseFeedForward"):
        up = read_dense([ffn.linear1], fold=_fold(norm))
        return FeedForward(up, read_dense([ffn.linear2]), ffn.activation_name, False)
    raise refuse("a feed-forward network", ffn)


def _borrowed(module: nn.Module) -> nn.Module:
    """The learner's ``module`` to run as it is, but with its int8 layers (chapter 16's
    ``Int8Linear``) read into the plan: the same products, without the check each such layer makes
    at every call that its weights have not changed (the plan checks once per decoding call)."""
    int8 = loaded("quantize", "Int8Linear")
    if int8 is None or not any(isinstance(child, int8) for child in module.children()):
        return module
    borrowed = copy.copy(module)  # the learner's forward and attributes; its own children below
    borrowed._modules = {name: PlannedInt8(child) if isinstance(child, int8) else child
                         for name, child in module._modules.items()}  # fmt: skip
    return borrowed


class PlannedInt8(nn.Module):
    """An ``Int8Linear`` as the plan holds it (:class:`~.weights.Int8Dense`), keeping the layer's
    ``weight``, ``scale`` and ``bias`` for a forward that reads them."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.product = read_dense([layer])
        self.weight, self.scale, self.bias = layer.weight, layer.scale, layer.bias

    def forward(self, x: Tensor) -> Tensor:
        return self.product(x)


def _read_norm(norm: nn.Module, folded: bool, exact: bool) -> Norm:
    if type(norm) is nn.LayerNorm:  # PyTorch's: the engine calls the function it calls
        weight, bias = (None, None) if folded else (_copy(norm.weight), _copy(norm.bias))  # None without affine
        return Norm("layer", weight, bias, norm.eps)
    if _is(norm, "rmsnorm", "RMSNorm"):
        if not exact:  # bfloat16 or int8: the learner's own RMSNorm.forward (see the module)
            return Norm("module", None, None, norm.eps, module=norm)
        size = norm.weight.shape[0]
        gain = None if folded else norm.weight.detach() * size**0.5  # √D · g (see Norm)
        floor = torch.full((1,), (size * norm.eps) ** 0.5, device=norm.weight.device)  # √(D·ε)
        return Norm("rms_sum", gain, None, norm.eps, floor)
    raise refuse("a norm", norm)


def _read_final_norm(norm: nn.Module, folded: bool, exact: bool) -> Norm | None:
    return None if isinstance(norm, nn.Identity) else _read_norm(norm, folded, exact)


def _fold(norm: nn.Module | None) -> tuple[Tensor, Tensor | None] | None:
    """A pre-LN norm's (gain, shift) to fold into the next matrix; None where nothing is folded
    (no norm, or a LayerNorm without weights). An RMSNorm's gain comes times √D (see :class:`~.parts.Norm`)."""
    if norm is None:
        return None
    kind = _read_norm(norm, folded=True, exact=True).kind  # refuses a norm the engine does not know
    if getattr(norm, "weight", None) is None:  # LayerNorm(elementwise_affine=False): no gain, no shift
        return None
    gain = norm.weight.detach() * (norm.weight.shape[0] ** 0.5 if kind == "rms_sum" else 1.0)
    return gain, None if getattr(norm, "bias", None) is None else norm.bias.detach()


def _read_embedding(embedding: nn.Module, positional: nn.Module | None) -> Embedding:
    if not (_is(embedding, "embeddings", "TokenEmbedding") or _is(embedding, "embeddings", "UnscaledEmbedding")):
        raise refuse("an embedding", embedding)
    lookup = embedding.embedding  # nn.Embedding, or chapter 16's Int8Embedding (weight q, scale)
    scale = 1.0 if _is(embedding, "embeddings", "UnscaledEmbedding") else math.sqrt(embedding.d_model)
    row_scale = _copy(lookup.scale) if hasattr(lookup, "scale") else None
    if positional is None:
        positions = None
    elif _is(positional, "positional", "PositionalEncoding"):
        positions = _copy(positional.pe)
    elif _is(positional, "positional", "LearnedPositionalEmbedding"):
        positions = _copy(positional.embedding.weight)
    else:
        raise refuse("the positional part", positional)
    table = lookup.weight.detach()
    if positions is not None and row_scale is None:
        positions = positions.to(table.dtype)
    return Embedding(table, row_scale, scale, positions)


def _copy(t: Tensor | None) -> Tensor | None:
    return None if t is None else t.detach().clone()
