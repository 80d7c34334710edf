"""Chapter 15 — real weights: the checkpoints people use, run by the course's own model.

Three families of Hugging Face ``transformers`` models are the course's two models with other names
and a few other choices:

- **Marian** (``MarianMTModel``, the OPUS-MT translators ``Helsinki-NLP/opus-mt-*``) is the 2017
  encoder-decoder: post-LN, sinusoids, √D-scaled embeddings shared by source, target and output.
  It differs in four details, each a setting of :class:`~.config.TransformerConfig`: its
  sinusoids keep sines and cosines in two halves (``sinusoid_layout="halves"``), its feed-forward
  network uses swish (``activation="swish"``), its output layer adds a bias of its own
  (``final_logits_bias``: our output layer's bias) and its decoder starts from the padding id
  (``bos_id = pad_id``).
- **Llama** (``LlamaForCausalLM``, SmolLM too) is chapter 13's modern :class:`~.lm.DecoderOnlyLM`
  without √D on the embedding and without biases, with an output layer of its own unless the
  embedding is tied. Its rotary embeddings, as ``transformers`` computes them, pair feature i with
  feature i + d/2 of each head (``rotate_half``, "halves") where ours pair (2i, 2i+1), as Meta's
  own Llama code and RoFormer do. Meta's checkpoints were converted for ``transformers`` by
  permuting the rows of W^Q and W^K so that ``rotate_half`` gives Meta's scores; models trained in
  the halves layout (GPT-NeoX, SmolLM2) need no such step. Either way the weights on the Hub
  expect halves, and :func:`rope_halves_to_interleaved` (that permutation run backwards) turns
  them into ours.
- **GPT-2** (``GPT2LMHeadModel``) is a pre-LN :class:`~.lm.DecoderOnlyLM` with learned positions,
  GELU (tanh approximation) and biases; its ``Conv1D`` layers store each weight transposed
  (``x @ W``, where ``nn.Linear`` computes ``x @ W.T``), and one ``c_attn`` holds W^Q, W^K and W^V
  side by side (:func:`split_conv1d`).

Each converter takes a loaded model and returns ours, float32, in evaluation mode, with the same
logits. None imports ``transformers``: they read the model's configuration and tensors. Its first
half, the configuration alone, is :func:`config_from_marian`, :func:`config_from_llama` and
:func:`config_from_gpt2`: a checkpoint's settings in ``transformers``' names → ours.
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import Tensor, nn

from .config import TransformerConfig
from .lm import DecoderOnlyConfig, DecoderOnlyLM
from .model import Transformer
from .positional import SINUSOID_LAYOUTS

# Hugging Face's names of the activations → ours (feedforward.ACTIVATIONS)
_ACTIVATIONS = {
    "relu": "relu",
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "swish": "swish",
    "silu": "swish",
}


def rope_halves_to_interleaved(weight: Tensor, n_heads: int) -> Tensor:
    """Reorder the rows of W^Q or W^K (or their bias) from the "halves" layout of rotary embeddings
    (``transformers``' Llama: pair i = features i and i + d/2 of each head) to ours (pair i =
    features 2i and 2i+1, as in Meta's Llama code and RoFormer).

    Within each head of d features, row i of the halves layout goes to row 2i, and row i + d/2 to
    row 2i + 1: the inverse of the permutation ``transformers``' conversion script applied to
    Meta's weights. Queries and keys are both reordered the same way, so every score q·k, a sum
    over the features, is unchanged: only which features form a rotating pair changes, and now it
    is the pairs each layout rotates by the same angle.

    Shape:
        weight: (H·d, ...) → (H·d, ...), the same rows in the new order (a new tensor); a bias (H·d,) is
        reordered the same way
    """
    if weight.dim() < 1 or weight.shape[0] % n_heads or (weight.shape[0] // n_heads) % 2:
        raise ValueError(
            f"weight must have n_heads={n_heads} heads of an even number of rows, got shape {tuple(weight.shape)}"
        )
    head_dim, rest = weight.shape[0] // n_heads, weight.shape[1:]
    ### BEGIN SOLUTION
    halves = weight.reshape(n_heads, 2, head_dim // 2, *rest)  # (H, 2, d/2, ...): [first half, second half]
    return halves.transpose(1, 2).reshape(weight.shape).clone()  # (H, d/2, 2, ...) → rows 2i, 2i+1
    ### END SOLUTION


def split_conv1d(weight: Tensor, bias: Tensor, parts: int) -> list[tuple[Tensor, Tensor]]:
    """GPT-2's ``Conv1D`` (``y = x @ weight + bias``) as ``parts`` ``nn.Linear`` weights and biases.

    ``Conv1D`` stores its weight as (in, out), the transpose of ``nn.Linear``'s (out, in); GPT-2's
    ``c_attn`` computes the queries, keys and values with one such layer, their outputs side by
    side (``parts=3``); ``c_proj`` and the MLP's layers are one part each.

    Shape:
        weight: (in, parts·out), bias: (parts·out,) → a list of ``parts`` pairs (weight (out, in), bias (out,))
    """
    if weight.dim() != 2 or bias.shape != (weight.shape[1],) or weight.shape[1] % parts:
        raise ValueError(
            f"weight must be (in, {parts}·out) and bias (out·{parts},), got {tuple(weight.shape)} and {tuple(bias.shape)}"
        )
    ### BEGIN SOLUTION
    out = weight.shape[1] // parts
    return [(w.t().contiguous(), b.clone()) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=True)]
    ### END SOLUTION


def marian_layer_names(decoder: bool) -> dict[str, str]:
    """Our names of one encoder (or decoder) layer's tensors → Marian's, within that layer.

    Our :class:`~.encoder.EncoderLayer` is self-attention (``self_attn``: ``w_q``, ``w_k``, ``w_v``,
    ``w_o``), then ``norm1``, the network ``ffn`` (``linear1``, ``linear2``), then ``norm2``;
    :class:`~.decoder.DecoderLayer` puts ``cross_attn`` and ``norm2`` between them, so its
    network's norm is ``norm3``. Marian's: ``self_attn`` (``q_proj``, ``k_proj``, ``v_proj``,
    ``out_proj``), ``self_attn_layer_norm``, ``encoder_attn`` and ``encoder_attn_layer_norm``
    (decoder), ``fc1``, ``fc2``, ``final_layer_norm``. Every tensor has a ``weight`` and a ``bias``.

    Returns:
        ``{"self_attn.w_q.weight": "self_attn.q_proj.weight", …}``, one entry per tensor
    """
    ### BEGIN SOLUTION
    modules = {"norm1": "self_attn_layer_norm", "ffn.linear1": "fc1", "ffn.linear2": "fc2"}
    attentions = {"self_attn": "self_attn"}
    if decoder:
        attentions["cross_attn"] = "encoder_attn"
        modules |= {"norm2": "encoder_attn_layer_norm", "norm3": "final_layer_norm"}
    else:
        modules["norm2"] = "final_layer_norm"
    projections = {"w_q": "q_proj", "w_k": "k_proj", "w_v": "v_proj", "w_o": "out_proj"}
    for ours, theirs in attentions.items():
        modules |= {f"{ours}.{p}": f"{theirs}.{q}" for p, q in projections.items()}
    return {f"{ours}.{t}": f"{theirs}.{t}" for ours, theirs in modules.items() for t in ("weight", "bias")}
    ### END SOLUTION


def interleaved_to_halves_order(d_model: int) -> Tensor:
    """The order that turns the paper's sinusoid table (sine and cosine of pair i at features 2i,
    2i + 1) into Marian's (the sines at features 0 … D/2 - 1, the cosines after them): feature j of
    the new order is feature ``order[j]`` of the old, ``[0, 2, 4, …, 1, 3, 5, …]``.

    Shape:
        → (D,) long
    """
    if d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be even and >= 2, got {d_model}")
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def reorder_features(state: dict[str, Tensor], order: Tensor) -> dict[str, Tensor]:
    """A :class:`~.model.Transformer`'s state dict with its D model features put in ``order``
    (feature j of the result is feature ``order[j]`` of ``state``): every weight that reads the
    residual stream (embeddings, W^Q, W^K, W^V, the first feed-forward layer, the output layer)
    has its columns reordered, every weight and bias that writes it (W^O, the second feed-forward
    layer) its rows, and every LayerNorm its gain and bias. The function the model computes is the
    same: LayerNorm's mean and variance and every product over the features are sums, which an order
    does not change (only the rounding of the sums may). ``order.argsort()`` undoes it.

    Shape:
        order: (D,) a permutation of 0 … D-1
    """
    order = torch.as_tensor(order)
    if sorted(order.tolist()) != list(range(order.numel())):
        raise ValueError(f"order must be a permutation of 0 … D-1, got {order.tolist()}")
    reordered = {}
    for name, tensor in state.items():
        module, part = name.rsplit(".", 1)
        writes = module.endswith(("w_o", "linear2")) or module.split(".")[-1].startswith("norm")
        if writes:  # rows (and biases) are features of the stream
            tensor = tensor.index_select(0, order)
        elif part == "weight" and tensor.dim() == 2:  # reads the stream: columns are its features
            tensor = tensor.index_select(1, order)
        reordered[name] = tensor
    return reordered


# -- the converters --------------------------------------------------------------------------------


def from_marian(hf_model: nn.Module, *, sinusoid_layout: str = "halves") -> Transformer:
    """The course's :class:`~.model.Transformer` with the weights of a ``MarianMTModel``.

    ``ours(src, tgt)`` gives the logits of
    ``hf_model(input_ids=src, attention_mask=src != pad, decoder_input_ids=tgt).logits``; the
    decoder starts from Marian's ``decoder_start_token_id`` (its padding id), which is our ``bos_id``.

    ``sinusoid_layout="interleaved"`` gives a model with the paper's sinusoid table instead of
    Marian's halves, its D features reordered to match (:func:`reorder_features`): the same logits.
    It takes back a model that chapter 16's ``to_marian`` exported from the paper's layout.
    """
    if sinusoid_layout not in SINUSOID_LAYOUTS:
        raise ValueError(
            f"sinusoid_layout must be one of {', '.join(map(repr, SINUSOID_LAYOUTS))}, got {sinusoid_layout!r}"
        )
    config = config_from_marian(_config_of(hf_model, "MarianMTModel", "marian"))
    model = Transformer(replace(config, sinusoid_layout=sinusoid_layout))
    hf = hf_model.model
    state = {
        "src_embed.embedding.weight": hf.encoder.embed_tokens.weight,
        "tgt_embed.embedding.weight": hf.decoder.embed_tokens.weight,
        "output.weight": hf_model.lm_head.weight,
        "output.bias": hf_model.final_logits_bias.reshape(-1),
    }
    for stack, theirs, decoder in (("encoder", hf.encoder, False), ("decoder", hf.decoder, True)):
        names = marian_layer_names(decoder)
        for i, layer in enumerate(theirs.layers):
            tensors = dict(layer.named_parameters())
            state |= {f"{stack}.layers.{i}.{ours}": tensors[name] for ours, name in names.items()}
    if sinusoid_layout == "interleaved":
        state = reorder_features(state, interleaved_to_halves_order(config.d_model).argsort())
    return _loaded(model, state)


def from_llama(hf_model: nn.Module) -> DecoderOnlyLM:
    """The course's :class:`~.lm.DecoderOnlyLM` with the weights of a ``LlamaForCausalLM``
    (SmolLM's too): ``ours(ids)`` gives the logits of ``hf_model(ids).logits``.

    Grouped key/value heads, any ``rope_theta``, a tied or untied output layer. Rescaled rotary
    frequencies (``rope_scaling``, Llama 3.1's long contexts) are not supported.
    """
    config = config_from_llama(_config_of(hf_model, "LlamaForCausalLM", "llama"))
    model = DecoderOnlyLM(config)
    heads, kv_heads = config.n_heads, config.n_kv_heads
    hf = hf_model.model
    state = {"embed.embedding.weight": hf.embed_tokens.weight, "norm.weight": hf.norm.weight,
             "output.weight": hf_model.lm_head.weight}  # fmt: skip
    for i, layer in enumerate(hf.layers):
        ours, attn, mlp = f"layers.{i}.", layer.self_attn, layer.mlp
        state |= {
            ours + "self_attn.w_q.weight": rope_halves_to_interleaved(attn.q_proj.weight, heads),
            ours + "self_attn.w_k.weight": rope_halves_to_interleaved(attn.k_proj.weight, kv_heads),
            ours + "self_attn.w_v.weight": attn.v_proj.weight,
            ours + "self_attn.w_o.weight": attn.o_proj.weight,
            ours + "ffn.w1.weight": mlp.gate_proj.weight,
            ours + "ffn.w3.weight": mlp.up_proj.weight,
            ours + "ffn.w2.weight": mlp.down_proj.weight,
            ours + "norm1.weight": layer.input_layernorm.weight,
            ours + "norm2.weight": layer.post_attention_layernorm.weight,
        }
        if config.bias:
            state |= {
                ours + "self_attn.w_q.bias": rope_halves_to_interleaved(attn.q_proj.bias, heads),
                ours + "self_attn.w_k.bias": rope_halves_to_interleaved(attn.k_proj.bias, kv_heads),
                ours + "self_attn.w_v.bias": attn.v_proj.bias,
                ours + "self_attn.w_o.bias": attn.o_proj.bias,
            }
    return _loaded(model, state)


def from_gpt2(hf_model: nn.Module) -> DecoderOnlyLM:
    """The course's :class:`~.lm.DecoderOnlyLM` with the weights of a ``GPT2LMHeadModel``:
    ``ours(ids)`` gives the logits of ``hf_model(ids).logits``."""
    model = DecoderOnlyLM(config_from_gpt2(_config_of(hf_model, "GPT2LMHeadModel", "gpt2")))
    hf = hf_model.transformer
    state = {
        "embed.embedding.weight": hf.wte.weight, "positional.embedding.weight": hf.wpe.weight,
        "norm.weight": hf.ln_f.weight, "norm.bias": hf.ln_f.bias, "output.weight": hf_model.lm_head.weight,
    }  # fmt: skip
    for i, block in enumerate(hf.h):
        ours = f"layers.{i}."
        (q, k, v) = split_conv1d(block.attn.c_attn.weight, block.attn.c_attn.bias, 3)
        linears = {
            "self_attn.w_q": q, "self_attn.w_k": k, "self_attn.w_v": v,
            "self_attn.w_o": split_conv1d(block.attn.c_proj.weight, block.attn.c_proj.bias, 1)[0],
            "ffn.linear1": split_conv1d(block.mlp.c_fc.weight, block.mlp.c_fc.bias, 1)[0],
            "ffn.linear2": split_conv1d(block.mlp.c_proj.weight, block.mlp.c_proj.bias, 1)[0],
            "norm1": (block.ln_1.weight, block.ln_1.bias), "norm2": (block.ln_2.weight, block.ln_2.bias),
        }  # fmt: skip
        for name, (weight, bias) in linears.items():
            state |= {f"{ours}{name}.weight": weight, f"{ours}{name}.bias": bias}
    return _loaded(model, state)


# -- the configurations: a checkpoint's settings (transformers' names) → ours ---------------------


def config_from_marian(c) -> TransformerConfig:  # noqa: ANN001 - a MarianConfig, or any object with its fields
    """Our :class:`~.config.TransformerConfig` for a Marian checkpoint's configuration ``c``; a setting
    our model has no counterpart for is refused."""
    if c.encoder_attention_heads != c.decoder_attention_heads or c.encoder_ffn_dim != c.decoder_ffn_dim:
        raise ValueError("from_marian needs the same number of heads and the same d_ff in the encoder and the decoder")
    if getattr(c, "normalize_before", False):
        raise ValueError("from_marian expects Marian's post-LN layers (normalize_before=False)")
    tgt_vocab = getattr(c, "decoder_vocab_size", None) or c.vocab_size
    shared = getattr(c, "share_encoder_decoder_embeddings", True)
    return TransformerConfig(
        src_vocab_size=c.vocab_size, tgt_vocab_size=tgt_vocab, d_model=c.d_model, n_heads=c.encoder_attention_heads,
        d_ff=c.encoder_ffn_dim, n_encoder_layers=c.encoder_layers, n_decoder_layers=c.decoder_layers,
        dropout=c.dropout, max_len=c.max_position_embeddings, share_embeddings=shared,
        tie_output=bool(getattr(c, "tie_word_embeddings", True)), pad_id=c.pad_token_id,
        bos_id=c.decoder_start_token_id, eos_id=c.eos_token_id, activation=_activation(c.activation_function),
        sinusoid_layout="halves", scale_embedding=bool(c.scale_embedding),
    )  # fmt: skip


def config_from_llama(c) -> DecoderOnlyConfig:  # noqa: ANN001 - a LlamaConfig, or any object with its fields
    """Our :class:`~.lm.DecoderOnlyConfig` for a Llama checkpoint's configuration ``c`` (the rotary base
    where transformers keeps it: ``rope_parameters`` from version 5 on, ``rope_theta`` before)."""
    rope = getattr(c, "rope_parameters", None) or getattr(c, "rope_scaling", None) or {}
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        raise ValueError(f"from_llama supports plain rotary embeddings only, got rope scaling {rope!r}")
    rope_theta = rope.get("rope_theta", getattr(c, "rope_theta", None)) or 10000.0
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    if head_dim * c.num_attention_heads != c.hidden_size:
        raise ValueError(f"from_llama needs head_dim × heads = hidden_size, got {head_dim} × {c.num_attention_heads}")
    if c.hidden_act not in ("silu", "swish"):
        raise ValueError(f"from_llama expects SwiGLU's silu, got hidden_act={c.hidden_act!r}")
    if getattr(c, "mlp_bias", False):
        raise ValueError("from_llama expects a feed-forward network without biases (mlp_bias=False)")
    kv_heads = getattr(c, "num_key_value_heads", None) or c.num_attention_heads
    return DecoderOnlyConfig(
        vocab_size=c.vocab_size, d_model=c.hidden_size, n_heads=c.num_attention_heads, n_kv_heads=kv_heads,
        n_layers=c.num_hidden_layers, d_ff=c.intermediate_size, max_len=c.max_position_embeddings,
        dropout=float(getattr(c, "attention_dropout", 0.0)), norm_first=True, norm="rmsnorm", positional="rope",
        feed_forward="swiglu", rope_base=float(rope_theta), layer_norm_eps=c.rms_norm_eps,
        bias=bool(getattr(c, "attention_bias", False)), scale_embedding=False,
        tie_output=bool(c.tie_word_embeddings), **_special_ids(c),
    )  # fmt: skip


def config_from_gpt2(c) -> DecoderOnlyConfig:  # noqa: ANN001 - a GPT2Config, or any object with its fields
    """Our :class:`~.lm.DecoderOnlyConfig` for a GPT-2 checkpoint's configuration ``c``."""
    if getattr(c, "scale_attn_by_inverse_layer_idx", False) or getattr(c, "reorder_and_upcast_attn", False):
        raise ValueError("from_gpt2 expects GPT-2's plain attention (no scale_attn_by_inverse_layer_idx or upcast)")
    if not getattr(c, "scale_attn_weights", True):
        raise ValueError("from_gpt2 expects the scores divided by √d_k (scale_attn_weights=True)")
    return DecoderOnlyConfig(
        vocab_size=c.vocab_size, d_model=c.n_embd, n_heads=c.n_head, n_layers=c.n_layer,
        d_ff=getattr(c, "n_inner", None) or 4 * c.n_embd, max_len=c.n_positions, dropout=float(c.resid_pdrop),
        norm_first=True, positional="learned", feed_forward=_activation(c.activation_function),
        layer_norm_eps=c.layer_norm_epsilon, scale_embedding=False,
        tie_output=bool(getattr(c, "tie_word_embeddings", True)), **_special_ids(c),
    )  # fmt: skip


# -- shared steps ----------------------------------------------------------------------------------


def _config_of(hf_model: nn.Module, class_name: str, model_type: str):
    """The model's configuration, after checking that it is the class the converter reads (a
    ``MarianModel`` or ``LlamaModel`` lacks the output layer, a classification head has another)."""
    config = getattr(hf_model, "config", None)
    classes = {cls.__name__ for cls in type(hf_model).__mro__}
    if not isinstance(hf_model, nn.Module) or getattr(config, "model_type", None) != model_type:
        raise ValueError(f"expected a loaded transformers {class_name}, got {type(hf_model).__name__}")
    if class_name not in classes:
        raise ValueError(
            f"expected a loaded transformers {class_name}, got {type(hf_model).__name__}: "
            f"load the checkpoint with {class_name}.from_pretrained, which has the language-model output layer"
        )
    return config


def _activation(name: str) -> str:
    if name not in _ACTIVATIONS:
        raise ValueError(f"activation {name!r} has no counterpart here; known: {', '.join(_ACTIVATIONS)}")
    return _ACTIVATIONS[name]


def _special_ids(config) -> dict[str, int]:
    """pad, bos and eos of a decoder-only checkpoint: with no padding token (GPT-2, Llama) the
    padding after a finished text is ``<eos>``, as ``transformers``' ``generate`` pads it."""
    eos, bos, pad = (_one_id(config, name) for name in ("eos_token_id", "bos_token_id", "pad_token_id"))
    if eos is None:
        raise ValueError("the checkpoint names no eos_token_id: generation would never stop")
    return {"pad_id": eos if pad is None else pad, "bos_id": eos if bos is None else bos, "eos_id": eos}


def _one_id(config, name: str) -> int | None:
    """The configuration's ``name`` as one id; a list of several (Llama 3's instruct models end a
    text at any of three) is refused: the course's models stop at one ``<eos>``."""
    value = getattr(config, name, None)
    if isinstance(value, list | tuple):
        ids = sorted(set(value))
        if len(ids) > 1:
            raise ValueError(
                f"{name} lists several ids {list(value)}, and the course's generate stops at one: "
                f"set the one to use first, e.g. hf_model.config.{name} = {value[0]}"
            )
        value = ids[0] if ids else None
    return value


def _loaded(model: nn.Module, state: dict[str, Tensor]) -> nn.Module:
    """``model`` with ``state`` loaded strictly (every tensor named, every shape checked), float32,
    in evaluation mode."""
    state = {name: tensor.detach().to(torch.float32) for name, tensor in state.items()}
    with torch.no_grad():
        model.load_state_dict(state, strict=True)
    return model.float().eval()
