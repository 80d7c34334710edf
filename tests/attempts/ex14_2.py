"""What learners wrote, wrong and right; the file's name is the exercise's id (format: tests/attempts/__init__.py)."""

from __future__ import annotations

import torch

from . import right, wrong

# -- mutants


@wrong("mutant", "weight decay on every parameter")
def _decay_everything(model, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95)):
    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, betas=betas)


@wrong("mutant", "Adam with L2 instead of AdamW")
def _adam_l2(model, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95)):
    matrices = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    others = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": matrices, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}]
    return torch.optim.Adam(groups, lr=lr, betas=betas)


@wrong("mutant", "betas not passed")
def _default_betas(model, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95)):
    matrices = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    others = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": matrices, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr)


@wrong("mutant", "the groups' decays swapped")
def _swapped(model, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95)):
    matrices = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    others = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": matrices, "weight_decay": 0.0}, {"params": others, "weight_decay": weight_decay}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


# -- own mistakes and alternatives


@wrong("own", says="biases and gains")
def _by_name_weight(model, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95)):
    decayed = [p for name, p in model.named_parameters() if p.requires_grad and name.endswith("weight")]
    rest = [p for name, p in model.named_parameters() if p.requires_grad and not name.endswith("weight")]
    groups = [{"params": decayed, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)  # the norm's gain is called "weight" too


@wrong("own", says="the embedding too is a matrix")
def _embedding_left_out(model, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95)):
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    decayed = [p for name, p in named if p.dim() >= 2 and "embed" not in name]
    rest = [p for name, p in named if p.dim() < 2 or "embed" in name]
    groups = [{"params": decayed, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


@wrong("own", says="frozen")
def _frozen_kept(model, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95)):
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    others = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": matrices, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


@wrong("own", says="not in any group")
def _no_rest_group(model, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95)):
    matrices = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    return torch.optim.AdamW(matrices, lr=lr, betas=betas, weight_decay=weight_decay)


@wrong("own", says="return the torch.optim.AdamW")
def _returns_the_groups(model, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95)):
    matrices = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    others = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    return [{"params": matrices, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}]


@right("own")
def _one_pass(model, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95)):
    decay, no_decay = [], []
    for parameter in model.parameters():
        if parameter.requires_grad:
            (decay if parameter.ndim > 1 else no_decay).append(parameter)
    return torch.optim.AdamW(
        [{"params": no_decay, "weight_decay": 0.0}, {"params": decay}], lr=lr, betas=betas, weight_decay=weight_decay
    )


@wrong("own", says="not the model's parameters")
def _a_tensor_of_its_own(model, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95)):
    scale = torch.nn.Parameter(torch.ones(1))  # a learnable scale the model does not hold
    matrices = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    others = [p for p in model.parameters() if p.requires_grad and p.dim() < 2] + [scale]
    groups = [{"params": matrices, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)
