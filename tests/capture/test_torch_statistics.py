"""Every statistic column of the device path against the numpy reference `store.stats`.

Both device paths (the packed buffer for small tensors, one-by-one reduction for large ones)
on CPU, and on CUDA when one is present, for float32, float16, bfloat16 and the fp8 dtypes of
this torch, with NaN, Inf, zeros, empty and constant tensors; update/distance over saved steps;
per-unit activity and log2 histograms.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from trainguard.capture.torch import device_stats as torch_stats
from trainguard.store import run_format, stats

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DTYPES = [torch.float32, torch.float16, torch.bfloat16] + [
    getattr(torch, name) for name in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, name)
]
RTOL = 2e-5


def sample_tensors(dtype: torch.dtype) -> list[torch.Tensor]:
    """Tensors that exercise every column: signs, offsets, NaN, +-Inf, zeros, empty, constant, >2 rows,
    and extremes of 0 with and without real zeros (the padding check of `Packed.reduce`)."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(300, generator=g) * 3 + 1
    a[3] = float("nan")
    b = torch.randn(1030, generator=g)
    b[7], b[9], b[1000] = float("inf"), 0.0, -float("inf")
    c = torch.randn(3, 4, 5, generator=g) - 5  # all negative: padding must not leak into max
    d = torch.rand(2, 70, generator=g) + 2  # all positive: padding must not leak into min
    e = torch.full((600,), 0.1)  # constant: std must be 0, not rounding noise
    f = torch.ones(65) * 7 + torch.randn(65, generator=g) * 1e-3  # mean >> std
    r = torch.relu(torch.randn(100, generator=g))  # min 0 from real zeros: padding changes nothing
    z = -torch.rand(70, generator=g) - 1
    z[5] = 0.0  # max 0 from a real zero
    tensors = [a, torch.randn(5, generator=g), torch.zeros(7), b, torch.zeros(0), c, d, e, f, r, z]
    return [t.to(dtype) for t in tensors]


def reference(t: torch.Tensor, **kw: torch.Tensor | None) -> np.ndarray:
    arrays = {k: (None if v is None else v.float().cpu().numpy()) for k, v in kw.items()}
    return stats.tier0(t.float().cpu().numpy(), **arrays)


def assert_columns_match(got: np.ndarray, want: np.ndarray, name: str = "") -> None:
    np.testing.assert_array_equal(got[..., :4], want[..., :4], err_msg=name)  # count nan inf zero are exact
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-6, equal_nan=True, err_msg=name)


@pytest.mark.parametrize("host_finish", [True, False], ids=["host-finish", "device-finish"])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_packed_statistics_match_numpy_for_every_column(
    device: str, dtype: torch.dtype, host_finish: bool
) -> None:
    tensors = [t.to(device) for t in sample_tensors(dtype)]
    packed = torch_stats.Packed(torch.device(device), width=64, host_finish=host_finish)
    layout = packed.layout(tuple(t.numel() for t in tensors))
    packed.load(layout, tensors)
    raw = torch_stats.to_host(packed.reduce(layout, tracked=0))
    got = torch_stats.finish(raw, np.array([t.numel() for t in tensors]))
    assert_columns_match(got, np.stack([reference(t) for t in tensors]))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_large_tensor_statistics_match_numpy_for_every_column(device: str, dtype: torch.dtype) -> None:
    tensors = [t.to(device) for t in sample_tensors(dtype)]
    rows = [torch_stats.to_host(torch_stats.reduce_large(t)) for t in tensors]
    got = torch_stats.finish(np.stack(rows), np.array([t.numel() for t in tensors]))
    assert_columns_match(got, np.stack([reference(t) for t in tensors]))


@pytest.mark.parametrize("device", DEVICES)
def test_a_large_tensor_accumulated_in_float32_keeps_its_mean_and_a_small_spread_around_a_large_mean(
    device: str,
) -> None:
    # 4M values of 7 + N(0, 1e-3): a one-pass float32 variance (sum of squares - sum^2/n) loses every digit
    # here; the mean and std must stay within the float32 columns' own precision
    g = torch.Generator().manual_seed(3)
    t = (7 + torch.randn(1 << 22, generator=g) * 1e-3).to(device)
    got = torch_stats.finish(
        torch_stats.to_host(torch_stats.reduce_large(t))[None, :], np.array([t.numel()])
    )[0]
    x = t.cpu().numpy().astype(np.float64)
    mean, std = got[run_format.COLUMN["mean"]], got[run_format.COLUMN["std"]]
    assert abs(mean - x.mean()) <= 1e-6 * np.abs(x).mean()
    assert abs(std - x.std()) <= 1e-4 * x.std()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_histograms_match_numpy_on_both_paths(device: str, dtype: torch.dtype) -> None:
    tensors = [t.to(device) for t in sample_tensors(dtype)]
    tensors.append(
        torch.tensor([1e-42, -3e-39, 2.0**-39, 2.0**23, 1e30]).to(device)
    )  # denormals, clamped bins
    packed = torch_stats.Packed(torch.device(device), width=64)
    layout = packed.layout(tuple(t.numel() for t in tensors))
    packed.load(layout, tensors)
    want = np.stack([stats.log2_hist(t.float().cpu().numpy()) for t in tensors])
    raw = packed.reduce(layout, tracked=0)
    np.testing.assert_array_equal(torch_stats.to_host(packed.histograms(layout, raw)), want)
    for t, w in zip(tensors, want):
        got = torch_stats.histogram(t, torch_stats.reduce_large(t))
        np.testing.assert_array_equal(torch_stats.to_host(got), w)


@pytest.mark.parametrize("host_finish", [True, False], ids=["host-finish", "device-finish"])
@pytest.mark.parametrize("device", DEVICES)
def test_update_and_distance_follow_the_saved_steps_on_both_paths(device: str, host_finish: bool) -> None:
    g = torch.Generator().manual_seed(1)
    params = [torch.randn(50, generator=g).to(device), torch.randn(8, 9, generator=g).to(device)]
    frozen = torch.randn(10, generator=g).to(device)
    packed = torch_stats.Packed(torch.device(device), width=32, host_finish=host_finish)
    histories = [torch_stats.new_history(p) for p in params]
    snapshots = [[p.clone() for p in params]]
    for step in range(4):
        tensors = params + [frozen]
        layout = packed.layout(tuple(t.numel() for t in tensors))
        packed.load(layout, tensors)
        got = torch_stats.finish(
            torch_stats.to_host(packed.reduce(layout, tracked=2)), np.array([t.numel() for t in tensors])
        )
        large = torch_stats.finish(
            np.stack(
                [torch_stats.to_host(torch_stats.reduce_large(p, h)) for p, h in zip(params, histories)]
            ),
            np.array([p.numel() for p in params]),
        )
        prev = snapshots[-2] if step else [None, None]
        want = np.stack([reference(p, prev=q, first=f) for p, q, f in zip(params, prev, snapshots[0])])
        assert_columns_match(got[:2], want)
        assert_columns_match(large, want)
        assert np.isnan(got[2, -2:]).all(), "an untracked tensor has no update/distance"
        for p in params:
            p.add_(torch.randn(p.shape, generator=g).to(device) * 0.1)
        snapshots.append([p.clone() for p in params])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["relu", "gelu", "sigmoid", "tanh"])
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [((4, 6, 3, 5), torch.float32), ((4, 6, 3, 5), torch.bfloat16), ((7,), torch.float32)],
    ids=["4d", "4d-bf16", "1d"],
)
def test_per_unit_vectors_match_numpy_with_units_on_dim_1(
    device: str, kind: str, shape: tuple[int, ...], dtype: torch.dtype
) -> None:
    """bf16: "active" compares in bf16 (x > 0 is exact in any dtype), saturation in float32, as numpy here."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(*shape, generator=g) * 4
    out = {
        "relu": torch.relu,
        "gelu": torch.nn.functional.gelu,
        "sigmoid": torch.sigmoid,
        "tanh": torch.tanh,
    }[kind](x).to(dtype)
    result = torch_stats.unit_vector(out.to(device), kind)
    assert result is not None
    want = stats.unit_activity(out.float().numpy(), kind)
    assert want is not None and result[0] == want[0]
    np.testing.assert_allclose(torch_stats.to_host(result[1]), want[1], rtol=1e-6)
    assert torch_stats.unit_vector(out, "softmax") is None


# Ops that read a device value back to the host (a sync on accelerators): `.item()`/`float()` run
# `_local_scalar_dense`; CUDA's `bincount` reads the code range; `nonzero` its output size.
SYNCING_OPS = {"aten::_local_scalar_dense", "aten::item", "aten::bincount", "aten::nonzero"}


def test_the_accelerator_branch_of_a_saved_step_reads_nothing_back_before_its_one_copy() -> None:
    """The branch-free path accelerators take (`host_finish=False`), profiled on CPU: statistics with
    update/distance, per-unit moved shares and histograms of a Tier-1 step, with no op that syncs."""
    g = torch.Generator().manual_seed(2)
    params = [torch.randn(64, 40, generator=g), torch.randn(40, generator=g)]
    acts = [torch.relu(torch.randn(32, 64, generator=g))]
    packed = torch_stats.Packed(torch.device("cpu"), width=64, host_finish=False)
    tensors = params + acts
    layout = packed.layout(tuple(t.numel() for t in tensors))
    for step in range(3):  # the first saved step has no previous copy: profile later ones too
        if step:
            params[0].add_(0.01)
        packed.load(layout, tensors)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            moved = packed.moved(layout, 2, (64, 0))
            raw = packed.reduce(layout, tracked=2)
            hists = packed.histograms(layout, raw)
        ops = {e.name for e in prof.events()}
        assert not ops & SYNCING_OPS, f"step {step}: {sorted(ops & SYNCING_OPS)}"
        assert "aten::segment_reduce" in ops and "aten::scatter_add_" in ops  # the profile saw the branch
    want = np.stack([stats.log2_hist(t.numpy()) for t in tensors])
    np.testing.assert_array_equal(torch_stats.to_host(hists), want)
    assert torch_stats.to_host(moved).tolist() == [1.0] * 64


def test_bin_counts_agree_on_both_branches() -> None:
    codes = torch.randint(0, 50, (1000,), generator=torch.Generator().manual_seed(3), dtype=torch.int32)
    host = torch_stats.bin_counts(codes, 64, host=True)
    device = torch_stats.bin_counts(codes, 64, host=False)
    assert host.dtype == device.dtype == torch.int64
    assert device.tolist() == host.tolist() == np.bincount(codes.numpy(), minlength=64).tolist()
