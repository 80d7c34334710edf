"""Opening and saving a notebook in JupyterLab changes nothing on disk.

A real Jupyter server (with jupytext, as `make lab` runs it) serves a copy of the notebooks. Each
one is opened and saved through the server's contents API, as JupyterLab does, after setting the
kernelspec as JupyterLab does once the kernel has started; then the files are compared with the
committed ones byte for byte. The .py chapters are opened as notebooks too (double-click in
`make lab`), and a module of the course package must come back unchanged as well.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .browser import ROOT, free_port

TOKEN = "roundtrip"
OPENED = sorted(
    str(p.relative_to(ROOT))
    for p in [*ROOT.glob("chapters/*.ipynb"), *ROOT.glob("chapters/*.py"), *ROOT.glob("exercises/*.ipynb")]
)
MODULE = "transformer_course/attention.py"


def jupyter_server(root: Path, port: int, *extra: str) -> subprocess.Popen:
    """Start `jupyter server` (no browser) on localhost; the caller stops it."""
    command = [sys.executable, "-m", "jupyter_server", f"--port={port}", "--ip=127.0.0.1", "--no-browser"]
    command += [f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={TOKEN}", *extra]
    if hasattr(os, "getuid") and os.getuid() == 0:
        command.append("--allow-root")
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            api(port, "GET", "status")
            return server
        except (urllib.error.URLError, ConnectionError):
            if server.poll() is not None:
                raise RuntimeError(f"jupyter server stopped:\n{server.stderr.read()}") from None
            time.sleep(0.3)
    server.terminate()
    raise RuntimeError("jupyter server did not start in 60 s")


def api(port: int, method: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"{}")


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """The notebooks, their jupytext settings and one package module, in a folder of their own."""
    root = tmp_path_factory.mktemp("lab")
    for folder in ("chapters", "exercises"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copy(ROOT / "jupytext.toml", root)
    (root / "transformer_course").mkdir()
    for name in ("jupytext.toml", Path(MODULE).name):
        shutil.copy(ROOT / "transformer_course" / name, root / "transformer_course")
    return root


@pytest.fixture(scope="module")
def port(copy: Path):
    port = free_port()
    server = jupyter_server(copy, port)
    yield port
    server.terminate()
    server.wait(timeout=30)


def open_and_save(port: int, path: str) -> None:
    model = api(port, "GET", f"contents/{path}?type=notebook&content=1")
    notebook = model["content"]
    spec = api(port, "GET", "kernelspecs")
    default = spec["kernelspecs"][spec["default"]]["spec"]
    notebook["metadata"]["kernelspec"] = {
        "display_name": default["display_name"],
        "language": default["language"],
        "name": spec["default"],
    }
    api(port, "PUT", f"contents/{path}", {"type": "notebook", "format": "json", "content": notebook})


def changed(copy: Path, relative: str) -> list[str]:
    """The files of the pair (or the module) that differ from the repository's."""
    stem = Path(relative).with_suffix("")
    candidates = [relative] if relative == MODULE else [f"{stem}.ipynb", f"{stem}.py"]
    return [c for c in candidates if (copy / c).read_bytes() != (ROOT / c).read_bytes()]


@pytest.mark.parametrize("path", OPENED)
def test_open_and_save_changes_nothing(path: str, copy: Path, port: int) -> None:
    open_and_save(port, path)
    assert not changed(copy, path), (
        f"saving {path} in JupyterLab rewrites {changed(copy, path)}: "
        "run `python scripts/execute_notebooks.py --no-execute` and commit the result"
    )


def test_a_package_module_opened_as_notebook_comes_back_unchanged(copy: Path, port: int) -> None:
    open_and_save(port, MODULE)
    assert not changed(copy, MODULE), "jupytext rewrote a module of the course package"
    assert not (copy / Path(MODULE).with_suffix(".ipynb")).exists()
