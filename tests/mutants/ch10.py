"""Wrong answers for chapter 10: norms, rotations, groups, gates and running sums that look right and are not."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from transformer_course.rotary import rope_angles

# ex10_1 — RMSNorm.forward


def _layer_norm_instead(self, x):
    centred = x - x.mean(dim=-1, keepdim=True)  # the mean subtracted: LayerNorm without its shift
    return centred * torch.rsqrt(centred.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


def _divides_by_the_std(self, x):
    return x / torch.sqrt(x.var(dim=-1, unbiased=False, keepdim=True) + self.eps) * self.weight


def _eps_outside_the_root(self, x):
    return x / (x.pow(2).mean(dim=-1, keepdim=True).sqrt() + self.eps) * self.weight


def _no_eps(self, x):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True)) * self.weight


def _no_weight(self, x):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)


def _sum_not_mean(self, x):
    return x * torch.rsqrt(x.pow(2).sum(dim=-1, keepdim=True) + self.eps) * self.weight


def _mean_over_every_axis(self, x):
    return x * torch.rsqrt(x.pow(2).mean() + self.eps) * self.weight  # one scale for the whole batch


# ex10_2 — apply_rope


def _rope_with(x, positions, base, split):
    """Rotation by ``rope_angles(positions)``; ``split(x)`` gives the two halves of each pair and how to put them back."""
    angles = rope_angles(positions, x.shape[-1], base)
    cos, sin = angles.cos(), angles.sin()
    first, second, join = split(x.float())
    return join(first * cos - second * sin, first * sin + second * cos).to(x.dtype)


def _interleaved(x):
    return x[..., 0::2], x[..., 1::2], lambda a, b: torch.stack([a, b], dim=-1).flatten(-2)


def _halves(x):
    half = x.shape[-1] // 2
    return x[..., :half], x[..., half:], lambda a, b: torch.cat([a, b], dim=-1)


def _half_split_pairs(x, positions, base=10000.0):
    return _rope_with(x, positions, base, _halves)  # pairs (i, i + d/2), as some libraries order them


def _positions_ignored(x, positions, base=10000.0):
    return _rope_with(x, torch.arange(x.shape[-2]), base, _interleaved)  # rows taken as positions 0 … T-1


def _rotates_backwards(x, positions, base=10000.0):
    return _rope_with(x, -positions, base, _interleaved)


def _float64_in_float32(x, positions, base=10000.0):
    return _rope_with(x, positions, base, _interleaved)  # every dtype through float32, float64 included


def _base_ignored(x, positions, base=10000.0):
    return _rope_with(x, positions, 10000.0, _interleaved)


def _float32_out(x, positions, base=10000.0):
    return _rope_with(x, positions, base, _interleaved).float()  # bfloat16 keys come back as float32


def _pairs_concatenated_not_interleaved(x, positions, base=10000.0):
    even, odd = x[..., 0::2], x[..., 1::2]
    angles = rope_angles(positions, x.shape[-1], base)
    rotated = [even * angles.cos() - odd * angles.sin(), even * angles.sin() + odd * angles.cos()]
    return torch.cat(rotated, dim=-1).to(x.dtype)  # the pairs rotated right, but put back as two halves


# ex10_3 — repeat_kv


def _tiled(x, n_rep):
    return x.repeat(1, n_rep, 1, 1)  # heads 0, 1, …, 0, 1, …: query head h reads key head h mod Hkv


def _expanded_in_front(x, n_rep):
    b, kv, s, d = x.shape
    return x[:, None].expand(b, n_rep, kv, s, d).reshape(b, kv * n_rep, s, d)  # the new axis before the heads: tiled


def _positions_repeated(x, n_rep):
    return x.repeat_interleave(n_rep, dim=2)


def _first_group_only(x, n_rep):
    return x[:, :1].expand(-1, x.shape[1] * n_rep, -1, -1)  # every query head reads key/value head 0


# ex10_4 — SwiGLU.forward


def _gate_on_w3(self, x):
    return self.w2(self.dropout(F.silu(self.w3(x)) * self.w1(x)))


def _relu_gate(self, x):
    return self.w2(self.dropout(F.relu(self.w1(x)) * self.w3(x)))


def _sigmoid_gate(self, x):
    return self.w2(self.dropout(torch.sigmoid(self.w1(x)) * self.w3(x)))


def _silu_on_both(self, x):
    return self.w2(self.dropout(F.silu(self.w1(x)) * F.silu(self.w3(x))))


def _gate_added(self, x):
    return self.w2(self.dropout(F.silu(self.w1(x)) + self.w3(x)))


def _no_dropout(self, x):
    return self.w2(F.silu(self.w1(x)) * self.w3(x))


def _dropout_on_output(self, x):
    return self.dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)))


# ex10_5 — online_softmax_update


def _block_maximum_only(top, total, acc, scores, values):
    new_top = scores.amax(dim=-1, keepdim=True)  # the running maximum forgotten
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    return new_top, total * rescale + weights.sum(dim=-1, keepdim=True), acc * rescale + weights @ values


def _no_rescaling(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    weights = torch.exp(scores - new_top)
    return new_top, total + weights.sum(dim=-1, keepdim=True), acc + weights @ values  # old sums kept as they were


def _acc_not_rescaled(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    return new_top, total * rescale + weights.sum(dim=-1, keepdim=True), acc + weights @ values


def _rescale_inverted(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(new_top - top)
    weights = torch.exp(scores - new_top)
    return new_top, total * rescale + weights.sum(dim=-1, keepdim=True), acc * rescale + weights @ values


def _weights_under_the_old_maximum(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - top)
    return new_top, total * rescale + weights.sum(dim=-1, keepdim=True), acc * rescale + weights @ values


def _returns_the_normalised_output(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = torch.exp(scores - new_top)
    new_total = total * rescale + weights.sum(dim=-1, keepdim=True)
    return new_top, new_total, (acc * rescale + weights @ values) / new_total


def _no_maximum_at_all(top, total, acc, scores, values):
    weights = torch.exp(scores)  # overflows once a score passes ≈ 88 in float32
    return top, total + weights.sum(dim=-1, keepdim=True), acc + weights @ values


def _in_place(top, total, acc, scores, values):
    new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))
    rescale = torch.exp(top - new_top)
    weights = scores.sub_(new_top).exp_()  # the caller's scores overwritten
    return new_top, total * rescale + weights.sum(dim=-1, keepdim=True), acc * rescale + weights @ values


MUTANTS = {
    "ex10_1": [
        ("the mean subtracted (LayerNorm)", _layer_norm_instead),
        ("divides by the standard deviation", _divides_by_the_std),
        ("eps outside the square root", _eps_outside_the_root),
        ("no eps", _no_eps),
        ("the weight never applied", _no_weight),
        ("sum of squares instead of their mean", _sum_not_mean),
        ("the mean over every axis", _mean_over_every_axis),
    ],
    "ex10_2": [
        ("half-split pairs (i, i + d/2)", _half_split_pairs),
        ("positions ignored (0 … T-1)", _positions_ignored),
        ("rotates by −θ", _rotates_backwards),
        ("base ignored", _base_ignored),
        ("float64 computed in float32", _float64_in_float32),
        ("returns float32 for bfloat16 input", _float32_out),
        ("pairs rotated but put back as two halves", _pairs_concatenated_not_interleaved),
    ],
    "ex10_3": [
        ("tiled with x.repeat", _tiled),
        ("the new axis in front of the heads", _expanded_in_front),
        ("positions repeated instead of heads", _positions_repeated),
        ("every query head reads head 0", _first_group_only),
    ],
    "ex10_4": [
        ("the gate on w3", _gate_on_w3),
        ("ReLU instead of silu", _relu_gate),
        ("sigmoid instead of silu (GLU)", _sigmoid_gate),
        ("silu on both projections", _silu_on_both),
        ("gate added, not multiplied", _gate_added),
        ("no dropout", _no_dropout),
        ("dropout on the output", _dropout_on_output),
    ],
    "ex10_5": [
        ("the block's maximum only", _block_maximum_only),
        ("old sums never rescaled", _no_rescaling),
        ("acc never rescaled", _acc_not_rescaled),
        ("rescale by exp(new − old)", _rescale_inverted),
        ("the block's weights under the old maximum", _weights_under_the_old_maximum),
        ("acc normalised at every block", _returns_the_normalised_output),
        ("no maximum at all", _no_maximum_at_all),
        ("the scores changed in place", _in_place),
    ],
}
