"""Checks for chapter 05 — the feed-forward network, residual connections, the encoder layer.

References are independent of the package: closed forms written with ``torch.nn.functional``
and PyTorch's own ``nn.TransformerEncoderLayer`` (loaded into ours with ``from_torch``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from copy import deepcopy
from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transformer_course_tools.exercises.probe.calls import call, calls_case, fixture, module, ref, tanh_of

from ._tools import CheckFailure, Mistakes, expect_close, expect_shape, matches, name_mistake
from .case import Case, Outcome
from .registry import exercise


def _randomise_norms(module: nn.Module) -> None:
    """Give every LayerNorm a non-trivial scale and shift, so a missing or swapped norm shows."""
    with torch.no_grad():
        for norm in (m for m in module.modules() if isinstance(m, nn.LayerNorm)):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.normal_(0.0, 0.5)


# (input shape, d_model, d_ff): odd sizes, a single position, extra leading axes
_FFN_SIZES = [((2, 5, 12), 12, 20), ((1, 1, 7), 7, 3), ((3, 4, 2, 8), 8, 32), ((6, 16), 16, 64)]
_FFN_SIZES_LARGER = [((4, 13, 32), 32, 72), ((2, 1, 9), 9, 5), ((3, 5, 4, 16), 16, 48), ((21, 48), 48, 128)]


def feed_forward_forward(self: nn.Module, x: Tensor) -> Tensor:
    """The stand-in, as a method of the learner's ``PositionwiseFeedForward``."""
    inner = self.activation(F.linear(x, self.linear1.weight, self.linear1.bias))  # (..., d_ff)
    return F.linear(self.dropout(inner), self.linear2.weight, self.linear2.bias)


@exercise(
    "ex05_1", "transformer_course.feedforward:PositionwiseFeedForward.forward", "easy", standin=feed_forward_forward
)
def feed_forward_cases(larger: bool = False) -> Iterator[Case]:
    """position-wise feed-forward network (eq. 2)

    Nudge: two linear maps with a nonlinearity between them, applied to each position separately and identically
    (paper §3.3, equation 2).

    Hint: linear1, then self.activation (ReLU unless the layer was built with another), then self.dropout,
    then linear2 — the same network at every position.
    """
    from transformer_course.feedforward import (
        PositionwiseFeedForward,  # the course's class: its weights describe the fixture
    )

    sizes = _FFN_SIZES_LARGER if larger else _FFN_SIZES
    for shape, d_model, d_ff in sizes:
        ffn = PositionwiseFeedForward(d_model, d_ff).eval()
        with torch.no_grad():
            ffn.linear1.bias.normal_()  # so that the ReLU cuts a visible part of the hidden layer
        x = torch.randn(*shape)
        label = f"x {tuple(x.shape)}, d_model={d_model}, d_ff={d_ff}"
        yield Case(label, calls_case(call(module(ffn, d_model, d_ff), x)), _judge_ffn, {"weights": _weights(ffn)})
    # chapter 15's checkpoints: another activation (Marian's swish) must be the one applied
    shape, d_model, d_ff = sizes[0]
    ffn = PositionwiseFeedForward(d_model, d_ff, 0.0, "swish").eval()
    x = torch.randn(*shape)
    label = f"x {tuple(x.shape)}, built with activation='swish'"
    spec = module(ffn, d_model, d_ff, 0.0, "swish")
    yield Case(label, calls_case(call(spec, x)), _judge_ffn, {"weights": _weights(ffn), "activation": "swish"})
    # where does dropout sit? replace it by a deterministic "halve" to see
    shape, d_model, d_ff = sizes[0]
    ffn = PositionwiseFeedForward(d_model, d_ff).eval()
    x = torch.randn(*shape)
    label = f"x {tuple(x.shape)} with self.dropout replaced by a module that halves its input"
    spec = module(ffn, d_model, d_ff) | {"set": {"dropout": fixture("halve")}}
    yield Case(label, calls_case(call(spec, x)), _judge_ffn_dropout, {"weights": _weights(ffn)})
    # after swish, halving before or after the activation differs (after a ReLU it does not)
    ffn = PositionwiseFeedForward(d_model, d_ff, 0.0, "swish").eval()
    label = f"x {tuple(x.shape)}, activation='swish', self.dropout replaced by a module that halves its input"
    spec = module(ffn, d_model, d_ff, 0.0, "swish") | {"set": {"dropout": fixture("halve")}}
    given = {"weights": _weights(ffn), "activation": "swish"}
    yield Case(label, calls_case(call(spec, x)), _judge_ffn_dropout, given)


def _weights(ffn: nn.Module) -> tuple[Tensor, ...]:
    return tuple(p.detach() for p in (ffn.linear1.weight, ffn.linear1.bias, ffn.linear2.weight, ffn.linear2.bias))


def _judge_ffn(case: Case, got: Outcome) -> None:
    label, (_, x), (w1, b1, w2, b2) = case.label, case.args(), case.given["weights"]
    activation = case.given.get("activation", "relu")
    hidden = F.linear(x, w1, b1)
    if activation != "relu":
        mistakes = [
            (F.linear(F.relu(hidden), w2, b2), f"a ReLU was applied, but this layer was built with activation="
             f"{activation!r}: call self.activation(...) instead of .relu()"),
            (F.linear(hidden, w2, b2), "no activation between the two linear layers: call self.activation(...)"),
        ]  # fmt: skip
        expect_close(got.output(), F.linear(F.silu(hidden), w2, b2), "FFN output", label, mistakes=mistakes)
        return
    want = F.linear(F.relu(hidden), w2, b2)
    mistakes = [
        (F.linear(hidden, w2, b2), "the ReLU between the two linear layers is missing (equation 2: max(0, ·))"),
        (F.relu(want), "a ReLU is applied after the second linear layer too; equation 2 has only one"),
        (F.relu(F.linear(hidden, w2, b2)), "the ReLU is applied after the second linear layer; it goes between "
         "the two (equation 2: max(0, x W1 + b1) W2 + b2)"),
        (F.linear(F.relu(F.linear(x, w1)), w2), "the biases are left out: self.linear1(x) and self.linear2(·) "
         "add b1 and b2"),
        (F.linear(F.relu(hidden), w2, b2) + x, "x is added to the output: the residual connection is "
         "residual()'s job (exercise 05.2), not the feed-forward network's"),
    ]  # fmt: skip
    expect_close(got.output(), want, "FFN output", label, mistakes=mistakes)


def _judge_ffn_dropout(case: Case, got: Outcome) -> None:
    label, (_, x), (w1, b1, w2, b2) = case.label, case.args(), case.given["weights"]
    act, after = (F.silu, "after the activation") if case.given.get("activation") else (F.relu, "after the ReLU")
    hidden = act(F.linear(x, w1, b1))
    mistakes = [
        (F.linear(hidden, w2, b2), f"self.dropout is never applied; apply it to the hidden layer, {after}"),
        (0.5 * F.linear(hidden, w2, b2), f"dropout is applied to the output; apply it {after} (residual() "
         "adds its own)"),
        (F.linear(act(F.linear(0.5 * x, w1, b1)), w2, b2), "dropout is applied to the input x; apply it to the "
         f"hidden layer, {after}"),
    ]  # fmt: skip
    if act is not F.relu:  # relu(0.5·h) = 0.5·relu(h): before a ReLU or after it is the same
        mistakes.append((F.linear(act(0.5 * F.linear(x, w1, b1)), w2, b2), "dropout is applied before the "
                         f"activation; apply it to the hidden layer, {after}"))  # fmt: skip
    expect_close(got.output(), F.linear(0.5 * hidden, w2, b2), "FFN output", label, mistakes=mistakes)


def _residual_reference(
    x: Tensor, sublayer: Callable, norm: nn.LayerNorm, norm_first: bool, dropout_scale: float = 0.5
) -> Tensor:
    """Closed form, with dropout standing for a multiplication by ``dropout_scale``:
    post-LN LN(x + s·F(x)), pre-LN x + s·F(LN(x))."""

    if norm_first:
        return x + dropout_scale * sublayer(_layer_norm(x, norm))
    return _layer_norm(x + dropout_scale * sublayer(x), norm)


def _layer_norm(t: Tensor, norm: nn.LayerNorm) -> Tensor:
    return F.layer_norm(t, norm.normalized_shape, norm.weight, norm.bias, norm.eps)


_ORDERS = {False: "norm(x + dropout(sublayer(x)))", True: "x + dropout(sublayer(norm(x)))"}


def residual(
    x: Tensor, sublayer: Callable[[Tensor], Tensor], norm: nn.Module, dropout: nn.Module, norm_first: bool
) -> Tensor:
    """The stand-in: pre-LN adds the branch to the untouched input; post-LN normalises the sum."""
    if norm_first:
        branch = sublayer(norm(x))
        return torch.add(x, dropout(branch))
    total = torch.add(x, dropout(sublayer(x)))
    return norm(total)


@exercise("ex05_2", "transformer_course.sublayer:residual", "medium", standin=residual)
def residual_cases(larger: bool = False) -> Iterator[Case]:
    """residual connection + LayerNorm (post-LN and pre-LN)

    Nudge: each sub-layer's output is added to its input and normalised, either after the sum or (pre-LN) before
    the sub-layer (paper §3.1 and §5.4).

    Hint: post-LN (norm_first=False): run the sub-layer on x, pass its output through dropout, add x, then
    normalise the sum with norm. Pre-LN (norm_first=True): normalise x first, run the sub-layer on that, pass
    its output through dropout, and add it to x as it came in (not normalised).
    """
    for shape in ((4, 13, 32), (2, 1, 10), (3, 17, 24)) if larger else ((2, 5, 12), (1, 1, 6), (3, 7, 8)):
        d_model = shape[-1]
        norm = nn.LayerNorm(d_model)
        _randomise_norms(norm)
        linear = nn.Linear(d_model, d_model)
        sublayer = fixture("tanh_of", linear=module(linear, d_model, d_model))  # tanh(linear(h)): non-linear
        x = 3.0 * torch.randn(*shape) + 1.0  # far from normalised, so LN(x) != x
        for norm_first in (False, True):
            order = "pre-LN (norm_first=True)" if norm_first else "post-LN (norm_first=False)"
            label = f"x {tuple(x.shape)}, {order}, dropout replaced by a module that halves its input"
            probe = calls_case(call(x, ref("sublayer"), module(norm, d_model), fixture("halve"), norm_first),
                               objects={"sublayer": sublayer}, report={"sublayer runs": ["sublayer", "calls"]},
                               no_grad=True)  # fmt: skip
            given = {"sublayer": tanh_of(linear), "norm": norm, "order": order}
            yield Case(label, probe, _judge_residual, given)


def _judge_residual(case: Case, got: Outcome) -> None:
    label, (x, _, _, _, norm_first) = case.label, case.args()
    sublayer, norm, order = case.given["sublayer"], case.given["norm"], case.given["order"]
    out = expect_shape(got.output(), tuple(x.shape), "output", label)
    dropout = "dropout is applied in the wrong place or not at all: apply it to the sub-layer's output only"
    with torch.no_grad():
        want = _residual_reference(x, sublayer, norm, norm_first)
        mistakes = [
            (_residual_reference(x, sublayer, norm, not norm_first),
             f"this is the other order; {order} means {_ORDERS[norm_first]}"),
            (_residual_reference(x, sublayer, norm, norm_first, dropout_scale=1.0), dropout),
            (0.5 * _residual_reference(x, sublayer, norm, norm_first, dropout_scale=1.0), dropout),
            (want - x if norm_first else _layer_norm(0.5 * sublayer(x), norm), "x is not added back: the residual "
             f"connection adds x to the sub-layer's output; {order} means {_ORDERS[norm_first]}"),
            (_pre_ln_normed_sum(x, sublayer, norm) if norm_first else x + 0.5 * sublayer(x), "the norm is applied "
             f"in the wrong place or left out; {order} means {_ORDERS[norm_first]}"),
            (x + 0.5 * _layer_norm(sublayer(x), norm), "the norm is applied to the sub-layer's output: "
             f"{order} means {_ORDERS[norm_first]}"),
            (x + _layer_norm(0.5 * sublayer(x), norm), "the norm is applied to the sub-layer's output: "
             f"{order} means {_ORDERS[norm_first]}"),
        ]  # fmt: skip
    expect_close(out, want, "output", label, mistakes=mistakes)
    runs = got.report("sublayer runs")
    if runs != 1:
        raise CheckFailure(f"{label}: the sub-layer ran {runs} times: run it once and use its output (a sub-layer is "
                           "attention or a feed-forward network: each run costs as much as the layer itself)")  # fmt: skip


def _pre_ln_normed_sum(x: Tensor, sublayer: Callable, norm: nn.LayerNorm) -> Tensor:
    """A pre-LN mistake: the normed x is also the residual, LN(x) + s·F(LN(x))."""
    normed = _layer_norm(x, norm)
    return normed + 0.5 * sublayer(normed)


# (d_model, n_heads, d_ff, batch, length, lengths of the real tokens per sequence)
_ENCODER_SIZES = [(12, 3, 20, 2, 5, (3, 5)), (8, 2, 16, 1, 1, (1,)), (16, 4, 24, 3, 7, (7, 2, 5))]
_ENCODER_SIZES_LARGER = [(32, 4, 48, 3, 11, (6, 11, 2)), (12, 3, 20, 2, 1, (1, 1)), (24, 6, 40, 4, 13, (13, 4, 9, 1))]


@exercise("ex05_3", "transformer_course.encoder:EncoderLayer.forward", "hard", needs=("ex04_3", "ex05_1", "ex05_2"))
def encoder_layer_cases(larger: bool = False) -> Iterator[Case]:
    """encoder layer (self-attention + FFN, each in a residual)

    Nudge: an encoder layer is self-attention then the feed-forward network, each wrapped in the residual
    connection (paper §3.1).

    Hint: x = self.connection(x, <self-attention of x on itself with mask>, self.norm1,
    self.dropout1, self.norm_first) (self.connection is residual unless the layer was built with another); then
    the same with self.ffn, self.norm2, self.dropout2. self.self_attn returns (output, weights).
    """
    from transformer_course.encoder import EncoderLayer  # the course's class: its weights describe the fixture

    for norm_first in (False, True):
        for d_model, n_heads, d_ff, batch, length, lengths in _ENCODER_SIZES_LARGER if larger else _ENCODER_SIZES:
            reference = nn.TransformerEncoderLayer(
                d_model, n_heads, d_ff, dropout=0.0, batch_first=True, norm_first=norm_first
            )
            _randomise_norms(reference)
            ours = EncoderLayer.from_torch(reference)
            reference.train()  # dropout is 0; training mode keeps PyTorch off its fused fast path
            alone = _alone(ours, reference, _ENCODER_SUBLAYERS)
            x = torch.randn(batch, length, d_model)
            keep = torch.arange(length) < torch.tensor(lengths)[:, None]  # (B, S) True = real token
            for use_mask in (False, True):
                mask = keep[:, None, None, :] if use_mask else None  # (B, 1, 1, S), ours: True = may attend
                with torch.no_grad():
                    want = reference(x, src_key_padding_mask=~keep if use_mask else None)  # PyTorch: True = blocked
                for training in (False, True):  # the same numbers in both modes when dropout is 0
                    ours.train(training)
                    label = (
                        f"x {tuple(x.shape)}, D={d_model}, H={n_heads}, d_ff={d_ff}, norm_first={norm_first}, "
                        f"mask {'(B, 1, 1, S) padding' if use_mask else 'None'}, "
                        f"{'training' if training else 'eval'} mode"
                    )
                    args = (d_model, n_heads, d_ff)
                    kwargs = {"dropout": 0.0, "norm_first": norm_first}
                    spec = module(ours, *args, **kwargs)
                    padding = ~keep if use_mask else None
                    isolated = [(call(module(one.train(training), *args, **kwargs), x, mask), name,
                                 partial(theirs, x, src_key_padding_mask=padding),
                                 partial(_encoder_mistakes, theirs, x, padding, norm_first, only="unmasked"))
                                for name, one, theirs in alone]  # fmt: skip
                    probe = calls_case(call(spec, x, mask), *(item[0] for item in isolated), no_grad=True)
                    mistakes = partial(_encoder_mistakes, reference, x, padding, norm_first)
                    given = {"want": want, "what": "encoder layer output", "mistakes": mistakes,
                             "alone": [item[1:] for item in isolated], "sublayers": _ENCODER_SUBLAYERS}  # fmt: skip
                    yield Case(label, probe, _judge_layer, given)
    yield _encoder_connection_case(EncoderLayer, d_model, n_heads, d_ff, x)  # the loop's last sizes and x


def _encoder_connection_case(layer_class: type, d_model: int, n_heads: int, d_ff: int, x: Tensor) -> Case:
    """:func:`connection_case` for the encoder layer: self-attention, then feed-forward."""
    reference = nn.TransformerEncoderLayer(d_model, n_heads, d_ff, dropout=0.0, batch_first=True)
    _randomise_norms(reference)
    ours = layer_class.from_torch(reference).eval()
    reference.train()  # dropout is 0; training mode keeps PyTorch's attention off its fast path
    blocks = [(lambda h: reference.self_attn(h, h, h, need_weights=False)[0], reference.norm1),
              (_feed_forward(reference), reference.norm2)]  # fmt: skip
    spec = module(ours, d_model, n_heads, d_ff, dropout=0.0, norm_first=False)
    return connection_case(spec, (x,), blocks, "encoder layer output")


def _judge_layer(case: Case, got: Outcome) -> None:
    out, want = got.output(), case.given["want"]
    with torch.no_grad():
        mistakes = case.given["mistakes"]()  # the wrong answers themselves are computed only on a mismatch
        name_mistake(out, want, mistakes, case.label)
        if isinstance(out, Tensor) and out.shape == want.shape and not matches(out, want):
            _locate_sublayer(case, got)
        expect_close(out, want, case.given["what"], case.label)


# sub-layer → (how it is written, the path of our output projection, the path of PyTorch's): zeroing the
# output projections of the others leaves one sub-layer that acts (a zeroed one still has its norm in post-LN)
_ENCODER_SUBLAYERS = {
    "self-attention": ("self.self_attn(h, h, h, mask) attends from h, the sub-layer's input, to itself with the mask, "
                       "wrapped by self.connection with self.norm1 and self.dropout1", "self_attn.w_o",
                       "self_attn.out_proj"),
    "feed-forward": ("self.ffn(h) on the sub-layer's input h, wrapped by self.connection with self.norm2 and "
                     "self.dropout2, after the self-attention block", "ffn.linear2", "linear2"),
}  # fmt: skip


def _zeroed(layer: nn.Module, paths: list[str]) -> nn.Module:
    """A copy of ``layer`` whose linear layers at ``paths`` output zeros."""
    layer = deepcopy(layer)
    with torch.no_grad():
        for path in paths:
            linear = layer.get_submodule(path)
            linear.weight.zero_()
            linear.bias.zero_()
    return layer


def _alone(ours: nn.Module, reference: nn.Module, sublayers: dict) -> list[tuple[str, nn.Module, nn.Module]]:
    """Per sub-layer (``sublayers``: as :data:`_ENCODER_SUBLAYERS`): its name and copies of ``ours`` and of
    PyTorch's ``reference`` in which every other sub-layer adds nothing (its output projection zeroed)."""
    return [
        (name, _zeroed(ours, [o for other, (_, o, _) in sublayers.items() if other != name]),
         _zeroed(reference, [r for other, (_, _, r) in sublayers.items() if other != name]).train())
        for name in sublayers
    ]  # fmt: skip


def _locate_sublayer(case: Case, got: Outcome) -> None:
    """Where a wrong layer goes wrong: the case's next calls run the layer with one sub-layer acting, the
    others zeroed (``given["alone"]``: their name, reference and known mistakes, in order); the sub-layers
    wrong alone are named, or the first known mistake of theirs."""
    label, sublayers = case.label, case.given["sublayers"]
    wrong = []
    for i, (name, reference, mistakes) in enumerate(case.given["alone"], start=1):
        want = reference()
        if not matches(got.output(i), want):
            name_mistake(got.output(i), want, mistakes(), label)
            wrong.append(name)
    zeroed = "with the other sub-layers' outputs zeroed"
    if len(wrong) == 1:
        raise CheckFailure(f"{label}: the {wrong[0]} sub-layer is wrong ({zeroed}, the output still differs): "
                           f"{sublayers[wrong[0]][0]}")  # fmt: skip
    if wrong:
        names = f"{', the '.join(wrong[:-1])} and the {wrong[-1]}"
        raise CheckFailure(
            f"{label}: the {names} sub-layers are each wrong {zeroed}: look first at what they share: the norms "
            "(a zeroed sub-layer still applies its norm in post-LN), norm_first and self.connection"
        )
    raise CheckFailure(
        f"{label}: each sub-layer is right alone ({zeroed}) but not together: each block takes the previous "
        "block's output, in the order of the paper"
    )


def _through_sublayers(x: Tensor, blocks: list, norm_first: bool, shortcut: bool = True) -> Tensor:
    """``x`` through residual blocks (sub-layer, norm): pre-LN x + f(norm(x)), post-LN norm(x + f(x));
    without the ``shortcut``, f(norm(x)) and norm(f(x))."""
    for sublayer, norm in blocks:
        kept = x if shortcut else 0
        x = kept + sublayer(norm(x)) if norm_first else norm(kept + sublayer(x))
    return x


def connection_case(spec: dict, inputs: tuple, blocks: list, what: str) -> Case:
    """The layer ``spec`` (post-LN, eval mode) built with a connection without the shortcut (chapter 05's
    ``no_residual``): its output is ``blocks`` (PyTorch's sub-layers and norms, in order) without the
    shortcuts only if every sub-layer is wrapped by ``self.connection``."""
    with torch.no_grad():
        want = _through_sublayers(inputs[0], blocks, False, shortcut=False)
        usual = _through_sublayers(inputs[0], blocks, False)
    spec = spec | {"set": {"connection": fixture("no_shortcut")}}
    label = f"x {tuple(inputs[0].shape)}, post-LN, built with connection=no_residual (no shortcut), eval mode"
    mistake = ("self.connection is not used (the layer calls residual itself): wrap each sub-layer with "
               "self.connection(x, sublayer, norm, dropout, self.norm_first), so that a layer built with another "
               "connection, such as chapter 05's no_residual, uses it")  # fmt: skip
    given = {"want": want, "what": what, "mistakes": [(usual, mistake)]}
    return Case(label, calls_case(call(spec, *inputs), no_grad=True), _judge_connection, given)


def _judge_connection(case: Case, got: Outcome) -> None:
    want = case.given["want"]
    name_mistake(got.output(), want, case.given["mistakes"], case.label)
    expect_close(got.output(), want, case.given["what"], case.label)


def _layer_mistakes(layer: nn.Module, x: Tensor, blocks: dict, norm_first: bool, wrong: list,
                    only: str | None = None) -> Mistakes:  # fmt: skip
    """Known mistakes of a PyTorch layer written out: ``wrong`` holds (the names of the blocks in
    their order, norm_first, what is wrong); ``blocks``: name → (sub-layer, norm); ``only``: the
    mistakes with a block whose name holds it ("unmasked")."""
    layer.train()  # dropout is 0; training mode keeps PyTorch's attention off its fast path

    def run(names: list[str], first: bool) -> Callable[[], Tensor]:
        return lambda: _through_sublayers(x, [blocks[name] for name in names], first)

    chosen = [(names, first, what) for names, first, what in wrong if only is None or any(only in n for n in names)]
    return [(run(names, first), what) for names, first, what in chosen]


def _feed_forward(layer: nn.Module) -> Callable[[Tensor], Tensor]:
    return lambda h: layer.linear2(layer.activation(layer.linear1(h)))


def _encoder_mistakes(layer: nn.Module, x: Tensor, padding: Tensor | None, norm_first: bool,
                      only: str | None = None) -> Mistakes:  # fmt: skip
    """Typical mistakes of an encoder layer, replayed with ``layer``'s (nn.TransformerEncoderLayer) parts
    (``only``: as :func:`_layer_mistakes`)."""

    def attend(pad: Tensor | None) -> Callable[[Tensor], Tensor]:
        return lambda h: layer.self_attn(h, h, h, key_padding_mask=pad, need_weights=False)[0]

    ffn, n1, n2 = _feed_forward(layer), layer.norm1, layer.norm2
    blocks = {"attention": (attend(padding), n1), "ffn": (ffn, n2), "unmasked": (attend(None), n1),
              "attention, norm2": (attend(padding), n2), "ffn, norm1": (ffn, n1),
              "attention, no norm": (attend(padding), nn.Identity()), "ffn, no norm": (ffn, nn.Identity())}  # fmt: skip
    order, ffn_first = _ORDERS[norm_first], "the feed-forward network comes before the self-attention; attend first"
    wrong = [
        (["attention", "ffn"], not norm_first, f"this is the other order; norm_first={norm_first} means {order}"),
        (["unmasked", "ffn"], norm_first, "the mask is not passed on to the self-attention"),
        (["attention"], norm_first, "the feed-forward sub-layer is missing: x = self.connection(x, self.ffn, "
         "self.norm2, self.dropout2, self.norm_first)"),
        (["ffn"], norm_first, "the self-attention sub-layer is missing: first self.connection(x, <self-attention>, "
         "self.norm1, self.dropout1, self.norm_first)"),
        (["attention", "ffn, norm1"], norm_first, "norm1 is used for both sub-layers; the feed-forward network has "
         "its own norm2"),
        (["attention, norm2", "ffn, norm1"], norm_first, "norm1 and norm2 are swapped: norm1 goes with the "
         "self-attention, norm2 with the feed-forward network"),
        (["ffn", "attention"], norm_first, ffn_first),
        (["ffn, norm1", "attention, norm2"], norm_first, ffn_first),
        (["attention, no norm", "ffn"], norm_first, unnormed("self-attention", "norm1", norm_first)),
        (["attention", "ffn, no norm"], norm_first, unnormed("feed-forward network", "norm2", norm_first)),
    ]  # fmt: skip
    return _layer_mistakes(layer, x, blocks, norm_first, wrong, only)


def unnormed(part: str, norm: str, norm_first: bool) -> str:
    """What is wrong when a sub-layer's norm is not applied: in pre-LN the sub-layer read x, not its argument."""
    if norm_first:
        return (f"the {part} reads x, not its argument h ({norm}(x) in pre-LN): inside the sub-layer's function, "
                "use h")  # fmt: skip
    return f"{norm} is not applied after the {part}: post-LN normalises the sum, {_ORDERS[False]}"
