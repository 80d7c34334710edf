"""Chapter 07 — counting parameters: the size of each part of the Transformer, as a formula.

A parameter count depends on shapes only, never on values: a linear layer ``D_in → D_out`` holds
``D_in · D_out`` weights and, with a bias, ``D_out`` more; a LayerNorm over ``D`` features holds a
gain and a bias, ``2 · D``. Summing these over the model's parts gives its size without building it,
and the count on PyTorch's meta device (shapes without storage) checks the sum. The
functions build on each other: one multi-head attention (chapter 04), one encoder or decoder layer
(chapters 05 and 06), the whole model of a :class:`~transformer_course.config.TransformerConfig`.
"""

from __future__ import annotations

from .config import TransformerConfig


def _head_sizes(d_model: int, n_heads: int, d_k: int | None, d_v: int | None) -> tuple[int, int]:
    """(d_k, d_v) as :class:`~transformer_course.multihead.MultiHeadAttention` takes them: D // H each
    when not given; the arguments checked here, at the edge."""
    if d_model < 1 or n_heads < 1:
        raise ValueError(f"d_model and n_heads must be >= 1, got d_model={d_model}, n_heads={n_heads}")
    if (d_k is not None and d_k < 1) or (d_v is not None and d_v < 1):
        raise ValueError(f"d_k and d_v must be >= 1 (or None for d_model // n_heads), got d_k={d_k}, d_v={d_v}")
    if (d_k is None or d_v is None) and d_model % n_heads:
        raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}: give d_k and d_v explicitly")
    return (d_model // n_heads if d_k is None else d_k), (d_model // n_heads if d_v is None else d_v)


def attention_parameters(
    d_model: int, n_heads: int, d_k: int | None = None, d_v: int | None = None, bias: bool = True
) -> int:
    """The number of parameters of one multi-head attention (paper §3.2.2), as
    ``MultiHeadAttention(d_model, n_heads, d_k, d_v, bias=bias)`` builds it: W^Q and W^K map D to
    H·d_k features, W^V maps D to H·d_v, W^O maps H·d_v back to D; with ``bias``, each of the
    four has a bias of its output size.

    Sizes:
        d_model = D, n_heads = H, d_k and d_v per head (None: D // H, then D must divide by H)
        → an int
    """
    d_k, d_v = _head_sizes(d_model, n_heads, d_k, d_v)
    ### BEGIN SOLUTION
    queries_and_keys = 2 * (d_model * n_heads * d_k + (n_heads * d_k if bias else 0))  # W^Q, W^K: (D, H·d_k)
    values = d_model * n_heads * d_v + (n_heads * d_v if bias else 0)  # W^V: (D, H·d_v)
    output = n_heads * d_v * d_model + (d_model if bias else 0)  # W^O: (H·d_v, D)
    return queries_and_keys + values + output
    ### END SOLUTION


def layer_parameters(
    d_model: int, n_heads: int, d_ff: int, d_k: int | None = None, d_v: int | None = None, decoder: bool = False
) -> int:
    """The number of parameters of one encoder layer (``decoder=False``, chapter 05) or decoder
    layer (``decoder=True``, chapter 06), as ``EncoderLayer``/``DecoderLayer(d_model, n_heads, d_ff,
    d_k=d_k, d_v=d_v)`` build them: each attention with its biases (:func:`attention_parameters`),
    the feed-forward network D → d_ff → D with its two biases, and one LayerNorm (a gain and a bias
    of D numbers each) per sub-layer. The decoder layer adds the cross-attention and its LayerNorm.

    Sizes:
        d_model = D, n_heads = H, d_ff the feed-forward network's hidden size, d_k and d_v per head
        (None: D // H) → an int
    """
    _head_sizes(d_model, n_heads, d_k, d_v)
    if d_ff < 1:
        raise ValueError(f"d_ff must be >= 1, got {d_ff}")
    ### BEGIN SOLUTION
    sublayers = 3 if decoder else 2  # (self-attention, [cross-attention,] feed-forward network)
    attention = (sublayers - 1) * attention_parameters(d_model, n_heads, d_k, d_v)
    feed_forward = d_model * d_ff + d_ff + d_ff * d_model + d_model  # W₁, b₁, W₂, b₂
    norms = sublayers * 2 * d_model  # one LayerNorm (gain and bias) per sub-layer
    return attention + feed_forward + norms
    ### END SOLUTION


def transformer_parameters(config: TransformerConfig) -> int:
    """The number of distinct parameters of ``Transformer(config)`` (a tied matrix counts once),
    what ``Transformer(config).num_parameters()`` reports: the token embeddings (one matrix when
    ``config.share_embeddings``), the encoder and decoder layers (:func:`layer_parameters`), a final
    LayerNorm after each stack when ``config.norm_first`` (pre-LN), and the output layer D → V_tgt
    with its bias, whose matrix is the target embedding's when ``config.tie_output`` or
    ``config.share_embeddings``. The sinusoidal positions are a fixed table, not parameters.

    Sizes:
        config: its src_vocab_size (V_src), tgt_vocab_size (V_tgt), d_model (D), n_heads, d_ff, d_k,
        d_v, n_encoder_layers, n_decoder_layers and the three switches above → an int
    """
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
    ### BEGIN SOLUTION
    d = config.d_model
    sizes = (d, config.n_heads, config.d_ff, config.d_k, config.d_v)
    layers = config.n_encoder_layers * layer_parameters(*sizes) + config.n_decoder_layers * layer_parameters(
        *sizes, decoder=True
    )
    embeddings = config.src_vocab_size * d + (0 if config.share_embeddings else config.tgt_vocab_size * d)
    tied = config.tie_output or config.share_embeddings
    output = (0 if tied else d * config.tgt_vocab_size) + config.tgt_vocab_size  # its matrix unless tied; its bias
    final_norms = 2 * (2 * d) if config.norm_first else 0  # pre-LN: one LayerNorm after each stack
    return embeddings + layers + final_norms + output
    ### END SOLUTION
