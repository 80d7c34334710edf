"""``make check-changed``: the lint and the tests that cover the files changed, each choice with its reason.

    python -m transformer_course_tools.authoring.changed                # against origin/main (else main)
    python -m transformer_course_tools.authoring.changed --base HEAD~2  # against another revision
    python -m transformer_course_tools.authoring.changed --list         # say what it would run; run nothing
    python -m transformer_course_tools.authoring.changed -- -x          # options after -- go to pytest

The changed files: the commits not on the base (from their merge-base with HEAD), the uncommitted
changes and the files git does not know yet. What covers a file is read from the code, never from a
table kept by hand:

* a Python module (a room, a module of the course's side, a benchmark, a test's helper): the tests and
  the notebooks that import it. A name imported from ``transformer_course`` counts for the room that
  defines it (its ``_EXPORTS``), a name imported from a package for the module its ``__init__`` takes it
  from. Where nothing imports it, the importers of its importers, up to the first that test it;
  ``--deep``: every test and notebook that reaches it through any chain of imports;
* an exercise's answer (a room's solution region), its check (``@exercise`` in ``checks/chNN.py``) or
  its attempts (``tests/attempts/exNN_k.py``): the tests marked with the exercise (``pytest -m exNN_k``:
  its attempts, its check on the solution, its hidden cases) and its notebook's nbval;
* a chapter or an exercise notebook (its ``.py`` or its ``.ipynb``): its nbval;
* a test: itself (``conftest.py``: every test);
* the package's ``__init__.py`` changed only where ``make exercises`` writes it (its ``_EXPORTS`` table and
  the ``TYPE_CHECKING`` imports): ``tests/test_build.py``, not every importer of the package;
* any file: the tests whose code names it (its path, its name, or its folder).

The lint is ``ruff check`` and ``ruff format --check`` on the changed Python files (the files
``make lint`` checks: ruff's own exclusions apply).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from transformer_course_tools.course import PACKAGE

# Where the course's Python lives, as module prefixes (a chapter's or a notebook's .py is a node too).
PYTHON_FOLDERS = (PACKAGE, "transformer_course_tools", "tests", "benchmarks", "scripts", "book")
NOTEBOOK_FOLDERS = ("chapters", "solutions")  # the notebooks `make test` runs through nbval
NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "nbval_sanitize.cfg"]
SKIPPED = (".venv", ".venv-oldest", "_build", "student-edition", "test-artifacts", ".git")


@dataclass(frozen=True)
class Choice:
    """One thing to run: ``kind`` "test" (a test file, or "tests" for all), "nbval" (a notebook) or
    "marked" (an exercise id, ``pytest -m``), and why it was chosen."""

    kind: str
    target: str
    reason: str

    def line(self) -> str:
        return f"{self.kind:<6} {self.target}: {self.reason}"


# ---------------------------------------------------------------- which files changed


def default_base(root: Path) -> str:
    """``origin/main`` where the clone has it, else ``main``."""
    for ref in ("origin/main", "main"):
        if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode == 0:
            return ref
    raise ValueError("no origin/main nor main in this repository: name the base with --base REV")


def changed_files(root: Path, base: str) -> list[str]:
    """The files (relative to ``root``) that differ from ``base``'s merge-base with HEAD: commits, the
    uncommitted changes and untracked files; a deleted or renamed file is listed under its old name too."""
    found = _git(root, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
    if found.returncode != 0:
        raise ValueError(f"--base {base!r} is not a revision of this repository")
    fork = _git(root, "merge-base", base, "HEAD").stdout.strip() or found.stdout.strip()
    diff = _git(root, "diff", "--name-only", "--no-renames", fork, "--").stdout.split("\n")
    untracked = _git(root, "ls-files", "--others", "--exclude-standard").stdout.split("\n")
    return sorted({f for f in [*diff, *untracked] if f})


def exports_only(root: Path, base: str, files: Iterable[str]) -> set[str]:
    """Of ``files``, the package's ``__init__.py`` if it differs from ``base``'s merge-base only in the parts
    ``make exercises`` writes (its ``_EXPORTS`` table and its ``TYPE_CHECKING`` imports)."""
    init = f"{PACKAGE}/__init__.py"
    if init not in files or not (root / init).is_file():
        return set()
    fork = _git(root, "merge-base", base, "HEAD").stdout.strip() or base
    old = _git(root, "show", f"{fork}:{init}")
    if old.returncode != 0:
        return set()
    same = _hand_written(old.stdout) == _hand_written((root / init).read_text(encoding="utf-8"))
    return {init} if same else set()


def _hand_written(source: str) -> list[str] | None:
    """``source``'s lines without its ``_EXPORTS`` table and ``TYPE_CHECKING`` block (None: not Python)."""
    tree = _parse(source)
    if tree is None:
        return None
    made = [n for n in tree.body if (isinstance(n, ast.AnnAssign) and ast.unparse(n.target) == "_EXPORTS")
            or (isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test))]  # fmt: skip
    lines = source.split("\n")
    for node in sorted(made, key=lambda n: n.lineno, reverse=True):
        del lines[node.lineno - 1 : node.end_lineno]
    return lines


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)


# ---------------------------------------------------------------- the imports, read from the code


class Imports:
    """Every Python file of the course (modules, tests, benchmarks, the notebooks' .py) and what it imports."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, Path] = {}  # module name ("tests.kernel", "chapters.03_attention") → file
        for folder in (*PYTHON_FOLDERS, *NOTEBOOK_FOLDERS):
            for path in sorted((root / folder).rglob("*.py")) if (root / folder).is_dir() else ():
                if not any(part in SKIPPED or part == "__pycache__" for part in path.parts):
                    self.files[self.module(path)] = path
        self.packages = {m for m, p in self.files.items() if p.name == "__init__.py"}
        self.trees = {m: _parse(self.files[m].read_text(encoding="utf-8")) for m in self.packages}
        self.exports = _exports(self.trees.get(PACKAGE))
        self.imports = {m: self._imports_of(m, p) for m, p in self.files.items()}
        self.importers: dict[str, set[str]] = {}
        for module, imported in self.imports.items():
            for name in imported:
                self.importers.setdefault(name, set()).add(module)

    def module(self, path: Path) -> str:
        """The module name of a file: ``transformer_course/attention.py`` → ``transformer_course.attention``."""
        parts = path.relative_to(self.root).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    def _imports_of(self, module: str, path: Path) -> set[str]:
        """The course's modules ``module`` imports, anywhere in its code (a function's own imports too)."""
        found: set[str] = set()
        for statement in _import_statements(path.read_text(encoding="utf-8")):
            if isinstance(statement, ast.Import):
                for alias in statement.names:
                    found |= self._known(alias.name)
            elif isinstance(statement, ast.ImportFrom):
                base = _absolute(statement, module, module in self.packages)
                for alias in statement.names if base else ():
                    found |= self.resolve(base, alias.name)
        found.discard(module)
        return found

    def _known(self, dotted: str) -> set[str]:
        """The course's modules that importing ``dotted`` runs: it and the packages above it."""
        parts = dotted.split(".")
        return {m for m in (".".join(parts[: i + 1]) for i in range(len(parts))) if m in self.files}

    def resolve(self, module: str, name: str, depth: int = 0) -> set[str]:
        """The modules ``from module import name`` depends on: the submodule ``name``, else ``module``
        and the module that defines ``name`` (the room of a name of ``transformer_course``'s exports, the
        module a package's ``__init__`` imports it from)."""
        if f"{module}.{name}" in self.files:
            return {f"{module}.{name}"}
        found = self._known(module)
        if module == PACKAGE and name in self.exports:
            return found | {f"{PACKAGE}.{self.exports[name]}"}
        tree = self.trees.get(module)
        if module in self.packages and tree is not None and depth < 8:
            for node in tree.body:  # a name the package takes from one of its modules
                if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
                    base = _absolute(node, module, True)
                    original = next(a.name for a in node.names if (a.asname or a.name) == name)
                    return found | (self.resolve(base, original, depth + 1) if base else set())
        return found


# An import statement at the start of a line (parenthesised names may go on over several lines): reading
# only these keeps the decision to a fraction of a second where parsing every file whole takes seconds.
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*(?:\([^)]*\)|[^\n]*)|import[ \t]+[^\n]*)", re.M)


def _import_statements(source: str) -> Iterator[ast.stmt]:
    """The import statements of ``source`` that run (one in a docstring's example too: a harmless extra
    edge), without those under ``if TYPE_CHECKING:``, which only editors read."""
    for match in _IMPORT.finditer(_without_type_checking(source)):
        tree = _parse(match.group(0).strip())
        yield from tree.body if tree is not None else ()


def _without_type_checking(source: str) -> str:
    """``source`` without the blocks ``if TYPE_CHECKING:`` (the lines indented under it)."""
    if "TYPE_CHECKING:" not in source:
        return source
    kept, inside = [], None  # inside: the indentation of the ``if`` whose block is being left out
    for line in source.split("\n"):
        indent = len(line) - len(line.lstrip())
        if inside is not None and (not line.strip() or indent > inside):
            continue
        inside = indent if line.strip().startswith("if TYPE_CHECKING:") else None
        kept.append(line)
    return "\n".join(kept)


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None  # a file being written, or not code: what it imports is unknown


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str | None:
    """The module a ``from … import`` names, absolute (``module`` holds the statement)."""
    if not node.level:
        return node.module
    parts = module.split(".")
    base = parts[: len(parts) - node.level + is_package]
    return ".".join([*base, *([node.module] if node.module else [])]) or None


def _exports(tree: ast.Module | None) -> dict[str, str]:
    """The package's ``_EXPORTS``: name → the room that defines it."""
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.AnnAssign | ast.Assign) and "_EXPORTS" in ast.unparse(node).split("=")[0]:
            return ast.literal_eval(node.value)
    return {}


# ---------------------------------------------------------------- the exercises, from their registrations


_REGISTRATION = re.compile(r"@exercise\(\s*[\"'](ex\d\d_\d+)[\"'],\s*[\"']([\w.]+):")


def registrations(root: Path) -> dict[str, tuple[str, str]]:
    """Exercise id → (the check module that registers it, the room that holds its answer), read from the
    ``@exercise("exNN_k", "transformer_course.room:function", …)`` decorators without importing them."""
    found = {}
    for path in sorted((root / "transformer_course_tools" / "exercises" / "checks").glob("ch[0-9][0-9].py")):
        for exercise_id, room in _REGISTRATION.findall(path.read_text(encoding="utf-8")):
            found[exercise_id] = (path.relative_to(root).as_posix(), room)
    return found


def marked_test_files(root: Path) -> list[str]:
    """The test files that mark tests with an exercise's id (``getattr(pytest.mark, exercise_id)``, the items
    ``ExerciseChecks()`` makes, one per exercise, or the course's deeper tests' ``per_exercise(…)``)."""
    tests = sorted((root / "tests").glob("test_*.py"))
    marks = ("getattr(pytest.mark,", "ExerciseChecks()", "per_exercise(")
    return [t.relative_to(root).as_posix() for t in tests if any(m in t.read_text(encoding="utf-8") for m in marks)]


# ---------------------------------------------------------------- what covers a changed file


def select(
    root: Path, files: Iterable[str], deep: bool = False, imports: Imports | None = None, made: Iterable[str] = ()
) -> list[Choice]:
    """What to run for the changed ``files`` (paths relative to ``root``), one :class:`Choice` each, in
    the order: tests, notebooks, exercises (the first reason found for each). ``made``: files changed only
    where ``make exercises`` writes them (:func:`exports_only`)."""
    imports = Imports(root) if imports is None else imports
    exercises = registrations(root)
    chosen: dict[tuple[str, str], str] = {}
    for file in sorted(files):
        if file in made:
            chosen.setdefault(("test", "tests/test_build.py"), f"{file} changed only in its exports (make exercises)")
            continue
        for kind, target, reason in _choices(root, file, imports, exercises, deep):
            chosen.setdefault((kind, target), reason)
    if ("test", "tests") in chosen:  # every test: the others are in it
        chosen = {k: r for k, r in chosen.items() if k[0] != "test" or k[1] == "tests"}
    order = {"test": 0, "nbval": 1, "marked": 2}
    return [Choice(k, t, r) for (k, t), r in sorted(chosen.items(), key=lambda i: (order[i[0][0]], i[0][1]))]


def _choices(root: Path, file: str, imports: Imports, exercises: dict, deep: bool) -> Iterator[tuple[str, str, str]]:
    """(kind, target, reason) of everything that covers the changed ``file``."""
    path = Path(file)
    own = list(_own(root, path))
    yield from own
    module = imports.module(root / path) if path.suffix == ".py" else None
    imported = module is not None and bool(imports.importers.get(module))
    reached = {module: ""} if module else {}  # module → the chain of imports from it to the changed one
    if imported:
        found, via = _importers(imports, module, file, deep)
        reached = via if deep else reached
        yield from found
    held = [
        (exercise_id, what, where + (f", which imports {chain} ({file} changed)" if chain else " (changed)"))
        for m, chain in reached.items()
        for where in [imports.files[m].relative_to(root).as_posix() if m in imports.files else file]
        for exercise_id, what in _exercises_of(exercises, where, m)
    ]
    for exercise_id, what, where in held:
        yield "marked", exercise_id, f"{what} in {where}"
        if what != "its attempts are":  # the notebooks that run its check on the answer
            for notebook in _naming_exercise(root, exercise_id):
                yield "nbval", notebook, f"runs {exercise_id}'s check: {what} in {where}"
    tested = any(kind == "test" for kind, _, _ in own)  # a test file: itself
    for test, reason in _naming(root, path, tested or imported or bool(held)):
        yield "test", test, reason


def _own(root: Path, path: Path) -> Iterator[tuple[str, str, str]]:
    """A test runs itself; a notebook's source or its stored outputs run its nbval."""
    if path.parts[0] == "tests" and path.name == "conftest.py":
        yield "test", "tests", f"{path.as_posix()} changed (it sets up every test)"
    elif path.parts[0] == "tests" and path.name.startswith("test_") and path.suffix == ".py":
        if (root / path).is_file():
            yield "test", path.as_posix(), "changed"
    elif path.parts[0] in NOTEBOOK_FOLDERS and path.suffix in (".py", ".ipynb") and len(path.parts) == 2:
        notebook = path.with_suffix(".ipynb")
        if (root / notebook).is_file():
            yield "nbval", notebook.as_posix(), f"{path.as_posix()} changed"


def _importers(
    imports: Imports, module: str, file: str, deep: bool
) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """The tests and notebooks that import ``module``; where none does, those that import its importers,
    and so on (``deep``: all of them, however far). Also every module reached → the chain of imports
    from it to ``module`` ("" for ``module`` itself)."""
    via, level, found = {module: ""}, [module], []
    while level and (deep or not found):
        further = []
        for imported in level:
            for importer in sorted(imports.importers.get(imported, ())):
                if importer in via:
                    continue
                via[importer] = f"{imported}, which imports {via[imported]}" if via[imported] else imported
                runnable = _runnable(imports, importer)
                if runnable is None:
                    further.append(importer)
                else:
                    found.append((*runnable, f"imports {via[importer]} ({file} changed)"))
        level = further
    return found, via


def _runnable(imports: Imports, module: str) -> tuple[str, str] | None:
    """("test", file) for a test module, ("nbval", notebook) for a chapter's or a solution's source."""
    path = imports.files[module].relative_to(imports.root)
    if path.parts[0] == "tests" and path.name.startswith("test_"):
        return "test", path.as_posix()
    if path.parts[0] in NOTEBOOK_FOLDERS and (imports.root / path.with_suffix(".ipynb")).is_file():
        return "nbval", path.with_suffix(".ipynb").as_posix()
    return None


def _exercises_of(exercises: dict[str, tuple[str, str]], file: str, module: str | None) -> Iterator[tuple[str, str]]:
    """(exercise id, "its answer is", "its check is" or "its attempts are") for the exercises whose answer,
    check or attempts ``file`` (the module ``module``) holds."""
    attempt = Path(file)
    for exercise_id, (check, room) in sorted(exercises.items()):
        if module == room:
            yield exercise_id, "its answer is"
        elif file == check:
            yield exercise_id, "its check is"
        elif attempt.parts[:2] == ("tests", "attempts") and attempt.stem == exercise_id:
            yield exercise_id, "its attempts are"


def _naming_exercise(root: Path, exercise_id: str) -> Iterator[str]:
    """The notebooks whose code names ``exercise_id`` (``check("ex03_2")``, ``run_check("ex03_2", buggy)``)."""
    for folder in NOTEBOOK_FOLDERS:
        for source in sorted((root / folder).glob("*.py")):
            if exercise_id in _strings(source) and source.with_suffix(".ipynb").is_file():
                yield source.with_suffix(".ipynb").relative_to(root).as_posix()


def _naming(root: Path, path: Path, covered: bool) -> Iterator[tuple[str, str]]:
    """The tests whose code names ``path``: its path or its name (a notebook's pair: its stem), or, for a
    file that no code imports and no exercise holds (``covered`` False), its folder."""
    names = {path.as_posix(), path.name}
    if path.parts[0] in NOTEBOOK_FOLDERS:
        names.add(path.stem)
    folder = path.parent.name if len(path.parts) > 1 and not covered else None
    for test in sorted((root / "tests").glob("test_*.py")):
        strings = _strings(test)
        named = sorted(names & strings)
        if named:
            yield test.relative_to(root).as_posix(), f"names {named[0]!r} ({path.as_posix()} changed)"
        elif folder in strings:
            yield test.relative_to(root).as_posix(), f"names the folder {folder!r} ({path.as_posix()} changed)"


_STRINGS: dict[Path, set[str]] = {}


_STRING = re.compile(r"""(?<![\w'"])[rbf]?(["'])([^"'\n]{1,200})\1""")


def _strings(path: Path) -> set[str]:
    """The string literals of a file's code (one line each), and the parts of those that are paths."""
    if path not in _STRINGS:
        found = {m.group(2) for m in _STRING.finditer(path.read_text(encoding="utf-8"))}
        _STRINGS[path] = found | {part for s in found if "/" in s for part in s.split("/")}
    return _STRINGS[path]


# ---------------------------------------------------------------- running them


def lint_commands(root: Path, files: Iterable[str], ruff: str) -> list[list[str]]:
    """``ruff check`` and ``ruff format --check`` on the changed Python files that exist."""
    python = [f for f in sorted(files) if f.endswith(".py") and (root / f).is_file()]
    if not python:
        return []
    return [[ruff, "check", "--force-exclude", *python], [ruff, "format", "--check", "--force-exclude", *python]]


def pytest_commands(root: Path, choices: list[Choice], python: str, extra: list[str]) -> list[list[str]]:
    """One pytest run for the test files and notebooks, one for the exercises' marked tests."""
    pytest = [python, "-m", "pytest", *extra]
    tests = [c.target for c in choices if c.kind == "test"]
    notebooks = [c.target for c in choices if c.kind == "nbval"]
    marked = [c.target for c in choices if c.kind == "marked"]
    commands = []
    if tests or notebooks:
        commands.append([*pytest, *tests, *notebooks, *(NBVAL if notebooks else [])])
    if marked:
        commands.append([*pytest, *marked_test_files(root), "-m", " or ".join(marked)])
    return commands


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    parser = argparse.ArgumentParser(prog="python -m transformer_course_tools.authoring.changed",
                                     description=__doc__.split("\n\n")[0])  # fmt: skip
    parser.add_argument("--base", help="the revision to compare with (default: origin/main, else main)")
    parser.add_argument("--list", action="store_true", help="say what would run, run nothing")
    parser.add_argument(
        "--deep", action="store_true", help="every test and notebook that imports a changed module through any chain"
    )
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    root = Path(__file__).resolve().parents[2]
    try:
        base = args.base or default_base(root)
        started = time.perf_counter()
        files = changed_files(root, base)
        choices = select(root, files, deep=args.deep, made=exports_only(root, base, files))
    except ValueError as error:
        print(f"changed: {error}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - started
    bin_dir = Path(sys.executable).parent
    ruff = str(bin_dir / "ruff") if (bin_dir / "ruff").is_file() else "ruff"
    commands = lint_commands(root, files, ruff) + pytest_commands(root, choices, sys.executable, extra)
    print(f"{len(files)} file(s) changed against {base}; {len(choices)} chosen in {seconds:.1f} s:")
    print("\n".join(f"  {f}" for f in files))
    if commands[:1] and commands[0][1] == "check":
        print(f"lint   {len(commands[0]) - 3} Python file(s): ruff check, ruff format --check")
    print("\n".join(c.line() for c in choices) or "no test covers these files")
    status = 0
    for command in commands:
        print("$ " + " ".join(_quoted(a) for a in command), flush=True)
        if not args.list:
            status = subprocess.run(command, cwd=root, check=False).returncode or status
    return status


def _quoted(arg: str) -> str:
    return f"'{arg}'" if " " in arg or not arg else arg


if __name__ == "__main__":
    sys.exit(main())
