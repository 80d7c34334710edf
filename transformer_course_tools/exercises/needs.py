"""Which exercises a chapter runs, read from its code (nothing runs, nothing is typed by hand).

A chapter imports names of the course (``from transformer_course import Transformer``). From each,
the code of the rooms is followed name by name: a function reaches the names its body uses, a class
every method it has (an instance's methods are called where it goes), a method the methods of
``self`` it calls. Every exercise's function reached is one the chapter needs. The build (``make
exercises``) records the result in the course's lock; a chapter that stops at an unwritten exercise
names them all.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from transformer_course_tools.course import PACKAGE, TOOLS

Node = tuple[str, str]  # (module, qualname): "transformer_course.attention", "attention_scores"


class Package:
    """The definitions of the package's modules and the names each one's code uses."""

    def __init__(self, package_dir: Path) -> None:
        self.dir = package_dir
        self.trees: dict[str, ast.Module] = {}
        self.packages: set[str] = set()  # modules that are packages (an __init__.py)
        for path in sorted(package_dir.rglob("*.py")):
            module = ".".join((PACKAGE, *path.relative_to(package_dir).with_suffix("").parts)).removesuffix(".__init__")
            if path.name == "__init__.py":
                self.packages.add(module)
            try:
                self.trees[module] = ast.parse(path.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError):
                continue  # a room being written: what it reaches is unknown
        self.defs = {module: dict(_definitions(tree)) for module, tree in self.trees.items()}
        self.exports = _exports(self.trees.get(PACKAGE))
        self.bound = {module: self.imports(tree, module) for module, tree in self.trees.items()}

    def imports(self, tree: ast.Module | None, module: str) -> dict[str, tuple[str, str]]:
        """Name bound by an import anywhere in ``tree`` (the module ``module``'s, or a chapter's) → (module,
        name there; "" for a module imported whole), for the package's imports only."""
        found: dict[str, tuple[str, str]] = {}
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.ImportFrom):
                base = _absolute(node, module, module in self.packages)
                for alias in node.names if base and base.split(".")[0] == PACKAGE else ():
                    whole = f"{base}.{alias.name}"
                    known = whole in self.trees or whole in self.packages
                    found[alias.asname or alias.name] = (whole, "") if known else (base, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == PACKAGE and alias.asname:
                        found[alias.asname] = (alias.name, "")
        return found

    def reached(self, roots: Iterable[Node], attributes: Iterable[str] = ()) -> set[Node]:
        """Every function, method and instantiated class the ``roots`` reach.

        A class's method is reached once the class (or a subclass) is instantiated and the method is
        one that runs anyway (``__init__``, ``forward``, a dunder) or one whose name the reached code
        (or ``attributes``: the chapter's) uses on some object; a class named without being called
        or passed on (``isinstance``) reaches nothing (a rapid type analysis)."""
        walk = _Walk(self, set(attributes))
        for root in roots:
            walk.value(self.resolve(*root))
        return walk.run()

    def resolve(self, module: str, name: str) -> Node | None:
        """Where ``module``'s name ``name`` is defined (following imports and the package's exports)."""
        for _ in range(8):  # a chain of re-exports
            if name.split(".")[0] in self.defs.get(module, {}):
                return (module, name) if name in self.defs[module] else None
            if module == PACKAGE and name in self.exports:
                module = f"{PACKAGE}.{self.exports[name]}"
                continue
            imported = self.bound.get(module, {}).get(name.split(".")[0])
            if imported is None:
                return None
            module, name = imported[0], ".".join(filter(None, (imported[1], *name.split(".")[1:])))
            if not name:
                return None  # a module itself
        return None

    def methods(self, node: Node) -> Iterator[Node]:
        """The methods of class ``node`` and of the course's classes it derives from."""
        module, name = node
        yield from ((module, qualname) for qualname in self.defs[module] if qualname.startswith(f"{name}."))
        for base in self.defs[module][name].bases:
            found = self.resolve(module, ast.unparse(base))
            if found is not None and isinstance(self.defs[found[0]][found[1]], ast.ClassDef):
                yield from self.methods(found)


class _Walk:
    """One reachability walk over a :class:`Package` (see :meth:`Package.reached`)."""

    RUN_ANYWAY = ("__init__", "forward", "__call__")

    def __init__(self, package: Package, attributes: set[str]) -> None:
        self.package, self.attributes = package, attributes
        self.reached: set[Node] = set()
        self.instantiated: set[Node] = set()
        self.queue: list[Node] = []

    def run(self) -> set[Node]:
        while self.queue:
            while self.queue:
                self._scan(self.queue.pop())
            for cls in list(self.instantiated):
                for method in self.package.methods(cls):
                    name = method[1].rsplit(".", 1)[1]
                    if name in self.RUN_ANYWAY or name.startswith("__") or name in self.attributes:
                        self.reach(method)
        return self.reached | self.instantiated

    def reach(self, node: Node | None) -> None:
        if node is not None and node not in self.reached:
            self.reached.add(node)
            self.queue.append(node)

    def value(self, node: Node | None) -> None:
        """A name used as a value (called, passed on): a class is instantiated, a function reached."""
        if node is None or not isinstance(self.package.defs[node[0]][node[1]], ast.ClassDef):
            self.reach(node)
        elif node not in self.instantiated:
            self.instantiated.add(node)
            self.queue.append(node)  # its class body (fields and their defaults)

    def _scan(self, node: Node) -> None:
        module, qualname = node
        imports = self.package.bound[module]
        owner = qualname.rsplit(".", 1)[0] if "." in qualname else None
        for item in _code(self.package.defs[module][qualname]):
            if isinstance(item, ast.Name):
                self.value(self.package.resolve(module, item.id))
            elif isinstance(item, ast.Attribute):
                self.attributes.add(item.attr)
                base = item.value.id if isinstance(item.value, ast.Name) else None
                if base == "self" and owner:
                    self.value(self.package.resolve(module, f"{owner}.{item.attr}"))
                elif base in imports and not imports[base][1]:  # a module imported whole
                    self.value(self.package.resolve(imports[base][0], item.attr))
                elif base is not None:  # a class's own method (a classmethod, a staticmethod)
                    self.value(self.package.resolve(module, f"{base}.{item.attr}"))


def _code(definition: ast.AST) -> Iterator[ast.AST]:
    """What runs in a definition, types left out: a function's defaults and body, a class's statements
    other than its methods; never the annotations, nor the classes a test compares with (``isinstance(x,
    A)``, ``type(x) is A``, ``type(x) in (A, B)``)."""
    if isinstance(definition, ast.ClassDef):
        parts = [stmt for stmt in definition.body if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)]
    else:
        parts = [*definition.args.defaults, *filter(None, definition.args.kw_defaults), *definition.body]
    stack = list(reversed(parts))
    while stack:
        item = stack.pop()
        yield item
        for child in ast.iter_child_nodes(item):
            if isinstance(child, ast.arg) or child is getattr(item, "annotation", None):
                continue
            if _type_tested(item, child):
                continue
            stack.append(child)


def _type_tested(parent: ast.AST, child: ast.AST) -> bool:
    """``child`` of ``parent`` only names classes to compare a type with."""
    if isinstance(parent, ast.Call) and ast.unparse(parent.func) in ("isinstance", "issubclass"):
        return bool(parent.args) and child is parent.args[-1]
    names = (
        isinstance(child, ast.Name) or isinstance(child, ast.Tuple) and all(isinstance(e, ast.Name) for e in child.elts)
    )
    return isinstance(parent, ast.Compare) and child in parent.comparators and names


def named_exercises(exercise, exercises: Mapping) -> set[str]:  # noqa: ANN001 - an Exercise, id → Exercise
    """The other exercises whose functions ``exercise``'s answer calls by their global name (its code and
    the code of its nested functions): what its ``needs=`` must declare at least."""
    from .checks.registry import code_objects

    function = exercise.resolve()
    others = {id(other.resolve()): other.id for other in exercises.values() if other.id != exercise.id}
    names = set().union(*(code.co_names for code in code_objects(function.__code__)))
    return {others[id(function.__globals__[n])] for n in names if id(function.__globals__.get(n)) in others}


def undeclared_needs(exercises: Mapping, standins: Iterable[str]) -> list[str]:  # noqa: ANN001 - id → Exercise
    """One line per exercise whose answer calls another that its ``needs=`` leaves out, and per needed
    exercise without a stand-in: what to declare or add, and where."""
    found, standins = [], set(standins)
    for exercise_id, ex in sorted(exercises.items()):
        missing = named_exercises(ex, exercises) - set(ex.needs)
        if missing:
            wanted = tuple(sorted(set(ex.needs) | missing))
            found.append(f"{exercise_id}'s answer calls {', '.join(sorted(missing))}: declare needs={wanted} in its "
                         f"@exercise(...) in {TOOLS}/exercises/checks/ch{ex.chapter}.py")  # fmt: skip
    needed = {other: exercise_id for exercise_id, ex in sorted(exercises.items()) for other in ex.needs}
    for other, caller in sorted(needed.items()):
        if other not in standins:
            found.append(f"{other} is needed by {caller} but has no stand-in: write one beside its check and pass "
                         f"it to its @exercise(..., standin=...) in {TOOLS}/exercises/checks/ch{other[2:4]}.py")  # fmt: skip
    return found


def chapter_needs(root: Path, exercises: Mapping) -> dict[str, list[str]]:  # noqa: ANN001 - id → Exercise
    """Chapter number ("04") → the exercises (ids, sorted) its notebook's code reaches."""
    package = Package(root / PACKAGE)
    by_target = _by_target(exercises)
    needs = {}
    for path in sorted((root / "chapters").glob("[0-9][0-9]_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = package.imports(tree, f"{PACKAGE}.chapters")
        attributes = {a.attr for a in ast.walk(tree) if isinstance(a, ast.Attribute)}
        reached = package.reached(_roots(tree, imports), attributes)
        needs[path.name[:2]] = sorted({by_target[node] for node in reached if node in by_target})
    return needs


def first_stops(root: Path, exercises: Mapping) -> dict[str, str]:  # noqa: ANN001 - id → Exercise
    """Chapter number → the exercise of its own that it stops at first in the student edition, once the
    exercises of the chapters before it are written (chapters that run none of their own left out).

    Read statement by statement, in the order the cells run: the first statement that reaches one of
    the chapter's exercises stops there. Where it reaches several, an exercise's function that the
    statement calls by name stops it first (its stub raises before anything it calls); else the one
    numbered first, the order a chapter meets its exercises in (what a statement reaches is an
    over-estimate: a model built reaches every layer it could hold)."""
    package = Package(root / PACKAGE)
    by_target = _by_target(exercises)
    stops = {}
    for path in sorted((root / "chapters").glob("[0-9][0-9]_*.py")):
        chapter, source = path.name[:2], path.read_text(encoding="utf-8")
        imports = package.imports(ast.parse(source), f"{PACKAGE}.chapters")
        attributes: set[str] = set()
        for statement in _statements(source):
            attributes |= {a.attr for a in ast.walk(statement) if isinstance(a, ast.Attribute)}
            roots = _roots(statement, imports)
            reached = package.reached(roots, attributes)
            own = sorted({by_target[n] for n in reached if n in by_target and by_target[n][2:4] == chapter})
            if own:
                named = [package.resolve(*r) for r in roots]
                called = [by_target[n] for n in named if n in by_target and by_target[n] in own]
                stops[chapter] = called[0] if called else own[0]
                break
    return stops


def _statements(source: str) -> Iterator[ast.stmt]:
    """The top-level statements of a notebook's ``.py`` source, cell after cell, in the order they run."""
    for cell in re.split(r"^# %%.*$", source, flags=re.M):
        try:
            yield from ast.parse(cell).body
        except SyntaxError:
            continue  # a markdown cell


def _by_target(exercises: Mapping) -> dict[Node, str]:  # noqa: ANN001 - id → Exercise
    return {tuple(target.split(":")): ex.id for ex in exercises.values() for target in ex.targets}


def _roots(tree: ast.AST, imports: dict[str, tuple[str, str]]) -> list[Node]:
    """The course's functions and classes ``tree`` names (imported names, a module's attributes), in the
    order they appear."""
    nodes = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Name | ast.Attribute)),
                   key=lambda n: (n.lineno, n.col_offset))  # fmt: skip
    roots = []
    for node in nodes:
        if isinstance(node, ast.Name) and node.id in imports and imports[node.id][1]:
            roots.append(imports[node.id])
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in imports:
            module, name = imports[node.value.id]
            if not name:  # a module imported whole: its attribute
                roots.append((module, node.attr))
    return list(dict.fromkeys(roots))


def _definitions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """(qualname, node) of the module's functions, classes and methods."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            yield node.name, node
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield f"{node.name}.{item.name}", item


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str | None:
    """The module a ``from … import`` names, absolute (``module`` holds the statement)."""
    if not node.level:
        return node.module
    parts = module.split(".")
    base = parts[: len(parts) - node.level + is_package]
    return ".".join([*base, *([node.module] if node.module else [])])


def _exports(tree: ast.Module | None) -> dict[str, str]:
    """The package's ``_EXPORTS`` table: name → the room (relative module) that defines it."""
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.AnnAssign | ast.Assign) and "_EXPORTS" in ast.unparse(node):
            return ast.literal_eval(node.value)
    return {}
