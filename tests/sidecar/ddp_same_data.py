"""A real data-parallel loop on CPU (gloo, 2 ranks, DDP) for the same-data test, run in one process per rank
(`torch.multiprocessing.spawn`) with the hook registered as a script would, once per way of drawing batches:
`own` (each rank its own batches, as a DistributedSampler gives), `own_loss_averaged` (the same, with the loss
averaged over the ranks before it is recorded, as many scripts log it) and `same` (every rank draws the same
batches: the sampler is missing)."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch import nn

import trainguard.torch as tg

STEPS = 60
SAVE_INTERVAL = 10
RUNS = ("own", "own_loss_averaged", "same")


def train(rank: int, world: int, rendezvous: str, root: str) -> None:
    """Train one DDP MLP per way of drawing batches (`RUNS`) into `root/<way>`: one start-up for all."""
    os.environ.pop("TRAINGUARD_OUT", None)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=world)
    for way in RUNS:
        _train(rank, world, way, f"file://{root}/{way}")
    dist.destroy_process_group()


def _train(rank: int, world: int, way: str, out: str) -> None:
    torch.manual_seed(0)  # every rank starts from the same weights (DDP broadcasts them anyway)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 4))
    )
    hook = tg.Hook(out, rank=rank, world_size=world, save_interval=SAVE_INTERVAL, stats_worker=False)
    hook.register_module(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    hook.register_optimizer(opt)
    data = torch.Generator().manual_seed(7 if way == "same" else 7 + 1000 * rank)
    teacher = torch.Generator().manual_seed(3)
    w = torch.randn(10, 4, generator=teacher)
    for _ in range(STEPS):
        x = torch.randn(32, 10, generator=data)
        y = (x @ w).argmax(1)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        logged = loss.detach().clone()
        if way == "own_loss_averaged":
            dist.all_reduce(logged)
            logged /= world
        hook.record_scalar("loss", logged)
    hook.close()
    if hook.errors:
        raise AssertionError(f"rank {rank}: {hook.errors}")
