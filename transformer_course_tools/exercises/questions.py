"""The written questions of the exercise notebooks: the "in your own words" cells of ``solutions/``.

A markdown cell of ``solutions/exNN_*.py`` holding a solution region is a written question (the
region becomes ``YOUR ANSWER HERE`` in ``exercises/``). Its id is ``exNN_qK``: the K-th such cell
(from 1) of the notebook ``exNN_*``; its text is the cell's markdown before the region.
``grading.toml``'s ``[written]`` names questions by these ids; :mod:`.written` grades the answers.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from transformer_course_tools import course

from .regions import TEXT_STUB, solution_regions

QUESTION_ID = re.compile(r"(ex\d\d)_q([1-9]\d*)")  # ex03_q2: the 2nd written question of exercises/ex03_*.ipynb
SHORT = 200  # characters of a question's text in the sheet


@dataclass(frozen=True)
class Question:
    id: str  # "ex03_q2"
    notebook: str  # "ex03_attention": the notebook's name without .ipynb
    text: str  # the cell's markdown before its solution region (after the one before, in a cell of two)
    until: str = ""  # the text of the next question in the same cell, where this answer ends ("": none)

    def short(self) -> str:
        """The question in one line: its last paragraph (the question itself), cut to SHORT."""
        last = " ".join(self.text.strip().split("\n\n")[-1].split())
        return last if len(last) <= SHORT else last[: SHORT - 1] + "…"


def questions_in(cells: Iterable[tuple[str, str]], notebook: str) -> list[Question]:
    """The written questions of a solution notebook's (cell type, source) pairs, in order."""
    found: list[Question] = []
    for kind, source in cells:
        if kind != "markdown":
            continue
        lines, texts, after = source.split("\n"), [], 0  # after: the first line past the region before
        for begin, end in solution_regions(source):
            texts.append("\n".join(lines[after:begin]).strip())
            after = end + 1
        for k, text in enumerate(texts):
            until = texts[k + 1] if k + 1 < len(texts) else ""
            found.append(Question(f"{notebook[:4]}_q{len(found) + 1}", notebook, text, until))
    return found


def worked_answers_in(cells: Iterable[tuple[str, str]], notebook: str) -> dict[str, str]:
    """Question id → its worked answer (the text of its solution region), numbered as :func:`questions_in`."""
    found: dict[str, str] = {}
    for kind, source in cells:
        if kind == "markdown":
            lines = source.split("\n")
            for begin, end in solution_regions(source):
                found[f"{notebook[:4]}_q{len(found) + 1}"] = "\n".join(lines[begin + 1 : end]).strip()
    return found


@functools.lru_cache(maxsize=4)
def course_questions(root: Path | None = None) -> dict[str, Question]:
    """Every written question of the course (``solutions/*.py`` of ``root``, default: this course's)."""
    import jupytext

    root = root or course.find_course_root()
    questions: dict[str, Question] = {}
    if root is None or not (root / "solutions").is_dir():
        return questions  # a student edition: no written question to grade
    for path in sorted((root / "solutions").glob("ex[0-9][0-9]_*.py")):
        cells = [(cell.cell_type, cell.source) for cell in jupytext.read(path).cells]
        questions |= {q.id: q for q in questions_in(cells, path.stem)}
    return questions


def check_question_ids(ids: Iterable[str]) -> None:
    """ValueError (one line) for an id of grading.toml's [written] that is no written question."""
    known = course_questions()
    for question_id in ids:
        if question_id not in known:
            same = [q for q in known if q.startswith(question_id[:5])]
            raise ValueError(f"[written] {question_id}: no such written question in solutions/ of the complete course"
                             + (f" (there: {', '.join(same)})" if same else ""))  # fmt: skip


# ---------------------------------------------------------------- an answer in a notebook


def _find(text: str, source: str) -> re.Match | None:
    """Where ``text`` is in ``source``, whitespace aside (a student's editor may wrap lines anew)."""
    return re.search(r"\s+".join(re.escape(word) for word in text.split()), source)


def answer_in(question: Question, source: str) -> str | None:
    """The answer in a markdown cell: what follows the question (up to the next question of the same
    cell); None when the cell does not hold the question, "" when it is not answered (empty, or only
    ``YOUR ANSWER HERE``)."""
    match = _find(question.text, source)
    if match is None:
        return None
    rest = source[match.end() :]
    end = _find(question.until, rest) if question.until else None
    lines = [line for line in rest[: end.start() if end else None].split("\n") if line.strip() != TEXT_STUB]
    return "\n".join(lines).strip()


def notebook_answers(path: Path, questions: list[Question]) -> dict[str, str]:
    """Question id → the answer in the notebook ``path`` ("" when unanswered or no cell asks it).
    Raises ValueError (one line) for a file that is no notebook."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        sources = [
            "".join(c["source"]) if isinstance(c["source"], list) else str(c["source"])
            for c in cells
            if c.get("cell_type") == "markdown"
        ]
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path.name} is not a notebook ({type(error).__name__})") from None
    answers = {}
    for q in questions:
        found = (answer_in(q, source) for source in sources)
        answers[q.id] = next((a for a in found if a is not None), "")
    return answers
