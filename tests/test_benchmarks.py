"""The benchmark compares two implementations of one model (not timed here: run
``python -m benchmarks.run`` by hand)."""

from __future__ import annotations

import pytest
import torch

from benchmarks.reference import TorchTransformer, ours_with_the_same_weights
from benchmarks.run import make_batch, make_config, same_function_error, saved_activation_bytes


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
    from transformer_course.tools.memory import peak_memory_mib

    inputs = attention_inputs(512, torch.device("cpu"))
    for name in ("teaching", "blocked"):
        fn = attention_call(name, *inputs)
        assert abs(profiler_peak_mib(fn) - peak_memory_mib(fn)) < 0.5, name
    teaching = peak_memory_mib(attention_call("teaching", *inputs))
    assert teaching >= 2 * 4 * 512 * 512 * 4 / 2**20  # scores and weights, (1, 4, 512, 512) float32 each
