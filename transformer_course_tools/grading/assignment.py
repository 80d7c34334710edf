"""An assignment for the grading tools instructors already run: what is graded, and the notebooks' parts.

``python -m transformer_course assignment --for nbgrader|otter OUT`` (:mod:`.nbgrader`, :mod:`.otter`)
starts here. :func:`handout` reads the exercises and points of ``grading.toml`` (or ``--exercises``) as
``grade`` does, with the written questions of their notebooks; :func:`notebook_parts` cuts a worked
solution notebook (``solutions/exNN_*.py``) into what each tool must treat apart (the set-up, a "try
it" cell, a written question, a check cell); :func:`write_package` writes what a release carries
besides its notebooks: the student edition's package, the course's check for the test cells
(:mod:`.course_check`) and its settings. Every release is searched for solution text before it is
kept (:func:`refuse_leaks`, the student edition's own search).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from transformer_course_tools.course import INSTRUCTORS, PACKAGE, TOOLS, course_files
from transformer_course_tools.exercises.edition import edition_mark, solution_leaks, stub_package
from transformer_course_tools.exercises.hints import STUDENT_MARK
from transformer_course_tools.exercises.questions import questions_in
from transformer_course_tools.exercises.regions import BEGIN, solution_regions

from .config import GradingConfig
from .run import exercise_ids
from .workers import STARTUP_S

CHECK_MODULE = "transformer_course_check"  # the name course_check.py ships under, next to the notebooks
SETTINGS = f"{CHECK_MODULE}.json"
REQUIREMENTS = "requirements.txt"  # what the Python that runs the notebooks needs (the package comes with them)
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"  # PyTorch's own index of its CPU builds
_HEADING = re.compile(r"## (ex\d\d_\d+) ")  # an exercise's section: "## ex03_1 — Attention scores …"
_CHECK_CELL = re.compile(r'check\("(ex\d\d_\d+)"\)')  # the check cell of the exercise notebooks


@dataclass
class Handout:
    """One assignment: the exercises and written questions graded, their points, the notebooks."""

    name: str
    exercises: dict[str, float]  # exercise id → points
    questions: dict[str, float]  # written question id → points
    notebooks: list[str]  # stems of solutions/*.py holding them, e.g. "ex03_attention"
    config: GradingConfig
    titles: dict[str, str] = field(default_factory=dict)  # exercise id → title

    @property
    def rooms(self) -> list[str]:
        """The files the students write: the rooms of the graded exercises (``transformer_course/attention.py``)."""
        from transformer_course_tools.exercises.checks.registry import get_exercise

        return sorted({get_exercise(i).file for i in self.exercises})

    def only(self, notebook: str) -> Handout:
        """The part of this assignment in one notebook (Otter grades one notebook per assignment)."""
        prefix = notebook[:4]
        return Handout(notebook, {i: p for i, p in self.exercises.items() if i.startswith(prefix)},
                    {q: p for q, p in self.questions.items() if q.startswith(prefix)}, [notebook], self.config,
                    self.titles)  # fmt: skip


def handout(root: Path, config: GradingConfig, exercises: list[str] | None, name: str | None) -> Handout:
    """The assignment ``grade`` would grade with ``config`` and ``exercises`` (the written questions too)."""
    from transformer_course_tools.exercises.checks.registry import get_exercise

    from .written import assignment_questions

    ids = exercise_ids(config, exercises)
    questions = assignment_questions(config, ids)
    stems = {path.stem[:4]: path.stem for path in sorted((root / "solutions").glob("ex[0-9][0-9]_*.py"))}
    prefixes = sorted({i[:4] for i in ids} | {q[:4] for q in questions})
    missing = [p for p in prefixes if p not in stems]
    if missing:
        raise FileNotFoundError(f"no worked notebook solutions/{missing[0]}_*.py for {missing[0]}'s exercises")
    notebooks = [stems[p] for p in prefixes]
    return Handout(name or (notebooks[0] if len(notebooks) == 1 else "transformer-course"),
                {i: config.points_for(i) for i in ids}, {q: config.written_points_for(q) for q in questions},
                notebooks, config, {i: get_exercise(i).title for i in ids})  # fmt: skip


# ---------------------------------------------------------------- a notebook, cut into what the tools need


@dataclass
class Part:
    """One cell of a worked notebook, as the tools see it.

    ``kind``: "colab" (the Colab cell: dropped), "setup" (the first code cell), "text", "code",
    "try" (a code cell with a solution region), "question" (one written question: the markdown
    before its region and the region), "check" (``check("exNN_k")``)."""

    kind: str
    source: str
    exercise: str | None = None  # "try", "check": the exercise of the section; "text": a section's heading
    question: str | None = None  # "question": its id, exNN_qK


def notebook_parts(path: Path) -> list[Part]:
    """The parts of the worked notebook ``path`` (``solutions/exNN_*.py``) in order; a markdown cell
    with several written questions gives one part per question, its text after the last one a text part."""
    import jupytext

    cells = jupytext.read(path).cells
    ids = iter(q.id for q in questions_in([(c.cell_type, c.source) for c in cells], path.stem))
    parts: list[Part] = []
    section = None
    for cell in cells:
        source, heading = cell.source, _HEADING.match(cell.source)
        section = heading.group(1) if heading and cell.cell_type == "markdown" else section
        if cell.cell_type == "markdown" and BEGIN in source:
            parts += _questions(source, ids)
        elif cell.cell_type == "markdown":
            parts.append(Part("text", source, heading.group(1) if heading else None))
        elif "colab" in cell.metadata.get("tags", []):
            parts.append(Part("colab", source))
        elif _CHECK_CELL.fullmatch(source.strip()):
            parts.append(Part("check", source, _CHECK_CELL.fullmatch(source.strip()).group(1)))
        elif BEGIN in source:
            parts.append(Part("try", source, section))
        else:
            parts.append(Part("code" if any(p.kind == "setup" for p in parts) else "setup", source))
    return parts


def _questions(source: str, ids) -> list[Part]:  # noqa: ANN001 - an iterator of question ids
    """A markdown cell's written questions, each with its text and its region; the rest as text."""
    lines, parts, after = source.split("\n"), [], 0
    for _, end in solution_regions(source):
        parts.append(Part("question", "\n".join(lines[after : end + 1]).strip("\n"), question=next(ids)))
        after = end + 1
    rest = "\n".join(lines[after:]).strip("\n")
    return parts + ([Part("text", rest)] if rest else [])


def split_question(source: str) -> tuple[str, str]:
    """A question part's text and its answer (the region without its markers)."""
    begin, end = next(solution_regions(source))
    lines = source.split("\n")
    return "\n".join(lines[:begin]).strip("\n"), "\n".join(lines[begin + 1 : end]).strip("\n")


def check_cell(exercise_id: str, show: bool = True) -> str:
    """The graded test of ``exercise_id``: the course's check on the student's files, in a fresh Python
    (``show``: print its line, as nbgrader's feedback shows a cell's output; Otter's tests print nothing).
    The check's file is run by its path: a module or package of that name that a student adds is not it."""
    return "\n".join([
        f"# Graded: the course's check of {exercise_id} on your file, in a fresh Python ({CHECK_MODULE}.py)",
        "import runpy",
        "",
        f'run_course_check = runpy.run_path("{CHECK_MODULE}.py")["run_course_check"]',
        f'result = run_course_check("{exercise_id}")',
        *(["print(result.line())"] if show else []),
        "assert result.passed, result.line()",
    ])  # fmt: skip


# ---------------------------------------------------------------- what a release carries besides its notebooks


def write_package(root: Path, folder: Path, handout: Handout, trusted: str | None = None) -> None:
    """Write into ``folder`` the student edition's package (stubs at ``handout``'s hint level), its mark,
    the course's check for the test cells and its settings (``trusted``: where the tool keeps its own
    copy of the course's files, relative to ``folder``), and the requirements of the Python that runs them."""
    files = [
        rel
        for rel in course_files(root)  # the learner's package and the course's side, as the student
        if rel.parts[0] in (PACKAGE, TOOLS) and not rel.as_posix().startswith(INSTRUCTORS)
    ]  # edition ships them
    for rel in files:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, folder / rel)
    stub_package(folder / PACKAGE, handout.config.hints)
    (folder / STUDENT_MARK).write_text(edition_mark(handout.config.hints), encoding="utf-8")
    shutil.copyfile(Path(__file__).with_name("course_check.py"), folder / f"{CHECK_MODULE}.py")
    exercises = {i: {"title": handout.titles[i], "timeout_s": handout.config.timeout_for(i) + STARTUP_S}
                 for i in handout.exercises}  # fmt: skip
    settings = {"package": PACKAGE, "trusted": trusted, "hints": handout.config.hints, "rooms": handout.rooms,
                "files": [rel.as_posix() for rel in files], "exercises": exercises}  # fmt: skip
    (folder / SETTINGS).write_text(json.dumps(settings, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (folder / REQUIREMENTS).write_text(requirements(root), encoding="utf-8")


def requirements(root: Path) -> str:
    """``requirements.txt``: the course's dependencies, with the CPU build of the PyTorch the Makefile pins
    (``TORCH_SPEC``) from PyTorch's index (Gradescope's image installs it; so can a JupyterHub's)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    pin = re.search(r"^TORCH_SPEC \?= torch==([\w.]+)$", (root / "Makefile").read_text(encoding="utf-8"), re.M)
    if pin is None:
        raise ValueError(f"{root / 'Makefile'} names no TORCH_SPEC ?= torch==VERSION: the PyTorch to pin")
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    others = [d for d in project["dependencies"] if not re.match(r"torch\b", d)]
    return "\n".join([f"--extra-index-url {TORCH_INDEX}", f"torch=={pin.group(1)}+cpu", *others]) + "\n"


def refuse_leaks(root: Path, trees: dict[Path, str]) -> None:
    """ValueError naming the first lines if a solution line (or structure) of the course at ``root`` is
    found in one of ``trees`` (folder → what it is, for the message)."""
    from transformer_course_tools.exercises.answers import solution_snippets, solution_structures

    snippets, structures = solution_snippets(root), solution_structures(root)
    for tree, what in trees.items():
        leaks = solution_leaks(root, tree, snippets, structures)
        if leaks:
            shown = "\n".join(f"  {where}: {line}" for where, line in leaks[:20])
            raise ValueError(f"solution text (or structure) would remain in {what}:\n{shown}")


def longest_check_s(handout: Handout) -> float:
    """The longest time one graded check may take, Python's start-up included (the tools' cell limit)."""
    return max((handout.config.timeout_for(i) + STARTUP_S for i in handout.exercises), default=STARTUP_S)


def run_tool(args: list[str], cwd: Path, what: str) -> None:
    """Run ``python -m TOOL ARGS`` with this Python in ``cwd`` (this Python's scripts first on the PATH:
    nbgrader runs ``alembic`` by name); RuntimeError with the tool's last lines when it fails."""
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    done = subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"{what} failed (exit status {done.returncode}): {' / '.join(said)}")
