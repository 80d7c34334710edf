"""A real Jupyter kernel for the tests: run a notebook cell's code in it and read what it shows.

The kernel is started as JupyterLab starts one (jupyter_client, ipykernel), from any Python
(a fresh virtual environment included), in a given folder and environment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Kernel:
    def __init__(self, manager: KernelManager, timeout: float) -> None:
        self.manager, self.timeout = manager, timeout
        self.client = manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=timeout)

    def run(self, code: str) -> str:
        """Run ``code`` as one cell; return what the notebook would show (text, colours removed)."""
        shown: list[str] = []

        def collect(message: dict) -> None:
            content, kind = message["content"], message["msg_type"]
            if kind == "stream":
                shown.append(content["text"])
            elif kind == "error":
                shown.append("\n".join(content["traceback"]) + "\n")
            elif kind in ("execute_result", "display_data"):
                shown.append(content["data"].get("text/plain", "") + "\n")

        self.client.execute_interactive(code, output_hook=collect, timeout=self.timeout)
        return ANSI.sub("", "".join(shown))

    def restart(self) -> None:
        self.manager.restart_kernel(now=True)
        self.client.wait_for_ready(timeout=self.timeout)


@contextmanager
def kernel(python: str, cwd: Path, env: dict[str, str], folder: Path, timeout: float = 300) -> Iterator[Kernel]:
    """A kernel of ``python`` (its kernelspec written in ``folder``), started in ``cwd`` with ``env``."""
    spec = folder / "kernels" / "course"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "course", "language": "python"}))
    manager = KernelManager(kernel_name="course", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec.parent)]))
    manager.start_kernel(cwd=str(cwd), env=env)
    try:
        running = Kernel(manager, timeout)
        try:
            yield running
        finally:
            running.client.stop_channels()
    finally:
        manager.shutdown_kernel(now=True)
