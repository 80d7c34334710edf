"""Small input checks shared by the rooms: clear errors instead of silent broadcasting.

Checks of shapes and dtypes read only a tensor's metadata and cost nothing. A check of its
*values* (are the token ids inside the vocabulary?) must read the tensor: on a GPU that makes the
CPU wait until the GPU has caught up (a host synchronisation), which stalls a training loop. So
values are read only where that is free (:func:`reads_are_free`: the CPU), and only at the edge
(``Transformer.forward``'s entry, the command line), never per layer. On a GPU, ids come from a
vocabulary that cannot make bad ones; PyTorch's own embedding still stops at an id out of range.
"""

from __future__ import annotations

import torch
from torch import Tensor


def reads_are_free(x: Tensor) -> bool:
    """True when reading ``x``'s values costs no host synchronisation: it lives on the CPU.

    It depends on the tensor's device only. The rooms call it as ``_validate.reads_are_free``, so a
    test can play a GPU on the CPU by monkeypatching this one function.
    """
    return x.device.type == "cpu"


def check_token_dtype(tokens: Tensor, name: str = "tokens") -> None:
    """Raise unless ``tokens`` is a tensor of integers (metadata only: free everywhere)."""
    if not isinstance(tokens, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(tokens).__name__}")
    if tokens.dtype.is_floating_point or tokens.dtype.is_complex or tokens.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer token ids (torch.long), got dtype {tokens.dtype}")


def check_token_ids(tokens: Tensor, vocab_size: int, name: str = "tokens") -> None:
    """Raise ``ValueError`` unless ``tokens`` holds integer ids in ``[0, vocab_size)``.

    The dtype is always checked; the values only where reading them is free (see the module).
    """
    check_token_dtype(tokens, name)
    if tokens.numel() == 0 or not reads_are_free(tokens):
        return
    outside = (tokens < 0) | (tokens >= vocab_size)  # one reduction and one read in the usual case
    if outside.any():
        bad = int(tokens[outside][0])
        raise ValueError(f"{name} contains id {bad}, outside the vocabulary range [0, {vocab_size})")


def check_ndim(x: Tensor, ndim: int, name: str, shape_doc: str) -> None:
    """Raise ``ValueError`` unless ``x`` has ``ndim`` dimensions (``shape_doc`` names them)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor {shape_doc}, got {type(x).__name__}")
    if x.dim() != ndim:
        raise ValueError(f"{name} must have shape {shape_doc}, got {tuple(x.shape)}")


def check_mask(mask: Tensor | None, target_shape: tuple[int, ...], name: str = "mask") -> None:
    """Check that a boolean attention mask broadcasts to ``target_shape`` (e.g. (B, H, T, S)).

    Every dimension of the mask must be 1 or equal to the matching dimension of the target:
    a mask of the wrong length is an error, never silently broadcast.
    """
    if mask is None:
        return
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name} must be a bool torch.Tensor or None, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise ValueError(
            f"{name} must be a bool tensor with True = may attend, got dtype {mask.dtype} "
            "(an additive float mask or a 0/1 int mask is ambiguous: convert it with mask.bool())"
        )
    if mask.dim() > len(target_shape):
        raise ValueError(f"{name} has shape {tuple(mask.shape)}, which does not broadcast to {target_shape}")
    for size, want in zip(reversed(mask.shape), reversed(target_shape), strict=False):
        if size not in (1, want):
            raise ValueError(
                f"{name} has shape {tuple(mask.shape)}, which does not broadcast to {target_shape} "
                "(each dimension must be 1 or match; expected e.g. (B, 1, 1, S) or (T, S))"
            )


def check_same_device(model: torch.nn.Module, x: Tensor, name: str) -> None:
    """Raise ``ValueError`` unless ``x`` is on the device of ``model``'s weights, and that device
    holds values (the ``meta`` device holds shapes only)."""
    device = next(model.parameters()).device
    if device.type == "meta":
        raise ValueError("the model's weights are on the meta device (shapes without values): "
                         "load them first (model.to_empty(device=...), then load_state_dict)")  # fmt: skip
    if x.device != device:
        raise ValueError(f"{name} is on {x.device} but the model is on {device}: move one of them")


def first_non_finite(module: torch.nn.Module) -> str | None:
    """``"<name> holds NaN"`` (or ``inf``) for the first parameter or buffer of ``module`` holding
    one, else None. A bias may hold -inf: a token that is never chosen (chapter 16's export of a
    translator with two vocabularies gives the tokens of the other language -inf). It reads every
    tensor: for an error message, not for every step."""
    tensors = [*module.named_parameters(), *module.named_buffers()]
    for name, t in tensors:
        if not t.dtype.is_floating_point:
            continue
        never = t.dim() == 1 and name.endswith("bias") and t == float("-inf")  # a token never chosen
        if not bool((torch.isfinite(t) | never).all()):
            return f"{name} holds {'NaN' if bool(torch.isnan(t).any()) else 'inf'}"
    return None


_WORDS = {8: torch.int64, 4: torch.int32, 2: torch.int16}  # bytes → the integer read


def checksum(t: Tensor) -> Tensor:
    """The sum of ``t``'s bytes read as the widest integers they divide into, wrapping around: one
    pass over memory (summing integers is as fast as reading them). A write that changes a value
    changes it, however it was made (``.data``, a NumPy view), unless other writes cancel it exactly.

    Shape:
        t: any shape → () int64
    """
    flat = t.detach().reshape(-1)  # a copy only for a tensor that is not contiguous
    if flat.dtype == torch.bool:
        flat = flat.view(torch.uint8)
    nbytes = flat.numel() * flat.element_size()
    for width, word in _WORDS.items():
        if width >= flat.element_size() and nbytes % width == 0:
            try:
                return flat.view(word).sum(dtype=word).long()
            except RuntimeError:  # a view at an offset that the wider integer does not divide
                continue
    return flat.view(torch.uint8).sum(dtype=torch.int64)  # an odd number of bytes: one by one
