"""The set-up files agree with each other."""

from __future__ import annotations

import re

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, from PyPI (pyproject.toml asks for it there)
    import tomli as tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _dev_extras(project: dict) -> list[str]:
    """The extras that dev pulls in by naming the project itself ("transformer-course[hub]")."""
    return [e for r in project["optional-dependencies"]["dev"] if _name(r) == "transformer-course"
            for e in re.search(r"\[(.*)\]", r).group(1).split(",")]  # fmt: skip


def test_environment_yml_lists_the_same_dependencies_as_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    dev = [r for r in extras["dev"] if _name(r) != "transformer-course"] + [
        r for e in _dev_extras(project) for r in extras[e]
    ]
    wanted = {r.strip() for r in project["dependencies"] + dev}
    lines = (ROOT / "environment.yml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "- pip:")
    listed = {line.strip()[2:] for line in lines[start + 1 :] if line.strip().startswith("- ")}
    assert {_name(r) for r in listed} == {_name(r) for r in wanted}
    assert listed == wanted, f"version ranges differ: {sorted(listed ^ wanted)}"


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_ci_runs_every_notebook_again_on_another_cpus_arithmetic() -> None:
    makefile = (ROOT / "Makefile").read_text()
    other_cpu = re.search(r"^OTHER_CPU := (.*)$", makefile, re.M).group(1).split()
    assert "ATEN_CPU_CAPABILITY=default" in other_cpu and "OMP_NUM_THREADS=1" in other_cpu
    target = re.search(r"^test-other-cpu:.*\n\t(.*)$", makefile, re.M).group(1)
    assert "env $(OTHER_CPU)" in target and "$(NOTEBOOKS)" in target and "scripts/run_tests.sh" in target
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci.index("make test") < ci.index("make test-other-cpu") < ci.index("make test-oldest-unit")


def test_make_test_runs_the_chapters_tests_and_solutions_on_one_worker_per_core() -> None:
    makefile = (ROOT / "Makefile").read_text()
    target = re.search(r"^test:.*\n\t(.*)$", makefile, re.M).group(1)
    assert target.startswith("bash scripts/run_tests.sh") and "$(NBVAL)" in target
    assert target.index("chapters/") < target.index(" tests ") < target.index("solutions/")  # the trainers first
    runner = (ROOT / "scripts" / "run_tests.sh").read_text()
    assert "--dist loadfile" in runner  # a notebook's cells in order, in one kernel


def test_the_oldest_environment_installs_exactly_the_declared_floors() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # the dependencies, and the extras that dev pulls in ("transformer-course[hub]"): test-oldest installs dev
    extras = _dev_extras(project)
    floors = {}
    for requirement in [*project["dependencies"], *(r for e in extras for r in project["optional-dependencies"][e])]:
        found = re.match(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", requirement)
        if found and ";" not in requirement:  # tomli (Python 3.10 only) is pinned by nobody
            floors[_name(found.group(1))] = found.group(2)
    lines = (ROOT / "tests" / "oldest" / "constraints.txt").read_text().splitlines()
    pins = dict(line.split("==") for line in lines if line and not line.startswith("#"))
    assert set(pins) == set(floors), "every dependency with a floor is pinned at it in tests/oldest/constraints.txt"
    for name, floor in floors.items():
        assert pins[name].startswith(floor), f"{name}: pyproject allows >={floor}, test-oldest installs {pins[name]}"
    assert re.fullmatch(r">=\d+\.\d+", project["requires-python"]), "test-oldest reads the floor from here"
    assert "requires-python" in (ROOT / "scripts" / "test_oldest.sh").read_text()
