"""Chapter 05 — residual connection + layer normalisation around a sub-layer (paper §3.1, §5.4).

post-LN (the paper):  x = LayerNorm(x + Dropout(Sublayer(x)))
pre-LN  (common now): x = x + Dropout(Sublayer(LayerNorm(x)))
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn

Connection = Callable[[Tensor, Callable[[Tensor], Tensor], nn.Module, nn.Dropout, bool], Tensor]
"""How a layer wraps each sub-layer: a function with the arguments of :func:`residual`."""


def residual(
    x: Tensor, sublayer: Callable[[Tensor], Tensor], norm: nn.LayerNorm, dropout: nn.Dropout, norm_first: bool
) -> Tensor:
    """Wrap ``sublayer`` in a residual connection with layer normalisation.

    ``norm_first=False`` is the paper's post-LN order, ``True`` the pre-LN order.

    Shape:
        x: (B, T, D) → (B, T, D)
    """
    ### BEGIN SOLUTION
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))
    ### END SOLUTION


def no_residual(
    x: Tensor, sublayer: Callable[[Tensor], Tensor], norm: nn.Module, dropout: nn.Dropout, norm_first: bool
) -> Tensor:
    """:func:`residual` without its shortcut ``x +``: post-LN gives LayerNorm(Dropout(Sublayer(x))),
    pre-LN gives Dropout(Sublayer(LayerNorm(x))). Not a layer anyone should train: chapter 11 passes
    it as a layer's ``connection`` to see what the shortcuts do.

    Shape:
        x: (B, T, D) → (B, T, D)
    """
    if norm_first:
        return dropout(sublayer(norm(x)))  # (B, T, D)
    return norm(dropout(sublayer(x)))  # (B, T, D)


def make_norm(norm: Callable[[int], nn.Module] | None, d_model: int, eps: float) -> nn.Module:
    """One normalisation layer: ``norm(d_model)`` if a ``norm`` part is given, else the paper's
    ``nn.LayerNorm(d_model, eps=eps)``."""
    return nn.LayerNorm(d_model, eps=eps) if norm is None else build_part(norm, "norm(d_model)", d_model)


def norm_and_dropout(d_model: int, eps: float, dropout: float, norm: Callable[[int], nn.Module] | None = None):
    """The normalisation and the dropout that a layer's ``connection`` puts around one sub-layer."""
    return make_norm(norm, d_model, eps), nn.Dropout(dropout)


def build_part(factory: Callable[..., nn.Module], call: str, *args) -> nn.Module:
    """``factory(*args)``, the way ``call`` (``"norm(d_model)"``) describes it.

    A part passed to a layer or to the Transformer is a class or a function that *builds* the module
    (a model needs one per layer), never a module already built."""
    if isinstance(factory, nn.Module) or not callable(factory):
        name = call.split("(")[0]
        raise ValueError(
            f"{name} must be a class or a function that builds the module, called as {call}; "
            f"got a {type(factory).__name__} instance"
        )
    return factory(*args)
