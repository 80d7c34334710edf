"""Re-running a notebook keeps the committed output of a cell tagged ``measured`` (a timing) unless asked
(``--remeasure``), and lists each measured cell whose output the run changed or would have changed."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import nbformat
import pytest

from transformer_course_tools.authoring.measured import MEASURED, keep_measured, measured_outputs

ROOT = Path(__file__).resolve().parent.parent


def _notebook(printed: str, source: str = "print(time.perf_counter_ns())") -> nbformat.NotebookNode:
    measured = nbformat.v4.new_code_cell(source, metadata={"tags": [MEASURED]}, id="timing")
    measured.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    plain = nbformat.v4.new_code_cell("print(1)", id="plain")
    plain.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    return nbformat.v4.new_notebook(cells=[plain, measured])


def test_a_measured_output_is_kept_unless_asked_and_each_change_is_listed() -> None:
    committed = measured_outputs(_notebook("10.2 ms\n"))
    assert list(committed) == ["timing"], "only the tagged cell"
    run = _notebook("86.8 ms\n")
    assert keep_measured(run, committed) == [
        "cell 2: the committed measurement kept (this run's differs; --remeasure stores it)"
    ]
    assert run.cells[1].outputs[0].text == "10.2 ms\n"
    run = _notebook("86.8 ms\n")
    assert keep_measured(run, committed, remeasure=True) == [
        "cell 2: this run's measurement stored (it differs from the committed one)"
    ]
    assert run.cells[1].outputs[0].text == "86.8 ms\n"
    assert keep_measured(_notebook("10.2 ms\n"), committed) == [], "the same measurement: nothing to say"
    edited = _notebook("86.8 ms\n", source="print(time.perf_counter())")
    assert keep_measured(edited, committed) == ["cell 2: this run's output stored (a new or changed measured cell)"]
    assert edited.cells[1].outputs[0].text == "86.8 ms\n", "a changed cell is measured again"


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201 - the module
    """scripts/execute_notebooks.py, working on a course at ``tmp_path`` (its jupytext settings copied)."""
    spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    shutil.copy(ROOT / "jupytext.toml", tmp_path / "jupytext.toml")
    return module


def test_a_re_run_of_a_tiny_notebook_keeps_its_timing(script, tmp_path: Path) -> None:  # noqa: ANN001
    source = tmp_path / "tiny.py"
    source.write_text(
        '# %%\nprint("plain")\n\n# %% tags=["measured"]\n# NBVAL_IGNORE_OUTPUT\nimport time\n\nprint(time.perf_counter_ns())\n'
    )
    _, first = script.execute(source)
    assert first == ["cell 2: this run's output stored (a new or changed measured cell)"]
    stored = nbformat.read(source.with_suffix(".ipynb"), as_version=4).cells[1].outputs[0].text
    _, second = script.execute(source)
    assert second == ["cell 2: the committed measurement kept (this run's differs; --remeasure stores it)"]
    assert nbformat.read(source.with_suffix(".ipynb"), as_version=4).cells[1].outputs[0].text == stored
    _, third = script.execute(source, remeasure=True)
    assert third == ["cell 2: this run's measurement stored (it differs from the committed one)"]
    assert nbformat.read(source.with_suffix(".ipynb"), as_version=4).cells[1].outputs[0].text != stored
    source.write_text(source.read_text().replace("print(time.perf_counter_ns())", "print(-time.perf_counter_ns())"))
    _, edited = script.execute(source)  # the .py edited: its measured cell is measured again
    assert edited == ["cell 2: this run's output stored (a new or changed measured cell)"]
    assert nbformat.read(source.with_suffix(".ipynb"), as_version=4).cells[1].outputs[0].text.startswith("-")
    assert script.main(["--remeasure", "--no-such-option"]) == 2
