"""What a chapter's set-up cell switches on (``from transformer_course_tools.notebook.setup import setup_chapter``).

Importing the course changes nothing in Jupyter; a chapter (and an exercise notebook) asks for these
explicitly with ``setup_chapter("05")``, its chapter's number:

* your saved edits run: before each cell, IPython's ``autoreload`` reloads the course's files that
  changed, so re-running a cell after writing an exercise runs your new code (no restart);
* a file you saved that does not compile is said in one line (``transformer_course/attention.py does
  not compile (line 51: invalid syntax)``) and what to do, once, instead of autoreload's tracebacks;
* a cell that reaches an exercise you have not written yet stops with one short message: the
  exercise, the file to edit, a hint, and every exercise not written yet that it needs or that the
  chapter runs (the course's lock records which), in the order to write them. If your edit is saved
  but could not be loaded, it says so instead, and what to do. A chapter run as a plain script
  (``python chapters/05_encoder.py``) stops with the same message;
* the printing and plotting style the chapters are written with;
* tqdm's progress bars imported once, quietly (see :func:`import_progress_bars`).
"""

from __future__ import annotations

import ast
import os
import re
import sys
import types
import warnings
from pathlib import Path

from transformer_course_tools.course import PACKAGE, package_dir
from transformer_course_tools.exercises.checks.registry import EXERCISES, load_checks, parse_stub_message, writing_order
from transformer_course_tools.exercises.lock import chapter_exercises
from transformer_course_tools.exercises.saved import AGAIN, in_package, problem, said

RESTART = (
    "restart the kernel and run the notebook again (JupyterLab: Kernel → Restart Kernel and Run All Cells; "
    "Colab: Runtime → Restart session and run all)"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def setup_chapter(chapter: str | None = None) -> None:
    """Switch on reloading, the one-line word on a file that does not compile, the short stop message,
    and the chapters' printing and plotting style. ``chapter``: the notebook's chapter ("05"), whose
    stop then lists every unwritten exercise the chapter runs; None: the notebook's name says it where
    Jupyter gives it (JupyterLab, VS Code), the script's name when run as ``python chapters/05_….py``."""
    import matplotlib.pyplot as plt
    import torch

    shell = _shell()
    if shell is not None:
        reload_edited_files(shell)
        say_files_that_do_not_compile(shell)
        show_exercise_stubs_briefly(shell, chapter)
    else:
        stop_scripts_briefly(chapter)
    torch.set_printoptions(precision=3, sci_mode=False)
    plt.rcParams.update({"figure.dpi": 90, "axes.grid": False, "font.size": 10})
    import_progress_bars()


def import_progress_bars() -> None:
    """Import ``tqdm.auto`` once with its warning silenced. Without ipywidgets it warns on import (then
    falls back to a text bar, which is fine); PyTorch 2.3 imports it on a model's first optimizer step
    (through ``torch._dynamo``), which would put the warning in that cell's output."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import tqdm.auto  # noqa: F401


def _shell():  # noqa: ANN202 - IPython's InteractiveShell, or None outside IPython
    ipython = sys.modules.get("IPython")  # already imported in Jupyter; never imported just for this
    return ipython.get_ipython() if ipython is not None else None


def reload_edited_files(shell) -> None:  # noqa: ANN001 - IPython's InteractiveShell
    """IPython's ``%autoreload 2``: before each cell, reload every module whose file changed since it
    was loaded, and update the functions and classes other modules and the notebook already hold."""
    if "autoreload" not in shell.extension_manager.loaded:
        shell.extension_manager.load_extension("autoreload")
    shell.run_line_magic("autoreload", "2")


def say_files_that_do_not_compile(shell) -> None:  # noqa: ANN001 - IPython's InteractiveShell
    """Before each cell, ahead of autoreload: a loaded file of the learner's package saved with a syntax
    error is said in one line (once per saved version), and autoreload is told it failed already, so it
    leaves the file alone instead of printing its traceback twice. The kernel keeps the version it had."""
    seen: dict[str, float] = {}  # file → the modification time last compiled

    def before_cell(*_: object) -> None:
        reloader = _autoreloader(shell)
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if not path or not in_package(path) or not path.endswith(".py"):
                continue
            try:
                mtime = os.stat(path).st_mtime
            except OSError:
                continue
            if seen.get(path) == mtime:
                continue
            seen[path] = mtime
            line = problem(Path(path))
            if line is None:
                continue
            if reloader is not None:
                reloader.failed[path] = mtime  # autoreload's record of a failed reload (IPython 7 to 9)
            _ANNOUNCED[line] = shell.execution_count
            print(f"\x1b[1;31m✗ {line}: {AGAIN['cell']}.\x1b[0m This kernel keeps running the version it had.")

    callbacks = shell.events.callbacks["pre_run_cell"]
    for callback in list(callbacks):
        if getattr(callback, "_course_guard", False):
            callbacks.remove(callback)  # set up twice (a re-run set-up cell): one guard
    before_cell._course_guard = True
    callbacks.insert(0, before_cell)  # ahead of autoreload's own hook


_ANNOUNCED: dict[str, int] = {}  # a line said by the guard → the cell (execution count) it was said in


def said_in_this_cell(line: str) -> bool:
    """The guard said ``line`` before the cell now running (a check cell then adds nothing)."""
    shell = _shell()
    return shell is not None and _ANNOUNCED.get(line) == shell.execution_count


def _autoreloader(shell):  # noqa: ANN001, ANN202 - IPython's InteractiveShell and autoreload's ModuleReloader
    magics = getattr(shell, "magics_manager", None)
    autoreload = magics.registry.get("AutoreloadMagics") if magics is not None else None
    return getattr(autoreload, "_reloader", None)


def show_exercise_stubs_briefly(shell, chapter: str | None = None) -> None:  # noqa: ANN001 - IPython's shell
    """Show a cell that stops at an unwritten exercise as a short message, and one that imports a file of
    the learner's that does not compile as one line (the cell still fails, so "Run all" stops there);
    every other error is shown as usual."""

    def handler(shell, etype, value, tb, tb_offset=None):  # noqa: ANN001 - IPython's signature
        line = said(value, "cell")
        if line is not None:
            shell._showtraceback(etype, value, [f"\x1b[1;31m✗ {line}\x1b[0m"])
            return None
        stub = parse_stub_message(str(value)) if isinstance(value, NotImplementedError) else None
        if stub is None:
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
            return None
        shell._showtraceback(etype, value, stop_message(str(value), tb, chapter or running_chapter(shell)))
        return None

    shell.set_custom_exc((NotImplementedError, SyntaxError), handler)


def stop_scripts_briefly(chapter: str | None = None) -> None:
    """A chapter run as a plain script (``python chapters/05_encoder.py``) ends at an unwritten exercise,
    or at a file of the learner's that does not compile, with the notebook's short message, no traceback."""
    chapter = chapter or _chapter_of(sys.argv[0] if sys.argv else "")
    previous = sys.excepthook

    def hook(etype: type, value: BaseException, tb: types.TracebackType | None) -> None:
        line = said(value, "script")
        stub = parse_stub_message(str(value)) if isinstance(value, NotImplementedError) else None
        if line is None and stub is None:
            previous(etype, value, tb)
            return
        lines = [f"✗ {line}"] if line is not None else stop_message(str(value), tb, chapter, "script")
        print("\n".join(_ANSI.sub("", text) for text in lines), file=sys.stderr)

    sys.excepthook = hook


def running_chapter(shell) -> str | None:  # noqa: ANN001 - IPython's InteractiveShell
    """The chapter of the notebook that runs ("04" for chapters/04_….ipynb or exercises/ex04_….ipynb), as
    JupyterLab (``__session__``) or VS Code (``__vsc_ipynb_file__``) names it; None where neither does."""
    namespace = getattr(shell, "user_ns", {})
    return _chapter_of(namespace.get("__session__") or namespace.get("__vsc_ipynb_file__") or "")


def _chapter_of(path: str) -> str | None:
    match = re.match(r"(?:ex)?(\d\d)_\w+\.(?:ipynb|py)$", Path(str(path)).name)
    return match.group(1) if match else None


def stop_message(message: str, tb: types.TracebackType | None, chapter: str | None = None,
                 where: str = "cell") -> list[str]:  # fmt: skip
    """The lines shown when a cell stops at the stub that raised ``message`` (traceback ``tb``) in a
    notebook of ``chapter`` (None: unknown); ``where``: "cell", or "script" for a chapter run as one."""
    exercise_id, function, file, hint = parse_stub_message(message)
    frames = _frames(tb)
    running = Path(frames[-1].f_code.co_filename) if frames else package_dir().parent / file
    saved = _saved_state(running, message, where)
    if saved is not None:  # the file no longer holds this stub: the edit did not load
        return [f"\x1b[1;33m○ {exercise_id}: {saved}\x1b[0m"]
    lines = [f"\x1b[1;33m○ {exercise_id}: {function} is not written yet — the chapter stops here.\x1b[0m"]
    path = _public_path(frames[:-1])
    if path:
        where = _exercise_notebook(exercise_id)
        lines.append(
            f"This cell runs it through {' → '.join(path)}: it is exercise {exercise_id} of chapter "
            f"{exercise_id[2:4]}{f' (statement in {where})' if where else ''}."
        )
    load_checks()
    if exercise_id not in EXERCISES:
        return [*lines, f"Write it in {file} (hint: {hint})"]
    needed = writing_order(exercise_id)[:-1]
    runs = [i for i in chapter_exercises(chapter or "") if i in EXERCISES and i != exercise_id and i not in needed]
    order = list(dict.fromkeys(e for i in sorted({*needed, *runs, exercise_id}) for e in writing_order(i)))
    unwritten = [EXERCISES[i] for i in order if i != exercise_id and _not_written(EXERCISES[i])]
    if not unwritten:
        lines.append(f"Write it in {file} (hint: {hint})")
        checked = exercise_id
    else:
        lines.append(_still_to_write([ex for ex in unwritten if ex.id in needed],
                                     [ex for ex in unwritten if ex.id not in needed], chapter))  # fmt: skip
        lines += [f"  {i} {function} in {file} (hint: {hint})" if i == exercise_id else
                  f"  {i} {EXERCISES[i].qualname} in {EXERCISES[i].file}"
                  for i in order if i == exercise_id or EXERCISES[i] in unwritten]  # fmt: skip
        checked = " ".join(i for i in order if i == exercise_id or EXERCISES[i] in unwritten)
    again = "re-run this cell" if where == "cell" else "run the script again"
    lines += [
        f"Check: `python -m {PACKAGE} check {checked}` or `pytest -m {exercise_id}`; then {again}.",
        f"Stuck? `python -m {PACKAGE} restore {exercise_id}` puts the worked answer in.",
    ]
    return lines


def _frames(tb: types.TracebackType | None) -> list[types.FrameType]:
    """The frames of a traceback, from the cell to where it was raised."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def _public_path(frames: list[types.FrameType]) -> list[str]:
    """The public functions of the rooms on the way from the cell to the stub (helpers, lambdas
    and repeats left out): what a learner can look up."""
    path: list[str] = []
    for frame in frames:
        name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
        public = not any(
            part.startswith("<") or part.startswith("_") and not part.endswith("__") for part in name.split(".")
        )
        if public and _in_a_room(frame.f_code.co_filename) and name not in path[-1:]:
            path.append(name)
    return path


def _in_a_room(filename: str) -> bool:
    path = Path(filename).resolve()
    return path.parent == package_dir() and path.suffix == ".py"


def _exercise_notebook(exercise_id: str) -> str | None:
    found = sorted((package_dir().parent / "exercises").glob(f"ex{exercise_id[2:4]}_*.ipynb"))
    return f"exercises/{found[0].name}" if found else None


def _still_to_write(needed: list, runs: list, chapter: str | None) -> str:
    """The sentence before the list: what this exercise needs, and what else the chapter runs."""
    parts = [f"It needs {_listed(needed)}, not written yet either"] if needed else []
    if runs:
        parts.append(f"{'c' if parts else 'C'}hapter {chapter} also runs {_listed(runs)}, not written yet")
    return "; ".join(parts) + ". Write them in this order, then save:"


def _listed(exercises: list) -> str:
    ids = [ex.id for ex in exercises]
    return ids[0] if len(ids) == 1 else f"{', '.join(ids[:-1])} and {ids[-1]}"


def _not_written(ex) -> bool:  # noqa: ANN001 - an Exercise
    """Still a stub in the code that runs (a room that does not import counts as not written)."""
    try:
        return ex.is_stub()
    except Exception:  # noqa: BLE001 - a room being written may not import yet
        return True


def _saved_state(running: Path, message: str, where: str = "cell") -> str | None:
    """None while ``running`` (the file whose code raised) still holds the stub; otherwise what to
    do so that the saved edit runs."""
    line = problem(running)
    if line is not None:
        return f"{line}: {AGAIN[where]}."
    try:
        tree = ast.parse(running.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    if any(isinstance(node, ast.Constant) and node.value == message for node in ast.walk(tree)):
        return None
    return (
        f"your edit of {running.name} is saved, but this kernel still runs the stub it replaced (the file "
        "could not be reloaded: if an error of autoreload shows above, fix it and re-run this cell; "
        f"otherwise {RESTART})."
    )
