"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch
from torch import nn

from transformer_course.counting import attention_parameters

from . import right, wrong


def _layer(d_model, n_heads, d_ff, d_k, d_v, decoder, *, attentions=None, norms=None, norm_size=2, ffn_biases=True,
           matrices=2, attention_bias=True, sizes=True):  # fmt: skip
    attentions = (2 if decoder else 1) if attentions is None else attentions
    norms = (3 if decoder else 2) if norms is None else norms
    d_k, d_v = (d_k, d_v) if sizes else (None, None)
    attention = attention_parameters(d_model, n_heads, d_k, d_v, bias=attention_bias)
    network = matrices * d_model * d_ff + ((d_ff + d_model) if ffn_biases else 0)
    return attentions * attention + network + norms * norm_size * d_model


# -- mutants


@wrong("mutant", "the decoder's cross-attention forgotten")
def _no_cross_attention(d_model, n_heads, d_ff, d_k=None, d_v=None, decoder=False):
    return _layer(d_model, n_heads, d_ff, d_k, d_v, decoder, attentions=1)


@wrong("mutant", "the feed-forward biases left out")
def _no_ffn_biases(d_model, n_heads, d_ff, d_k=None, d_v=None, decoder=False):
    return _layer(d_model, n_heads, d_ff, d_k, d_v, decoder, ffn_biases=False)


@wrong("mutant", "the LayerNorms left out")
def _no_norms(d_model, n_heads, d_ff, d_k=None, d_v=None, decoder=False):
    return _layer(d_model, n_heads, d_ff, d_k, d_v, decoder, norms=0)


@wrong("mutant", "the attentions without biases")
def _attention_without_bias(d_model, n_heads, d_ff, d_k=None, d_v=None, decoder=False):
    return _layer(d_model, n_heads, d_ff, d_k, d_v, decoder, attention_bias=False)


@wrong("mutant", "every layer counted as a decoder layer", says="counted with a cross-attention")
def _encoder_as_decoder(d_model, n_heads, d_ff, d_k=None, d_v=None, decoder=False):
    return _layer(d_model, n_heads, d_ff, d_k, d_v, True)  # decoder=False ignored


# -- own mistakes and alternatives


@wrong("own", says="counted as d_model numbers")
def _norm_as_one_vector(d_model, n_heads, d_ff, d_k=None, d_v=None, decoder=False):
    return _layer(d_model, n_heads, d_ff, d_k, d_v, decoder, norm_size=1)  # the gain only


@wrong("own", says="counted as an encoder layer")
def _decoder_as_encoder(d_model, n_heads, d_ff, d_k=None, d_v=None, decoder=False):
    return _layer(d_model, n_heads, d_ff, d_k, d_v, False)


@wrong("own", says="two LayerNorms")
def _two_norms(d_model, n_heads, d_ff, d_k=None, d_v=None, decoder=False):
    return _layer(d_model, n_heads, d_ff, d_k, d_v, decoder, norms=2)


@wrong("own", says="d_k and d_v are not passed on")
def _sizes_dropped(d_model, n_heads, d_ff, d_k=None, d_v=None, decoder=False):
    return _layer(d_model, n_heads, d_ff, d_k, d_v, decoder, sizes=False)


@wrong("own", says="one matrix")
def _one_ffn_matrix(d_model, n_heads, d_ff, d_k=None, d_v=None, decoder=False):
    return _layer(d_model, n_heads, d_ff, d_k, d_v, decoder, matrices=1)


@right("own")
def _sub_layer_by_sub_layer(d_model, n_heads, d_ff, d_k=None, d_v=None, decoder=False):
    total = 0
    for _ in range(2 if decoder else 1):  # self-attention, then (decoder) cross-attention, each with its norm
        total += attention_parameters(d_model, n_heads, d_k=d_k, d_v=d_v) + 2 * d_model
    return total + (d_model + 1) * d_ff + (d_ff + 1) * d_model + 2 * d_model  # the network and its norm


@right("own")
def _network_on_meta(d_model, n_heads, d_ff, d_k=None, d_v=None, decoder=False):
    with torch.device("meta"):
        network = nn.Sequential(nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model), nn.LayerNorm(d_model))
    sublayers = 3 if decoder else 2
    counted = sum(p.numel() for p in network.parameters())  # the network and one LayerNorm
    return counted + (sublayers - 1) * (attention_parameters(d_model, n_heads, d_k, d_v) + 2 * d_model)
