"""A long run: a progress line as students finish, and the state an interrupted run resumes from."""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

from .collect import fingerprint
from .config import GradingConfig
from .reports import write_atomically
from .results import ExerciseResult, StudentReport


def state_path(report_csv: Path) -> Path:
    """Where a run's state lives: next to the report, ``report.csv`` → ``report.progress.jsonl``."""
    return Path(report_csv).with_suffix(".progress.jsonl")


class Progress:
    """One line on stderr as each student is done (and at most every ``every_s`` seconds between):
    students done / total, exercises per second, an estimate of the time left. The first line says
    what protects the jobs (``sandbox``: the sandbox's one-line description), as the report does."""

    def __init__(
        self, students: int, exercises: int, enabled: bool = True, every_s: float = 10.0, sandbox: str = ""
    ) -> None:
        self.students, self.exercises, self.enabled, self.every_s = students, exercises, enabled, every_s
        self.students_done = self.exercises_done = self.said = 0
        self.start = self.last = time.monotonic()
        if enabled and sandbox:
            print(f"grading {students} student(s): {sandbox}", file=sys.stderr, flush=True)

    def advance(self, student_done: bool) -> None:
        self.exercises_done += 1
        self.students_done += student_done
        if student_done or time.monotonic() - self.last >= self.every_s:
            self._say()

    def finish(self) -> None:
        if self.said != self.exercises_done:
            self._say()

    def line(self) -> str:
        seconds = max(time.monotonic() - self.start, 1e-9)
        rate = self.exercises_done / seconds
        left = (self.exercises - self.exercises_done) / rate if rate else float("inf")
        return (f"grading: {self.students_done}/{self.students} students, {self.exercises_done}/{self.exercises} "
                f"exercises, {rate:.2f} exercises/s, about {_duration(left)} left")  # fmt: skip

    def _say(self) -> None:
        self.last, self.said = time.monotonic(), self.exercises_done
        if self.enabled:
            print(self.line(), file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "? min"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


class GradingState:
    """The results of the students already done, one JSON line each, next to the report: a run
    interrupted half way goes on from there (``--resume``) without grading them again.

    The first line names the run (its exercises and settings, ``jobs`` aside); a student is taken
    from the file only in a run of the same name and when the copy of their submission has the same
    fingerprint (a submission handed in again is graded again). Only the grader writes it."""

    VERSION = "transformer-course-grading-state-1"

    def __init__(self, path: Path, exercises: list[str], config: GradingConfig) -> None:
        self.path = Path(path)
        settings = {k: v for k, v in asdict(config).items() if k != "jobs"}
        if config.hidden_cases:  # the same file name with other cases is another run
            settings["hidden_cases"] = hashlib.sha256(Path(config.hidden_cases).read_bytes()).hexdigest()
        self.run = hashlib.sha256(json.dumps([exercises, settings], sort_keys=True).encode()).hexdigest()
        self.exercises = exercises

    def restore(
        self, reports: list[StudentReport], todo: list[tuple[int, Path]], resume: bool
    ) -> list[tuple[int, Path]]:
        """Fill in the students the state holds (with ``resume``); start the file afresh otherwise.
        Returns the students still to grade."""
        done = self._read() if resume else {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not done:
            write_atomically(self.path, json.dumps({"state": self.VERSION, "run": self.run}) + "\n")
        left = []
        for index, copy in todo:
            record = done.get((reports[index].student, fingerprint(copy)))
            if record is None:
                left.append((index, copy))
            else:
                reports[index].results = record
        if done:
            print(f"resumed {len(todo) - len(left)} student(s) from {self.path}", file=sys.stderr)
        return left

    def record(self, report: StudentReport, copy: Path) -> None:
        """Add a finished student (flushed to disk before the next one is counted)."""
        line = {"student": report.student, "fingerprint": fingerprint(copy),
                "results": {i: asdict(r) for i, r in report.results.items()}}  # fmt: skip
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def _read(self) -> dict[tuple[str, str], dict[str, ExerciseResult]]:
        """(student, fingerprint) → results, from a state of this run; {} from anything else. A
        line cut short by the interruption is left out (that student is graded again)."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
            if json.loads(lines[0]) != {"state": self.VERSION, "run": self.run}:
                return {}
        except (OSError, ValueError, IndexError):
            return {}
        done = {}
        for line in lines[1:]:
            try:
                entry = json.loads(line)
                results = {i: ExerciseResult(**entry["results"][i]) for i in self.exercises}
            except (ValueError, KeyError, TypeError):
                continue
            done[(entry["student"], entry["fingerprint"])] = results
        return done
