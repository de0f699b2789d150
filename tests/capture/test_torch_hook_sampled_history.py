"""Sampled update/distance history: above `history_max_fraction` of a device's memory the hook keeps copies of a
fixed sample of each parameter only, estimates update_l2 and distance_l2 from it without bias, and says so in
the catalogue and in `trainguard inspect`."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from trainguard.capture.torch import _sampled
from trainguard.capture.torch._kernel_path import KernelPath
from trainguard.capture.torch._multi_path import MultiPath
from trainguard.capture.torch._packed import PackedPath
from trainguard.capture.torch._worker_path import WorkerPath
from trainguard.commands import inspect

N = 300_007
"""Not a multiple of the sample size: strata of two widths."""


def test_the_sample_is_fixed_by_name_and_size_stratified_and_its_weights_sum_to_the_size() -> None:
    index, weight = _sampled.sample_index("h.0.attn.weight", N)
    again, _ = _sampled.sample_index("h.0.attn.weight", N)
    other, _ = _sampled.sample_index("h.1.attn.weight", N)
    m = _sampled.sample_size(N)
    assert m == -(-N // 64) and len(index) == m
    np.testing.assert_array_equal(index, again)  # deterministic: a restarted run samples the same elements
    assert not np.array_equal(index, other)
    bounds = (np.arange(m + 1) * N) // m
    assert ((index >= bounds[:-1]) & (index < bounds[1:])).all()  # one element per stratum
    assert weight.sum() == N and set(np.unique(weight)) == {N // m, N // m + 1}
    assert _sampled.sample_size(1000) == 1000 and _sampled.sample_size(100_000) == 4096  # all, then >= 4,096
    np.testing.assert_array_equal(_sampled.sample_index("b", 1000)[0], np.arange(1000))


def test_the_group_sums_of_cuda_and_of_the_cpu_agree() -> None:
    # CUDA sums a group's weighted squared differences with `multi_stats` (its sum of squares over one slice per
    # tensor), the CPU with `segment_reduce`: the same estimates, here both run on CPU tensors
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(n, generator=g) for n in (N, 5000, 777)]
    names = ["a", "b", "c"]
    both = [_sampled.SampledHistory(names, xs, multi=multi) for multi in (False, True)]
    for h in both:
        h.estimate(xs)
    for _ in range(3):
        for x in xs:
            x += 0.01 * torch.randn(x.shape, generator=g)
            x[::97] = 0.0  # some elements move far, some not at all
        got = [h.estimate(xs) for h in both]
        assert got[1].shape == (3, 2) and got[1].dtype == torch.float64
        np.testing.assert_allclose(got[1].numpy(), got[0].numpy(), rtol=1e-5)


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed")
def test_the_group_gathers_its_samples_in_one_kernel_with_the_same_estimates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the gather and the differences are `multi_sample_diff`: one Triton launch for the group (on the CPU under
    # Triton's interpreter here), bitwise what `torch.take` per tensor and torch's arithmetic give; the sums stay
    # `segment_reduce`'s on both sides
    from trainguard.capture.torch import _multi_kernel

    g = torch.Generator().manual_seed(2)
    xs = [torch.randn(n, generator=g) for n in (N, 5000, 777)]
    got = []
    for interpret in ("0", "1"):
        monkeypatch.setenv("TRITON_INTERPRET", interpret)
        h = _sampled.SampledHistory(["a", "b", "c"], xs, multi=False)
        h.estimate(xs)
        got.append(h.estimate([x * 1.01 for x in xs]))
    assert any(key[2] == tuple(h.sizes) for key in _multi_kernel._sample_layouts), "the kernel ran"
    assert torch.equal(got[0], got[1]) and got[0][:, 0].gt(0).all()


def test_the_estimate_is_unbiased_within_the_standard_error_of_its_sample() -> None:
    # iid Gaussian updates: the estimate's relative standard deviation is sqrt(2/|S|)
    g = torch.Generator().manual_seed(0)
    w = torch.randn(N, generator=g)
    first = w.clone()
    history = _sampled.SampledHistory(["w"], [w])
    assert math.isnan(float(history.estimate([w])[0, 0]))  # no previous copy on the first saved step
    m = _sampled.sample_size(N)
    sd = math.sqrt(2 / m)
    ratios = []
    for _ in range(40):
        prev = w.clone()
        w += 0.01 * torch.randn(N, generator=g)
        upd, dist = history.estimate([w])[0].tolist()
        exact_upd = float((w - prev).double().square().sum())
        exact_dist = float((w - first).double().square().sum())
        assert abs(upd / exact_upd - 1) < 5 * sd, (upd, exact_upd)
        assert abs(dist / exact_dist - 1) < 5 * sd, (dist, exact_dist)
        ratios.append(upd / exact_upd)
    assert abs(np.mean(ratios) - 1) < 4 * sd / math.sqrt(len(ratios))  # no bias beyond the sampling noise


def test_a_bfloat16_tensor_is_read_in_its_dtype_and_compared_in_float32() -> None:
    # 1,000 elements: the sample is the whole tensor, so the estimate is the exact value
    w = torch.randn(1000, generator=torch.Generator().manual_seed(2)).to(torch.bfloat16)
    first = w.clone()
    history = _sampled.SampledHistory(["w"], [w])
    history.estimate([w])
    prev = w.clone()
    w += 0.05
    upd, dist = history.estimate([w])[0].tolist()
    assert history.prev is not None and history.prev.dtype == torch.float32
    exact_upd = float((w.double() - prev.double()).square().sum())
    exact_dist = float((w.double() - first.double()).square().sum())
    np.testing.assert_allclose([upd, dist], [exact_upd, exact_dist], rtol=1e-5)


def _stratified_sd(d2: np.ndarray) -> float:
    """The exact standard deviation of the one-per-stratum estimate of sum(d2) over the random draws."""
    n = d2.size
    m = _sampled.sample_size(n)
    bounds = (np.arange(m + 1) * n) // m
    widths = np.diff(bounds).astype(np.float64)
    mean = np.add.reduceat(d2, bounds[:-1]) / widths
    var = np.add.reduceat(d2 * d2, bounds[:-1]) / widths - mean**2
    return float(np.sqrt(np.sum(widths**2 * np.maximum(var, 0.0))))


MODES = {
    "kernel": ({}, KernelPath),
    "worker": ({"native_stats": False}, WorkerPath),
    "packed": ({"native_stats": False, "stats_worker": False}, PackedPath),
    "multi": ({"native_stats": False, "stats_worker": False}, MultiPath),  # the GPU path, Triton interpreted
}


@pytest.mark.parametrize("mode", MODES)
def test_a_hook_over_its_history_bound_writes_sampled_update_and_distance_and_says_so(
    file_uri: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, path = MODES[mode]
    if mode == "multi":
        pytest.importorskip("triton")
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    torch.manual_seed(0)
    # 0.weight: 131,072 elements (8,192 under Triton's interpreter, which is slow); 4,096 sampled either way
    inputs, hidden = (64, 128) if mode == "multi" else (256, 512)
    model = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    seen: dict[int, dict[str, np.ndarray]] = {}
    g = torch.Generator().manual_seed(1)
    with tg.Hook(file_uri, save_interval=1, history_max_fraction=0.0, **settings) as hook:
        hook.register_module(model)
        hook.register_optimizer(opt)
        assert isinstance(hook._paths.current, path)
        for step in range(4):
            x = torch.randn(32, inputs, generator=g)
            y = torch.randint(0, 4, (32,), generator=g)
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            assert hook.wait_idle()
            seen[step] = {n: p.detach().double().numpy().copy() for n, p in model.named_parameters()}
        # memory: no full-size copy anywhere, only the samples
        plan = hook._plan
        assert all(p.history is None and p.sampled for p in plan.params)
        assert all(not packer._history for packer in hook._paths.packed._packers.values())
        held = sum(s.prev.numel() + s.first.numel() for s in plan.samplers.values() if s.prev is not None)
        sizes = {n: _sampled.sample_size(p.numel()) for n, p in model.named_parameters()}
        assert held == 2 * sum(sizes.values()) and sizes["0.weight"] == 4096
    assert hook.errors == []
    run = trainguard.open_run(file_uri)
    marked = {t.name: (t.history, t.history_sample) for t in run.tensors("weights") + run.tensors("biases")}
    numels = {n: p.numel() for n, p in model.named_parameters()}
    # a tensor whose sample is all of it is exact, and not marked
    assert marked == {n: ("sampled", sizes[n]) if sizes[n] < numels[n] else (None, None) for n in sizes}
    assert marked["0.weight"] == ("sampled", 4096) and marked["0.bias"] == (None, None)
    for name in sizes:
        upd = run.series(name, "update_l2").values.astype(np.float64)
        dist = run.series(name, "distance_l2").values.astype(np.float64)
        assert math.isnan(upd[0])
        for s in range(1, 4):
            for got, ref in ((upd[s], seen[s - 1][name]), (dist[s], seen[0][name])):
                d2 = np.square(seen[s][name] - ref).reshape(-1)
                exact = d2.sum()
                # within 5 standard deviations of the sample's draw (0 where the sample is the whole tensor),
                # plus the float32 rounding of the copies and the column
                bound = 5 * _stratified_sd(d2) + 1e-4 * exact + 1e-12
                assert abs(got**2 - exact) <= bound, (name, s, got**2, exact, bound)
    summary = inspect.summarize(run)
    assert summary.ranks[0].sampled_history == sorted(n for n in sizes if sizes[n] < numels[n])
    assert "estimated" in inspect.render_text(summary)


def test_below_the_bound_update_and_distance_stay_exact_and_unmarked(file_uri: str) -> None:
    model = nn.Sequential(nn.Linear(8, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tg.Hook(file_uri, save_interval=1) as hook:  # 10% of this host's memory: far above 2 x 144 bytes
        hook.register_module(model)
        hook.register_optimizer(opt)
        for _ in range(2):
            opt.zero_grad()
            model(torch.randn(2, 8)).sum().backward()
            opt.step()
        assert not any(p.sampled for p in hook._plan.params) and not hook._plan.samplers
    run = trainguard.open_run(file_uri)
    assert all(t.history is None for t in run.tensors())
    assert inspect.summarize(run).ranks[0].sampled_history == []
