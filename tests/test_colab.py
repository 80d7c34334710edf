"""Colab, simulated: a chapter and an exercise notebook opened from their badges on a new machine.

The machine is a fresh virtual environment with no course in it (tests/fresh_venv.py), a fake
``google.colab`` module imported by the kernel as Colab's is, and a home and a ``/content`` of its
own. The repository is a local git repository holding this working tree, and the notebooks' first
cells clone it from a ``file://`` URL instead of GitHub (the only change made to them). pip gets
no index: everything the course needs is already there, as on Colab. The transcript of the cells
and what they showed is written to test-artifacts/colab-transcript.txt.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import jupytext
import pytest

from transformer_course_tools.course import REPOSITORY_URL
from transformer_course_tools.exercises.edition import restore_exercise

from .fresh_venv import fresh_venv, outside_env
from .kernel import kernel

pytestmark = pytest.mark.complete_edition  # it clones the complete course, as Colab does
ROOT = Path(__file__).resolve().parent.parent
TRANSCRIPT = ROOT / "test-artifacts" / "colab-transcript.txt"


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A Colab machine: its Python, its folders, and the kernel environment Colab would give."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed (the first cell clones the course with it)")
    base = tmp_path_factory.mktemp("colab")
    origin = base / "origin"  # the course's repository, as it is in this working tree
    listed = ["git", "ls-files", "--cached", "--others", "--exclude-standard"]
    for rel in subprocess.run(listed, cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines():
        if (ROOT / rel).is_file():  # (a file deleted in the working tree is listed until committed)
            (origin / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, origin / rel)
    git = ["git", "-c", "user.name=course", "-c", "user.email=course@example.org"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the course"]):
        subprocess.run([*git, *command], cwd=origin, check=True, capture_output=True)
    fake = base / "fake" / "google" / "colab"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text("")
    (fake / "__init__.py").write_text('"""Stands in for Colab\'s module: its presence is what says "on Colab"."""\n')
    content, home = base / "content", base / "home"
    content.mkdir()
    home.mkdir()
    env = outside_env() | {
        "HOME": str(home),  # the first cell clones into ~/transformer-course
        "PYTHONPATH": str(fake.parent.parent),
        "TRANSFORMER_COURSE_EDITION": str(content / "my-transformer"),  # /content/my-transformer on Colab
        "PIP_NO_INDEX": "1",  # no network here; Colab has one
        "PIP_NO_BUILD_ISOLATION": "0",  # pip's spelling of "off": setuptools comes from the environment
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "TQDM_DISABLE": "1",
    }
    python = fresh_venv(base / "venv")
    env["PATH"] = f"{python.parent}:{env['PATH']}"  # `!python` in a cell is the kernel's Python, as on Colab
    return {"python": str(python), "content": content, "env": env, "base": base, "url": origin.as_uri()}


class Transcript:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def cell(self, lab, code: str, title: str) -> str:
        shown = lab.run(code)
        self.lines += [f"── {title}", *(f"   In │ {line}" for line in code.splitlines()),
                       *(f"  Out │ {line}" for line in shown.rstrip().splitlines()), ""]  # fmt: skip
        return shown


def cells(notebook: str, url: str) -> list[str]:
    """The notebook's code cells, its first cell cloning from ``url``."""
    sources = [c.source for c in jupytext.read(ROOT / notebook).cells if c.cell_type == "code"]
    assert REPOSITORY_URL in sources[0], f"{notebook}: the first code cell does not clone {REPOSITORY_URL}"
    return [sources[0].replace(REPOSITORY_URL, url), *sources[1:]]


def test_a_chapter_and_an_exercise_notebook_on_colab(machine: dict) -> None:
    content, env, url = machine["content"], machine["env"], machine["url"]
    edition = content / "my-transformer"
    log = Transcript()
    chapter = cells("chapters/03_attention.py", url)
    with kernel(machine["python"], content, env, machine["base"] / "k1") as lab:
        log.lines.append("═══ chapters/03_attention.ipynb, opened from its badge on a new Colab machine")
        assert "ModuleNotFoundError" in log.cell(lab, "import transformer_course", "before the first cell: no course")
        log.cell(lab, "import google.colab  # Colab's runtime has it imported", "Colab")
        first = log.cell(lab, chapter[0], "first cell (no copy of yours on this machine: the complete course)")
        assert "Traceback" not in first and "This chapter runs the complete course" in first, first
        assert "Traceback" not in log.cell(lab, chapter[1], "set-up cell")
        where = log.cell(lab, "import transformer_course\nprint(transformer_course.__file__)", "which course runs")
        assert "transformer-course" in where and "my-transformer" not in where, where
        shown = log.cell(lab, chapter[2], "code cell 3")
        assert "Traceback" not in shown and "the chapter stops here" not in shown, shown
    assert not edition.exists(), "a chapter alone makes no student edition"

    exercises = cells("exercises/ex03_attention.py", url)
    check = next(c for c in exercises if c.strip() == 'check("ex03_1")')
    with kernel(machine["python"], content, env, machine["base"] / "k2") as lab:
        log.lines.append("═══ exercises/ex03_attention.ipynb, opened next on the same machine")
        log.cell(lab, "import google.colab  # Colab's runtime has it imported", "Colab")
        first = log.cell(lab, exercises[0], "first cell (makes your copy)")
        assert "Traceback" not in first and f"Your copy of the course: {edition}" in first, first
        assert "Traceback" not in log.cell(lab, exercises[1], "set-up cell")
        before = log.cell(lab, check, "check cell")
        assert "○ ex03_1" in before and "not implemented" in before and "my-transformer" not in before, before
        restore_exercise(edition, "ex03_1", complete=ROOT)
        log.lines.append(
            f"── (the learner writes attention_scores in {edition.name}/transformer_course/attention.py)\n"
        )
        after = log.cell(lab, check, "check cell, run again")
        assert "✓ ex03_1" in after and "passed" in after, after
        shell = log.cell(lab, "!python -m transformer_course check ex03_1 ex03_2", "a shell command")
        assert "ex03_1" in shell and "1 passed, 1 not implemented" in shell, shell
    made = (edition / ".student-edition.json").stat().st_mtime

    with kernel(machine["python"], content, env, machine["base"] / "k3") as lab:
        log.lines.append("═══ chapters/03_attention.ipynb again, on the same machine: now it runs your copy")
        log.cell(lab, "import google.colab  # Colab's runtime has it imported", "Colab")
        first = log.cell(lab, chapter[0], "first cell (your copy exists: reused)")
        assert "Traceback" not in first and f"Your copy of the course: {edition}" in first, first
        assert (edition / ".student-edition.json").stat().st_mtime == made, "the edition was made again"
        assert "Traceback" not in log.cell(lab, chapter[1], "set-up cell")
        for number, source in enumerate(chapter[2:], start=3):  # "Run all" goes on to the first stop
            shown = log.cell(lab, source, f"code cell {number}")
            if "the chapter stops here" in shown:
                break
        assert "ex03_3: scaled_dot_product_attention is not written yet — the chapter stops here" in shown, shown
        assert "It needs ex03_2, not written yet either" in shown, shown
    TRANSCRIPT.parent.mkdir(exist_ok=True)
    TRANSCRIPT.write_text("\n".join(log.lines) + "\n", encoding="utf-8")
    print("\n".join(log.lines))
