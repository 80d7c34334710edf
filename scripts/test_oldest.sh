#!/usr/bin/env bash
# `make test-oldest`: the course on the oldest versions pyproject.toml declares, from nothing.
# Creates .venv-oldest with the lowest Python that `requires-python` allows and the floors of the
# dependencies (tests/oldest/constraints.txt), then runs the unit tests and the chapters whose code
# depends on the version of PyTorch there (03: attention's fused kernels, 07: training and its claims,
# 10 and 15: torch.nn.RMSNorm and enable_gqa where they exist, and the language model trained with
# them), and chapters 15 and 16 with chapter 15's exercises, whose converters and tokenizers meet the
# oldest transformers the hub extra allows.
# `--unit` (`make test-oldest-unit`, what CI runs last): the unit tests only, ~13 minutes on a 2-core
# machine with the install (the chapters are ~10 more).
# Downloads: PyTorch's oldest supported release exists on PyPI only as a CUDA build (~3 GB with its
# NVIDIA packages); it runs on the CPU.
set -euo pipefail
chapters=yes
case "${1:-}" in
  "") ;;
  --unit) chapters=no ;;
  *) echo "error: test_oldest.sh takes no argument or --unit (the unit tests only), got '$1'" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
want=$(sed -n 's/^requires-python = ">=\([0-9.]*\)".*/\1/p' pyproject.toml)
is_wanted() {  # does "$1" run, as Python $want?
  [ -n "$1" ] && "$1" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$want'.split('.'))))" 2>/dev/null
}
python=${PYTHON_OLDEST:-}
if [ -z "$python" ]; then
  for candidate in "$(command -v "python$want" || true)" \
      "$(command -v pyenv >/dev/null && pyenv versions --bare | grep -E "^$want(\.|$)" | sort -V | tail -1 \
         | xargs -r pyenv prefix 2>/dev/null)/bin/python$want"; do
    if is_wanted "$candidate"; then python=$candidate; break; fi
  done
fi
if ! is_wanted "$python"; then
  echo "error: test-oldest needs Python $want (the floor of requires-python): install it (pyenv install $want) or set PYTHON_OLDEST=/path/to/python$want" >&2
  exit 2
fi
venv=.venv-oldest
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -c tests/oldest/constraints.txt -e ".[dev]"
"$venv/bin/python" - <<'PY'
import sys, torch, numpy
print(f"oldest environment: Python {sys.version.split()[0]}, torch {torch.__version__}, numpy {numpy.__version__}")
PY
# the unit tests, one worker per core (not the browser, Jupyter-server, wheel or Colab tests: they
# test the tools around the course, not the versions of PyTorch and Python), then three chapters
# through nbval in one process at the default thread count, as a learner's kernel runs them
PYTHON="$venv/bin/python" bash scripts/run_tests.sh tests -q -x -p no:cacheprovider \
  --ignore=tests/test_book.py --ignore=tests/test_lab_browser.py --ignore=tests/test_install.py \
  --ignore=tests/test_colab.py --ignore=tests/test_jupyter_roundtrip.py --ignore=tests/test_learner_environment.py \
  --ignore=tests/test_nbgrader_compat.py --ignore=tests/test_graders_nbgrader.py --ignore=tests/test_graders_otter.py \
  --deselect "tests/test_sandbox.py::test_torch_imports_and_computes[bwrap]" \
  --deselect "tests/test_sandbox.py::test_torch_imports_and_computes[unshare]"
# (deselected: PyTorch 2.3's CUDA build maps its CUDA libraries at import, beyond the 2 GB address
# space that test gives a sandboxed job; the CPU build the course pins imports well within it)
if [ "$chapters" = no ]; then
  echo "the unit tests passed on the oldest versions; the chapters there: make test-oldest"
  exit 0
fi
"$venv/bin/python" -m pytest -q -p no:cacheprovider chapters/03_attention.ipynb chapters/08_training.ipynb \
  chapters/13_modern_language_models.ipynb chapters/15_real_weights.ipynb chapters/14_training_a_language_model.ipynb \
  chapters/16_real_checkpoints.ipynb solutions/ex15_real_weights.ipynb \
  --nbval --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg
