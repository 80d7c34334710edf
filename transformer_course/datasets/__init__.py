"""The data the course translates, made on the spot or read from files: not rooms of the model.

The rooms of :mod:`transformer_course` are what a learner builds (the model, its training and its
decoding). The modules here *make* the data those rooms learn from; you use them, and may read
them, but the exercises never ask you to write them:

* :mod:`~transformer_course.datasets.numbers`: English → German number words (chapters 08–09),
  with strata of held-out numbers;
* :mod:`~transformer_course.datasets.sentences`: English → German sentences with real German
  grammar from a small lexicon (chapter 12);
* :mod:`~transformer_course.datasets.corpora`: parallel text from your own files, or a corpus
  from the Hugging Face Hub, cached (chapter 12);
* :mod:`~transformer_course.datasets.shakespeare`: six plays by Shakespeare (public domain, shipped in
  ``texts/``), real English for the language models (chapter 14).

The :class:`~transformer_course.data.Task` they fill, and the copy / reverse tasks, are in the
room :mod:`transformer_course.data` (chapter 08). Importing this package imports nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..data import Task

TASK_NAMES = ("numbers-en-de", "copy", "reverse")  # every task of chapter 08 :func:`load_task` knows


def load_task(name: str) -> Task:
    """A task of chapter 08 by name: the number words (``"numbers-en-de"``, made by
    :func:`~transformer_course.datasets.numbers.numbers_task`) or the room's copy and reverse tasks
    (:func:`transformer_course.data.load_task`). Exported as ``transformer_course.load_task``."""
    if name == "numbers-en-de":
        from .numbers import numbers_task  # imported when asked for: importing the package imports nothing

        return numbers_task()
    from ..data import TASKS
    from ..data import load_task as room_task

    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TASK_NAMES)}")
    return room_task(name)
