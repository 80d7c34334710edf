"""pytest's settings for every path of the clone, the notebooks included (``tests/conftest.py`` holds the
tests' own). nbval's kernels inherit this process's environment: with the clone first on ``PYTHONPATH``
they import this clone's course, not another one that happens to be installed (a second clone sharing
a virtual environment), as ``scripts/execute_notebooks.py`` and ``make notebooks`` do."""

import os
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent)
if ROOT not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
