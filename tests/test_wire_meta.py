"""A tensor on the meta device (ex06_1 asks for one) crosses the result channel as a description,
so that PyTorch 2.3's torch.load(weights_only=True), which refuses a dtype object, reads it."""

from __future__ import annotations

import pytest
import torch

from transformer_course_tools.exercises.probe.wire import MalformedResult, frame, plain, read_payload


def _payload(output) -> dict:
    call = {"output": plain(output), "requires_grad": None, "error": None, "changed": [], "grad": None}
    return {"cases": [{"calls": [call], "report": {}}], "fatal": None, "package_error": None, "guard": None}


def test_a_meta_tensor_arrives_with_its_shape_and_dtype_and_no_dtype_object_on_the_wire() -> None:
    data = frame(_payload(torch.ones(3, 4, dtype=torch.bool, device="meta")))
    assert b"torch\nbool" not in data and b"_rebuild_meta_tensor" not in data
    output = read_payload(data, 1)["cases"][0]["calls"][0]["output"]
    assert (output.device.type, output.dtype, tuple(output.shape)) == ("meta", torch.bool, (3, 4))


@pytest.mark.parametrize(
    "forged", [("__meta__", [2, -1], "bool"), ("__meta__", [2], "complex64"), ("__meta__", "2", "bool")]
)
def test_a_forged_meta_description_is_malformed(forged) -> None:
    with pytest.raises(MalformedResult, match="meta tensor"):
        read_payload(frame(_payload(forged)), 1)
