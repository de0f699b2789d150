"""The multi-tensor op `trainguard::multi_stats` against the numpy reference `store.stats` and `reduce_large`.

Its plain torch implementation (`_reference`) and its one-launch Triton kernel, the latter on CPU
through Triton's interpreter (small tensors: the interpreter runs each block in numpy); the op's
fake implementation under FakeTensorMode with fake CUDA tensors (one op, nothing read back); and
the op inside `torch.compile(fullgraph=True)`.
"""

from __future__ import annotations

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
    r = torch.relu(torch.randn(100, generator=g))
    inf_only = torch.randn(40, generator=g)
    inf_only[2] = float("inf")
    tensors = [a, torch.randn(5, generator=g), torch.zeros(7), b, c, e, f, r, inf_only]
    return [t.to(dtype) for t in tensors]


def reference(t: torch.Tensor, **kw: torch.Tensor | None) -> np.ndarray:
    arrays = {k: (None if v is None else v.float().cpu().numpy()) for k, v in kw.items()}
    return stats.tier0(t.float().cpu().numpy(), **arrays)


def columns(raw: torch.Tensor, tensors: list[torch.Tensor]) -> np.ndarray:
    return torch_stats.finish(raw.numpy(), np.array([t.numel() for t in tensors]))


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


def test_an_empty_tensor_has_counts_zero_and_nan_moments() -> None:
    out = run_op([torch.zeros(0), torch.ones(3)])
    assert out[0, :3].tolist() == [0.0, 0.0, 0.0]
    assert out[0, 3:].isnan().all()
    assert out[1, torch_stats.SUM].item() == 3.0


def test_under_fake_tensors_the_op_is_one_dispatch_with_no_host_read_and_no_allocation() -> None:
    seen: list[str] = []

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with FakeTensorMode():
        xs = [
            torch.empty(4096, 1024, device="cuda", dtype=torch.bfloat16),
            torch.empty(3, device="cuda", dtype=torch.bfloat16),
        ]
        prevs = [torch.empty_like(x) for x in xs]
        firsts = [torch.empty_like(x) for x in xs]
        out = torch.empty(len(xs), _multi.WIDTH, dtype=torch.float64, device="cuda")
        with Count():
            torch.ops.trainguard.multi_stats(xs, prevs, firsts, out)
    assert seen == ["trainguard.multi_stats.default"]


def test_the_op_compiles_into_a_full_graph() -> None:
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
    with pytest.raises(ValueError, match="float64"):
        torch.ops.trainguard.multi_stats([x], [], [], torch.empty(1, _multi.WIDTH))
