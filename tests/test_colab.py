"""Colab, simulated: one learner's notebooks, each opened from its badge on a machine of its own.

Colab gives every notebook a new machine. Each simulated machine is a fresh virtual environment
with no course in it (tests/fresh_venv.py), a home and a ``/content`` of its own, and a stand-in
``google.colab`` module that the kernel imports as Colab's: its ``drive.mount`` makes the mount
point's ``MyDrive`` lead to the learner's Google Drive, a folder that outlives the machines. The
repository is a local git repository holding this working tree, and the notebooks' first cells
clone it from a ``file://`` URL instead of GitHub (the only change made to them). pip gets no
index: everything the course needs is already there, as on Colab. The transcript of the cells
and what they showed is written to test-artifacts/colab-transcript.txt.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import jupytext
import pytest

from transformer_course_tools.course import REPOSITORY_URL
from transformer_course_tools.exercises.edition import restore_exercise
from transformer_course_tools.exercises.lock import LOCK

from .fresh_venv import fresh_venv, outside_env
from .kernel import kernel

pytestmark = pytest.mark.complete_edition  # it clones the complete course, as Colab does
ROOT = Path(__file__).resolve().parent.parent
TRANSCRIPT = ROOT / "test-artifacts" / "colab-transcript.txt"
STOP = "is not written yet — the chapter stops here"

# Colab's google.colab.drive, as far as the course uses it: mount(path) makes path/MyDrive the learner's
# Drive (here the folder $FAKE_DRIVE names); without one, the learner refused access.
FAKE_DRIVE = '''"""Stands in for Colab's drive module."""
import os


def mount(mountpoint):
    drive = os.environ.get("FAKE_DRIVE")
    if not drive:
        raise ValueError("mount failed: the learner did not allow access to Google Drive")
    os.makedirs(mountpoint, exist_ok=True)
    os.symlink(drive, os.path.join(mountpoint, "MyDrive"))
    print(f"Mounted at {mountpoint}")
'''


def fake_colab(folder: Path) -> Path:
    """A ``google.colab`` package (with ``drive``) in ``folder``; returns the folder for sys.path."""
    package = folder / "google" / "colab"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text('"""Stands in for Colab\'s module: its presence is what says "on Colab"."""\n')
    (package / "drive.py").write_text(FAKE_DRIVE)
    return folder


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The course's repository, as it is in this working tree (a local git repository)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed (the first cell clones the course with it)")
    origin = tmp_path_factory.mktemp("origin")
    listed = ["git", "ls-files", "--cached", "--others", "--exclude-standard"]
    for rel in subprocess.run(listed, cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines():
        if (ROOT / rel).is_file():  # (a file deleted in the working tree is listed until committed)
            (origin / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, origin / rel)
    git = ["git", "-c", "user.name=course", "-c", "user.email=course@example.org"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the course"]):
        subprocess.run([*git, *command], cwd=origin, check=True, capture_output=True)
    return origin


@pytest.fixture(scope="module")
def new_machine(tmp_path_factory: pytest.TempPathFactory, origin: Path) -> Callable[..., dict]:
    """A new Colab machine each call: its Python, its folders, and the kernel environment Colab would give;
    ``drive``: the learner's Google Drive (None: no access)."""
    fake = fake_colab(tmp_path_factory.mktemp("fake"))

    def machine(drive: Path | None) -> dict:
        base = tmp_path_factory.mktemp("machine")
        content, home = base / "content", base / "home"
        content.mkdir()
        home.mkdir()
        env = outside_env() | {
            "HOME": str(home),  # the first cell clones into ~/transformer-course
            "PYTHONPATH": str(fake),
            "TRANSFORMER_COURSE_CONTENT": str(content),  # Colab's /content
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "PIP_NO_INDEX": "1",  # no network here; Colab has one
            "PIP_NO_BUILD_ISOLATION": "0",  # pip's spelling of "off": setuptools comes from the environment
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "TQDM_DISABLE": "1",
        }
        env.pop("TRANSFORMER_COURSE_EDITION", None)
        if drive is not None:
            env["FAKE_DRIVE"] = str(drive)
        python = fresh_venv(base / "venv")
        env["PATH"] = f"{python.parent}:{env['PATH']}"  # `!python` in a cell is the kernel's Python, as on Colab
        return {"python": str(python), "content": content, "env": env, "base": base, "url": origin.as_uri()}

    return machine


class Transcript:
    lines: list[str] = []  # the whole module's story, in order

    def cell(self, lab, code: str, title: str) -> str:
        shown = lab.run(code)
        self.lines += [f"── {title}", *(f"   In │ {line}" for line in code.splitlines()),
                       *(f"  Out │ {line}" for line in shown.rstrip().splitlines()), ""]  # fmt: skip
        TRANSCRIPT.parent.mkdir(exist_ok=True)
        TRANSCRIPT.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        return shown


def cells(notebook: str, url: str) -> list[str]:
    """The notebook's code cells, its first cell cloning from ``url``."""
    sources = [c.source for c in jupytext.read(ROOT / notebook).cells if c.cell_type == "code"]
    assert REPOSITORY_URL in sources[0], f"{notebook}: the first code cell does not clone {REPOSITORY_URL}"
    return [sources[0].replace(REPOSITORY_URL, url), *sources[1:]]


def run_until_stop(log: Transcript, lab, sources: list[str]) -> str:
    """ "Run all" from the set-up cell on: the output of the cell that stops (or of the last one)."""
    for number, source in enumerate(sources, start=2):
        shown = log.cell(lab, source, f"code cell {number}")
        if STOP in shown or "Traceback" in shown:
            break
    return shown


def open_first_cell(log: Transcript, machine: dict, lab, first: str) -> str:
    log.cell(lab, "import google.colab  # Colab's runtime has it imported", "Colab")
    return log.cell(lab, first, "first cell")


@pytest.fixture(scope="module")
def drive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Google Drive of the learner whose first notebook is an exercise notebook."""
    return tmp_path_factory.mktemp("drive")


def test_first_notebook_an_exercise_notebook(new_machine, drive: Path) -> None:
    machine, log = new_machine(drive), Transcript()
    edition = drive / "my-transformer"
    exercises = cells("exercises/ex03_attention.py", machine["url"])
    check = next(c for c in exercises if c.strip() == 'check("ex03_1")')
    with kernel(machine["python"], machine["content"], machine["env"], machine["base"] / "k") as lab:
        log.lines.append("═══ exercises/ex03_attention.ipynb, the learner's first notebook, on a new Colab machine")
        assert "ModuleNotFoundError" in log.cell(lab, "import transformer_course", "before the first cell: no course")
        first = open_first_cell(log, machine, lab, exercises[0])
        assert "Traceback" not in first and "Mounted at" in first, first
        assert "Your copy of the course (made now): " in first and "in your Google Drive" in first, first
        assert (edition / ".student-edition.json").is_file(), "the edition is kept in the learner's Drive"
        assert "Traceback" not in log.cell(lab, exercises[1], "set-up cell")
        where = log.cell(lab, "import transformer_course\nprint(transformer_course.__file__)", "which course runs")
        assert Path(where.strip()).resolve().is_relative_to(edition.resolve()), where
        before = log.cell(lab, check, "check cell")
        assert "○ ex03_1" in before and "not implemented" in before, before
        restore_exercise(edition, "ex03_1", complete=ROOT)
        log.lines.append(
            "── (the learner writes attention_scores in drive/MyDrive/my-transformer/transformer_course/attention.py)\n"
        )
        after = log.cell(lab, check, "check cell, run again")
        assert "✓ ex03_1" in after and "passed" in after, after
        shell = log.cell(lab, "!python -m transformer_course check ex03_1 ex03_2", "a shell command")
        assert "ex03_1" in shell and "1 passed, 1 not implemented" in shell, shell


def test_a_second_notebook_on_a_new_machine_runs_the_same_edition(new_machine, drive: Path) -> None:
    """The chapter opened next gets a machine of its own: it finds the learner's edition in the Drive
    (not made again), installs it there, and runs the learner's ex03_1 up to the next unwritten exercise."""
    if not (drive / "my-transformer" / ".student-edition.json").is_file():
        pytest.skip("needs the edition of test_first_notebook_an_exercise_notebook")
    mark = drive / "my-transformer" / ".student-edition.json"
    made = mark.stat().st_mtime
    machine, log = new_machine(drive), Transcript()
    chapter = cells("chapters/03_attention.py", machine["url"])
    with kernel(machine["python"], machine["content"], machine["env"], machine["base"] / "k") as lab:
        log.lines.append("═══ chapters/03_attention.ipynb, opened next: a new machine, the same Google Drive")
        first = open_first_cell(log, machine, lab, chapter[0])
        assert "Traceback" not in first and "Your copy of the course: " in first and "(made now)" not in first, first
        assert mark.stat().st_mtime == made, "the edition was made again"
        assert "Traceback" not in log.cell(lab, chapter[1], "set-up cell")
        stopped = run_until_stop(log, lab, chapter[2:])
        assert f"ex03_2: apply_mask {STOP}" in stopped or f"ex03_3: scaled_dot_product_attention {STOP}" in stopped, (
            stopped
        )
        assert "ex03_1 attention_scores in" not in stopped, "the learner's ex03_1 is written: not listed"


def test_first_notebook_a_chapter(new_machine, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A chapter opened first makes the edition in the learner's Drive and runs the learner's code: it
    stops at the first unwritten exercise, naming every one the chapter needs."""
    drive = tmp_path_factory.mktemp("another-drive")
    machine, log = new_machine(drive), Transcript()
    chapter = cells("chapters/03_attention.py", machine["url"])
    with kernel(machine["python"], machine["content"], machine["env"], machine["base"] / "k") as lab:
        log.lines.append("═══ chapters/03_attention.ipynb, another learner's first notebook, on a new Colab machine")
        first = open_first_cell(log, machine, lab, chapter[0])
        assert "Traceback" not in first and "Your copy of the course (made now): " in first, first
        assert (drive / "my-transformer" / ".student-edition.json").is_file()
        assert "Traceback" not in log.cell(lab, chapter[1], "set-up cell")
        stopped = run_until_stop(log, lab, chapter[2:])
        assert f"ex03_3: scaled_dot_product_attention {STOP}" in stopped, stopped
        listed = [line.split()[0] for line in stopped.splitlines() if line.startswith("  ex")]
        assert listed == json.loads(LOCK.read_text())["chapters"]["03"], stopped  # every exercise chapter 03 runs


def test_no_network_is_one_line(new_machine, tmp_path_factory: pytest.TempPathFactory) -> None:
    machine, log = new_machine(None), Transcript()
    unreachable = (tmp_path_factory.mktemp("gone") / "nothing-here").as_uri()
    first = cells("chapters/01_embeddings.py", unreachable)[0]
    with kernel(machine["python"], machine["content"], machine["env"], machine["base"] / "k") as lab:
        log.lines.append("═══ chapters/01_embeddings.ipynb on a machine that cannot reach the course")
        shown = open_first_cell(log, machine, lab, first)
    assert shown.startswith(f"Could not download the course from {unreachable} ("), shown
    assert shown.rstrip().endswith("connect to the internet, then run this cell again.") and "Traceback" not in shown
    assert "CalledProcessError" not in shown and len(shown.strip().splitlines()) == 1, shown


def test_where_the_edition_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """In this process, with the stand-in module: the Drive (mounted once per machine), the folder the
    variable names, or, without Drive access, this machine's /content and a sentence saying what that means."""
    import importlib

    monkeypatch.syspath_prepend(str(fake_colab(tmp_path / "fake")))
    for name in [m for m in sys.modules if m == "google" or m.startswith("google.")]:
        monkeypatch.delitem(sys.modules, name)
    colab = importlib.import_module("transformer_course_tools.notebook.colab")
    content, drive = tmp_path / "content", tmp_path / "drive"
    content.mkdir()
    drive.mkdir()
    monkeypatch.setenv("TRANSFORMER_COURSE_CONTENT", str(content))
    monkeypatch.delenv("TRANSFORMER_COURSE_EDITION", raising=False)
    monkeypatch.delenv("FAKE_DRIVE", raising=False)
    where, kept = colab._edition()
    assert where == content / "my-transformer" and "on this Colab machine only" in kept
    assert "Your Google Drive is not mounted (ValueError: mount failed" in capsys.readouterr().out
    monkeypatch.setenv("FAKE_DRIVE", str(drive))
    assert colab._edition()[0] == content / "drive" / "MyDrive" / "my-transformer"
    assert colab._edition()[0] == content / "drive" / "MyDrive" / "my-transformer"  # mounted: not asked again
    assert capsys.readouterr().out.count("Mounted at") == 1
    monkeypatch.setenv("TRANSFORMER_COURSE_EDITION", str(tmp_path / "mine"))
    assert colab._edition()[0] == tmp_path / "mine"
