"""What runs next to the learner's code: the probes. Nothing here knows an answer.

A check (``transformer_course_tools/exercises/checks.pychNN.py``) is three parts, served by one code path:

* its **cases**, built by the course as plain data (tensors, numbers, strings, lists, dicts, and
  descriptions of the objects to build: a class path with its constructor arguments and state);
* a **probe** (:mod:`.calls`), which builds those objects with the learner's own classes, calls
  the learner's function and returns plain data: outputs, gradients, what changed in place;
* its **judge**, which compares that data with the course's references and says what is wrong.

Locally (``check("ex03_1")``, ``pytest -m ex03_1``, ``python -m transformer_course check``) the
three run in one process. When grading, this folder alone is copied next to a submission and run
in a sandbox by :mod:`.child`; the grader reads the plain data back (:mod:`.wire`) and judges it
without ever importing the submission.

The modules here import only the standard library, torch and (when a probe runs) the learner's
package, and refer to each other relatively: the folder works under any package name.
"""
