"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import right, wrong

# -- mutants


@wrong("mutant", "padding counted in the mean")
def _counts_padding(logits, target, smoothing=0.1, pad_id=0):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), label_smoothing=smoothing)


@wrong("mutant", "no label smoothing")
def _no_smoothing(logits, target, smoothing=0.1, pad_id=0):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=pad_id)


@wrong("mutant", "ε/(V−1) on the wrong tokens only")
def _smooths_over_the_other_tokens(logits, target, smoothing=0.1, pad_id=0):
    # ε/(V−1) on every wrong token instead of ε/V on every token
    log_probs = logits.log_softmax(-1)
    vocab = logits.shape[-1]
    q = torch.full_like(log_probs, smoothing / (vocab - 1)).scatter(-1, target.unsqueeze(-1), 1 - smoothing)
    per_token = -(q * log_probs).sum(-1)
    keep = target != pad_id
    return per_token[keep].mean()


@wrong("mutant", "padding zeroed but still in the denominator")
def _padding_zeroed_but_counted(logits, target, smoothing=0.1, pad_id=0):
    log_probs = logits.log_softmax(-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * nll - smoothing * log_probs.mean(-1)
    return (per_token * (target != pad_id)).mean()


@wrong("mutant", "ε times the sum of −log p, not its mean", says="ε multiplies the sum of −log p")
def _smoothing_on_the_sum(logits, target, smoothing=0.1, pad_id=0):
    log_probs = logits.log_softmax(-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * nll - smoothing * log_probs.sum(-1)  # sum over V, not the mean
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


@wrong("mutant", "detached from the graph")
def _returns_a_float(logits, target, smoothing=0.1, pad_id=0):
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), target.reshape(-1), label_smoothing=smoothing, ignore_index=pad_id
    )
    return torch.tensor(loss.item())


# -- own mistakes and alternatives


def _per_token(logits, target, smoothing, target_weight=None):
    log_p = logits.log_softmax(dim=-1)
    nll = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    return (1 - smoothing if target_weight is None else target_weight) * nll - smoothing * log_p.mean(-1)


@wrong("own", says="summed over the tokens")
def _loss_summed(logits, target, smoothing=0.1, pad_id=0):
    return _per_token(logits, target, smoothing)[target != pad_id].sum()


@wrong("own", says="not weighted by (1 − ε)")
def _loss_target_unweighted(logits, target, smoothing=0.1, pad_id=0):
    return _per_token(logits, target, smoothing, target_weight=1.0)[target != pad_id].mean()


@wrong("own", says="the −log p[target] term is wrong")
def _loss_from_raw_logits(logits, target, smoothing=0.1, pad_id=0):
    nll = -logits.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # the logit, not its log-probability
    per_token = (1 - smoothing) * nll - smoothing * logits.log_softmax(dim=-1).mean(-1)
    return per_token[target != pad_id].mean()


@wrong("own", says="the smoothing term is wrong")
def _loss_smoothing_on_probabilities(logits, target, smoothing=0.1, pad_id=0):
    log_p = logits.log_softmax(dim=-1)
    nll = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * nll - smoothing * log_p.exp().mean(-1)  # mean of p, not of −log p
    return per_token[target != pad_id].mean()


@wrong("own", says="the padding is not left out right")
def _loss_ids_above_pad(logits, target, smoothing=0.1, pad_id=0):
    return _per_token(logits, target, smoothing)[target > pad_id].mean()  # drops the ids below pad_id too


@wrong("own", says="each sentence is averaged first")
def _loss_sentence_means(logits, target, smoothing=0.1, pad_id=0):
    keep = (target != pad_id).float()
    per_sentence = (_per_token(logits, target, smoothing) * keep).sum(1) / keep.sum(1)
    return per_sentence[keep.sum(1) > 0].mean()


@wrong("own", says="the loss is nan, not 0")  # PyTorch's mean over no token is NaN (issue 49: the text says 0)
def _loss_pytorch(logits, target, smoothing=0.1, pad_id=0):
    return F.cross_entropy(logits.transpose(1, 2), target, label_smoothing=smoothing, ignore_index=pad_id)


@right("own")
def _loss_pytorch_summed(logits, target, smoothing=0.1, pad_id=0):
    total = F.cross_entropy(
        logits.transpose(1, 2), target, label_smoothing=smoothing, ignore_index=pad_id, reduction="sum"
    )
    return total / max(int((target != pad_id).sum()), 1)


@wrong("own", says="divides 0 by 0")  # issue 49's learner: per_token[keep].mean() passed on a batch of padding
def _loss_mean_of_the_kept(logits, target, smoothing=0.1, pad_id=0):
    return _per_token(logits, target, smoothing)[target != pad_id].mean()


# -- tester set 'first'


@wrong("tester", "mean over all positions (padding counted in the denominator)", by="first")
def ex08_3_mean_with_padding(logits, target, smoothing=0.1, pad_id=0):
    log_probs = logits.float().log_softmax(dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = (1.0 - smoothing) * nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).mean()  # divides by every position, padding included


@wrong("tester", "ε spread over the V-1 wrong tokens (ε/(V-1)), not ε/V over all", by="first")
def ex08_3_spread_over_others(logits, target, smoothing=0.1, pad_id=0):
    log_probs = logits.float().log_softmax(dim=-1)
    vocab = logits.shape[-1]
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    others = (-log_probs.sum(dim=-1) - nll) / (vocab - 1)  # eps spread over the V-1 wrong tokens
    per_token = (1.0 - smoothing) * nll + smoothing * others
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


@wrong("tester", "forgot the (1-ε) factor on the right token's NLL", by="first")
def ex08_3_no_one_minus_eps(logits, target, smoothing=0.1, pad_id=0):
    log_probs = logits.float().log_softmax(dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


@right("tester", by="first")
def ex08_3_alt_cross_entropy(logits, target, smoothing=0.1, pad_id=0):
    vocab = logits.shape[-1]
    total = F.cross_entropy(
        logits.float().reshape(-1, vocab),
        target.reshape(-1),
        reduction="sum",
        label_smoothing=smoothing,
        ignore_index=pad_id,
    )
    return total / (target != pad_id).sum().clamp(min=1)


@wrong("tester", "log_softmax over dim=1 (positions) instead of the vocabulary", by="first")
def x07_3_log_softmax_time_axis(logits, target, smoothing=0.1, pad_id=0):
    log_probs = logits.float().log_softmax(dim=1)  # over T, not V
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = (1.0 - smoothing) * nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


# -- tester set 'second'


def _ls_pre(logits, target, smoothing):
    if logits.dim() != 3 or target.shape != logits.shape[:2]:
        raise ValueError("logits must be (B, T, V) and target (B, T)")
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"smoothing must be in [0, 1], got {smoothing}")


@wrong("tester", "mean over all positions, padding included in the count", by="second")
def ls_mean_includes_pad(logits, target, smoothing=0.1, pad_id=0):
    _ls_pre(logits, target, smoothing)
    log_probs = logits.float().log_softmax(dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = (1.0 - smoothing) * nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).mean()


@wrong("tester", "smoothing spread over the V-1 wrong classes, not V", by="second")
def ls_smooth_over_v_minus_1(logits, target, smoothing=0.1, pad_id=0):
    _ls_pre(logits, target, smoothing)
    log_probs = logits.float().log_softmax(dim=-1)
    V = logits.shape[-1]
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    others = (-log_probs.sum(dim=-1) - nll) / (V - 1)
    per_token = (1.0 - smoothing) * nll + smoothing * others
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


@wrong("tester", "log_softmax over dim=1 (time) instead of the vocabulary", by="second")
def ls_log_softmax_dim1(logits, target, smoothing=0.1, pad_id=0):
    _ls_pre(logits, target, smoothing)
    log_probs = logits.float().log_softmax(dim=1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = (1.0 - smoothing) * nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


@right("tester", by="second")
def ls_alt(logits, target, smoothing=0.1, pad_id=0):
    _ls_pre(logits, target, smoothing)
    if not (target != pad_id).any():
        return logits.float().sum() * 0.0
    V = logits.shape[-1]
    return F.cross_entropy(
        logits.float().reshape(-1, V), target.reshape(-1), label_smoothing=smoothing, ignore_index=pad_id
    )


# -- tester set 'third'


def _ls_guard(logits, target, smoothing):
    if logits.dim() != 3 or target.shape != logits.shape[:2]:
        raise ValueError(
            f"logits must be (B, T, V) and target (B, T), got logits {tuple(logits.shape)} and target {tuple(target.shape)}"
        )
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"smoothing must be in [0, 1], got {smoothing}")


@wrong("tester", "averaged over all positions, padding included", by="third")
def ls_mean_all(logits, target, smoothing=0.1, pad_id=0):
    _ls_guard(logits, target, smoothing)
    log_probs = logits.float().log_softmax(dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = (1.0 - smoothing) * nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).mean()


@wrong("tester", "smoothing mass eps/(V-1) spread over the wrong tokens only (not PyTorch's eps/V)", by="third")
def ls_v_minus_1(logits, target, smoothing=0.1, pad_id=0):
    _ls_guard(logits, target, smoothing)
    vocab = logits.shape[-1]
    log_probs = logits.float().log_softmax(dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    others = -(log_probs.sum(dim=-1) - (-nll)) / (vocab - 1)
    per_token = (1.0 - smoothing) * nll + smoothing * others
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


@wrong("tester", "a batch of padding only gives NaN (0 / 0), not 0", by="third")
def ls_no_clamp(logits, target, smoothing=0.1, pad_id=0):
    _ls_guard(logits, target, smoothing)
    log_probs = logits.float().log_softmax(dim=-1)
    nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -log_probs.mean(dim=-1)
    per_token = (1.0 - smoothing) * nll + smoothing * uniform
    keep = target != pad_id
    return (per_token * keep).sum() / keep.sum()


@right("tester", by="third")
def ls_alt_third(logits, target, smoothing=0.1, pad_id=0):
    _ls_guard(logits, target, smoothing)
    vocab = logits.shape[-1]
    log_probs = F.log_softmax(logits.float(), dim=-1)
    dist = torch.full_like(log_probs, smoothing / vocab)
    dist.scatter_add_(-1, target.unsqueeze(-1), torch.full_like(log_probs[..., :1], 1.0 - smoothing))
    per_token = -(dist * log_probs).sum(dim=-1)
    keep = (target != pad_id).float()
    n = keep.sum()
    return (per_token * keep).sum() / torch.clamp(n, min=1.0)
