"""Real distributed training loops on CPU (gloo) for the sharded-model tests: FSDP2, FSDP1
(`use_orig_params=True`), tensor parallelism (`parallelize_module`) and DDP, 2 ranks.

Each rank runs in a process of its own (`torch.multiprocessing.spawn`) with the hook registered as
a script would; rank 0 also saves the full tensors of every step (`DTensor.full_tensor()`, FSDP1's
`summon_full_params`: collectives that only this test code makes) for the test to compare with what
the hook wrote. The FSDP1 and tensor-parallel loops count the collective ops of each training step
(a `TorchDispatchMode` over forward, backward, the optimizer step and the hook's work) beside a twin
trained without the hook: equal counts mean the hook made none.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

import trainguard.torch as tg

STEPS = 3
FROZEN = {"0.weight": (3, 12), "2.weight": (1,)}
"""Rows of the full weights the tensor-parallel run (and its unsharded twin) keeps at their first values after each
optimizer step: units that do not move while their gradient is not zero, for the per-unit rules. 0.weight's rows
lie one in each rank's column-wise part; 2.weight's row is split between the ranks' row-wise parts."""
_COLLECTIVE_NAMESPACES = ("c10d", "_c10d_functional", "c10d_functional")


class _Collectives(TorchDispatchMode):
    """Counts the collective ops (c10d's, both the process-group and the functional ones) dispatched under it."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        if func.namespace in _COLLECTIVE_NAMESPACES:
            self.count += 1
        return func(*args, **(kwargs or {}))


def _model() -> nn.Sequential:
    torch.manual_seed(0)  # every rank starts from the same weights
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


def _start(rank: int, world: int, rendezvous: str) -> None:
    os.environ.pop("TRAINGUARD_OUT", None)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=world)


def train(
    rank: int,
    world: int,
    rendezvous: str,
    runs: list[tuple[str, str, bool, int]],
    ddp_out: str,
    others: list[tuple[str, str, str]],
) -> None:
    """Train an FSDP2 MLP once per (out, truth, native_stats, nan_step) of `runs`, a DDP one into `ddp_out`, then
    one per (kind, out, truth) of `others` (kind "fsdp1" or "tp"): one start-up (processes, torch, gloo) for all."""
    _start(rank, world, rendezvous)
    for out, truth, native, nan_step in runs:
        _fsdp2(rank, world, out, truth, native, nan_step)
    _ddp(rank, world, ddp_out)
    for kind, out, truth in others:
        _sharded_other(kind, rank, world, out, truth)
        if kind == "fsdp1":
            _fsdp1_flat(rank, world, out + "-flat")
        if kind == "tp" and rank == 0:
            _unsharded_twin(out + "-whole")
    dist.destroy_process_group()


def _frozen(model: nn.Module, rank: int, *, tp: bool) -> list[tuple[torch.Tensor, list[int], torch.Tensor]]:
    """The `FROZEN` rows this rank holds: (its local tensor, the rows there, their first values)."""
    named = dict(model.named_parameters())
    out = []
    for name, rows in FROZEN.items():
        local = named[name]._local_tensor if tp else named[name]  # type: ignore[attr-defined]
        here = list(rows)
        if tp and name == "0.weight":  # column-wise: this rank holds rows [rank * n, (rank + 1) * n)
            n = local.shape[0]
            here = [r - rank * n for r in rows if rank * n <= r < (rank + 1) * n]
        out.append((local, here, local.detach()[here].clone()))
    return out


def _keep_frozen(
    opt: torch.optim.Optimizer, frozen: list[tuple[torch.Tensor, list[int], torch.Tensor]]
) -> None:
    """Put the frozen rows back after each optimizer step, before the hook (registered after this) reads the step."""

    def restore(*_: object) -> None:
        with torch.no_grad():
            for local, rows, first in frozen:
                local[rows] = first

    opt.register_step_post_hook(restore)


def _unsharded_twin(out: str) -> None:
    """The tensor-parallel run's model trained whole on one rank, on the same batches with the same frozen rows."""
    model = _model()
    hook = tg.Hook(out, save_interval=1, tier1_interval=2, stats_worker=False)
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    _keep_frozen(opt, _frozen(model, 0, tp=False))
    hook.register_optimizer(opt)
    g = torch.Generator().manual_seed(100)
    for _ in range(STEPS):
        x, y = torch.randn(4, 8, generator=g), torch.randint(0, 3, (4,), generator=g)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        hook.record_scalar("loss", loss)
    hook.close()
    if hook.errors:
        raise AssertionError(f"unsharded twin: {hook.errors}")


def _fsdp1_flat(rank: int, world: int, out: str) -> None:
    """FSDP1 without `use_orig_params`: one step, the flat parameter registered in place of the model's."""
    from torch.distributed.fsdp import FullyShardedDataParallel

    model = FullyShardedDataParallel(_model(), device_id=torch.device("cpu"))
    hook = tg.Hook(out, rank=rank, world_size=world, save_interval=1, stats_worker=False)
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook.register_optimizer(opt)
    opt.zero_grad()
    model(torch.randn(4, 8)).sum().backward()
    opt.step()
    hook.close()
    if hook.errors:
        raise AssertionError(f"rank {rank}: {hook.errors}")


def _wrap(kind: str, world: int) -> nn.Module:
    """The MLP wrapped by FSDP1 (`use_orig_params=True`, on the CPU) or split by tensor parallelism (the first
    layer column-wise, the second row-wise: its bias stays replicated)."""
    model = _model()
    if kind == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel

        return FullyShardedDataParallel(model, use_orig_params=True, device_id=torch.device("cpu"))
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    mesh = init_device_mesh("cpu", (world,))
    return parallelize_module(model, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})


def _full(kind: str, model: nn.Module) -> dict[str, np.ndarray]:
    """Every parameter and gradient as the full tensor (a collective: test code only), by its bare name."""
    if kind == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel

        with FullyShardedDataParallel.summon_full_params(model, with_grads=True):
            named = [(n.removeprefix("_fsdp_wrapped_module."), p) for n, p in model.named_parameters()]
            return {
                **{n: p.detach().clone().numpy() for n, p in named},
                **{f"grad/{n}": p.grad.detach().clone().numpy() for n, p in named},  # type: ignore[union-attr]
            }
    named = list(model.named_parameters())
    return {
        **{n: p.full_tensor().detach().numpy() for n, p in named},  # type: ignore[attr-defined]
        **{f"grad/{n}": p.grad.full_tensor().detach().numpy() for n, p in named},  # type: ignore[union-attr]
    }


def _sharded_other(kind: str, rank: int, world: int, out: str, truth: str) -> None:
    """Train the `kind` MLP with the hook and a twin without it on the same batches, counting each step's
    collectives; rank 0 saves the full tensors after each step and the counts (hooked, twin) per step."""
    model, twin = _wrap(kind, world), _wrap(kind, world)
    # Tier-1 at steps 0 and 2: step 2's "moved" shares compare with step 1's weights (step 0's are NaN)
    hook = tg.Hook(out, rank=rank, world_size=world, save_interval=1, tier1_interval=2, stats_worker=False)
    hook.register_module(model)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, twin)]
    if kind == "tp":
        _keep_frozen(opts[0], _frozen(model, rank, tp=True))
    hook.register_optimizer(opts[0])
    # tensor parallelism: every rank the same batch (the column-wise layer expects it); FSDP1 each its own
    g = torch.Generator().manual_seed(100 + (rank if kind == "fsdp1" else 0))
    counts = np.zeros((STEPS, 2), np.int64)
    for step in range(STEPS):
        x, y = torch.randn(4, 8, generator=g), torch.randint(0, 3, (4,), generator=g)
        for i, (m, opt) in enumerate(zip((model, twin), opts)):
            with _Collectives() as backward:
                opt.zero_grad()
                loss = nn.functional.cross_entropy(m(x), y)
                loss.backward()
            if m is model:
                full = _full(kind, m)  # the gradients the step reads (outside the counting)
            with _Collectives() as update:
                opt.step()
                if m is model:
                    hook.record_scalar("loss", loss)
            counts[step, i] = backward.count + update.count
        full.update({k: v for k, v in _full(kind, model).items() if not k.startswith("grad/")})
        if rank == 0:
            np.savez(Path(truth) / f"step-{step}.npz", **full)
    hook.close()
    if rank == 0:
        np.save(Path(truth) / "collectives.npy", counts)
    if hook.errors:
        raise AssertionError(f"rank {rank}: {hook.errors}")


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
