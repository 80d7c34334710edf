"""Wrong answers for chapter 11: rows moved across heads or the wrong way, Conv1D weights left as they are,
and layers' names that point at the neighbour's tensor."""

from __future__ import annotations

# ex11_1 — rope_halves_to_interleaved


def _global_not_per_head(weight, n_heads):
    halves = weight.reshape(2, weight.shape[0] // 2, *weight.shape[1:])  # the whole weight as one head
    return halves.transpose(0, 1).reshape(weight.shape).clone()


def _inverse_permutation(weight, n_heads):
    d = weight.shape[0] // n_heads
    pairs = weight.reshape(n_heads, d // 2, 2, *weight.shape[1:])  # reads the rows as pairs already (2i, 2i+1)
    return pairs.transpose(1, 2).reshape(weight.shape).clone()  # and writes them as halves: interleaved → halves


def _pair_flipped(weight, n_heads):
    d = weight.shape[0] // n_heads
    halves = weight.reshape(n_heads, 2, d // 2, *weight.shape[1:]).flip(1)  # row i + d/2 first, then row i
    return halves.transpose(1, 2).reshape(weight.shape).clone()


def _unchanged(weight, n_heads):
    return weight.clone()


def _columns_not_rows(weight, n_heads):
    if weight.dim() != 2:
        return weight.clone()
    t = weight.t()
    d = t.shape[0] // n_heads if t.shape[0] % n_heads == 0 and (t.shape[0] // n_heads) % 2 == 0 else t.shape[0]
    heads = t.shape[0] // d
    halves = t.reshape(heads, 2, d // 2, -1)
    return halves.transpose(1, 2).reshape(t.shape).t().contiguous()


# ex11_2 — split_conv1d


def _not_transposed(weight, bias, parts):
    out = weight.shape[1] // parts
    return [(w.contiguous(), b.clone()) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=True)]


def _split_inputs_axis(weight, bias, parts):
    rows, out = weight.shape[0] // parts, weight.shape[1] // parts
    return [
        (weight[i * rows : (i + 1) * rows].contiguous(), bias[i * out : (i + 1) * out].clone()) for i in range(parts)
    ]


def _every_third_column(weight, bias, parts):
    return [(weight[:, i::parts].t().contiguous(), bias[i::parts].clone()) for i in range(parts)]


def _reversed_order(weight, bias, parts):
    out = weight.shape[1] // parts
    pairs = [(w.t().contiguous(), b.clone()) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=True)]
    return pairs[::-1]  # v, k, q


def _bias_not_split(weight, bias, parts):
    out = weight.shape[1] // parts
    return [(w.t().contiguous(), bias.clone()) for w in weight.split(out, dim=1)]


def _transposed_then_split_wrongly(weight, bias, parts):
    out = weight.shape[1] // parts
    t = weight.t()  # (parts·out, in)
    return [(t[:, i * (t.shape[1] // parts) :][:out].contiguous(), b.clone()) for i, b in enumerate(bias.split(out))]


# ex11_3 — marian_layer_names

_PROJECTIONS = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "out_proj"}


def _names(modules: dict[str, str]) -> dict[str, str]:
    return {f"{ours}.{t}": f"{theirs}.{t}" for ours, theirs in modules.items() for t in ("weight", "bias")}


def _layer(decoder, cross="encoder_attn", norms=None, projections=_PROJECTIONS):
    modules = {f"self_attn.{p}": f"self_attn.{q}" for p, q in projections.items()}
    modules |= {"ffn.linear1": "fc1", "ffn.linear2": "fc2"}
    if decoder:
        modules |= {f"cross_attn.{p}": f"{cross}.{q}" for p, q in projections.items()}
    modules |= norms or (
        {"norm1": "self_attn_layer_norm", "norm2": "encoder_attn_layer_norm", "norm3": "final_layer_norm"}
        if decoder
        else {"norm1": "self_attn_layer_norm", "norm2": "final_layer_norm"}
    )
    return _names(modules)


def _decoder_norms_in_the_encoder(decoder):
    norms = {"norm1": "self_attn_layer_norm", "norm2": "encoder_attn_layer_norm"}
    return _layer(decoder, norms=norms | ({"norm3": "final_layer_norm"} if decoder else {}))


def _norm2_norm3_swapped(decoder):
    if not decoder:
        return _layer(decoder)
    norms = {"norm1": "self_attn_layer_norm", "norm2": "final_layer_norm", "norm3": "encoder_attn_layer_norm"}
    return _layer(decoder, norms=norms)


def _cross_attention_as_self(decoder):
    return _layer(decoder, cross="self_attn")  # the decoder's self_attn given twice, its encoder_attn never read


def _queries_and_keys_swapped(decoder):
    return _layer(decoder, projections=_PROJECTIONS | {"w_q": "k_proj", "w_k": "q_proj"})


def _weights_only(decoder):
    return {k: v for k, v in _layer(decoder).items() if k.endswith("weight")}


def _norm1_is_the_final_norm(decoder):
    norms = {"norm1": "final_layer_norm", "norm2": "self_attn_layer_norm"}
    if decoder:
        norms = {"norm1": "final_layer_norm", "norm2": "encoder_attn_layer_norm", "norm3": "self_attn_layer_norm"}
    return _layer(decoder, norms=norms)


MUTANTS = {
    "ex11_1": [
        ("rows reordered over the whole weight, not per head", _global_not_per_head),
        ("the inverse permutation (interleaved → halves)", _inverse_permutation),
        ("row i + d/2 before row i in each pair", _pair_flipped),
        ("the rows left in their order", _unchanged),
        ("the columns reordered instead of the rows", _columns_not_rows),
    ],
    "ex11_2": [
        ("Conv1D's weight not transposed", _not_transposed),
        ("q, k, v split along the inputs' axis", _split_inputs_axis),
        ("every third column instead of blocks", _every_third_column),
        ("the parts in reverse order", _reversed_order),
        ("the whole bias given to each part", _bias_not_split),
        ("transposed, then split along the wrong axis", _transposed_then_split_wrongly),
    ],
    "ex11_3": [
        ("the encoder's norm2 named as the decoder's", _decoder_norms_in_the_encoder),
        ("the decoder's norm2 and norm3 mixed up", _norm2_norm3_swapped),
        ("cross-attention mapped to self_attn", _cross_attention_as_self),
        ("queries and keys swapped", _queries_and_keys_swapped),
        ("weights only, no biases", _weights_only),
        ("norm1 mapped to final_layer_norm", _norm1_is_the_final_norm),
    ],
}
