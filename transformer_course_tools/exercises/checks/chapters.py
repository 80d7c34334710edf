"""Imports every chapter's check module (``ch01.py``, ``ch02.py``, …); each one registers its
exercises on import, so adding a chapter needs no edit here."""

import importlib
import pkgutil

from . import __path__ as _checks_path

for _info in sorted(pkgutil.iter_modules(_checks_path), key=lambda i: i.name):
    if _info.name.startswith("ch") and _info.name[2:].isdigit():
        importlib.import_module(f"{__package__}.{_info.name}")
