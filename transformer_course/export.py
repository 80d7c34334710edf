"""Chapter 16 — out of the course: the learner's models as the checkpoints other engines read.

Chapter 15's converters take a ``transformers`` model into the course; these take the course's
models out, into the same three families, so that ``transformers``, CTranslate2 and llama.cpp can
run them:

- :func:`to_marian`: a :class:`~.model.Transformer` → ``MarianMTModel``. Marian is the paper's
  post-LN encoder-decoder; its sinusoids keep sines and cosines in two halves, where the course's
  table interleaves them (chapter 02). A model trained with interleaved sinusoids is exported with
  its D features *reordered* (feature 2i goes to place i, feature 2i + 1 to place D/2 + i): every
  weight that reads the residual stream has its columns reordered, every weight that writes it
  (and every LayerNorm's gain and bias) its rows. LayerNorm and every dot product over the features
  are sums, which an order does not change, so the logits are the same; ``from_marian(...,
  sinusoid_layout="interleaved")`` undoes the reordering and gives back the original numbers.
- :func:`to_llama`: a :class:`~.lm.DecoderOnlyLM` with today's block (pre-LN, RMSNorm, RoPE,
  SwiGLU, grouped key/value heads) → ``LlamaForCausalLM``. ``transformers``' Llama rotates the
  pairs (i, i + d/2) of each head, ours (2i, 2i + 1): :func:`rope_interleaved_to_halves` reorders
  the rows of W^Q and W^K, the inverse of chapter 15's :func:`~.convert.rope_halves_to_interleaved`.
- :func:`to_gpt2`: a pre-LN :class:`~.lm.DecoderOnlyLM` with LayerNorm and learned positions →
  ``GPT2LMHeadModel``: W^Q, W^K and W^V side by side in one ``c_attn``, every weight transposed
  for ``Conv1D``.

What a family cannot express is refused in one line that names the setting (a post-LN Llama, a
GPT-2 with RMSNorm). Three differences are bridged by a change that leaves every output as it
was, said in each converter's docstring: the reordering above; the √D that the course multiplies
its embeddings by (``scale_embedding=True``), which Llama and GPT-2 lack, folded into their
embedding matrix (√D · E, the very numbers the course's lookup produces), with the output layer
keeping E (so a tied model is exported untied); and GPT-2's biases (zeros where the course's model
has none) and position table (the sinusoids written into it). A model exported without any of
these comes back from ``from_*`` with exactly its own parameters.

Precision: each converter gives ``transformers`` the parameters in their own dtype, float32 or
chapter 16's bfloat16 (:func:`~.quantize.quantize` with ``"bf16"``). The int8 models are refused:
``transformers``' layers hold float weights; the engines quantize the float32 export themselves
(CTranslate2's int8, llama.cpp's q8_0).

``transformers`` is imported by the functions, not by the room (``pip install
'transformer-course[hub]'``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .convert import interleaved_to_halves_order, marian_layer_names, reorder_features
from .feedforward import PositionwiseFeedForward
from .lm import DecoderOnlyLM
from .model import Transformer
from .positional import LearnedPositionalEmbedding, PositionalEncoding

# the course's activations (feedforward.ACTIVATIONS) → the names transformers gives them
HF_ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_new", "swish": "silu"}
MARIAN_LAYER_NORM_EPS = 1e-5  # MarianMTModel's nn.LayerNorm, fixed


def rope_interleaved_to_halves(weight: Tensor, n_heads: int) -> Tensor:
    """Reorder the rows of W^Q or W^K (or their bias) from the course's rotary pairs (features 2i
    and 2i + 1 of each head) to ``transformers``' Llama (features i and i + d/2): the inverse of
    :func:`~.convert.rope_halves_to_interleaved`. Queries and keys move together, so every score
    q·k is the same sum in another order.

    Shape:
        weight: (H·d, ...) → (H·d, ...), the same rows in another order (a new tensor)
    """
    if weight.dim() < 1 or weight.shape[0] % n_heads or (weight.shape[0] // n_heads) % 2:
        raise ValueError(
            f"weight must have n_heads={n_heads} heads of an even number of rows, got shape {tuple(weight.shape)}"
        )
    head_dim, rest = weight.shape[0] // n_heads, weight.shape[1:]
    pairs = weight.reshape(n_heads, head_dim // 2, 2, *rest)  # (H, d/2, 2, ...): rows 2i, 2i+1
    return pairs.transpose(1, 2).reshape(weight.shape).clone()  # (H, 2, d/2, ...): first halves, then seconds


# -- the converters ----------------------------------------------------------------------------------


def to_marian(model: Transformer):
    """A ``transformers`` ``MarianMTModel`` with the weights of the course's :class:`~.model.Transformer`.

    ``hf(input_ids=src, attention_mask=src != pad, decoder_input_ids=tgt).logits`` gives
    ``model(src, tgt)``; the ids, the special ids and the vocabularies are the model's own (a
    shared vocabulary becomes Marian's ``shared`` embedding; separate ones, its
    ``decoder_vocab_size``). The decoder starts from ``bos_id`` (Marian's
    ``decoder_start_token_id``).

    An interleaved sinusoid table (the paper's, the course's default) is exported by reordering
    the model's D features (see the module): the same logits. Refused, in one line each: pre-LN
    layers, another positional part or norm, a feed-forward network of another kind, per-head
    sizes d_k, d_v other than D / H, a LayerNorm ε other than Marian's 1e-5, int8 weights.

    Shape (of the result's call): input_ids (B, S), decoder_input_ids (B, T) → logits (B, T, V_tgt)
    """
    if not isinstance(model, Transformer):
        raise ValueError(f"to_marian expects the course's Transformer, got {type(model).__name__}")
    c = model.config
    _refuse_int8(model, "to_marian")
    refusals = {
        "Marian normalises after each sub-layer (post-LN): this model is pre-LN (norm_first=True)": c.norm_first,
        f"Marian's heads have D / H features: this model sets d_k={c.d_k}, d_v={c.d_v}": any(
            size not in (None, c.d_model // c.n_heads) for size in (c.d_k, c.d_v)
        ),
        f"Marian's LayerNorms have eps={MARIAN_LAYER_NORM_EPS}: this model has layer_norm_eps={c.layer_norm_eps}": (
            c.layer_norm_eps != MARIAN_LAYER_NORM_EPS
        ),
        f"Marian adds sinusoids: this model's positional part is {type(model.positional).__name__}": (
            type(model.positional) is not PositionalEncoding
        ),
    }
    _refuse(refusals, "to_marian")
    _refuse_parts(model, "to_marian")
    transformers = _transformers()
    # transformers before 5 give Marian's decoder the encoder's vocabulary size: a smaller source
    # vocabulary gets rows of zeros up to the target's (ids its tokenizer never makes), a larger one is refused
    source_rows = c.src_vocab_size
    if c.src_vocab_size != c.tgt_vocab_size and not marian_sizes_the_decoder_apart():
        if c.src_vocab_size > c.tgt_vocab_size:
            raise ValueError(
                f"to_marian: transformers {transformers.__version__} gives Marian's decoder the source vocabulary's "
                f"size ({c.src_vocab_size}), larger than the target's ({c.tgt_vocab_size}): this translator needs a "
                "newer transformers (pip install -U transformers)"
            )
        source_rows = c.tgt_vocab_size
    config = transformers.MarianConfig(
        vocab_size=source_rows, decoder_vocab_size=c.tgt_vocab_size, d_model=c.d_model,
        encoder_layers=c.n_encoder_layers, decoder_layers=c.n_decoder_layers, encoder_attention_heads=c.n_heads,
        decoder_attention_heads=c.n_heads, encoder_ffn_dim=c.d_ff, decoder_ffn_dim=c.d_ff,
        activation_function=HF_ACTIVATIONS[c.activation], dropout=c.dropout, attention_dropout=c.dropout,
        activation_dropout=c.dropout, max_position_embeddings=c.max_len, scale_embedding=c.scale_embedding,
        pad_token_id=c.pad_id, eos_token_id=c.eos_id, bos_token_id=c.bos_id, decoder_start_token_id=c.bos_id,
        forced_eos_token_id=None, share_encoder_decoder_embeddings=c.share_embeddings,
        tie_word_embeddings=c.tie_output or c.share_embeddings,
    )  # fmt: skip
    state = {name: tensor.detach() for name, tensor in model.state_dict().items()}
    if c.sinusoid_layout == "interleaved":
        state = reorder_features(state, interleaved_to_halves_order(c.d_model))  # Marian's halves: same logits
    theirs = {
        "model.encoder.embed_tokens.weight": _zero_padded(state["src_embed.embedding.weight"], source_rows),
        "model.decoder.embed_tokens.weight": state["tgt_embed.embedding.weight"],
        "lm_head.weight": state["output.weight"],
        "final_logits_bias": state["output.bias"][None],  # (1, V_tgt)
    }
    if c.share_embeddings:
        theirs["model.shared.weight"] = state["src_embed.embedding.weight"]
    for stack, decoder, layers in (("encoder", False, c.n_encoder_layers), ("decoder", True, c.n_decoder_layers)):
        for i in range(layers):
            for ours, name in marian_layer_names(decoder).items():
                theirs[f"model.{stack}.layers.{i}.{name}"] = state[f"{stack}.layers.{i}.{ours}"]
    return _hf_model(transformers.MarianMTModel, config, theirs, _dtype_of(model))


def to_llama(lm: DecoderOnlyLM):
    """A ``transformers`` ``LlamaForCausalLM`` with the weights of the course's
    :class:`~.lm.DecoderOnlyLM`: ``hf(ids).logits`` gives ``lm(ids)``.

    The model must have today's block (:meth:`~.lm.DecoderOnlyConfig.modern`: pre-LN, RMSNorm,
    rotary positions, SwiGLU); grouped key/value heads, attention biases and an untied output
    layer carry over. W^Q's and W^K's rows are reordered for Llama's rotary pairs
    (:func:`rope_interleaved_to_halves`). Embeddings scaled by √D (``scale_embedding=True``, the
    course's default) are exported as √D · E, the numbers the course's lookup gives, with the
    output layer keeping E: the same logits, an untied model. Anything else is refused in one line.
    """
    c = check_llama(lm)
    transformers = _transformers()
    heads, kv_heads = c.n_heads, c.n_kv_heads or c.n_heads
    embedding, output, tied = embedding_and_output(lm)
    config = transformers.LlamaConfig(
        vocab_size=c.vocab_size, hidden_size=c.d_model, intermediate_size=c.d_ff, num_hidden_layers=c.n_layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=c.d_model // heads, hidden_act="silu",
        max_position_embeddings=c.max_len, rms_norm_eps=c.layer_norm_eps, attention_bias=c.bias, mlp_bias=False,
        attention_dropout=c.dropout, tie_word_embeddings=tied, bos_token_id=c.bos_id, eos_token_id=c.eos_id,
        pad_token_id=c.pad_id, rope_parameters={"rope_type": "default", "rope_theta": c.rope_base},
    )  # fmt: skip
    config.rope_theta = c.rope_base  # also where readers of older configurations look (CTranslate2)
    state = lm.state_dict()
    theirs = {"model.embed_tokens.weight": embedding, "model.norm.weight": state["norm.weight"]}
    if not tied:
        theirs["lm_head.weight"] = output
    for i in range(c.n_layers):
        ours, hf = f"layers.{i}.", f"model.layers.{i}."
        parts = ("weight", "bias") if c.bias else ("weight",)
        for part in parts:
            theirs[hf + f"self_attn.q_proj.{part}"] = rope_interleaved_to_halves(
                state[ours + f"self_attn.w_q.{part}"], heads
            )
            theirs[hf + f"self_attn.k_proj.{part}"] = rope_interleaved_to_halves(
                state[ours + f"self_attn.w_k.{part}"], kv_heads
            )
            theirs[hf + f"self_attn.v_proj.{part}"] = state[ours + f"self_attn.w_v.{part}"]
            theirs[hf + f"self_attn.o_proj.{part}"] = state[ours + f"self_attn.w_o.{part}"]
        theirs |= {
            hf + "mlp.gate_proj.weight": state[ours + "ffn.w1.weight"],
            hf + "mlp.up_proj.weight": state[ours + "ffn.w3.weight"],
            hf + "mlp.down_proj.weight": state[ours + "ffn.w2.weight"],
            hf + "input_layernorm.weight": state[ours + "norm1.weight"],
            hf + "post_attention_layernorm.weight": state[ours + "norm2.weight"],
        }  # fmt: skip
    return _hf_model(transformers.LlamaForCausalLM, config, theirs, _dtype_of(lm))


def to_gpt2(lm: DecoderOnlyLM):
    """A ``transformers`` ``GPT2LMHeadModel`` with the weights of the course's
    :class:`~.lm.DecoderOnlyLM`: ``hf(ids).logits`` gives ``lm(ids)``.

    The model must be pre-LN with LayerNorm, one key/value head per query head and a two-layer
    feed-forward network (ReLU, GELU, GELU-tanh or swish). Made exact by a change that leaves the
    logits as they were: sinusoids (``positional="sinusoidal"``) are written into GPT-2's position
    table; a model without biases gets zero biases (GPT-2's ``Conv1D`` always adds one); the √D of
    ``scale_embedding=True`` is folded as in :func:`to_llama`. Anything else is refused in one line.
    """
    c = check_gpt2(lm)
    transformers = _transformers()
    embedding, output, tied = embedding_and_output(lm)
    config = transformers.GPT2Config(
        vocab_size=c.vocab_size, n_embd=c.d_model, n_head=c.n_heads, n_layer=c.n_layers, n_inner=c.d_ff,
        n_positions=c.max_len, activation_function=HF_ACTIVATIONS[c.feed_forward], layer_norm_epsilon=c.layer_norm_eps,
        resid_pdrop=c.dropout, embd_pdrop=c.dropout, attn_pdrop=c.dropout, tie_word_embeddings=tied,
        bos_token_id=c.bos_id, eos_token_id=c.eos_id, pad_token_id=c.pad_id,
    )  # fmt: skip
    state = lm.state_dict()
    positions = (
        state["positional.embedding.weight"]
        if isinstance(lm.positional, LearnedPositionalEmbedding)
        else lm.positional.pe.to(embedding.dtype)  # (max_len, D): the sinusoids as GPT-2's position table
    )
    theirs = {"transformer.wte.weight": embedding, "transformer.wpe.weight": positions,
              "transformer.ln_f.weight": state["norm.weight"], "transformer.ln_f.bias": state["norm.bias"]}  # fmt: skip
    if not tied:
        theirs["lm_head.weight"] = output
    for i in range(c.n_layers):
        ours, hf = f"layers.{i}.", f"transformer.h.{i}."
        qkv = join_conv1d([weight_and_bias(state, f"{ours}self_attn.w_{p}") for p in "qkv"])  # one c_attn
        theirs[hf + "attn.c_attn.weight"], theirs[hf + "attn.c_attn.bias"] = qkv
        for name, hf_name in (
            ("self_attn.w_o", "attn.c_proj"),
            ("ffn.linear1", "mlp.c_fc"),
            ("ffn.linear2", "mlp.c_proj"),
        ):
            theirs[hf + hf_name + ".weight"], theirs[hf + hf_name + ".bias"] = join_conv1d(
                [weight_and_bias(state, ours + name)]
            )
        for norm, hf_norm in (("norm1", "ln_1"), ("norm2", "ln_2")):
            theirs |= {hf + f"{hf_norm}.{t}": state[ours + f"{norm}.{t}"] for t in ("weight", "bias")}
    return _hf_model(transformers.GPT2LMHeadModel, config, theirs, _dtype_of(lm))


def check_llama(lm: DecoderOnlyLM, converter: str = "to_llama"):
    """``lm``'s configuration if Llama can express it (see :func:`to_llama`), else a ``ValueError``
    in one line that starts with ``converter`` and names the setting."""
    c = _decoder_only(lm, converter)
    refusals = {
        "Llama normalises before each sub-layer (pre-LN): this model is post-LN (norm_first=False)": not c.norm_first,
        f"Llama's norms are RMSNorm: this model has norm={c.norm!r}": c.norm != "rmsnorm",
        f"Llama rotates queries and keys (positional='rope'): this model has positional={c.positional!r}"
        + " (to_gpt2 takes it)": c.positional != "rope",
        f"Llama's feed-forward network is SwiGLU: this model has feed_forward={c.feed_forward!r}": (
            c.feed_forward != "swiglu"
        ),
    }
    _refuse(refusals, converter)
    return c


def check_gpt2(lm: DecoderOnlyLM, converter: str = "to_gpt2"):
    """``lm``'s configuration if GPT-2 can express it (see :func:`to_gpt2`), else a ``ValueError``
    in one line that starts with ``converter`` and names the setting."""
    c = _decoder_only(lm, converter)
    refusals = {
        "GPT-2 normalises before each sub-layer (pre-LN): this model is post-LN (norm_first=False)": not c.norm_first,
        f"GPT-2's norms are LayerNorm: this model has norm={c.norm!r}": c.norm != "layernorm",
        "GPT-2 adds a position table: this model rotates queries and keys (positional='rope'; to_llama takes it)": (
            c.positional == "rope"
        ),
        "GPT-2's feed-forward network has two layers: this model has feed_forward='swiglu' (to_llama takes it)": (
            c.feed_forward == "swiglu"
        ),
        f"GPT-2 has one key/value head per query head: this model has n_kv_heads={c.n_kv_heads} of {c.n_heads}": (
            c.n_kv_heads not in (None, c.n_heads)
        ),
    }
    _refuse(refusals, converter)
    return c


def join_conv1d(linears: list[tuple[Tensor, Tensor]]) -> tuple[Tensor, Tensor]:
    """``nn.Linear`` weights and biases as one GPT-2 ``Conv1D`` (``y = x @ weight + bias``): the
    inverse of chapter 15's :func:`~.convert.split_conv1d`, outputs side by side.

    Shape:
        k pairs (weight (out, in), bias (out,)) → (weight (in, k·out), bias (k·out,))
    """
    weights, biases = zip(*linears, strict=True)
    return torch.cat([w.t() for w in weights], dim=1).contiguous(), torch.cat(biases)


# -- shared steps ----------------------------------------------------------------------------------


def _transformers():
    try:
        import transformers
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "exporting needs the 'transformers' package: pip install 'transformer-course[hub]'"
        ) from error
    return transformers


def _zero_padded(table: Tensor, rows: int) -> Tensor:
    """``table`` (V, D) with rows of zeros below it up to ``rows``: (rows, D)."""
    return torch.cat([table, table.new_zeros(rows - len(table), table.shape[1])])


def marian_sizes_the_decoder_apart() -> bool:
    """Whether the installed ``transformers`` gives a Marian decoder its own vocabulary's size
    (``decoder_vocab_size``). Older releases (4.41 among them) copy the encoder's embedding there, so
    a translator whose two vocabularies differ in size cannot be exported to them."""
    transformers = _transformers()
    sizes = dict(d_model=4, encoder_layers=1, decoder_layers=1, encoder_attention_heads=1, decoder_attention_heads=1,
                 encoder_ffn_dim=4, decoder_ffn_dim=4, max_position_embeddings=8, pad_token_id=0, eos_token_id=1,
                 bos_token_id=0, decoder_start_token_id=0, forced_eos_token_id=None)  # fmt: skip
    config = transformers.MarianConfig(
        vocab_size=4, decoder_vocab_size=5, share_encoder_decoder_embeddings=False, **sizes
    )
    return transformers.MarianModel(config).decoder.embed_tokens.num_embeddings == 5


def _refuse(refusals: dict[str, bool], converter: str) -> None:
    """Raise the first refusal whose condition holds, as one line naming the converter."""
    for message, refused in refusals.items():
        if refused:
            raise ValueError(f"{converter}: {message}")


def _refuse_int8(model: nn.Module, converter: str) -> None:
    if any(p.dtype == torch.int8 for p in model.parameters()):
        raise ValueError(
            f"{converter}: transformers' layers hold float weights, and this model's are int8: export the float32 "
            "model and let the engine quantize it (CTranslate2's int8, llama.cpp's q8_0)"
        )


def _refuse_parts(model: Transformer, converter: str) -> None:
    """Marian's layers are the paper's: LayerNorm, and the two-layer feed-forward network."""
    for name, module in model.named_modules():
        if name.endswith(("norm1", "norm2", "norm3")) and type(module) is not nn.LayerNorm:
            raise ValueError(
                f"{converter}: Marian's norms are LayerNorm: this model's {name} is {type(module).__name__}"
            )
        if name.endswith(".ffn") and type(module) is not PositionwiseFeedForward:
            raise ValueError(
                f"{converter}: Marian's feed-forward network has two layers: this model's {name} is {type(module).__name__}"
            )


def _decoder_only(lm: DecoderOnlyLM, converter: str):
    if not isinstance(lm, DecoderOnlyLM):
        raise ValueError(f"{converter} expects the course's DecoderOnlyLM, got {type(lm).__name__}")
    _refuse_int8(lm, converter)
    return lm.config


def embedding_and_output(lm: DecoderOnlyLM) -> tuple[Tensor, Tensor, bool]:
    """(the embedding matrix the target looks up, its output matrix, whether the two are one).

    Llama and GPT-2 look their embeddings up unscaled; the course's ``scale_embedding=True``
    multiplies each looked-up row by √D, so the target's table is √D · E (the same products, row by
    row, that the course's lookup computes), and the output layer keeps E: two matrices."""
    weight, output = lm.embed.embedding.weight.detach(), lm.output.weight.detach()
    if lm.config.scale_embedding:
        return weight * math.sqrt(lm.config.d_model), output, False
    return weight, output, lm.config.tie_output


def weight_and_bias(state: dict[str, Tensor], name: str) -> tuple[Tensor, Tensor]:
    """The weight and bias of layer ``name``: zeros where the course's model has no bias (GPT-2 always adds one)."""
    weight = state[name + ".weight"]
    return weight, state.get(name + ".bias", torch.zeros(weight.shape[0], dtype=weight.dtype))


def _dtype_of(model: nn.Module) -> torch.dtype:
    dtypes = {p.dtype for p in model.parameters()}
    if len(dtypes) != 1 or not dtypes <= {torch.float32, torch.bfloat16}:
        raise ValueError(f"export needs float32 or bfloat16 parameters, got {sorted(map(str, dtypes))}")
    return dtypes.pop()


def _hf_model(model_class, config, state: dict[str, Tensor], dtype: torch.dtype) -> nn.Module:
    """``model_class(config)`` with ``state`` loaded strictly, in ``dtype``, in evaluation mode.

    Strict both ways: a tensor of ``state`` the model lacks, or a parameter of the model that
    ``state`` does not set (tied ones and Marian's fixed sinusoid tables aside), is an error."""
    model = model_class(config).to(dtype).eval()
    own = model.state_dict()  # views of the model's own tensors: copying into them sets the model
    unknown = sorted(set(state) - set(own))
    written = {own[name].data_ptr() for name in state if name in own}
    fixed = {name for name in own if "embed_positions" in name}  # Marian's sinusoids: computed, not loaded
    missing = sorted(name for name in set(own) - set(state) - fixed if own[name].data_ptr() not in written)  # tied: set
    if unknown or missing:
        raise RuntimeError(f"export of {model_class.__name__}: unknown tensors {unknown}, tensors not set {missing}")
    with torch.no_grad():
        for name, tensor in state.items():
            if own[name].shape != tensor.shape:
                raise RuntimeError(
                    f"export of {model_class.__name__}: {name} is {tuple(own[name].shape)}, got {tuple(tensor.shape)}"
                )
            own[name].copy_(tensor.to(dtype))
    return model
