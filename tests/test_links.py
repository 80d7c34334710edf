"""The repository's URL is typed once (``REPOSITORY_URL``); every badge, every notebook's first
cell and the guides follow it, and ``sync-links`` brings them back in line when it changes."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

from transformer_course_tools.authoring.links import colab_badge, sync_links
from transformer_course_tools.course import REPOSITORY_URL
from transformer_course_tools.notebook.colab import first_cell

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p for folder in ("chapters", "solutions", "exercises") for p in (ROOT / folder).glob("*.py"))
# A GitHub repository named anywhere: on GitHub itself, or through Colab's GitHub loader.
REPOSITORY_NAMED = re.compile(r"(?:https://github\.com|colab\.research\.google\.com/github)/([\w.-]+/[\w.-]+)")


def _tracked_text_files() -> list[Path]:
    command = ["git", "ls-files", "--cached", "--others", "--exclude-standard"]
    listed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    suffixes = {".py", ".ipynb", ".md", ".toml", ".yml", ".cfg"}
    return [ROOT / rel for rel in listed if (ROOT / rel).suffix in suffixes and (ROOT / rel).is_file()]


def test_every_badge_first_cell_and_guide_follows_the_constant() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "transformer_course", "sync-links", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, f"run `python -m transformer_course sync-links`:\n{run.stdout}{run.stderr}"
    assert f"every badge, first cell and guide points to {REPOSITORY_URL}" in run.stdout


def test_the_url_is_typed_in_one_place() -> None:
    """Every repository the course's files name is the course's own, and only course.py types it:
    elsewhere it is generated (notebooks, guides) or read from the constant (code)."""
    own = REPOSITORY_URL.removeprefix("https://github.com/")
    generated = {*NOTEBOOKS, *(p.with_suffix(".ipynb") for p in NOTEBOOKS), ROOT / "README.md", ROOT / "AUTHORING.md"}
    for path in _tracked_text_files():
        text = path.read_text(encoding="utf-8")
        for named in REPOSITORY_NAMED.findall(text):
            assert named.removesuffix(".git") == own, f"{path.relative_to(ROOT)} names {named}, not {own}"
        if path.name != "course.py" and path not in generated:
            assert own not in text, f"{path.relative_to(ROOT)} types the URL: use REPOSITORY_URL"


@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_notebook_opens_with_its_badge_and_the_colab_cell(source: Path) -> None:
    notebook = jupytext.read(source)
    published = "exercises" if source.parent.name in ("solutions", "exercises") else "chapters"
    assert colab_badge(f"{published}/{source.stem}.ipynb") in notebook.cells[0].source
    first = next(c for c in notebook.cells if c.cell_type == "code")
    assert first.source == first_cell(chapter=published == "chapters") and first.metadata.get("tags") == ["colab"]


def test_a_new_url_reaches_every_badge_cell_and_guide(tmp_path: Path) -> None:
    for folder in ("chapters", "solutions", "exercises"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    for name in ("README.md", "AUTHORING.md", "jupytext.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    own = REPOSITORY_URL.removeprefix("https://github.com/")
    fork = REPOSITORY_URL.replace(own, "someone/their-course")
    changed = sync_links(tmp_path, url=fork)
    assert len(changed) == 2 * len([p for p in NOTEBOOKS if p.parent.name != "exercises"]) + 1  # and README.md
    for path in sorted(p for p in tmp_path.rglob("*") if p.is_file()):
        assert own not in path.read_text(encoding="utf-8"), f"{path.relative_to(tmp_path)} still names {own}"
    for py in sorted(tmp_path.glob("*/*.py")):
        first = next(c for c in jupytext.read(py.with_suffix(".ipynb")).cells if c.cell_type == "code")
        chapter = py.parent.name == "chapters"
        assert first.source == first_cell(fork, chapter) and "someone/their-course/blob/main/" in py.read_text(
            encoding="utf-8"
        )
    assert f"git+{fork}" in (tmp_path / "README.md").read_text(encoding="utf-8")
    assert not sync_links(tmp_path, url=fork), "a second run changes nothing"


def test_a_url_colab_cannot_open_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^Colab opens notebooks from GitHub: .* got https://gitlab.com/x/y$"):
        colab_badge("chapters/01_embeddings.ipynb", "https://gitlab.com/x/y")


def test_the_readme_lists_every_chapter_once_in_number_order() -> None:
    """The README's table of chapters has one row per chapter notebook, linked, in number order
    (a chapter split in two got its second row: chapter 14 once went missing)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[(\d\d) [^\]]+\]\(chapters/(\d\d)_\w+\.ipynb\)", readme, flags=re.MULTILINE)
    chapters = sorted(p.stem[:2] for p in (ROOT / "chapters").glob("[0-9][0-9]_*.py"))
    assert all(number == linked for number, linked in rows), rows
    assert [number for number, _ in rows] == chapters
