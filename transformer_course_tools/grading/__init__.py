"""Grade a class: ``python -m transformer_course grade SUBMISSIONS_DIR --out report.csv``.

Each sub-folder of ``SUBMISSIONS_DIR`` is one student's submission: their edited student edition,
or just their ``transformer_course/`` package folder (found up to three levels down). How a grade
is reached, and what a submission can and cannot do about it:

1. **A private copy.** The package is copied into a folder of the grader's (regular files and
   folders only, within size caps; the course's ``tools/`` and caches left out). A symbolic link,
   a device or a file outside the student's own folder refuses the submission, named in the report.
2. **One sandbox per student** (:mod:`.sandbox`: bubblewrap, else util-linux ``unshare``): it sees
   the student's copy, the probe package, the worker's inbox and the Python installation, nothing
   else of the machine (no solutions, no ``.git``, no classmates, no other copies of the course,
   not the instructor's package even where it is installed in site-packages); read-only except a
   small private ``/tmp``; no network; limits on memory, processes and file size; every process it
   started is killed when it ends.
3. **A warm worker, a fresh child per exercise** (:mod:`.probe.worker`). In the sandbox one Python
   imports PyTorch and the probes once, never the student's code, and cannot be traced or read
   through ``/proc`` by the processes it starts. For each exercise the grader puts that exercise's
   files (and only those) in the worker's inbox and asks, with a fresh nonce; the worker forks a
   child from its clean state, which imports the student's package, runs the probes and writes
   plain data to a descriptor of its own (:mod:`.probe.wire`). At the exercise's time limit the
   child is killed; then every process it left is killed and ``/tmp`` emptied, and only then does
   the worker answer. An answer without the nonce sent for that exercise, or none in time, costs
   that exercise and the worker: the student's next exercise gets a fresh one.
4. **The verdict outside.** This process, which never imports the submission, judges that data
   with the course's references (the very judges ``check`` uses). A malformed or forged result
   costs that exercise only.
5. **The report at the end**, written atomically (CSV, JSON, a feedback file per student), its
   messages and output excerpts capped and scrubbed of solution text, its cells safe to open in a
   spreadsheet and its names escaped in Markdown. Each student done is also added to a state file
   (:class:`~.state.GradingState`), so that an interrupted run can go on without grading them again.

Without a sandbox (macOS, no user namespaces) the same workers run with the limits that ``setrlimit``
gives and an audit hook in each child refusing what the sandbox would hide; :func:`grade` says what
that does not protect, and ``require_sandbox=True`` (``--require-sandbox``) refuses to run.

Points per exercise, time and memory limits live in ``grading.toml`` at the root of the course.

The package, by responsibility: :mod:`.config` (``grading.toml``), :mod:`.collect` (the submissions
and their copies), :mod:`.workers` (the sandboxed jobs and their verdicts), :mod:`.state` (progress
and resuming), :mod:`.run` (``grade`` itself), :mod:`.results` and :mod:`.reports` (what is written,
shared with ``grade-written``); scrubbing is the course's one answer to "does this text hold a
solution?" (:mod:`..answers`).
"""

from transformer_course_tools.exercises.answers import MAX_MESSAGE
from transformer_course_tools.exercises.answers import SolutionText as Scrubber

from .collect import (
    NOT_SUBMITTED,
    SKIPPED,
    Refused,
    copy_package,
    find_package,
    fingerprint,
    list_submissions,
    provenance_flags,
    student_name,
    unpack_archive,
)
from .config import SCORINGS, GradingConfig, load_config, load_hidden_cases
from .reports import (
    FORMULA_STARTS,
    REPORT_MODE,
    ROSTER_COLUMNS,
    feedback_markdown,
    load_roster,
    markdown_text,
    merged,
    read_report,
    same_exercises,
    skipped_lines,
    spreadsheet_safe,
    summary_table,
    write_atomically,
    write_csv,
    write_feedback,
    write_gradebook,
    write_json,
)
from .results import ExerciseResult, GradingReport, StudentReport, WrittenResult
from .run import exercise_ids, grade, sandbox_support
from .state import GradingState, Progress, state_path
from .workers import GRACE_S, JOB_FILES, RESULT_LIMIT, STARTUP_S, JobOutcome, NotRun, WorkerLost

__all__ = [
    "FORMULA_STARTS", "GRACE_S", "JOB_FILES", "MAX_MESSAGE", "NOT_SUBMITTED", "REPORT_MODE", "RESULT_LIMIT",
    "ROSTER_COLUMNS", "SCORINGS", "SKIPPED", "STARTUP_S", "NotRun",
    "ExerciseResult", "GradingConfig", "GradingReport", "GradingState", "JobOutcome", "Progress", "Refused",
    "Scrubber", "StudentReport", "WorkerLost", "WrittenResult", "copy_package", "exercise_ids", "feedback_markdown",
    "find_package", "fingerprint", "grade", "list_submissions", "load_config", "load_hidden_cases", "load_roster",
    "markdown_text", "merged", "provenance_flags", "read_report", "same_exercises", "sandbox_support",
    "skipped_lines", "spreadsheet_safe", "state_path", "student_name", "summary_table", "unpack_archive",
    "write_atomically", "write_csv", "write_feedback", "write_gradebook", "write_json",
]  # fmt: skip
