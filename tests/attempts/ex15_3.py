"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

from collections import OrderedDict

from . import right, wrong

# -- mutants


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


@wrong("mutant", "the encoder's norm2 named as the decoder's", says="the encoder layer has no cross-attention")
def _decoder_norms_in_the_encoder(decoder):
    norms = {"norm1": "self_attn_layer_norm", "norm2": "encoder_attn_layer_norm"}
    return _layer(decoder, norms=norms | ({"norm3": "final_layer_norm"} if decoder else {}))


@wrong("mutant", "the decoder's norm2 and norm3 mixed up", says="norm2 and norm3 are mixed up")
def _norm2_norm3_swapped(decoder):
    if not decoder:
        return _layer(decoder)
    norms = {"norm1": "self_attn_layer_norm", "norm2": "final_layer_norm", "norm3": "encoder_attn_layer_norm"}
    return _layer(decoder, norms=norms)


@wrong("mutant", "cross-attention mapped to self_attn", says="cross-attention is mapped to self_attn")
def _cross_attention_as_self(decoder):
    return _layer(decoder, cross="self_attn")  # the decoder's self_attn given twice, its encoder_attn never read


@wrong("mutant", "queries and keys swapped", says="self-attention's W^K")
def _queries_and_keys_swapped(decoder):
    return _layer(decoder, projections=_PROJECTIONS | {"w_q": "k_proj", "w_k": "q_proj"})


@wrong("mutant", "weights only, no biases")
def _weights_only(decoder):
    return {k: v for k, v in _layer(decoder).items() if k.endswith("weight")}


@wrong("mutant", "norm1 mapped to final_layer_norm")
def _norm1_is_the_final_norm(decoder):
    norms = {"norm1": "final_layer_norm", "norm2": "self_attn_layer_norm"}
    if decoder:
        norms = {"norm1": "final_layer_norm", "norm2": "encoder_attn_layer_norm", "norm3": "self_attn_layer_norm"}
    return _layer(decoder, norms=norms)


# -- own mistakes and alternatives


def _marian(decoder, projections, cross="encoder_attn", up_down=("fc1", "fc2")):
    modules = {"norm1": "self_attn_layer_norm", "ffn.linear1": up_down[0], "ffn.linear2": up_down[1]}
    attentions = {"self_attn": "self_attn"}
    if decoder:
        attentions["cross_attn"] = cross
        modules |= {"norm2": "encoder_attn_layer_norm", "norm3": "final_layer_norm"}
    else:
        modules["norm2"] = "final_layer_norm"
    for ours, theirs in attentions.items():
        modules |= {f"{ours}.{p}": f"{theirs}.{q}" for p, q in projections.items()}
    return {f"{ours}.{t}": f"{theirs}.{t}" for ours, theirs in modules.items() for t in ("weight", "bias")}


_QKVO = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "out_proj"}


@wrong("own", says="o_proj is Llama's name")
def _marian_o_proj(decoder):
    return _marian(decoder, _QKVO | {"w_o": "o_proj"})  # Llama's name


@wrong("own", says="named cross_attn")
def _marian_cross_attn_kept(decoder):
    return _marian(decoder, _QKVO, cross="cross_attn")


@wrong("own", says="fc1 and fc2 are swapped")
def _marian_fc_swapped(decoder):
    return _marian(decoder, _QKVO, up_down=("fc2", "fc1"))


@wrong("own", says="the keys and values are swapped")
def _marian_keys_and_values_swapped(decoder):
    return _marian(decoder, _QKVO | {"w_k": "v_proj", "w_v": "k_proj"})


@right("own")  # a dict subclass, as state_dict() returns: the same pairs
def _marian_ordered_dict(decoder):
    return OrderedDict(_marian(decoder, _QKVO))


# -- tester set 'first'


def _marian_first(decoder, swap_norms=False, cross="encoder_attn", bias=True):
    modules = {"norm1": "self_attn_layer_norm", "ffn.linear1": "fc1", "ffn.linear2": "fc2"}
    attentions = {"self_attn": "self_attn"}
    if decoder:
        attentions["cross_attn"] = cross
        if swap_norms:
            modules |= {"norm2": "final_layer_norm", "norm3": "encoder_attn_layer_norm"}
        else:
            modules |= {"norm2": "encoder_attn_layer_norm", "norm3": "final_layer_norm"}
    else:
        modules["norm2"] = "final_layer_norm"
    projections = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "out_proj"}
    for ours, theirs in attentions.items():
        modules |= {f"{ours}.{p}": f"{theirs}.{q}" for p, q in projections.items()}
    kinds = ("weight", "bias") if bias else ("weight",)
    return {f"{ours}.{t}": f"{theirs}.{t}" for ours, theirs in modules.items() for t in kinds}


@wrong("tester", "decoder norm2/norm3 swapped (final_layer_norm vs encoder_attn_layer_norm)", by="first")
def ex15_3_decoder_norms_swapped(decoder):
    return _marian_first(decoder, swap_norms=True)


@wrong("tester", "cross_attn mapped to 'cross_attn' instead of Marian's 'encoder_attn'", by="first")
def ex15_3_cross_attn_name(decoder):
    return _marian_first(decoder, cross="cross_attn")


@wrong("tester", "only the weights, no bias entries", by="first")
def ex15_3_no_biases(decoder):
    return _marian_first(decoder, bias=False)


@wrong("tester", "w_o mapped to 'o_proj' (Llama's name) instead of 'out_proj'", by="first")
def x11_3_o_proj(decoder):
    names = _marian_first(decoder)
    return {ours: theirs.replace("out_proj", "o_proj") for ours, theirs in names.items()}  # Llama's name


# -- tester set 'second'


def _marian_second(decoder, norms, proj, with_bias=True):
    modules = {"norm1": "self_attn_layer_norm", "ffn.linear1": "fc1", "ffn.linear2": "fc2"}
    attentions = {"self_attn": "self_attn"}
    if decoder:
        attentions["cross_attn"] = "encoder_attn"
    modules |= norms(decoder)
    for ours, theirs in attentions.items():
        modules |= {f"{ours}.{p}": f"{theirs}.{q}" for p, q in proj.items()}
    kinds = ("weight", "bias") if with_bias else ("weight",)
    return {f"{o}.{t}": f"{th}.{t}" for o, th in modules.items() for t in kinds}


_PROJ = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "out_proj"}


def _norms_ok(decoder):
    if decoder:
        return {"norm2": "encoder_attn_layer_norm", "norm3": "final_layer_norm"}
    return {"norm2": "final_layer_norm"}


@wrong("tester", "decoder: norm2 -> final_layer_norm, norm3 -> encoder_attn_layer_norm (swapped)", by="second")
def marian_norms_swapped(decoder):
    if decoder:
        return _marian_second(
            decoder, lambda d: {"norm2": "final_layer_norm", "norm3": "encoder_attn_layer_norm"}, _PROJ
        )
    return _marian_second(decoder, _norms_ok, _PROJ)


@wrong("tester", "only .weight entries, biases missing", by="second")
def marian_no_bias(decoder):
    return _marian_second(decoder, _norms_ok, _PROJ, with_bias=False)


@wrong("tester", "w_o mapped to o_proj (Llama's name) instead of out_proj", by="second")
def marian_o_proj(decoder):
    return _marian_second(decoder, _norms_ok, {**_PROJ, "w_o": "o_proj"})


@right("tester", by="second")
def marian_alt(decoder):
    names = {
        "self_attn.w_q": "self_attn.q_proj",
        "self_attn.w_k": "self_attn.k_proj",
        "self_attn.w_v": "self_attn.v_proj",
        "self_attn.w_o": "self_attn.out_proj",
        "norm1": "self_attn_layer_norm",
        "ffn.linear1": "fc1",
        "ffn.linear2": "fc2",
    }
    if decoder:
        names.update(
            {
                "cross_attn.w_q": "encoder_attn.q_proj",
                "cross_attn.w_k": "encoder_attn.k_proj",
                "cross_attn.w_v": "encoder_attn.v_proj",
                "cross_attn.w_o": "encoder_attn.out_proj",
                "norm2": "encoder_attn_layer_norm",
                "norm3": "final_layer_norm",
            }
        )
    else:
        names["norm2"] = "final_layer_norm"
    out = {}
    for ours, theirs in names.items():
        out[ours + ".weight"] = theirs + ".weight"
        out[ours + ".bias"] = theirs + ".bias"
    return out


# -- tester set 'third'


def _marian_third(decoder, *, swap_norms=False, weights_only=False, o_proj=False):
    modules = {"norm1": "self_attn_layer_norm", "ffn.linear1": "fc1", "ffn.linear2": "fc2"}
    attentions = {"self_attn": "self_attn"}
    if decoder:
        attentions["cross_attn"] = "encoder_attn"
        if swap_norms:
            modules |= {"norm2": "final_layer_norm", "norm3": "encoder_attn_layer_norm"}
        else:
            modules |= {"norm2": "encoder_attn_layer_norm", "norm3": "final_layer_norm"}
    else:
        modules["norm2"] = "final_layer_norm"
    projections = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "o_proj" if o_proj else "out_proj"}
    for ours, theirs in attentions.items():
        modules |= {f"{ours}.{p}": f"{theirs}.{q}" for p, q in projections.items()}
    kinds = ("weight",) if weights_only else ("weight", "bias")
    return {f"{ours}.{t}": f"{theirs}.{t}" for ours, theirs in modules.items() for t in kinds}


@wrong("tester", "decoder: norm2 and norm3 targets swapped", by="third")
def marian_swap(decoder):
    return _marian_third(decoder, swap_norms=True)


@wrong("tester", "bias entries forgotten (weights only)", by="third")
def marian_no_bias_third(decoder):
    return _marian_third(decoder, weights_only=True)


@wrong("tester", "w_o mapped to 'o_proj' (Llama's name) instead of 'out_proj'", by="third")
def marian_o_proj_third(decoder):
    return _marian_third(decoder, o_proj=True)
