"""``sync-links``: rewrite the Colab badges, the notebooks' first cells and the guides' URLs from
``REPOSITORY_URL`` (``transformer_course_tools/course.py``), in a clone of the course."""

from __future__ import annotations

import argparse

from transformer_course_tools.course import REPOSITORY_URL, course_root

from .exercises import _needs_jupytext


def _sync_links(args: argparse.Namespace) -> int:
    root = course_root("sync-links")
    _needs_jupytext("sync-links")
    from transformer_course_tools.authoring.links import sync_links

    changed = sync_links(root, write=not args.check)
    for path in changed:
        print(f"{'out of date' if args.check else 'wrote'} {path.relative_to(root)}")
    if not changed:
        print(f"every badge, first cell and guide points to {REPOSITORY_URL}")
    return 1 if args.check and changed else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    links = subparsers.add_parser(
        "sync-links", help="rewrite the Colab badges, first cells and guides from REPOSITORY_URL (in a clone)"
    )
    links.add_argument("--check", action="store_true", help="write nothing; list the files that are out of date")
    links.set_defaults(run=_sync_links)
