"""The result channel between a grading child and the grader: plain data, checked on arrival.

The child turns whatever the learner's code returned into plain data (:func:`plain`): ``None``,
``bool``, ``int``, ``float``, ``str``, a plain ``torch.Tensor`` (detached, on the CPU, its own
copy), and lists, tuples and dicts of those (any mapping travels as a dict: an ``OrderedDict``, a
``state_dict()``, is the dict it holds). Anything else travels as its type's name only
(:class:`Opaque`), so a judge can say "should return a list, got AlwaysEqualList" without the
object itself ever reaching the grader.

The child writes one frame, ``MAGIC + 8-byte length + torch.save(payload)``, to a descriptor it
kept from before any learner code ran (:func:`frame`). The grader reads it back with
``torch.load(weights_only=True)`` (no class of the child's choosing is ever built) and
:func:`read_payload` checks the structure and every value: types, sizes, dtypes. A frame that
fails is a *malformed result*, which costs the exercise it came from and nothing else.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping
from typing import Any

import torch

MAGIC = b"TRANSFORMER-COURSE-RESULT-1\n"
MAX_RESULT_BYTES = 16 * 2**20  # what one job may send back (the largest case needs well under 1 MiB)
MAX_TEXT = 4000  # characters of one string (messages are cut to this in the child already)
MAX_DEPTH = 10  # nesting of lists, tuples and dicts
MAX_ELEMENTS = 2**22  # tensor elements and container items over a whole result
DTYPES = frozenset({
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
})  # fmt: skip
ERROR_FIELDS = frozenset({"type", "message", "stub", "where", "at", "inputs"})  # a call's error (see probe.calls)
_OPAQUE = "__opaque__"  # ("__opaque__", type name): an object that is not plain data
_META = "__meta__"  # ("__meta__", shape, dtype name): a tensor on the meta device (no values). Not the
# tensor itself: torch.save writes a meta tensor's dtype as an object, which torch.load(weights_only=True)
# refuses before PyTorch 2.4
DTYPE_NAMES = {str(dtype).removeprefix("torch."): dtype for dtype in DTYPES}


class MalformedResult(ValueError):
    """What came back is not a result the grader can judge (forged, cut, or not plain data)."""


class Opaque:
    """An object the learner's code returned that is not plain data: only its type's name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name} object>"


def kind(value: Any) -> str:
    """The type's name a message shows (an :class:`Opaque` value's own type name)."""
    return value.name if isinstance(value, Opaque) else type(value).__name__


def cut(text: str, limit: int = MAX_TEXT) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 16] + " … (cut)"


# -- in the child ---------------------------------------------------------------------------------


def opaque(name: str) -> tuple[str, str]:
    """How an object that is not plain data travels: its description only."""
    return (_OPAQUE, cut(name, 300))


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as plain data (see the module's docstring); never raises."""
    try:
        return _plain(value, depth)
    except Exception as error:  # noqa: BLE001 - a learner's object whose methods misbehave
        return opaque(f"{type(value).__name__} (unreadable: {type(error).__name__})")


def _plain(value: Any, depth: int) -> Any:
    if value is None or type(value) in (bool, int, float):
        return value
    if type(value) is str:
        return cut(value)
    if isinstance(value, torch.Tensor):
        return _plain_tensor(value)
    if depth < MAX_DEPTH and type(value) in (list, tuple):
        return type(value)(plain(item, depth + 1) for item in value)
    if depth < MAX_DEPTH and isinstance(value, Mapping):  # OrderedDict, defaultdict, …: the pairs they hold
        return {cut(str(key), 200): plain(item, depth + 1) for key, item in value.items()}
    return opaque(type(value).__name__)


def _plain_tensor(value: torch.Tensor) -> Any:
    with torch._C.DisableTorchFunctionSubclass():  # a subclass's own methods are not asked
        tensor = value.detach()
        if type(tensor) is not torch.Tensor:
            tensor = tensor.as_subclass(torch.Tensor)
        if tensor.dtype not in DTYPES or tensor.layout != torch.strided:
            return opaque(f"Tensor ({tensor.dtype}, {tensor.layout})")
        if tensor.device.type == "meta":
            return (_META, list(tensor.shape), str(tensor.dtype).removeprefix("torch."))
        return tensor.cpu().clone()  # its own storage: a view would carry the whole base tensor


def frame(payload: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    return MAGIC + struct.pack(">Q", len(data)) + data


# -- in the grader ------------------------------------------------------------------------------


def read_payload(data: bytes, n_cases: int) -> dict:
    """The child's payload from the bytes of its result channel, checked; or MalformedResult."""
    header = len(MAGIC) + 8
    if not data.startswith(MAGIC) or len(data) < header:
        raise MalformedResult(f"the result channel held {len(data)} bytes that are not a result")
    (length,) = struct.unpack(">Q", data[len(MAGIC) : header])
    if length != len(data) - header or length > MAX_RESULT_BYTES:
        raise MalformedResult("the result's length does not match what arrived (something else wrote to the channel)")
    try:
        payload = torch.load(io.BytesIO(data[header:]), weights_only=True)
    except Exception as error:  # noqa: BLE001 - any failure to read is a malformed result
        raise MalformedResult(f"the result could not be read ({type(error).__name__})") from None
    _expect(isinstance(payload, dict) and set(payload) == {"cases", "fatal", "package_error", "guard"},
            "the result's fields")  # fmt: skip
    _expect(isinstance(payload["cases"], list) and len(payload["cases"]) <= n_cases, "the number of cases")
    _expect(payload["guard"] is None or type(payload["guard"]) is dict, "the guard's report")
    budget = [MAX_ELEMENTS]
    return {
        "cases": [checked_case(case, budget) for case in payload["cases"]],
        "fatal": _checked_text(payload["fatal"], "the fatal error"),
        "package_error": _checked_text(payload["package_error"], "the package's import error"),
        "guard": _checked(payload["guard"], 0, budget),
    }


def checked_case(case: Any, budget: list[int] | None = None) -> dict:
    """One case's result, checked value by value and against the probe's structure (locally too:
    the same rules everywhere)."""
    case = _checked(case, 0, [MAX_ELEMENTS] if budget is None else budget)
    _expect(isinstance(case, dict) and set(case) == {"calls", "report"}, "a case's fields")
    _expect(isinstance(case["calls"], list) and isinstance(case["report"], dict), "a case's calls and report")
    for call in case["calls"]:
        _expect(isinstance(call, dict) and set(call) == {"output", "requires_grad", "error", "changed", "grad"},
                "a call's fields")  # fmt: skip
        _expect(call["requires_grad"] in (None, True, False), "a call's requires_grad")
        _expect(isinstance(call["changed"], list) and all(type(i) is int for i in call["changed"]), "a call's changes")
        error = call["error"]
        _expect(error is None or (isinstance(error, dict) and set(error) == ERROR_FIELDS
                                  and all(isinstance(error[k], str) for k in ("type", "message", "where", "at"))
                                  and isinstance(error["stub"], bool) and isinstance(error["inputs"], list)
                                  and all(isinstance(text, str) for text in error["inputs"])),
                "a call's error")  # fmt: skip
    return case


def _checked_text(value: Any, what: str) -> str | None:
    _expect(value is None or (type(value) is str and len(value) <= MAX_TEXT), what)
    return value


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise MalformedResult(f"unexpected structure: {what}")


def _checked(value: Any, depth: int, budget: list[int]) -> Any:
    """``value`` with every part checked (and opaque markers decoded), or MalformedResult."""
    if depth > MAX_DEPTH:
        raise MalformedResult("the result is nested too deeply")
    if value is None or type(value) in (bool, int, float):
        return value
    if type(value) is str:
        if len(value) > MAX_TEXT:
            raise MalformedResult(f"a string of {len(value)} characters (at most {MAX_TEXT})")
        return value
    if type(value) is torch.Tensor:
        return _checked_tensor(value, budget)
    if type(value) in (list, tuple, dict):
        budget[0] -= len(value)
        if budget[0] < 0:
            raise MalformedResult("the result holds too many items")
    if type(value) is tuple and len(value) == 2 and value[0] == _OPAQUE and type(value[1]) is str:
        return Opaque(_checked(value[1], depth + 1, budget))
    if type(value) is tuple and len(value) == 3 and value[0] == _META:
        return _meta_tensor(value[1], value[2])
    if type(value) in (list, tuple):
        return type(value)(_checked(item, depth + 1, budget) for item in value)
    if type(value) is dict and all(type(key) is str for key in value):
        return {_checked(key, depth + 1, budget): _checked(item, depth + 1, budget) for key, item in value.items()}
    raise MalformedResult(f"a value of type {type(value).__name__} is not plain data")


def _meta_tensor(shape: Any, dtype: Any) -> torch.Tensor:
    """A meta tensor rebuilt from its description (it holds no values: nothing to count)."""
    _expect(type(shape) is list and len(shape) <= 8 and all(type(n) is int and 0 <= n < 2**40 for n in shape)
            and dtype in DTYPE_NAMES, "a meta tensor's shape and dtype")  # fmt: skip
    return torch.empty(shape, dtype=DTYPE_NAMES[dtype], device="meta")


def _checked_tensor(value: torch.Tensor, budget: list[int]) -> torch.Tensor:
    if value.dtype not in DTYPES or value.layout != torch.strided or value.device.type not in ("cpu", "meta"):
        raise MalformedResult(f"a tensor of dtype {value.dtype}, layout {value.layout} on {value.device}")
    if value.dim() > 8:
        raise MalformedResult(f"a tensor with {value.dim()} dimensions")
    budget[0] -= value.numel()
    if budget[0] < 0:
        raise MalformedResult("the result's tensors are too large")
    return value.detach()
