"""The inference engine: a trained model read once into a decoding plan, and run fast.

The learner's modules (chapters 01–13) say what the model computes, one idea per file; running
them step by step is how chapter 09 teaches decoding. Engines such as CTranslate2 and llama.cpp
do something else with a trained model: they *convert* it, reading its weights once into a form
of their own that decodes fast. This package does that for the course's models:

* :func:`~.plan.plan_for` reads a ``Transformer`` or a ``DecoderOnlyLM`` (the course's own, a
  converted checkpoint, a learner's trained model; float32, bfloat16 or int8) into a plan: every
  matrix transposed into the layout that reads fastest, W^Q, W^K and W^V stacked into one, the
  pre-LN norms' weights folded into the matrices after them. The plan is made once per model and
  made again when the model's parameters change;
* :mod:`~.run` runs it: the encoder once, then one step per token with caches allocated once.

The decoding functions choose the path: ``greedy_decode(model, src, path="engine")`` (also
``beam_search``, ``sample``, ``generate``); the default, ``path="modules"``, runs your own code.
Both give the same tokens (``tests/test_engine.py``). This package is on the course's side of
the layout: no room imports it at import time, and it imports the rooms only when it reads a model.
"""

from __future__ import annotations


def translation_steps(model, src, capacity: int, repeat: int = 1):
    """The engine's next-token logits for a translator (see :class:`~.run.TranslationSteps`)."""
    from .plan import plan_for
    from .run import TranslationSteps

    return TranslationSteps(plan_for(model), src, capacity, repeat)


def language_model_steps(model, batch: int, capacity: int):
    """The engine's next-token logits for a language model (see :class:`~.run.LanguageModelSteps`)."""
    from .plan import plan_for
    from .run import LanguageModelSteps

    return LanguageModelSteps(plan_for(model), batch, capacity)
