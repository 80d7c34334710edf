"""Written answers for a self-learner: ``check("ex11_q1")`` (or ``python -m transformer_course check ex11_q1``).

The exercise notebooks ask questions in prose ("*In your own words:* …"), ``exNN_qK``
(:mod:`.questions`). An instructor grades them (``grade``); a self-learner has nobody to, so once an
answer is written and the notebook saved, ``check`` shows the points a good answer makes (the course's
worked answer), never before. Its code blocks are left out: they are the exercise's code, which
``restore`` puts in when the learner gives up on it.

The student edition carries the questions and the worked answers in ``.written-answers.json`` at its
root, the answers compressed and base64-encoded: out of sight until asked for, and out of reach of
the search for solution text that every edition passes (:mod:`.answers`). This keeps them from being
read by accident, not from someone who wants to read them. ``student-edition --no-worked-answers``
(an instructor's handout) leaves them out: ``check`` then says that the answer is written, nothing more.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from pathlib import Path

from transformer_course_tools.course import package_dir

from .questions import Question, notebook_answers, worked_answers_in

FILE = ".written-answers.json"  # at the root of a student edition
_CODE_BLOCK = re.compile(r"^```.*?^```[ \t]*$\n?", re.S | re.M)
LEFT_OUT = "(the worked code is left out here: `python -m transformer_course restore` puts an exercise's in your room)"


def edition_file(root: Path, worked: bool = True) -> str:
    """What a student edition made from the complete course at ``root`` holds in :data:`FILE`: every
    question (its notebook, its text and where its answer ends), and with ``worked`` the worked answers."""
    questions, answers = _from_solutions(root)
    data: dict = {
        "questions": {q.id: {"notebook": q.notebook, "text": q.text, "until": q.until} for q in questions.values()},
        "worked_answers": worked,
    }
    if worked:
        packed = zlib.compress(json.dumps({i: _without_code(a) for i, a in answers.items()}).encode(), 9)
        data["packed"] = base64.b64encode(packed).decode("ascii")
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def _from_solutions(root: Path) -> tuple[dict[str, Question], dict[str, str]]:
    import jupytext

    from .questions import questions_in

    questions: dict[str, Question] = {}
    answers: dict[str, str] = {}
    for path in sorted((root / "solutions").glob("ex[0-9][0-9]_*.py")):
        cells = [(cell.cell_type, cell.source) for cell in jupytext.read(path).cells]
        questions |= {q.id: q for q in questions_in(cells, path.stem)}
        answers |= worked_answers_in(cells, path.stem)
    return questions, answers


def _without_code(answer: str) -> str:
    """A worked answer without its fenced code blocks (an exercise's code: ``restore`` gives it)."""
    return re.sub(r"\n{3,}", "\n\n", _CODE_BLOCK.sub(LEFT_OUT + "\n", answer)).strip()


def _known(root: Path) -> tuple[dict[str, Question], dict[str, str] | None]:
    """The questions and the worked answers (None: this edition has none to show) of the course at ``root``."""
    path = root / FILE
    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
        questions = {i: Question(i, q["notebook"], q["text"], q["until"]) for i, q in data["questions"].items()}
        packed = data.get("packed") if data.get("worked_answers") else None
        return questions, json.loads(zlib.decompress(base64.b64decode(packed))) if packed else None
    if (root / "solutions").is_dir():  # the complete course
        questions, answers = _from_solutions(root)
        return questions, {i: _without_code(a) for i, a in answers.items()}
    return {}, None


def review(question_id: str, root: Path | None = None) -> tuple[bool, str]:
    """(answered, what to show) for written question ``question_id`` of the course at ``root`` (default:
    the one whose package runs): not answered yet, where to write it; answered, the worked answer's points."""
    root = root or package_dir().parent
    questions, worked = _known(root)
    if question_id not in questions:
        same = sorted(q for q in questions if q.startswith(question_id[:5]))
        there = f" (that notebook's: {', '.join(same)})" if same else ""
        raise KeyError(f"unknown written question {question_id!r}{there}")
    question = questions[question_id]
    where = f"exercises/{question.notebook}.ipynb"
    notebook = root / where
    if not notebook.is_file():
        return False, f"○ {question_id}: {where} is not in {root}: the answer is written in that notebook"
    answer = notebook_answers(notebook, [question])[question_id]
    if not answer:
        return False, (
            f"○ {question_id} not answered yet: in {where}, write your answer in place of YOUR ANSWER HERE under "
            f"“{question.short()}”, save the notebook, then run this check again."
        )
    words = len(answer.split())
    if worked is None or question_id not in worked:
        return True, f"✓ {question_id} answered ({words} words). This edition shows no worked answers."
    return True, (
        f"✓ {question_id} answered ({words} words). The points a good answer makes (compare them with yours):\n\n"
        + worked[question_id]
    )
