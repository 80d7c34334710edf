"""The web edition (`make book`) in a real browser.

The site is built from the committed notebooks (or reused when _build/book/ is newer than all
it is built from), served on localhost and opened page by page in headless Chromium. Every page: no
console error, every formula typeset by MathJax, every image loaded, every internal link and
anchor found; chapter and exercise pages also carry their Colab and .ipynb download links.
Screenshots of two pages go to test-artifacts/.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import pytest

from .browser import ROOT, _missing, chromium, console_errors, screenshot

SITE = ROOT / "_build" / "book"
# The same command as `make book`.
BUILD = [sys.executable, "-m", "sphinx", "-q", "-E", "-W", "--keep-going", "-b", "html", "-c", "book"]
BUILD += ["-d", "_build/doctrees", ".", str(SITE)]
NOTEBOOK_PAGES = [f"{p.parent.name}/{p.stem}" for p in sorted(ROOT.glob("chapters/*.ipynb"))]
NOTEBOOK_PAGES += [f"{p.parent.name}/{p.stem}" for p in sorted(ROOT.glob("exercises/*.ipynb"))]
PAGES = ["book/index", *NOTEBOOK_PAGES]
COLAB = "https://colab.research.google.com/github/"

WAIT_FOR_PAGE = """
const done = arguments[arguments.length - 1];
const images = [...document.images];
images.forEach(img => { img.loading = "eager"; });
const loaded = Promise.all(images.map(img => img.complete ? null : new Promise(r => { img.onload = img.onerror = r; })));
const typeset = new Promise(resolve => {
  if (!document.querySelector(".math")) return resolve("no math");
  const start = Date.now();
  (function poll() {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise)
      MathJax.startup.promise.then(() => resolve("typeset"), e => resolve("MathJax failed: " + e));
    else if (Date.now() - start > 20000) resolve("MathJax never started");
    else setTimeout(poll, 50);
  })();
});
Promise.all([loaded, typeset]).then(([_, math]) => done(math));
"""

INSPECT = """
const math = [...document.querySelectorAll(".math")];
return {
  math: math.length,
  typeset: math.filter(m => m.querySelector("mjx-container")).length,
  mathErrors: document.querySelectorAll("mjx-merror").length,
  brokenImages: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src),
  links: [...document.querySelectorAll("a[href]")].map(a => a.href),
};
"""


@pytest.fixture(scope="module")
def site() -> Path:
    for module in ("sphinx", "myst_nb", "sphinx_book_theme"):
        try:
            __import__(module)
        except ImportError:
            _missing(f"{module} is not installed (pip install -e '.[book]', or make book)")
    if not _up_to_date():
        result = subprocess.run(BUILD, cwd=ROOT, capture_output=True, text=True)
        assert result.returncode == 0, f"the site does not build:\n{result.stdout}\n{result.stderr}"
    return SITE


def _up_to_date() -> bool:
    """The site in _build/book/ is newer than every notebook and file it is built from."""
    built = SITE / "searchindex.js"  # written by every build
    inputs = [*ROOT.glob("chapters/*.ipynb"), *ROOT.glob("exercises/*.ipynb"), *(ROOT / "book").rglob("*")]
    return built.exists() and all(p.stat().st_mtime < built.stat().st_mtime for p in inputs)


@pytest.fixture(scope="module")
def server(site: Path):
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as driver:
        driver.set_script_timeout(40)
        yield driver


@functools.cache
def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, ""


def anchors(html: str) -> set[str]:
    return set(re.findall(r'\b(?:id|name)="([^"]+)"', html))


def test_site_has_the_chapters_and_exercises_but_no_solutions(site: Path) -> None:
    built = {str(p.relative_to(site).with_suffix("")) for p in site.glob("*/*.html")}
    assert set(NOTEBOOK_PAGES) <= built
    assert not list(site.rglob("*solutions*")), "the web edition must not show the solutions"
    assert (site / "index.html").exists() and (site / "search.html").exists()


def test_site_loads_nothing_from_the_network(site: Path) -> None:
    remote = re.compile(r'<(?:script|img|link|iframe)\b[^>]*\b(?:src|href)="((?:https?:)?//[^"]+)"')
    found = {}
    for page in site.rglob("*.html"):
        hits = [
            url for url in remote.findall(page.read_text(encoding="utf-8")) if "colab.research.google.com" not in url
        ]
        if hits:
            found[str(page.relative_to(site))] = hits
    assert not found, f"pages load resources from the network: {found}"


@pytest.mark.parametrize("page", PAGES)
def test_page_in_browser(page: str, server: str, browser) -> None:
    url = f"{server}/{page}.html"
    console_errors(browser)  # forget the previous page's messages
    browser.get(url)
    math_state = browser.execute_async_script(WAIT_FOR_PAGE)
    state = browser.execute_script(INSPECT)

    assert math_state in ("typeset", "no math"), math_state
    assert state["typeset"] == state["math"], f"{state['math'] - state['typeset']} formulas not typeset"
    assert state["mathErrors"] == 0, "MathJax reported TeX errors"
    if page.startswith("chapters/"):
        assert state["math"] > 0
    assert not state["brokenImages"], f"images that did not load: {state['brokenImages']}"

    for link in sorted(set(state["links"])):
        if not link.startswith(server):
            continue
        target, fragment = urldefrag(link)
        status, html = fetch(target)
        assert status == 200, f"{page}: broken link {urlsplit(link).path} ({status})"
        if fragment and target.endswith(".html"):
            assert fragment in anchors(html), f"{page}: no anchor #{fragment} in {urlsplit(target).path}"

    if page in NOTEBOOK_PAGES:
        assert f"{COLAB}" in " ".join(state["links"]), "no Open in Colab link"
        assert any(link.endswith(f"/blob/main/{page}.ipynb") for link in state["links"] if link.startswith(COLAB))
        download = f"{server}/_sources/{page}.ipynb"
        assert download in state["links"], "no .ipynb download link"
        assert "cells" in json.loads(fetch(download)[1])

    errors = console_errors(browser)
    assert not errors, f"console errors on {page}: {errors}"
    if page == "chapters/03_attention":
        screenshot(browser, "book-chapter-03.png")


def test_search_finds_a_chapter(server: str, browser) -> None:
    browser.get(f"{server}/search.html?q=softmax")
    from selenium.webdriver.support.ui import WebDriverWait

    results = WebDriverWait(browser, 30).until(
        lambda d: d.execute_script(
            "const r = [...document.querySelectorAll('#search-results li a')].map(a => a.textContent);"
            "return r.length ? r : null;"
        )
    )
    assert any("Chapter" in title for title in results), results
    screenshot(browser, "book-search.png")
    assert not console_errors(browser)


def test_pages_workflow_installs_the_book_extra() -> None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    book = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["book"]
    workflow = (ROOT / ".github" / "workflows" / "pages.yml").read_text()
    assert re.findall(r'"([^"]+)"', re.search(r"pip install (.*)", workflow).group(1)) == book
    assert "-c book" in workflow and "_build/book" in workflow


def test_pages_are_tidied_for_readers(site: Path) -> None:
    pages = {p: p.read_text(encoding="utf-8") for p in site.glob("*/*.html")}
    assert not [p.name for p, html in pages.items() if "NBVAL_" in html], "nbval markers shown to readers"
    training = pages[site / "chapters" / "08_training.html"]
    assert training.count("step/s") < 10, "the progress bar shows every update instead of its last state"
