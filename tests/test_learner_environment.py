"""The learner's JupyterLab: settings shipped by `make lab`, nbgrader's UI off,
progress bars on stdout in notebooks, check marks that need no emoji font."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from transformer_course import training
from transformer_course_tools.exercises.checks.status import SYMBOLS

from .browser import ROOT

CONFIG = ROOT / "jupyter-config"


def test_py_chapters_open_as_notebooks_in_make_lab() -> None:
    overrides = json.loads((CONFIG / "settings" / "overrides.json").read_text())
    viewers = overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers["python"] == "Jupytext Notebook"
    assert "--LabApp.app_settings_dir=$(CURDIR)/jupyter-config/settings" in (ROOT / "Makefile").read_text()


def test_no_nbgrader_ui_is_offered() -> None:
    """nbgrader grades in a course folder of its own, from .venv/graders (README, "For instructors"): no
    target opens its formgrader here (it would write gradebook.db into the repository), no configuration
    turns it on."""
    assert "lab-instructor" not in (ROOT / "Makefile").read_text() + (ROOT / "README.md").read_text()
    assert not (CONFIG / "instructor").exists()


def test_nbgrader_is_off_in_the_learners_environment(monkeypatch) -> None:
    """What the Jupyter server and JupyterLab of this environment read (`make install` wrote it)."""
    pytest.importorskip("nbgrader")
    monkeypatch.delenv("JUPYTER_CONFIG_PATH", raising=False)
    from jupyter_core.paths import jupyter_config_path, jupyter_path
    from jupyter_server.extension.config import ExtensionConfigManager
    from jupyterlab_server.config import get_page_config

    extensions = ExtensionConfigManager(read_config_path=jupyter_config_path()).get_jpserver_extensions()
    nbgrader = {name: on for name, on in extensions.items() if name.startswith("nbgrader")}
    if not nbgrader:
        pytest.skip("nbgrader's Jupyter extensions are not installed here")
    assert not any(nbgrader.values()), f"nbgrader's server extensions are on: {nbgrader} (run make install)"
    disabled = get_page_config(jupyter_path("labextensions")).get("disabledExtensions", [])
    assert "@jupyter/nbgrader" in disabled, "nbgrader's JupyterLab extension is on (run make install)"


def test_progress_bar_goes_to_stdout_in_a_notebook(monkeypatch) -> None:
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    assert training._progress_file() is sys.stderr
    monkeypatch.setitem(sys.modules, "ipykernel", sys)  # as inside a Jupyter kernel
    assert training._progress_file() is sys.stdout


@pytest.mark.parametrize("status", sorted(SYMBOLS))
def test_check_symbol_is_text_not_emoji(status: str) -> None:
    symbol = SYMBOLS[status]
    assert len(symbol) == 1 and ord(symbol) < 0x2B00, f"{symbol!r} may need an emoji font"
    assert symbol not in "✅❌❎⏳⌛⌚⏰⚡✨❓❔❗❕➕➖➗", f"{symbol!r} is shown as an emoji by default"
    if shutil.which("fc-list"):  # fontconfig: the symbol is in DejaVu Sans Mono, Linux's usual monospace font
        fonts = subprocess.run(["fc-list", f":charset={ord(symbol):x}", "family"], capture_output=True, text=True)
        if "DejaVu" in subprocess.run(["fc-list"], capture_output=True, text=True).stdout:
            assert "DejaVu Sans Mono" in fonts.stdout, f"{symbol!r} is not in DejaVu Sans Mono"
