"""Works from any install: a wheel of the package, installed in a fresh virtual environment and run
outside the course's repository, as after ``pip install git+URL``.

The fresh environment gets only the wheel (``--no-deps``); its dependencies come from this test's
own environment (tests/fresh_venv.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

from .fresh_venv import fresh_venv, outside_env

ROOT = Path(__file__).resolve().parent.parent
NEEDS_CLONE = "needs a clone of the course"


def _run(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = outside_env() | {"MPLBACKEND": "Agg", "TQDM_DISABLE": "1"}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the fresh environment's python, an empty working folder outside the repository)."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"  # build from a copy: the build must not write into the repository
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("transformer_course", "transformer_course_tools"):  # the learner's and the course's side
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    build = _run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
                  "-w", str(base / "dist"), "-q"], base)  # fmt: skip
    assert build.returncode == 0, build.stderr
    wheel = next((base / "dist").glob("transformer_course-*.whl"))
    python = fresh_venv(base / "venv")
    install = _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)], base)
    assert install.returncode == 0, install.stderr
    work = base / "work"
    work.mkdir()
    return python, work


def test_the_package_comes_from_the_wheel(installed) -> None:
    python, work = installed
    run = _run([str(python), "-c", "import transformer_course as t; print(t.__file__)"], work)
    assert run.returncode == 0 and "site-packages" in run.stdout and str(ROOT) not in run.stdout, (
        run.stdout + run.stderr
    )


def test_check_translate_train_and_evaluate_run(installed) -> None:
    python, work = installed
    course = [str(python), "-m", "transformer_course"]
    check = _run([*course, "check", "ex03_1", "ex09_3"], work)
    assert check.returncode == 0 and "2 passed" in check.stdout, check.stdout + check.stderr
    translate = _run([*course, "translate", "twenty-one"], work)
    assert translate.returncode == 0 and translate.stdout.strip() == "einundzwanzig", translate.stderr
    train = _run([*course, "train", "--task", "copy", "--steps", "3", "--out", "copy.pt", "--quiet"], work)
    assert train.returncode == 0 and '"steps": 3' in train.stdout, train.stderr
    evaluate = _run([*course, "evaluate", "copy.pt", "--task", "copy"], work)
    assert evaluate.returncode == 0 and '"task": "copy"' in evaluate.stdout, evaluate.stderr


def test_chapter_12_from_the_wheel(installed) -> None:
    """The sentence task, subword tokens and token batches work from a plain install; the wheel
    declares ``tokenizers`` (and offers ``datasets`` as an extra)."""
    python, work = installed
    code = "import importlib.metadata as m; print(m.requires('transformer-course'))"
    requires = _run([str(python), "-c", code], work).stdout
    assert "tokenizers<1,>=0.19" in requires and 'datasets>=2.19; extra == "datasets"' in requires, requires
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"TRANSFORMER_COURSE_PROFILE": "tiny", "TQDM_DISABLE": "1"}
    course = [str(python), "-m", "transformer_course"]
    train = subprocess.run([*course, "train", "--task", "sentences-en-de", "--steps", "2", "--out", "s.pt", "--quiet"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert train.returncode == 0 and '"world_size": 1' in train.stdout, train.stderr[-2000:]
    translate = _run([*course, "translate", "s.pt", "The dog sleeps."], work)
    assert translate.returncode == 0 and translate.stdout.count("\n") == 1, translate.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["student-edition", "out"],
        ["build-exercises"],
        ["grade", "submissions", "--out", "grades/report.csv"],
        ["sync-links"],
    ],  # fmt: skip
    ids=lambda c: c[0],
)
def test_commands_that_need_the_repository_say_so_in_one_line(installed, command: list[str]) -> None:
    python, work = installed
    run = _run([str(python), "-m", "transformer_course", *command], work)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.count("\n") == 1 and NEEDS_CLONE in run.stderr and "git clone" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and not (work / "out").exists() and not (work / "grades").exists()


def test_every_chapter_imports_what_it_needs_from_the_wheel(installed) -> None:
    python, work = installed
    cells = [next(c.source for c in jupytext.read(p).cells if "setup_chapter(" in c.source)
             for p in sorted((ROOT / "chapters").glob("*.py"))]  # fmt: skip
    script = work / "setup_cells.py"
    script.write_text("\n\n".join(cells) + "\nprint('all set-up cells ran')\n", encoding="utf-8")
    run = _run([str(python), str(script)], work)
    assert run.returncode == 0 and "all set-up cells ran" in run.stdout, run.stderr[-3000:]


def test_a_whole_chapter_runs_from_the_wheel(installed) -> None:
    """Chapter 06 (masks, the decoder, the whole model and its check cells): one of the chapters that
    train nothing, so this costs seconds (chapter 12 and every chapter's set-up are tested above)."""
    python, work = installed
    chapter = jupytext.read(ROOT / "chapters" / "06_decoder_and_masks.py")
    code = "\n\n".join(c.source for c in chapter.cells if c.cell_type == "code" and "google.colab" not in c.source)
    script = work / "chapter_06.py"
    script.write_text(code + "\nprint('chapter 06 ran to the end')\n", encoding="utf-8")
    run = _run([str(python), str(script)], work)
    assert run.returncode == 0 and "chapter 06 ran to the end" in run.stdout, run.stderr[-3000:]
