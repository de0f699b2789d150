"""Every kind of tensor a model may hold, through every capture path: read right, or skipped with a reason.

The matrix: non-contiguous and offset views, float16/bfloat16/float64/float8, an empty tensor, and
the kinds the hook does not read (complex, integer, quantized, sparse, meta, a tensor subclass, a
sparse gradient). Each path (the C kernel, the statistics worker, the packed buffer, torch ops one
tensor at a time) trains the model without an error reaching the loop; each readable tensor's row
equals numpy's on the same values, and each other one has its catalogue entry with the reason
(`skipped`), shown by `trainguard inspect` and the report.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from tests.capture.test_torch_statistics import assert_columns_match
from trainguard.capture.torch import _kinds, c_kernel
from trainguard.capture.torch._packed import PackedPath
from trainguard.capture.torch._worker_path import WorkerPath
from trainguard.commands import inspect
from trainguard.report import _html
from trainguard.store import run_format, stats

UPDATE = run_format.COLUMN["update_l2"]


class _Subclass(torch.Tensor):
    """A tensor subclass the hook knows nothing of."""


class Zoo(nn.Module):
    """A small model whose extra parameters are each of one kind (frozen, unless used in the forward)."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.fc = nn.Linear(8, 6)
        self.strided = nn.Parameter(torch.randn(6, 6, generator=g).t())  # non-contiguous, trained
        self.offset = nn.Parameter(torch.randn(48, generator=g)[12:])  # a view at a storage offset, trained
        self.emb = nn.Embedding(10, 6, sparse=True)  # its gradient is sparse
        frozen = {
            "f16": torch.randn(5, generator=g).half(),
            "bf16": torch.randn(5, generator=g).bfloat16(),
            "f64": torch.randn(5, generator=g).double(),
            "f8": torch.randn(5, generator=g).to(torch.float8_e4m3fn),
            "empty": torch.empty(0),
            "cplx": torch.randn(5, generator=g, dtype=torch.complex64),
            "ints": torch.arange(5),
            "sparse": torch.randn(4, 4, generator=g).to_sparse(),
            "meta": torch.empty(5, device="meta"),
            "subclass": torch.Tensor._make_subclass(_Subclass, torch.randn(5, generator=g)),
        }
        with warnings.catch_warnings():  # deprecated upstream (warned once), still a kind a model may hold
            warnings.simplefilter("ignore", UserWarning)
            frozen["quant"] = torch.quantize_per_tensor(torch.randn(5, generator=g), 0.1, 0, torch.qint8)
        for name, t in frozen.items():
            self.register_parameter(name, nn.Parameter(t, requires_grad=False))

    def forward(self, x: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc(x)) @ self.strided
        return h * self.offset[:6] + self.emb(tokens)


READ = ("fc.weight", "strided", "offset", "emb.weight", "f16", "bf16", "f64", "f8")
SKIPPED = {
    "cplx": "complex",
    "ints": "not a floating-point",
    "sparse": "sparse_coo layout",
    "meta": "meta device",
    "subclass": "tensor subclass",
    "quant": "quantized",
    "grad/emb.weight": "sparse_coo layout",
    "input/tokens": "integer input",
}

PATHS = {
    "kernel": {"native_stats": True, "stats_worker": False},
    "worker": {"native_stats": False, "stats_worker": True},
    "packed": {"native_stats": False, "stats_worker": False},
    "one-by-one": {"native_stats": False, "stats_worker": False, "pack_max_numel": 0},
}


@pytest.mark.parametrize("path", PATHS)
def test_every_tensor_kind_is_read_right_or_skipped_with_a_reason(tmp_path, path: str) -> None:
    if path == "kernel" and not c_kernel.AVAILABLE:
        pytest.skip("the C kernel is not built")
    model = Zoo()
    hook = tg.Hook(str(tmp_path), save_interval=1, **PATHS[path])
    hook.register_module(model)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    hook.register_optimizer(opt)
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        opt.zero_grad()
        out = model(torch.randn(4, 8, generator=g), torch.randint(0, 10, (4,), generator=g))
        out.square().mean().backward()
        opt.step()
        hook.record_scalar("loss", out.detach().mean())
    took = type(hook._paths.current)
    assert took is (
        WorkerPath if path == "worker" else PackedPath
    )  # a strided parameter: the kernel reads some
    assert hook._plan.kernel_reads_params == (path == "kernel")
    hook.close()
    assert hook.errors == []

    run = trainguard.open_run(str(tmp_path))
    assert run.ended().status == "ok"  # type: ignore[union-attr]
    for name in READ:
        t = getattr(model, name.split(".")[0]).weight if "." in name else getattr(model, name)
        want = stats.tier0(t.detach().double().numpy())
        got = np.array([run.series(name, col).values[-1] for col in run_format.STAT_COLUMNS])
        assert_columns_match(got[:UPDATE], want[:UPDATE], f"{name} on the {path} path")
    assert run.series("empty", "count").steps.size == 0  # nothing to read, nothing written
    assert run.series("grad/strided", "count").values.tolist() == [36.0] * 3
    skipped = run.skipped()
    assert set(skipped) == set(SKIPPED), skipped
    for name, why in SKIPPED.items():
        assert why in skipped[name], (name, skipped[name])
    for name in SKIPPED:
        assert run.series(name, "count").steps.size == 0

    summary = inspect.summarize(run)
    assert summary.ranks[0].skipped == skipped
    text = inspect.render_text(summary)
    assert "not read" in text and "quant: quantized (qint8)" in text
    page = _html.render(run, findings=[], rank=0)
    assert "quantized (qint8)" in page


@pytest.mark.skipif(not c_kernel.AVAILABLE, reason="the C kernel is not built")
def test_the_kernel_reads_only_plain_dense_float32_cpu_tensors_inside_their_storage() -> None:
    base = torch.randn(64)
    assert c_kernel.usable(base) and c_kernel.usable(base[8:])  # an offset view, inside its storage
    assert not c_kernel.usable(base[::2])  # not contiguous
    assert not c_kernel.usable(base.double()) and not c_kernel.usable(torch.empty(0))
    assert not c_kernel.usable(
        torch.Tensor._make_subclass(_Subclass, base)
    )  # a subclass's address is not its data
    assert not c_kernel.usable(torch.empty(4, device="meta"))
    assert not c_kernel.usable(base.to_sparse())
    assert not c_kernel.usable(torch._neg_view(base))  # the memory holds -x
    freed = torch.randn(8)
    freed.untyped_storage().resize_(0)  # as FSDP frees an unsharded parameter's storage
    assert not c_kernel.usable(freed)
    assert _kinds.unreadable(freed) is not None and "storage" in _kinds.unreadable(freed)  # type: ignore[operator]


@pytest.mark.skipif(not c_kernel.AVAILABLE, reason="the C kernel is not built")
def test_the_kernel_refuses_an_address_it_cannot_read() -> None:
    out = np.empty((1, len(run_format.STAT_COLUMNS)), np.float32)
    x = torch.randn(8)
    for spec in ([0, 8, 0, 0, 0], [x.data_ptr() + 1, 8, 0, 0, 0], [x.data_ptr(), 1 << 62, 0, 0, 0]):
        with pytest.raises(ValueError, match="float32 values"):
            c_kernel._cstats.reduce_many(spec, out, 0)
    with pytest.raises(ValueError, match="float32 values"):
        c_kernel._cstats.reduce(0, 8, out, 0, 0, 0, False, None, 0, None)


def test_wrapper_attributes_are_dropped_from_names() -> None:
    assert _kinds.clean_name("_orig_mod.0._fsdp_wrapped_module.weight") == "0.weight"
    assert _kinds.clean_name("module.0.weight") == "module.0.weight"  # a model's own `module` stays
