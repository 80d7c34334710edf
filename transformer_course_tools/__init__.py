"""transformer_course_tools — the course's side: everything that is not the learner's model.

The learner's package, ``transformer_course``, holds only the rooms (the model, one idea per file)
and the data they learn from. This package holds what works around them, grouped by who uses it:

* ``notebook/``: what a chapter imports (``setup`` switches on reloading and the stop at an unwritten
  exercise; ``figures``, ``diagrams`` and ``plots`` draw; ``claims`` checks a chapter's claims with
  margins; ``experiments`` and ``lm_experiments`` run the small training experiments; ``pages``,
  ``memory``, ``operations``; ``colab``, the first cell on Colab);
* ``exercises/``: the exercises (``checks/``, one per exercise, and ``probe/``, what runs beside the
  learner's code; ``hints``; ``edition``, the student edition and ``restore``; ``answers``,
  ``regions``, ``questions``, ``needs``; ``lock``, what the build derived and a change must not alter);
* ``grading/``: grading a class (the grader, its sandbox, written answers, gradebooks), left out of
  the student edition;
* ``authoring/``: making the course (``build``: ``make exercises``; ``links``; ``pairs``;
  ``readability``), left out of the student edition;
* ``models/``: the trained models that ship with the course and their hashes, the Hugging Face Hub,
  a whole training run, the command line's text sources;
* ``engine/``: the inference engine, which reads a trained model once into a plan and decodes fast;
* ``cli/``: the command line (``python -m transformer_course …``);
* ``course.py``: where the course lives (the learner's package, its repository, a clone).

This package imports the rooms; no room imports it.
"""
