"""Checks for chapter 15 — real weights: the row order of rotary embeddings, GPT-2's Conv1D, Marian's names.

References are independent of the package: the rotations of both layouts written out, pair by pair for
ours and with ``rotate_half`` for Hugging Face's, and the attention scores they give compared head by
head; ``F.linear`` against ``x @ W + b``; a post-LN layer written out with ``F.layer_norm`` and a
per-head loop, run once by our names and once by Marian's (whose names and shapes are a table here,
which ``tests/test_checks_ch15.py`` compares with transformers' ``MarianEncoderLayer`` and
``MarianDecoderLayer``). Where a known mistake gives another answer on a case, the message names it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor

from transformer_course_tools.exercises.probe.calls import call, calls_case
from transformer_course_tools.exercises.probe.wire import kind

from ._tools import CheckFailure, expect_close, expect_dtype, expect_shape, name_mistake
from .case import Case, Outcome
from .registry import exercise

# -- ex15_1: rotary embeddings, halves → interleaved ------------------------------------------------


def _rotate_half_layout(x: Tensor, position: int, base: float) -> Tensor:
    """Hugging Face's rotation: pair i = features (i, i + d/2), x·cos + rotate_half(x)·sin. Float64.

    Shape:
        x (..., d) → (..., d)
    """
    d = x.shape[-1]
    theta = position * base ** (-2 * torch.arange(d // 2, dtype=torch.float64) / d)  # (d/2,)
    cos, sin = torch.cat([theta, theta]).cos(), torch.cat([theta, theta]).sin()  # (d,)
    rotate_half = torch.cat([-x[..., d // 2 :], x[..., : d // 2]], dim=-1)
    return x * cos + rotate_half * sin


def _rotate_pairs(x: Tensor, position: int, base: float) -> Tensor:
    """The course's rotation, one 2×2 block per pair i = features (2i, 2i+1), written out. Float64."""
    d, out = x.shape[-1], x.clone()
    for i in range(d // 2):
        theta = position * base ** (-2 * i / d)
        c, s = math.cos(theta), math.sin(theta)
        a, b = x[..., 2 * i], x[..., 2 * i + 1]
        out[..., 2 * i], out[..., 2 * i + 1] = c * a - s * b, s * a + c * b
    return out


def _scores(weight: Tensor, n_heads: int, rotate, inputs: tuple[Tensor, Tensor], base: float) -> Tensor:
    """Per head, the scores of queries ``weight·x`` at positions 0 … P−1 against keys ``weight·y`` at
    the same positions, each rotated by ``rotate``. Shape: (H, P, P), float64"""
    x, y = inputs  # (N, in) each: the weight's rows read the flattened trailing axes
    rows = weight.double().reshape(n_heads, weight.shape[0] // n_heads, -1)  # (H, d, in)
    q, k = torch.einsum("hdi,ni->nhd", rows, x), torch.einsum("hdi,ni->nhd", rows, y)  # (P, H, d), one per position
    q = torch.stack([rotate(q[p], p, base) for p in range(len(q))])  # (P, H, d)
    k = torch.stack([rotate(k[s], s, base) for s in range(len(k))])
    return torch.einsum("phd,shd->hps", q, k)


def _reordered(weight: Tensor, rows: list[int]) -> Tensor:
    return weight[torch.tensor(rows)]


def _row_mistakes(weight: Tensor, n_heads: int) -> list[tuple[Tensor, str]]:
    """The answers of typical mistakes, each built row by row from its own rule, with what is wrong."""
    total = weight.shape[0]
    d, half = total // n_heads, total // n_heads // 2
    inverse = [[h * d + (2 * j if j < half else 2 * (j - half) + 1) for j in range(d)] for h in range(n_heads)]
    flipped = [[h * d + (half + j // 2 if j % 2 == 0 else j // 2) for j in range(d)] for h in range(n_heads)]
    everything = [j // 2 if j % 2 == 0 else total // 2 + j // 2 for j in range(total)]
    mistakes = [
        (
            _reordered(weight, everything),
            f"the rows are reordered as if the {n_heads} heads were one: rows i and "
            f"i + {total // 2} of the whole weight become a pair. The halves are per head: reshape to (n_heads, 2, d/2, "
            "...) first, so that within each head of d rows, row i goes to 2i and row i + d/2 to 2i + 1",
        ),
        (
            _reordered(weight, sum(inverse, [])),
            "applies the inverse permutation (interleaved → halves: row 2i goes to "
            "row i); here row i of the halves layout must become row 2i, and row i + d/2 row 2i + 1",
        ),
        (
            _reordered(weight, sum(flipped, [])),
            "puts row i + d/2 before row i in each pair (rows 2i and 2i + 1 "
            "swapped): the pair then rotates the other way, by −θ; row i goes to 2i, row i + d/2 to 2i + 1",
        ),
        (
            weight.clone(),
            "returns the rows in their original order: the halves layout pairs row i with row i + d/2; "
            "move row i + d/2 next to row i",
        ),
    ]
    rest, right = tuple(weight.shape[1:]), _reordered(weight, _per_head_order(total, n_heads))
    halves_first = [h * d + k * half + i for k in range(2) for h in range(n_heads) for i in range(half)]
    if n_heads > 1:  # with one head, the rows in their order
        mistakes.append(
            (
                _reordered(weight, halves_first),
                "swaps the axes 0 and 1 (heads and halves) of (n_heads, 2, d/2, ...): the first halves of all heads "
                "come first; swap the axes 1 and 2, so that row i of each head goes to 2i and row i + d/2 to 2i + 1",
            )
        )
    mistakes += [
        (
            right.reshape(n_heads, half, 2, *rest),
            f"the result keeps the shape {(n_heads, half, 2, *rest)} (n_heads, d/2, 2, ...): reshape it back to "
            f"weight's shape {tuple(weight.shape)}",
        ),
        (
            weight.reshape(n_heads, 2, -1).transpose(1, 2).reshape(weight.shape),
            "reshape(n_heads, 2, -1) folds the trailing axes into the rows: single values are interleaved, not "
            "rows; keep them apart: reshape(n_heads, 2, d // 2, *weight.shape[1:])",
        ),
    ]
    columns = _per_head_order(weight.shape[1], n_heads) if weight.dim() == 2 else None
    if columns is not None:
        mistakes.append(
            (
                weight[:, torch.tensor(columns)],
                "reorders the columns (the input features); reorder the "
                "rows, dimension 0: a row of W^Q makes one feature of the queries",
            )
        )
    return mistakes


def _per_head_order(size: int, n_heads: int) -> list[int] | None:
    """For each new index, the old one: within each head of d, 2i ← i and 2i + 1 ← i + d/2."""
    if size % n_heads or (size // n_heads) % 2:
        return None
    d, half = size // n_heads, size // n_heads // 2
    return [h * d + (j // 2 if j % 2 == 0 else half + j // 2) for h in range(n_heads) for j in range(d)]


# (heads, features per head, trailing shape): several heads, a bias (no trailing axis), one head of
# grouped keys, d = 2 (one pair: nothing moves), a 3-D weight, a square weight
_ROPE_CASES = [(2, 4, (3,)), (3, 8, (5,)), (2, 6, ()), (1, 8, (6,)), (4, 2, (3,)), (2, 4, (2, 3)), (2, 8, (16,))]
_ROPE_CASES_LARGER = [(4, 16, (24,)), (6, 32, (13,)), (8, 16, ()), (1, 64, (20,)), (12, 2, (5,)), (3, 8, (4, 5)),
                      (4, 32, (128,))]  # fmt: skip


@exercise("ex15_1", "transformer_course.convert:rope_halves_to_interleaved", "easy")
def rope_layout_cases(larger: bool = False) -> Iterator[Case]:
    """rotary embeddings: reorder W^Q's rows from the halves layout to our pairs

    Nudge: Hugging Face's Llama pairs feature i with feature i + d/2 of each head (the halves layout);
    ours pair neighbouring features, as Meta's Llama code does, so the rows are reordered.

    Hint: within each head of d = weight.shape[0] // n_heads rows, row i goes to row 2i and row i + d/2 to row
    2i + 1: reshape to (n_heads, 2, d/2, ...), swap the axes 1 and 2, reshape back to weight's shape.
    """
    for heads, d, rest in _ROPE_CASES_LARGER if larger else _ROPE_CASES:
        weight = torch.randn(heads * d, *rest)
        what = "a bias" if not rest else f"W {tuple(weight.shape)}"
        label = f"{what}, n_heads={heads} (d = {d} rows per head)"
        yield Case(label, calls_case(call(weight, heads)), _judge_rope_layout)


def _judge_rope_layout(case: Case, got: Outcome) -> None:
    label, (weight, heads) = case.label, case.args()
    want = _reordered(weight, _per_head_order(weight.shape[0], heads))
    name_mistake(got.output(), want, _row_mistakes(weight, heads), label, 0.0, 0.0)
    out = expect_shape(got.output(), tuple(weight.shape), "the reordered weight", label)
    expect_dtype(out, weight.dtype, "the reordered weight", label)
    d = weight.shape[0] // heads
    flat, out_flat = weight.reshape(weight.shape[0], -1), out.reshape(weight.shape[0], -1)
    for h in range(heads):  # every row of head h must be one of head h's rows, unchanged
        block, mine = flat[h * d : (h + 1) * d], out_flat[h * d : (h + 1) * d]
        for j in range(d):
            if not (mine[j] == block).all(dim=1).any():
                raise CheckFailure(
                    f"{label}: row {h * d + j} is not one of the rows {h * d} … {(h + 1) * d - 1} of head {h}: "
                    "reorder the rows within each head, without changing them"
                )
    if not _same_scores(out, weight, heads):
        raise CheckFailure(
            f"{label}: queries and keys made with the reordered rows and rotated in pairs (2i, 2i+1) do not give the "
            "scores of the original rows rotated in pairs (i, i + d/2) (rotate_half): row i must go to 2i and "
            "row i + d/2 to 2i + 1, in every head"
        )


def _same_scores(out: Tensor, weight: Tensor, heads: int, base: float = 10000.0) -> bool:
    generator = torch.Generator().manual_seed(0)
    inputs = tuple(torch.randn(5, weight[0].numel(), generator=generator, dtype=torch.float64) for _ in range(2))
    theirs = _scores(weight, heads, _rotate_half_layout, inputs, base)
    ours = _scores(out, heads, _rotate_pairs, inputs, base)
    return torch.allclose(ours, theirs, atol=1e-9, rtol=1e-9)


# -- ex15_2: GPT-2's Conv1D → nn.Linear -------------------------------------------------------------

# (in, out per part, parts): c_attn (q, k, v side by side), c_proj (square: a forgotten transpose
# keeps the shape), the MLP's c_fc, in = parts·out (a split along the wrong axis keeps the shapes), two parts
_CONV1D_CASES = [(4, 6, 3), (6, 6, 1), (5, 20, 1), (6, 2, 3), (3, 5, 2)]
_CONV1D_CASES_LARGER = [(32, 48, 3), (24, 24, 1), (16, 64, 1), (24, 8, 3), (12, 20, 2)]


@exercise("ex15_2", "transformer_course.convert:split_conv1d", "easy")
def conv1d_cases(larger: bool = False) -> Iterator[Case]:
    """GPT-2's Conv1D: transpose the weight and split q, k, v

    Nudge: GPT-2 stores its projections transposed and fused: one matrix for the queries, keys and values
    together.

    Hint: each part has weight.shape[1] // parts outputs; split the weight along dimension 1 (the outputs) and the
    bias into blocks of that size (Tensor.split), and give nn.Linear each weight transposed, (out, in): w.t().contiguous().
    """
    for fan_in, out, parts in _CONV1D_CASES_LARGER if larger else _CONV1D_CASES:
        weight, bias = torch.randn(fan_in, parts * out), torch.randn(parts * out)
        label = f"Conv1D weight (in, parts·out) = {tuple(weight.shape)}, bias ({parts * out},), parts={parts}"
        yield Case(label, calls_case(call(weight, bias, parts)), _judge_conv1d)


def _judge_conv1d(case: Case, got: Outcome) -> None:
    label, (weight, bias, parts) = case.label, case.args()
    fan_in, out = weight.shape[0], weight.shape[1] // parts
    result = got.output()
    if isinstance(result, list | tuple) and len(result) != parts and parts > 1 and _all_outputs(result, weight):
        raise CheckFailure(f"{label}: {len(result)} pair(s) instead of {parts}, whose weights still have all "
                           f"{weight.shape[1]} outputs: the weight was split along the wrong axis (dimension 0, the "
                           "inputs); q, k and v are blocks of the outputs: weight.split(out, dim=1)")  # fmt: skip
    if not (isinstance(result, list | tuple) and len(result) == parts):
        raise CheckFailure(f"{label}: return a list of {parts} (weight, bias) pairs, got {kind(result)}"
                           + (f" of length {len(result)}" if isinstance(result, list | tuple) else ""))  # fmt: skip
    x = torch.randn(7, fan_in, generator=torch.Generator().manual_seed(0)).double()
    conv1d = x @ weight.double() + bias.double()  # (N, parts·out): GPT-2's y = x W + b
    for i, pair in enumerate(result):
        what = f"pair {i}"
        if not (isinstance(pair, list | tuple) and len(pair) == 2):
            raise CheckFailure(f"{label}: {what} should be a (weight, bias) pair, got {kind(pair)}")
        w, b = pair
        columns = slice(i * out, (i + 1) * out)
        _conv1d_mistakes(label, what, (w, b), (weight, bias, parts), i)
        expect_shape(w, (out, fan_in), f"{what}'s weight (nn.Linear's (out, in))", label)
        expect_shape(b, (out,), f"{what}'s bias", label)
        expect_close(F.linear(x, w.double(), b.double()), conv1d[:, columns],
                     f"F.linear(x, *{what}) (compared with columns {i * out} … {(i + 1) * out - 1} of x @ W + b)",
                     label)  # fmt: skip


def _all_outputs(result: list | tuple, weight: Tensor) -> bool:
    """Each pair's weight still has every output of the fused ``weight`` (in, parts·out) along one axis."""
    weights = [pair[0] for pair in result if isinstance(pair, list | tuple) and len(pair) == 2]
    return bool(weights) and all(isinstance(w, Tensor) and weight.shape[1] in tuple(w.shape) for w in weights)


def _conv1d_mistakes(label: str, what: str, pair: tuple, inputs: tuple, i: int) -> None:
    """Name the mistake if pair ``i`` is what a known wrong answer gives."""
    (w, b), (weight, bias, parts) = pair, inputs
    width = weight.shape[1] // parts  # of one part
    right, right_bias = weight[:, i * width : (i + 1) * width].T, bias[i * width : (i + 1) * width]
    name_mistake(pair, (right, right_bias), [((right_bias, right), f"{what} is (bias, weight): nn.Linear's pair is "
                                             "(weight, bias), the weight first")], label, 0.0, 0.0)  # fmt: skip
    if not isinstance(w, Tensor):
        raise CheckFailure(f"{label}: {what}'s weight should be a torch.Tensor, got {kind(w)}")
    if parts > 1 and tuple(w.shape) != tuple(right.shape) and weight.shape[1] in tuple(w.shape):
        raise CheckFailure(f"{label}: {what}'s weight {tuple(w.shape)} still has all {weight.shape[1]} outputs: it "
                           "was split along the wrong axis (dimension 0, the inputs); q, k and v are blocks of the "
                           "outputs, dimension 1 of Conv1D's (in, parts·out) weight")  # fmt: skip
    rows = weight.shape[0] // parts if weight.shape[0] % parts == 0 else None
    checks = [
        (weight[:, i * width : (i + 1) * width], "is not transposed: Conv1D stores (in, out) and computes x @ W; "
         "nn.Linear stores (out, in) and computes x @ W.T: give it w.t()"),
        (weight[:, i::parts].T, "takes every third column (weight[:, i::parts]): Conv1D's outputs sit in blocks "
         "side by side (all of q, then all of k, then all of v): split dimension 1 into consecutive blocks"),
        (weight[:, i * width : (i + 1) * width].reshape(width, -1), "is reshaped to (out, in), not transposed: "
         "reshape keeps the order of the values in memory and mixes the inputs; give it w.t()"),
        (weight.reshape(parts, weight.shape[0], width)[i].T, "comes from weight.reshape(parts, in, out), which "
         "does not cut the columns into blocks (it reads the values row by row): split dimension 1, "
         "weight.split(out, dim=1)"),
    ]  # fmt: skip
    if rows is not None and parts > 1:
        block = weight[i * rows : (i + 1) * rows]
        checks += [(block, "splits the weight along the wrong axis (dimension 0, the inputs): q, k and v are blocks "
                    "of the outputs, dimension 1 of Conv1D's (in, parts·out) weight"),
                   (block.T, "splits the weight along the wrong axis (dimension 0, the inputs): q, k and v are blocks "
                    "of the outputs, dimension 1 of Conv1D's (in, parts·out) weight")]  # fmt: skip
    for j in range(parts):
        if j != i:
            checks.append(
                (
                    weight[:, j * width : (j + 1) * width].T,
                    f"holds part {j}, not part {i}: keep the order of the blocks (q, then k, then v)",
                )
            )
    name_mistake(w, right, [(wrong, f"{what}'s weight {message}") for wrong, message in checks], label, 0.0, 0.0)
    if isinstance(b, Tensor) and b.shape == bias.shape and parts > 1:
        raise CheckFailure(f"{label}: {what}'s bias is the whole bias ({tuple(bias.shape)}): split it too, "
                           "into the same blocks as the weight")  # fmt: skip


# -- ex15_3: Marian's names -------------------------------------------------------------------------

# Marian's layer, as transformers' MarianEncoderLayer and MarianDecoderLayer name their tensors (the
# tests compare this table with theirs): name → its role; each tensor has a weight and a bias.
_MARIAN = {
    "self_attn.q_proj": "self-attention's W^Q", "self_attn.k_proj": "self-attention's W^K", "self_attn.v_proj": "self-attention's W^V",
    "self_attn.out_proj": "self-attention's W^O", "self_attn_layer_norm": "norm after self-attention",
    "encoder_attn.q_proj": "cross-attention's W^Q", "encoder_attn.k_proj": "cross-attention's W^K", "encoder_attn.v_proj": "cross-attention's W^V",
    "encoder_attn.out_proj": "cross-attention's W^O", "encoder_attn_layer_norm": "norm after cross-attention",
    "fc1": "the network's first layer", "fc2": "the network's second layer", "final_layer_norm": "norm after the feed-forward network",
}  # fmt: skip
_CROSS = ("encoder_attn.", "encoder_attn_layer_norm")  # the decoder's only

# The course's layer, as chapter 05 and 06 describe it: name → the same roles
_OURS = {
    "self_attn.w_q": "self-attention's W^Q", "self_attn.w_k": "self-attention's W^K", "self_attn.w_v": "self-attention's W^V", "self_attn.w_o": "self-attention's W^O",
    "norm1": "norm after self-attention", "cross_attn.w_q": "cross-attention's W^Q", "cross_attn.w_k": "cross-attention's W^K",
    "cross_attn.w_v": "cross-attention's W^V", "cross_attn.w_o": "cross-attention's W^O", "ffn.linear1": "the network's first layer", "ffn.linear2": "the network's second layer",
}  # fmt: skip


def marian_names(decoder: bool) -> dict[str, str]:
    """Marian's tensor names of one layer → their roles (weight and bias)."""
    names = {k: v for k, v in _MARIAN.items() if decoder or not k.startswith(_CROSS)}
    return {f"{name}.{t}": f"{role} ({t})" for name, role in names.items() for t in ("weight", "bias")}


def our_roles(decoder: bool) -> dict[str, str]:
    """Our tensor names of one layer → their roles: the encoder's norm2 follows the feed-forward
    network, the decoder's norm2 the cross-attention and its norm3 the network."""
    names = {k: v for k, v in _OURS.items() if decoder or not k.startswith("cross_attn.")}
    if decoder:
        names |= {"norm2": "norm after cross-attention", "norm3": "norm after the feed-forward network"}
    else:
        names["norm2"] = "norm after the feed-forward network"
    return {f"{name}.{t}": f"{role} ({t})" for name, role in names.items() for t in ("weight", "bias")}


def _shapes(d: int, d_ff: int) -> dict[str, tuple[int, ...]]:
    """The shape of each of Marian's tensors for d_model = d and d_ff."""
    shapes = {}
    for name, role in marian_names(True).items():
        if role.startswith("the network's first layer"):
            shape = (d_ff, d) if name.endswith("weight") else (d_ff,)
        elif role.startswith("the network's second layer"):
            shape = (d, d_ff) if name.endswith("weight") else (d,)
        else:
            shape = (d, d) if name.endswith("weight") and "norm" not in name else (d,)
        shapes[name] = shape
    return shapes


def _attention(x: Tensor, memory: Tensor, t: dict, names: tuple[str, ...], heads: int, causal: bool) -> Tensor:
    """Multi-head attention written out, one head at a time. Shape: (T, D), (S, D) → (T, D)"""
    q_name, k_name, v_name, o_name = names
    q = F.linear(x, t[f"{q_name}.weight"], t[f"{q_name}.bias"])
    k = F.linear(memory, t[f"{k_name}.weight"], t[f"{k_name}.bias"])
    v = F.linear(memory, t[f"{v_name}.weight"], t[f"{v_name}.bias"])
    d = q.shape[-1] // heads
    outputs = []
    for h in range(heads):
        cols = slice(h * d, (h + 1) * d)
        scores = q[:, cols] @ k[:, cols].T / math.sqrt(d)  # (T, S)
        if causal:
            scores = scores.masked_fill(torch.ones_like(scores, dtype=torch.bool).triu(1), float("-inf"))
        outputs.append(scores.softmax(-1) @ v[:, cols])
    return F.linear(torch.cat(outputs, dim=-1), t[f"{o_name}.weight"], t[f"{o_name}.bias"])


def post_ln_layer(x: Tensor, memory: Tensor | None, tensors: dict[str, Tensor], roles: dict[str, str],
                  heads: int) -> Tensor:  # fmt: skip
    """A post-LN encoder layer (``memory`` None) or decoder layer run on ``tensors`` named as in
    ``roles`` (name → role: :func:`marian_names` or :func:`our_roles`); swish in the network.

    Shape:
        x (T, D), memory (S, D) → (T, D)
    """
    by_role = {role.rsplit(" (", 1)[0]: name.rsplit(".", 1)[0] for name, role in roles.items()}

    def norm(h: Tensor, role: str) -> Tensor:
        name = by_role[role]
        return F.layer_norm(h, h.shape[-1:], tensors[f"{name}.weight"], tensors[f"{name}.bias"], eps=1e-5)

    def projections(kind: str) -> tuple[str, ...]:
        return tuple(by_role[f"{kind}'s W^{p}"] for p in "QKVO")

    h = norm(
        x + _attention(x, x, tensors, projections("self-attention"), heads, memory is not None),
        "norm after self-attention",
    )
    if memory is not None:
        h = norm(
            h + _attention(h, memory, tensors, projections("cross-attention"), heads, False),
            "norm after cross-attention",
        )
    up, down = by_role["the network's first layer"], by_role["the network's second layer"]
    hidden = F.linear(h, tensors[f"{up}.weight"], tensors[f"{up}.bias"])
    hidden = hidden * torch.sigmoid(hidden)  # swish
    return norm(h + F.linear(hidden, tensors[f"{down}.weight"], tensors[f"{down}.bias"]),
                "norm after the feed-forward network")  # fmt: skip


@exercise("ex15_3", "transformer_course.convert:marian_layer_names", "medium")
def marian_names_cases() -> Iterator[Case]:
    """Marian's names: map our layer's tensors to an OPUS-MT checkpoint's

    Nudge: the same tensors under another checkpoint's naming scheme: match each of our sub-layers to Marian's.

    Hint: w_q/w_k/w_v/w_o → q_proj/k_proj/v_proj/out_proj (self_attn; the decoder's cross_attn is Marian's
    encoder_attn); ffn.linear1/2 → fc1/fc2; norm1 → self_attn_layer_norm; the norm after the network (the encoder's
    norm2, the decoder's norm3) → final_layer_norm; the decoder's norm2 → encoder_attn_layer_norm. Each with
    .weight and .bias.
    """
    # No larger hidden cases: the input is a flag (decoder or not) and the answer a table of names, the
    # same at every size; the grader's hidden cases draw these two again (nothing random in them).
    from transformer_course.decoder import DecoderLayer  # the course's classes: the names their state_dict holds
    from transformer_course.encoder import EncoderLayer

    for decoder, layer in ((False, EncoderLayer(8, 2, 12)), (True, DecoderLayer(8, 2, 12))):
        label = f"marian_layer_names(decoder={decoder})"
        yield Case(label, calls_case(call(decoder)), _judge_marian, {"ours": sorted(layer.state_dict())})


def _judge_marian(case: Case, got: Outcome) -> None:
    label, (decoder,) = case.label, case.args()
    names = got.output()
    if not (isinstance(names, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in names.items())):
        raise CheckFailure(f"{label}: return a dict of our names → Marian's names (str → str), got {kind(names)}")
    ours, theirs = case.given["ours"], marian_names(decoder)
    by_role = {role: name for name, role in theirs.items()}
    want = {name: by_role[role] for name, role in our_roles(decoder).items()}
    name_mistake(names, want, _marian_table(want), label)
    _marian_mistakes(label, decoder, names)
    missing = [name for name in ours if name not in names]
    if missing:
        raise CheckFailure(f"{label}: no Marian name for our {', '.join(missing[:4])}"
                           + (" …" if len(missing) > 4 else "") + ": every tensor has a .weight and a .bias")  # fmt: skip
    extra = [name for name in names if name not in ours]
    if extra:
        raise CheckFailure(f"{label}: our {'decoder' if decoder else 'encoder'} layer has no tensor {extra[0]}")
    unknown = [name for name in names.values() if name not in theirs]
    if unknown:
        raise CheckFailure(f"{label}: Marian's {'decoder' if decoder else 'encoder'} layer has no tensor {unknown[0]}")
    twice = sorted({v for v in names.values() if list(names.values()).count(v) > 1})
    if twice:
        raise CheckFailure(f"{label}: Marian's {twice[0]} is given to two of our tensors")
    shapes = _shapes(8, 12)
    generator = torch.Generator().manual_seed(0)
    tensors = {name: torch.randn(shapes[name], generator=generator, dtype=torch.float64) for name in theirs}
    x, memory = (torch.randn(n, 8, generator=generator, dtype=torch.float64) for n in (5, 4))
    memory = memory if decoder else None
    want = post_ln_layer(x, memory, tensors, theirs, 2)  # Marian's layer, by Marian's names
    loaded = {name: tensors[names[name]] for name in ours}  # what the converter would load into ours
    for name in ours:
        if loaded[name].shape != shapes[names[name]] or tuple(loaded[name].shape) != _our_shape(name, 8, 12):
            raise CheckFailure(f"{label}: our {name} has shape {_our_shape(name, 8, 12)}, Marian's {names[name]} "
                               f"{tuple(loaded[name].shape)}")  # fmt: skip
    out = post_ln_layer(x, memory, loaded, our_roles(decoder), 2)  # our layer, loaded by these names
    if not torch.allclose(out, want, atol=1e-9):
        wrong = [f"our {k} is {our_roles(decoder)[k]}, Marian's {v} is {theirs[v]}"
                 for k, v in names.items() if theirs[v] != our_roles(decoder)[k]]  # fmt: skip
        raise CheckFailure(f"{label}: our layer loaded with these names computes another function than Marian's: "
                           + "; ".join(wrong[:3]))  # fmt: skip
    expect_close(out, want, "the loaded layer's output (compared with Marian's layer)", label)


def _our_shape(name: str, d: int, d_ff: int) -> tuple[int, ...]:
    if name.startswith("ffn.linear1"):
        return (d_ff, d) if name.endswith("weight") else (d_ff,)
    if name.startswith("ffn.linear2"):
        return (d, d_ff) if name.endswith("weight") else (d,)
    return (d, d) if name.endswith("weight") and not name.startswith("norm") else (d,)


def _marian_table(want: dict[str, str]) -> list[tuple[dict[str, str], str]]:
    """The whole answers of typical mistakes, each made from the right one ``want``, with what is wrong."""

    def renamed(old: str, new: str) -> dict[str, str]:
        return {k: v.replace(old, new) for k, v in want.items()}

    def swapped(a: str, b: str) -> dict[str, str]:
        return {k: v.replace(a, "\0").replace(b, a).replace("\0", b) for k, v in want.items()}

    return [
        (renamed("out_proj", "o_proj"), "Marian's output projection is out_proj (o_proj is Llama's name): "
         "w_o → out_proj"),
        (renamed("encoder_attn.", "cross_attn."), "the decoder's cross-attention is named cross_attn: "
         "Marian calls it encoder_attn (encoder_attn.q_proj, …)"),
        (swapped("fc1", "fc2"), "fc1 and fc2 are swapped: ffn.linear1 (d_model → d_ff) is Marian's fc1, "
         "ffn.linear2 its fc2"),
        (swapped("q_proj", "k_proj"), "the queries and keys are swapped: self_attn.w_q is self-attention's W^Q "
         "(q_proj), self_attn.w_k self-attention's W^K (k_proj); the same in cross_attn"),
        (swapped("k_proj", "v_proj"), "the keys and values are swapped: w_k → k_proj, w_v → v_proj"),
    ]  # fmt: skip


def _marian_mistakes(label: str, decoder: bool, names: dict[str, str]) -> None:
    """Name the typical mistakes the mapping shows."""
    get = names.get
    if not decoder and str(get("norm2.weight", "")).startswith("encoder_attn_layer_norm"):
        raise CheckFailure(f"{label}: the encoder layer has no cross-attention: its norm2 follows the feed-forward "
                           "network, Marian's final_layer_norm (encoder_attn_layer_norm is the decoder's)")  # fmt: skip
    if not decoder and any(str(v).startswith("encoder_attn") for v in names.values()):
        raise CheckFailure(f"{label}: the encoder layer has no encoder_attn (that is the decoder's cross-attention)")
    if (
        decoder
        and get("norm2.weight") == "final_layer_norm.weight"
        and get("norm3.weight") != "final_layer_norm.weight"
    ):
        raise CheckFailure(f"{label}: norm2 and norm3 are mixed up: in our decoder layer norm2 follows the "
                           "cross-attention (encoder_attn_layer_norm) and norm3 the network (final_layer_norm)")  # fmt: skip
    if decoder and str(get("cross_attn.w_q.weight", "")).startswith("self_attn."):
        raise CheckFailure(f"{label}: cross-attention is mapped to self_attn; Marian calls the decoder's attention "
                           "over the encoder's output encoder_attn")  # fmt: skip
    if decoder and "cross_attn.w_q.weight" not in names:
        raise CheckFailure(f"{label}: a decoder layer (decoder=True) also has cross_attn (Marian's encoder_attn) "
                           "and norm3")  # fmt: skip
    if get("norm1.weight") == "final_layer_norm.weight":
        raise CheckFailure(f"{label}: norm1 is mapped to final_layer_norm: it is the norm after self-attention "
                           "(self_attn_layer_norm); these layers are post-LN, each norm follows its sub-layer")  # fmt: skip
    if "self_attn.w_q.weight" in names and "self_attn.w_q.bias" not in names:
        raise CheckFailure(f"{label}: only the weights are named: Marian's layers also have a bias each "
                           "(self_attn.w_q.bias → self_attn.q_proj.bias, norm1.bias → …)")  # fmt: skip
