"""The grading tests that need a sandbox: skipped where none works, naming why, and required in CI.

Where bubblewrap or util-linux's ``unshare`` cannot build a sandbox (macOS, a container without user
namespaces, Ubuntu 24.04's AppArmor setting), a test that needs one is skipped with the probe's own
one-line reason, so that ``make test`` passes on a learner's machine. ``COURSE_REQUIRE_SANDBOX``
names the mechanisms that must work (``.ci/run`` sets it to what it installed and found working):
there a missing sandbox fails the test instead, so CI cannot pass by skipping.
"""

from __future__ import annotations

import os

import pytest

from transformer_course_tools.grading import sandbox


def required() -> set[str]:
    """The mechanisms that must work on this machine (``COURSE_REQUIRE_SANDBOX``, comma or space separated)."""
    return set(os.environ.get("COURSE_REQUIRE_SANDBOX", "").replace(",", " ").split())


def needs(mechanism: str | None = None) -> sandbox.SandboxSupport:
    """The support for ``mechanism`` (None: the best one here); skip naming why when it does not isolate."""
    support = sandbox.probe(mechanism)
    if support.isolated:
        return support
    reason = f"no sandbox works here: {support.description}"
    if required() if mechanism is None else required() & {mechanism}:
        pytest.fail(f"{reason} (COURSE_REQUIRE_SANDBOX={os.environ['COURSE_REQUIRE_SANDBOX']})")
    pytest.skip(reason)
