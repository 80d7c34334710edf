"""The repository's URL, written out wherever a notebook or a guide needs it (``sync-links``).

``REPOSITORY_URL`` in ``course.py`` is the one place the URL is typed. This module rewrites from it:

* each chapter's and exercise notebook's "Open in Colab" badge (title cell) and its first code
  cell, tagged ``colab`` (:func:`~.colab.first_cell`), in ``chapters/`` and ``solutions/`` (then
  ``exercises/`` is regenerated from ``solutions/``);
* the ``git+URL`` / ``git clone URL`` mentions of the guides (README.md, AUTHORING.md).

Code that needs the URL (the ``restore`` message, ``NeedsClone``, the web edition's buttons) reads
the constant itself. Only the two cells of each notebook change: outputs and cell ids stay.
"""

from __future__ import annotations

import re
from pathlib import Path

from transformer_course_tools.course import REPOSITORY_URL
from transformer_course_tools.notebook.colab import first_cell

BRANCH = "main"  # the branch Colab opens notebooks from
BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
_BADGE = re.compile(r"\[!\[Open In Colab\]\(" + re.escape(BADGE_IMAGE) + r"\)\]\([^)\s]*\)")
_GITHUB = re.compile(r"https://github\.com/([\w.-]+/[\w.-]+?)(?:\.git)?/?")
_GIT_URL = re.compile(r"(git\+|git clone )https?://[^\s`'\")]+")
COLAB_TAG = "colab"
GUIDES = ("README.md", "AUTHORING.md")


def colab_badge(path: str, url: str = REPOSITORY_URL) -> str:
    """The markdown badge that opens ``path`` (relative to the repository) in Colab."""
    match = _GITHUB.fullmatch(url)
    if match is None:
        raise ValueError(
            f"Colab opens notebooks from GitHub: REPOSITORY_URL must be https://github.com/<owner>/<name>, got {url}"
        )
    return f"[![Open In Colab]({BADGE_IMAGE})](https://colab.research.google.com/github/{match.group(1)}/blob/{BRANCH}/{path})"


def sync_links(root: Path, url: str = REPOSITORY_URL, write: bool = True) -> list[Path]:
    """Bring every badge, first cell and guide of the course at ``root`` in line with ``url``;
    return the files that changed (with ``write=False``: that would change, nothing is written)."""
    import jupytext

    from transformer_course_tools.exercises.edition import write_exercises

    from .pairs import write_pair

    changed = []
    for folder, published in (("chapters", "chapters"), ("solutions", "exercises")):
        for py in sorted((root / folder).glob("*.py")):
            notebook = jupytext.read(py)
            cell = first_cell(url, chapter=folder == "chapters")
            if _sync_notebook(notebook, colab_badge(f"{published}/{py.stem}.ipynb", url), cell):
                changed += [py, py.with_suffix(".ipynb")]
                if write:
                    write_pair(notebook, py)
    for name in GUIDES:
        guide = root / name
        text = guide.read_text(encoding="utf-8")
        synced = _sync_guide(text, url)
        if synced != text:
            changed.append(guide)
            if write:
                guide.write_text(synced, encoding="utf-8")
    if write and any(path.parent.name == "solutions" for path in changed):
        write_exercises(root / "solutions", root / "exercises")
    return changed


def _sync_notebook(notebook, badge: str, cell_source: str) -> bool:  # noqa: ANN001 - an nbformat notebook
    """Put ``badge`` in the title cell and ``cell_source`` in the first code cell (tagged colab, made
    if missing). True if anything changed."""
    from nbformat.v4 import new_code_cell

    before = [cell.source for cell in notebook.cells]
    title = next(cell for cell in notebook.cells if cell.cell_type == "markdown")
    if _BADGE.search(title.source):
        title.source = _BADGE.sub(lambda _: badge, title.source, count=1)
    else:
        heading, _, rest = title.source.partition("\n")
        title.source = f"{heading}\n\n{badge}\n{rest}" if rest else f"{heading}\n\n{badge}"
    code = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    if code and COLAB_TAG in notebook.cells[code[0]].metadata.get("tags", []):
        notebook.cells[code[0]].source = cell_source
    else:
        at = code[0] if code else len(notebook.cells)
        notebook.cells.insert(at, new_code_cell(cell_source, metadata={"tags": [COLAB_TAG]}))
    return [cell.source for cell in notebook.cells] != before


def _sync_guide(text: str, url: str) -> str:
    """The guide with every ``git+URL`` / ``git clone URL`` pointing at ``url``."""
    return _GIT_URL.sub(lambda m: m.group(1) + url, text)
