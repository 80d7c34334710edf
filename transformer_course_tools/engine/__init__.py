"""The inference engine: a trained model read once into a decoding plan, and run fast.

The learner's modules (chapters 01–13) say what the model computes, one idea per file; running
them step by step is how chapter 09 teaches decoding. Engines such as CTranslate2 and llama.cpp
do something else with a trained model: they *convert* it, reading its weights once into a form
of their own that decodes fast. This package does that for the course's models:

* :func:`~.plan.plan_for` reads a ``Transformer`` or a ``DecoderOnlyLM`` (the course's own, a
  converted checkpoint, a learner's trained model; float32, bfloat16 or int8) into a plan: every
  matrix transposed into the layout that reads fastest, W^Q, W^K and W^V stacked into one, the
  pre-LN norms' weights folded into the matrices after them (float32). The plan is made once per
  model and made again when any of its parameters or buffers may have changed;
* :mod:`~.run` runs it: the encoder once, then one step per token with caches allocated once.

:data:`ENGINE` is chapter 09's :class:`~transformer_course.decoding.Engine`: the decoding loops
take it as their ``path``: ``greedy_decode(model, src, path=ENGINE)`` (also ``beam_search``,
``sample`` and chapter 13's ``generate``); the default, ``path="modules"``, runs your own code.
Both give the same tokens (``tests/test_engine*.py``). This package is on the course's side of
the layout: no room imports it, and it imports only the rooms the model it reads is made of.
"""

from __future__ import annotations

from torch import Tensor, nn


class CourseEngine:
    """The course's engine as chapter 09's ``Engine``: a plan per model (:func:`~.plan.plan_for`),
    run by a :class:`~.run.TranslationSteps` or a :class:`~.run.LanguageModelSteps`."""

    def predictor(self, model: nn.Module, inputs: Tensor, capacity: int, repeat: int = 1):  # noqa: ANN201
        """A translator's source (B, S) or a language model's prompt (B, T) → the steps of one call."""
        from .plan import plan_for
        from .run import LanguageModelSteps, TranslationSteps

        plan = plan_for(model)
        if plan.encoder is not None:
            return TranslationSteps(plan, inputs, capacity, repeat)
        return LanguageModelSteps(plan, inputs.shape[0] * repeat, capacity)

    def __repr__(self) -> str:
        return "ENGINE"


ENGINE = CourseEngine()
