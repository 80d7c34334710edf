"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import math

from . import right, wrong

# -- mutants


@wrong("mutant", "decays to 0: min_ratio ignored")
def _to_zero(step, warmup_steps, total_steps, min_ratio=0.1):
    if step <= warmup_steps:
        return step / warmup_steps
    progress = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))
    return 0.5 * (1 + math.cos(math.pi * progress))


@wrong("mutant", "progress not clipped after total_steps")
def _not_clipped(step, warmup_steps, total_steps, min_ratio=0.1):
    if step <= warmup_steps:
        return step / warmup_steps
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


@wrong("mutant", "steps counted from 0")
def _from_zero(step, warmup_steps, total_steps, min_ratio=0.1):
    step = max(step - 1, 1)
    if step <= warmup_steps:
        return step / warmup_steps
    progress = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


@wrong("mutant", "a whole cosine period")
def _whole_period(step, warmup_steps, total_steps, min_ratio=0.1):
    if step <= warmup_steps:
        return step / warmup_steps
    progress = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(2 * math.pi * progress))


# -- own mistakes and alternatives


@wrong("own", says="the peak is 1 + min_ratio")
def _floor_added_unscaled(step, warmup_steps, total_steps, min_ratio=0.1):
    if step <= warmup_steps:
        return step / warmup_steps
    progress = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))
    return min_ratio + 0.5 * (1 + math.cos(math.pi * progress))


@wrong("own", says="measured from step 0")
def _progress_of_the_whole_run(step, warmup_steps, total_steps, min_ratio=0.1):
    if step <= warmup_steps:
        return step / warmup_steps
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, step / total_steps)))


@wrong("own", says="never decays")
def _warmup_only(step, warmup_steps, total_steps, min_ratio=0.1):
    return min(1.0, step / warmup_steps) if warmup_steps else 1.0


@wrong("own", says="rises again")
def _cosine_runs_on(step, warmup_steps, total_steps, min_ratio=0.1):
    if step < warmup_steps:
        return step / warmup_steps
    angle = math.pi * (step - warmup_steps) / (total_steps - warmup_steps)
    return min_ratio + (1 - min_ratio) * (1 + math.cos(angle)) / 2


@right("own")
def _interpolated(step, warmup_steps, total_steps, min_ratio=0.1):
    if step < warmup_steps:  # step == warmup_steps gives 1 on either branch
        return step / warmup_steps
    done = min(step, total_steps) - warmup_steps
    weight = (1 + math.cos(math.pi * done / (total_steps - warmup_steps))) / 2  # 1 at the peak, 0 at the end
    return weight * 1.0 + (1 - weight) * min_ratio


@right("own")
def _as_a_tensor(step, warmup_steps, total_steps, min_ratio=0.1):
    import torch

    if step <= warmup_steps:
        return torch.tensor(step / warmup_steps, dtype=torch.float64)
    progress = torch.tensor(min(1.0, (step - warmup_steps) / (total_steps - warmup_steps)), dtype=torch.float64)
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + torch.cos(torch.pi * progress))
