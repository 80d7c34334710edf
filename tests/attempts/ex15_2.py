"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from . import right, wrong

# -- mutants


@wrong("mutant", "Conv1D's weight not transposed", says="is not transposed")
def _not_transposed(weight, bias, parts):
    out = weight.shape[1] // parts
    return [(w.contiguous(), b.clone()) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=True)]


@wrong("mutant", "q, k, v split along the inputs' axis", says="split along the wrong axis")
def _split_inputs_axis(weight, bias, parts):
    rows, out = weight.shape[0] // parts, weight.shape[1] // parts
    return [
        (weight[i * rows : (i + 1) * rows].contiguous(), bias[i * out : (i + 1) * out].clone()) for i in range(parts)
    ]


@wrong("mutant", "every third column instead of blocks")
def _every_third_column(weight, bias, parts):
    return [(weight[:, i::parts].t().contiguous(), bias[i::parts].clone()) for i in range(parts)]


@wrong("mutant", "the parts in reverse order", says="keep the order of the blocks")
def _reversed_order(weight, bias, parts):
    out = weight.shape[1] // parts
    pairs = [(w.t().contiguous(), b.clone()) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=True)]
    return pairs[::-1]  # v, k, q


@wrong("mutant", "the whole bias given to each part")
def _bias_not_split(weight, bias, parts):
    out = weight.shape[1] // parts
    return [(w.t().contiguous(), bias.clone()) for w in weight.split(out, dim=1)]


@wrong("mutant", "transposed, then split along the wrong axis")
def _transposed_then_split_wrongly(weight, bias, parts):
    out = weight.shape[1] // parts
    t = weight.t()  # (parts·out, in)
    return [(t[:, i * (t.shape[1] // parts) :][:out].contiguous(), b.clone()) for i, b in enumerate(bias.split(out))]


# -- own mistakes and alternatives


def _conv1d(weight, bias, parts, transpose, swap=False):
    out = weight.shape[1] // parts
    pairs = [(transpose(w), b.clone()) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=True)]
    return [(b, w) for w, b in pairs] if swap else pairs


@wrong("own", says="is reshaped to (out, in), not transposed")
def _conv1d_reshaped(weight, bias, parts):
    return _conv1d(weight, bias, parts, lambda w: w.reshape(w.shape[1], w.shape[0]))


@wrong("own", says="is (bias, weight)")
def _conv1d_bias_first(weight, bias, parts):
    return _conv1d(weight, bias, parts, lambda w: w.t().contiguous(), swap=True)


@wrong("own", says="weight.reshape(parts, in, out)")
def _conv1d_reshaped_into_parts(weight, bias, parts):
    out = weight.shape[1] // parts
    blocks = weight.reshape(parts, weight.shape[0], out)  # not the column blocks
    return [(w.t().contiguous(), b.clone()) for w, b in zip(blocks, bias.split(out), strict=True)]


@wrong("own", says="the weight was split along the wrong axis")
def _conv1d_split_along_the_inputs(weight, bias, parts):
    out = weight.shape[1] // parts
    return [(w.t().contiguous(), b.clone()) for w, b in zip(weight.split(out, dim=0), bias.split(out), strict=False)]


# -- tester set 'first'


@wrong("tester", "forgot to transpose (returns (in, out) weights)", by="first")
def ex15_2_no_transpose(weight, bias, parts):
    out = weight.shape[1] // parts
    return [(w.contiguous(), b.clone()) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=True)]


@wrong("tester", "splits along dim 0 (the input axis) instead of the outputs", by="first")
def ex15_2_split_rows(weight, bias, parts):
    return [(w.t().contiguous(), b.clone()) for w, b in zip(weight.chunk(parts, dim=0), bias.chunk(parts), strict=True)]


@wrong("tester", "gives the whole bias to every part", by="first")
def ex15_2_bias_not_split(weight, bias, parts):
    out = weight.shape[1] // parts
    return [(w.t().contiguous(), bias.clone()) for w in weight.split(out, dim=1)]


@right("tester", by="first")
def ex15_2_alt_chunk_first(weight, bias, parts):
    return list(zip(weight.t().contiguous().chunk(parts, dim=0), bias.clone().chunk(parts), strict=True))


@wrong("tester", "block size from the input size (weight.shape[0] // parts)", by="first")
def x11_2_block_from_in(weight, bias, parts):
    out = weight.shape[0] // parts  # in/parts instead of (parts·out)/parts
    return [(w.t().contiguous(), b.clone()) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=False)]


# -- tester set 'second'


def _c1d_pre(weight, bias, parts):
    if weight.dim() != 2 or bias.shape != (weight.shape[1],) or weight.shape[1] % parts:
        raise ValueError("weight must be (in, parts·out) and bias (parts·out,)")


@wrong("tester", "transposes first, then splits along dim 1 (the input axis)", by="second")
def c1d_split_dim0(weight, bias, parts):
    _c1d_pre(weight, bias, parts)
    out = weight.shape[1] // parts
    return [
        (w.t().contiguous(), b.clone()) for w, b in zip(weight.t().split(out, dim=1), bias.split(out), strict=False)
    ]


@wrong("tester", "reshape(out, in) instead of transpose (mixes data)", by="second")
def c1d_reshape_not_transpose(weight, bias, parts):
    _c1d_pre(weight, bias, parts)
    out = weight.shape[1] // parts
    return [
        (w.reshape(out, -1).contiguous(), b.clone())
        for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=False)
    ]


@right("tester", by="second")
def c1d_views(weight, bias, parts):
    _c1d_pre(weight, bias, parts)
    out = weight.shape[1] // parts
    return [(w.t(), b) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=False)]


@right("tester", by="second")
def c1d_alt(weight, bias, parts):
    _c1d_pre(weight, bias, parts)
    ws = torch.chunk(weight.T, parts, dim=0)
    bs = torch.chunk(bias, parts)
    return [(w.clone(memory_format=torch.contiguous_format), b.clone()) for w, b in zip(ws, bs, strict=False)]


# -- tester set 'third'


def _sc_guard(weight, bias, parts):
    if weight.dim() != 2 or bias.shape != (weight.shape[1],) or weight.shape[1] % parts:
        raise ValueError(
            f"weight must be (in, {parts}·out) and bias (out·{parts},), got {tuple(weight.shape)} and {tuple(bias.shape)}"
        )


@wrong("tester", "weight not transposed (kept as (in, out))", by="third")
def sc_no_transpose(weight, bias, parts):
    _sc_guard(weight, bias, parts)
    out = weight.shape[1] // parts
    return [(w.contiguous(), b.clone()) for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=False)]


@wrong("tester", "weight split along dim 0 (the input axis)", by="third")
def sc_split_dim0(weight, bias, parts):
    _sc_guard(weight, bias, parts)
    out = weight.shape[1] // parts
    ws = weight.t().contiguous().split(weight.shape[0] // parts, dim=1)
    return [(w.contiguous(), b.clone()) for w, b in zip(ws, bias.split(out), strict=False)]


@wrong("tester", "reshape(out, in) instead of a transpose", by="third")
def sc_reshape(weight, bias, parts):
    _sc_guard(weight, bias, parts)
    out = weight.shape[1] // parts
    return [
        (w.reshape(out, weight.shape[0]).clone(), b.clone())
        for w, b in zip(weight.split(out, dim=1), bias.split(out), strict=False)
    ]


@right("tester", by="third")
def sc_alt(weight, bias, parts):
    _sc_guard(weight, bias, parts)
    out = weight.shape[1] // parts
    wt = weight.T
    return [(wt[i * out : (i + 1) * out].clone(), bias[i * out : (i + 1) * out].clone()) for i in range(parts)]
