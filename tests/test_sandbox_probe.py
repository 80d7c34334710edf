"""Which sandbox the grader uses, on machines where one or both mechanisms fail: stand-ins on the PATH.

A learner's or an instructor's machine may lack bubblewrap, or refuse the namespaces that bwrap and
util-linux's ``unshare`` need (a container, Ubuntu 24.04's AppArmor, macOS). Each case is simulated
here with small shell scripts first on the PATH; the probe must then say, in one line per mechanism,
why it cannot serve (never a traceback), the grader's report, feedback and progress line must say the
same words, and a mechanism that works must still be the one used.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from transformer_course_tools.grading import sandbox

from . import sandboxes

BWRAP_SAYS = "bwrap: No permissions to creating new namespace, likely because the kernel does not allow it"
UNSHARE_SAYS = "unshare: unshare failed: Operation not permitted"


def _script(folder: Path, name: str, stderr: str = "") -> None:
    path = folder / name
    say = f"echo '{stderr}' >&2\n" if stderr else ""
    path.write_text(f"#!/bin/sh\n{say}exit 1\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


MACHINE_PATH = os.environ.get("PATH", os.defpath)


def _real(folder: Path, name: str) -> None:
    """A link to the machine's own tool, so that only the stand-ins differ from the machine."""
    found = shutil.which(name, path=MACHINE_PATH)
    if found is not None:
        (folder / name).symlink_to(found)


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Make a PATH of stand-ins: ``machine(bwrap=..., unshare=...)``, each "missing", "refused",
    "silent" (refused without a word) or "real" (the machine's own, where it has one)."""

    def make(bwrap: str, unshare: str) -> Path:
        folder = tmp_path / f"bin-{bwrap}-{unshare}"
        folder.mkdir()
        for tool in ("prlimit", "setpriv"):  # bwrap's helpers stay the machine's own
            _real(folder, tool)
        for name, how, says in (("bwrap", bwrap, BWRAP_SAYS), ("unshare", unshare, UNSHARE_SAYS)):
            if how == "real":
                _real(folder, name)
            elif how in ("refused", "silent"):
                _script(folder, name, says if how == "refused" else "")
        monkeypatch.setenv("PATH", str(folder))
        sandbox._problem.cache_clear()
        return folder

    yield make
    sandbox._problem.cache_clear()  # the next test probes the machine as it is


def _one_line(support: sandbox.SandboxSupport) -> str:
    assert "\n" not in support.description and "Traceback" not in support.description, support.description
    return support.description


@pytest.mark.parametrize(
    ("bwrap", "unshare", "reasons"),
    [
        ("missing", "missing", ["bwrap not installed", "unshare not installed"]),
        ("refused", "missing", [f"bwrap refused: {BWRAP_SAYS}", "unshare not installed"]),
        ("missing", "refused", ["bwrap not installed", f"unshare refused: {UNSHARE_SAYS}"]),
        ("refused", "refused", [f"bwrap refused: {BWRAP_SAYS}", f"unshare refused: {UNSHARE_SAYS}"]),
        (
            "silent",
            "silent",
            ["bwrap refused: exit status 1, no message", "unshare refused: exit status 1, no message"],
        ),
    ],
)
def test_where_nothing_works_the_probe_says_why_in_one_line(machine, bwrap: str, unshare: str, reasons: list) -> None:
    machine(bwrap=bwrap, unshare=unshare)
    support = sandbox.probe()
    assert (support.mechanism, support.isolated) == ("none", False)
    assert _one_line(support).startswith(f"NOT sandboxed ({'; '.join(reasons)}): ")
    assert [_one_line(sandbox.probe(name)) for name in ("bwrap", "unshare")] == reasons
    with pytest.raises(sandbox.SandboxError, match="a sandbox is required") as caught:
        sandbox.run(["true"], require_isolation=True)
    assert "\n" not in str(caught.value)
    assert sandbox.run(["true"]).ok  # without a sandbox the job still runs, with its limits


def test_an_unknown_architecture_is_named(machine, monkeypatch: pytest.MonkeyPatch) -> None:
    machine(bwrap="missing", unshare="refused")
    monkeypatch.setattr(sandbox, "PIVOT_ROOT", None)
    assert _one_line(sandbox.probe("unshare")).startswith("unshare: unknown architecture ")


@pytest.mark.parametrize("refused", ["missing", "refused"])
def test_a_mechanism_that_works_is_still_used(machine, refused: str) -> None:
    """bwrap missing or refused: unshare serves where it works; where the machine's bwrap works, it is chosen."""
    machine(bwrap=refused, unshare="real")
    sandboxes.needs("unshare")
    assert sandbox.probe().mechanism == "unshare"
    assert sandbox.run(["true"], require_isolation=True).mechanism == "unshare"
    machine(bwrap="real", unshare="refused")
    sandboxes.needs("bwrap")
    assert sandbox.probe().mechanism == "bwrap"


def test_the_grader_says_the_probes_words(machine, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """With both refused, ``grade`` grades without a sandbox and its warning, progress line, report
    and feedback all carry the probe's one line."""
    from transformer_course_tools.cli import main

    machine(bwrap="refused", unshare="refused")
    description = sandbox.probe().description
    (tmp_path / "subs" / "ada" / "transformer_course").mkdir(parents=True)  # a student with no answers
    out = tmp_path / "grades" / "report.csv"
    status = main(["grade", str(tmp_path / "subs"), "--out", str(out), "--exercises", "ex01_1", "--timeout", "60"])
    printed = capsys.readouterr()
    assert status == 0, printed.err
    assert f"warning: {description}." in printed.out and f"({description})" in printed.out
    assert f"grading 1 student(s): {description}" in printed.err and "Traceback" not in printed.err + printed.out
    assert json.loads(out.with_suffix(".json").read_text())["sandbox"] == description
    assert description.rstrip(".") in (out.parent / "feedback" / "ada.md").read_text()
    assert main(["grade", str(tmp_path / "subs"), "--out", str(out), "--require-sandbox"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_ci_machine_requires_what_it_installed() -> None:
    """Where ``COURSE_REQUIRE_SANDBOX`` names a mechanism (CI), it works: the tests that need it cannot skip."""
    for name in sorted(sandboxes.required()):
        assert sandbox.probe(name).isolated, sandbox.probe(name).description
    if not sandboxes.required():
        pytest.skip("COURSE_REQUIRE_SANDBOX is not set (CI sets it to the sandboxes it installed)")
