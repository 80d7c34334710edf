"""How fast a class is graded: the wall time per exercise job against one cold ``import torch``.

    python -m benchmarks.grading                       # 8 copies of the complete edition, every exercise, --jobs 2
    python -m benchmarks.grading --copies 4 --no-append

In one run, on this machine: the median of ``--imports`` cold ``python -c "import torch"`` (a fresh
interpreter each time, as a grading job used to start), then ``python -m transformer_course grade``
(a subprocess, as an instructor runs it) on ``--copies`` copies of this checkout's package (the
complete edition, so every copy must get full marks) on every exercise at ``--jobs``. Prints

    seconds per exercise job = grading wall time / (copies × exercises)
    ratio                    = seconds per exercise job / cold import (the target: at most 0.1)
    class of 200             = seconds per exercise job × 200 × exercises

and appends them to ``benchmarks/results.md`` (unless ``--no-append``). Not a test: speed depends
on the machine and its load, so no unit test asserts it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "transformer_course"
RESULTS = Path(__file__).resolve().parent / "results.md"
CLASS = 200  # students in the estimate


def cold_import_seconds(rounds: int) -> float:
    """The median wall time of ``python -c "import torch"`` in a fresh interpreter."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def grade_copies(copies: int, jobs: int, work: Path) -> tuple[float, dict]:
    """Grade ``copies`` copies of the package on every exercise; (wall seconds, the JSON report)."""
    for index in range(copies):
        shutil.copytree(ROOT / PACKAGE, work / "class" / f"student{index:03d}" / PACKAGE,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))  # fmt: skip
    config = work / "grading.toml"  # every exercise; the code only (copies of the package hold no written answers)
    config.write_text('[grading]\nexercises = "all"\n\n[written]\nquestions = []\n')
    command = [sys.executable, "-m", PACKAGE, "grade", str(work / "class"), "--out", str(work / "report.csv"),
               "--jobs", str(jobs), "--config", str(config), "--no-progress"]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    return seconds, json.loads((work / "report.json").read_text())


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())  # fmt: skip
    return (f"python {platform.python_version()}; torch {torch.__version__}; cpu {cpu}; cores {os.cpu_count()}; "
            f"load average at start {os.getloadavg()[0]:.2f}")  # fmt: skip


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=8, help="students (copies of the complete edition)")
    parser.add_argument("--jobs", type=int, default=2, help="students graded at the same time")
    parser.add_argument("--imports", type=int, default=5, help="cold imports of torch timed (the median is used)")
    parser.add_argument("--no-append", action="store_true", help=f"do not append the figures to {RESULTS.name}")
    args = parser.parse_args(argv)
    if min(args.copies, args.jobs, args.imports) < 1:
        parser.error("--copies, --jobs and --imports must be at least 1")
    about = machine()
    cold = cold_import_seconds(args.imports)
    with tempfile.TemporaryDirectory(prefix="grading-benchmark-") as temporary:
        wall, report = grade_copies(args.copies, args.jobs, Path(temporary))
    exercises = len(report["exercises"])
    full = all(s["total"] == s["max_points"] > 0 for s in report["students"])
    per_job = wall / (args.copies * exercises)
    ratio = per_job / cold
    lines = [
        f"## Grading a class (`python -m benchmarks.grading`, {time.strftime('%Y-%m-%d')})",
        "",
        f"Machine: {about}; load average at end {os.getloadavg()[0]:.2f}",
        "",
        "| copies × exercises | --jobs | grading wall | s per exercise job | cold `import torch` (median of "
        f"{args.imports}) | ratio | class of {CLASS} × {exercises} exercises | full marks |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        f"| {args.copies} × {exercises} | {args.jobs} | {wall:.1f} s | {per_job:.3f} | {cold:.2f} s | **{ratio:.3f}** "
        f"| {_duration(per_job * CLASS * exercises)} | {'yes' if full else 'NO'} |",
        "",
        "Ratio = (grading wall time / exercise jobs) / one cold `python -c \"import torch\"`, both measured in this "
        "run; the class estimate = seconds per exercise job × students × exercises. The grading wall time is the whole "
        "command (its own start, reading the solutions, copying, one warm worker per student, judging, reports).",
        "",
    ]  # fmt: skip
    print("\n".join(lines))
    if not args.no_append:
        with open(RESULTS, "a", encoding="utf-8") as handle:
            handle.write("\n" + "\n".join(lines))
    return 0 if full else 1


if __name__ == "__main__":
    sys.exit(main())
