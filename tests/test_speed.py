"""transformer_course_tools/notebook/speed.py: the timing harness of chapter 16 and benchmarks/engines.py
(no timing is asserted: what is checked is who runs when, and the arithmetic of the tables)."""

from __future__ import annotations

import pytest
import torch

from transformer_course_tools.notebook.speed import PrecisionTiming, interleaved, one_thread, speed_table


def test_interleaved_warms_up_then_rotates_the_order_each_round() -> None:
    calls: list[str] = []
    runs = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    times = interleaved(runs, rounds=3)
    assert calls == list("abc") + list("abc") + list("bca") + list("cab"), "a warm-up, then rounds that rotate"
    assert {name: len(seconds) for name, seconds in times.items()} == {"a": 3, "b": 3, "c": 3}
    assert all(s >= 0 for seconds in times.values() for s in seconds)
    calls.clear()
    interleaved(runs, rounds=1, warm_up=False)
    assert calls == list("abc"), "no warm-up when asked"
    with pytest.raises(ValueError, match="rounds must be at least 1, got 0"):
        interleaved(runs, rounds=0)


def test_one_thread_restores_the_threads_even_after_an_error() -> None:
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError), one_thread():
        assert torch.get_num_threads() == 1
        raise RuntimeError("inside")
    assert torch.get_num_threads() == before


def test_the_speed_table_divides_by_the_reference_and_names_the_fastest() -> None:
    table = speed_table({"lm": {"ours": 100.0, "theirs": 250.0, "slow": 50.0}}, reference="ours")
    assert "| lm | theirs | 250 | 2.50 |" in table and "| lm | slow | 50 | 0.50 |" in table
    assert table.endswith("With the lm, the fastest here was theirs, at 2.5× ours.")


def test_the_precision_table_and_sentence_agree_with_the_numbers() -> None:
    mib = 2**20
    timing = PrecisionTiming(
        read={"float32": 400 * mib, "bf16": 200 * mib, "int8": 100 * mib},
        seconds={"float32": 0.1, "bf16": 0.08, "int8": 0.04},
        bandwidth=10_000 * mib,  # bytes per second: float32 reads 400 MiB in 0.1 s, 40 % of it
    )
    assert (
        "float32   400.0 MiB read per token   100.0 ms per token    4.2 GB/s:  40% of the memory's speed"
        in timing.table()
    )
    sentence = timing.sentence()
    assert sentence.startswith("On this machine the fastest was **int8**, at 40.0 ms per token (2.5× float32).")
    assert "int8 read 4.00× fewer bytes than float32 and ran 2.5× as fast" in sentence
    assert sentence.endswith("weights at 40% of the speed one thread reads memory at.")
