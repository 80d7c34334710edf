"""Sphinx configuration of the course's web edition (`make book`, output in _build/book/).

Why Sphinx + MyST-NB + sphinx-book-theme: all three install with pip alone and build offline;
MyST-NB renders the committed .ipynb files as they are (no re-execution), outputs and figures
included; the book theme brings navigation, search, and the "Open in Colab" and ".ipynb" download
buttons. Jupyter Book 1 is this same stack behind another config file; Jupyter Book 2 (MyST) needs
Node.js and fetches its theme at build time; mkdocs-jupyter and Quarto load MathJax from a CDN or
need a separate binary. MathJax 3 comes from the pip package sphinx-mathjax-offline, copied into
the site, so a page typesets math without a network.

The source folder is the repository root (so the links between chapters and exercises resolve as
they do on GitHub), narrowed by include_patterns; this folder holds only the configuration.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _course_module(path: str):
    """A module of transformer_course_tools/ (``"authoring/pairs"``) loaded alone (the site's build
    does not install torch)."""
    name = path.replace("/", "_")
    spec = importlib.util.spec_from_file_location(f"_course_{name}", ROOT / "transformer_course_tools" / f"{path}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # registered first, as an import does (dataclasses look it up)
    spec.loader.exec_module(module)
    return module


def _repository_url() -> str:
    """The repository the Colab and GitHub buttons point to: the course's one constant
    (transformer_course_tools/course.py). COURSE_REPOSITORY_URL overrides it (for a fork)."""
    return os.environ.get("COURSE_REPOSITORY_URL", _course_module("course").REPOSITORY_URL).rstrip("/")


REPOSITORY_URL = _repository_url()
BRANCH = os.environ.get("COURSE_BRANCH", "main")

project = "The Transformer, built and explained"
author = "The course's authors"
copyright = "the course's authors, MIT licence"

root_doc = "book/index"
include_patterns = ["book/*.md", "chapters/*.ipynb", "exercises/*.ipynb"]  # never solutions/
exclude_patterns = ["_build", ".venv", "**/.ipynb_checkpoints"]

extensions = ["myst_nb", "sphinx-mathjax-offline"]
nb_execution_mode = "off"  # show the committed outputs
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]

html_theme = "sphinx_book_theme"
html_title = project
html_static_path = ["_static"]
html_extra_path = ["_extra"]  # index.html at the site root: a redirect to book/index.html
html_sourcelink_suffix = ""  # the download button then serves the .ipynb itself
html_last_updated_fmt = None
html_theme_options = {
    "repository_url": REPOSITORY_URL,
    "repository_branch": BRANCH,
    "path_to_docs": "",
    "use_repository_button": True,
    "use_download_button": True,
    "launch_buttons": {"colab_url": "https://colab.research.google.com"},
    "show_toc_level": 2,
}
# Light pages (the figures have white backgrounds); left unset, the theme logs a console error.
html_context = {"default_mode": "light"}
html_favicon = "_static/favicon.svg"

# The notebooks show Colab's badge, an image on Colab's server; the site uses its own copy so
# that every page loads without a network.
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"


def _local_badge(app, doctree):
    from docutils import nodes

    for image in doctree.findall(nodes.image):
        if image.get("uri") == COLAB_BADGE:
            image["uri"] = "/book/_static/colab-badge.svg"  # "/" = the source folder


# A figure's description for screen readers: the folded "The figure in words" (or "The diagram in
# words") block that ends the markdown cell right before the figure's code cell.
ALT_TEXT = _course_module("authoring/readability").FIGURE_IN_WORDS  # the pattern the readability measure counts apart


def _alt_text(markdown: str) -> str | None:
    found = ALT_TEXT.search(markdown)
    return re.sub(r"[*`$\\]|\s+(?=\s)", "", found.group(1)).replace("\n", " ") if found else None


def _for_readers(app, docname, source):
    """Tidy-ups of a notebook page (the downloadable .ipynb stays as committed): the Colab cell (tagged
    ``colab``: it does nothing outside Colab) is removed, as if tagged ``remove-cell``; a figure after
    a folded "The diagram in words" block gets that block as its alt text; a text progress bar, stored with every update after a carriage return,
    shows its last state only, as in a terminal or JupyterLab."""
    if not source[0].lstrip().startswith("{"):
        return
    notebook = json.loads(source[0])
    apply_carriage_returns = _course_module("authoring/pairs").apply_carriage_returns
    previous = None
    for cell in notebook.get("cells", []):
        metadata = cell.setdefault("metadata", {})
        if "colab" in metadata.get("tags", []):
            metadata["tags"] = [*metadata["tags"], "remove-cell"]
        if cell.get("cell_type") == "code" and previous is not None and previous.get("cell_type") == "markdown":
            alt = _alt_text("".join(previous["source"]))
            if alt:
                metadata.setdefault("mystnb", {}).setdefault("image", {})["alt"] = alt
        previous = cell
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                text = "".join(output["text"]) if isinstance(output["text"], list) else output["text"]
                output["text"] = apply_carriage_returns(text)
    source[0] = json.dumps(notebook)


def setup(app):
    app.connect("doctree-read", _local_badge, priority=100)  # before images are collected
    app.connect("source-read", _for_readers)
