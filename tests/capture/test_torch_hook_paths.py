"""The hook chooses how a saved step is read when a module is registered, and chooses again when the
model changes dtype or device afterwards (`.double()`, `.to(device)`, before the first step or mid-run):
every saved step is still written, with every column right."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from tests.capture.test_torch_statistics import assert_columns_match
from tests.capture.torch_loop import mlp
from trainguard.capture.torch._kernel_path import KernelPath
from trainguard.capture.torch._multi_path import MultiPath, runs_on
from trainguard.capture.torch._packed import PackedPath
from trainguard.capture.torch._step import Path
from trainguard.capture.torch._worker_path import WorkerPath
from trainguard.store import run_format, stats

UPDATE = run_format.COLUMN["update_l2"]


def _steps(
    hook: tg.Hook, model: nn.Module, opt: torch.optim.Optimizer, steps: range, seen: dict[int, np.ndarray]
) -> None:
    """Train `steps` on inputs of the model's dtype and device; note `0.weight` after each optimizer step."""
    weight = model[0].weight  # type: ignore[index]
    g = torch.Generator().manual_seed(steps.start)
    for step in steps:
        x = torch.randn(16, 8, generator=g).to(weight.device, weight.dtype)
        y = torch.randint(0, 3, (16,), generator=g).to(weight.device)
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        assert hook.wait_idle(), "the statistics worker keeps up: no saved step is skipped"
        seen[step] = weight.detach().cpu().double().numpy().copy()


def _assert_weights_match(uri: str, seen: dict[int, np.ndarray], restarts: list[int]) -> None:
    """Every column of `0.weight` at every step against numpy; update tracking starts again at `restarts`
    (the first step, and each step after the parameters changed device or dtype)."""
    run = trainguard.open_run(uri)
    steps = sorted(seen)
    assert run.series("0.weight", "l2").steps.tolist() == steps
    assert run.series("grad/0.weight", "l2").steps.tolist() == steps
    got = np.stack([run.series("0.weight", col).values for col in run_format.STAT_COLUMNS], 1)
    for i, s in enumerate(steps):
        first = max(r for r in restarts if r <= s)
        want = stats.tier0(seen[s], prev=None if s == first else seen[s - 1], first=seen[first])
        if s == first:
            want[UPDATE] = np.nan
        assert_columns_match(got[i, :UPDATE], want[:UPDATE], f"0.weight at step {s}")
        np.testing.assert_allclose(  # the saved copies may be float32 roundings of float64 weights
            got[i, UPDATE:], want[UPDATE:], rtol=1e-4, atol=1e-6, equal_nan=True, err_msg=f"step {s}"
        )


def test_the_path_is_chosen_when_the_module_is_registered(file_uri: str) -> None:
    with tg.Hook(file_uri, save_interval=1) as hook:
        hook.register_module(mlp())  # float32 on CPU: the C kernel reads every parameter
        assert isinstance(hook._paths.current, KernelPath) and hook._native_plan is not None
    with tg.Hook(f"{file_uri}-torch", save_interval=1, native_stats=False) as hook:
        assert hook._worker is None
        hook.register_module(mlp())  # CPU tensors without the kernel: the statistics worker
        assert isinstance(hook._paths.current, WorkerPath) and hook._worker is not None
    with tg.Hook(f"{file_uri}-thread", save_interval=1, native_stats=False, stats_worker=False) as hook:
        hook.register_module(mlp())
        assert isinstance(hook._paths.current, PackedPath) and hook._worker is None


def _train_through(uri: str, phases: list[tuple[Callable[[nn.Module], object], type[Path]]]) -> None:
    """Register a float32 MLP on CPU (the kernel's path is chosen), then per phase convert or move it and
    train three steps, which the phase's path must have taken; then check every step's columns."""
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    seen: dict[int, np.ndarray] = {}
    with tg.Hook(uri, save_interval=1, tier1_interval=1000, collections=["weights", "gradients"]) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        assert isinstance(hook._paths.current, KernelPath)
        for i, (change, path) in enumerate(phases):
            change(model)
            _steps(hook, model, opt, range(3 * i, 3 * i + 3), seen)
            assert isinstance(hook._paths.current, path), (i, hook._paths.current)
    assert hook.errors == [] and hook.skipped_steps == 0
    _assert_weights_match(uri, seen, restarts=[3 * i for i in range(len(phases))])


def test_a_model_converted_after_registration_is_read_as_it_is_at_each_saved_step(file_uri: str) -> None:
    # to float64 before the first step (the worker's path), back to float32 mid-run (the kernel's) and
    # to float64 again: each saved step checks
    _train_through(
        file_uri,
        [(nn.Module.double, WorkerPath), (nn.Module.float, KernelPath), (nn.Module.double, WorkerPath)],
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_model_moved_to_the_gpu_after_registration_and_mid_run_is_read_where_it_is(file_uri: str) -> None:
    # to the GPU before the first step (the multi-tensor path, or the packed one without Triton), back to the
    # CPU mid-run and to the GPU again
    def to(device: str) -> Callable[[nn.Module], object]:
        return lambda model: model.to(device)

    gpu: type[Path] = MultiPath if runs_on(torch.device("cuda")) else PackedPath
    _train_through(file_uri, [(to("cuda"), gpu), (to("cpu"), KernelPath), (to("cuda"), gpu)])
