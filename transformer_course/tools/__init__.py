"""The course's tools: everything that is not the learner's model.

* ``checks/``: one check per exercise, and what runs them (notebook check cells, ``check``, pytest);
* ``edition.py``: the student edition (stubs, cleared notebooks) made from the complete one;
* ``grading.py``, ``grading_worker.py``: grading a class's submissions;
* ``cli/``: the command line (``python -m transformer_course …``);
* ``notebook.py``: what a chapter's set-up cell switches on;
* ``pretrained.py`` and ``assets/``: the model that ships with the course and its SHA-256;
* ``runs.py``, ``plots.py``: a whole training run, and figures, built from the rooms;
* ``figures.py``: the architecture map every chapter opens with, attention heads, path lengths;
* ``experiments.py``: the small training experiments the chapters run to test their claims;
* ``course.py``: where the course lives (its repository, a clone on this machine).

Tools import the rooms; no room imports a tool.
"""
