"""The host-time benchmark measures the GPU path's host work on the CPU, on the training and the delivery thread,
and leaves the process as it found it."""

from __future__ import annotations

import os

from benchmarks import hook_host_time
from trainguard.capture.torch import _multi_kernel


def test_the_host_time_benchmark_times_the_hook_bodies_of_each_setup_and_restores_the_kernels() -> None:
    launches = (_multi_kernel.launch, _multi_kernel.launch_histograms, _multi_kernel.launch_moved)
    interpret = os.environ.get("TRITON_INTERPRET")
    rows = hook_host_time.measure(steps=3, reps=1, layers=2)
    assert list(rows) == ["no hook", "Tier-0 saved steps", "Tier-1 saved steps"]
    assert rows["no hook"][1:] == (0.0, 0.0)  # nothing hooked, nothing timed, nothing delivered
    for label in ("Tier-0 saved steps", "Tier-1 saved steps"):
        step_ms, hook_ms, delivery_ms = rows[label]
        assert 0.0 < hook_ms < step_ms, (label, rows)  # the hook bodies ran, inside the step
        assert delivery_ms > 0.0, (label, rows)  # the saved steps were written on the delivery thread
    assert (_multi_kernel.launch, _multi_kernel.launch_histograms, _multi_kernel.launch_moved) == launches
    assert os.environ.get("TRITON_INTERPRET") == interpret
