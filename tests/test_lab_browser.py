"""One chapter through JupyterLab in headless Chromium, as a learner runs it after `make lab`.

JupyterLab starts with the course's settings (jupyter-config/settings) on a copy of the chapters.
The browser opens chapter 01's .py file, which must open as a notebook; runs all cells in the
real kernel (outputs cleared first); then checks that no cell printed an error or to stderr, that the output area shows
the text stored in the committed notebook, that nbgrader's menu is absent, and that saving leaves
both files of the pair identical to the committed ones (up to the values nbval_sanitize.cfg
rewrites: a measured value differs from one machine to another). Screenshot: test-artifacts/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .browser import ROOT, chromium, free_port, screenshot
from .sanitize import sanitized

# In the student edition the chapter stops at the first exercise not yet written: not this test's case.
pytestmark = pytest.mark.complete_edition

CHAPTER = "chapters/01_embeddings"
TOKEN = "lab-browser-test"

# Starts the run and returns: a whole chapter may take minutes on a busy machine, longer than one
# WebDriver call may last (the client's 120 s); the test then polls until the run has ended.
RUN_ALL = """
const done = arguments[arguments.length - 1];
const app = window.jupyterapp;
app.commands.execute("notebook:clear-all-cell-outputs")  // what shows next comes from this run
  .then(() => { app.commands.execute("notebook:run-all-cells")
                  .then(() => { window.ranAll = "ran"; }, e => { window.ranAll = "failed: " + e; });
                done("started"); },
        e => done("failed: " + e));
"""

SAVE = """
const done = arguments[arguments.length - 1];
window.jupyterapp.commands.execute("docmanager:save").then(() => done("saved"), e => done("failed: " + e));
"""

SHOW_CHECK = """
const done = arguments[arguments.length - 1];
const notebook = window.jupyterapp.shell.currentWidget.content;
const index = notebook.widgets.findIndex(cell => cell.model.type === "code" &&
  JSON.stringify(cell.model.sharedModel.outputs || []).includes("ex01_1"));
const cell = notebook.widgets[Math.max(index - 1, 0)];
notebook.activeCellIndex = Math.max(index - 1, 0);
Promise.resolve(notebook.scrollToCell(cell, "start")).then(() => done(index), () => done(index));
"""

STATE = """
if (!window.jupyterapp || !window.jupyterapp.shell) return null;  // still loading
const panel = window.jupyterapp.shell.currentWidget;
const notebook = panel && panel.content;
if (!notebook || !notebook.widgets) return null;
const code = notebook.widgets.filter(cell => cell.model.type === "code");
return {
  notebook: panel.hasClass("jp-NotebookPanel"),
  cells: code.length,
  executed: code.filter(cell => cell.model.executionCount !== null).length,
  kernel: panel.sessionContext && panel.sessionContext.session && panel.sessionContext.session.kernel
    ? panel.sessionContext.session.kernel.status : "none",
  stderr: [...panel.node.querySelectorAll('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
    .map(node => node.textContent.slice(0, 300)),
  text: [...panel.node.querySelectorAll(".jp-OutputArea-output")].map(node => node.textContent).join("\\n"),
  menus: [...document.querySelectorAll(".lm-MenuBar-itemLabel")].map(node => node.textContent),
};
"""


def measured(cell: dict) -> bool:
    """A cell whose output is a measurement (a training run, a timing), which nbval does not compare."""
    return "nbval-ignore-output" in cell.get("metadata", {}).get("tags", [])


def as_nbval_compares(text: str, suffix: str) -> str:
    """A saved notebook as nbval compares it: measured outputs left out, the rest sanitized (a
    trained model differs from one CPU to another; what the chapter claims may not)."""
    if suffix == ".ipynb":
        notebook = json.loads(text)
        for cell in notebook["cells"]:
            if measured(cell):
                cell["outputs"] = []
            # a view state, not compared by nbval: JupyterLab shows the outputs of a cell it has just
            # run, so it drops a folded cell's outputs_hidden
            cell.get("metadata", {}).get("jupyter", {}).pop("outputs_hidden", None)
        text = json.dumps(notebook, indent=1, ensure_ascii=False)
    return sanitized(text)


def expected_lines() -> list[str]:
    """The first line of every stdout output stored in the committed notebook (measured ones aside)."""
    notebook = json.loads((ROOT / f"{CHAPTER}.ipynb").read_text(encoding="utf-8"))
    lines = []
    for cell in notebook["cells"]:
        for output in [] if measured(cell) else cell.get("outputs", []):
            if output.get("name") == "stdout":
                lines.append("".join(output["text"]).splitlines()[0])
    return lines


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "chapters", root / "chapters", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copy(ROOT / "jupytext.toml", root)
    port = free_port()
    command = [sys.executable, "-m", "jupyterlab", f"--port={port}", "--ip=127.0.0.1", "--no-browser"]
    command += [
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={TOKEN}",
        f"--LabApp.app_settings_dir={ROOT / 'jupyter-config' / 'settings'}",  # as `make lab`
        f"--LabApp.user_settings_dir={root / '.user-settings'}",  # not the tester's own settings
        f"--LabApp.workspaces_dir={root / '.workspaces'}",
        "--LabApp.expose_app_in_browser=True",  # lets the test call JupyterLab's commands
    ]
    if hasattr(os, "getuid") and os.getuid() == 0:
        command.append("--allow-root")
    log = open(root / "lab.log", "w")  # noqa: SIM115
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=5)
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail(f"jupyter lab did not start:\n{(root / 'lab.log').read_text()}")
            time.sleep(0.3)
    yield base, root
    server.terminate()
    server.wait(timeout=30)
    log.close()


def test_chapter_runs_in_jupyterlab(lab) -> None:
    base, root = lab
    with chromium() as driver:
        from selenium.webdriver.support.ui import WebDriverWait

        driver.set_script_timeout(300)
        driver.get(f"{base}/lab/tree/{CHAPTER}.py?token={TOKEN}")
        wait = WebDriverWait(driver, 120, poll_frequency=0.5)
        state = wait.until(lambda d: (s := d.execute_script(STATE)) and s["kernel"] == "idle" and s)
        assert state["notebook"], f"{CHAPTER}.py did not open as a notebook"
        assert "Nbgrader" not in state["menus"], "nbgrader's menu shows in the learner's JupyterLab"

        assert driver.execute_async_script(RUN_ALL) == "started"
        ran = WebDriverWait(driver, 900, poll_frequency=2).until(lambda d: d.execute_script("return window.ranAll"))
        assert ran == "ran", ran
        state = wait.until(lambda d: (s := d.execute_script(STATE)) and s["kernel"] == "idle" and s)
        assert state["executed"] == state["cells"] > 0
        assert not state["stderr"], f"error or stderr output: {state['stderr']}"
        shown = sanitized(state["text"])  # a measured value may differ on this machine, the claim may not
        missing = [line for line in map(sanitized, expected_lines()) if line not in shown]
        assert not missing, f"outputs not shown: {missing}"

        driver.execute_async_script(SHOW_CHECK)
        time.sleep(1)
        screenshot(driver, "lab-chapter-01.png")

        assert driver.execute_async_script(SAVE) == "saved"
    for suffix in (".py", ".ipynb"):
        saved, committed = ((folder / f"{CHAPTER}{suffix}").read_text(encoding="utf-8") for folder in (root, ROOT))
        assert as_nbval_compares(saved, suffix) == as_nbval_compares(committed, suffix), (
            f"running and saving changed {CHAPTER}{suffix}:\n{_diff(root, CHAPTER + suffix)}"
        )


def _diff(root: Path, relative: str) -> str:
    result = subprocess.run(
        ["git", "diff", "--no-index", "--stat", "-U1", str(ROOT / relative), str(root / relative)],
        capture_output=True,
        text=True,
    )
    return result.stdout[-3000:]
