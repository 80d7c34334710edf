#!/usr/bin/env bash
# `make graders` (and `make test`, for tests/test_graders.py): nbgrader and Otter-Grader, the tools that
# `python -m transformer_course assignment` writes for, in .venv/graders. Not in .venv itself: both pull
# ipywidgets, which turns the notebooks' tqdm.auto progress bars into widgets and so changes the outputs
# `make notebooks` stores. .venv/graders sees .venv's packages after its own (a .pth adds .venv's
# site-packages), so PyTorch, the course and Jupyter are not installed twice: about 20 s and 280 MB, most
# of it playwright, which Otter's PDF export pulls. Use its Python for both tools and the command:
#   .venv/graders/bin/python -m transformer_course assignment --for nbgrader|otter OUT
set -euo pipefail
cd "$(dirname "$0")/.."
NBGRADER=nbgrader==0.9.6
OTTER=otter-grader==7.0.0
venv=.venv/graders
rm -rf "$venv"
.venv/bin/python -m venv "$venv"
purelib() { "$1" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"; }
echo "import site; site.addsitedir('$(purelib .venv/bin/python)')" > "$(purelib "$venv/bin/python")/zz_course_venv.pth"
pip() { "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"; }
version() { .venv/bin/python -c "import importlib.metadata as m; print(m.version('$1'))"; }
# What .venv has is not installed again; what the tools need beyond it (ipywidgets among it) goes here only
# (pip never uninstalls a package of .venv: it is outside this environment). Then their scripts and data
# in this venv too: nbgrader runs `alembic` by name, and its feedback needs nbconvert's templates (found
# under the running Python's prefix); the same versions as .venv's.
if ! { pip "$NBGRADER" "$OTTER" &&
       pip --no-deps --force-reinstall "$NBGRADER" "alembic==$(version alembic)" "nbconvert==$(version nbconvert)"; }; then
  # offline, say: make test goes on, and the tests of nbgrader and Otter say they are skipped (CI requires them)
  echo "warning: could not install $NBGRADER and $OTTER in $venv: their tests are skipped (make graders tries again)" >&2
  rm -rf "$venv"
  exit 0
fi
touch "$venv/.installed"
