"""One source, two editions.

The complete edition (this repository) holds the solutions between nbgrader's markers
``### BEGIN SOLUTION`` / ``### END SOLUTION`` (:mod:`.regions`): in package functions and in the
notebooks of ``solutions/``. This module derives the student edition from it:

* :func:`stub_source` replaces each marked region of a package file by a
  ``raise NotImplementedError`` naming the exercise, the file to edit and a hint;
* :func:`clear_notebook` empties the marked regions of a notebook (as nbgrader's
  ``ClearSolutions`` does), and :func:`write_exercises` writes ``exercises/`` from ``solutions/``;
* :func:`build_student_edition` writes a whole runnable copy of the course without solutions,
  and refuses to finish if any line of a solution region is still to be found in it, or a run of
  statements that repeats a solution's structure under other names (:mod:`.answers`);
* :func:`restore_exercise` puts one worked answer back into a student edition ("I give up on
  ex03_2"), copied from the complete edition.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

from transformer_course_tools.course import EXCLUDED, JUNK, PACKAGE, REPOSITORY_URL, course_files, room_files

from .answers import find_leaks, find_structure_leaks, solution_snippets, solution_structures, statement_shapes
from .hints import HINT_LEVELS, STUDENT_MARK, check_level, edition_hints, is_student_edition
from .regions import BEGIN, CODE_STUB, END, TEXT_STUB, clear_text, function_span, region_targets, solution_regions
from .saved import problem
from .written_answers import FILE as WRITTEN_FILE
from .written_answers import edition_file

__all__ = [  # what this module always offered, wherever it now lives
    "BEGIN", "CODE_STUB", "END", "EXCLUDED", "HINT_LEVELS", "JUNK", "SHOWS_SOLUTIONS", "STUDENT_MARK", "TEXT_STUB",
    "build_student_edition", "check_level", "clear_notebook", "clear_text", "complete_course_for",
    "drop_solution_outputs", "edition_hints", "edition_mark", "remember_course", "remembered_course",
    "find_leaks", "find_structure_leaks", "is_student_edition", "region_targets", "restore_exercise",
    "room_files", "solution_leaks", "solution_regions", "solution_snippets", "solution_structures", "statement_shapes", "stub_package",
    "stub_source", "write_exercises",
]  # fmt: skip


def stub_source(source: str, module: str, hints: str = "full") -> str:
    """Replace each solution region of a package file by a NotImplementedError stub whose hint is
    at level ``hints`` (see ``HINT_LEVELS``)."""
    from .checks.registry import load_checks

    by_target = {target: ex for ex in load_checks().values() for target in ex.targets}
    lines = source.splitlines()
    for begin, end, target in reversed(region_targets(source, module)):
        if target not in by_target:
            raise ValueError(f"solution region in {target} (line {begin + 1}) belongs to no registered exercise")
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        message = by_target[target].stub_message(target, hints)
        lines[begin : end + 1] = [f"{indent}{CODE_STUB}", f"{indent}raise NotImplementedError({message!r})"]
    return "\n".join(lines) + "\n"


def clear_notebook(notebook):
    """Clear the solution regions of every cell and drop all outputs (in a copy)."""
    import copy

    notebook = copy.deepcopy(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.source = clear_text(cell.source, CODE_STUB)
            cell.outputs, cell.execution_count = [], None
        elif cell.cell_type == "markdown":
            cell.source = clear_text(cell.source, TEXT_STUB)
    return notebook


# The tag of a chapter cell that prints the package's exercise code (chapter 06's model on one page):
# the student edition drops its committed output, and the learner's run prints the learner's own code.
SHOWS_SOLUTIONS = "shows-solutions"


def drop_solution_outputs(path: Path) -> bool:
    """Empty the outputs of the cells of notebook ``path`` tagged :data:`SHOWS_SOLUTIONS` (in place);
    True if there were any."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    tagged = [c for c in notebook.cells if c.cell_type == "code" and SHOWS_SOLUTIONS in c.metadata.get("tags", [])]
    for cell in tagged:
        cell.outputs, cell.execution_count = [], None
    if tagged:
        nbformat.write(notebook, path)
    return bool(tagged)


def write_exercises(solutions_dir: Path, exercises_dir: Path) -> list[Path]:
    """Write ``exercises/`` (percent .py + .ipynb without outputs) from ``solutions/*.py``; an
    exercise notebook that exists keeps its cell ids (regenerating an unchanged one changes nothing).
    Returns the files whose content changed."""
    import jupytext

    from transformer_course_tools.authoring.pairs import write_pair

    exercises_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for source in sorted(solutions_dir.glob("*.py")):
        target = exercises_dir / source.name
        pair = (target, target.with_suffix(".ipynb"))
        before = [path.read_bytes() if path.is_file() else None for path in pair]
        write_pair(clear_notebook(jupytext.read(source)), target, keep_outputs=False)
        written += [path for path, old in zip(pair, before, strict=True) if path.read_bytes() != old]
    return written


def stub_package(package_dir: Path, hints: str = "full") -> list[Path]:
    """Stub every room (in place) that holds solution regions, hints at level ``hints``; return those files."""
    changed = []
    for path in room_files(package_dir):
        source = path.read_text(encoding="utf-8")
        if BEGIN not in source:
            continue
        module = ".".join(path.relative_to(package_dir.parent).with_suffix("").parts)
        path.write_text(stub_source(source, module, hints), encoding="utf-8")
        changed.append(path)
    return changed


_BANNER = """\
> **Student edition.** The exercise functions of `transformer_course/` are stubs that you write
> yourself; `exercises/` holds the exercise notebooks. A chapter runs up to the first exercise you
> have not written yet and stops there, naming the exercise and the file to edit. Check your work
> with the check cells, `pytest -m ex03_2` or `python -m transformer_course check`. Stuck on one?
> `python -m transformer_course restore ex03_2` copies its worked answer from the complete course.
> Set-up: `pip install -e .` in this folder (or `make lab`), so that Python imports *this* package.

"""


def _banner(hints: str) -> str:
    """The edition's README banner; below "full" hints it says how to ask for more."""
    if hints == "full":
        return _BANNER
    more = (f'> Hints here are at level "{hints}"; `check("ex03_2", hints="full")` shows the whole hint and '
            "the fix.\n\n")  # fmt: skip
    return _BANNER[:-1] + more


def build_student_edition(root: Path, out_dir: Path, check_leaks: bool = True, hints: str = "full",
                          worked_answers: bool = True) -> Path:  # fmt: skip
    """Copy the course to ``out_dir`` with the package stubbed and no solution text (with
    ``check_leaks``, the default, refuse to finish if any solution line is found in it); the stubs'
    hints, and the default of ``check``'s there, are at level ``hints`` ("full", "nudge", "none").
    ``worked_answers``: ``check exNN_qK`` there shows the worked answer of a written question once it
    is answered (:mod:`.written_answers`; False for an instructor's handout). The machine it is made on
    remembers, outside the edition, where the complete course is (``restore`` finds it)."""
    root, out_dir = root.resolve(), out_dir.resolve()
    if out_dir == root or root in out_dir.parents and out_dir.parts[len(root.parts)] != "student-edition":
        raise ValueError(f"OUT_DIR must be outside the course (or ./student-edition), got {out_dir}")
    if out_dir.exists() and any(out_dir.iterdir()):
        raise ValueError(f"OUT_DIR {out_dir} exists and is not empty")
    if is_student_edition(root):
        raise ValueError(f"{root} is already a student edition: build it from the complete course")
    check_level(hints)
    try:
        _write_edition(root, out_dir, check_leaks, hints, worked_answers)
    except BaseException:
        shutil.rmtree(out_dir, ignore_errors=True)  # never leave half an edition (with answers) behind
        raise
    remember_course(out_dir, root)
    return out_dir


def edition_mark(hints: str = "full") -> str:
    """What ``.student-edition.json`` holds: the exercises and their functions, the hint level, an id
    of its own (which the machine it was made on maps to the complete course, :func:`remember_course`),
    and no path of the machine the edition was built on (it is handed out)."""
    from .checks.registry import load_checks

    exercises = {i: ex.target for i, ex in sorted(load_checks().items())}
    return json.dumps({"exercises": exercises, "hints": hints, "id": uuid.uuid4().hex}, indent=2) + "\n"


def _write_edition(root: Path, out_dir: Path, check_leaks: bool, hints: str = "full", worked: bool = True) -> None:
    for rel in course_files(root):
        (out_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, out_dir / rel)
    stub_package(out_dir / PACKAGE, hints)
    write_exercises(root / "solutions", out_dir / "exercises")
    for notebook in sorted((out_dir / "chapters").glob("*.ipynb")):
        drop_solution_outputs(notebook)
    readme = out_dir / "README.md"
    if readme.exists():
        readme.write_text(_banner(hints) + readme.read_text(encoding="utf-8"), encoding="utf-8")
    (out_dir / STUDENT_MARK).write_text(edition_mark(hints), encoding="utf-8")
    (out_dir / WRITTEN_FILE).write_text(edition_file(root, worked), encoding="utf-8")
    leaks = solution_leaks(root, out_dir) if check_leaks else []
    if leaks:
        shown = "\n".join(f"  {where}: {line}" for where, line in leaks[:20])
        raise ValueError(f"solution text (or structure) would remain in the student edition:\n{shown}")


def solution_leaks(root: Path, tree: Path, snippets: dict | None = None, structures: dict | None = None) -> list:
    """(where, what) for every line of a solution of the course at ``root`` found in ``tree``, and every
    run of statements there that repeats a solution's structure under other names (``snippets`` and
    ``structures``: :func:`solution_snippets` and :func:`solution_structures` of ``root``, if at hand)."""
    leaks = find_leaks(tree, solution_snippets(root) if snippets is None else snippets)
    found = find_structure_leaks(tree, solution_structures(root) if structures is None else structures)
    return leaks + [(where, f"repeats the structure of {origin} under other names") for where, origin in found]


# ---------------------------------------------------------------- "I give up on this one"


def _state_file() -> Path:
    """Where this machine remembers which complete course each student edition was made from."""
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state) / "transformer_course" / "editions.json"


def _edition_id(edition: Path) -> str | None:
    try:
        return json.loads((Path(edition) / STUDENT_MARK).read_text(encoding="utf-8")).get("id")
    except (OSError, ValueError, AttributeError):
        return None


def remember_course(edition: Path, root: Path) -> None:
    """Remember, on this machine and outside the edition (a handout carries no path of its maker's
    machine), that the edition at ``edition`` was made from the complete course at ``root``."""
    edition_id = _edition_id(edition)
    if edition_id is None:
        return
    path = _state_file()
    try:
        known = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        known = known if isinstance(known, dict) else {}
        known[edition_id] = str(Path(root).resolve())
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(known, indent=1) + "\n", encoding="utf-8")
    except (OSError, ValueError):
        pass  # nowhere to remember it: restore then looks around the edition, or takes --from


def remembered_course(edition: Path) -> Path | None:
    """The complete course the edition was made from, if this machine made it (None otherwise)."""
    edition_id, path = _edition_id(edition), _state_file()
    try:
        found = json.loads(path.read_text(encoding="utf-8")).get(edition_id) if edition_id and path.is_file() else None
    except (OSError, ValueError, AttributeError):
        return None
    return Path(found) if isinstance(found, str) else None


def complete_course_for(edition: Path, exercise_file: str) -> Path | None:
    """A complete course holding the worked answer in ``exercise_file``: the one the edition was made
    from (remembered on this machine), the clone around it (``make student-edition``), Colab's clone."""
    candidates = (remembered_course(edition), Path(edition).parent, Path.home() / "transformer-course")
    for candidate in filter(None, candidates):
        file = candidate / exercise_file
        if file.is_file() and BEGIN in file.read_text(encoding="utf-8"):
            return candidate
    return None


def restore_exercise(edition: Path, exercise_id: str, complete: Path | None = None) -> tuple[Path, Path]:
    """Replace the student's version of one exercise function by the worked answer of the complete
    course (default: :func:`complete_course_for`'s; the edition records no path of the machine it was
    built on, since it is handed out). The student's file is kept as a backup.
    Returns (edited file, backup)."""
    from .checks.registry import get_exercise

    edition = Path(edition).resolve()
    if not is_student_edition(edition):
        raise ValueError(f"{edition} is not a student edition (no {STUDENT_MARK}): restore works inside one")
    ex = get_exercise(exercise_id)
    if complete is None:
        complete = complete_course_for(edition, ex.file)
        if complete is None:
            raise FileNotFoundError(
                f"no complete copy of the course found for {exercise_id} (not where this edition was made, nor around "
                f"it, nor in ~/transformer-course): pass --from PATH to one (git clone {REPOSITORY_URL})"
            )
    source_file, target_file = Path(complete) / ex.file, edition / ex.file
    if not source_file.is_file() or BEGIN not in source_file.read_text(encoding="utf-8"):
        raise FileNotFoundError(
            f"no worked answer at {source_file}: pass --from PATH to a complete copy of the course "
            f"(git clone {REPOSITORY_URL})"
        )
    broken = problem(target_file)
    if broken is not None:  # restore replaces one function in the file and keeps the rest: it must parse
        raise ValueError(f"{broken}: fix that line and save, then restore again (only {ex.qualname} is replaced)")
    answer_source = source_file.read_text(encoding="utf-8")
    if not any(t == ex.target for _, _, t in region_targets(answer_source, ex.module)):
        raise ValueError(f"{source_file} holds no worked answer for {exercise_id} ({ex.target})")
    mine = target_file.read_text(encoding="utf-8")
    backup = target_file.with_name(f"{target_file.name}.{exercise_id}.bak")
    backup.write_text(mine, encoding="utf-8")
    for qualname in (t.split(":")[1] for t in ex.targets):
        first, last = function_span(answer_source, qualname)
        lines = mine.splitlines()
        m_first, m_last = function_span(mine, qualname)
        lines[m_first : m_last + 1] = answer_source.splitlines()[first : last + 1]
        mine = "\n".join(lines) + "\n"
    target_file.write_text(mine, encoding="utf-8")
    return target_file, backup
