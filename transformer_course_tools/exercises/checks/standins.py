"""Stand-ins: the course's own versions of the exercises that other exercises' code calls.

A check tests one exercise. Yet ``scaled_dot_product_attention`` (ex03_3) calls
``attention_scores`` and ``apply_mask`` (ex03_1, ex03_2), multi-head attention (ex04_3) calls
``split_heads`` and ``merge_heads``, an encoder layer (ex05_3) runs ``residual``, multi-head
attention and the feed-forward network… If the check ran the learner's versions of those, one
wrong answer would fail every check downstream of it. So while exercise X is checked, every call
from X's code to another exercise goes to the stand-in below instead (:mod:`.isolation` does the
switching; the learner's files are never touched).

The stand-ins are written independently of the worked solutions, with other PyTorch functions
and other formulas, and each is compared with the solution it replaces by the course's tests.
"""

from __future__ import annotations

import ast
import inspect
import math
import sys
from collections.abc import Callable, Iterable

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def attention_scores(q: Tensor, k: Tensor) -> Tensor:
    """ex03_1: (..., T, Dk), (..., S, Dk) → (..., T, S)."""
    return torch.einsum("...td,...sd->...ts", q, k) * (1.0 / math.sqrt(q.shape[-1]))


def apply_mask(scores: Tensor, mask: Tensor | None) -> Tensor:
    """ex03_2: blocked scores become the dtype's lowest value."""
    if mask is None:
        return scores
    return torch.where(mask, scores, torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype))


def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0
) -> tuple[Tensor, Tensor]:
    """ex03_3: ``(output (..., T, Dv), weights (..., T, S))``, weights before dropout."""
    logits = apply_mask(attention_scores(q, k), mask)
    probabilities = torch.exp(logits - logits.amax(dim=-1, keepdim=True))
    probabilities = probabilities / probabilities.sum(dim=-1, keepdim=True)  # (..., T, S)
    used = F.dropout(probabilities, dropout_p) if dropout_p > 0 else probabilities
    return torch.einsum("...ts,...sd->...td", used, v), probabilities


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """ex04_1: (B, T, H·Dh) → (B, H, T, Dh), head h holding the h-th block of features."""
    return torch.stack(x.chunk(n_heads, dim=-1), dim=1)


def merge_heads(x: Tensor) -> Tensor:
    """ex04_2: (B, H, T, Dh) → (B, T, H·Dh), the heads side by side."""
    return torch.cat(x.unbind(dim=1), dim=-1)


def multi_head_attention_forward(
    self: nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    need_weights: bool = False,
    *,
    fast: bool = True,
) -> tuple[Tensor, Tensor | None]:
    """ex04_3, as a method of the learner's ``MultiHeadAttention`` (its weights)."""
    queries = split_heads(self.w_q(query), self.n_heads)  # (B, H, T, Dk)
    keys, values = split_heads(self.w_k(key), self.n_heads), split_heads(self.w_v(value), self.n_heads)
    p = self.dropout if self.training else 0.0
    heads, weights = scaled_dot_product_attention(queries, keys, values, mask, p)  # (B, H, T, Dv)
    return self.w_o(merge_heads(heads)), (weights if need_weights else None)


def feed_forward_forward(self: nn.Module, x: Tensor) -> Tensor:
    """ex05_1, as a method of the learner's ``PositionwiseFeedForward``."""
    inner = self.activation(F.linear(x, self.linear1.weight, self.linear1.bias))  # (..., d_ff)
    return F.linear(self.dropout(inner), self.linear2.weight, self.linear2.bias)


def residual(
    x: Tensor, sublayer: Callable[[Tensor], Tensor], norm: nn.Module, dropout: nn.Module, norm_first: bool
) -> Tensor:
    """ex05_2: pre-LN adds the branch to the untouched input; post-LN normalises the sum."""
    if norm_first:
        branch = sublayer(norm(x))
        return torch.add(x, dropout(branch))
    total = torch.add(x, dropout(sublayer(x)))
    return norm(total)


def label_smoothed_cross_entropy(logits: Tensor, target: Tensor, smoothing: float = 0.1, pad_id: int = 0) -> Tensor:
    """ex08_3, through PyTorch's own cross-entropy (a batch of padding only gives 0, not NaN)."""
    summed = F.cross_entropy(
        logits.float().flatten(0, 1), target.flatten(), ignore_index=pad_id, label_smoothing=smoothing, reduction="sum"
    )
    return summed / (target != pad_id).sum().clamp(min=1)


def attention_parameters(d_model: int, n_heads: int, d_k: int | None = None, d_v: int | None = None,
                         bias: bool = True) -> int:  # fmt: skip
    """ex07_1: the four projections' (inputs, outputs), each with its weights and, with ``bias``, a bias."""
    d_k, d_v = d_k or d_model // n_heads, d_v or d_model // n_heads
    shapes = [(d_model, n_heads * d_k)] * 2 + [(d_model, n_heads * d_v), (n_heads * d_v, d_model)]
    return sum(inputs * outputs + (outputs if bias else 0) for inputs, outputs in shapes)


def layer_parameters(d_model: int, n_heads: int, d_ff: int, d_k: int | None = None, d_v: int | None = None,
                     decoder: bool = False) -> int:  # fmt: skip
    """ex07_2: the attentions, the network's two linear layers with biases, a LayerNorm per sub-layer."""
    attentions = (2 if decoder else 1) * attention_parameters(d_model, n_heads, d_k, d_v)
    network = (d_model + 1) * d_ff + (d_ff + 1) * d_model
    return attentions + network + 2 * d_model * (3 if decoder else 2)


def dequantize_rows(q: Tensor, scale: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """ex16_1: row r of the int8 matrix times scale[r], in ``dtype``."""
    return torch.einsum("oi,o->oi", q.to(dtype), scale.to(dtype))


# exercise id → its stand-in (methods take the learner's module as ``self``)
STANDINS: dict[str, Callable] = {
    "ex03_1": attention_scores,
    "ex03_2": apply_mask,
    "ex03_3": scaled_dot_product_attention,
    "ex04_1": split_heads,
    "ex04_2": merge_heads,
    "ex04_3": multi_head_attention_forward,
    "ex05_1": feed_forward_forward,
    "ex05_2": residual,
    "ex07_1": attention_parameters,
    "ex07_2": layer_parameters,
    "ex08_3": label_smoothed_cross_entropy,
    "ex16_1": dequantize_rows,
}


def job_source(uses: Iterable[str]) -> str:
    """A module's source holding the stand-ins of the exercises ``uses`` (and those they call), as
    ``STANDINS``: what a grading job gets for an exercise whose code calls them (and nothing else)."""
    tree = ast.parse(_SOURCE)
    header = [ast.get_source_segment(_SOURCE, n) for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    needed = standin_closure(uses)
    functions = [inspect.getsource(fn) for fn in _FUNCTIONS.values() if fn.__name__ in needed]
    table = ", ".join(f"{i!r}: {STANDINS[i].__name__}" for i in sorted(uses))
    return "\n".join([*header, "", *functions, f"STANDINS = {{{table}}}", ""])


def standin_closure(uses: Iterable[str]) -> set[str]:
    """The names of the stand-in functions that the stand-ins of ``uses`` need, themselves included."""
    todo, needed = [STANDINS[i].__name__ for i in uses], set()
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo += [other for other in _FUNCTIONS[name].__code__.co_names if other in _FUNCTIONS]
    return needed


_SOURCE = inspect.getsource(sys.modules[__name__])
_FUNCTIONS = {  # the stand-ins and their helpers, in the order of this file
    name: fn
    for name, fn in dict(vars()).items()
    if inspect.isfunction(fn) and fn.__module__ == __name__ and fn not in (job_source, standin_closure)
}
