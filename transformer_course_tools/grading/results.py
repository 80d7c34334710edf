"""What grading found: one exercise's result, one student's, a whole run's (what the reports write)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .config import GradingConfig


@dataclass
class ExerciseResult:
    status: str
    message: str
    points: float
    max_points: float
    seconds: float = 0.0
    output_bytes: int = 0
    output_head: str = ""
    cases_passed: int = 0  # every case, the hidden ones included
    cases_total: int = 0
    hidden_passed: int = 0  # of them, the hidden cases (grading.toml's hidden = true)
    hidden_total: int = 0

    def cases_text(self) -> str:
        """Like "3 of 5": text a spreadsheet keeps as it is (not a date, as 3/5 would become)."""
        return f"{self.cases_passed} of {self.cases_total}"

    def feedback_cases(self) -> str:
        """The cases passed as a student may see them: the visible ones, then the hidden count."""
        visible = f"{self.cases_passed - self.hidden_passed} of {self.cases_total - self.hidden_total}"
        return f"{visible}; hidden: {self.hidden_passed} of {self.hidden_total}" if self.hidden_total else visible


@dataclass
class WrittenResult:
    """A written answer (:mod:`.written`): its points once the instructor's sheet is merged in."""

    max_points: float
    answered: bool
    points: float | None = None  # None: not graded yet (``grade-written`` not run)
    comment: str = ""


@dataclass
class StudentReport:
    student: str
    package: str | None  # the package folder that was graded, relative to the submissions folder
    results: dict[str, ExerciseResult]
    newest_file: float | None = None  # the modification time of the package's newest file (seconds)
    late: bool | None = None  # newest_file after the due time (None: no due time given, or no file)
    fingerprint: str | None = None  # sha256 of the package's files as graded (names and contents)
    flags: list[str] = field(default_factory=list)  # for the instructor to look at (see provenance_flags)
    written: dict[str, WrittenResult] = field(default_factory=dict)  # question id → its points (see .written)

    def newest_text(self) -> str:
        """The newest file's time, ISO 8601 in this machine's time zone ("" when unknown)."""
        if self.newest_file is None:
            return ""
        return datetime.fromtimestamp(self.newest_file).astimezone().isoformat(timespec="seconds")

    @property
    def total(self) -> float:
        return sum(r.points for r in self.results.values()) + sum(w.points or 0.0 for w in self.written.values())

    @property
    def max_points(self) -> float:
        return sum(r.max_points for r in self.results.values()) + sum(w.max_points for w in self.written.values())


@dataclass
class GradingReport:
    exercises: list[str]
    students: list[StudentReport]
    config: GradingConfig
    seconds: float
    sandbox: str = ""  # what protected the jobs (the sandbox's one-line description)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # entries of the submissions folder left out, why
    written: dict[str, str] = field(default_factory=dict)  # written question id → its text (see .written)
