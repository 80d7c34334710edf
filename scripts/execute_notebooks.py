"""Run notebooks from their .py source and store the outputs in the paired .ipynb.

    python scripts/execute_notebooks.py                 # every chapter and solution notebook
    python scripts/execute_notebooks.py chapters/03_attention.py

Each notebook runs top to bottom in a fresh kernel, in its own folder (as JupyterLab and
nbval run it); the seconds each one took are printed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def execute(source: Path, timeout: int = 900) -> float:
    notebook = jupytext.read(source)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    start = time.perf_counter()
    NotebookClient(
        notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(source.parent)}}
    ).execute()
    seconds = time.perf_counter() - start
    for cell in notebook.cells:  # keep the .ipynb diff small and stable
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = _merge_streams(cell.outputs)
    nbformat.write(notebook, source.with_suffix(".ipynb"))
    jupytext.write(notebook, source, fmt="py:percent")  # normalise the .py so the pair is in sync
    return seconds


def _merge_streams(outputs: list) -> list:
    """Join consecutive pieces of the same stream (one print can arrive in several pieces)."""
    merged: list = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.output_type == "stream"
            and previous is not None
            and previous.output_type == "stream"
            and previous.name == output.name
        ):
            previous.text += output.text
        else:
            merged.append(output)
    return merged


def main(paths: list[str]) -> int:
    sources = [Path(p).resolve() for p in paths] or sorted([*ROOT.glob("chapters/*.py"), *ROOT.glob("solutions/*.py")])
    for source in sources:
        seconds = execute(source.with_suffix(".py"))
        print(f"{seconds:7.1f} s  {source.relative_to(ROOT)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
