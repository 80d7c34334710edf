"""Chapter 16 — smaller numbers: the same model with 16-bit or 8-bit weights.

A decoding step at batch 1 multiplies one vector by every weight matrix of the decoder and by the
output layer: each weight is read once from memory and used for one multiply-add. Memory, not
arithmetic, sets its time, so storing the weights in fewer bytes makes the step faster.

- ``"bf16"``: every floating-point tensor in bfloat16 (2 bytes: float32's exponent, 8 bits of
  mantissa). The whole model computes in bfloat16; decoding turns the logits back into float32.
  How fast depends on the processor: one without bfloat16 instructions (AVX2 only, say)
  converts every number before it multiplies, and can be slower than float32.
- ``"int8"``: each weight matrix W (out, in) becomes whole numbers ``q`` in [-127, 127] and one
  scale per output row, ``s = max|W_row| / 127``, so ``W ≈ q · s`` with an error of at most
  ``s / 2`` per entry (1 byte per weight instead of 4). :class:`Int8Linear` computes
  ``x @ (q · s)ᵀ + b`` and :class:`Int8Embedding` looks up ``q[id] · s[id]``; a tied output
  layer and its embedding share one ``q`` and one ``s``. Layer norms, biases, positions, the
  key/value cache and the logits stay float32.

How :class:`Int8Linear` multiplies: on a CPU it rounds each row of its *input* (each token) to whole
numbers as well, in [-63, 63] with the row's own scale ``max|x_row| / 63`` (the kernel rounds
them to the nearest), hands them to
PyTorch's fbgemm kernel with ``q`` and ``s`` (``quantized::linear_with_input_q_dq_qweight_dq_output_fp32``,
the kernel of ``torch.ao.quantization``), which multiplies whole numbers exactly, and scales each
row back. A row's result depends on that row only: a sentence translates alike alone or in a
batch. (PyTorch's dynamic quantization takes one scale for the whole input instead, so one row's
large values coarsen every other row's. 63 and not 127: x86's kernel adds pairs of products in
16 bits, which 7-bit inputs cannot overflow.) Where that kernel is missing (a build without
fbgemm), the layer multiplies by ``q · s`` made float at each call: correct, not faster. On a GPU
it calls ``torch._weight_int8pack_mm``, weight-only int8: the int8 weights are read as they are
and the input keeps its precision (also row by row). (On a CPU that kernel was about 9× slower
than fbgemm with float32 inputs, so fbgemm stays the CPU's kernel.) Measured in
``benchmarks/results.md``.
"""

from __future__ import annotations

import copy
import math
import warnings

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._validate import checksum, first_non_finite
from .embeddings import TokenEmbedding

PRECISIONS = ("bf16", "int8")
INT8_MAX = 127  # symmetric: -127 … 127, so that q and -q are both representable


def quantize(model: nn.Module, precision: str) -> nn.Module:
    """A copy of ``model`` with its weights in ``precision`` ("bf16" or "int8"), in evaluation mode.

    ``model`` (a :class:`~.model.Transformer` or a :class:`~.lm.DecoderOnlyLM`) is not changed.
    The copy runs with :func:`~.decoding.greedy_decode`, :func:`~.decoding.beam_search` and
    :func:`~.lm.generate` as the original does; it is for inference only (its int8 weights take
    no gradient).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, got {precision!r}")
    culprit = first_non_finite(model)
    if culprit:  # int8 would hide it (a row's scale of NaN): refused in every precision
        raise ValueError(f"{culprit}: quantize wants finite weights")
    model = copy.deepcopy(model).eval()
    if precision == "bf16":
        return model.to(torch.bfloat16)
    with torch.no_grad():
        _int8_in_place(model)
    return model


def quantize_rows(weight: Tensor) -> tuple[Tensor, Tensor]:
    """Symmetric int8 quantization with one scale per row: ``weight ≈ q · scale[:, None]``.

    Each row's largest magnitude becomes ±127; every entry is rounded to the nearest multiple of
    its row's scale, so ``|weight - q · scale| ≤ scale / 2``. A row of zeros gets scale 1.

    Shape:
        weight: (out, in), any float dtype → ``(q, scale)``: q (out, in) int8, scale (out,) float32
    """
    if weight.dim() != 2 or not weight.is_floating_point():
        raise ValueError(f"weight must be a float matrix (out, in), got {weight.dtype} of shape {tuple(weight.shape)}")
    ### BEGIN SOLUTION
    weight = weight.detach().float()
    scale = weight.abs().amax(dim=1) / INT8_MAX  # (out,)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.round(weight / scale[:, None]).clamp(-INT8_MAX, INT8_MAX).to(torch.int8)  # (out, in)
    return q, scale
    ### END SOLUTION


def dequantize_rows(q: Tensor, scale: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """``q · scale`` as a float matrix of ``dtype``: row r of ``q`` times the row's scale ``scale[r]``.

    Shape:
        q: (out, in) int8, scale: (out,) → (out, in) in ``dtype`` (float32 unless given)
    """
    if q.dim() != 2 or scale.shape != q.shape[:1]:
        raise ValueError(f"q must be (out, in) and scale (out,), got shapes {tuple(q.shape)} and {tuple(scale.shape)}")
    ### BEGIN SOLUTION
    return q.to(dtype) * scale.to(dtype)[:, None]
    ### END SOLUTION


def _frozen(tensor: Tensor) -> nn.Parameter:
    """A parameter without gradient (it moves with ``.to(device)`` and stays shared when tied);
    one already made is kept, so that two layers can hold the same one."""
    return tensor if isinstance(tensor, nn.Parameter) else nn.Parameter(tensor, requires_grad=False)


class Int8Linear(nn.Module):
    """``nn.Linear`` with int8 weights and one float32 scale per output row (see the module).

    ``weight`` (out, in) int8 and ``scale`` (out,) are what the layer stores (its state dict);
    the fbgemm kernel's copy of them (``packed``, on a CPU) is made again whenever either changed:
    each call compares their storage, version counters and the sum of their bytes (``load_state_dict``
    and ``copy_`` change a version; a write through ``.data`` or NumPy changes only the bytes).

    Shape:
        x: (..., in) float32 → (..., out) float32
    """

    def __init__(self, q: Tensor, scale: Tensor, bias: Tensor | None) -> None:
        super().__init__()
        self.weight, self.scale = _frozen(q), _frozen(scale)
        self.bias = None if bias is None else _frozen(bias.detach().float())
        self.repack()

    @classmethod
    def from_linear(cls, linear: nn.Linear, rows: tuple[Tensor, Tensor] | None = None) -> Int8Linear:
        """``linear`` quantized; ``rows`` = an already quantized ``(q, scale)`` of its weight (tied)."""
        q, scale = rows if rows is not None else quantize_rows(linear.weight)
        return cls(q, scale, linear.bias)

    def repack(self) -> None:
        """Make the kernel's copy of ``weight`` and ``scale`` again."""
        self.packed = fbgemm_pack(self.weight, self.scale)
        self.packed_from = self._stamp()

    def _stamp(self) -> tuple:
        return tuple((t.data_ptr(), t._version, t.device, int(checksum(t))) for t in (self.weight, self.scale))

    def forward(self, x: Tensor) -> Tensor:
        if self.weight.device.type == "cpu" and self.packed_from != self._stamp():  # written to, loaded or moved
            self.repack()  # (on a GPU nothing is packed: the product reads weight and scale as they are)
        return int8_linear(x, self.weight, self.scale, self.bias, self.packed)  # (..., out)

    def extra_repr(self) -> str:
        out, inp = self.weight.shape
        kernel = "fbgemm" if self.packed is not None else "dequantize"
        return f"in_features={inp}, out_features={out}, bias={self.bias is not None}, kernel={kernel}"


class Int8Embedding(nn.Module):
    """``nn.Embedding`` with int8 rows and one scale per row: a lookup reads ``q[id] · s[id]``.

    Shape:
        tokens: (...) ids → (..., D) float32
    """

    def __init__(self, q: Tensor, scale: Tensor) -> None:
        super().__init__()
        self.weight, self.scale = _frozen(q), _frozen(scale)

    def forward(self, tokens: Tensor) -> Tensor:
        return F.embedding(tokens, self.weight).float() * self.scale[tokens, None]  # (..., D)


# The inputs' whole numbers: [-63, 63], stored by the kernel as 1 … 127 (unsigned, zero at 64)
INPUT_MAX, INPUT_ZERO = 63, 64


def int8_linear(x: Tensor, q: Tensor, scale: Tensor, bias: Tensor | None, packed=None) -> Tensor:
    """``x @ (q · s)ᵀ + b``: on a CPU each row of ``x`` rounded to whole numbers with its own scale
    and multiplied by fbgemm's kernel with the ``packed`` weights; on a GPU PyTorch's weight-only
    int8 product (``torch._weight_int8pack_mm``, which reads the int8 weights as they are);
    elsewhere ``q · s`` made float at each call. No row's result depends on another row.

    Shape:
        x: (..., in), any leading axes; q: (out, in) int8; scale: (out,); bias: (out,) or None → (..., out),
        in the dtype of ``x``
    """
    if packed is not None and x.device.type == "cpu" and x.dtype == torch.float32:
        rows = x if x.dim() == 2 else x.reshape(-1, x.shape[-1])  # (N, in)
        # (N, 1): max|x| / 63; the inf-norm is one operation, but PyTorch reduces several rows faster after abs()
        peak = torch.linalg.vector_norm(rows, math.inf, 1, True) if len(rows) == 1 else rows.abs().amax(1, True)
        step = peak.div_(INPUT_MAX)
        levels = rows.div(step.clamp_min_(TINY))  # (N, in) in [-63, 63]; the kernel rounds them (times 1, plus 64)
        out = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32(levels, 1.0, INPUT_ZERO, packed)
        out = out.mul_(step) if bias is None else torch.addcmul(bias, out, step, out=out)  # (N, out): rows scaled back
        return out if x.dim() == 2 else out.view(*x.shape[:-1], q.shape[0])
    if x.is_cuda and hasattr(torch, "_weight_int8pack_mm"):
        rows = x.reshape(-1, x.shape[-1])  # (N, in)
        out = torch._weight_int8pack_mm(rows, q, scale.to(x.dtype)).view(*x.shape[:-1], q.shape[0])
        return out if bias is None else out + bias.to(x.dtype)
    if x.shape[-1:] != q.shape[1:] or q.dim() != 2 or scale.shape != q.shape[:1]:
        raise ValueError(
            f"x must be (..., in), q (out, in) and scale (out,), got shapes {tuple(x.shape)}, {tuple(q.shape)} "
            f"and {tuple(scale.shape)}"
        )
    ### BEGIN SOLUTION
    return F.linear(x, dequantize_rows(q, scale, x.dtype), _cast(bias, x.dtype))
    ### END SOLUTION


TINY = torch.finfo(torch.float32).tiny  # a row of zeros divides by this, not by 0


def _int8_in_place(model: nn.Module) -> None:
    """Replace every ``nn.Linear`` and every token embedding's ``nn.Embedding`` of ``model`` by its
    int8 version. A weight shared by several layers (a tied output layer) is quantized once, and
    its int8 layers share that one ``q`` and ``scale``."""
    done: dict[int, tuple[Tensor, nn.Parameter, nn.Parameter]] = {}  # id(W) → (W kept alive, q, scale)

    def rows(weight: Tensor) -> tuple[nn.Parameter, nn.Parameter]:
        if id(weight) not in done:
            done[id(weight)] = (weight, *map(_frozen, quantize_rows(weight)))
        return done[id(weight)][1:]

    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear):
                setattr(parent, name, Int8Linear.from_linear(child, rows(child.weight)))
            elif isinstance(child, nn.Embedding) and isinstance(parent, TokenEmbedding):
                setattr(parent, name, Int8Embedding(*rows(child.weight)))


def fbgemm_pack(q: Tensor, scale: Tensor):
    """The fbgemm kernel's packed copy of ``q · scale`` (without a bias: :func:`int8_linear` adds it
    after scaling each row back), or None where the kernel is missing or ``q`` is not on a CPU."""
    if q.device.type != "cpu" or "fbgemm" not in torch.backends.quantized.supported_engines:
        return None
    if not hasattr(torch.ops.quantized, "linear_with_input_q_dq_qweight_dq_output_fp32"):
        return None
    zero_points = torch.zeros(q.shape[0], dtype=torch.long)  # symmetric: 0 is 0
    try:
        with warnings.catch_warnings():  # recent PyTorch (2.13) says quantized tensors will go: then None
            warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*")
            qweight = torch._make_per_channel_quantized_tensor(q, scale.double(), zero_points, 0)  # (out, in) qint8
            return torch.ops.quantized.linear_prepack(qweight, None)
    except (RuntimeError, AttributeError, NotImplementedError):
        return None


def _cast(tensor: Tensor | None, dtype: torch.dtype) -> Tensor | None:
    return None if tensor is None else tensor.to(dtype)
