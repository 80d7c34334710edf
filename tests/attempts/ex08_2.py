"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

from . import right, wrong

# -- mutants


@wrong("mutant", "target not shifted")
def _not_shifted(tgt):
    return tgt, tgt


@wrong("mutant", "input and labels swapped")
def _swapped(tgt):
    return tgt[:, 1:], tgt[:, :-1]


@wrong("mutant", "shifts along the batch axis")
def _shifts_the_batch_axis(tgt):
    return tgt[:-1], tgt[1:]


@wrong("mutant", "roll wraps <bos> round to the end")
def _rolls_instead_of_cutting(tgt):
    return tgt, tgt.roll(-1, dims=1)


# -- own mistakes and alternatives


@wrong("own", says="are the same")
def _same_cut(tgt):
    return tgt[:, :-1], tgt[:, :-1]


@wrong("own", says="are the same")
def _both_from_one(tgt):
    return tgt[:, 1:], tgt[:, 1:]


@wrong("own", says="shifted by two")
def _shifted_by_two(tgt):
    return tgt[:, :-2], tgt[:, 2:]


# -- tester set 'first'


@wrong("tester", "input and labels swapped", by="first")
def ex08_2_swapped(tgt):
    return tgt[:, 1:], tgt[:, :-1]


@wrong("tester", "labels not shifted (labels = decoder input)", by="first")
def ex08_2_labels_not_shifted(tgt):
    return tgt[:, :-1], tgt[:, :-1]


@wrong("tester", "shift along the batch axis (tgt[:-1], tgt[1:])", by="first")
def ex08_2_batch_axis(tgt):
    return tgt[:-1], tgt[1:]


@right("tester", by="first")
def ex08_2_alt_narrow(tgt):
    n = tgt.shape[1] - 1
    return tgt.narrow(1, 0, n), tgt.narrow(1, 1, n)


@wrong("tester", "label padding replaced by -100 (Hugging Face habit)", by="first")
def x07_2_labels_minus_100(tgt):
    labels = tgt[:, 1:].masked_fill(tgt[:, 1:] == 0, -100)  # Hugging Face habit
    return tgt[:, :-1], labels


# -- tester set 'second'


def _tf_pre(tgt):
    if tgt.dim() != 2 or tgt.shape[1] < 2:
        raise ValueError(f"tgt must have shape (B, T+1) with T+1 >= 2 (<bos> ... <eos>), got {tuple(tgt.shape)}")


@wrong("tester", "returns (labels, input) swapped", by="second")
def tf_swapped(tgt):
    _tf_pre(tgt)
    return tgt[:, 1:], tgt[:, :-1]


@wrong("tester", "slices the batch axis (tgt[:-1], tgt[1:])", by="second")
def tf_batch_axis(tgt):
    _tf_pre(tgt)
    return tgt[:-1], tgt[1:]


@wrong("tester", "decoder input keeps the last column (length T+1)", by="second")
def tf_input_not_cut(tgt):
    _tf_pre(tgt)
    return tgt, tgt[:, 1:]


# -- tester set 'third'


def _tf_guard(tgt):
    if tgt.dim() != 2 or tgt.shape[1] < 2:
        raise ValueError(f"tgt must have shape (B, T+1) with T+1 >= 2 (<bos> ... <eos>), got {tuple(tgt.shape)}")


@wrong("tester", "returns (labels, decoder input): order swapped", by="third")
def tf_swapped_third(tgt):
    _tf_guard(tgt)
    return tgt[:, 1:], tgt[:, :-1]


@wrong("tester", "slices the batch axis: tgt[:-1], tgt[1:]", by="third")
def tf_batch_axis_third(tgt):
    _tf_guard(tgt)
    return tgt[:-1], tgt[1:]


@wrong("tester", "off by one: drops two columns (tgt[:, :-2], tgt[:, 1:-1])", by="third")
def tf_off_by_one(tgt):
    _tf_guard(tgt)
    return tgt[:, :-2], tgt[:, 1:-1]
