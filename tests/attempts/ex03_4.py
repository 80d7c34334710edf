"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from . import right, wrong


def _distances(size, device=None):
    positions = torch.arange(size, device=device)
    return positions[:, None] - positions[None, :]  # (T, T): t - s


@wrong("own", says="the polarity is reversed")
def _band_blocked(size, r, device=None):
    return _distances(size, device).abs() > r


@wrong("own", says="the window is one too narrow")
def _band_strict(size, r, device=None):
    return _distances(size, device).abs() < r


@wrong("own", says="the window is one too wide")
def _band_r_plus_one(size, r, device=None):
    return _distances(size, device).abs() <= r + 1


@wrong("own", says="only the positions before t are in the window")
def _band_past_only(size, r, device=None):
    d = _distances(size, device)
    return (d >= 0) & (d <= r)


@wrong("mutant", "only the keys after t (s - t <= r)", says="only the positions after t are in the window")
def _band_future_only(size, r, device=None):
    d = _distances(size, device)
    return (d <= 0) & (d >= -r)


@wrong("own", says="the diagonal is False")
def _band_without_itself(size, r, device=None):
    d = _distances(size, device).abs()
    return (d > 0) & (d <= r)


@wrong("own", says="create it on the requested device")
def _band_on_the_cpu(size, r, device=None):
    return _distances(size).abs() <= r


@right("own")
def _band_of_diagonals(size, r, device=None):
    return torch.ones(size, size, dtype=torch.bool, device=device).triu(-r).tril(r)
