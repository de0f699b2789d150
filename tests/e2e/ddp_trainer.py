"""The training program of the end-to-end DebugJobs: a small MLP trained data-parallel over the Job's pods.

Runs in the trainer container of each pod, with the rendezvous variables the operator sets
(MASTER_ADDR is rank 0's pod, reached through the DebugJob's headless Service and the cluster DNS)
and the hook configured by the TRAINGUARD_* variables. Gradients are averaged over the ranks
(gloo), so every rank sees the same weights.

    python ddp_trainer.py healthy STEPS      a classification run that stays healthy; exits 0
    python ddp_trainer.py diverging STEPS [FROM]
                                             from step FROM (default 0) the learning rate warms up towards 0.5
                                             and the loss turns NaN about 35 steps later; exits 3 when
                                             TrainGuard asks it to stop

SIGTERM (the Job suspended, the pod deleted) ends the run through the hook's close, so the hook
writes the rank's END itself.
"""

from __future__ import annotations

import math
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

import trainguard.torch as tg

STOPPED_EXIT_STATUS = 3
STEP_SECONDS = 0.02
"""A pause per step, so that a run lasts long enough for the faults a test injects mid-run."""


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(mode: str, steps: int, diverge_from: int = 0) -> int:
    signal.signal(signal.SIGTERM, _terminated)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    rank = dist.get_rank()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1 + rank)
    teacher = torch.randn(20, 10, generator=torch.Generator().manual_seed(7))
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 10 if mode == "healthy" else 1))
    ddp = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9 if mode == "healthy" else 0.0)
    print(f"rank {rank} of {dist.get_world_size()}: {mode}, {steps} steps", flush=True)
    nonfinite_seen = False
    with tg.Hook.from_env() as hook:
        hook.register_module(model)
        hook.register_optimizer(optimizer)
        for step in range(steps):
            x = torch.randn(64, 20, generator=gen)
            if mode == "healthy":
                loss = nn.functional.cross_entropy(ddp(x), (x @ teacher).argmax(dim=1))
            else:
                for group in optimizer.param_groups:
                    group["lr"] = 0.01 + 0.49 * min(max(step - diverge_from, 0) / 100, 1.0)
                loss = nn.functional.mse_loss(ddp(x), (x @ teacher).sum(dim=1, keepdim=True))
            optimizer.zero_grad()
            loss.backward()
            hook.record_scalar("loss", loss)
            optimizer.step()
            if not nonfinite_seen and not math.isfinite(loss.item()):
                nonfinite_seen = True  # the stop-latency benchmark times the stop from this line's timestamp
                print(f"rank {rank} step {step}: first non-finite loss", flush=True)
            if step % 10 == 0:
                print(f"rank {rank} step {step}: loss {loss.item():.4g}", flush=True)
            if hook.should_stop():
                print(
                    f"rank {rank} step {step}: stopping, TrainGuard asked to ({hook.stop_reason()})",
                    flush=True,
                )
                return STOPPED_EXIT_STATUS
            time.sleep(STEP_SECONDS)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], *(int(a) for a in sys.argv[2:4])))
