"""The course's tools: everything that is not the learner's model.

* ``checks/``: one check per exercise (its cases and judges), and what runs them (notebook check
  cells, ``check``, pytest); ``checks/registry.py`` is where an exercise is registered and found;
* ``probe/``: what runs next to the learner's code: fixtures built with the learner's classes, calls,
  plain data back (locally in-process; when grading, copied into each sandboxed job);
* ``regions.py``: the solution regions (nbgrader's markers) and the functions that hold them;
* ``answers.py``: does a text contain a solution? (the edition's leak checks, the grader's scrubbing);
* ``hints.py``: how much a stub and a failing check give away (the hint levels);
* ``build.py``: ``make exercises``, what the exercises' registrations make (notebooks' parts, exports,
  the lock) and the one-line report of a piece missing; ``lock.py``: the lock (each exercise's
  cases, each chapter's exercises); ``needs.py``: which exercises a chapter runs, read from its code;
* ``edition.py``: the student edition (stubs, cleared notebooks) made from the complete one;
* ``grading/``: grading a class's submissions (configuration, collection, workers, resume state,
  reports); ``written.py`` and ``questions.py``: the written answers and their questions;
* ``sandbox.py`` (and ``sandbox_inside.py``): one sandbox (bubblewrap, else unshare, else a stated
  fallback) per grading job;
* ``cli/``: the command line (``python -m transformer_course …``);
* ``notebook.py``: what a chapter's set-up cell switches on (reloading, the stop message);
* ``colab.py``: on Colab, the learner's own student edition (what every notebook's first cell calls);
* ``links.py``: the badges, first cells and guides written from ``REPOSITORY_URL`` (``sync-links``);
* ``pairs.py``: notebook pairs (.py + .ipynb) written as JupyterLab saves them;
* ``pretrained.py`` and ``assets/``: the models that ship with the course and their SHA-256;
* ``hub.py``: chapter 16's real checkpoints from the Hugging Face Hub (``load_hub``: a bounded,
  offline-safe download, one line naming the model when it fails; ``course_model``: converted);
* ``runs.py``, ``plots.py``: a whole training run, and figures, built from the rooms;
* ``figures.py``: the architecture map every chapter opens with, attention heads, path lengths;
* ``experiments.py``: the runner of the small training experiments the chapters run to test their
  claims (the chapters build the variants);
* ``course.py``: where the course lives (its repository, a clone on this machine);
* ``memory.py``: the peak memory of a computation (``peak_memory_mib``), on the CPU and on CUDA.

Tools import the rooms; no room imports a tool.
"""
