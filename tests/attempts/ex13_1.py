"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from . import right, wrong

# -- mutants


@wrong("mutant", "the mean subtracted (LayerNorm)", says="that is LayerNorm")
def _layer_norm_instead(self, x):
    centred = x - x.mean(dim=-1, keepdim=True)  # the mean subtracted: LayerNorm without its shift
    return centred * torch.rsqrt(centred.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


@wrong("mutant", "divides by the standard deviation")
def _divides_by_the_std(self, x):
    return x / torch.sqrt(x.var(dim=-1, unbiased=False, keepdim=True) + self.eps) * self.weight


@wrong("mutant", "eps outside the square root", says="adds eps after the square root")
def _eps_outside_the_root(self, x):
    return x / (x.pow(2).mean(dim=-1, keepdim=True).sqrt() + self.eps) * self.weight


@wrong("mutant", "no eps")
def _no_eps(self, x):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True)) * self.weight


@wrong("mutant", "the weight never applied")
def _no_weight(self, x):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)


@wrong("mutant", "sum of squares instead of their mean")
def _sum_not_mean(self, x):
    return x * torch.rsqrt(x.pow(2).sum(dim=-1, keepdim=True) + self.eps) * self.weight


@wrong("mutant", "the mean over every axis")
def _mean_over_every_axis(self, x):
    return x * torch.rsqrt(x.pow(2).mean() + self.eps) * self.weight  # one scale for the whole batch


# -- own mistakes and alternatives


@wrong("own", says="squares eps")
def _rms_eps_squared(self, x):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps**2) * self.weight


@wrong("own", says="forgets the square root")
def _rms_no_root(self, x):
    return x / (x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


@wrong("own", says="adds self.weight")
def _rms_weight_added(self, x):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) + self.weight


# -- tester set 'first'


@wrong("tester", "eps added outside the square root", by="first")
def ex13_1_eps_outside(self, x):
    rms = x.pow(2).mean(dim=-1, keepdim=True).sqrt()
    return x / (rms + self.eps) * self.weight


@wrong("tester", "uses the variance (subtracts the mean) like LayerNorm", by="first")
def ex13_1_variance(self, x):
    var = x.var(dim=-1, keepdim=True, unbiased=False)  # subtracts the mean, as LayerNorm
    return x * torch.rsqrt(var + self.eps) * self.weight


@wrong("tester", "mean without keepdim: broadcasts against the wrong axis", by="first")
def ex13_1_no_keepdim(self, x):
    mean_square = x.pow(2).mean(dim=-1)
    return x * torch.rsqrt(mean_square + self.eps) * self.weight


@right("tester", by="first")
def ex13_1_alt_sqrt(self, x):
    return self.weight * (x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps))


@wrong("tester", "mean square over the whole tensor, not per position", by="first")
def x10_1_global_mean(self, x):
    mean_square = x.pow(2).mean()  # over every entry, not per position
    return x * torch.rsqrt(mean_square + self.eps) * self.weight


# -- tester set 'second'


def _rms_pre(self, x):
    if x.shape[-1] != self.weight.shape[0]:
        raise ValueError(f"x must have last dimension d_model={self.weight.shape[0]}, got {tuple(x.shape)}")


@wrong("tester", "eps added outside the square root", by="second")
def rms_eps_outside(self, x):
    _rms_pre(self, x)
    return x / (x.pow(2).mean(dim=-1, keepdim=True).sqrt() + self.eps) * self.weight


@wrong("tester", "mean square over dim 0 instead of the feature axis", by="second")
def rms_dim0(self, x):
    _rms_pre(self, x)
    mean_square = x.pow(2).mean(dim=0, keepdim=True)
    return x * torch.rsqrt(mean_square + self.eps) * self.weight


@wrong("tester", "divides by the standard deviation (variance, centred) instead of RMS", by="second")
def rms_variance(self, x):
    _rms_pre(self, x)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return x * torch.rsqrt(var + self.eps) * self.weight


# -- tester set 'third'


def _rms_guard(self, x):
    if x.shape[-1] != self.weight.shape[0]:
        raise ValueError(f"x must have last dimension d_model={self.weight.shape[0]}, got {tuple(x.shape)}")


@wrong("tester", "mean without keepdim=True", by="third")
def rms_no_keepdim(self, x):
    _rms_guard(self, x)
    mean_square = x.pow(2).mean(dim=-1)
    return x * torch.rsqrt(mean_square + self.eps) * self.weight


@wrong("tester", "eps added outside the square root", by="third")
def rms_eps_outside_third(self, x):
    _rms_guard(self, x)
    mean_square = x.pow(2).mean(dim=-1, keepdim=True)
    return x / (torch.sqrt(mean_square) + self.eps) * self.weight


@wrong("tester", "subtracts the mean first (LayerNorm's variance, not the mean square)", by="third")
def rms_centered(self, x):
    _rms_guard(self, x)
    centered = x - x.mean(dim=-1, keepdim=True)
    var = centered.pow(2).mean(dim=-1, keepdim=True)
    return centered * torch.rsqrt(var + self.eps) * self.weight


@right("tester", by="third")
def rms_alt(self, x):
    _rms_guard(self, x)
    d = x.shape[-1]
    rms = torch.sqrt((x * x).sum(dim=-1, keepdim=True) / d + self.eps)
    return self.weight * (x / rms)
