"""A fresh virtual environment with no course in it, as on a new machine (tests/test_install.py,
tests/test_colab.py). Its dependencies (PyTorch and friends, pip and setuptools too) come from this
test run's own environment through a ``.pth`` line: no network, and no second copy of PyTorch."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path


def outside_env() -> dict[str, str]:
    """This process's environment without what points Python at this repository's environment."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def fresh_venv(folder: Path) -> Path:
    """Make a virtual environment in ``folder``; return its python."""
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(folder)], env=outside_env(), capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    python = folder / "bin" / "python"
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([str(python), "-c", code], env=outside_env(), capture_output=True, text=True).stdout.strip()
    (Path(site) / "course_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return python
