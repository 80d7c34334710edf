"""The rewriting nbval applies to outputs before it compares them (nbval_sanitize.cfg), for the
tests that compare outputs themselves: a measured value, a time, an address may differ from the
committed notebook on another machine; what the chapter claims may not."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _rules() -> list[tuple[re.Pattern, str]]:
    config = configparser.ConfigParser()
    config.read(ROOT / "nbval_sanitize.cfg", encoding="utf-8")
    return [(re.compile(config[s]["regex"]), config[s]["replace"]) for s in config.sections()]


RULES = _rules()


def sanitized(text: str) -> str:
    """``text`` as nbval compares it."""
    for pattern, replacement in RULES:
        text = pattern.sub(replacement, text)
    return text
