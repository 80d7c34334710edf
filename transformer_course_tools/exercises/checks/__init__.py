"""Exercise checks: ``check("ex03_1")`` in a notebook, ``pytest -m ex03_1``, or
``python -m transformer_course check``.

Checks compare the student's code with independent references (PyTorch's own functions,
closed-form formulas) on several inputs, edge cases included, and say what is wrong. Each check is
its cases (plain data), the probe that runs them on the learner's code (``tools/probe``) and its
judges (:mod:`.case`); the grader serves the same three, with the probe in a sandbox.
"""

from ._tools import CheckFailure
from .case import Case
from .registry import EXERCISES, Exercise, exercise, get_exercise, hidden, load_checks
from .runner import CheckResult, check, run_check, run_checks

__all__ = ["EXERCISES", "Case", "CheckFailure", "CheckResult", "Exercise", "check", "exercise", "get_exercise",
           "hidden", "load_checks", "run_check", "run_checks"]  # fmt: skip
