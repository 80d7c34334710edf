#!/usr/bin/env bash
# `make test` (after lint) and `make test-other-cpu`: pytest over the given paths with one worker
# process per core (pytest-xdist; at least 2, at most 4). `--dist loadfile` keeps each file on one
# worker, so a notebook's cells run in order in one kernel; files are handed out in the order given
# (`--no-loadscope-reorder`): the chapters, which train, first, so that no long one starts last. Every worker uses one thread: the
# workers then share the cores without oversubscribing them (OpenMP threads that wait for a busy
# core waste it); no compared output depends on the thread count.
# Usage: [PYTHON=.venv-oldest/bin/python] bash scripts/run_tests.sh PATH... [PYTEST OPTION...]
set -euo pipefail
cd "$(dirname "$0")/.."
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
workers=$(( cores < 2 ? 2 : (cores > 4 ? 4 : cores) ))
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
exec "${PYTHON:-.venv/bin/python}" -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
