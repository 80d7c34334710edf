"""Chapters 15 and 16 without ``transformers`` and ``sentencepiece`` (the ``hub`` extra): each runs up to
the first cell that needs them, which stops with one line saying what to install; no traceback."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import jupytext
import pytest

from transformer_course_tools.models.hub import PIP_HINT, MissingPackages, require_packages

from .kernel import kernel

ROOT = Path(__file__).resolve().parent.parent
HIDDEN = "import sys\nsys.modules['transformers'] = sys.modules['sentencepiece'] = None  # as if not installed\n"


def test_require_packages_names_what_is_missing_in_one_line(monkeypatch) -> None:
    from transformer_course_tools.models import hub

    monkeypatch.setitem(sys.modules, "transformers", None)
    monkeypatch.setitem(sys.modules, "sentencepiece", None)
    try:
        require_packages("this part")
    except MissingPackages as error:
        assert str(error) == f"this part needs transformers and sentencepiece, not installed here: {PIP_HINT}"
        assert error._render_traceback_() == [str(error)]  # what a notebook shows: the line alone
    else:
        raise AssertionError("require_packages accepted a missing sentencepiece")
    assert hub._importable("torch") and not hub._importable("transformer_course_no_such_package")


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("15_real_weights.py", "Chapter 15 from here on (transformers' own models, beside ours)"),
        ("16_real_checkpoints.py", "Chapter 16 from here on (real tokenizers and engines)"),
    ],
)
def test_the_chapter_stops_in_one_line_where_it_needs_transformers(tmp_path: Path, source: str, what: str) -> None:
    cells = [c.source for c in jupytext.read(ROOT / "chapters" / source).cells if c.cell_type == "code"]
    env = {**os.environ, "TQDM_DISABLE": "1", "MPLBACKEND": "agg"}
    with kernel(sys.executable, ROOT / "chapters", env, tmp_path) as running:
        running.run(HIDDEN)
        for index, source_code in enumerate(cells):
            shown = running.run(source_code)
            if "require_packages(" in source_code:
                break
            assert "Error" not in shown and "Traceback" not in shown, f"code cell {index}: {shown}"
    assert index >= 3, "the set-up cell and the map run first"  # colab cell, set-up, map, then the stop
    assert shown.strip().splitlines() == [
        f"{what} needs transformers and sentencepiece, not installed here: {PIP_HINT}"
    ], shown
