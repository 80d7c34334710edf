"""``grading.toml``: the points, limits and settings of a grading run, and an instructor's hidden cases."""

from __future__ import annotations

import importlib.util
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from transformer_course_tools.exercises.checks.case import Case
from transformer_course_tools.exercises.checks.registry import expand_exercise_ids, get_exercise
from transformer_course_tools.exercises.checks.status import PASSED, REFERENCE
from transformer_course_tools.exercises.hints import check_level
from transformer_course_tools.exercises.questions import check_question_ids

_SAFE_NAME = re.compile(r"[\w -][\w .-]{0,99}")  # an assignment's name, used as a folder's


SCORINGS = ("all_or_nothing", "cases")  # grading.toml's scoring: full points for a pass, or per case passed


@dataclass
class GradingConfig:
    """What ``grading.toml`` holds (see the file for the meaning of each entry)."""

    exercises: list[str] | None = None  # None: every registered exercise
    default_points: float = 1.0
    points: dict[str, float] = field(default_factory=dict)
    timeout_s: float = 60.0
    timeouts: dict[str, float] = field(default_factory=dict)
    memory_mb: int = 4096
    max_output_kb: int = 1024
    max_submission_mb: int = 50
    max_files: int = 2000
    jobs: int = 1
    scoring: str = "all_or_nothing"  # or "cases": points × cases passed / cases
    hidden: bool = False  # also grade cases students never see (see load_hidden_cases)
    hidden_cases: str | None = None  # the instructor's file of hidden cases (a path), with hidden = true
    assignment: str | None = None  # its name: the feedback's folder, the LMS gradebook's column
    hints: str = "full"  # how much of the fix the feedback says: "full", "nudge" or "none" (edition.HINT_LEVELS)
    written_questions: list[str] | None = None  # [written] questions; None: those of the graded exercises' notebooks
    written_default_points: float = 1.0  # [written] default_points
    written_points: dict[str, float] = field(default_factory=dict)  # [written] exNN_qK = points

    def points_for(self, exercise_id: str) -> float:
        return float(self.points.get(exercise_id, self.default_points))

    def score(self, exercise_id: str, status: str, passed: int, total: int) -> float:
        """The points earned: all of them for a pass; with ``scoring = "cases"`` the share of the
        cases passed otherwise (none for an attempt on the reference answers)."""
        points = self.points_for(exercise_id)
        if status == PASSED:
            return points
        if self.scoring == "cases" and total and status != REFERENCE:
            return points * min(passed, total) / total
        return 0.0

    def written_points_for(self, question_id: str) -> float:
        return float(self.written_points.get(question_id, self.written_default_points))

    def timeout_for(self, exercise_id: str) -> float:
        return float(self.timeouts.get(exercise_id, self.timeout_s))

    def validate(self) -> GradingConfig:
        """Raise ValueError (one line) for a value no grading can use; return self."""
        numbers = {"default_points": self.default_points, "timeout_s": self.timeout_s, **self.points,
                   **{f"timeout_s.{k}": v for k, v in self.timeouts.items()},
                   "written.default_points": self.written_default_points,
                   **{f"written.{k}": v for k, v in self.written_points.items()}}  # fmt: skip
        for name, value in numbers.items():
            if not math.isfinite(value) or value < 0 or (name.startswith("timeout_s") and value == 0):
                raise ValueError(f"grading setting {name} = {value} must be a finite number above 0")
        limits = {"jobs": (self.jobs, 1), "memory_mb": (self.memory_mb, 256), "max_output_kb": (self.max_output_kb, 1),
                  "max_submission_mb": (self.max_submission_mb, 1), "max_files": (self.max_files, 1)}  # fmt: skip
        for name, (value, lowest) in limits.items():
            if value < lowest:
                raise ValueError(f"grading setting {name} = {value} must be at least {lowest}")
        if self.assignment is not None and not _SAFE_NAME.fullmatch(self.assignment):
            raise ValueError(f"grading setting assignment = {self.assignment!r} must be a name (letters, digits, "
                             "spaces, . _ -, not starting with . ), the feedback's folder")  # fmt: skip
        if self.scoring not in SCORINGS:
            raise ValueError(f"grading setting scoring = {self.scoring!r} must be one of {', '.join(SCORINGS)}")
        check_level(self.hints, "grading setting hints")
        for exercise_id in [*self.points, *self.timeouts]:
            get_exercise(exercise_id)  # a typo is an error, not a silent default
        expand_exercise_ids(self.exercises or [])  # ids, or chapters ("ex03") with exercises
        if self.hidden_cases is not None:
            if not self.hidden:
                raise ValueError("grading setting hidden_cases needs hidden = true")
            load_hidden_cases(Path(self.hidden_cases))
        if self.written_questions or self.written_points:
            check_question_ids([*(self.written_questions or []), *self.written_points])
        return self


def load_config(path: Path | None) -> GradingConfig:
    """Read ``grading.toml``; no file gives the defaults (1 point per exercise). Raises ValueError,
    FileNotFoundError or KeyError (an unknown exercise) with one line."""
    if path is None:
        return GradingConfig()
    if not Path(path).is_file():
        raise FileNotFoundError(f"grading configuration {path} does not exist")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not valid TOML: {error}") from None
    unknown = set(data) - {"grading", "points", "timeout_s", "written"}
    if unknown:
        raise ValueError(f"{path}: unknown section(s) {sorted(unknown)}; expected [grading], [points], [timeout_s], "
                         "[written]")  # fmt: skip
    settings = dict(data.get("grading", {}))
    exercises = settings.pop("exercises", "all")
    if exercises != "all" and not (isinstance(exercises, list) and all(isinstance(e, str) for e in exercises)):
        raise ValueError(f'{path}: [grading] exercises must be "all" or a list of exercise ids')
    try:
        config = GradingConfig(
            exercises=None if exercises == "all" else list(exercises),
            points={k: _number(v, k) for k, v in data.get("points", {}).items()},
            timeouts={k: _number(v, k) for k, v in data.get("timeout_s", {}).items()},
        )
        for key, value in settings.items():
            if key not in {"default_points", "timeout_s", "memory_mb", "max_output_kb", "max_submission_mb",
                           "max_files", "jobs", "scoring", "hidden", "hidden_cases", "assignment", "hints"}:  # fmt: skip
                raise ValueError(f"unknown setting [grading] {key}")
            if key == "hidden_cases":  # a path, relative to the grading.toml that names it
                value = str((Path(path).parent / _text(value, key)).resolve())
            kind = str if key == "assignment" else type(getattr(config, key))
            convert = {float: _number, int: _integer, str: _text, bool: _flag, type(None): _text}[kind]
            setattr(config, key, convert(value, key))
        _written_settings(dict(data.get("written", {})), config)
        return config.validate()
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def _written_settings(table: dict, config: GradingConfig) -> None:
    """``[written]``: questions = "auto" or a list of ids, default_points, and exNN_qK = points."""
    questions = table.pop("questions", "auto")
    if questions != "auto" and not (isinstance(questions, list) and all(isinstance(q, str) for q in questions)):
        raise ValueError('[written] questions must be "auto" or a list of question ids such as "ex03_q1"')
    config.written_questions = None if questions == "auto" else list(questions)
    if "default_points" in table:
        config.written_default_points = _number(table.pop("default_points"), "[written] default_points")
    config.written_points = {k: _number(v, f"[written] {k}") for k, v in table.items()}  # ids: checked by validate


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


def _text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {value!r}")
    return value


def _integer(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return value


def load_hidden_cases(path: Path) -> dict[str, list[Callable[[], Iterable[Case]]]]:
    """The instructor's hidden cases: exercise id → the case builders of the Python file ``path``
    marked ``@hidden("exNN_k")`` (:func:`.checks.registry.hidden`). Raises FileNotFoundError, or
    ValueError (one line) for a file that does not run or names an unknown exercise."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"the hidden cases file {path} does not exist")
    spec = importlib.util.spec_from_file_location("_instructor_hidden_cases", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # noqa: BLE001 - the instructor's file: say what is wrong in one line
        raise ValueError(f"the hidden cases file {path} failed to run: {type(error).__name__}: {error}") from None
    found: dict[str, list[Callable[[], Iterable[Case]]]] = {}
    for builder in vars(module).values():
        exercise_id = getattr(builder, "hidden_for", None)
        if callable(builder) and isinstance(exercise_id, str):
            try:
                get_exercise(exercise_id)
            except KeyError:
                raise ValueError(f"the hidden cases file {path} names an unknown exercise {exercise_id!r}") from None
            found.setdefault(exercise_id, []).append(builder)
    return found
