"""How a chapter reads: its prose measured, so that the book's targets stay held.

    python -m transformer_course_tools.authoring.readability            # a table, one row per chapter
    python -m transformer_course_tools.authoring.readability --long     # and every sentence over 30 words

What is measured, per chapter (the markdown cells of its jupytext source, and the outputs of its
committed notebook):

* **words** of prose (headings, tables, math blocks, code blocks and HTML tags left out); a
  figure's description for a reader who cannot see it (a folded block ``<details><summary>The
  figure in words</summary> … </details>`` at the end of the markdown cell before the figure, which
  is also the web edition's alt text) is counted apart, as **figure words**: it describes the
  picture, it adds no material to the chapter;
* **sentences**: a list item or a table-free paragraph cut at ``.``, ``?``, ``!`` and ``:``
  followed by a capital or ``§`` (abbreviations such as "e.g." and "et al." do not end one; the
  mark may be inside a closing ``**``, ``*``, ``)`` or quote, as in a bold lead "**Where we are.**");
  the share over 30 words and the longest;
* **seed words**: the share of the prose's words in sentences about seeds, spreads or CPU paths
  (how the book tests a claim, which the book's first page says once);
* **machinery lines**: the share of the output lines a reader of the web edition sees that are
  the course's machinery rather than the chapter's results: claim checks (``✓``/``✗`` lines),
  exercise check lines, seed verdicts and settings dumps. Outputs of cells tagged ``hide-output``,
  ``remove-output``, ``hide-cell`` or ``remove-cell`` are not seen (the web edition folds or
  drops them).
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

HIDDEN_TAGS = {"hide-output", "remove-output", "hide-cell", "remove-cell"}
LONG = 30  # words: a sentence over this is long
ABBREVIATIONS = ("e.g.", "i.e.", "et al.", "vs.", "cf.", "etc.", "Fig.", "No.")
SEED_WORDS = re.compile(r"\b(seeds?|spread|ATEN_CPU_CAPABILITY|CPU paths?|another CPU|other CPUs?)\b", re.I)
# a figure described for a reader who cannot see it, folded for those who can; group 1, its description
# (book/conf.py makes that the image's alt text)
FIGURE_IN_WORDS = re.compile(
    r"<details><summary>The (?:diagram|figure) in words</summary>\s*(.+?)\s*</details>\s*$", re.S
)
MACHINERY = re.compile(
    r"^\s*(✓|✗|⚠)"  # a claim check or an exercise check line
    r"|^\s*(seeds?\b|beyond the spread|within the spread)"  # a seed verdict
    r"|^\s*(settings|profile|device)\s*[:=]",  # a settings dump
    re.I,
)


@dataclass
class Measures:
    """One chapter's prose and outputs, measured."""

    name: str
    words: int = 0
    sentences: list[str] = field(default_factory=list)
    seed_words: int = 0
    figure_words: int = 0
    output_lines: int = 0
    machinery_lines: int = 0

    @property
    def long_share(self) -> float:
        return sum(n_words(s) > LONG for s in self.sentences) / max(len(self.sentences), 1)

    @property
    def longest(self) -> int:
        return max((n_words(s) for s in self.sentences), default=0)

    @property
    def seed_share(self) -> float:
        return self.seed_words / max(self.words, 1)

    @property
    def machinery_share(self) -> float:
        return self.machinery_lines / max(self.output_lines, 1)


def n_words(text: str) -> int:
    """Words of running text: inline math and inline code count as one word each."""
    text = re.sub(r"\$[^$]+\$|`[^`]+`", " w ", text)
    return len(re.findall(r"[\w'’]+(?:[-.][\w'’]+)*", text))


def markdown_cells(source: str) -> list[str]:
    """The markdown cells of a jupytext percent file, without the comment marks."""
    cells = re.split(r"^# %%", source, flags=re.M)
    return [
        "\n".join(re.sub(r"^#\s?", "", line) for line in cell.splitlines()[1:])
        for cell in cells
        if cell.startswith(" [markdown]")
    ]


def prose_blocks(markdown: str) -> list[str]:
    """The paragraphs and list items of a markdown cell: running text only."""
    markdown = re.sub(r"```.*?```", "\n\n", markdown, flags=re.S)  # code blocks
    markdown = re.sub(r"\$\$.*?\$\$", "\n\n", markdown, flags=re.S)  # display math
    markdown = re.sub(r"<[^>]+>", " ", markdown)  # HTML tags (<details>, <summary>)
    markdown = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", markdown)  # images
    markdown = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)  # links: their text
    blocks, current = [], []
    for line in markdown.splitlines():
        stripped = line.strip()
        item = re.match(r"^(\s*)([-*+]|\d+\.)\s+", line)
        if not stripped or stripped.startswith(("#", "|", ">  ", "[![")) or item:
            blocks.append(" ".join(current))
            current = []
            if item:
                current = [line[item.end() :].strip()]
            continue
        current.append(stripped.lstrip("> ").strip())
    blocks.append(" ".join(current))
    return [b for b in blocks if n_words(b) > 0]


def sentences(block: str) -> list[str]:
    """A paragraph cut into sentences (see the module's docstring)."""
    protected = block
    for i, abbreviation in enumerate(ABBREVIATIONS):
        protected = protected.replace(abbreviation, f"\x00{i}\x00")
    parts = re.split(r"(?<=[.?!:])([*_)\"”’]*)\s+(?=[A-Z(`$*\"“§])", protected)
    parts = [a + b for a, b in zip(parts[::2], [*parts[1::2], ""], strict=True)]  # the closing marks stay
    restored = []
    for part in parts:
        for i, abbreviation in enumerate(ABBREVIATIONS):
            part = part.replace(f"\x00{i}\x00", abbreviation)
        if n_words(part):
            restored.append(part.strip())
    return restored


def measure_prose(path: Path) -> Measures:
    m = Measures(path.stem)
    for cell in markdown_cells(path.read_text(encoding="utf-8")):
        described = FIGURE_IN_WORDS.search(cell)
        if described:
            cell = cell[: described.start()]
            for sentence in sentences(" ".join(prose_blocks(described.group(1)))):
                m.sentences.append(sentence)
                m.figure_words += n_words(sentence)
        for block in prose_blocks(cell):
            for sentence in sentences(block):
                words = n_words(sentence)
                m.sentences.append(sentence)
                m.words += words
                if SEED_WORDS.search(sentence):
                    m.seed_words += words
    return m


def measure_outputs(notebook: Path, m: Measures) -> None:
    """The output lines of the committed notebook that the web edition shows, and of them the machinery's."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        if cell["cell_type"] != "code" or HIDDEN_TAGS & set(cell.get("metadata", {}).get("tags", [])):
            continue
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            if "image/png" in output.get("data", {}):
                continue  # a figure: its text is its repr
            lines = [line for line in "".join(text).splitlines() if line.strip()]
            m.output_lines += len(lines)
            m.machinery_lines += sum(bool(MACHINERY.search(line)) for line in lines)


def measure(chapter: Path) -> Measures:
    """A chapter's measures from its ``.py`` source and, if present, its ``.ipynb``."""
    m = measure_prose(chapter)
    notebook = chapter.with_suffix(".ipynb")
    if notebook.exists():
        measure_outputs(notebook, m)
    return m


def table(chapters: list[Path]) -> str:
    rows = ["| chapter | words | figure words | sentences | over 30 words | longest | seed words | machinery lines |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for path in chapters:
        m = measure(path)
        rows.append(f"| {m.name} | {m.words:,} | {m.figure_words:,} | {len(m.sentences)} | {m.long_share:.0%} | {m.longest} | "
                    f"{m.seed_share:.1%} | {m.machinery_lines}/{m.output_lines} ({m.machinery_share:.0%}) |")  # fmt: skip
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="How each chapter reads (see the module's docstring).")
    parser.add_argument("chapters", nargs="*", type=Path, help="chapter sources (default: chapters/*.py)")
    parser.add_argument("--long", action="store_true", help=f"list every sentence over {LONG} words")
    args = parser.parse_args(argv)
    chapters = args.chapters or sorted(Path("chapters").glob("*.py"))
    print(table(chapters))
    if args.long:
        for path in chapters:
            for sentence in measure_prose(path).sentences:
                if n_words(sentence) > LONG:
                    print(f"\n{path.stem} ({n_words(sentence)} words): {sentence}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
