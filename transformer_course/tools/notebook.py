"""What a chapter's set-up cell switches on (``from transformer_course.tools.notebook import setup_chapter``).

Importing the course changes nothing in Jupyter; a chapter asks for these explicitly:

* a cell that reaches an exercise you have not written yet stops with one short message (the
  exercise, the file to edit, a hint) instead of a long traceback;
* the printing and plotting style the chapters are written with.
"""

from __future__ import annotations

import sys

from .checks.registry import parse_stub_message


def setup_chapter() -> None:
    """Switch on the short stop message and the chapters' printing and plotting style."""
    import matplotlib.pyplot as plt
    import torch

    show_exercise_stubs_briefly()
    torch.set_printoptions(precision=3, sci_mode=False)
    plt.rcParams.update({"figure.dpi": 90, "axes.grid": False, "font.size": 10})


def show_exercise_stubs_briefly() -> None:
    """In Jupyter/IPython, show a cell that stops at an unwritten exercise as a short message
    (the cell still fails, so "Run all" stops there); every other error is shown as usual."""
    ipython = sys.modules.get("IPython")  # already imported in Jupyter; never imported just for this
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or NotImplementedError in getattr(shell, "custom_exceptions", ()):
        return

    def handler(shell, etype, value, tb, tb_offset=None):  # noqa: ANN001 - IPython's signature
        stub = parse_stub_message(str(value))
        if stub is None:
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
            return None
        exercise_id, function, file, hint = stub
        stb = [
            f"\x1b[1;33m○ {exercise_id}: {function} is not written yet — the chapter stops here.\x1b[0m",
            f"Write it in {file} (hint: {hint})",
            f"Check it: `python -m transformer_course check {exercise_id}` or `pytest -m {exercise_id}`; "
            "then re-run this cell.",
            f"Stuck? `python -m transformer_course restore {exercise_id}` puts the worked answer in.",
        ]
        shell._showtraceback(etype, value, stb)
        return None

    shell.set_custom_exc((NotImplementedError,), handler)
