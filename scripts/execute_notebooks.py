"""Run notebooks from their .py source and store the outputs in the paired .ipynb.

    python scripts/execute_notebooks.py                 # every chapter and solution notebook
    python scripts/execute_notebooks.py chapters/03_attention.py
    python scripts/execute_notebooks.py --no-execute    # only store the pairs as JupyterLab would
    python scripts/execute_notebooks.py --remeasure chapters/16_real_checkpoints.py

Each notebook runs top to bottom in a fresh kernel, in its own folder (as JupyterLab and
nbval run it); the seconds each one took are printed. A cell tagged ``measured`` (a timing) keeps
its committed output unless ``--remeasure`` is given; each measured cell whose output this run
changed, or would have changed, is listed (transformer_course_tools/authoring/measured.py).

The pair is then saved through Jupyter's own contents manager, with jupytext on it, exactly as
JupyterLab's server saves a notebook, and with the kernel's display name that JupyterLab writes
when it starts the kernel. So a learner who opens, runs and saves a chapter sees no change in
`git status` (tests/test_jupyter_roundtrip.py checks it).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
# This checkout's course, for this script and for the kernels it starts (they inherit the environment),
# even where another checkout is the one installed (a maintainer's second clone, a worktree).
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))

from transformer_course_tools.authoring.folds import fold  # noqa: E402 - after the path above
from transformer_course_tools.authoring.measured import keep_measured, measured_outputs  # noqa: E402
from transformer_course_tools.authoring.pairs import apply_carriage_returns  # noqa: E402

KERNEL = "python3"


def kernelspec() -> dict:
    """The notebook's kernelspec as JupyterLab writes it once the kernel has started."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec(KERNEL)
    return {"display_name": spec.display_name, "language": spec.language, "name": KERNEL}


@contextlib.contextmanager
def contents_manager() -> Iterator:
    """The contents manager of JupyterLab's server with jupytext (checkpoints kept out of the tree)."""
    from traitlets.config import Config

    with tempfile.TemporaryDirectory() as checkpoints:
        config = Config({"FileCheckpoints": {"checkpoint_dir": checkpoints}})
        yield jupytext.TextFileContentsManager(root_dir=str(ROOT), config=config)


def save_as_jupyter(notebook: nbformat.NotebookNode, ipynb: Path) -> None:
    """Write the .ipynb and its .py pair as JupyterLab's server does when the learner saves."""
    path = ipynb.resolve().relative_to(ROOT).as_posix()
    with contents_manager() as manager:
        manager.save({"type": "notebook", "content": notebook}, path)
        # Opening the notebook adds jupytext's settings to its metadata; a second save stores them.
        manager.save(manager.get(path), path)


def execute(source: Path, timeout: int = 900, remeasure: bool = False) -> tuple[float, list[str]]:
    """Run the notebook and store its pair: the seconds it took, and a line per measured cell whose
    output this run changed or would have changed (:func:`keep_measured`)."""
    notebook = open_as_jupyter(source)
    notebook.metadata["kernelspec"] = kernelspec()
    stored = source.with_suffix(".ipynb")  # its sources as last run: the notebook above has the .py's, maybe edited
    committed = measured_outputs(nbformat.read(stored, as_version=4)) if stored.exists() else {}
    start = time.perf_counter()
    NotebookClient(
        notebook, timeout=timeout, kernel_name=KERNEL, resources={"metadata": {"path": str(source.parent)}}
    ).execute()
    seconds = time.perf_counter() - start
    for cell in notebook.cells:  # keep the .ipynb diff small and stable
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = _merge_streams(cell.outputs)
    measured = keep_measured(notebook, committed, remeasure)
    fold(notebook)  # JupyterLab folds what the web edition folds
    nbformat.write(notebook, source.with_suffix(".ipynb"))
    save_as_jupyter(notebook, source.with_suffix(".ipynb"))
    return seconds, measured


def open_as_jupyter(source: Path) -> nbformat.NotebookNode:
    """The notebook as JupyterLab opens it: inputs from the .py; outputs and cell ids from the
    .ipynb where it exists (so unchanged cells keep their ids and the diff stays small)."""
    with contents_manager() as manager:
        return nbformat.from_dict(manager.get(source.resolve().relative_to(ROOT).as_posix())["content"])


def restore_metadata(source: Path) -> None:
    """Without running anything: open the pair and save it as JupyterLab would."""
    notebook = open_as_jupyter(source)
    notebook.metadata["kernelspec"] = kernelspec()
    fold(notebook)
    save_as_jupyter(notebook, source.with_suffix(".ipynb"))


def _merge_streams(outputs: list) -> list:
    """Join consecutive pieces of the same stream (one print can arrive in several pieces), as
    JupyterLab does when it shows and saves them."""
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
    for output in merged:
        if output.output_type == "stream":
            output.text = apply_carriage_returns(output.text)
    return merged


OPTIONS = ("--no-execute", "--remeasure")


def main(args: list[str]) -> int:
    run, remeasure = "--no-execute" not in args, "--remeasure" in args
    paths = [a for a in args if a not in OPTIONS]
    for path in paths:
        if path.startswith("-"):
            print(
                f"execute_notebooks: unknown option {path!r}; the options are {' and '.join(OPTIONS)}", file=sys.stderr
            )
            return 2
        if not Path(path).with_suffix(".py").is_file():
            print(f"execute_notebooks: no notebook source {Path(path).with_suffix('.py')}", file=sys.stderr)
            return 2
    sources = [Path(p).resolve() for p in paths] or sorted([*ROOT.glob("chapters/*.py"), *ROOT.glob("solutions/*.py")])
    for source in sources:
        if run:
            seconds, measured = execute(source.with_suffix(".py"), remeasure=remeasure)
            print(f"{seconds:7.1f} s  {source.relative_to(ROOT)}", flush=True)
            for line in measured:
                print(f"measured   {source.relative_to(ROOT)} {line}", flush=True)
        else:
            restore_metadata(source.with_suffix(".py"))
            print(f"saved      {source.relative_to(ROOT)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
