"""The peak-memory tool (``transformer_course_tools/notebook/memory.py``): exact on tensors of known sizes, blind to views and
in-place results, and it sees that blocked attention never holds the full matrix of weights."""

from __future__ import annotations

import pytest
import torch

from transformer_course.attention import scaled_dot_product_attention
from transformer_course.blocked import blocked_attention
from transformer_course_tools.notebook.memory import TensorMemory, peak_memory_mib

ONE_MIB = 2**18  # float32 numbers in one MiB


def test_the_peak_counts_what_is_held_at_once() -> None:
    def one_then_two() -> None:
        a = torch.ones(ONE_MIB)
        del a  # freed before the next one: the peak is 2 MiB, not 3
        b = torch.ones(2 * ONE_MIB)
        del b

    def both() -> torch.Tensor:
        a = torch.ones(ONE_MIB)
        return a + torch.ones(2 * ONE_MIB)[:ONE_MIB]  # a, the 2 MiB tensor, and the 1 MiB sum

    assert peak_memory_mib(one_then_two) == 2.0
    assert peak_memory_mib(both) == 4.0


def test_views_in_place_results_and_older_tensors_cost_nothing() -> None:
    x = torch.randn(64, ONE_MIB // 64)

    def views_and_in_place() -> None:
        x.view(-1)[::2].t()  # views share x's storage
        x.mul_(1.0)  # in place: x's storage again

    assert peak_memory_mib(views_and_in_place) == 0.0
    assert peak_memory_mib(lambda: x.sum()) == 4 / 2**20  # one new float32 number


def test_the_count_goes_back_to_zero_when_the_tensors_are_freed() -> None:
    with TensorMemory() as memory:
        a = torch.ones(ONE_MIB)
        assert memory.live == 2**20
        del a
    assert memory.live == 0 and memory.peak == 2**20


def test_blocked_attention_never_holds_the_full_matrix_of_weights() -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 1, 2048, 32) for _ in range(3))
    weights_mib = 2048 * 2048 * 4 / 2**20  # one (T, S) float32 matrix: 16 MiB
    full = peak_memory_mib(lambda: scaled_dot_product_attention(q, k, v)[0])
    blocked = peak_memory_mib(lambda: blocked_attention(q, k, v, block_size=64))
    assert full >= 2 * weights_mib  # the scores and the weights, both (T, S)
    assert blocked < weights_mib / 4  # a few (T, 64) blocks of 0.5 MiB


def test_peak_memory_mib_wants_a_function() -> None:
    with pytest.raises(ValueError, match="fn must be a function of no arguments"):
        peak_memory_mib(torch.ones(3))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_the_allocators_peak_is_used() -> None:
    assert peak_memory_mib(lambda: torch.ones(ONE_MIB, device="cuda"), device="cuda") == pytest.approx(1.0, abs=0.01)
