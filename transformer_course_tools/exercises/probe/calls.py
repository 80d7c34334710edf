"""A case as plain data, and the probe that runs it on the learner's code.

The course writes each case with the builders below; what they return is plain data (dicts,
lists, tensors), so that it can travel to a grading child through ``torch.save``. The child (or,
locally, the same process) runs it with :func:`run_case` and gets plain data back.

A case::

    {"probe": "calls",
     "objects": {name: value, ...},   # built first, in order, with the learner's classes
     "calls": [call, ...],            # the learner's function called on them, in order
     "report": {key: path, ...},      # read after the calls, e.g. ("cache", "self_attn", len)
     "no_grad": bool}

or ``{"probe": <name of a custom probe in PROBES>, "inputs": {...}}``. A *value* is plain data
or one of ``new(...)``, ``module(...)``, ``leaf(...)``, ``fixture(...)``, ``ref(...)``; a *call*
is ``call(*args, **kwargs)``, optionally ``| train(flag)`` or ``| grad_of_sum(path)``.

Each call gives back ``{"output", "requires_grad", "error", "changed", "grad"}``: the return
value as plain data, whether it required grad, the exception it raised (type, message, and
whether it is a stub's NotImplementedError, the line of the learner's code it came from, and the
tensor and list arguments the call was given), which positional arguments (tensors or lists) it
changed in place, and the gradient asked for. A case stops at its first error.
"""

from __future__ import annotations

import contextlib
import inspect
import linecache
import os
import traceback
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from .isolation import resolve
from .wire import cut, opaque, plain

TAG = "$"  # the key that marks a value to build (a plain dict argument has none)


# -- builders (the course's side) ------------------------------------------------------------------


def new(cls: str, *args: Any, **kwargs: Any) -> dict:
    """``cls(*args, **kwargs)``, with ``cls`` a ``module:qualname`` path (a learner's class or torch's)."""
    return {TAG: "new", "cls": cls, "args": list(args), "kwargs": kwargs, "state": None, "training": None, "set": {}}


def module(instance: nn.Module, *args: Any, **kwargs: Any) -> dict:
    """A module like ``instance``: its class built with these constructor arguments, then given
    ``instance``'s state (parameters and buffers) and training flag. ``spec | {"set": {name: value}}``
    then replaces attributes (a sub-module, say)."""
    cls = type(instance)
    spec = new(f"{cls.__module__}:{cls.__qualname__}", *args, **kwargs)
    state = {name: value.detach().clone() for name, value in instance.state_dict().items()}
    return spec | {"state": state, "training": instance.training}


def leaf(tensor: Tensor) -> dict:
    """A copy of ``tensor`` that requires grad (so that a gradient can be asked for)."""
    return {TAG: "leaf", "value": tensor.detach().clone()}


def fixture(name: str, **kwargs: Any) -> dict:
    """One of the named builders in :data:`FIXTURES`."""
    return {TAG: "fixture", "name": name, "kwargs": kwargs}


def ref(name: str) -> dict:
    """The case's object ``name``."""
    return {TAG: "ref", "name": name}


def call(*args: Any, **kwargs: Any) -> dict:
    """One call of the learner's function."""
    return {"args": list(args), "kwargs": kwargs, "train": None, "grad": None}


def train(flag: bool) -> dict:
    """Option of a call: switch its first argument (a module) to training mode (or not) first."""
    return {"train": flag}


def grad_of_sum(*path: Any) -> dict:
    """Option of a call: the gradient of ``output.sum()`` with respect to the tensor at ``path``."""
    return {"grad": list(path)}


def calls_case(*calls: dict, objects: dict | None = None, report: dict | None = None, no_grad: bool = False) -> dict:
    return {"probe": "calls", "objects": objects or {}, "calls": list(calls), "report": report or {},
            "no_grad": no_grad}  # fmt: skip


def custom_case(probe: str, **inputs: Any) -> dict:
    return {"probe": probe, "inputs": inputs}


# -- the probe (where the learner's code runs) -----------------------------------------------------


def run_case(impl: Callable, spec: dict) -> dict:
    """Run one case on ``impl`` and return plain data (see the module's docstring); an exception
    of the learner's code is that case's error, never the end of the exercise."""
    if spec["probe"] != "calls":
        try:
            return PROBES[spec["probe"]](impl, **spec["inputs"])
        except Exception as error:  # noqa: BLE001 - the learner's classes build a custom probe's inputs
            return {"calls": [_failed(error, "building the inputs", impl)], "report": {}}
    result: dict = {"calls": [], "report": {}}
    with torch.no_grad() if spec["no_grad"] else contextlib.nullcontext():
        try:
            objects: dict = {}
            for name, value in spec["objects"].items():
                objects[name] = build(value, objects)
        except Exception as error:  # noqa: BLE001 - the learner's classes build the inputs
            result["calls"].append(_failed(error, "building the inputs", impl))
            return result
        for one in spec["calls"]:
            result["calls"].append(_run_call(impl, one, objects))
            if result["calls"][-1]["error"]:
                return result
        result["report"] = {key: _read(objects, path) for key, path in spec["report"].items()}
    return result


def build(value: Any, objects: dict, copies: dict | None = None) -> Any:
    """The object a value describes. Tensors are copied, so the learner never holds the course's;
    a tensor given twice (self-attention's query, key and value) is one copy given twice."""
    copies = {} if copies is None else copies
    if isinstance(value, Tensor):
        return copies.setdefault(id(value), value.clone())
    if isinstance(value, list | tuple):
        return type(value)(build(item, objects, copies) for item in value)
    if not isinstance(value, dict):
        return value
    kind = value.get(TAG)
    if kind is None:
        return {key: build(item, objects, copies) for key, item in value.items()}
    if kind == "ref":
        return objects[value["name"]]
    if kind == "leaf":
        return value["value"].clone().requires_grad_()
    if kind == "fixture":
        return FIXTURES[value["name"]](**build(value["kwargs"], objects, copies))
    made = resolve(value["cls"])(*build(value["args"], objects, copies), **build(value["kwargs"], objects, copies))
    if value["state"] is not None:
        made.load_state_dict(value["state"], strict=True)
    if value["training"] is not None:
        made.train(value["training"])
    for name, item in value["set"].items():  # e.g. a module's dropout replaced by Halve()
        setattr(made, name, build(item, objects, copies))
    return made


def invoke(impl: Callable, args: list, kwargs: dict, originals: list, grad: Tensor | None = None) -> dict:
    """Call ``impl``; report the output, the error, and which arguments changed (compared with
    ``originals``, the course's copies of the positional arguments)."""
    record = {"output": None, "requires_grad": None, "error": None, "changed": [], "grad": None}
    inputs = _inputs(impl, args, kwargs)  # before the call, which may change them
    try:
        output = impl(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - the learner's bug, reported with its case
        failed = _failed(error, "calling the function", impl)
        failed["error"]["inputs"] = inputs
        return record | failed
    record["changed"] = [i for i, (old, new) in enumerate(zip(originals, args, strict=False)) if _changed(old, new)]
    record["output"] = plain(output)
    if isinstance(output, Tensor):
        record["requires_grad"] = bool(output.requires_grad)
        if grad is not None and output.requires_grad:
            record["grad"] = _gradient(output, grad)
    return record


def _gradient(output: Tensor, wrt: Tensor) -> Any:
    try:
        (gradient,) = torch.autograd.grad(output.sum(), wrt, allow_unused=True)
    except Exception as error:  # noqa: BLE001 - e.g. a graph the learner's code already freed
        return opaque(f"no gradient ({type(error).__name__})")
    return None if gradient is None else plain(gradient)


def _run_call(impl: Callable, one: dict, objects: dict) -> dict:
    try:
        copies: dict = {}
        args, kwargs = build(one["args"], objects, copies), build(one["kwargs"], objects, copies)
        if one["train"] is not None:
            args[0].train(one["train"])
        target = None if one["grad"] is None else _read_path(objects, one["grad"])
    except Exception as error:  # noqa: BLE001
        return _failed(error, "building the inputs", impl)
    return invoke(impl, args, kwargs, one["args"], target)


def _changed(old: Any, new: Any) -> bool:
    try:
        if isinstance(old, Tensor):
            return not (isinstance(new, Tensor) and new.shape == old.shape and torch.equal(new.detach(), old))
        return isinstance(old, list) and list(new) != old
    except Exception:  # noqa: BLE001 - an argument the learner's code turned into something odd
        return True


def _failed(error: BaseException, where: str, impl: Callable | None = None) -> dict:
    try:
        message = str(error)
    except Exception:  # noqa: BLE001 - an exception whose __str__ fails
        message = "(its message could not be read)"
    error_record = {"type": type(error).__name__, "message": cut(message, 2000),
                    "stub": isinstance(error, NotImplementedError), "where": where,
                    "at": cut(_learner_line(error, impl), 300), "inputs": []}  # fmt: skip
    return {"output": None, "requires_grad": None, "error": error_record, "changed": [], "grad": None}


def _learner_line(error: BaseException, impl: Callable | None) -> str:
    """Where in the learner's code ``error`` came from: the innermost frame of their package (not
    its tools), of a notebook cell, or of the function the check was given, with its source line:
    "at vocab.py:57 (ids = [...])", or "in your function my_attention, line 4" for code with no file.
    Empty when no frame is the learner's."""
    inner = inspect.unwrap(impl) if impl is not None else None  # the learner's function under the isolation
    code = getattr(inner, "__code__", None)
    package = (getattr(inner, "__module__", None) or "").partition(".")[0]
    found: list = []  # (code, line) of the learner's frames, outermost first
    try:
        for frame, line in traceback.walk_tb(error.__traceback__):
            module = frame.f_globals.get("__name__") or ""
            room = package not in ("", "__main__") and module.partition(".")[0] == package
            if frame.f_code is code or module == "__main__" or (room and not module.startswith(f"{package}.tools")):
                found.append((frame.f_code, line))
    except Exception:  # noqa: BLE001 - a traceback the learner's code made odd: no line then
        return ""
    if not found:
        return ""
    frame_code, line = found[-1]
    filename = frame_code.co_filename
    source = linecache.getline(filename, line).strip()
    source = f" ({cut(source, 120)})" if source else ""
    if os.path.isfile(filename) and "ipykernel_" not in filename:
        return f"at {os.path.basename(filename)}:{line}{source}"
    named = [c.co_name for c, _ in found if c.co_filename == filename and not c.co_name.startswith("<")]
    name = named[-1] if named else frame_code.co_name  # a list comprehension's or a lambda's: its function's
    return f"in your function {name}, line {line}{source}"  # a notebook cell, exec'd code


def _inputs(impl: Callable, args: list, kwargs: dict) -> list[str]:
    """The call's tensor and list arguments as a message names them: "q (2, 3, 4) float32", "tokens list of 5"."""
    try:
        named = inspect.signature(impl).bind(*args, **kwargs).arguments
    except Exception:  # noqa: BLE001 - no signature, or arguments it does not take (its error says so)
        return []
    described = []
    for name, value in named.items():
        if isinstance(value, Tensor):
            described.append(f"{name} {tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}")
        elif type(value) in (list, tuple):
            described.append(f"{name} {type(value).__name__} of {len(value)}")
    return [cut(text, 200) for text in described[:8]]


def _read_path(objects: dict, path: list) -> Any:
    value = objects[path[0]]
    for attribute in path[1:]:
        value = len(value) if attribute == "len" else getattr(value, attribute)
    return value


def _read(objects: dict, path: list) -> Any:
    try:
        return plain(_read_path(objects, path))
    except Exception as error:  # noqa: BLE001 - e.g. the learner's cache has no len()
        return opaque(f"unreadable: {type(error).__name__}: {cut(str(error), 200)}")


# -- named fixtures: objects a description by class and state cannot make --------------------------


class Halve(nn.Dropout):
    """A deterministic stand-in for dropout: it halves its input, so a check can see *where*
    dropout is applied (a real dropout would be random, an evaluation-mode one invisible)."""

    def __init__(self) -> None:
        super().__init__(p=0.0)

    def forward(self, x: Tensor) -> Tensor:
        return 0.5 * x


def positional_encoding(package: str, table: Tensor, dropout: float = 0.0, training: bool = False) -> nn.Module:
    """A learner's PositionalEncoding holding ``table``, built without calling its __init__ (so that
    the exercise on its forward does not depend on the one that writes the sinusoidal table)."""
    cls = resolve(f"{package}.positional:PositionalEncoding")
    made = cls.__new__(cls)
    nn.Module.__init__(made)
    made.max_len, made.d_model = table.shape
    made.dropout = nn.Dropout(dropout)
    made.register_buffer("pe", table, persistent=False)
    return made.train(training)


class TanhOf:
    """A non-linear sub-layer, so that the order of the steps around it matters; ``calls`` counts how
    often it ran (a residual block runs its sub-layer once)."""

    def __init__(self, linear: nn.Linear) -> None:
        self.linear, self.calls = linear, 0

    def __call__(self, h: Tensor) -> Tensor:
        self.calls += 1
        return torch.tanh(self.linear(h))


def tanh_of(linear: nn.Linear) -> Callable[[Tensor], Tensor]:
    """:class:`TanhOf`: ``tanh(linear(h))``."""
    return TanhOf(linear)


def no_shortcut() -> Callable[..., Tensor]:
    """A layer's connection without the residual's shortcut (chapter 05's ablation): a layer that
    wraps its sub-layers with ``self.connection`` uses it, one that calls ``residual`` itself does not."""

    def connection(x: Tensor, sublayer: Callable, norm: nn.Module, dropout: nn.Module, norm_first: bool) -> Tensor:
        return dropout(sublayer(norm(x))) if norm_first else norm(dropout(sublayer(x)))

    return connection


class StandInModel(nn.Module):
    """A small model with the Transformer's interface: ``model(src, tgt_in) → logits (B, T, V)``."""

    def __init__(self, vocab: int = 9, d: int = 6) -> None:
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d)
        self.tgt_embed = nn.Embedding(vocab, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        context = self.src_embed(src).mean(1, keepdim=True)  # (B, 1, d)
        return self.out(torch.tanh(self.tgt_embed(tgt) + context))  # (B, T, V)


FIXTURES: dict[str, Callable[..., Any]] = {
    "halve": Halve,
    "no_shortcut": no_shortcut,
    "positional_encoding": positional_encoding,
    "tanh_of": tanh_of,
}


# -- custom probes -------------------------------------------------------------------------------

OPTIMIZERS = {"SGD": torch.optim.SGD, "Adam": torch.optim.Adam}


def inverse_step(step: int) -> float:
    """The scheduler's factor in the training-step cases: 1 / (step + 1)."""
    return 1.0 / (step + 1)


def training_run(state: dict, optimizer: str, options: dict, scheduler: bool):
    """A StandInModel with ``state``, its optimizer and (optionally) a LambdaLR scheduler."""
    model = StandInModel()
    model.load_state_dict(state)
    made = OPTIMIZERS[optimizer](model.parameters(), **options)
    return model, made, torch.optim.lr_scheduler.LambdaLR(made, inverse_step) if scheduler else None


def train_steps(impl: Callable, package: str, state: dict, optimizer: str, options: dict, scheduler: bool,
                smoothing: float, max_norm: float | None, batch: dict, steps: int, bf16: bool = False) -> dict:  # fmt: skip
    """ex08_4: ``steps`` training steps of the learner's train_step on a StandInModel left in
    evaluation mode (with ``bf16``: the learner's ``MixedPrecision`` for bfloat16 autocast on the
    CPU); then the model's mode, its parameters and the scheduler's step count."""
    model, made, schedule = training_run(state, optimizer, options, scheduler)
    model.eval()  # train_step must switch the model to training mode itself
    data = resolve(f"{package}.batching:Batch")(batch["src"], batch["tgt_in"], batch["tgt_out"], batch["pad_id"])
    args = [model, data, made, schedule, smoothing, max_norm]
    if bf16:
        mixed = resolve(f"{package}.step:MixedPrecision")
        args.append(mixed(torch.bfloat16, torch.amp.GradScaler("cpu", enabled=False)))
    result: dict = {"calls": [], "report": {}}
    for _ in range(steps):
        result["calls"].append(invoke(impl, args, {}, []))
        if result["calls"][-1]["error"]:
            return result
    result["report"] = {
        "training": model.training,
        "parameters": {name: plain(p) for name, p in model.named_parameters()},
        "scheduler_steps": None if schedule is None else schedule.last_epoch,
    }
    return result


class DecayProbeModel(nn.Module):
    """A small model with every kind of parameter AdamW's groups tell apart: an embedding and weight
    matrices (decayed), biases and a norm's gain (not decayed), and a frozen matrix (no gradient)."""

    def __init__(self, vocab: int = 7, d: int = 4, layers: int = 1) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.frozen = nn.Linear(d, d, bias=False).requires_grad_(False)


def adamw_groups(impl: Callable, options: dict, layers: int) -> dict:
    """ex14_2: the learner's ``make_adamw`` on a :class:`DecayProbeModel`, then what the optimizer
    holds: its class, and each group's parameters (by name), weight decay, rate and betas."""
    torch.manual_seed(0)
    model = DecayProbeModel(layers=layers)
    made: list = []

    def keep(*args: Any, **kwargs: Any) -> Any:  # the learner's function, its result kept for the report
        made.append(impl(*args, **kwargs))
        return made[-1]

    record = invoke(keep, [model], dict(options), [])
    if record["error"]:
        return {"calls": [record], "report": {}}
    optimizer, names = made[0], {id(p): name for name, p in model.named_parameters()}
    adamw = isinstance(optimizer, torch.optim.AdamW)
    report: dict = {"class": f"{type(optimizer).__module__}.{type(optimizer).__qualname__}", "groups": None,
                    "adamw": adamw, "adam": isinstance(optimizer, torch.optim.Adam) and not adamw,
                    "shapes": {name: list(p.shape) for name, p in model.named_parameters()},
                    "trainable": [name for name, p in model.named_parameters() if p.requires_grad]}  # fmt: skip
    if isinstance(optimizer, torch.optim.Optimizer):
        report["groups"] = [
            {"names": [names.get(id(p), "a tensor not of the model") for p in group["params"]],
             "weight_decay": float(group.get("weight_decay", 0.0)), "lr": float(group["lr"]),
             "betas": [float(b) for b in group.get("betas", ())]}
            for group in optimizer.param_groups
        ]  # fmt: skip
    return {"calls": [record], "report": report}


PROBES: dict[str, Callable[..., dict]] = {"train_steps": train_steps, "adamw_groups": adamw_groups}
