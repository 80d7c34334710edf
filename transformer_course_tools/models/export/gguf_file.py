"""A GGUF file of a course language model, for llama.cpp, written with the ``gguf`` package.

Names, layouts and metadata are those llama.cpp's ``convert_hf_to_gguf.py`` writes for the same model
exported to ``transformers`` (a ``LlamaForCausalLM`` or a ``GPT2LMHeadModel``):

- **llama**: ``token_embd``, ``output_norm``, ``output`` (untied only), and per block ``attn_norm``,
  ``attn_q``, ``attn_k``, ``attn_v``, ``attn_output`` (their biases where the model has them),
  ``ffn_norm``, ``ffn_gate``, ``ffn_up``, ``ffn_down``. llama.cpp rotates the pairs (2i, 2i + 1) of each
  head, as the course does (``convert_hf_to_gguf.py`` undoes ``transformers``' halves layout to get
  there), so W^Q and W^K are written as the course holds them.
- **gpt2**: ``token_embd``, ``position_embd``, ``output_norm``, ``output`` (untied only), and per
  block ``attn_norm``, ``attn_qkv`` (W^Q, W^K, W^V stacked), ``attn_output``, ``ffn_norm``, ``ffn_up``,
  ``ffn_down``, weights as ``nn.Linear`` holds them, with biases. llama.cpp's GPT-2 uses GELU's tanh
  approximation: another activation is refused.

What the room's ``to_llama`` and ``to_gpt2`` bridge is bridged the same way (√D folded into
``token_embd``, sinusoids as ``position_embd``, zero biases), and what they refuse is refused.

The tokenizer is written as llama.cpp's SentencePiece-style vocabulary (``tokenizer.ggml.model =
"llama"``): the tokens in id order, a score per token (later merges score lower, so llama.cpp merges
in the order chapter 12's BPE learned them), ``<pad>``, ``<bos>`` and ``<eos>`` as control tokens,
``<unk>`` as the unknown one, ``<bos>`` added before a text, "▁" for a space.

Precision (``--precision``): ``float32`` (F32); ``bf16`` (BF16: the same rounding as the course's
``quantize(model, "bf16")``, bit for bit); ``int8`` (llama.cpp's own Q8_0: blocks of 32 numbers
sharing one float16 scale, which is *not* the course's int8, one float32 scale per row; a tensor
whose rows are not a multiple of 32 long falls back to F16, as ``convert_hf_to_gguf.py`` does).
Vectors (norms, biases) stay F32 in every precision.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from transformer_course.export import check_gpt2, check_llama, embedding_and_output, weight_and_bias
from transformer_course.lm import DecoderOnlyLM

PRECISIONS = ("float32", "bf16", "int8")
Q8_0_BLOCK = 32  # numbers per Q8_0 block (ggml's QK8_0)


def _gguf():
    try:
        import gguf
    except ImportError as error:
        raise ImportError("--to gguf needs the 'gguf' package: pip install gguf") from error
    return gguf


def gguf_tensors(lm: DecoderOnlyLM) -> tuple[str, dict[str, torch.Tensor]]:
    """(llama.cpp's architecture, its tensors by GGUF name, float32 as the course holds them)."""
    llama = lm.config.positional == "rope"
    c = check_llama(lm, "--to gguf") if llama else check_gpt2(lm, "--to gguf")
    if not llama and c.feed_forward != "gelu_tanh":
        raise ValueError(
            f"--to gguf: llama.cpp's GPT-2 uses GELU (tanh): this model has feed_forward={c.feed_forward!r}"
        )
    embedding, output, tied = embedding_and_output(lm)
    state = {k: v.detach().float() for k, v in lm.state_dict().items()}
    tensors = {"token_embd.weight": embedding.float(), "output_norm.weight": state["norm.weight"]}
    if not tied:
        tensors["output.weight"] = output.float()
    if llama:
        names = {"norm1": "attn_norm", "self_attn.w_q": "attn_q", "self_attn.w_k": "attn_k", "self_attn.w_v": "attn_v",
                 "self_attn.w_o": "attn_output", "norm2": "ffn_norm", "ffn.w1": "ffn_gate", "ffn.w3": "ffn_up",
                 "ffn.w2": "ffn_down"}  # fmt: skip
        for i in range(c.n_layers):
            for ours, theirs in names.items():
                for part in ("weight", "bias"):
                    if f"layers.{i}.{ours}.{part}" in state:
                        tensors[f"blk.{i}.{theirs}.{part}"] = state[f"layers.{i}.{ours}.{part}"]
        return "llama", tensors
    tensors["output_norm.bias"] = state["norm.bias"]
    positions = state.get("positional.embedding.weight")
    tensors["position_embd.weight"] = positions if positions is not None else lm.positional.pe.float()
    names = {"self_attn.w_o": "attn_output", "ffn.linear1": "ffn_up", "ffn.linear2": "ffn_down"}
    for i in range(c.n_layers):
        qkv = [weight_and_bias(state, f"layers.{i}.self_attn.w_{p}") for p in "qkv"]
        tensors[f"blk.{i}.attn_qkv.weight"] = torch.cat([w for w, _ in qkv])  # (3D, D)
        tensors[f"blk.{i}.attn_qkv.bias"] = torch.cat([b for _, b in qkv])
        for ours, theirs in names.items():
            tensors[f"blk.{i}.{theirs}.weight"], tensors[f"blk.{i}.{theirs}.bias"] = weight_and_bias(
                state, f"layers.{i}.{ours}"
            )
        for ours, theirs in (("norm1", "attn_norm"), ("norm2", "ffn_norm")):
            tensors |= {f"blk.{i}.{theirs}.{t}": state[f"layers.{i}.{ours}.{t}"] for t in ("weight", "bias")}
    return "gpt2", tensors


def write_gguf(lm: DecoderOnlyLM, tokens: list[str], out: Path, precision: str = "float32", name: str = "") -> Path:
    """Write ``lm`` and its tokenizer's ``tokens`` (id order) as a GGUF file at ``out``."""
    gguf = _gguf()
    if precision not in PRECISIONS:
        raise ValueError(f"--precision must be one of {', '.join(PRECISIONS)} for gguf, got {precision}")
    if len(tokens) != lm.config.vocab_size:
        raise ValueError(f"the tokenizer has {len(tokens)} tokens, the model's vocabulary {lm.config.vocab_size}")
    arch, tensors = gguf_tensors(lm)
    file_type = {"float32": gguf.LlamaFileType.ALL_F32, "bf16": gguf.LlamaFileType.MOSTLY_BF16,
                 "int8": gguf.LlamaFileType.MOSTLY_Q8_0}[precision]  # fmt: skip
    writer = gguf.GGUFWriter(str(out), arch)
    _metadata(writer, lm, arch, name or f"transformer-course {arch}", file_type)
    _tokenizer(writer, lm, tokens)
    for tensor_name, tensor in tensors.items():
        data, qtype = stored(tensor, precision)
        writer.add_tensor(tensor_name, data, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def stored(tensor: torch.Tensor, precision: str) -> tuple[np.ndarray, object]:
    """(the bytes or numbers GGUF stores for ``tensor``, their GGML type): vectors always F32."""
    gguf = _gguf()
    types = gguf.GGMLQuantizationType
    array = tensor.detach().float().contiguous().numpy()
    if tensor.dim() < 2 or precision == "float32":
        return array, types.F32
    if precision == "bf16":
        return gguf.quants.quantize(array, types.BF16), types.BF16
    if array.shape[-1] % Q8_0_BLOCK:  # rows that are not whole blocks: F16, as convert_hf_to_gguf.py falls back
        return gguf.quants.quantize(array, types.F16), types.F16
    return gguf.quants.quantize(array, types.Q8_0), types.Q8_0


def _metadata(writer, lm: DecoderOnlyLM, arch: str, name: str, file_type) -> None:
    c = lm.config
    writer.add_name(name)
    writer.add_context_length(c.max_len)
    writer.add_embedding_length(c.d_model)
    writer.add_feed_forward_length(c.d_ff)
    writer.add_block_count(c.n_layers)
    writer.add_head_count(c.n_heads)
    if arch == "llama":
        writer.add_head_count_kv(c.n_kv_heads or c.n_heads)
        writer.add_rope_freq_base(c.rope_base)
        writer.add_layer_norm_rms_eps(c.layer_norm_eps)
        writer.add_vocab_size(c.vocab_size)
        writer.add_rope_dimension_count(c.d_model // c.n_heads)
    else:
        writer.add_layer_norm_eps(c.layer_norm_eps)
    writer.add_file_type(file_type)
    if file_type != _gguf().LlamaFileType.ALL_F32:
        writer.add_quantization_version(_gguf().GGML_QUANT_VERSION)


def _tokenizer(writer, lm: DecoderOnlyLM, tokens: list[str]) -> None:
    """llama.cpp's SentencePiece-style vocabulary (see the module)."""
    token_type = _gguf().TokenType
    c = lm.config
    control = {c.pad_id, c.bos_id, c.eos_id}
    unk = tokens.index("<unk>") if "<unk>" in tokens else None
    types = [token_type.CONTROL if i in control else token_type.UNKNOWN if i == unk else token_type.NORMAL
             for i in range(len(tokens))]  # fmt: skip
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores([-float(i) for i in range(len(tokens))])  # ids in the order BPE made them
    writer.add_token_types(types)
    writer.add_bos_token_id(c.bos_id)
    writer.add_eos_token_id(c.eos_id)
    writer.add_pad_token_id(c.pad_id)
    if unk is not None:
        writer.add_unk_token_id(unk)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_add_space_prefix(True)


def llama_cpp_greedy(llm, prompt: list[int], max_new: int, banned: list[int], eos_id: int) -> list[int]:
    """Greedy decoding in llama.cpp (a ``llama_cpp.Llama`` on a file written here) as the course's
    ``generate`` does it: ``banned`` ids never chosen, a stop after ``<eos>``. Returns the new ids."""
    llm.reset()
    llm.eval(prompt)
    made: list[int] = []
    while len(made) < max_new:
        logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()  # the last position's
        logits[banned] = -np.inf
        made.append(int(np.argmax(logits)))
        if made[-1] == eos_id:
            break
        llm.eval(made[-1:])
    return made
