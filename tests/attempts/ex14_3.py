"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import math

from . import right, wrong

# -- mutants


@wrong("mutant", "Adam with L2: the decay in the gradient")
def _coupled(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    grad = grad + weight_decay * param
    exp_avg = betas[0] * exp_avg + (1 - betas[0]) * grad
    exp_avg_sq = betas[1] * exp_avg_sq + (1 - betas[1]) * grad * grad
    mean, mean_square = exp_avg / (1 - betas[0] ** step), exp_avg_sq / (1 - betas[1] ** step)
    return param - lr * mean / (mean_square.sqrt() + eps), exp_avg, exp_avg_sq


@wrong("mutant", "no bias correction")
def _uncorrected(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    exp_avg = betas[0] * exp_avg + (1 - betas[0]) * grad
    exp_avg_sq = betas[1] * exp_avg_sq + (1 - betas[1]) * grad * grad
    return param * (1 - lr * weight_decay) - lr * exp_avg / (exp_avg_sq.sqrt() + eps), exp_avg, exp_avg_sq


@wrong("mutant", "eps under the square root")
def _eps_inside(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    exp_avg = betas[0] * exp_avg + (1 - betas[0]) * grad
    exp_avg_sq = betas[1] * exp_avg_sq + (1 - betas[1]) * grad * grad
    mean, mean_square = exp_avg / (1 - betas[0] ** step), exp_avg_sq / (1 - betas[1] ** step)
    return param * (1 - lr * weight_decay) - lr * mean / (mean_square + eps).sqrt(), exp_avg, exp_avg_sq


@wrong("mutant", "betas swapped")
def _betas_swapped(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    beta2, beta1 = betas
    exp_avg = beta1 * exp_avg + (1 - beta1) * grad
    exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad * grad
    mean, mean_square = exp_avg / (1 - beta1**step), exp_avg_sq / (1 - beta2**step)
    return param * (1 - lr * weight_decay) - lr * mean / (mean_square.sqrt() + eps), exp_avg, exp_avg_sq


@wrong("mutant", "changes the inputs in place")
def _in_place(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    exp_avg.mul_(betas[0]).add_((1 - betas[0]) * grad)
    exp_avg_sq.mul_(betas[1]).add_((1 - betas[1]) * grad * grad)
    mean, mean_square = exp_avg / (1 - betas[0] ** step), exp_avg_sq / (1 - betas[1] ** step)
    return param * (1 - lr * weight_decay) - lr * mean / (mean_square.sqrt() + eps), exp_avg, exp_avg_sq


@wrong("mutant", "the mean's weights swapped", says="keep betas[0] of the old mean")
def _mean_weights_swapped(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    exp_avg = (1 - betas[0]) * exp_avg + betas[0] * grad
    exp_avg_sq = betas[1] * exp_avg_sq + (1 - betas[1]) * grad * grad
    mean, mean_square = exp_avg / (1 - betas[0] ** step), exp_avg_sq / (1 - betas[1] ** step)
    return param * (1 - lr * weight_decay) - lr * mean / (mean_square.sqrt() + eps), exp_avg, exp_avg_sq


@wrong("mutant", "the mean of the square with betas[0]", says="the mean of the square uses betas[0]")
def _square_with_beta1(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    exp_avg = betas[0] * exp_avg + (1 - betas[0]) * grad
    exp_avg_sq = betas[0] * exp_avg_sq + (1 - betas[0]) * grad * grad
    mean, mean_square = exp_avg / (1 - betas[0] ** step), exp_avg_sq / (1 - betas[1] ** step)
    return param * (1 - lr * weight_decay) - lr * mean / (mean_square.sqrt() + eps), exp_avg, exp_avg_sq


@wrong("mutant", "the mean square's weights swapped", says="keep betas[1] of the old mean")
def _square_weights_swapped(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    exp_avg = betas[0] * exp_avg + (1 - betas[0]) * grad
    exp_avg_sq = (1 - betas[1]) * exp_avg_sq + betas[1] * grad * grad
    mean, mean_square = exp_avg / (1 - betas[0] ** step), exp_avg_sq / (1 - betas[1] ** step)
    return param * (1 - lr * weight_decay) - lr * mean / (mean_square.sqrt() + eps), exp_avg, exp_avg_sq


@wrong("mutant", "no weight decay", says="the weight decay is missing")
def _no_decay(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    exp_avg = betas[0] * exp_avg + (1 - betas[0]) * grad
    exp_avg_sq = betas[1] * exp_avg_sq + (1 - betas[1]) * grad * grad
    mean, mean_square = exp_avg / (1 - betas[0] ** step), exp_avg_sq / (1 - betas[1] ** step)
    return param - lr * mean / (mean_square.sqrt() + eps), exp_avg, exp_avg_sq


# -- own mistakes and alternatives


@wrong("own", says="not by lr · weight_decay")
def _decay_without_lr(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    exp_avg = betas[0] * exp_avg + (1 - betas[0]) * grad
    exp_avg_sq = betas[1] * exp_avg_sq + (1 - betas[1]) * grad * grad
    mean, mean_square = exp_avg / (1 - betas[0] ** step), exp_avg_sq / (1 - betas[1] ** step)
    return param * (1 - weight_decay) - lr * mean / (mean_square.sqrt() + eps), exp_avg, exp_avg_sq


@wrong("own", says="of |grad|")
def _abs_not_square(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    exp_avg = betas[0] * exp_avg + (1 - betas[0]) * grad
    exp_avg_sq = betas[1] * exp_avg_sq + (1 - betas[1]) * grad.abs()
    mean, mean_square = exp_avg / (1 - betas[0] ** step), exp_avg_sq / (1 - betas[1] ** step)
    return param * (1 - lr * weight_decay) - lr * mean / (mean_square.sqrt() + eps), exp_avg, exp_avg_sq


@wrong("own", says="after the Adam step")
def _decay_after(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    exp_avg = betas[0] * exp_avg + (1 - betas[0]) * grad
    exp_avg_sq = betas[1] * exp_avg_sq + (1 - betas[1]) * grad * grad
    mean, mean_square = exp_avg / (1 - betas[0] ** step), exp_avg_sq / (1 - betas[1] ** step)
    return (param - lr * mean / (mean_square.sqrt() + eps)) * (1 - lr * weight_decay), exp_avg, exp_avg_sq


@wrong("own", says="step + 1")
def _step_plus_one(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    exp_avg = betas[0] * exp_avg + (1 - betas[0]) * grad
    exp_avg_sq = betas[1] * exp_avg_sq + (1 - betas[1]) * grad * grad
    mean, mean_square = exp_avg / (1 - betas[0] ** (step + 1)), exp_avg_sq / (1 - betas[1] ** (step + 1))
    return param * (1 - lr * weight_decay) - lr * mean / (mean_square.sqrt() + eps), exp_avg, exp_avg_sq


@right("own")
def _as_torch_writes_it(param, grad, exp_avg, exp_avg_sq, step, lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1):
    param = param.clone().mul_(1 - lr * weight_decay)
    exp_avg = exp_avg.lerp(grad, 1 - betas[0])
    exp_avg_sq = exp_avg_sq.clone().mul_(betas[1]).addcmul_(grad, grad, value=1 - betas[1])
    denominator = exp_avg_sq.sqrt() / math.sqrt(1 - betas[1] ** step) + eps
    return param.addcdiv(exp_avg, denominator, value=-lr / (1 - betas[0] ** step)), exp_avg, exp_avg_sq
