"""The training program of the attach-mode end-to-end tests: a small model trained in each pod, with the hook that
the admission webhook configured (its `TRAINGUARD_*` variables are in the env; nothing here names TrainGuard's run).

    python attach_trainer.py healthy FLAG   a step every STEP_SECONDS until FLAG exists, then exit 0
    python attach_trainer.py nan FLAG       the same, but the loss is NaN from step NAN_STEP on; it never ends by
                                            itself: only TrainGuard's stop (SIGTERM) ends it

It prints the rank line of `workloads.LOOP` first (so the tests see it run as they see the loop), and takes its
RANK from the env its controller gave it, as torchrun would: `RANK` (PyTorchJob), `PET_NODE_RANK` (TrainJob),
`JOB_GLOBAL_INDEX` (a JobSet's pods, through the downward API), `JOB_COMPLETION_INDEX` (an Indexed Job); the
injected evaluator follows the same rank. The first non-finite loss writes `FLAG.nonfinite.<rank>` (the wall
clock time) beside the flag, so the test can time the stop from it after the pod is gone. One process per pod:
the ranks do not talk to each other, which keeps four kinds at once within the 2-core test node.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time

RANK_ENV = ("RANK", "PET_NODE_RANK", "JOB_GLOBAL_INDEX", "JOB_COMPLETION_INDEX")
STEP_SECONDS = 0.1
NAN_STEP = 30


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(mode: str, flag: str) -> int:
    signal.signal(signal.SIGTERM, _terminated)
    env = {k: os.environ.get(k, "") for k in RANK_ENV}
    print("trainguard-e2e-rank " + " ".join(f"{k}={v}" for k, v in env.items()), flush=True)
    rank = next((v for v in env.values() if v), "0")
    os.environ["RANK"] = rank

    import torch
    from torch import nn

    import trainguard.torch as tg

    torch.set_num_threads(1)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1 + int(rank))
    teacher = torch.randn(20, 10, generator=torch.Generator().manual_seed(7))
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    nonfinite = False
    step = 0
    with tg.Hook.from_env() as hook:
        hook.register_module(model)
        hook.register_optimizer(optimizer)
        while mode == "nan" or not os.path.exists(flag):
            x = torch.randn(32, 20, generator=gen)
            loss = nn.functional.cross_entropy(model(x), (x @ teacher).argmax(dim=1))
            if mode == "nan" and step >= NAN_STEP:
                loss = loss * float("nan")
            optimizer.zero_grad()
            loss.backward()
            hook.record_scalar("loss", loss)
            optimizer.step()
            if not nonfinite and not math.isfinite(loss.item()):
                nonfinite = True
                with open(f"{flag}.nonfinite.{rank}", "w") as out:
                    out.write(f"{time.time():.3f}\n")
                print(f"rank {rank} step {step}: first non-finite loss", flush=True)
            if step % 20 == 0:
                print(f"rank {rank} step {step}: loss {loss.item():.4g}", flush=True)
            step += 1
            time.sleep(STEP_SECONDS)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
