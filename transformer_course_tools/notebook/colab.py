"""Colab: every notebook runs the learner's own editable student edition, kept in their Google Drive.

Every chapter and exercise notebook starts with the same cell (:func:`first_cell`; ``sync-links``
writes it). On Colab only, it clones the complete course into ``~/transformer-course`` (outside the
Files panel, so nobody edits it by mistake), then imports this module *from that clone* and calls
:func:`use_course`, which uses the learner's student edition (:func:`use_student_edition`):

* **where it is kept.** Colab gives each notebook a machine of its own, so the edition lives in the
  learner's Google Drive, which every machine can mount: ``MyDrive/my-transformer``. The first cell
  on a machine mounts the Drive (Colab asks for the permission once per machine; a machine that has
  it mounted already is not asked again). ``TRANSFORMER_COURSE_EDITION`` names another folder (and
  no Drive is mounted); without a Drive (refused, or none) the edition is made in
  ``/content/my-transformer``, on this machine only, and the cell says what that means;
* **made once**: the first notebook of a learner, a chapter or an exercise notebook, makes the
  edition there; every later notebook, on any machine, finds it;
* **installed on each machine** with ``pip install -e`` (so ``!python -m transformer_course check``
  imports it), and imported by the running kernel at once (no restart). A chapter then runs the
  learner's code and stops at the first exercise not written yet.

A step that fails (no network for the clone or pip, a Drive that cannot be read) ends the cell with
one line saying what to do, not a traceback. This module runs before anything of the course is
installed: it (and what it imports) uses the standard library only.
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

SOURCE = "~/transformer-course"  # where the first cell clones the complete course
NAME = "my-transformer"  # the learner's copy: MyDrive/my-transformer, else /content/my-transformer
EDITION_VARIABLE = "TRANSFORMER_COURSE_EDITION"  # a folder of the learner's choice instead
CONTENT_VARIABLE = "TRANSFORMER_COURSE_CONTENT"  # Colab's /content (a simulated Colab gives its own)


def first_cell(url: str = REPOSITORY_URL, chapter: bool = False) -> str:
    """The first code cell of every chapter (``chapter=True``) and exercise notebook (tagged ``colab``)."""
    return f'''import sys

if "google.colab" in sys.modules:  # Colab only: your own copy of the course, kept in your Google Drive
    import os
    import subprocess

    course = os.path.expanduser("{SOURCE}")  # the complete course, out of the Files panel's way
    if not os.path.isdir(course):
        url = "{url}"
        clone = subprocess.run(["git", "clone", "-q", "--depth=1", url, course], capture_output=True, text=True)
        if clone.returncode != 0:

            class CourseNotDownloaded(Exception):
                def _render_traceback_(self):  # shown as one line, not as a traceback
                    return [str(self)]

            why = (clone.stderr.strip().splitlines() or ["git failed"])[-1]
            raise CourseNotDownloaded(
                f"Could not download the course from {{url}} ({{why}}): connect to the internet, then run this cell again."
            )
    sys.path.insert(0, course)
    from {TOOLS}.notebook.colab import use_course

    use_course(course, chapter={chapter})  # your copy in your Google Drive (made by the first notebook you run)'''


class SetUpFailed(RuntimeError):
    """A step of the set-up failed; IPython shows the message as it is (one line, no traceback)."""

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


def use_course(source: str | os.PathLike, chapter: bool = False) -> Path:
    """What a notebook's first cell runs on Colab (see the module): the learner's student edition, made
    by the first notebook that needs it, chapter (``chapter=True``) or exercise notebook alike, and
    installed and imported here. Returns its folder."""
    return use_student_edition(source)


def _content() -> Path:
    return Path(os.environ.get(CONTENT_VARIABLE, "/content"))


def _edition() -> tuple[Path, str]:
    """Where the learner's student edition is (or will be), and a sentence on how long it is kept."""
    chosen = os.environ.get(EDITION_VARIABLE)
    if chosen:
        return Path(chosen), f"the folder {EDITION_VARIABLE} names"
    drive = _drive()
    if drive is not None:
        return drive / NAME, "in your Google Drive: every notebook you open finds it, on any Colab machine"
    local = _content() / NAME
    return local, (
        "on this Colab machine only, as your Google Drive is not mounted: a notebook opened later gets a new "
        f"machine and will not see it, and Colab deletes it when it recycles this one. Download {NAME}/{PACKAGE}/ "
        "to keep your work, or run this cell again and allow access to your Drive"
    )


def _drive() -> Path | None:
    """The learner's ``MyDrive``, mounted at Colab's ``/content/drive`` (asked for once per machine);
    None where it cannot be (refused, no Drive): the cell says what that means."""
    mount = _content() / "drive"
    mine = mount / "MyDrive"
    if mine.is_dir():
        return mine  # mounted by an earlier cell on this machine: not asked again
    try:
        from google.colab import drive

        drive.mount(str(mount))
    except Exception as error:  # noqa: BLE001 - refused, timed out, no Drive: the edition stays on this machine
        print(f"Your Google Drive is not mounted ({type(error).__name__}: {error}).")
        return None
    return mine if mine.is_dir() else None


def use_student_edition(source: str | os.PathLike) -> Path:
    """Make (once), install (once per machine) and import the student edition; return its folder."""
    source = Path(source).resolve()
    edition, kept = _edition()
    made = not is_student_edition(edition)
    if made:
        if importlib.util.find_spec("jupytext") is None:  # reads the notebooks; not on Colab by default
            _run("install jupytext", "pip", "install", "-q", "jupytext")
        _run(f"make your copy of the course in {edition}", PACKAGE, "student-edition", str(edition), cwd=source)
    if _imported_by_a_new_python() != edition.resolve() / PACKAGE:
        _run(f"install your copy of the course ({edition})", "pip", "install", "-q", "-e", str(edition))
    _import_from(edition, source)
    print(
        f"Your copy of the course{' (made now)' if made else ''}: {edition}, {kept}.\n"
        f"Its files are in the Files panel, on the left: {_shown(edition)}/{PACKAGE}/, one file per room. Write "
        "an exercise in its file there, save it (Ctrl+S), then re-run the cell: it runs your code, in every notebook."
    )
    return edition


def _shown(edition: Path) -> str:
    """The edition's folder as the Files panel shows it (relative to /content)."""
    try:
        return edition.relative_to(_content()).as_posix()
    except ValueError:
        return str(edition)


def _run(doing: str, module: str, *args: str, cwd: Path | None = None) -> None:
    """``python -m module args``, quietly; if it fails, :class:`SetUpFailed` saying what it was doing,
    the last line it printed and what to do."""
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        said = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        last = said[-1] if said else f"exit status {done.returncode}"
        raise SetUpFailed(
            f"Could not {doing}: {last[:300]}. If this runtime has no internet, connect it, then run this cell again."
        )


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
