"""The set-up files agree with each other."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_lists_the_same_dependencies_as_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {r.strip() for r in project["dependencies"] + project["optional-dependencies"]["dev"]}
    lines = (ROOT / "environment.yml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "- pip:")
    listed = {line.strip()[2:] for line in lines[start + 1 :] if line.strip().startswith("- ")}
    assert {_name(r) for r in listed} == {_name(r) for r in wanted}
    assert listed == wanted, f"version ranges differ: {sorted(listed ^ wanted)}"


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
