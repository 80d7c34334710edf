"""A language model out of the course: the GGUF file reads back exactly (tensors, layout, metadata,
tokenizer) in every precision; transformers' generate on text and CTranslate2's Generator give the
course's text and tokens; llama.cpp (where llama-cpp-python is installed) the course's greedy tokens."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

gguf = pytest.importorskip("gguf", reason="pip install gguf (make install does)")

from transformer_course import DecoderOnlyConfig, DecoderOnlyLM, generate, quantize  # noqa: E402
from transformer_course.datasets.shakespeare import shakespeare_splits  # noqa: E402
from transformer_course.lm_checkpoint import load_lm_checkpoint, save_lm_checkpoint  # noqa: E402
from transformer_course.subwords import SubwordTokenizer, train_subwords  # noqa: E402
from transformer_course_tools.models.export.gguf_file import gguf_tensors, llama_cpp_greedy, write_gguf  # noqa: E402
from transformer_course_tools.models.export.sources import load_source  # noqa: E402
from transformer_course_tools.models.pretrained import LM_PATH  # noqa: E402

PROMPTS = ["Ham. To be, or not", "Enter", "O Romeo,", "What is the", "MACBETH. If it were done"]


def drawn(model: torch.nn.Module) -> torch.nn.Module:
    """Every vector drawn too (gains around 1, biases around 0), so a swapped norm or bias shows."""
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, tensor in model.named_parameters():
            if tensor.dim() == 1:
                tensor.copy_(torch.randn(tensor.shape, generator=generator) * 0.3 + (1.0 if "norm" in name else 0.0))
    return model.eval()


@pytest.fixture(scope="module")
def tokenizer() -> SubwordTokenizer:
    return train_subwords(shakespeare_splits()["train"][:3000], vocab_size=320)


def small_lm(vocab: int, **overrides) -> DecoderOnlyLM:
    settings = dict(d_model=64, n_heads=4, n_kv_heads=2, n_layers=2, max_len=64, d_ff=96) | overrides
    torch.manual_seed(0)
    return drawn(DecoderOnlyLM(DecoderOnlyConfig.modern(vocab, **settings)))


def field(reader, key: str):
    """A GGUF metadata value: a number, a string, or a list of them."""
    f = reader.fields[key]
    values = [f.parts[i] for i in f.data]
    decoded = [bytes(v).decode("utf-8") if v.dtype == np.uint8 else v.tolist()[0] for v in values]
    return decoded if len(f.data) > 1 or key.startswith("tokenizer.ggml.token") else decoded[0]


# -- GGUF: what is written reads back ------------------------------------------------------------------

GGUF_MODELS = {
    "llama: grouped heads, biases, untied": lambda V: small_lm(V, tie_output=False, scale_embedding=False),
    "llama: scaled embedding, tied (folded, untied)": lambda V: small_lm(V),
    "gpt2: learned positions": lambda V: small_lm(V, norm="layernorm", positional="learned", feed_forward="gelu_tanh",
                                                  n_kv_heads=None, scale_embedding=False, d_ff=128),
    "gpt2: sinusoids, no biases": lambda V: small_lm(V, norm="layernorm", positional="sinusoidal", n_kv_heads=None,
                                                     feed_forward="gelu_tanh", bias=False, d_ff=128),
}  # fmt: skip


@pytest.mark.parametrize("precision", ["float32", "bf16", "int8"])
@pytest.mark.parametrize("case", GGUF_MODELS)
def test_a_gguf_file_reads_back_exactly(case: str, precision: str, tokenizer, tmp_path: Path) -> None:
    lm = GGUF_MODELS[case](len(tokenizer))
    path = write_gguf(lm, tokenizer.id_to_token, tmp_path / "m.gguf", precision)
    reader = gguf.GGUFReader(path)
    arch, expected = gguf_tensors(lm)
    c = lm.config
    assert field(reader, "general.architecture") == arch == ("llama" if c.positional == "rope" else "gpt2")
    read = {t.name: t for t in reader.tensors}
    assert sorted(read) == sorted(expected)
    names = {gguf.TENSOR_NAMES[t].format(bid=0) for t in gguf.MODEL_TENSORS[gguf.MODEL_ARCH[arch.upper()]]}
    assert {n.rsplit(".", 1)[0] for n in read if not n.startswith("blk.1.")} <= names, "llama.cpp's own names"
    bf16 = dict(quantize(lm, "bf16").named_parameters())
    for name, tensor in expected.items():
        t = read[name]
        assert tuple(reversed([int(n) for n in t.shape])) == tuple(tensor.shape), name  # GGUF lists ne0 first
        values = gguf.quants.dequantize(t.data, t.tensor_type).reshape(tensor.shape)
        if tensor.dim() == 1 or precision == "float32":
            assert t.tensor_type == gguf.GGMLQuantizationType.F32 and np.array_equal(values, tensor.numpy()), name
        elif precision == "bf16":
            assert t.tensor_type == gguf.GGMLQuantizationType.BF16
            assert np.array_equal(values, tensor.to(torch.bfloat16).float().numpy()), name
        elif tensor.shape[-1] % 32 == 0:  # q8_0: blocks of 32 numbers, one float16 scale each
            assert t.tensor_type == gguf.GGMLQuantizationType.Q8_0
            blocks = tensor.reshape(-1, 32)
            step = blocks.abs().amax(dim=1, keepdim=True) / 127  # the block's scale
            rounding = 127 * (step - step.half().float()).abs()  # the scale kept in float16, times |q| ≤ 127
            error = (torch.from_numpy(values).reshape(-1, 32) - blocks).abs()
            assert (error <= step / 2 + rounding + 1e-9).all() and error.max() > 0, name
        else:
            assert t.tensor_type == gguf.GGMLQuantizationType.F16  # convert_hf_to_gguf.py's fallback
    if "bias" not in "".join(read) and c.bias:
        pytest.fail("the model's biases are missing")
    for name, parameter in bf16.items():  # the course's bf16 model holds the numbers the BF16 file holds
        assert parameter.dtype == torch.bfloat16, name
    prefix = arch
    assert field(reader, f"{prefix}.context_length") == c.max_len
    assert field(reader, f"{prefix}.embedding_length") == c.d_model
    assert field(reader, f"{prefix}.block_count") == c.n_layers
    assert field(reader, f"{prefix}.feed_forward_length") == c.d_ff
    assert field(reader, f"{prefix}.attention.head_count") == c.n_heads
    if arch == "llama":
        assert field(reader, "llama.attention.head_count_kv") == (c.n_kv_heads or c.n_heads)
        assert field(reader, "llama.rope.freq_base") == c.rope_base
        assert field(reader, "llama.rope.dimension_count") == c.d_model // c.n_heads
        assert math.isclose(field(reader, "llama.attention.layer_norm_rms_epsilon"), c.layer_norm_eps, rel_tol=1e-6)
    else:
        assert math.isclose(field(reader, "gpt2.attention.layer_norm_epsilon"), c.layer_norm_eps, rel_tol=1e-6)
    assert field(reader, "tokenizer.ggml.model") == "llama"
    assert field(reader, "tokenizer.ggml.tokens") == tokenizer.id_to_token
    assert field(reader, "tokenizer.ggml.bos_token_id") == c.bos_id
    assert field(reader, "tokenizer.ggml.eos_token_id") == c.eos_id
    assert field(reader, "general.file_type") == {"float32": 0, "bf16": 32, "int8": 7}[precision]


def test_the_llama_tensors_are_the_courses_rotary_layout_and_gpt2s_stacked(tokenizer) -> None:
    """llama.cpp rotates pairs (2i, 2i+1) as the course: W^Q as the course holds it (transformers'
    checkpoint holds it reordered, and convert_hf_to_gguf.py reorders it back); GPT-2's attn_qkv is
    W^Q, W^K, W^V stacked, as nn.Linear holds them."""
    lm = GGUF_MODELS["llama: grouped heads, biases, untied"](len(tokenizer))
    tensors = gguf_tensors(lm)[1]
    assert torch.equal(tensors["blk.1.attn_k.weight"], lm.layers[1].self_attn.w_k.weight)
    assert torch.equal(tensors["output.weight"], lm.output.weight)
    gpt2 = GGUF_MODELS["gpt2: learned positions"](len(tokenizer))
    qkv = gguf_tensors(gpt2)[1]["blk.0.attn_qkv.weight"]
    attention = gpt2.layers[0].self_attn
    assert torch.equal(qkv, torch.cat([attention.w_q.weight, attention.w_k.weight, attention.w_v.weight]))


def test_what_llama_cpp_cannot_run_is_refused(tokenizer, tmp_path: Path) -> None:
    relu = small_lm(len(tokenizer), norm="layernorm", positional="learned", feed_forward="relu", n_kv_heads=None)
    with pytest.raises(ValueError, match="--to gguf: llama.cpp's GPT-2 uses GELU \\(tanh\\)"):
        write_gguf(relu, tokenizer.id_to_token, tmp_path / "x.gguf")
    with pytest.raises(ValueError, match="--to gguf: Llama normalises before each sub-layer"):
        write_gguf(small_lm(len(tokenizer), norm_first=False), tokenizer.id_to_token, tmp_path / "y.gguf")


# -- transformers and CTranslate2: the same text ---------------------------------------------------------


@pytest.fixture(scope="module", params=["small", "shipped"])
def lm_checkpoint(request, tokenizer, tmp_path_factory) -> Path:
    """A small random language model with a Shakespeare tokenizer, and the shipped one."""
    if request.param == "shipped":
        return LM_PATH
    path = tmp_path_factory.mktemp("lm") / "lm.pt"
    return save_lm_checkpoint(path, small_lm(len(tokenizer), scale_embedding=False), tokenizer)


def _course_text(checkpoint, prompts: list[str], new: int) -> tuple[list[list[int]], list[str]]:
    tok = SubwordTokenizer.from_dict(checkpoint.tokenizer)
    ids, texts = [], []
    for prompt in prompts:
        out = generate(checkpoint.model, torch.tensor([tok.encode(prompt, add_bos=True)]), new)[0].tolist()
        ids.append(out)
        texts.append(tok.decode(out))
    return ids, texts


def test_transformers_generate_on_text_gives_the_courses_text(lm_checkpoint, tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    from transformer_course_tools.models.export.folders import write_transformers

    checkpoint = load_lm_checkpoint(lm_checkpoint)
    write_transformers(load_source(str(lm_checkpoint)), tmp_path / "hf")
    tok = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf")
    model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "hf")
    ids, texts = _course_text(checkpoint, PROMPTS, 30)
    for prompt, expected_ids, expected in zip(PROMPTS, ids, texts, strict=True):
        encoded = tok(prompt, return_tensors="pt")
        assert encoded["input_ids"][0].tolist() == expected_ids[: encoded["input_ids"].shape[1]]  # <bos> first
        out = model.generate(**encoded, max_new_tokens=30)[0].tolist()
        eos = checkpoint.config.eos_id
        assert out[: out.index(eos) + 1 if eos in out else None] == expected_ids[: len(out)]
        assert " ".join(tok.decode(out, skip_special_tokens=True).split()) == expected


def test_ctranslate2_generator_gives_the_courses_tokens(lm_checkpoint, tmp_path: Path) -> None:
    ctranslate2 = pytest.importorskip("ctranslate2")
    from transformer_course_tools.models.export.ct2 import write_ctranslate2

    checkpoint = load_lm_checkpoint(lm_checkpoint)
    source = load_source(str(lm_checkpoint))
    vocab = source.tokenizer
    banned = [[vocab.id_to_token(i)] for i in (checkpoint.config.pad_id, checkpoint.config.bos_id)]
    for precision, model in (
        ("float32", checkpoint.model),
        ("int8", None),
        ("bf16", quantize(checkpoint.model, "bf16")),
    ):
        write_ctranslate2(source, tmp_path / precision, precision, tmp_path / f"hf-{precision}")
        generator = ctranslate2.Generator(str(tmp_path / precision))
        starts = [vocab.encode(p).tokens for p in PROMPTS]  # <bos> first
        results = generator.generate_batch(starts, max_length=20, suppress_sequences=banned, include_prompt_in_result=True,
                                           return_end_token=True)  # fmt: skip
        theirs = [
            [checkpoint.config.bos_id] + [vocab.token_to_id(t) for t in r.sequences[0]] for r in results
        ]  # <bos> left out
        if model is None:  # CTranslate2's int8 rounds each layer's input to 8 bits too: its own numbers
            assert all(len(t) > len(s) for t, s in zip(theirs, starts, strict=True))
            continue
        checkpoint_like = type(checkpoint)(model, checkpoint.config, checkpoint.tokenizer)
        ours = _course_text(checkpoint_like, PROMPTS, 20)[0]
        for a, b in zip(theirs, ours, strict=True):
            n = min(len(a), len(b))
            assert a[:n] == b[:n], precision


# -- llama.cpp -----------------------------------------------------------------------------------------


def test_llama_cpp_gives_the_courses_greedy_tokens(tmp_path: Path) -> None:
    llama_cpp = pytest.importorskip(
        "llama_cpp", reason="llama-cpp-python is not installed (pip install 'transformer-course[benchmark]')"
    )
    checkpoint = load_lm_checkpoint(LM_PATH)
    tok = SubwordTokenizer.from_dict(checkpoint.tokenizer)
    path = write_gguf(checkpoint.model, tok.id_to_token, tmp_path / "lm.gguf", "float32")
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=checkpoint.config.max_len, n_threads=1, verbose=False)
    banned = [checkpoint.config.pad_id, checkpoint.config.bos_id]
    for prompt in PROMPTS:
        ids = tok.encode(prompt, add_bos=True)
        ours = generate(checkpoint.model, torch.tensor([ids]), 20)[0].tolist()
        theirs = ids + llama_cpp_greedy(llm, ids, 20, banned, checkpoint.config.eos_id)
        assert theirs == ours
    # llama.cpp's own tokenizer, from the GGUF's vocabulary and scores, against the course's
    splits = shakespeare_splits()
    texts = [*PROMPTS, *splits["valid"], *splits["test"]]  # 585 texts the tokenizer never learnt from
    same = sum(llm.tokenize(t.encode(), add_bos=True, special=False) == tok.encode(t, add_bos=True) for t in texts)
    assert same == len(texts), f"llama.cpp cut {len(texts) - same} of {len(texts)} texts otherwise"
