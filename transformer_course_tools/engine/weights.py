"""The engine's weight matrices: each read once from the model, in the layout its product reads fastest.

A decoding step at batch 1 multiplies one row by every matrix of the model, so its time is the
time to read the weights from memory. How fast a product reads them depends on the kernel and
the layout; ``python -m benchmarks.engines --kernels`` measures the choices on the shapes of real
models. On a CPU, in float32:

* **one row** (a step at batch 1): PyTorch's product on ``nn.Linear``'s (out, in) layout reads
  the weights at about two thirds of the speed it reads a contiguous (in, out) copy, Wᵀ. So a
  :class:`Dense` keeps Wᵀ contiguous. (The BLAS that NumPy ships reads that copy faster still,
  but it runs its own threads, which PyTorch's thread setting does not reach: left out.);
* **several rows** (a batch, beams, a prompt, the encoder): oneDNN's kernel on a copy of W in
  its own blocked layout is 1.4 to 2.5 times as fast as the product on Wᵀ, which packs the
  weights again at every call. That copy is made the first time a product of several rows is
  asked for (a decoding step at batch 1 never needs it).

Several matrices that read the same input are stacked into one (W^Q, W^K, W^V; SwiGLU's W₁ and
W₃): one product instead of three. On a GPU, and in bfloat16, the product is PyTorch's.

An :class:`Int8Dense` keeps int8 weights with one scale per output row (chapter 16's
``quantize``) and calls chapter 16's own product, ``int8_linear``, as ``Int8Linear`` does: on a
CPU fbgemm's kernel with the weights packed once (each input row rounded to whole numbers with its
own scale, so that no row depends on another); on a GPU PyTorch's weight-only int8 product, which
reads the int8 weights and never makes a float copy of them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def blocked(weight: Tensor) -> Tensor | None:
    """W (out, in) in oneDNN's blocked layout for products of several rows, or None where this
    PyTorch has no oneDNN (the product then reads Wᵀ)."""
    try:
        return torch.ops.mkldnn._reorder_linear_weight(weight, 16)  # laid out for 16 rows; any number works
    except (AttributeError, RuntimeError):
        return None


class Dense:
    """``x @ Wᵀ + b``, read in the layout that is fastest for the device, dtype and number of rows.

    Args:
        weight: W, (out, in), as ``nn.Linear`` holds it (copied, so the model stays as it was).
        bias: b, (out,), or None.

    Shape:
        x: (N, in) → (N, out)
    """

    def __init__(self, weight: Tensor, bias: Tensor | None) -> None:
        weight = weight.detach()
        self.bias = None if bias is None else bias.detach().clone()  # (out,)
        # float32 on a CPU: the fast kernels above. Elsewhere nn.Linear's layout and PyTorch's product, so
        # that the product is the kernel the modules call: bfloat16 rounds each result to 8 bits, and a
        # kernel that adds in another order would round some of them the other way.
        self.cpu_float32 = weight.dtype == torch.float32 and weight.device.type == "cpu"
        self.weight_t = weight.t().contiguous() if self.cpu_float32 else weight.clone().t()  # (in, out)
        self.weight_blocked: Tensor | None = None  # oneDNN's copy, made at the first product of several rows

    @property
    def out_features(self) -> int:
        return self.weight_t.shape[1]

    @property
    def nbytes(self) -> int:
        """Bytes a product reads: the weights and the bias."""
        return sum(t.numel() * t.element_size() for t in (self.weight_t, self.bias) if t is not None)

    def __call__(self, x: Tensor) -> Tensor:
        if x.dim() == 3:  # bfloat16: the learner's merge_heads's (B, T, ·) in its layout, read as nn.Linear reads it
            return F.linear(x, self.weight_t.t(), self.bias).flatten(0, 1)  # (B·T, out)
        if self.cpu_float32 and x.shape[0] > 1:  # several rows: oneDNN on its blocked copy
            if self.weight_blocked is None:
                self.weight_blocked = blocked(self.weight_t.t())
            if self.weight_blocked is not None:
                return torch.ops.mkldnn._linear_pointwise(
                    x.contiguous(), self.weight_blocked, self.bias, "none", [], ""
                )
        if self.bias is None:
            return x.mm(self.weight_t)  # (N, out)
        return torch.addmm(self.bias, x, self.weight_t)  # (N, out)

    def add_to(self, residual: Tensor, x: Tensor) -> Tensor:
        """``residual + x @ Wᵀ + b``: the sum that ends a sub-layer. For one row in float32 without a
        bias, one product adds the residual (``addmm``); otherwise the sum comes after the product,
        as the modules compute it (in bfloat16 each step rounds, and the two paths must round alike).

        Shape:
            residual: (N, out), x: (N, in) → (N, out)
        """
        if self.cpu_float32 and self.bias is None and x.shape[0] == 1:
            return torch.addmm(residual, x, self.weight_t)  # (1, out)
        return self(x).add_(residual)


class Int8Dense:
    """``x @ (q · s)ᵀ + b`` with int8 weights ``q`` (out, in) and one scale per row ``s`` (out,).

    On a CPU with fbgemm the weights are packed for its kernel once, here; elsewhere (a GPU) the
    product is ``torch._weight_int8pack_mm``, which reads the int8 weights as they are.

    Shape:
        x: (N, in) → (N, out)
    """

    def __init__(self, q: Tensor, scale: Tensor, bias: Tensor | None) -> None:
        from transformer_course.quantize import (  # chapter 16's room: read when an int8 model is planned
            fbgemm_pack,
            int8_linear,
        )

        self.product = int8_linear  # the modules' own int8 product: the two paths round alike
        self.q, self.scale = q.detach(), scale.detach().float()  # (out, in) int8, (out,)
        self.bias = None if bias is None else bias.detach().float()  # (out,)
        self.packed = fbgemm_pack(self.q, self.scale)  # None where the kernel is missing

    @property
    def out_features(self) -> int:
        return self.q.shape[0]

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.q, self.scale, self.bias) if t is not None)

    def __call__(self, x: Tensor) -> Tensor:
        return self.product(x, self.q, self.scale, self.bias, self.packed)  # (N, out)

    def add_to(self, residual: Tensor, x: Tensor) -> Tensor:
        return self(x).add_(residual)


def read_dense(
    linears: list, fold: tuple[Tensor, Tensor | None] | None = None, forbidden: tuple[int, ...] = ()
) -> Dense | Int8Dense:
    """One :class:`Dense` (or :class:`Int8Dense`) for several layers that read the same input: their
    output rows stacked in the order given.

    Args:
        linears: ``nn.Linear`` or chapter 16's ``Int8Linear`` layers, (out_i, in) each.
        fold: a pre-LN norm's (gain g, shift β or None) folded in: ``W (g ⊙ x̂ + β) + b`` is
            ``(W diag(g)) x̂ + (W β + b)``, so the norm before it needs no weights of its own.
        forbidden: outputs that are always ``-inf`` (a translator's ``<pad>`` and ``<bos>``, never
            a next token): their bias is ``-inf``, which spares a pass over the logits each step.
    """
    bias = _stacked_bias(linears)
    if forbidden:
        if bias is None:
            weight = linears[0].weight
            dtype = weight.dtype if weight.dtype.is_floating_point else torch.float32  # int8 layers: a float bias
            bias = torch.zeros(sum(layer.weight.shape[0] for layer in linears), dtype=dtype, device=weight.device)
        bias[list(forbidden)] = float("-inf")  # a copy: _stacked_bias concatenates
    if all(hasattr(layer, "scale") for layer in linears):  # int8 layers: stacking keeps each row's scale
        if fold is not None:
            raise ValueError("int8 weights are not folded: the norm keeps its gain")
        q = torch.cat([layer.weight.detach() for layer in linears])  # (Σ out_i, in) int8
        return Int8Dense(q, torch.cat([layer.scale.detach() for layer in linears]), bias)
    weight = torch.cat([layer.weight.detach() for layer in linears])  # (Σ out_i, in)
    if fold is not None:
        gain, shift = fold
        if shift is not None:  # W β joins the bias
            bias = weight @ shift.to(weight.dtype) + (0 if bias is None else bias)
        weight = weight * gain.to(weight.dtype)  # (Σ out_i, in): column j times g_j
    return Dense(weight, bias)


def _stacked_bias(linears: list) -> Tensor | None:
    """The layers' biases stacked (zeros for a layer without one); None if none has one."""
    if all(layer.bias is None for layer in linears):
        return None
    some = next(layer.bias for layer in linears if layer.bias is not None)
    parts = [
        layer.bias.detach() if layer.bias is not None else some.new_zeros(layer.weight.shape[0]) for layer in linears
    ]
    return torch.cat(parts)
