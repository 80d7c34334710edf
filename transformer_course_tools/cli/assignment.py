"""``assignment``: an assignment for nbgrader or Otter-Grader (Gradescope), from the worked notebooks."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
from pathlib import Path

from transformer_course_tools.course import course_root

from . import CLIError

TOOLS = {"nbgrader": ("nbgrader", "nbgrader"), "otter": ("otter", "otter-grader")}  # --for → (module, package)
_NAME = re.compile(r"[A-Za-z0-9][\w.-]{0,63}")  # an nbgrader assignment: a folder's name, no spaces


def _assignment(args: argparse.Namespace) -> int:
    root = course_root("assignment")
    from transformer_course_tools import grading
    from transformer_course_tools.grading import assignment

    out = args.out_dir.resolve()
    if out == root or root in out.parents:
        raise CLIError(f"OUT_DIR must be outside the course (its solutions would become course files): {out}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CLIError(f"OUT_DIR {out} exists and is not an empty folder")
    config_path = args.config or (root / "grading.toml" if (root / "grading.toml").exists() else None)
    config = grading.load_config(config_path)
    name = args.name or config.assignment
    if args.tool == "nbgrader" and name is not None and not _NAME.fullmatch(name):
        raise CLIError(f"--name: nbgrader's assignment is a folder: letters, digits, . _ - and no spaces, got {name!r}")
    handout = assignment.handout(root, config, args.exercises, name)
    if missing("jupytext"):
        raise CLIError("assignment needs jupytext to read the worked notebooks: pip install jupytext")
    module, package = TOOLS[args.tool]
    if missing(module):
        raise CLIError(f"{package} is not installed in this Python ({args.tool} makes the release from what this "
                       f"command writes): `make graders` installs it in .venv/graders; run this command with "
                       f".venv/graders/bin/python")  # fmt: skip
    try:
        lines = _write(root, out, handout, args.tool)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # never half an assignment (the masters hold the solutions)
        raise
    print("\n".join([*lines, *_not_carried(config, args.tool)]))
    return 0


def _not_carried(config, tool: str) -> list[str]:  # noqa: ANN001 - a GradingConfig
    """A line naming the settings of grading.toml that the tool's tests do not carry, if any is set."""
    settings = {"hidden = true (the hidden cases)": config.hidden,
                'scoring = "cases" (these tests give an exercise all its points or none)':
                    config.scoring != "all_or_nothing"}  # fmt: skip
    named = [name for name, on in settings.items() if on]
    return [f"note: grading.toml's {' and '.join(named)}: not carried to {tool}; grade applies it"] if named else []


def missing(module: str) -> bool:
    """``module`` cannot be imported in this Python."""
    return importlib.util.find_spec(module) is None


def _write(root: Path, out: Path, handout, tool: str) -> list[str]:  # noqa: ANN001 - an assignment.Handout
    """Write the assignment for ``tool`` and run the tool's own generation; what to tell the instructor."""
    from transformer_course_tools.grading import nbgrader, otter

    graded = f"{len(handout.exercises)} exercise(s) ({', '.join(handout.exercises)}) and {len(handout.questions)} written question(s)"
    if tool == "nbgrader":
        source = nbgrader.write_course(root, out, handout)
        release = _tool_step(lambda: nbgrader.generate(out, handout, root))
        return [f"wrote the nbgrader course {out}: nbgrader_config.py, {source.relative_to(out)}/ ({graded}) "
                f"and nbgrader's {release.relative_to(out)}/ (no solution text in it)",
                f"next, in {out}: hand out release/{handout.name}/ (or nbgrader release_assignment {handout.name}); "
                f"collect into submitted/<student>/{handout.name}/; then nbgrader autograde {handout.name}, "
                f"nbgrader generate_feedback {handout.name}, nbgrader export"]  # fmt: skip
    lines = [f"wrote the Otter assignment(s) in {out} ({graded}):"]
    masters = otter.write_masters(root, out, handout)
    outputs = [_tool_step(lambda master=master: otter.assign(master)) for master in masters]
    otter.check_outputs(root, outputs)
    for master, (student, archive) in zip(masters, outputs, strict=True):
        lines.append(f"  {master.relative_to(out)}: students get {student.relative_to(out)}/; Gradescope's "
                     f"autograder: {archive.relative_to(out)} (no solution text in either)")  # fmt: skip
    lines.append("grade a student's zip here with: otter run -a <the autograder zip> <their zip>")
    return lines


def _tool_step(step):  # noqa: ANN001, ANN202
    """Run the tool's step; its failure as one line."""
    try:
        return step()
    except RuntimeError as error:
        raise CLIError(str(error)) from None


DESCRIPTION = (
    "Write an assignment for nbgrader or Otter-Grader from the worked notebooks: the exercises and points of "
    "grading.toml (or --exercises), the written questions of their notebooks. nbgrader: a course folder "
    "(nbgrader_config.py, source/NAME/ with the notebooks as nbgrader cells and the student edition's package) and "
    "nbgrader's release/NAME/. Otter: per notebook, a master notebook in Otter's format with the package, and "
    "otter assign's dist/ (the students' folder and the Gradescope autograder zip). Each graded test runs the "
    "course's check on the student's files in a fresh Python. Every release is searched for solution text before "
    "it is kept. The tool must be installed in this Python (make graders: .venv/graders/bin/python)."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    summary = "write an assignment for nbgrader or Otter-Grader (Gradescope), graded by the course's checks"
    parser = subparsers.add_parser("assignment", help=summary, description=DESCRIPTION)
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="a new (or empty) folder outside the course")
    parser.add_argument("--for", dest="tool", choices=tuple(TOOLS), required=True, help="the grading tool")
    parser.add_argument("--exercises", nargs="+", metavar="ID",
                        help="the exercises graded, ids or chapters (ex03: all of chapter 03's; default: grading.toml's, else all)")  # fmt: skip
    parser.add_argument("--config", type=Path, help="points and limits (default: grading.toml of the course)")
    parser.add_argument("--name", help="nbgrader's assignment name (default: grading.toml's assignment, else the "
                        "notebook's name); Otter names each assignment after its notebook")  # fmt: skip
    parser.set_defaults(run=_assignment)
