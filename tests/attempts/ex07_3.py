"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch
from torch import nn

from transformer_course.counting import layer_parameters

from . import right, wrong


def _model(c, *, tied_counted=False, shared_counted=False, output_bias=True, final_norms=None, decoder_layers=None,
           decoder_flag=True, target_vocab=None, positions=False, encoder_layers=None, target_embedding=True,
           output_matrix=True):  # fmt: skip
    d = c.d_model
    v_tgt = c.tgt_vocab_size if target_vocab is None else target_vocab
    sizes = (d, c.n_heads, c.d_ff, c.d_k, c.d_v)
    n_enc = c.n_encoder_layers if encoder_layers is None else encoder_layers
    n_dec = c.n_decoder_layers if decoder_layers is None else decoder_layers
    total = n_enc * layer_parameters(*sizes) + n_dec * layer_parameters(*sizes, decoder=decoder_flag)
    total += c.src_vocab_size * d
    if (not c.share_embeddings and target_embedding) or shared_counted:
        total += v_tgt * d
    if (not (c.tie_output or c.share_embeddings) and output_matrix) or tied_counted:
        total += v_tgt * d
    total += v_tgt if output_bias else 0
    total += (4 * d if c.norm_first else 0) if final_norms is None else final_norms * d
    return total + (c.max_len * d if positions else 0)


# -- mutants


@wrong("mutant", "the output bias left out")
def _no_output_bias(config):
    return _model(config, output_bias=False)


@wrong("mutant", "the decoder counted with n_encoder_layers")
def _one_depth(config):
    return _model(config, decoder_layers=config.n_encoder_layers)


@wrong("mutant", "the encoder counted with n_decoder_layers", says="the encoder is counted with n_decoder_layers")
def _encoder_at_the_decoder_depth(config):
    return _model(config, encoder_layers=config.n_decoder_layers)


@wrong("mutant", "the target embedding left out", says="the target embedding is missing")
def _no_target_embedding(config):
    return _model(config, target_embedding=False)  # the source's matrix only, as if shared


@wrong("mutant", "the untied output matrix left out", says="the output matrix is missing")
def _no_output_matrix(config):
    return _model(config, output_matrix=False)  # the bias only, as if tied


@wrong("mutant", "the decoder's layers counted as encoder layers")
def _decoder_flag_forgotten(config):
    return _model(config, decoder_flag=False)


@wrong("mutant", "the target side sized by src_vocab_size")
def _source_vocabulary_everywhere(config):
    return _model(config, target_vocab=config.src_vocab_size)


@wrong("mutant", "the positional table counted")
def _positions_counted(config):
    return _model(config, positions=True)


@wrong("mutant", "one final LayerNorm for the model, not one per stack", says="one final LayerNorm is counted")
def _one_final_norm(config):
    return _model(config, final_norms=2 if config.norm_first else 0)


# -- own mistakes and alternatives


@wrong("own", says="tied to the target embedding")
def _tied_matrix_twice(config):
    return _model(config, tied_counted=True)  # the output matrix added whatever tie_output says


@wrong("own", says="for the source and the target")
def _shared_embedding_twice(config):
    return _model(config, shared_counted=True)


@wrong("own", says="final LayerNorms of pre-LN are missing")
def _post_ln_only(config):
    return _model(config, final_norms=0)


@wrong("own", says="for a post-LN model")
def _final_norms_always(config):
    return _model(config, final_norms=4)


@wrong("own", says="counted three times")
def _state_dict_sum(config):
    from transformer_course.model import Transformer

    with torch.device("meta"):
        model = Transformer(config)
    return sum(t.numel() for name, t in model.state_dict().items() if "positional" not in name)  # by name


@right("own")
def _part_by_part(config):
    c = config
    d = c.d_model
    encoder = c.n_encoder_layers * layer_parameters(d, c.n_heads, c.d_ff, c.d_k, c.d_v)
    decoder = c.n_decoder_layers * layer_parameters(d, c.n_heads, c.d_ff, c.d_k, c.d_v, decoder=True)
    matrices = {"source"} | ({"source"} if c.share_embeddings else {"target"})
    if not (c.tie_output or c.share_embeddings):
        matrices.add("output")
    vocab = {"source": c.src_vocab_size, "target": c.tgt_vocab_size, "output": c.tgt_vocab_size}
    stacks_with_final_norm = 2 if c.norm_first else 0
    return encoder + decoder + sum(vocab[m] * d for m in matrices) + c.tgt_vocab_size + stacks_with_final_norm * 2 * d


@right("own")
def _by_distinct_tensors(config):
    c = config
    d = c.d_model
    with torch.device("meta"):
        embeddings = {"src": nn.Parameter(torch.empty(c.src_vocab_size, d))}
        embeddings["tgt"] = embeddings["src"] if c.share_embeddings else nn.Parameter(torch.empty(c.tgt_vocab_size, d))
        embeddings["out"] = embeddings["tgt"] if c.tie_output or c.share_embeddings else nn.Parameter(
            torch.empty(c.tgt_vocab_size, d))  # fmt: skip
    distinct = {id(p): p.numel() for p in embeddings.values()}  # a shared tensor once
    layers = c.n_encoder_layers * layer_parameters(d, c.n_heads, c.d_ff, c.d_k, c.d_v) + c.n_decoder_layers * (
        layer_parameters(d, c.n_heads, c.d_ff, c.d_k, c.d_v, decoder=True))  # fmt: skip
    return sum(distinct.values()) + layers + c.tgt_vocab_size + (4 * d if c.norm_first else 0)
