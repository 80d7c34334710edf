"""Colab: the learner's own editable student edition, made once per Colab machine.

Every chapter and exercise notebook starts with the same cell (:func:`first_cell`; ``sync-links``
writes it). On Colab only, it clones the complete course into ``~/transformer-course`` (outside
the Files panel, so nobody edits it by mistake), then imports this module *from that clone* and
calls :func:`use_course`:

* an **exercise notebook** uses the learner's student edition (:func:`use_student_edition`): it
  makes it in ``/content/my-transformer`` (the Files panel shows it) unless an earlier notebook on
  this machine did, installs it with ``pip install -e`` (so ``!python -m transformer_course check``
  and every notebook started later import it), and makes the running kernel import it too (no
  restart needed);
* a **chapter** uses that same edition when this machine has one, so that it runs the learner's
  code; on a machine without one (Colab gives every notebook a new machine, unless the edition is
  kept in Google Drive with ``TRANSFORMER_COURSE_EDITION``) it runs the complete course, so that
  "Run all" on a GPU works from the badge, and says how to run it on one's own code instead.

This module runs before anything of the course is installed: it (and what it imports) uses the
standard library only.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from transformer_course_tools.course import PACKAGE, REPOSITORY_URL, TOOLS
from transformer_course_tools.exercises.hints import is_student_edition

EDITION = "/content/my-transformer"  # the learner's copy; TRANSFORMER_COURSE_EDITION overrides it
SOURCE = "~/transformer-course"  # where the first cell clones the complete course


def first_cell(url: str = REPOSITORY_URL, chapter: bool = False) -> str:
    """The first code cell of every chapter (``chapter=True``) and exercise notebook (tagged ``colab``)."""
    which = "yours if this machine has it, else the complete course" if chapter else f"{EDITION}, made once"
    return f'''import sys

if "google.colab" in sys.modules:  # Colab only: your own editable copy of the course, made once per machine
    import os
    import subprocess

    course = os.path.expanduser("{SOURCE}")  # the complete course, out of the Files panel's way
    if not os.path.isdir(course):
        url = "{url}"
        subprocess.run(["git", "clone", "-q", "--depth=1", url, course], check=True)
    sys.path.insert(0, course)
    from {TOOLS}.notebook.colab import use_course

    use_course(course, chapter={chapter})  # {which}'''


def use_course(source: str | os.PathLike, chapter: bool) -> Path:
    """What a notebook's first cell runs on Colab (see the module): the learner's student edition,
    or for a chapter on a machine without one, the complete course. Returns the folder used."""
    source = Path(source).resolve()
    if not chapter or is_student_edition(_edition()):
        return use_student_edition(source)
    if _imported_by_a_new_python() != source / PACKAGE:
        _run("pip", "install", "-q", "-e", str(source))
    print(
        f"This chapter runs the complete course ({source}): every exercise is written. To run it on your own "
        "code, open an exercise notebook first on this machine (its first cell makes your copy in "
        f"{EDITION}), or set TRANSFORMER_COURSE_EDITION to your copy kept in Google Drive."
    )
    return source


def _edition() -> Path:
    """Where the learner's student edition is (or will be) on this machine."""
    return Path(os.environ.get("TRANSFORMER_COURSE_EDITION", EDITION))


def use_student_edition(source: str | os.PathLike) -> Path:
    """Make (once), install (once) and import the student edition; return its folder."""
    source = Path(source).resolve()
    edition = _edition()
    if not is_student_edition(edition):
        if importlib.util.find_spec("jupytext") is None:  # reads the notebooks; not on Colab by default
            _run("pip", "install", "-q", "jupytext")
        _run(PACKAGE, "student-edition", str(edition), cwd=source)
    if _imported_by_a_new_python() != edition / PACKAGE:
        _run("pip", "install", "-q", "-e", str(edition))
    _import_from(edition, source)
    print(
        f"Your copy of the course: {edition} (Files panel, on the left: {edition.name}/{PACKAGE}/, one file per room).\n"
        "Write an exercise in its file there, save it (Ctrl+S), then re-run the cell: it runs your code. "
        f"Colab deletes these files when it recycles the machine: download {edition.name}/{PACKAGE}/ to keep your work."
    )
    return edition


def _run(module: str, *args: str, cwd: Path | None = None) -> None:
    """``python -m module args``, quietly; its output only if it fails."""
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"python -m {module} {' '.join(args)} failed:\n{(done.stdout + done.stderr)[-3000:]}")


def _imported_by_a_new_python() -> Path | None:
    """The package folder a Python started now would import (None: none)."""
    code = f"import importlib.util as u; s = u.find_spec({PACKAGE!r}); print(s.origin if s else '')"
    found = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True).stdout.strip()
    return Path(found).resolve().parent if found else None


def _import_from(edition: Path, source: Path) -> None:
    """From now on, this kernel imports the package from ``edition`` (not from ``source``)."""
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != source]
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    sys.path.insert(0, str(edition))
    importlib.invalidate_caches()
