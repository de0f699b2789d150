"""Two checks of the PyTorch hook on a GPU that a timing table does not show: syncs and kernel launches.

    python -m benchmarks.hook_gpu_checks sync [--steps 20]      # no host sync in steady state
    python -m benchmarks.hook_gpu_checks kernels [--steps 10]   # kernels the hook adds per saved step

Both train the GPU benchmark's 110M-parameter GPT (`hook_overhead_gpu.gpt`: AdamW, bf16 autocast)
with the hook at save_interval 1, the loss recorded every step. `sync` first runs `--steps` steps
without the hook under `torch.cuda.set_sync_debug_mode("error")` (the loop alone must not
synchronise), then warms the hook up (its first saved steps allocate its buffers and saved copies)
and runs `--steps` steady-state steps with it under the same mode: a synchronising call inside the
hook raises there and the hook, failing open, reports it in `hook.errors`. The mode does not see
non-blocking copies (they do not synchronise) and has gaps of its own; the timing table is the
final word. `kernels` counts the CUDA kernels `torch.profiler` records over `--steps` steps with
the hook and without it and prints the difference per saved step (the CPU proxies bound the ops
the hook dispatches: tests/capture/test_torch_hook_gpu_proxies.py). Both exit non-zero on failure.
"""

from __future__ import annotations

import argparse
import sys
import tempfile

import torch

import trainguard.torch as tg
from benchmarks.hook_overhead_gpu import gpt

KERNELS_PER_SAVED_STEP_MAX = 40
"""The bound of the design note: ~4 multi-tensor launches and their cleanups, one per activation, a few more."""


def _model(device: torch.device, hooked: bool) -> tuple[tg.Hook | None, object]:
    module, opt, step = gpt(device)
    hook = None
    if hooked:
        hook = tg.Hook(f"file://{tempfile.mkdtemp(prefix='tg-gpu-check-')}/run", save_interval=1)
        hook.register_module(module)
        hook.register_optimizer(opt)
    return hook, step


def _run(hook: tg.Hook | None, step: object, steps: int) -> None:
    for _ in range(steps):
        loss = step()  # type: ignore[operator]
        if hook is not None:
            hook.record_scalar("loss", loss)


def check_sync(device: torch.device, steps: int) -> int:
    _, plain = _model(device, hooked=False)
    _run(None, plain, 3)
    torch.cuda.synchronize(device)
    torch.cuda.set_sync_debug_mode("error")
    try:
        _run(None, plain, steps)
    except RuntimeError as err:
        torch.cuda.set_sync_debug_mode("default")
        print(f"the training loop alone synchronises, so the hook cannot be judged this way: {err}")
        return 2
    finally:
        torch.cuda.set_sync_debug_mode("default")
    del plain
    hook, hooked = _model(device, hooked=True)
    assert hook is not None
    _run(hook, hooked, 5)  # the first saved steps allocate the hook's buffers and saved copies
    torch.cuda.synchronize(device)
    torch.cuda.set_sync_debug_mode("error")
    try:
        _run(hook, hooked, steps)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    errors = list(hook.errors)
    hook.close()
    print(
        f"{steps} steady-state steps at save_interval 1 under set_sync_debug_mode('error'): "
        f"{'no synchronisation' if not errors else 'FAILED: ' + '; '.join(errors)}; "
        f"skipped saved steps {hook.skipped_steps}"
    )
    return 1 if errors else 0


def _kernels(hook: tg.Hook | None, step: object, steps: int) -> int:
    from torch.profiler import ProfilerActivity, profile

    _run(hook, step, 5)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        _run(hook, step, steps)
        torch.cuda.synchronize()
    return sum(
        1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and "Memcpy" not in e.name
    )


def check_kernels(device: torch.device, steps: int) -> int:
    plain = _kernels(None, _model(device, hooked=False)[1], steps)
    hook, hooked = _model(device, hooked=True)
    with_hook = _kernels(hook, hooked, steps)
    assert hook is not None
    errors = list(hook.errors)
    hook.close()
    per_step = (with_hook - plain) / steps
    ok = per_step <= KERNELS_PER_SAVED_STEP_MAX and not errors
    print(
        f"CUDA kernels over {steps} steps at save_interval 1: {plain} without the hook, {with_hook} with it: "
        f"{per_step:.1f} added per saved step (bound {KERNELS_PER_SAVED_STEP_MAX}){'' if ok else ' FAILED'}"
        + (f"; hook errors: {errors}" if errors else "")
    )
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("check", choices=("sync", "kernels"))
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    device = torch.device(args.device)
    if device.type != "cuda" or not torch.cuda.is_available():
        raise SystemExit("no CUDA device: these checks need a GPU")
    if args.check == "sync":
        return check_sync(device, args.steps or 20)
    return check_kernels(device, args.steps or 10)


if __name__ == "__main__":
    sys.exit(main())
