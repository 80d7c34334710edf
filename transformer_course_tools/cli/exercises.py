"""``check``, ``build-exercises`` and ``student-edition``."""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

from transformer_course_tools.course import course_root
from transformer_course_tools.exercises.hints import HINT_LEVELS

from . import CLIError


def _check(args: argparse.Namespace) -> int:
    """Named exercises: each one's message; a written question (exNN_qK): once answered, the points a good
    answer makes. None: the overview, one line per exercise (its status and the file to edit), so that no
    hint of an exercise not started yet is shown; a file of the package that does not compile is said first."""
    from transformer_course_tools.exercises.checks import get_exercise, run_checks
    from transformer_course_tools.exercises.checks.runner import QUESTION
    from transformer_course_tools.exercises.saved import AGAIN, broken_files
    from transformer_course_tools.exercises.written_answers import review

    questions = [i for i in args.exercises if QUESTION.fullmatch(i)]
    exercises = [i for i in args.exercises if i not in questions]
    answered = [review(i) for i in questions]
    for _, text in answered:
        print(text)
    if questions and not exercises:
        return 0 if all(done for done, _ in answered) else 1
    if not args.exercises:
        for line in broken_files():
            print(f"{line}: {AGAIN['check']}.")
    results = run_checks(exercises or None, timeout=args.timeout or None, hints=args.hints)
    if exercises:
        width = max(len(r.title) for r in results)
        print(f"{'exercise':8} {'title':{width}}  {'status':15}  first message")
        for r in results:
            print(f"{r.id:8} {r.title:{width}}  {r.status:15}  {(r.message.strip().splitlines() or [''])[0]}")
    else:
        print(f"{'exercise':8} {'status':15}  file")
        for r in results:
            print(f"{r.id:8} {r.status:15}  {get_exercise(r.id).file}")
    counts = {status: sum(r.status == status for r in results) for status in dict.fromkeys(r.status for r in results)}
    print(", ".join(f"{n} {status}" for status, n in counts.items()))
    if not exercises and not all(r.passed for r in results):
        print("`python -m transformer_course check EXERCISE` says what is wrong in one of them (and how to start).")
    return 0 if all(r.passed for r in results) and all(done for done, _ in answered) else 1


def _needs_jupytext(command: str) -> None:
    if importlib.util.find_spec("jupytext") is None:
        raise CLIError(f"{command} needs jupytext to read the notebooks: pip install jupytext")


def _build_exercises(args: argparse.Namespace) -> int:
    """Bring what the registrations make up to date (notebooks' generated parts, exports, the lock,
    exercises/), then say in one line each what is still missing; exit status 1 if anything is."""
    root = course_root("build-exercises")
    _needs_jupytext("build-exercises")
    from transformer_course_tools.authoring.build import build, problems
    from transformer_course_tools.exercises.checks.registry import load_checks

    exercises = load_checks()
    for path in build(root, exercises):
        print(f"wrote {path.relative_to(root)}")
    missing = problems(root, exercises)
    for line in missing:
        print(f"missing: {line}")
    failed = _attempts_failed(root, exercises)
    if not missing:  # while something is missing, a notebook's outputs may be older than its prose
        failed |= _prose_failed(root)
    if not missing and not failed:
        print("nothing missing: every exercise's pieces are up to date; step 3's tests remain (AUTHORING.md)")
    return 1 if missing or failed else 0


# An edited exercise's own tests that make exercises runs (marked with its id): its wrong and right answers;
# its isolation (its check runs no other exercise, its needs= is what its answer calls, its stand-in passes
# its check); and, where the engine calls its function, the engine with each of its right answers.
_EXERCISE_TESTS = ("tests/test_attempts.py", "tests/test_isolation.py", "tests/test_engine_promise.py")


def _attempts_failed(root: Path, exercises) -> bool:  # noqa: ANN001 - id → Exercise
    """Lint every exercise whose attempts, check or room was edited since the last commit, and run its
    own tests (:data:`_EXERCISE_TESTS`, marked with its id), so that a mistake is found by this command
    rather than a later one; print one line per failure. True if any failed."""
    from transformer_course_tools.authoring.build import edited_exercise_files

    edited = edited_exercise_files(root, exercises)
    if not edited:
        return False
    files = set()  # every edited file, but an attempts file as the build started it (its imports unused yet)
    for exercise_id, paths in edited.items():
        attempts = root / "tests" / "attempts" / f"{exercise_id}.py"
        entries = attempts.read_text(encoding="utf-8") if attempts.is_file() else ""
        count = len(re.findall(r"^@(?:wrong|right)\(", entries, re.M))
        files |= {p for p in paths if count or not p.startswith("tests/attempts/")}
        print(
            f"running {exercise_id}'s {count} wrong and right answers, its isolation and engine tests ({paths[0]} was "
            "edited)"
        )
    failed = _lint_failed(root, sorted(files))
    counted = "a test takes all of one exercise's answers of one kind"
    return _pytest_failed(root, ["-m", " or ".join(edited), *_EXERCISE_TESTS], counted) or failed


# The prose tests of one notebook: its numbers anchored in its outputs, its corrected sentences, its pair and
# its folds (a chapter's: its sentences and words too); they read the outputs that step 2 stored
_PROSE_TESTS = ("tests/test_prose_numbers.py", "tests/test_prose.py", "tests/test_readability.py",
                "tests/test_notebooks.py")  # fmt: skip


def _prose_failed(root: Path) -> bool:
    """Run the prose tests of every chapter and solutions notebook edited since the last commit (called once
    nothing is missing, so their outputs are up to date), a line per failure. True if any failed."""
    from transformer_course_tools.authoring.changed import changed_files

    try:
        edited = changed_files(root, "HEAD")
    except (OSError, ValueError):  # no git, or a repository without a commit
        return False
    stems = [Path(p).stem for p in edited if re.fullmatch(r"(chapters|solutions)/\w+\.py", p)]
    if not stems or not (root / _PROSE_TESTS[0]).is_file():  # the student edition has no tests/
        return False
    print(f"running the prose tests of {', '.join(stems)} (edited)")
    return _pytest_failed(root, ["-k", " or ".join(stems), *_PROSE_TESTS], "tests of the edited notebooks")


def _pytest_failed(root: Path, selection: list[str], counted: str) -> bool:
    """Run pytest on ``selection`` in ``root``, print a line per failure and the count. True if any failed."""
    if importlib.util.find_spec("pytest") is None:
        print("missing: running them needs pytest: pip install pytest")
        return True
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=line", *selection]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    for line in lines:  # --tb=line: "…/tests/test_attempts.py:71: AssertionError: own _name (): ✗ …"
        failure = re.match(r"\S*tests/test_\w+\.py:\d+: (?:AssertionError: )?(.*)$", line)
        for part in failure.group(1).split(" | ") if failure else ():  # a test's several findings, a line each
            print(f"failed: {part}")
    print(f"pytest ({counted}): {lines[-1] if lines else done.stderr.strip()}")
    return done.returncode != 0


def _lint_failed(root: Path, files: list[str]) -> bool:
    """``ruff check`` and ``ruff format --check`` on ``files`` (where ruff is installed), a line per finding."""
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.is_file() or not files:  # no files: ruff would lint the whole clone
        return False
    failed = False
    for lint in (["check", "--quiet", "--output-format=concise"], ["format", "--check", "--quiet"]):
        done = subprocess.run([str(ruff), *lint, *files], cwd=root, capture_output=True, text=True, check=False)
        failed |= done.returncode != 0
        for line in done.stdout.strip().splitlines() if done.returncode else ():
            print(f"lint: {line}")
        if done.returncode:  # the command that fixes what it can
            fix = "format FILE` formats a file" if lint[0] == "format" else "check --fix FILE` fixes those marked [*]"
            print(f"lint: `{ruff.relative_to(root) if ruff.is_relative_to(root) else ruff} {fix}")
    return failed


def _student_edition(args: argparse.Namespace) -> int:
    root = course_root("student-edition")
    _needs_jupytext("student-edition")
    from transformer_course_tools.exercises.edition import build_student_edition

    out = build_student_edition(root, args.out_dir, hints=args.hints, worked_answers=args.worked_answers)
    print(f"student edition written to {out}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    check = subparsers.add_parser("check", help="run the exercise checks: each one's message, or (no id) a table")
    check.add_argument("exercises", nargs="*",
                       help="exercise ids such as ex03_1 (default: all, one line each: status and file), or written "
                       "questions such as ex11_q1 (once answered: the points a good answer makes)")  # fmt: skip
    check.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                       help="give up on a check after this long and report it as 'timed out' (0: no limit)")  # fmt: skip
    check.add_argument("--hints", choices=HINT_LEVELS, default=None,
                       help="how much of the fix a failure shows (default: the edition's level; full in the course)")  # fmt: skip
    check.set_defaults(run=_check)
    build = subparsers.add_parser("build-exercises", help="make what the exercises' registrations make (notebooks' "
                                  "parts, exports, the lock, exercises/) and list what is missing (in a clone)")  # fmt: skip
    build.set_defaults(run=_build_exercises)
    edition = subparsers.add_parser("student-edition", help="write the student edition of the course (from a clone)")
    edition.add_argument("out_dir", type=Path)
    edition.add_argument("--hints", choices=HINT_LEVELS, default="full",
                         help="the stubs' hints: full (the way to the code, the default), nudge (the idea and the "
                         "paper's section), none (only what to write); check's default there")  # fmt: skip
    edition.add_argument("--no-worked-answers", dest="worked_answers", action="store_false",
                         help="leave the worked answers of the written questions out (a class's handout): by default "
                         "`check exNN_qK` shows one once its question is answered")  # fmt: skip
    edition.set_defaults(run=_student_edition)
