"""Chapter 12 — several processes (DistributedDataParallel on gloo): the same update as one process
on the same global batch, the token weighting that makes it so, and the command line under torchrun."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from transformer_course import Transformer, TransformerConfig, distributed
from transformer_course.batching import make_batch
from transformer_course.checkpoint import load_checkpoint
from transformer_course.distributed import World, fit_together, join, prepare_rank
from transformer_course.schedule import make_optimizer, transformer_scheduler
from transformer_course.step import train_step
from transformer_course.token_batches import token_batch_stream, token_batches
from transformer_course.training import FitOptions, fit
from transformer_course_tools.cli import main

ROOT = Path(__file__).resolve().parent.parent
STEPS, WORLD_SIZE, MAX_TOKENS, VOCAB = 6, 2, 96, 40


def _examples(n: int = 400, seed: int = 0) -> list[tuple[list[int], list[int]]]:
    """Id pairs of very different lengths (3 … 20), so that the ranks' batches hold different token counts."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        src = [rng.randrange(4, VOCAB) for _ in range(rng.randint(3, 20))]
        pairs.append((src, [1, *src[::-1][: rng.randint(2, len(src))], 2]))
    return pairs


def _model() -> Transformer:
    torch.manual_seed(0)
    config = TransformerConfig(VOCAB, VOCAB, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1,
                               dropout=0.0, max_len=32, share_embeddings=True)  # fmt: skip
    return Transformer(config)


def _train(model: torch.nn.Module, batches, world: World | None) -> list[float]:
    optimizer = make_optimizer(model)
    scheduler = transformer_scheduler(optimizer, 16, warmup_steps=2, scale=0.05)  # lr ≈ 0.01, as a real run
    options = FitOptions(log_every=2, progress=False)
    if world is None:
        return fit(model, batches, optimizer, scheduler, STEPS, options=options).losses
    history = fit_together(world, model, batches, optimizer, scheduler, STEPS, options=options)
    return history.losses


def _replica(rank: int, port: int, out: str, weighted: bool) -> None:
    """One rank of the two-process run (started by ``mp.spawn``, as torchrun would start it)."""
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD_SIZE),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))  # fmt: skip
    torch.set_num_threads(1)
    world, device = join("cpu")
    try:
        model = _model()
        if weighted:
            trained = world.wrap(model)
        else:  # DDP's own averaging: the mean of the ranks' mean losses, whatever their token counts
            trained = torch.nn.parallel.DistributedDataParallel(model)
            world.before_step = lambda batch: setattr(world, "share", torch.tensor(1.0 / WORLD_SIZE))
        batches = token_batch_stream(_examples(), MAX_TOKENS, 0, seed=0, rank=rank, world_size=WORLD_SIZE)
        losses = _train(trained, batches, world)
        if world.is_main:
            torch.save({"state": model.state_dict(), "losses": losses}, out)
    finally:
        distributed.leave(world)
    # Done: leave without Python's teardown. On PyTorch 2.3, freeing DDP's reducer after the group is
    # destroyed can wait forever in ProcessGroupGloo's destructor (seen once in a floor run).
    os._exit(0)


def _two_processes(tmp_path: Path, weighted: bool) -> dict:
    with socket.socket() as probe:  # a free port for the rendezvous
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = tmp_path / f"replica-{weighted}.pt"
    mp.spawn(_replica, args=(port, str(out), weighted), nprocs=WORLD_SIZE, join=True)
    return torch.load(out, weights_only=True)


def _one_process_on_the_global_batches() -> tuple[Transformer, list[float]]:
    """One process whose step k takes the batches that the ranks take at step k, all together."""
    examples = _examples()
    src, tgt = [len(s) for s, _ in examples], [len(t) for _, t in examples]
    shares = [token_batches(src, tgt, MAX_TOKENS, 0, 0, rank, WORLD_SIZE) for rank in range(WORLD_SIZE)]
    merged = [[i for part in parts for i in part] for parts in zip(*shares, strict=True)][:STEPS]
    batches = iter([make_batch([examples[i] for i in indices], 0) for indices in merged])
    model = _model()
    return model, _train(model, batches, None)


def _largest_difference(a: dict, b: dict) -> float:
    """Over every parameter but the key biases. A key bias adds the same number ``q·b`` to all the
    scores of a query, which the softmax ignores: its gradient is zero up to rounding (~1e-10), and
    Adam, which divides by the gradient's own size, turns that rounding into steps of full size, in
    one process as in two. They change nothing the model computes (the logits are compared too)."""
    return max((a[k].float() - b[k].float()).abs().max().item() for k in a if not k.endswith("w_k.bias"))


def _largest_logit_difference(a: dict, b: dict) -> float:
    models = [_model(), _model()]
    for model, state in zip(models, (a, b), strict=True):
        model.load_state_dict(state)
        model.eval()
    batch = make_batch(_examples(8, seed=1), 0)
    return (models[0](batch.src, batch.tgt_in) - models[1](batch.src, batch.tgt_in)).abs().max().item()


@pytest.mark.timeout(600)  # a hang in a rank fails the test instead of stopping the run
def test_two_processes_make_the_update_of_one_process_on_the_same_global_batch(tmp_path: Path) -> None:
    start = time.perf_counter()
    replicas = _two_processes(tmp_path, weighted=True)
    seconds = time.perf_counter() - start
    model, losses = _one_process_on_the_global_batches()
    difference = _largest_difference(replicas["state"], model.state_dict())
    print(f"\n{STEPS} steps, 2 processes vs 1: largest parameter difference {difference:.2e}, {seconds:.1f} s")
    assert difference < 1e-5, f"the two-process run drifted from the one-process run by {difference:.2e}"
    assert _largest_logit_difference(replicas["state"], model.state_dict()) < 1e-4
    assert replicas["losses"] == pytest.approx(losses, rel=1e-5), "the logged loss is the loss over all ranks' tokens"
    assert _largest_difference(model.state_dict(), _model().state_dict()) > 1e-2, "the model did learn"


@pytest.mark.timeout(600)  # a hang in a rank fails the test instead of stopping the run
def test_without_token_weighting_the_processes_drift(tmp_path: Path) -> None:
    """The control: DDP's plain mean over ranks (each rank's mean over its own tokens) is not the
    step of one process, because the ranks hold different token counts. The test above can fail."""
    replicas = _two_processes(tmp_path, weighted=False)
    model, _ = _one_process_on_the_global_batches()
    difference = _largest_difference(replicas["state"], model.state_dict())
    logits = _largest_logit_difference(replicas["state"], model.state_dict())
    print(f"\nwithout token weighting: largest parameter difference {difference:.2e}, logits {logits:.2e}")
    assert difference > 1e-3 and logits > 1e-2


def test_key_biases_get_no_gradient() -> None:
    """Why the comparison above leaves the key biases out: their gradient is rounding noise."""
    model = _model()
    batch = make_batch(_examples(16), 0)
    torch.nn.functional.cross_entropy(model(batch.src, batch.tgt_in).flatten(0, 1), batch.tgt_out.flatten()).backward()
    grads = {name: p.grad.abs().max().item() for name, p in model.named_parameters()}
    assert all(size < 1e-6 for name, size in grads.items() if name.endswith("w_k.bias")), grads
    assert all(size > 1e-4 for name, size in grads.items() if name.endswith("w_q.bias")), grads


def test_the_ranks_token_counts_differ_in_the_test_above() -> None:
    examples = _examples()
    streams = [token_batch_stream(examples, MAX_TOKENS, 0, rank=r, world_size=WORLD_SIZE) for r in range(WORLD_SIZE)]
    counts = [[next(stream).n_tokens for _ in range(STEPS)] for stream in streams]
    assert any(a != b for a, b in zip(*counts, strict=True)), counts


def test_one_process_joins_nothing(monkeypatch) -> None:
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert join("cpu") == (None, torch.device("cpu"))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("MASTER_PORT", raising=False)
    with pytest.raises(ValueError, match="MASTER_PORT"):
        join("cpu")


def test_the_token_share_needs_before_step() -> None:
    with pytest.raises(RuntimeError, match="before_step"):
        World().weigh(torch.tensor(1.0))


def test_chapter_08_tasks_refuse_several_processes(monkeypatch, capsys) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert main(["train", "--task", "copy", "--steps", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "several processes (torchrun) train chapter 12's text" in err, err


def _torchrun() -> list[str]:
    found = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or shutil.which("torchrun")
    return [found] if found else [sys.executable, "-m", "torch.distributed.run"]


def test_torchrun_two_processes_from_the_command_line(tmp_path: Path) -> None:
    env = {**os.environ, "TRANSFORMER_COURSE_PROFILE": "tiny", "TQDM_DISABLE": "1"}  # the tiny profile: seconds
    command = [*_torchrun(), "--standalone", "--nproc-per-node", "2",
               "-m", "transformer_course", "train", "--task", "sentences-en-de", "--steps", "20", "--out", "model.pt"]  # fmt: skip
    run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["world_size"] == 2 and result["steps"] == 20 and result["task"] == "sentences-en-de", result
    assert run.stdout.count('"world_size"') == 1, "only rank 0 prints the result"
    checkpoint = load_checkpoint(tmp_path / "model.pt")
    assert checkpoint.step == 20 and checkpoint.extra["world_size"] == 2 and checkpoint.tokenizer is not None
    assert len(checkpoint.extra["history"]["losses"]) == 20


@pytest.fixture()
def gloo_alone():
    """A process group of one (gloo), for the pieces of World that talk to the other ranks. Its store
    lives in memory: a FileStore of one process can hang when the group is destroyed (seen once on
    PyTorch 2.3; pytorch/pytorch#31467)."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield World(0, 1)
    dist.destroy_process_group()


def test_a_world_of_one_weighs_by_one_and_agrees_with_itself(gloo_alone: World) -> None:
    batch = make_batch([([5, 6], [1, 7, 8, 2]), ([5], [1, 9, 2])], pad_id=0)
    gloo_alone.before_step(batch)
    assert gloo_alone.share.item() == 1.0
    assert gloo_alone.weigh(torch.tensor(2.5)).item() == 2.5
    assert gloo_alone.add_up(torch.tensor([1.0, 2.0])).tolist() == [1.0, 2.0]
    assert gloo_alone.any(True) and not gloo_alone.any(False)


def test_a_world_of_one_updates_as_train_step_and_stops_on_time(gloo_alone: World) -> None:
    batch = make_batch(_examples(16), 0)
    alone, reference = _model(), _model()
    settings = (None, 0.1, 1.0, None)  # scheduler, smoothing, max_grad_norm, precision
    loss = gloo_alone.update(alone, batch, make_optimizer(alone), *settings)
    assert loss.item() == pytest.approx(train_step(reference, batch, make_optimizer(reference), *settings).item())
    assert _largest_difference(alone.state_dict(), reference.state_dict()) < 1e-6
    assert list(gloo_alone.until(iter(range(5)), max_seconds=60.0, every=2)) == [0, 1, 2, 3, 4]
    assert list(gloo_alone.until(iter(range(5)), max_seconds=0.0, every=2)) == []


def test_only_chapter_12_profiles_train_on_several_processes() -> None:
    from transformer_course.data import load_task
    from transformer_course.training import CPU_PROFILE

    with pytest.raises(ValueError, match="a task of chapter 12"):
        prepare_rank(World(0, 2), load_task("copy"), CPU_PROFILE)
