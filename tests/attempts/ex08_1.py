"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import math

from . import right, wrong

# -- mutants


@wrong("mutant", "max instead of min")
def _max_instead_of_min(step, d_model, warmup_steps, scale=1.0):
    return scale * d_model**-0.5 * max(step**-0.5, step * warmup_steps**-1.5)


@wrong("mutant", "warmup_steps**-0.5 instead of **-1.5")
def _warmup_power_wrong(step, d_model, warmup_steps, scale=1.0):
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-0.5)


@wrong("mutant", "no d_model**-0.5 factor")
def _no_d_model(step, d_model, warmup_steps, scale=1.0):
    return scale * min(step**-0.5, step * warmup_steps**-1.5)


@wrong("mutant", "scale ignored")
def _scale_ignored(step, d_model, warmup_steps, scale=1.0):
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@wrong("mutant", "off by one step")
def _counts_from_zero(step, d_model, warmup_steps, scale=1.0):
    step = max(step - 1, 1)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


# -- own mistakes and alternatives


@wrong("own", says="d_model is raised to 0.5")
def _lr_root_d_model(step, d_model, warmup_steps, scale=1.0):
    return scale * d_model**0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@wrong("own", says="the decay term is step^-0.5")
def _lr_decay_power(step, d_model, warmup_steps, scale=1.0):
    return scale * d_model**-0.5 * min(step**0.5, step * warmup_steps**-1.5)


@wrong("own", says="the power is negative")
def _lr_warmup_power_positive(step, d_model, warmup_steps, scale=1.0):
    return scale / math.sqrt(d_model) * min(1 / math.sqrt(step), step * warmup_steps**1.5)


# -- tester set 'first'


@wrong("tester", "warmup_steps**-0.5 instead of **-1.5", by="first")
def ex08_1_warmup_half(step, d_model, warmup_steps, scale=1.0):
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-0.5)


@wrong("tester", "max instead of min", by="first")
def ex08_1_max(step, d_model, warmup_steps, scale=1.0):
    return scale * d_model**-0.5 * max(step**-0.5, step * warmup_steps**-1.5)


@wrong("tester", "forgot the scale factor", by="first")
def ex08_1_no_scale(step, d_model, warmup_steps, scale=1.0):
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@right("tester", by="first")
def ex08_1_alt_piecewise(step, d_model, warmup_steps, scale=1.0):
    if step < warmup_steps:
        factor = step / warmup_steps**1.5
    else:
        factor = 1 / math.sqrt(step)
    return scale * factor / math.sqrt(d_model)


@wrong("tester", "uses step + 1 (steps already count from 1)", by="first")
def x07_1_step_plus_one(step, d_model, warmup_steps, scale=1.0):
    step = step + 1  # "the paper counts from 1", applied to a step that already does
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


# -- tester set 'second'


def _lr_pre(step, d_model, warmup_steps):
    if step < 1:
        raise ValueError(f"step must be >= 1 (the paper counts steps from 1), got {step}")
    if d_model < 1 or warmup_steps < 1:
        raise ValueError(f"d_model and warmup_steps must be >= 1, got {d_model} and {warmup_steps}")


@wrong("tester", "max instead of min", by="second")
def lr_max(step, d_model, warmup_steps, scale=1.0):
    _lr_pre(step, d_model, warmup_steps)
    return scale * d_model**-0.5 * max(step**-0.5, step * warmup_steps**-1.5)


@wrong("tester", "warmup_steps**-0.5 instead of **-1.5", by="second")
def lr_warmup_exp(step, d_model, warmup_steps, scale=1.0):
    _lr_pre(step, d_model, warmup_steps)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-0.5)


@wrong("tester", "scale argument ignored", by="second")
def lr_scale_ignored(step, d_model, warmup_steps, scale=1.0):
    _lr_pre(step, d_model, warmup_steps)
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@right("tester", by="second")
def lr_alt(step, d_model, warmup_steps, scale=1.0):
    _lr_pre(step, d_model, warmup_steps)
    if step <= warmup_steps:
        return scale * step / (math.sqrt(d_model) * warmup_steps**1.5)
    return scale / math.sqrt(d_model * step)


# -- tester set 'third'


def _lr_guard(step, d_model, warmup_steps):
    if step < 1:
        raise ValueError(f"step must be >= 1 (the paper counts steps from 1), got {step}")
    if d_model < 1 or warmup_steps < 1:
        raise ValueError(f"d_model and warmup_steps must be >= 1, got {d_model} and {warmup_steps}")


@wrong("tester", "max instead of min", by="third")
def lr_max_third(step, d_model, warmup_steps, scale=1.0):
    _lr_guard(step, d_model, warmup_steps)
    return scale * d_model**-0.5 * max(step**-0.5, step * warmup_steps**-1.5)


@wrong("tester", "warm-up term step / warmup_steps (exponent -1 instead of -1.5)", by="third")
def lr_exponent(step, d_model, warmup_steps, scale=1.0):
    _lr_guard(step, d_model, warmup_steps)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1)


@wrong("tester", "scale argument ignored", by="third")
def lr_no_scale(step, d_model, warmup_steps, scale=1.0):
    _lr_guard(step, d_model, warmup_steps)
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


@right("tester", by="third")
def lr_alt_third(step, d_model, warmup_steps, scale=1.0):
    _lr_guard(step, d_model, warmup_steps)
    if step < warmup_steps:
        value = step / (warmup_steps * math.sqrt(warmup_steps))
    else:
        value = 1.0 / math.sqrt(step)
    return scale * value / math.sqrt(d_model)
