"""Run one exercise's code with every *other* exercise replaced by its stand-in.

Two ways the code under test reaches another exercise, and how each is redirected, without
changing anything in the learner's rooms (the learner's modules and classes stay as they are):

* by a global name (``scaled_dot_product_attention`` calls ``attention_scores``): the function is
  run as a copy whose globals map those names to the stand-ins (:func:`isolated_function`);
* through a module it is given (an encoder layer calls ``self.self_attn(...)``): each learner
  module passed to the check gets, on the instance only, the stand-in ``forward`` of another
  exercise, isolated copies of its other methods, and the stand-in of any other exercise's
  function it holds as an attribute (a layer's ``self.connection``) (:func:`use_standins`).

It is told which function each exercise is (``targets``: exercise id → ``module:qualname``) and
which stand-ins it may use: locally every exercise's (registered beside its check); in a grading
job only those the exercise under test needs, never its own.
"""

from __future__ import annotations

import importlib
import inspect
import types
from collections.abc import Callable, Mapping
from typing import Any

from torch import nn

_MARK = "_course_standins_for"  # set on a module once it has been prepared for an exercise


def resolve(target: str) -> Any:
    """The object ``module:qualname`` names, importing the module (a function, a method, a class)."""
    module, qualname = target.split(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _is_room_name(module: str | None, package: str) -> bool:
    """``module`` is one of the learner's rooms (not one of the course's tools)."""
    module = module or ""
    return (module == package or module.startswith(package + ".")) and not module.startswith(f"{package}.tools")


def _is_room_function(value: Any, package: str) -> bool:
    """A plain function defined in one of the learner's rooms."""
    return isinstance(value, types.FunctionType) and _is_room_name(getattr(value, "__module__", None), package)


def _found(targets: Mapping[str, str]) -> dict[int, str]:
    """id of each exercise's function now in the rooms, and id of its code → its exercise id, for
    every exercise whose room imports. The code matters after IPython's autoreload reloads a room:
    the module then holds new function objects while other rooms keep the old ones, updated in
    place to run the same new code."""
    found: dict[int, str] = {}
    for exercise_id, target in targets.items():
        try:
            function = resolve(target)
        except Exception:  # noqa: BLE001 - a room that does not import (being written): nothing to redirect
            continue
        found[id(function)] = exercise_id
        found.setdefault(id(getattr(function, "__code__", function)), exercise_id)
    return found


class Isolation:
    """The redirections for checking ``exercise_id``: built once per check."""

    def __init__(self, exercise_id: str, targets: Mapping[str, str], standins: Mapping[str, Callable]) -> None:
        self.exercise_id = exercise_id
        self.package = targets[exercise_id].split(".")[0]
        self.targets = _found(targets)
        self.standins = {i: fn for i, fn in standins.items() if i != exercise_id}
        self._copies: dict[int, Callable] = {}

    def owner(self, value: Any) -> str | None:
        """The exercise whose function ``value`` is (the object itself, or one running its code)."""
        return self.targets.get(id(value)) or self.targets.get(id(getattr(value, "__code__", value)))

    def standin_for(self, value: Any) -> Callable | None:
        """The stand-in replacing ``value``, if ``value`` is another exercise's function."""
        owner = self.owner(value)
        return self.standins.get(owner) if owner is not None and owner != self.exercise_id else None

    def isolated_function(self, fn: Callable) -> Callable:
        """A copy of ``fn`` whose global names for other exercises point to their stand-ins;
        room functions it calls by name are copied the same way."""
        if not isinstance(fn, types.FunctionType):
            return fn
        if id(fn) in self._copies:
            return self._copies[id(fn)]
        namespace = dict(fn.__globals__)
        copy = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
        copy.__kwdefaults__, copy.__qualname__, copy.__module__ = fn.__kwdefaults__, fn.__qualname__, fn.__module__
        copy.__dict__.update(fn.__dict__)
        self._copies[id(fn)] = copy  # before recursing: a function may call itself
        for name, value in fn.__globals__.items():
            standin = self.standin_for(value)
            if standin is not None:
                namespace[name] = standin
            elif _is_room_function(value, self.package) and value is not fn:
                namespace[name] = self.isolated_function(value)
        return copy

    def use_standins(self, module: nn.Module) -> None:
        """Prepare a learner module (and its sub-modules) given to the code under test."""
        for sub in module.modules():
            if getattr(sub, _MARK, None) == self.exercise_id:
                continue
            for name, value in _room_methods(type(sub), self.package):
                if name in vars(sub):
                    continue  # set on the instance by the check (a position part as `positioned`): kept
                if self.owner(value) == self.exercise_id:
                    continue  # the exercise under test: the check calls it itself
                standin = self.standin_for(value)
                if standin is None and not _is_room_function(value, self.package):
                    continue  # a function the course did not write into a room: left as it is
                bound = standin if standin is not None else self.isolated_function(value)
                setattr(sub, name, types.MethodType(bound, sub))
            for name, value in list(vars(sub).items()):  # functions the module holds (a layer's connection)
                standin = self.standin_for(value)
                if standin is not None:
                    setattr(sub, name, standin)
            setattr(sub, _MARK, self.exercise_id)

    def wrap(self, impl: Callable) -> Callable:
        """``impl`` as the check calls it: isolated, and preparing every module it is given."""
        function = self.isolated_function(impl)

        def call(*args: Any, **kwargs: Any) -> Any:
            for arg in (*args, *kwargs.values()):
                if isinstance(arg, nn.Module):
                    self.use_standins(arg)
            return function(*args, **kwargs)

        call.__wrapped__ = impl  # its signature, and the code an error's traceback is searched for
        return call


def _room_methods(cls: type, package: str) -> list[tuple[str, types.FunctionType]]:
    """The plain methods of a learner's class: those of every class in its MRO defined in a room."""
    methods: dict[str, types.FunctionType] = {}
    for klass in reversed(inspect.getmro(cls)):
        if not _is_room_name(klass.__module__, package):
            continue
        for name, value in vars(klass).items():
            if isinstance(value, types.FunctionType) and not (name.startswith("__") and name.endswith("__")):
                methods[name] = value
    return sorted(methods.items())
