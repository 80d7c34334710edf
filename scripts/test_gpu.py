"""`make test-gpu`: the inference engine and the training chapters on a CUDA GPU, with the profile a
Colab GPU gets.

    python scripts/test_gpu.py                 # the engine's tests, chapters 08–10 and 12–14; fails without a CUDA GPU
    python scripts/test_gpu.py --record        # also appends the times to benchmarks/results.md

On a GPU the chapters pick the larger profile and mixed precision by themselves (bfloat16 where the
GPU has it, float16 with a gradient scaler on older ones such as Colab's T4). Their printed results
then differ from the committed CPU outputs, so nothing is compared byte for byte: each chapter runs
top to bottom in a fresh kernel and must finish without an error, and its checks of the claims
(``transformer_course_tools/notebook/claims.py``: exact match, BLEU, averaging …) must hold. The executed notebooks are written
to ``test-artifacts/gpu/``; the seconds of each chapter and the training throughput it printed are
shown (and recorded with ``--record``).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = (
    "chapters/08_training.py",
    "chapters/09_decoding.py",
    "chapters/12_real_translation.py",
    "chapters/13_modern_language_models.py",
    "chapters/10_evaluating_the_translator.py",
    "chapters/14_training_a_language_model.py",
)
THROUGHPUT = re.compile(r"(\d+) s of training, ([\d.]+) steps/s")


def gpu_name() -> str:
    import torch

    if not torch.cuda.is_available():
        print("error: make test-gpu needs a CUDA GPU (torch.cuda.is_available() is False here)", file=sys.stderr)
        raise SystemExit(2)
    name = torch.cuda.get_device_name(0)
    return f"{name}, bf16 {'yes' if torch.cuda.get_device_capability() >= (8, 0) else 'no (float16)'}, torch {torch.__version__}"


def run_chapter(source: Path, out_dir: Path) -> tuple[float, list[str]]:
    """Run one chapter in a fresh kernel; its seconds and the training throughput lines it printed."""
    notebook = jupytext.read(source)
    client = NotebookClient(notebook, timeout=3600, kernel_name="python3",
                            resources={"metadata": {"path": str(source.parent)}})  # fmt: skip
    start = time.perf_counter()
    try:
        client.execute()
    finally:
        nbformat.write(notebook, out_dir / (source.stem + ".ipynb"))
    seconds = time.perf_counter() - start
    printed = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    return seconds, [f"{m.group(2)} steps/s over {m.group(1)} s" for m in THROUGHPUT.finditer(printed)]


def main(argv: list[str]) -> int:
    unknown = [a for a in argv if a != "--record"]
    if unknown:
        print(f"error: unknown option {unknown[0]!r}; the one option is --record", file=sys.stderr)
        return 2
    device = gpu_name()
    out_dir = ROOT / "test-artifacts" / "gpu"
    out_dir.mkdir(parents=True, exist_ok=True)
    rows, failed = [], []
    engine = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_engine_gpu.py"],
                            cwd=ROOT)  # fmt: skip
    if engine.returncode:
        failed.append("tests/test_engine_gpu.py")
    print(f"{'✓' if engine.returncode == 0 else '✗'} the inference engine on the GPU (tests/test_engine_gpu.py)")
    for chapter in CHAPTERS:
        try:
            seconds, throughput = run_chapter(ROOT / chapter, out_dir)
        except CellExecutionError as error:
            failed.append(chapter)
            print(f"✗ {chapter}: {str(error).strip().splitlines()[-1]}")
            continue
        rows.append(f"| {chapter} | {seconds:.0f} | {'; '.join(throughput) or '—'} |")
        print(f"✓ {chapter}: {seconds:.0f} s; training {'; '.join(throughput) or '—'}")
    if "--record" in argv and rows:
        table = "\n".join(["| chapter | seconds | training throughput |", "| --- | ---: | --- |", *rows])
        with open(ROOT / "benchmarks" / "results.md", "a") as results:
            results.write(f"\n\n## GPU check (`make test-gpu`), {time.strftime('%Y-%m-%d')}: {device}\n\n{table}\n")
    print(f"{len(rows)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
