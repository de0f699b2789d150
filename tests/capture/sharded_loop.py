"""Real distributed training loops on CPU (gloo) for the sharded-model tests: FSDP2 and DDP, 2 ranks.

Each rank runs in a process of its own (`torch.multiprocessing.spawn`) with the hook registered as
a script would; rank 0 also saves the full tensors of every step (`DTensor.full_tensor()`, a
collective that only this test code makes) for the test to compare with what the hook wrote.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

import trainguard.torch as tg

STEPS = 3


def _model() -> nn.Sequential:
    torch.manual_seed(0)  # every rank starts from the same weights
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


def _start(rank: int, world: int, rendezvous: str) -> None:
    os.environ.pop("TRAINGUARD_OUT", None)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=world)


def train(
    rank: int, world: int, rendezvous: str, runs: list[tuple[str, str, bool, int]], ddp_out: str
) -> None:
    """Train an FSDP2 MLP once per (out, truth, native_stats, nan_step) of `runs`, then a DDP one into `ddp_out`:
    one start-up (processes, torch, gloo) for all of them."""
    _start(rank, world, rendezvous)
    for out, truth, native, nan_step in runs:
        _fsdp2(rank, world, out, truth, native, nan_step)
    _ddp(rank, world, ddp_out)
    dist.destroy_process_group()


def _fsdp2(rank: int, world: int, out: str, truth: str, native: bool, nan_step: int) -> None:
    """At `nan_step` (if >= 0) rank 1 puts a NaN into its shard of `0.weight`'s gradient."""
    from torch.distributed.fsdp import fully_shard

    model = _model()
    for layer in (model[0], model[2]):
        fully_shard(layer)
    fully_shard(model)
    hook = tg.Hook(out, rank=rank, world_size=world, save_interval=1, native_stats=native, stats_worker=False)
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook.register_optimizer(opt)
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own batches
    for step in range(STEPS):
        x, y = torch.randn(4, 8, generator=g), torch.randint(0, 3, (4,), generator=g)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if step == nan_step and rank == 1:
            model[0].weight.grad._local_tensor[0, 0] = float("nan")  # type: ignore[union-attr]
        grads = {f"grad/{n}": p.grad.full_tensor() for n, p in model.named_parameters()}  # type: ignore[union-attr]
        opt.step()
        hook.record_scalar("loss", loss)
        weights = {n: p.full_tensor() for n, p in model.named_parameters()}  # type: ignore[attr-defined]
        if rank == 0:
            np.savez(
                Path(truth) / f"step-{step}.npz",
                **{k: v.detach().numpy() for k, v in {**grads, **weights}.items()},
            )
    hook.close()
    if hook.errors:
        raise AssertionError(f"rank {rank}: {hook.errors}")


def _ddp(rank: int, world: int, out: str) -> None:
    """Train a DDP MLP with the DDP wrapper registered."""
    model = nn.parallel.DistributedDataParallel(_model())
    hook = tg.Hook(out, rank=rank, world_size=world, save_interval=1, stats_worker=False)
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook.register_optimizer(opt)
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(STEPS):
        x, y = torch.randn(4, 8, generator=g), torch.randint(0, 3, (4,), generator=g)
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    hook.close()
    if hook.errors:
        raise AssertionError(f"rank {rank}: {hook.errors}")
