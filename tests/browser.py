"""Headless Chromium for the browser tests (the web edition, JupyterLab), driven by selenium.

The system's Chromium and ChromeDriver are used (Debian: `apt-get install chromium
chromium-driver`); nothing is downloaded. When one of them is missing the test is skipped and
the reason names what is missing; with COURSE_REQUIRE_BROWSER=1 (set by .ci/run when it could
install them) it fails instead, so CI cannot pass by skipping.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"  # screenshots (gitignored)

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--window-size=1280,900",
)


def _missing(reason: str) -> None:
    if os.environ.get("COURSE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (COURSE_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


def find_browser() -> tuple[str, str]:
    """Paths of Chromium and ChromeDriver, or skip naming what is missing."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        _missing("selenium is not installed (pip install -e '.[browser]', or make test)")
    chromium = os.environ.get("CHROMIUM") or next(filter(None, map(shutil.which, CHROMIUM_NAMES)), None)
    driver = os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver")
    missing = [name for name, path in (("Chromium", chromium), ("ChromeDriver", driver)) if not path]
    if missing:
        _missing(f"{' and '.join(missing)} not found (Debian: apt-get install chromium chromium-driver)")
    return chromium, driver


@contextlib.contextmanager
def chromium() -> Iterator:
    """A headless Chromium with a fresh profile that records the console."""
    binary, driver_path = find_browser()  # first: it skips, naming what is missing
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = binary
        for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
        try:
            yield driver
        finally:
            driver.quit()


def console_errors(driver) -> list[str]:
    """The console's error messages since the last call."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def screenshot(driver, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    driver.save_screenshot(str(path))
    return path
