#!/usr/bin/env bash
# `make test`: lint has passed; now the unit tests and every notebook through nbval, and at the same
# time, on the other core, every notebook again on another CPU's arithmetic (see the Makefile). Both
# runs must pass. Called by the Makefile, which sets NOTEBOOKS, NBVAL and OTHER_CPU.
set -u
cd "$(dirname "$0")/.."
mkdir -p test-artifacts
log=test-artifacts/other-cpu.log
# shellcheck disable=SC2086
env $OTHER_CPU .venv/bin/python -m pytest $NOTEBOOKS $NBVAL -p no:cacheprovider -q > "$log" 2>&1 &
other=$!
trap 'kill $other 2>/dev/null; exit 130' INT TERM
# One thread for this run too: the two runs then share the two cores without oversubscribing them
# (OpenMP threads that wait for a busy core waste it). No compared output depends on it.
# shellcheck disable=SC2086
OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 .venv/bin/python -m pytest tests $NOTEBOOKS $NBVAL --durations=20
first=$?
wait $other
second=$?
echo
echo "=== the notebooks again, on another CPU's arithmetic ($OTHER_CPU); log: $log ==="
if [ "$second" -ne 0 ]; then cat "$log"; else tail -n 1 "$log"; fi
if [ "$first" -ne 0 ] || [ "$second" -ne 0 ]; then
  echo "make test failed: unit tests and notebooks exit $first, notebooks on another CPU's arithmetic exit $second"
  exit 1
fi
