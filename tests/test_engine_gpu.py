"""The engine on a CUDA GPU (`make test-gpu`; skipped without one): the same tokens as the modules in
float32, bfloat16 and int8, and int8 weights read as they are (no float copy of a matrix per call)."""

from __future__ import annotations

import pytest
import torch

from tests.test_engine import in_precision, language_model, translator
from transformer_course import beam_search, greedy_decode
from transformer_course.lm import generate
from transformer_course_tools.engine import ENGINE

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (make test-gpu)")


@pytest.mark.parametrize("precision", ["float32", "bf16", "int8"])
def test_a_translator_on_the_gpu_gives_the_same_tokens_on_both_paths(precision: str) -> None:
    model = in_precision(translator(True), precision).cuda()
    src = torch.randint(4, 120, (3, 9), generator=torch.Generator().manual_seed(2)).cuda()
    modules, engine = (greedy_decode(model, src, max_len=20, path=p) for p in ("modules", ENGINE))
    assert torch.equal(modules, engine)
    best = [beam_search(model, src, 3, 20, path=p)[0][:, 0] for p in ("modules", ENGINE)]
    assert torch.equal(*best)


@pytest.mark.parametrize("precision", ["float32", "bf16", "int8"])
@pytest.mark.parametrize("family", ["modern", "grouped", "gpt-2"])
def test_a_language_model_on_the_gpu_gives_the_same_tokens_on_both_paths(family: str, precision: str) -> None:
    model = in_precision(language_model(family), precision).cuda()
    prompt = torch.randint(4, 150, (2, 5), generator=torch.Generator().manual_seed(3)).cuda()
    modules, engine = (generate(model, prompt, 25, path=p) for p in ("modules", ENGINE))
    assert torch.equal(modules, engine)


def test_int8_weights_are_read_as_they_are_on_the_gpu() -> None:
    """No operation of an int8 decoding step makes a float copy of a weight matrix."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Made(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.largest = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            out = func(*args, **(kwargs or {}))
            if func.overloadpacket.__name__ in ("_to_copy", "mul") and isinstance(out, torch.Tensor):
                self.largest = max(self.largest, out.numel())
            return out

    model = in_precision(language_model("modern"), "int8").cuda()
    prompt = torch.randint(4, 150, (1, 5), generator=torch.Generator().manual_seed(3)).cuda()
    generate(model, prompt, 2, path=ENGINE)
    with Made() as made:
        generate(model, prompt, 8, path=ENGINE)
    smallest_matrix = min(p.numel() for p in model.parameters() if p.dim() == 2)
    assert made.largest < smallest_matrix, f"a float tensor of {made.largest} numbers was made per step"
