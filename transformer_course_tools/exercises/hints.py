"""How much a stub and a failing check give away: the hint levels, and the one an edition was made with.

``"full"`` is the way to the code (a failure says what is wrong and its fix), ``"nudge"`` the idea and
the paper's section (a failure says what is wrong and that idea), ``"none"`` what to write (a failure
says what is wrong only). The student edition records its level in ``.student-edition.json`` at its
root; ``check`` there and ``python -m transformer_course check`` default to it.
"""

from __future__ import annotations

import json
from pathlib import Path

HINT_LEVELS = ("full", "nudge", "none")  # how much a stub and a failing check say (grading.toml's hints)
STUDENT_MARK = ".student-edition.json"  # written at the root of every student edition


def check_level(level: str, name: str = "hints") -> str:
    """``level`` if it is one of :data:`HINT_LEVELS`, else ValueError (one line naming ``name``)."""
    if level not in HINT_LEVELS:
        raise ValueError(f"{name} = {level!r} must be one of {', '.join(HINT_LEVELS)}")
    return level


def is_student_edition(root: Path) -> bool:
    return (Path(root) / STUDENT_MARK).is_file()


def edition_hints(root: Path | None = None) -> str:
    """The hint level the student edition at ``root`` (default: the running package's course) was
    made with; "full" in the complete course or an edition made before hint levels."""
    from transformer_course_tools.course import package_dir

    mark = Path(root or package_dir().parent) / STUDENT_MARK
    return json.loads(mark.read_text(encoding="utf-8")).get("hints", "full") if mark.is_file() else "full"


def hint_level(hints: str | None = None) -> str:
    """``hints`` checked, or by default the level the student edition was made with ("full" in the
    complete course)."""
    return check_level(edition_hints() if hints is None else hints)
