"""What a check can say about an exercise (plain constants: the grading worker reads this file by
path, without importing the course)."""

PASSED, FAILED, NOT_IMPLEMENTED, ERROR = "passed", "failed", "not implemented", "error"
TIMED_OUT = "timed out"  # the check did not finish within its time limit (an infinite loop?)
REFERENCE = "reference import"  # grading only: the submission tried to use the reference answers
STATUSES = (PASSED, FAILED, NOT_IMPLEMENTED, ERROR, TIMED_OUT, REFERENCE)
# Text symbols, not emoji: they are in the fonts every system has (DejaVu Sans Mono on Linux, the
# default monospace fonts of macOS and Windows), so they never show as empty boxes.
SYMBOLS = {PASSED: "✓", FAILED: "✗", NOT_IMPLEMENTED: "○", ERROR: "!", TIMED_OUT: "◷", REFERENCE: "⊘"}
