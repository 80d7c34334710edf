"""No hidden host synchronisation: a forward and backward pass never reads a tensor's value back
when the model runs on an accelerator, and on the CPU the token ids are checked once per forward.

Reading a value (``.item()``, ``bool(t)``, ``int(t)``, ``.tolist()``, ``nonzero`` …) makes the CPU
wait until a GPU has finished everything queued. We count such calls with a ``TorchFunctionMode``
while the model believes it is on an accelerator (``_validate.reads_are_free`` monkeypatched to
answer False: the one function the rooms consult).
"""

from __future__ import annotations

import pytest
import torch
from torch.overrides import TorchFunctionMode

from transformer_course import Transformer, TransformerConfig, _validate
from transformer_course.batching import Batch
from transformer_course.multihead import MultiHeadAttention
from transformer_course.step import train_step

# Every way a tensor's value reaches Python, or a shape that depends on values.
READS = {
    "__bool__", "__int__", "__float__", "__index__", "__complex__", "item", "tolist", "numpy", "cpu",
    "nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "equal", "allclose", "any_", "all_",
}  # fmt: skip


class CountReads(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - PyTorch's signature
        name = getattr(func, "__name__", "")
        if name in READS:
            self.reads.append(name)
        return func(*args, **(kwargs or {}))


def _model_and_batch(norm_first: bool) -> tuple[Transformer, Batch]:
    torch.manual_seed(0)
    config = TransformerConfig(23, 23, d_model=12, n_heads=3, d_ff=20, n_encoder_layers=2, n_decoder_layers=2,
                               max_len=16, norm_first=norm_first)  # fmt: skip
    src = torch.tensor([[5, 6, 7, 0, 0], [4, 9, 10, 11, 12]])  # padding: the masks take the fully masked path too
    tgt = torch.tensor([[1, 8, 9, 10, 2, 0, 0], [1, 3, 4, 5, 6, 7, 8]])
    return Transformer(config), Batch(src, tgt[:, :-1], tgt[:, 1:], pad_id=0)


def _forward_backward(model: Transformer, batch: Batch) -> None:
    logits = model(batch.src, batch.tgt_in)
    torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=0).backward()


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_forward_and_backward_read_nothing_back_on_an_accelerator(norm_first: bool, monkeypatch) -> None:
    model, batch = _model_and_batch(norm_first)
    monkeypatch.setattr(_validate, "reads_are_free", lambda x: False)  # the model now behaves as on a GPU
    with CountReads() as counter:
        _forward_backward(model, batch)
    assert counter.reads == [], f"host synchronisations in forward + backward: {counter.reads}"


def test_a_training_step_reads_nothing_back_on_an_accelerator(monkeypatch) -> None:
    """train_step returns the loss as a tensor; the loop reads the losses only when it logs.

    SGD here: Adam reads its step counters with ``.item()``, but PyTorch keeps those counters on
    the CPU (unless ``capturable=True``), so on a GPU they cost no synchronisation; in this
    all-CPU simulation they would be counted all the same.
    """
    model, batch = _model_and_batch(norm_first=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    monkeypatch.setattr(_validate, "reads_are_free", lambda x: False)
    with CountReads() as counter:
        loss = train_step(model, batch, optimizer, max_grad_norm=1.0)
    assert counter.reads == [], f"host synchronisations in one training step: {counter.reads}"
    assert isinstance(loss, torch.Tensor) and loss.dim() == 0 and not loss.requires_grad


def test_on_the_cpu_token_ids_are_checked_once_per_forward() -> None:
    model, batch = _model_and_batch(norm_first=False)
    teaching = [  # the teaching path reads no mask back: only the id checks read values
        attention.register_forward_pre_hook(lambda m, args, kwargs: (args, {**kwargs, "fast": False}), with_kwargs=True)
        for attention in model.modules()
        if isinstance(attention, MultiHeadAttention)
    ]
    with CountReads() as counter:
        model(batch.src, batch.tgt_in)
    for handle in teaching:
        handle.remove()
    assert counter.reads == ["__bool__", "__bool__"], "one read for the source ids, one for the target ids"


def test_greedy_decoding_reads_back_only_every_few_steps_on_an_accelerator(monkeypatch) -> None:
    """Decoding validates its inputs once, before the loop: with ``max_len`` given it reads
    nothing; without it one read gives the longest and shortest limits (§6.1's source length + 50).
    Inside the loop the only read is "has every row finished?", asked every ``STOP_CHECK_EVERY``
    steps on an accelerator (every step on the CPU, where reading is free)."""
    from transformer_course.decoding import STOP_CHECK_EVERY, greedy_decode

    model, batch = _model_and_batch(norm_first=False)
    with torch.no_grad():
        model.output.bias[2] = -1e4  # <eos> never chosen: every row runs the 16 steps
    monkeypatch.setattr(_validate, "reads_are_free", lambda x: False)
    with CountReads() as counter:
        out = greedy_decode(model, batch.src, 2 * STOP_CHECK_EVERY)
    assert out.shape == (2, 2 * STOP_CHECK_EVERY)
    assert counter.reads == ["__bool__", "__bool__"], counter.reads
    with CountReads() as counter:
        out = greedy_decode(model, batch.src)  # each row's limit: min(its length + 50, max_len = 16)
    assert out.shape == (2, 16)
    assert counter.reads == ["tolist", "__bool__", "__bool__"], counter.reads
