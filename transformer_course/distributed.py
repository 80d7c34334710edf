"""Chapter 12 — one model, several processes: DistributedDataParallel (DDP) with token batches.

``torchrun --nproc-per-node N …`` starts N copies of the same program. Each copy, a *rank*, holds
a whole replica of the model and reads its own share of the batches (every N-th batch, see
:func:`~transformer_course.token_batches.shard`). After the backward pass the ranks exchange their
gradients (an *all-reduce*: every rank receives the sum) so that every replica makes the same
update and the replicas stay identical, step after step. One GPU per rank talks through NCCL;
processes on a CPU through gloo.

Weighting by tokens
-------------------
DDP on its own averages the ranks' gradients: ``(1/N) Σ_r ∇L_r``, where ``L_r = S_r / n_r`` is
rank r's loss, the sum ``S_r`` of its token losses over its ``n_r`` target tokens. With batches of a
token budget the ``n_r`` differ from rank to rank, and a plain average would let a token on a rank
with few tokens count more than one on a busy rank. The loss of the step is the sum of all token
losses over the global count ``n = Σ_r n_r``, and

    ∇(Σ_r S_r / n) = Σ_r (n_r / n) · ∇(S_r / n_r)

so each rank multiplies its gradient by its share of the step's tokens, ``n_r / n``, and the ranks
add the results up. :meth:`World.before_step` finds the share (one small all-reduce of the token
counts), and a DDP *communication hook*, the function DDP calls to exchange each bucket of
gradients, applies it. The step function of chapter 08 stays as it is, and the update equals the one
a single process would make on all the ranks' batches together (``tests/test_distributed.py``).

Chapter 08's loop stays as it is too: :func:`prepare_rank` puts one rank's run together (its share of
the batches, its own dropout masks, the model in DDP) and :func:`fit_together` runs chapter 08's
:func:`~transformer_course.training.fit` with :meth:`World.update` as its step. Nothing here reads a
tensor's value back except :meth:`World.any`, asked every ``log_every`` steps, and only when training
stops after a time limit.
"""

# No ``from __future__ import annotations`` here: DDP reads the hook's annotations and wants the
# class dist.GradBucket itself, not the string "dist.GradBucket".
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import partial

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel

from .batching import Batch
from .checkpoint import Checkpoint
from .data import Task
from .sentence_training import SentenceProfile
from .step import train_step
from .training import Evaluation, FitOptions, History, Training, TrainingProfile, fit, prepare_training

# the variables torchrun sets for each process it starts
_TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@dataclass
class World:
    """This process's place among the processes of a run: ``rank`` of ``world_size``.

    :func:`fit_together` trains with :meth:`update` (which calls :meth:`before_step`, :meth:`weigh`
    and :meth:`add_up`) and stops all ranks at one step with :meth:`until` (which calls :meth:`any`).
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0  # the rank among the processes of this machine: which GPU to use
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))  # where collectives run
    share: Tensor | None = field(default=None, repr=False, compare=False)  # n_r / n of the current step, 0-dim

    @property
    def is_main(self) -> bool:
        """Rank 0 writes the logs and the checkpoint; the others only train."""
        return self.rank == 0

    # -- per step ------------------------------------------------------------------------------------
    def update(self, model: nn.Module, batch: Batch, *settings) -> Tensor:  # noqa: ANN002 - train_step's
        """Chapter 08's :func:`~transformer_course.step.train_step` (``settings``: its arguments after the
        batch) as one rank: the gradient weighed by this rank's share of the step's tokens, and the loss
        returned that of all the ranks' tokens (every rank gets it; nothing is read back)."""
        self.before_step(batch)
        return self.add_up(self.weigh(train_step(model, batch, *settings)))

    def until(self, batches: Iterator[Batch], max_seconds: float, every: int) -> Iterator[Batch]:
        """``batches`` until ``max_seconds`` have passed on any rank, asked every ``every`` batches.

        The clocks of the ranks differ a little, and every rank must make the same number of steps
        (a rank that stops alone leaves the others waiting in an all-reduce forever).
        """
        start = time.perf_counter()
        for taken, batch in enumerate(batches):
            if taken % every == 0 and self.any(time.perf_counter() - start >= max_seconds):
                return
            yield batch

    def before_step(self, batch: Batch) -> None:
        """Find this rank's share ``n_r / n`` of the step's target tokens (one all-reduce, no host read)."""
        count = (batch.tgt_out != batch.pad_id).sum().float()  # n_r, 0-dim, on the batch's device
        total = count.clone()
        dist.all_reduce(total)  # n = Σ_r n_r (every rank gets the sum)
        self.share = count / total.clamp(min=1.0)

    def weigh(self, loss: Tensor) -> Tensor:
        """This rank's part of the step's loss: ``(n_r / n) · L_r``; :meth:`add_up` over the ranks gives ``Σ S_r / n``."""
        return loss * self.token_share()

    def add_up(self, values: Tensor) -> Tensor:
        """The sum of ``values`` over the ranks (every rank gets it). Shape: any → the same."""
        values = values.clone()
        dist.all_reduce(values)
        return values

    def any(self, flag: bool) -> bool:
        """True on every rank if ``flag`` is true on one: the ranks must stop at the same step.

        Reads a value back (the CPU waits for the GPU): call it every few steps, not every step.
        """
        value = torch.tensor(float(flag), device=self.device)  # NCCL exchanges GPU tensors only
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return bool(value.item())

    def token_share(self) -> Tensor:
        """``n_r / n`` of the current step (0-dim), found by :meth:`before_step`."""
        if self.share is None:
            raise RuntimeError("World.before_step(batch) must run before the step: the token share is unknown")
        return self.share

    # -- the model -----------------------------------------------------------------------------------
    def wrap(self, model: nn.Module) -> DistributedDataParallel:
        """``model`` in DDP, exchanging gradients weighted by each rank's share of the tokens.

        DDP copies rank 0's weights to every rank when it starts, so the replicas begin equal.
        """
        device_ids = [self.device.index] if self.device.type == "cuda" else None  # one GPU per rank
        ddp = DistributedDataParallel(model.to(self.device), device_ids=device_ids)
        ddp.register_comm_hook(self, token_weighted_all_reduce)
        return ddp

    def barrier(self) -> None:
        """Wait until every rank gets here (rank 0 may be evaluating or writing the checkpoint)."""
        dist.barrier()


def token_weighted_all_reduce(world: World, bucket: dist.GradBucket) -> torch.futures.Future[Tensor]:
    """DDP's communication hook: each rank's gradients times ``n_r / n``, summed over the ranks.

    DDP calls it once per *bucket* (a flat tensor holding the gradients of several parameters)
    while the backward pass is still running, and copies the result back into the ``.grad`` of
    those parameters. In place of DDP's default, which sums and divides by the number of ranks.
    """
    gradients = bucket.buffer()  # (numel of the bucket,)
    gradients.mul_(world.token_share())
    work = dist.all_reduce(gradients, async_op=True)  # sum over the ranks, while backward goes on
    return work.get_future().then(lambda done: done.value()[0])


def prepare_rank(
    world: World,
    task: Task,
    profile: TrainingProfile,
    device: torch.device | str = "cpu",
    *,
    seed: int | None = None,
    resume: Checkpoint | None = None,
) -> Training:
    """Chapter 08's :func:`~transformer_course.training.prepare_training` for rank ``world.rank``:
    this rank's share of the token batches, its own dropout masks, the model wrapped in DDP
    (``run.model.module`` is the Transformer)."""
    if not isinstance(profile, SentenceProfile):
        raise ValueError("several processes share token batches: train a task of chapter 12 (e.g. sentences-en-de)")
    share = partial(profile.make_batches, task, rank=world.rank, world_size=world.world_size)
    run = prepare_training(task, profile, device, seed=seed, resume=resume, make_batches=share)
    seed = profile.seed if seed is None else seed
    torch.manual_seed(seed + 1_000 * run.start_step + world.rank)  # other dropout masks on each rank
    run.model = world.wrap(run.model)
    return run


def fit_together(
    world: World,
    model: nn.Module,
    batches: Iterator[Batch],
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None,
    steps: int,
    *,
    start_step: int = 0,
    options: FitOptions | None = None,
    evaluation: Evaluation | None = None,
    history: History | None = None,
) -> History:
    """Chapter 08's :func:`~transformer_course.training.fit`, as rank ``world.rank`` of a run.

    Each step is :meth:`World.update`: the ranks' gradients weighed by their tokens, the logged loss
    that of all the ranks' tokens. A time limit (``options.max_seconds``) is agreed every
    ``options.log_every`` steps (:meth:`World.until`). Only rank 0 shows progress and evaluates.
    """
    options = options if options is not None else FitOptions()
    history = history if history is not None else History()
    if options.max_seconds is not None:  # the seconds of earlier calls count, as in fit
        batches = world.until(batches, options.max_seconds - history.seconds, options.log_every)
    mine = replace(options, max_seconds=None, progress=options.progress and world.is_main)
    evaluation = evaluation if world.is_main else None
    return fit(model, batches, optimizer, scheduler, steps, start_step=start_step, options=mine,
               evaluation=evaluation, history=history, update=world.update)  # fmt: skip


def launched_by_torchrun() -> bool:
    """True when ``torchrun`` (or ``torch.distributed.run``) started this process with other ranks."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def join(device: torch.device | str) -> tuple[World | None, torch.device]:
    """Join the process group ``torchrun`` set up; returns (the world, this rank's device).

    Without torchrun (or with a single process) there is nothing to join: (None, ``device``).
    NCCL connects the GPUs (each rank takes GPU ``LOCAL_RANK``); gloo connects CPU processes.
    """
    device = torch.device(device)
    if not launched_by_torchrun():
        return None, device
    missing = [name for name in _TORCHRUN_VARIABLES if name not in os.environ]
    if missing:
        raise ValueError(f"WORLD_SIZE is set but {', '.join(missing)} not: start the processes with torchrun")
    rank, world_size, local_rank = (int(os.environ[name]) for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    if device.type == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    world = World(rank, world_size, local_rank, device)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return world, device


def leave(world: World | None) -> None:
    """Close the process group of :func:`join` (nothing to do for one process).

    The ranks first meet at a barrier, then each lets go of the GIL for a moment. Before PyTorch 2.8,
    gloo's destructor waits for its worker threads while it holds the GIL, and a worker that is still
    freeing the tensors of the last collectives needs the GIL too: a hang, seen on the floor (2.3)
    about once in ten runs on a busy machine (pytorch/pytorch#56297, fixed by #154976).
    """
    if world is not None and dist.is_initialized():
        dist.barrier()
        time.sleep(0.5)  # the GIL released: gloo's workers finish freeing what they hold
        dist.destroy_process_group()
