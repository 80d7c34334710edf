"""The benchmark compares two implementations of one model (not timed here: run
``python -m benchmarks.run`` by hand)."""

from __future__ import annotations

import pytest
import torch

from benchmarks.reference import TorchTransformer, ours_with_the_same_weights
from benchmarks.run import make_batch, make_config, same_function_error, saved_activation_bytes
from transformer_course.lm import DecoderOnlyLM


def test_ours_with_nn_transformers_weights_computes_the_same_function() -> None:
    assert same_function_error("small", torch.device("cpu")) < 1e-4


def test_the_copy_keeps_the_output_tied_to_the_target_embedding() -> None:
    torch.manual_seed(0)
    theirs = TorchTransformer(make_config("small"))
    ours = ours_with_the_same_weights(theirs)
    assert ours.output.weight is ours.tgt_embed.weight
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())


def test_the_reference_refuses_pre_ln() -> None:
    config = make_config("small")
    config.norm_first = True
    with pytest.raises(ValueError, match="post-LN"):
        ours_with_the_same_weights(TorchTransformer(config))


def test_saved_activations_are_counted_without_the_parameters() -> None:
    config = make_config("small")
    model = TorchTransformer(config).train()
    saved = saved_activation_bytes(model, make_batch(config, torch.device("cpu"), batch=4))
    parameters = sum(p.numel() * p.element_size() for p in model.parameters())
    assert 0 < saved < 10 * parameters


def test_the_profilers_allocator_peak_agrees_with_the_tensor_count() -> None:
    """benchmarks/lm.py measures attention memory two ways in one process: they must agree."""
    from benchmarks.lm import attention_call, attention_inputs, profiler_peak_mib
    from transformer_course_tools.notebook.memory import peak_memory_mib

    inputs = attention_inputs(512, torch.device("cpu"))
    for name in ("teaching", "blocked"):
        fn = attention_call(name, *inputs)
        assert abs(profiler_peak_mib(fn) - peak_memory_mib(fn)) < 0.5, name
    teaching = peak_memory_mib(attention_call("teaching", *inputs))
    assert teaching >= 2 * 4 * 512 * 512 * 4 / 2**20  # scores and weights, (1, 4, 512, 512) float32 each


def test_the_hub_benchmark_runs_its_quick_mode(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m benchmarks.hub --quick``: a tiny Marian model; ours and transformers' greedy tokens agree."""
    pytest.importorskip("transformers")
    from benchmarks.hub import main

    assert main(["--quick", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("greedy tokens identical to transformers': yes") == 2
    for precision in ("float32", "bf16", "int8"):
        assert f"ours {precision:8} speed-up over float32" in out


def test_the_bytes_a_generated_token_reads_shrink_with_the_precision() -> None:
    pytest.importorskip("transformers")
    from benchmarks.hub import TINY, marian_models, step_bytes

    _, models = marian_models(TINY)
    read = {p: step_bytes(m, batch=1, src_len=6, tokens=5) for p, m in models.items()}
    assert read["bf16"]["weights"] == read["float32"]["weights"] / 2 and read["bf16"]["kv"] == read["float32"]["kv"] / 2
    assert read["int8"]["weights"] < 0.4 * read["float32"]["weights"] and read["int8"]["kv"] == read["float32"]["kv"]
    d, layers = TINY["d_model"], TINY["decoder_layers"]
    assert read["float32"]["kv"] == layers * 2 * d * 4 * (3 + 6)  # self-attention: 3 positions on average; source 6


def test_the_llama_style_reference_with_our_weights_computes_the_same_function() -> None:
    from benchmarks.lm_training import explicit_mask, make_config, same_weights

    torch.manual_seed(0)
    ours = DecoderOnlyLM(make_config(d_model=32, n_heads=4, n_kv_heads=2, n_layers=2)).eval()
    reference = same_weights(ours).eval()
    tokens = torch.randint(3, 1000, (2, 11))
    with torch.no_grad():
        fused, theirs = ours(tokens), reference(tokens)  # (B, T, V)
        with explicit_mask():
            masked = ours(tokens)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in reference.parameters())
    assert (fused - theirs).abs().max() < 1e-4
    assert (fused - masked).abs().max() < 1e-5


def test_the_engines_benchmark_runs_its_quick_mode(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m benchmarks.engines --quick``: tiny shapes, every engine; needs the benchmark extra
    (``pip install -e ".[benchmark]"``), which ``make test`` does not install."""
    for package in ("transformers", "ctranslate2", "llama_cpp", "gguf"):
        pytest.importorskip(package, reason=f"{package} is in the benchmark extra, not in make test")
    from benchmarks.engines import main

    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| marian | greedy | 1 | ours float32 |" in out and "| smollm | greedy | 1 | llama.cpp float32 |" in out


def test_the_byte_count_of_a_plan_is_its_weights() -> None:
    """What benchmarks/engines.py divides by the time: every decoder matrix and the output layer once, and
    the output's bias, which the engine adds to hold -inf for the tokens never chosen next (pad, bos)."""
    from transformer_course.lm import DecoderOnlyConfig
    from transformer_course_tools.engine.plan import plan_for

    torch.manual_seed(0)
    model = DecoderOnlyLM(DecoderOnlyConfig.modern(100, d_model=32, n_heads=4, n_kv_heads=2, n_layers=2, bias=False))
    matrices = sum(p.numel() for p in model.parameters() if p.dim() == 2)  # the tied output once
    norms = sum(p.numel() for name, p in model.named_parameters() if "norm" in name)
    plan = plan_for(model)
    assert plan.output.bias is not None and plan.output.bias.isinf().sum() == 2  # the model itself has no bias
    assert plan.nbytes == 4 * (matrices + 100)  # the norms are folded into the matrices; the bias: 100 floats
    assert norms > 0
