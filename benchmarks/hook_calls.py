"""Python function calls the hook makes per step: a deterministic proxy of its host cost (cProfile call counts).

    python -m benchmarks.hook_calls [--steps 30]

Wall-clock timings of the hook drift with the machine's load; the number of Python function calls
a step makes does not. Two setups, each trained after a warm-up, under cProfile:

- `mlp`: the CPU benchmark's 76k-parameter MLP (`hook_overhead.build`, batch 64) with the
  collections smdebug's peer records (weights, biases, gradients, losses) and the loss recorded
  every step: the C kernel's path, at every step and at save_interval 10 (mostly unsaved steps:
  use `--steps` a multiple of 10). The same loop without the hook is given too.
- `gpu-proxy`: the GPU path on fake CUDA tensors (`FakeTensorMode`: the CPU proxies of
  tests/capture/test_torch_hook_gpu_proxies.py), its GPT-like model of 6 blocks, default
  collections, Tier-0 saved steps: the host work of `multi_stats`' groups, without the launches
  themselves (a fake op launches nothing). The plain step's calls are subtracted.

Prints the calls per step (total over `--steps` steps, divided), for the hook's own functions and
for everything.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
from collections.abc import Callable

import torch

import trainguard.torch as tg
from benchmarks.hook_overhead import SAME_AS_PEER, build


def _calls(step: Callable[[], None], steps: int) -> tuple[float, float]:
    """(all calls, trainguard's calls) per step of `step`, over `steps` steps."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step()
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    total = sum(v[1] for v in stats.values())
    ours = sum(v[1] for k, v in stats.items() if "trainguard" in k[0])
    return total / steps, ours / steps


def _mlp_step(hook: tg.Hook | None) -> Callable[[], None]:
    """One training step of the CPU benchmark's MLP, with `hook` registered if given."""
    model, loss_fn, opt = build()
    if hook is not None:
        hook.register_module(model)
        hook.register_optimizer(opt)
    g = torch.Generator().manual_seed(0)

    def step() -> None:
        x, y = torch.randn(64, 32, generator=g), torch.randint(0, 10, (64,), generator=g)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if hook is not None:
            hook.record_scalar("loss", loss)

    return step


def mlp(steps: int) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for label, interval in (
        ("no hook", 0),
        ("w+b+g+loss, every step", 1),
        ("w+b+g+loss, save_interval 10", 10),
    ):
        hook = None
        if interval:
            hook = tg.Hook(
                tempfile.mkdtemp(prefix="tg-calls-"), save_interval=interval, collections=list(SAME_AS_PEER)
            )
        step = _mlp_step(hook)
        for _ in range(25):  # past the first saved steps of either interval
            step()
        out[label] = _calls(step, steps)
        if hook is not None:
            assert hook.errors == [], hook.errors
            hook.close()
    return out


def gpu_proxy(steps: int, layers: int = 6) -> dict[str, tuple[float, float]]:
    from tests.capture.test_torch_hook_gpu_proxies import GPT, FakeCudaStaging, _ops_of, fake_cuda
    from trainguard.capture.torch._transfer import Transfer

    out: dict[str, tuple[float, float]] = {}
    with fake_cuda() as rec:
        with torch.device("cuda"):
            models = [GPT(layers) for _ in range(2)]
        opts = [torch.optim.SGD(m.parameters(), lr=0.01) for m in models]
        hook = tg.Hook(
            tempfile.mkdtemp(prefix="tg-calls-"),
            save_interval=1,
            tier1_interval=1000,  # Tier-0 saved steps after the first
            transfer=Transfer(staging=lambda device: FakeCudaStaging([True])),
        )
        hook.register_module(models[0])
        hook.register_optimizer(opts[0])
        tokens = torch.randint(0, 16384, (8, 513), device="cuda")
        for label, i, h in (("plain step", 1, None), ("hooked step", 0, hook)):
            for _ in range(3):
                _ops_of(models[i], opts[i], rec, tokens, h)
            out[label] = _calls(lambda i=i, h=h: _ops_of(models[i], opts[i], rec, tokens, h) and None, steps)
        assert hook.errors == [], hook.errors
        hook.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    print("| setup | step | calls per step | of which trainguard's |")
    print("|---|---|---|---|")
    for setup, rows in (("mlp", mlp(args.steps)), ("gpu-proxy (6 blocks)", gpu_proxy(args.steps))):
        for label, (total, ours) in rows.items():
            print(f"| {setup} | {label} | {total:.0f} | {ours:.0f} |")


if __name__ == "__main__":
    main()
