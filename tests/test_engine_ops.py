"""A decoding step of the engine is small: its time goes into reading the weights, not into the
number of operations around them.

We count the ATen operations (every call that reaches PyTorch's dispatcher, with the
``TorchDispatchMode`` of ``benchmarks/decoding.py``) of greedy decoding with ``path=ENGINE``:
one generated token costs ``ops(T + 1 tokens) - ops(T tokens)`` (the encoder or the prompt, the
set-up and the reads before the loop cancel out; what is left is one whole step: every layer, the
embedding, the output layer, the choice of the token, the early-stop check). A layer's share is the
difference between the steps of two models that differ by two layers, divided by two: it must stay
at or below 45 for every family and precision, and what a step does outside its layers at or
below 30. In int8 each product first rounds every row of its input to whole numbers with the row's
own scale, so that no row depends on another (issue 52): 6 operations more per int8 product
(``int8_linear``: the rows' largest magnitudes, their scales, the division, and one scaling back
instead of the bias's addition), allowed on top. A step must also never copy the cached keys and
values to every query head (grouped heads are read as they are stored).
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarks.decoding import step_ops
from tests.test_engine import in_precision, language_model, translator
from transformer_course.lm import generate
from transformer_course_tools.engine import ENGINE
from transformer_course_tools.notebook.operations import CountOps

TARGET = 45  # ATen operations per layer per generated token, at most
# PyTorch before 2.5 (the floor, 2.3): SDPA's output of a grouped step comes in a layout that the reshape
# to (B, H·Dv) must copy, one more operation per layer (measured: 46 for the grouped family in bfloat16)
if tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 5):
    TARGET += 1
OUTSIDE = 30  # ATen operations of a step outside its layers (embedding, output layer, the token's choice)
ROW_SCALES = 6  # the operations an int8 product adds to round its input row by row (see the module)
LAYERS = 2  # the smaller of the two models; the other has LAYERS + 2
COPIES = {"expand", "repeat", "repeat_interleave", "index_select", "index", "gather"}  # what repeat_kv would do


def _no_early_stop(model: torch.nn.Module) -> torch.nn.Module:
    with torch.no_grad():
        model.output.bias[model.config.eos_id] = -1e4  # never stop early
    return model


@pytest.mark.parametrize("precision", ["float32", "bf16", "int8"])
@pytest.mark.parametrize("padded", [False, True], ids=["no padding", "padded sources"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_a_translators_step_costs_at_most_45_operations_per_layer(norm_first: bool, padded: bool, precision: str):
    src = torch.randint(4, 120, (8, 12), generator=torch.Generator().manual_seed(1))  # (B, S)
    if padded:
        src[:4, 8:] = 0  # <pad>
    steps = {}
    for layers in (LAYERS, LAYERS + 2):
        model = in_precision(_no_early_stop(translator(norm_first, n_decoder_layers=layers)), precision)
        steps[layers] = [step_ops(model, src, tokens) for tokens in (10, 20)]  # a step costs the same early and late
    _check(steps, int8_products(model, precision))


def int8_products(model: torch.nn.Module, precision: str) -> int:
    """The int8 products of one layer of ``model`` (its ``Int8Linear`` layers), 0 in another precision."""
    if precision != "int8":
        return 0
    layer = model.decoder.layers[0] if hasattr(model, "decoder") else model.layers[0]
    linears = [m for m in layer.modules() if type(m).__name__ == "Int8Linear"]
    return len(linears) - (2 if hasattr(layer, "cross_attn") else 0) - 2  # W^Q, W^K, W^V: one product (cross: W^Q)


def _check(steps: dict, products: int = 0) -> None:
    """Per layer and outside the layers, from the steps of the two models (total per layer, ops by name);
    ``products``: the int8 products of a layer, each allowed its row scales (the output layer's outside)."""
    for (small, small_step), (large, large_step) in zip(steps[LAYERS], steps[LAYERS + 2], strict=True):
        per_layer = (large * (LAYERS + 2) - small * LAYERS) / 2
        outside = small * LAYERS - per_layer * LAYERS
        target, beyond = TARGET + ROW_SCALES * products, OUTSIDE + ROW_SCALES * bool(products)
        assert per_layer <= target, f"{per_layer} operations per layer per token: {large_step - small_step}"
        assert outside <= beyond, f"{outside} operations per step outside the layers: {small_step}"


def _prompt() -> torch.Tensor:
    return torch.randint(4, 150, (4, 5), generator=torch.Generator().manual_seed(1))  # (B, T)


def _lm_step_ops(model: torch.nn.Module, tokens: int) -> tuple[float, Counter]:
    generate(model, _prompt(), 1, path=ENGINE)  # the plan is made once, before counting
    counts = []
    for n in (tokens, tokens + 1):
        with CountOps() as counter:
            out = generate(model, _prompt(), n, path=ENGINE)
        assert out.shape[1] == 5 + n, "no early stop: every row generates every token"
        counts.append(counter.ops)
    return (counts[1].total() - counts[0].total()) / model.config.n_layers, counts[1] - counts[0]


def _language_model(family: str, precision: str, layers: int = LAYERS) -> torch.nn.Module:
    model = language_model(family, n_layers=layers)
    with torch.no_grad():  # <eos> gets the logit 0, below the largest of the others: never chosen
        model.output.weight[model.config.eos_id] = 0.0
    return in_precision(model, precision)


@pytest.mark.parametrize("precision", ["float32", "bf16", "int8"])
@pytest.mark.parametrize("family", ["2017", "modern", "grouped", "gpt-2", "untied"])
def test_a_language_models_step_costs_at_most_45_operations_per_layer(family: str, precision: str) -> None:
    steps = {}
    for layers in (LAYERS, LAYERS + 2):
        model = _language_model(family, precision, layers)
        steps[layers] = [_lm_step_ops(model, tokens) for tokens in (10, 20)]
        assert not any(COPIES & set(step) for _, step in steps[layers]), f"a step copies: {steps[layers]}"
    _check(steps, int8_products(model, precision))


class Shapes(TorchDispatchMode):
    """The shape of every tensor each ATen operation returns."""

    def __init__(self) -> None:
        super().__init__()
        self.made: list[tuple[str, tuple]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - PyTorch's signature
        out = func(*args, **(kwargs or {}))
        for x in out if isinstance(out, tuple | list) else (out,):
            if isinstance(x, torch.Tensor):
                self.made.append((func.overloadpacket.__name__, tuple(x.shape)))
        return out


def test_no_step_copies_the_grouped_keys_and_values_to_every_query_head() -> None:
    model = _language_model("grouped", "float32")  # 4 query heads, 2 key/value heads
    d_k, prompt = model.config.d_model // model.config.n_heads, _prompt()
    with Shapes() as shapes:
        generate(model, prompt, 12, path=ENGINE)
    repeated = {(4, 4, length, d_k) for length in range(6, 18)}  # (B, H, L, Dk) at the steps' lengths L
    assert not [made for made in shapes.made if made[1] in repeated]
    assert [made for made in shapes.made if made[1] == (4, 4, 5, d_k)], "the prompt's pass repeats them: seen"
