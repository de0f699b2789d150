"""Host time the hook spends per saved step on the GPU path, without the device: the cost a host-paced GPU job pays.

    python -m benchmarks.hook_host_time [--steps 40] [--reps 5] [--layers 12]

A GPU training step whose host enqueues kernels more slowly than the device runs them (the GPU
benchmark's 110M GPT: 987 launches, the device busy 14 of 20 ms) pays the hook's host work in full.
That work is Python and torch calls, which the CPU runs the same with or without a GPU: this
benchmark runs the multi-tensor path (the path CUDA tensors take, `_multi_path`) on the CPU, the
Triton kernels' launches replaced by a zeroing of their outputs (what is left is the host work around them: grouping,
checks, row reservations, the results' layout, the step's finishing and writing) and the CPU results taking
the CUDA way to the host (`_transfer.PinnedStaging`: a slot's copy, then a poll that finds it done,
`ProxyStaging`) rather than being written at once as CPU results are, on the GPU
benchmark's GPT module tree (`hook_overhead_gpu.gpt`: 12 blocks, 150 parameters, AdamW, bf16
autocast) at width 32, so that the tensors' own arithmetic is negligible beside the Python.

It measures the thread CPU time (not wall time: the load of this shared VM does not enter) of
every hook body (the forward pre-hook, the activations' forward hooks, the optimizer's pre- and
post-hooks, `record_scalar`) per step, at save_interval 1, Tier-0 steps (`tier1_interval` beyond
the run) and Tier-1 steps (`tier1_interval` 1) apart, and the plain step's thread CPU time beside
it: "x plain" is the hooked step (plain step + hook bodies) over the plain step. A saved step's rows are
finished and written on the transfer's delivery thread, beside the training thread: its CPU time per step
is the last column, apart (on a GPU host it runs while the training thread waits in torch's C++ code with
the GIL released; here it also competes for the cores). Medians over `--reps` repetitions of `--steps`
steps after a warm-up (the delivery thread: the median over repetitions of its time per step).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

import trainguard.torch as tg
from benchmarks.hook_overhead_gpu import gpt
from trainguard.capture.torch import _multi_kernel, _transfer

WIDTH = 32


@contextlib.contextmanager
def gpu_path_without_launches() -> Iterator[None]:
    """The multi-tensor path serves CPU tensors (as under Triton's interpreter) and its kernels' launches only
    zero their outputs (a launch's place: what they would compute is not the host's work); restored after."""
    saved = (
        os.environ.get("TRITON_INTERPRET"),
        (
            _multi_kernel.launch,
            _multi_kernel.launch_histograms,
            _multi_kernel.launch_moved,
        ),
    )

    def stats(xs: object, prevs: object, firsts: object, out: torch.Tensor) -> None:
        out.zero_()

    def hists(xs: object, out: torch.Tensor, bins: int, low: int) -> None:
        out.zero_()

    def moved(xs: object, prevs: object, out: torch.Tensor) -> None:
        out.zero_()

    os.environ["TRITON_INTERPRET"] = "1"
    _multi_kernel.launch, _multi_kernel.launch_histograms, _multi_kernel.launch_moved = stats, hists, moved
    try:
        yield
    finally:
        if saved[0] is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = saved[0]
        _multi_kernel.launch, _multi_kernel.launch_histograms, _multi_kernel.launch_moved = saved[1]


class ProxyStaging(_transfer.PinnedStaging):
    """The CUDA staging on CPU tensors: plain host buffers, and every copy done when it returns (a device that keeps
    up), so the step is written where a GPU's would be."""

    pin_memory = False

    def record(self, device: torch.device) -> _transfer.Marker:
        return _transfer.DONE


class _Clock:
    """Thread CPU time spent in the wrapped callables since the last `take`."""

    def __init__(self) -> None:
        self.ns = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: object, **kwargs: object) -> Any:
            started = time.thread_time_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                self.ns += time.thread_time_ns() - started

        return timed

    def take(self) -> float:
        ms, self.ns = self.ns / 1e6, 0
        return ms


def _instrument(module: torch.nn.Module, opt: torch.optim.Optimizer, clock: _Clock) -> None:
    """Wrap every hook body the hook registered on `module`'s tree and `opt` in `clock`."""
    for m in module.modules():
        for hooks in (m._forward_hooks, m._forward_pre_hooks):
            for key, fn in list(hooks.items()):
                hooks[key] = clock.wrap(fn)
    for hooks in (opt._optimizer_step_pre_hooks, opt._optimizer_step_post_hooks):
        for key, fn in list(hooks.items()):
            hooks[key] = clock.wrap(fn)


def measure(steps: int, reps: int, layers: int) -> dict[str, tuple[float, float, float]]:
    """{setup: (median step thread CPU ms, median hook thread CPU ms per step, delivery thread CPU ms per step)}."""
    with gpu_path_without_launches():
        return _measure(steps, reps, layers)


def _measure(steps: int, reps: int, layers: int) -> dict[str, tuple[float, float, float]]:
    device = torch.device("cpu")
    setups: dict[str, tuple[Callable[[], torch.Tensor], tg.Hook | None, _Clock, _transfer.Transfer]] = {}
    for label, tier1_interval in (
        ("no hook", None),
        ("Tier-0 saved steps", 10**9),
        ("Tier-1 saved steps", 1),
    ):
        module, opt, step = gpt(device, width=WIDTH, layers=layers, seq=8, batch=2, vocab=64)
        clock = _Clock()
        hook = None
        transfer = _transfer.Transfer(staging=lambda device: ProxyStaging())
        if tier1_interval is not None:
            hook = tg.Hook(
                f"file://{tempfile.mkdtemp(prefix='tg-host-')}/run",
                save_interval=1,
                tier1_interval=tier1_interval,
                native_stats=False,  # the C kernel would take CPU tensors: the GPU path is measured
                stats_worker=False,
                transfer=transfer,
            )
            hook.register_module(module)
            hook.register_optimizer(opt)
            _instrument(module, opt, clock)
        setups[label] = (step, hook, clock, transfer)
    samples: dict[str, tuple[list[float], list[float], list[float]]] = {k: ([], [], []) for k in setups}
    for rep in range(reps + 1):  # the first repetition warms up
        for label, (step, hook, clock, transfer) in setups.items():
            record = clock.wrap(hook.record_scalar) if hook is not None else None
            transfer.drain(10.0)
            delivered = transfer.delivery_cpu_seconds
            for _ in range(steps):
                clock.take()
                started = time.thread_time_ns()
                loss = step()
                if record is not None:
                    record("loss", loss)
                total = (time.thread_time_ns() - started) / 1e6
                if rep:
                    samples[label][0].append(total)
                    samples[label][1].append(clock.take())
            transfer.drain(10.0)  # the steps' deliveries, outside the timed steps
            if rep:
                samples[label][2].append((transfer.delivery_cpu_seconds - delivered) * 1e3 / steps)
    for _, hook, _, _ in setups.values():
        if hook is not None:
            assert hook.errors == [], hook.errors
            hook.close()
    return {
        k: (statistics.median(t), statistics.median(h), statistics.median(d))
        for k, (t, h, d) in samples.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--layers", type=int, default=12)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = measure(args.steps, args.reps, args.layers)
    plain = rows["no hook"][0]
    print(
        f"GPT module tree of {args.layers} blocks at width {WIDTH}, save_interval 1, thread CPU time per step, "
        f"medians of {args.reps} x {args.steps} steps"
    )
    print("| setup | step ms | hook bodies ms | x plain | delivery thread ms |")
    print("|---|---|---|---|---|")
    for label, (total, ours, delivery) in rows.items():
        print(f"| {label} | {total:.2f} | {ours:.2f} | {(plain + ours) / plain:.3f} | {delivery:.2f} |")


if __name__ == "__main__":
    main()
