"""Chapter 13 — a decoder-only language model (GPT, 2018 → Llama), built from the course's rooms.

Take the encoder of chapter 05, give its self-attention the causal mask of chapter 06, and put
the tied output layer of chapter 01 on top: that is a GPT. With no source sentence there is no
cross-attention and no encoder; the model reads a text and predicts, at every position, the
next token. The choices that separate the 2017 block from today's are settings of one
:class:`DecoderOnlyConfig`: pre-LN or post-LN, LayerNorm or :class:`~.rmsnorm.RMSNorm`,
sinusoids or rotary embeddings (:class:`~.rotary.RotaryAttention`), ReLU or
:class:`~.swiglu.SwiGLU`, and grouped key/value heads (``n_kv_heads``).

:func:`generate` continues a prompt, greedily or by sampling, with or without a KV cache (one
:class:`~.cache.KVCache` per layer): both give the same tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import partial

import torch
from torch import Tensor, nn

from . import _validate
from ._validate import check_ndim, check_same_device, check_token_ids
from .cache import KVCache, swapped, with_cache
from .decoding import BeamStep, Engine, generate_tokens, never_next_bias, start_predictor, token_chooser
from .embeddings import TokenEmbedding, UnscaledEmbedding, tie_weights
from .encoder import EncoderLayer
from .evaluation import inference
from .feedforward import ACTIVATIONS, PositionwiseFeedForward
from .grouped import GroupedQueryAttention
from .model import xavier_init
from .positional import LearnedPositionalEmbedding, PositionalEncoding
from .rmsnorm import RMSNorm
from .rotary import RotaryAttention
from .sublayer import make_norm
from .swiglu import SwiGLU, swiglu_hidden_size

CHOICES = {
    "norm": ("layernorm", "rmsnorm"),
    "positional": ("sinusoidal", "rope", "learned"),  # learned: one trained vector per position (GPT-2)
    "feed_forward": ("relu", "swiglu", *(name for name in ACTIVATIONS if name != "relu")),  # a name = its activation
}


@dataclass
class DecoderOnlyConfig:
    """The sizes and the choices of a :class:`DecoderOnlyLM`. Left out, each choice is the 2017
    paper's (post-LN, LayerNorm, sinusoids, ReLU, one key head per query head);
    :meth:`modern` gives today's."""

    vocab_size: int  # V: number of token ids
    d_model: int = 128  # D
    n_heads: int = 4  # H: query heads
    n_kv_heads: int | None = None  # Hkv: key/value heads (grouped-query attention); None = H
    n_layers: int = 2  # N blocks
    d_ff: int = 512  # hidden size of the feed-forward network
    max_len: int = 256  # longest sequence (prompt + generated tokens)
    dropout: float = 0.1
    norm_first: bool = False  # False = post-LN (the paper), True = pre-LN (GPT-2 on)
    norm: str = "layernorm"  # or "rmsnorm"
    positional: str = "sinusoidal"  # or "rope"
    feed_forward: str = "relu"  # or "swiglu"
    rope_base: float = 10000.0  # RoPE's wavelength scale
    layer_norm_eps: float = 1e-5  # epsilon of every LayerNorm or RMSNorm
    pad_id: int = 0  # padding, ignored by the loss (may be eos_id: GPT-2 and Llama have no padding token)
    bos_id: int = 1  # first token of every text (may be eos_id: GPT-2's and SmolLM's one <|endoftext|>)
    eos_id: int = 2  # end of a text: generation stops there
    # Chapter 15: what real checkpoints choose otherwise; left out, the course's
    bias: bool = True  # biases in the attention projections and the two-layer network (GPT-2 yes, Llama no)
    scale_embedding: bool = True  # embeddings × √D (the paper); GPT-2 and Llama look them up unscaled
    tie_output: bool = True  # output layer = the embedding matrix (GPT-2, small Llamas); False: its own (Llama 3 8B)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {getattr(self, name)!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        kv = self.n_heads if self.n_kv_heads is None else self.n_kv_heads
        if not isinstance(kv, int) or kv < 1 or self.n_heads % kv:
            raise ValueError(f"n_kv_heads must divide n_heads={self.n_heads} (or be None), got {self.n_kv_heads!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {getattr(self, name)!r}")
        if self.positional == "rope" and (self.d_model // self.n_heads) % 2:
            raise ValueError(
                f"rope rotates pairs of features: d_model / n_heads must be even, got {self.d_model // self.n_heads}"
            )
        if not self.rope_base > 1:
            raise ValueError(f"rope_base must be > 1, got {self.rope_base}")
        if not self.layer_norm_eps > 0:
            raise ValueError(f"layer_norm_eps must be > 0, got {self.layer_norm_eps}")
        for name in ("pad_id", "bos_id", "eos_id"):
            if not 0 <= getattr(self, name) < self.vocab_size:
                raise ValueError(f"{name}={getattr(self, name)} is outside the vocabulary of {self.vocab_size}")
        if self.pad_id == self.bos_id != self.eos_id:
            raise ValueError(f"pad_id and bos_id must differ (unless both are eos_id), got {self.pad_id}")

    @classmethod
    def modern(cls, vocab_size: int, **overrides) -> DecoderOnlyConfig:
        """Today's block (Llama's choices): pre-LN, RMSNorm, RoPE, SwiGLU with ⅔ · 4 · D hidden
        features (the parameters of the ReLU network), no dropout; ``overrides`` set any field.
        Another ``feed_forward`` gets 4 · D hidden features unless ``d_ff`` is given."""
        d_model = overrides.get("d_model", cls.d_model)
        settings = dict(norm_first=True, norm="rmsnorm", positional="rope", feed_forward="swiglu", dropout=0.0)
        swiglu = overrides.get("feed_forward", "swiglu") == "swiglu"  # ⅔ · 4 · D for SwiGLU only, else 4 · D
        settings["d_ff"] = swiglu_hidden_size(d_model) if swiglu else 4 * d_model
        return cls(vocab_size, **(settings | overrides))

    def to_dict(self) -> dict:
        return asdict(self)


class EmbeddingDropout(nn.Dropout):
    """``model.positional`` of a RoPE model: the positions enter inside each attention
    (:class:`~.rotary.Rotary`), so what stays in the place of chapter 02's sinusoids is their
    dropout on the embeddings (``config.dropout``; none in :meth:`DecoderOnlyConfig.modern`)."""


class DecoderOnlyLM(nn.Module):
    """Token ids (B, T) → logits (B, T, V) of the next token at every position.

    Embedding (× √D, as in chapter 01) → positions (sinusoids added here, or rotary inside each
    attention) → N encoder layers with a causal mask → a final norm (pre-LN only) → the output
    layer, tied to the embedding (one V × D matrix, no bias) unless ``config.tie_output`` is False.

    ``forward(tokens, cache=model.new_cache())`` keeps each layer's keys and values: a later call
    passes only the new tokens, at positions ``len(cache[0])`` onwards.

    Shape:
        tokens: (B, T) ids → logits (B, T, V)
    """

    def __init__(self, config: DecoderOnlyConfig) -> None:
        super().__init__()
        if not isinstance(config, DecoderOnlyConfig):
            raise ValueError(f"config must be a DecoderOnlyConfig, got {type(config).__name__}")
        self.config = c = config
        padding = c.pad_id if c.pad_id != c.eos_id else None  # pad = eos (GPT-2, Llama): <eos> still learns
        self.embed = (TokenEmbedding if c.scale_embedding else UnscaledEmbedding)(c.vocab_size, c.d_model, padding)
        rope = c.positional == "rope"
        self.positional = (
            EmbeddingDropout(c.dropout)  # RoPE: the positions enter inside attention; the dropout stays here
            if rope
            else (LearnedPositionalEmbedding if c.positional == "learned" else PositionalEncoding)(
                c.d_model, c.max_len, c.dropout
            )
        )
        attention = (
            partial(RotaryAttention, bias=c.bias, n_kv_heads=c.n_kv_heads, base=c.rope_base)
            if rope
            else partial(GroupedQueryAttention, bias=c.bias, n_kv_heads=c.n_kv_heads)
        )
        norm = partial(RMSNorm, eps=c.layer_norm_eps) if c.norm == "rmsnorm" else None
        if c.feed_forward == "swiglu":
            feed_forward = SwiGLU
        elif c.feed_forward == "relu" and c.bias:
            feed_forward = None  # the paper's network
        else:
            feed_forward = partial(PositionwiseFeedForward, activation=c.feed_forward, bias=c.bias)
        block = dict(
            d_model=c.d_model, n_heads=c.n_heads, d_ff=c.d_ff, dropout=c.dropout, norm_first=c.norm_first,
            layer_norm_eps=c.layer_norm_eps, feed_forward=feed_forward, norm=norm, attention=attention,
        )  # fmt: skip
        self.layers = nn.ModuleList(EncoderLayer(**block) for _ in range(c.n_layers))
        self.norm = make_norm(norm, c.d_model, c.layer_norm_eps) if c.norm_first else nn.Identity()
        self.output = nn.Linear(c.d_model, c.vocab_size, bias=False)
        xavier_init(self)
        if c.tie_output:
            tie_weights(self.embed, self.output)

    def new_cache(self) -> list[KVCache]:
        """An empty KV cache: one :class:`KVCache` per layer, passed to :meth:`forward` and :func:`generate`."""
        return [KVCache() for _ in self.layers]

    def forward(self, tokens: Tensor, cache: list[KVCache] | None = None) -> Tensor:
        check_ndim(tokens, 2, "tokens", "(B, T) of token ids")
        check_token_ids(tokens, self.config.vocab_size, "tokens")
        if cache is not None and len(cache) != len(self.layers):
            raise ValueError(f"cache must hold one KVCache per layer ({len(self.layers)}), got {len(cache)}")
        start, length = (len(cache[0]) if cache else 0), tokens.shape[1]  # positions cached, positions new
        if start + length > self.config.max_len:
            raise ValueError(f"the text would reach length {start + length} > max_len={self.config.max_len}")
        x = self.embed(tokens)  # (B, T, D)
        x = self.positional(x) if self.config.positional == "rope" else self.positional(x, offset=start)  # (B, T, D)
        mask = None if length == 1 else causal_rows(start, length, tokens.device)  # (T, L+T)
        if mask is not None and start == 0:  # no cache: chapter 06's square mask, and PyTorch may be told so
            mask = mark_causal(mask)
        layers = self.layers if cache is None else self.cached_layers(cache)
        for layer in layers:
            x = layer(x, mask)  # (B, T, D)
        return self.output(self.norm(x))  # (B, T, V)

    def cached_layers(self, cache: list[KVCache]) -> list[nn.Module]:
        """Copies of the layers (the same weights) whose self-attention reads through ``cache``
        (chapter 09's :func:`~transformer_course.cache.with_cache`)."""
        return [
            swapped(layer, self_attn=with_cache(layer.self_attn, layer_cache))
            for layer, layer_cache in zip(self.layers, cache, strict=True)
        ]

    def num_parameters(self) -> int:
        """Number of distinct parameters (the tied matrix counts once)."""
        return sum(p.numel() for p in self.parameters())


def mark_causal(mask: Tensor) -> Tensor:
    """Mark ``mask``, a square causal mask (position t sees 0 … t, chapter 06's), so that chapter 03's
    :func:`~transformer_course.attention.fast_attention` hands PyTorch ``is_causal=True`` instead of the
    mask (on a GPU its flash kernel, which reads no mask). The mask stays the same tensor with the same
    values: every other code, the teaching path included, reads it as before. Returns ``mask``."""
    mask.is_causal_mask = True  # an attribute of this one tensor: a copy or a slice is not marked
    return mask


def causal_rows(start: int, length: int, device: torch.device | str | None = None) -> Tensor:
    """The causal mask of positions ``start … start+length-1`` over every position up to them:
    new token i may attend to positions 0 … start+i (chapter 06's mask, its last ``length`` rows).

    Shape:
        → (length, start+length) bool, True = may attend
    """
    return torch.ones(length, start + length, dtype=torch.bool, device=device).tril(diagonal=start)


class WithoutSource(nn.Module):
    """:func:`~transformer_course.training.fit` calls ``model(batch.src, batch.tgt_in)``; a language
    model has no source. This view of ``lm`` ignores ``src`` (the batches of :func:`lm_examples`
    have an empty one), so chapter 08's loop trains it unchanged. It owns no weights of its own."""

    def __init__(self, lm: nn.Module) -> None:
        super().__init__()
        self.lm = lm

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        return self.lm(tgt_in)  # (B, T, V)


def lm_examples(texts: Sequence[Sequence[str]], vocab) -> list[tuple[list[int], list[int]]]:
    """Token lists → examples for chapter 08's batches: no source, the text wrapped in
    ``<bos> … <eos>`` (the batches then hold ``tgt_in = <bos> text`` and ``tgt_out = text <eos>``)."""
    return [([], vocab.encode(tokens, add_bos=True, add_eos=True)) for tokens in texts]


def generate(
    model: DecoderOnlyLM,
    prompt: Tensor,
    max_new_tokens: int,
    use_cache: bool = True,
    *,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    path: str | Engine = "modules",
) -> Tensor:
    """Continue each row of ``prompt`` by up to ``max_new_tokens`` tokens.

    ``temperature=0`` (the default) is greedy: the most probable next token. A temperature > 0
    samples from the model's distribution divided by it, restricted to the ``top_k`` tokens
    and/or the nucleus of mass ``top_p`` (chapter 09's filters); pass a ``generator`` for
    reproducible draws. A row that produces ``<eos>`` gets padding after it; generation stops when
    every row has. ``use_cache=True`` feeds only the newest token at each step and keeps the keys
    and values of the others; ``use_cache=False`` reads the whole text again at every step: the
    same tokens, slower. ``<pad>`` and ``<bos>`` are never generated (unless one is also ``<eos>``).
    The model is put in evaluation mode for the call (its mode is restored). The loop is chapter
    09's (:func:`~transformer_course.decoding.generate_tokens`); ``path=ENGINE`` runs the model
    through an inference engine instead of your modules (chapter 09's ``greedy_decode`` says more).

    Shape:
        prompt: (B, T) ids (every row T real tokens, usually starting with ``<bos>``; a ``<pad>``
        is refused, unless ``<pad>`` is ``<eos>``, where the id is a real token)
        → (B, T + n) with n ≤ max_new_tokens
    """
    config = model.config
    check_ndim(prompt, 2, "prompt", "(B, T) of token ids")
    check_same_device(model, prompt, "prompt")
    check_token_ids(prompt, config.vocab_size, "prompt")
    if prompt.shape[1] < 1:
        raise ValueError("prompt must hold at least one token per row (for example <bos>)")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an integer >= 0, got {max_new_tokens!r}")
    if prompt.shape[1] + max_new_tokens > config.max_len:
        raise ValueError(
            f"prompt length {prompt.shape[1]} + max_new_tokens {max_new_tokens} exceeds max_len={config.max_len}"
        )
    if config.pad_id != config.eos_id and _validate.reads_are_free(prompt) and (prompt == config.pad_id).any():
        raise ValueError(
            f"prompt contains <pad> (id {config.pad_id}): every row must be real tokens of one length; "
            "generate prompts of different lengths separately (or cut them to the shortest)"
        )  # where <pad> is <eos> (GPT-2, Llama) the id is a real token, and allowed
    choose = token_chooser(config.eos_id, config.pad_id, temperature, top_k, top_p, generator)
    with inference(model):
        modules = lambda: LanguageModelModules(model, use_cache)  # noqa: E731
        predictor = start_predictor(path, model, prompt, prompt.shape[1] + max_new_tokens, 1, use_cache, modules)
        return generate_tokens(model, predictor, prompt, max_new_tokens, choose)


class LanguageModelModules:
    """Your modules as a language model's :class:`~transformer_course.decoding.Predictor`: with a KV
    cache (one :class:`KVCache` per layer) each step reads only the tokens not read yet; without
    it the whole text again. The tokens that are never next get ``-inf`` (a bias made once)."""

    def __init__(self, model: DecoderOnlyLM, use_cache: bool = True) -> None:
        self.model, self.cache = model, model.new_cache() if use_cache else None
        device = next(model.parameters()).device
        self.never = never_next_bias(model.config, model.config.vocab_size, device)  # (V,)

    def next_logits(self, tokens: Tensor, new: Tensor) -> Tensor:
        logits = self.model(tokens if self.cache is None else new, self.cache)[:, -1]  # (B, V)
        return logits.float() + self.never

    def reorder(self, rows: Tensor) -> None:
        for layer_cache in self.cache or []:
            layer_cache.reorder(rows)

    def survivors(self, beam_step: BeamStep) -> BeamStep:
        return beam_step
