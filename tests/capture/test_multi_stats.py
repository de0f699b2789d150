"""The multi-tensor ops `trainguard::multi_stats`, `multi_hist` and `multi_moved` against the numpy references of
`store.stats`, and `multi_sample_diff` (sampled update/distance) against `torch.take` and torch's arithmetic.

Its plain torch implementation (`_reference`) and its one-launch Triton kernel: on CPU through
Triton's interpreter (small tensors: the interpreter runs each block in numpy, with blocks of 128
and work items of 512 elements), and on CUDA where one is present. The op's fake implementation
under FakeTensorMode with fake CUDA tensors (one op, nothing read back), and the op inside
`torch.compile(fullgraph=True)`.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

from trainguard.capture.torch import _multi
from trainguard.capture.torch import device_stats as torch_stats
from trainguard.store import stats

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
RTOL = 2e-5
needs_triton = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None, reason="Triton is not installed"
)


each_way = pytest.mark.parametrize(
    "kernel", [False, pytest.param(True, marks=needs_triton)], ids=["torch", "kernel"]
)
"""The op's torch implementation and its Triton kernel (on the CPU under Triton's interpreter)."""
every_dtype = pytest.mark.parametrize("dtype", [*DTYPES, torch.float64], ids=str)


KERNEL_DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=KERNEL_DEVICES)
def kernel_device(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Where the op runs its Triton kernel: CPU through Triton's interpreter (read at each call), CUDA."""
    device = request.param
    if device == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert _multi.available(torch.device(device))
    return str(device)


def sample_tensors(dtype: torch.dtype) -> list[torch.Tensor]:
    """Signs, offsets, NaN, +-Inf, zeros, a constant, the mean >> std trap, 5 elements to several chunks."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(300, generator=g) * 3 + 1
    a[3] = float("nan")
    b = torch.randn(1030, generator=g)
    b[7], b[9], b[1000] = float("inf"), 0.0, -float("inf")
    c = torch.randn(3, 4, 5, generator=g) - 5
    e = torch.full((600,), 0.1)  # constant: std must be 0, not rounding noise
    f = torch.ones(700) * 7 + torch.randn(700, generator=g) * 1e-3  # mean >> std: one-pass variance fails
    r = torch.relu(torch.randn(256, generator=g))  # whole blocks only
    inf_only = torch.randn(40, generator=g)
    inf_only[2] = float("inf")
    tensors = [a, torch.randn(5, generator=g), torch.zeros(7), b, c, e, f, r, inf_only]
    return [t.to(dtype) for t in tensors]


def reference(t: torch.Tensor, **kw: torch.Tensor | None) -> np.ndarray:
    arrays = {k: (None if v is None else v.float().cpu().numpy()) for k, v in kw.items()}
    return stats.tier0(t.float().cpu().numpy(), **arrays)


def columns(raw: torch.Tensor, tensors: list[torch.Tensor]) -> np.ndarray:
    return torch_stats.finish(raw.cpu().numpy(), np.array([t.numel() for t in tensors]))


def assert_columns_match(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_array_equal(got[..., :4], want[..., :4])  # count nan inf zero are exact
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-6, equal_nan=True)


def run_op(
    xs: list[torch.Tensor], prevs: tuple[torch.Tensor, ...] = (), firsts: tuple[torch.Tensor, ...] = ()
) -> torch.Tensor:
    out = torch.full((len(xs), _multi.WIDTH), -1.0, dtype=torch.float64, device=xs[0].device)
    torch.ops.trainguard.multi_stats(xs, list(prevs), list(firsts), out)
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_torch_implementation_matches_numpy_for_every_column(dtype: torch.dtype) -> None:
    tensors = sample_tensors(dtype)
    out = torch.empty(len(tensors), _multi.WIDTH, dtype=torch.float64)
    _multi._reference(tensors, [], [], out)
    assert_columns_match(columns(out, tensors)[:, :10], np.stack([reference(t) for t in tensors])[:, :10])
    assert (out[:, torch_stats.UPD :] == 0).all(), "no history: update and distance are 0"


def test_the_torch_implementation_measures_update_and_distance_and_refreshes_prev() -> None:
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(50, generator=g), torch.randn(4, 30, generator=g).to(torch.bfloat16)]
    firsts = [x + torch.randn(x.shape, generator=g).to(x.dtype) for x in xs]
    prevs = [x + 0.5 for x in xs]
    old = [p.clone() for p in prevs]
    out = torch.empty(len(xs), _multi.WIDTH, dtype=torch.float64)
    _multi._reference(xs, prevs, firsts, out)
    want = np.stack([reference(x, prev=p, first=f) for x, p, f in zip(xs, old, firsts)])
    assert_columns_match(columns(out, xs), want)
    for x, p in zip(xs, prevs):
        assert torch.equal(p, x), "prev becomes a copy of the tensor"


@pytest.mark.parametrize("kernel", [False, pytest.param(True, marks=needs_triton)], ids=["torch", "kernel"])
def test_an_empty_tensor_has_counts_zero_and_nan_moments(
    kernel: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1" if kernel else "0")
    assert _multi.available(torch.device("cpu")) == kernel
    out = run_op([torch.zeros(0), torch.ones(3), torch.zeros(0)])
    assert out[0, :3].tolist() == [0.0, 0.0, 0.0]
    assert out[0, 3:].isnan().all() and out[2, 3:].isnan().all()
    assert out[1].tolist() == pytest.approx([0, 0, 0, 1, 1, 3, 3, 3, 0, 0, 0], rel=1e-12)


class Count(TorchDispatchMode):
    """Names every op dispatched under it (`seen`)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def test_under_fake_tensors_the_op_is_one_dispatch_with_no_host_read_and_no_allocation() -> None:
    with FakeTensorMode():
        xs = [
            torch.empty(4096, 1024, device="cuda", dtype=torch.bfloat16),
            torch.empty(3, device="cuda", dtype=torch.bfloat16),
        ]
        prevs = [torch.empty_like(x) for x in xs]
        firsts = [torch.empty_like(x) for x in xs]
        out = torch.empty(len(xs), _multi.WIDTH, dtype=torch.float64, device="cuda")
        with Count() as count:
            torch.ops.trainguard.multi_stats(xs, prevs, firsts, out)
    assert count.seen == ["trainguard.multi_stats.default"]


@pytest.mark.parametrize("kernel", [False, pytest.param(True, marks=needs_triton)], ids=["torch", "kernel"])
def test_the_op_compiles_into_a_full_graph(kernel: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1" if kernel else "0")

    def step(
        xs: list[torch.Tensor], prevs: list[torch.Tensor], firsts: list[torch.Tensor], out: torch.Tensor
    ) -> None:
        torch.ops.trainguard.multi_stats(xs, prevs, firsts, out)

    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    g = torch.Generator().manual_seed(2)
    xs = [torch.randn(20, generator=g), torch.randn(3, 5, generator=g)]
    prevs = [torch.zeros_like(x) for x in xs]
    firsts = [torch.ones_like(x) for x in xs]
    out = torch.empty(2, _multi.WIDTH, dtype=torch.float64)
    compiled(xs, prevs, firsts, out)
    want = np.stack([reference(x, prev=torch.zeros_like(x), first=torch.ones_like(x)) for x in xs])
    assert_columns_match(columns(out, xs), want)
    assert all(torch.equal(p, x) for p, x in zip(prevs, xs)), "the mutation of prevs survives compilation"


def test_arguments_outside_the_definition_are_refused_with_what_to_send() -> None:
    x = torch.ones(4)
    with pytest.raises(ValueError, match="one prev and first per tensor"):
        run_op([x], (x.clone(),))
    with pytest.raises(ValueError, match="one dtype and device"):
        run_op([x, torch.ones(4, dtype=torch.float16)])
    with pytest.raises(ValueError, match="with the 4 elements of xs"):  # the kernel would write past its end
        run_op([x], (torch.ones(3),), (torch.ones(4),))
    with pytest.raises(ValueError, match="float64"):
        torch.ops.trainguard.multi_stats([x], [], [], torch.empty(1, _multi.WIDTH))


def test_the_kernel_runs_only_where_triton_can(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert not _multi.available(torch.device("cpu")), "CPU only under the interpreter"
    assert not _multi.available(torch.device("meta"))


@needs_triton
@pytest.mark.parametrize("dtype", [*DTYPES, torch.float64], ids=str)
def test_the_kernel_matches_numpy_for_every_column(kernel_device: str, dtype: torch.dtype) -> None:
    tensors = [t.to(kernel_device) for t in sample_tensors(dtype)]
    out = run_op(tensors).cpu()
    from trainguard.capture.torch import _multi_kernel  # imported by the op's first launch

    assert (tensors[0].device, tuple(t.numel() for t in tensors)) in {
        (key[0], key[3]) for key in _multi_kernel._layouts
    }, "the kernel ran (a work list was laid out), not the torch implementation"
    assert_columns_match(columns(out, tensors)[:, :10], np.stack([reference(t) for t in tensors])[:, :10])
    assert (out[:, torch_stats.UPD :] == 0).all(), "no history: update and distance are 0"
    torch_rows = torch.empty_like(out)
    _multi._reference(tensors, [], [], torch_rows)
    np.testing.assert_array_equal(
        out[:, :5].numpy(), torch_rows[:, :5].numpy()
    )  # counts and extremes are exact
    np.testing.assert_allclose(out.numpy(), torch_rows.numpy(), rtol=RTOL, atol=0, equal_nan=True)


@needs_triton
def test_the_kernel_keeps_the_spread_of_a_tensor_whose_mean_dwarfs_it(kernel_device: str) -> None:
    """7 + N(0, 1e-3): sum(x^2) - sum(x)^2 / n in float32 would be off by several times the variance."""
    g = torch.Generator().manual_seed(3)
    x = 7 + torch.randn(2000, generator=g) * 1e-3
    out = run_op([x.to(kernel_device)])[0].cpu()
    a = x.numpy().astype(np.float64)
    want = np.sum((a - a.mean()) ** 2)
    assert abs(out[torch_stats.DEV].item() - want) <= 1e-5 * want
    assert abs(out[torch_stats.SUM].item() / a.size - a.mean()) <= 1e-6 * np.abs(a).mean()


@needs_triton
def test_the_kernel_sums_squares_beyond_float32s_range_as_the_float64_reference_does(
    kernel_device: str,
) -> None:
    x = torch.tensor([3e30, -1e30, 2.0, 0.0] * 40, device=kernel_device)
    out = run_op([x], (torch.zeros_like(x),), (-x,))[0].cpu()
    x = x.cpu()
    a = x.numpy().astype(np.float64)
    want = {
        torch_stats.SQ: np.sum(a * a),
        torch_stats.UPD: np.sum(a * a),
        torch_stats.DIST: np.sum(4 * a * a),
    }
    for column, value in want.items():
        assert np.isfinite(out[column].item())
        np.testing.assert_allclose(out[column].item(), value, rtol=1e-6)
    np.testing.assert_allclose(out[torch_stats.DEV].item(), np.sum((a - a.mean()) ** 2), rtol=1e-6)


@needs_triton
@pytest.mark.parametrize("history_dtype", [torch.bfloat16, torch.float32], ids=str)
def test_the_kernel_measures_update_and_distance_and_refreshes_prev(
    kernel_device: str, history_dtype: torch.dtype
) -> None:
    g = torch.Generator().manual_seed(4)
    xs = [torch.randn(n, generator=g).to(torch.bfloat16).to(kernel_device) for n in (5, 256, 1100)]
    firsts = [(x.float() + torch.randn(x.shape, generator=g).to(kernel_device)).to(history_dtype) for x in xs]
    prevs = [(x.float() * 0.5).to(history_dtype) for x in xs]
    old = [p.clone() for p in prevs]
    out = run_op(xs, tuple(prevs), tuple(firsts))
    want = np.stack([reference(x, prev=p, first=f) for x, p, f in zip(xs, old, firsts)])
    assert_columns_match(columns(out, xs), want)
    for x, p in zip(xs, prevs):
        assert torch.equal(p, x.to(history_dtype)), "prev becomes a copy of the tensor"
    again = run_op(xs, tuple(prevs), tuple(firsts))
    assert (again[:, torch_stats.UPD] == 0).all(), "unchanged since the refresh"


@needs_triton
def test_the_kernel_is_deterministic_and_follows_tensors_that_move(kernel_device: str) -> None:
    tensors = [t.to(kernel_device) for t in sample_tensors(torch.float32)]
    first = run_op(tensors).cpu()
    np.testing.assert_array_equal(
        run_op(tensors).cpu().numpy(), first.numpy()
    )  # bitwise, NaN in the same places
    moved = [t.clone() for t in tensors]  # same layout, new addresses: a new address table
    moved[1].mul_(2)
    again = run_op(moved).cpu()
    np.testing.assert_array_equal(again[2:].numpy(), first[2:].numpy())
    assert again[1, torch_stats.MIN] == 2 * first[1, torch_stats.MIN]


def run_hist(xs: list[torch.Tensor]) -> np.ndarray:
    """`multi_hist` over `xs`, fixed up with the rows of `multi_stats` as the hook does: [T, HIST_BINS]."""
    rows = run_op(xs)
    hists = torch.full((len(xs), stats.run_format.HIST_BINS), -1.0, dtype=torch.float64, device=xs[0].device)
    torch.ops.trainguard.multi_hist(xs, hists)
    return torch_stats.fix_bins(hists, rows).cpu().numpy()


def histogram_tensors(dtype: torch.dtype) -> list[torch.Tensor]:
    """`sample_tensors` plus magnitudes at both ends of the bins (tiny, huge, denormal) and an empty tensor."""
    g = torch.Generator().manual_seed(2)
    spread = torch.randn(900, generator=g) * torch.logspace(-30, 30, 900)
    spread[::97] = 0.0
    tiny = torch.full((20,), 1e-38) if dtype == torch.float32 else torch.full((20,), 1e-7)
    return [*sample_tensors(dtype), spread.to(dtype), tiny.to(dtype), torch.empty(0, dtype=dtype)]


@each_way
@every_dtype
def test_multi_hist_matches_numpy_log2_histograms(
    kernel: bool, dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1" if kernel else "0")
    tensors = histogram_tensors(dtype)
    got = run_hist(tensors)
    want = np.stack([stats.log2_hist(t.float().numpy()) for t in tensors])
    np.testing.assert_array_equal(got, want)


@needs_triton
def test_multi_hist_kernel_matches_the_torch_implementation(kernel_device: str) -> None:
    tensors = [t.to(kernel_device) for t in histogram_tensors(torch.bfloat16)]
    out = torch.full(
        (len(tensors), stats.run_format.HIST_BINS), -1.0, dtype=torch.float64, device=kernel_device
    )
    torch.ops.trainguard.multi_hist(tensors, out)
    want = torch.empty_like(out)
    _multi._hist_reference(tensors, want)
    np.testing.assert_array_equal(out.cpu().numpy(), want.cpu().numpy())


def test_multi_hist_refuses_an_out_of_the_wrong_shape() -> None:
    with pytest.raises(ValueError, match=r"float64 \[1, 64\]"):
        torch.ops.trainguard.multi_hist([torch.ones(4)], torch.empty(2, 64, dtype=torch.float64))


@pytest.mark.parametrize("kernel", [False, pytest.param(True, marks=needs_triton)], ids=["torch", "kernel"])
def test_the_hooks_direct_call_gives_the_ops_rows_and_is_the_op_when_watched(
    kernel: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1" if kernel else "0")
    tensors = sample_tensors(torch.float32)
    direct = torch.full((len(tensors), _multi.WIDTH), -1.0, dtype=torch.float64)
    _multi.reduce_group(tensors, [], [], direct)
    np.testing.assert_array_equal(direct.numpy(), run_op(tensors).numpy())
    hists = torch.empty(len(tensors), stats.run_format.HIST_BINS, dtype=torch.float64)
    _multi.hist_group(tensors, hists)
    want = torch.empty_like(hists)
    _multi._hist_reference(tensors, want)
    np.testing.assert_array_equal(hists.numpy(), want.numpy())

    with Count() as count:  # a mode watches: the registered op, one node
        _multi.reduce_group(tensors, [], [], direct)
        _multi.hist_group(tensors, hists)
    assert count.seen == ["trainguard.multi_stats.default", "trainguard.multi_hist.default"]


def moved_tensors(dtype: torch.dtype) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Parameters and their previous copies: rows shorter and longer than a block (128 elements on the CPU
    interpreter), some rows unchanged, a NaN in both copies (it differs), -0.0 against 0.0 (equal), a float32 prev."""
    g = torch.Generator().manual_seed(5)
    xs = [
        torch.randn(300, 5, generator=g),
        torch.randn(3, 200, generator=g),
        torch.randn(7, 4, 33, generator=g),
    ]
    prevs = [x.clone() for x in xs]
    xs[0][::3] += 1.0  # every third row moved
    xs[0][1, 2] = prevs[0][1, 2] = float("nan")
    xs[1][0, :150] = 0.0
    prevs[1][0, :150] = -0.0
    xs[1][2, 199] += 1.0
    xs[2][3] *= 2.0
    xs = [x.to(dtype) for x in xs]
    prevs = [p.to(dtype) for p in prevs[:2]] + [prevs[2].float()]  # the last copy kept in float32
    return xs, prevs


@each_way
@every_dtype
def test_multi_moved_gives_each_units_share_as_moved_large_does(
    kernel: bool, dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1" if kernel else "0")
    assert _multi.available(torch.device("cpu")) == kernel
    xs, prevs = moved_tensors(dtype)
    out = torch.full((sum(x.shape[0] for x in xs),), -1.0, dtype=torch.float64)
    torch.ops.trainguard.multi_moved(xs, prevs, out)
    want = [
        torch_stats.moved_large(x, torch_stats._History(prev=p, first=p, fresh=False))
        for x, p in zip(xs, prevs)
    ]
    np.testing.assert_array_equal(out.numpy(), torch.cat(want).numpy())  # counts over a row length: exact
    assert (
        out[0] == 1.0 and out[1] == pytest.approx(1 / 5) and out[2] == 0.0
    )  # moved, the NaN alone, unchanged
    assert out[300] == 0.0 and out[302] == 1 / 200  # -0.0 equals 0.0; one element of a long row
    if kernel:
        from trainguard.capture.torch import _multi_kernel

        assert any(key[1][0] == (300, 1500) for key in _multi_kernel._moved_layouts), "the kernel ran"


def test_multi_moved_under_fake_tensors_is_one_op() -> None:
    with FakeTensorMode():
        xs = [torch.empty(64, 32, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
        prevs = [torch.empty_like(x) for x in xs]
        out = torch.empty(192, dtype=torch.float64, device="cuda")
        with Count() as count:
            _multi.moved_group(xs, prevs, out)
    assert count.seen == ["trainguard.multi_moved.default"]


@needs_triton
def test_multi_moved_kernel_matches_the_torch_implementation(kernel_device: str) -> None:
    xs, prevs = moved_tensors(torch.bfloat16)
    want = torch.empty(sum(x.shape[0] for x in xs), dtype=torch.float64)
    _multi._moved_reference(xs, prevs, want)
    got = torch.full_like(want, -1.0, device=kernel_device)
    _multi.moved_group([x.to(kernel_device) for x in xs], [p.to(kernel_device) for p in prevs], got)
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The elements' bits, so that equality holds for NaN and tells -0.0 from 0.0."""
    return t.view({2: torch.int16, 4: torch.int32}[t.element_size()])


def sample_case(
    dtype: torch.dtype, device: str = "cpu"
) -> tuple[list[torch.Tensor], list[int], torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Tensors with NaN, -0.0 and Inf among their elements, sampled as `_sampled.sample_index` samples them: one
    tensor whose sample spans several work items (the interpreter's items are 4 x 128 elements), one sampled whole,
    one of a single element; the indices concatenated, tensor after tensor, the weights' square roots, and prev
    and first samples of their own."""
    from trainguard.capture.torch import _sampled

    g = torch.Generator().manual_seed(3)
    xs = [torch.randn(n, generator=g).to(dtype) for n in (300_007, 1000, 1)]
    xs[0][::5] = float("nan")
    xs[0][1::7] = -0.0
    xs[1][::3] = float("inf")
    picks = [_sampled.sample_index(name, x.numel()) for name, x in zip("abc", xs)]
    index = torch.from_numpy(np.concatenate([i for i, _ in picks]))
    weight = torch.from_numpy(np.concatenate([w for _, w in picks])).sqrt()
    prev, first = (torch.randn(len(index), generator=g) for _ in range(2))
    return (
        [x.to(device) for x in xs],
        [len(i) for i, _ in picks],
        *(t.to(device) for t in (index, weight, prev, first)),
    )  # type: ignore[return-value]


def _sample_diffs(
    device: str, dtype: torch.dtype, reference: bool, index: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """`multi_sample_diff` on `sample_case` (through the op's reference, or as the hook calls it), `index` in
    place of the case's if given: (diff, the refreshed prev)."""
    xs, sizes, own, weight, prev, first = sample_case(dtype, device)
    diff = torch.full((2, sum(sizes)), 7.0, device=device)
    run = _multi._sample_diff_reference if reference else _multi.sample_diff_group
    run(xs, sizes, _multi.Samples(own if index is None else index, weight, prev, first, diff))
    return diff, prev


@each_way
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_multi_sample_diff_gives_each_samples_weighted_differences_and_refreshes_prev(
    kernel: bool, dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1" if kernel else "0")
    xs, sizes, index, weight, prev0, first = sample_case(dtype)
    assert sizes == [-(-300_007 // 64), 1000, 1]
    diff, prev = _sample_diffs("cpu", dtype, reference=False)
    v = torch.cat([x.flatten()[i] for x, i in zip(xs, index.split(sizes))]).float()
    assert torch.equal(
        _bits(prev), _bits(v)
    )  # prev is the sample now, bitwise: NaN, -0.0 and Inf as they are
    torch.testing.assert_close(
        diff, torch.stack([(v - prev0) * weight, (v - first) * weight]), equal_nan=True
    )
    if kernel:
        from trainguard.capture.torch import _multi_kernel

        assert any(key[2] == tuple(sizes) for key in _multi_kernel._sample_layouts), "the kernel ran"


@needs_triton
def test_multi_sample_diff_kernel_matches_the_torch_implementation_bitwise_and_reads_nothing_outside_a_tensor(
    kernel_device: str,
) -> None:
    for dtype in (torch.float32, torch.bfloat16):
        want = _sample_diffs(kernel_device, dtype, reference=True)
        got = _sample_diffs(kernel_device, dtype, reference=False)
        for a, b in zip(got, want):
            assert torch.equal(_bits(a), _bits(b)), dtype
    # an index outside its tensor (never one `sample_index` makes) reads nothing: NaN, where torch.take would fail
    index, sizes = sample_case(torch.float32, kernel_device)[2], sample_case(torch.float32)[1]
    bad = index.clone()
    bad[sizes[0]] = 10**6  # the second tensor has 1,000 elements
    bad[-1] = -1
    diff, prev = _sample_diffs(kernel_device, torch.float32, reference=False, index=bad)
    assert prev[sizes[0]].isnan() and prev[-1].isnan() and diff[:, sizes[0]].isnan().all()
    good = _sample_diffs(kernel_device, torch.float32, reference=True)[1]
    assert torch.equal(_bits(prev[: sizes[0]]), _bits(good[: sizes[0]]))  # the first tensor's, untouched


def test_multi_sample_diff_reads_a_tensor_that_is_not_contiguous_in_its_logical_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = torch.arange(600, dtype=torch.float32).reshape(20, 30)
    xs = [x.t(), torch.ones(5)]  # the transpose: no flat address order
    index = torch.tensor([0, 1, 599, 4], dtype=torch.int64)
    prev, diff = torch.zeros(4), torch.empty(2, 4)
    _multi.sample_diff_group(xs, [3, 1], _multi.Samples(index, torch.ones(4), prev, torch.zeros(4), diff))
    assert prev.tolist() == [0.0, 30.0, 599.0, 1.0] == diff[0].tolist()


def test_multi_sample_diff_under_fake_tensors_is_one_op_and_refuses_what_it_does_not_define() -> None:
    with FakeTensorMode():
        xs = [torch.empty(64, 32, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
        index = torch.empty(96, dtype=torch.int64, device="cuda")
        weight, prev, first = (torch.empty(96, device="cuda") for _ in range(3))
        diff = torch.empty(2, 96, device="cuda")
        samples = _multi.Samples(index, weight, prev, first, diff)
        with Count() as count:
            _multi.sample_diff_group(xs, [32, 32, 32], samples)
        assert count.seen == ["trainguard.multi_sample_diff.default"]
        with pytest.raises(ValueError, match=r"indices must be a contiguous torch.int64 \[96\]"):
            _multi.sample_diff_group(xs, [32, 32, 32], samples._replace(indices=index.to(torch.int32)))
        with pytest.raises(ValueError, match=r"diff must be a contiguous torch.float32 \[2, 96\]"):
            _multi.sample_diff_group(xs, [32, 32, 32], samples._replace(diff=diff[0]))
        with pytest.raises(ValueError, match="one sample size >= 0 per tensor"):
            _multi.sample_diff_group(xs, [48, 48], samples)
        with pytest.raises(ValueError, match="sample it apart"):
            _multi.sample_diff_group([*xs, torch.empty(4, device="cuda")], [32, 32, 28, 4], samples)
