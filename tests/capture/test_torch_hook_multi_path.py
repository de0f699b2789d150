"""The multi-tensor path (`_multi_path`, the GPU path) writes what the packed path writes, column by column.

On CUDA the hook reduces each group of tensors with one `trainguard::multi_stats` launch. Its
Triton kernel also runs on CPU under Triton's interpreter (TRITON_INTERPRET=1), which makes the
hook choose that path here: the same training run is captured once that way and once on the
packed path, and every column, histogram and per-unit vector must agree.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import trainguard
import trainguard.torch as tg
from tests.capture.torch_loop import mlp, tier1_rows, train
from trainguard.capture.torch._multi_path import MultiPath
from trainguard.capture.torch._packed import PackedPath
from trainguard.store import run_format

pytest.importorskip("triton")

COLUMNS = run_format.STAT_COLUMNS


def _capture(uri: str, monkeypatch: pytest.MonkeyPatch, *, interpret: bool) -> type:
    monkeypatch.setenv("TRITON_INTERPRET", "1" if interpret else "0")
    # neither the C kernel nor the statistics worker: the CPU then takes the accelerators' paths
    with tg.Hook(uri, save_interval=2, tier1_interval=3, native_stats=False, stats_worker=False) as hook:
        train(hook, mlp(), steps=12)
    assert hook.errors == [] and hook.skipped_steps == 0
    return type(hook._paths.current)


def test_the_multi_tensor_path_writes_what_the_packed_path_writes(
    file_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _capture(file_uri + "-packed", monkeypatch, interpret=False) is PackedPath
    assert _capture(file_uri + "-multi", monkeypatch, interpret=True) is MultiPath
    packed, multi = trainguard.open_run(file_uri + "-packed"), trainguard.open_run(file_uri + "-multi")
    assert {t.name for t in packed.tensors()} == {t.name for t in multi.tensors()}
    assert [t.name for t in multi.tensors("inputs")] == ["input/input"]  # the batch, read like an activation
    for t in packed.tensors():
        if t.is_scalar:
            a, b = packed.scalars(t.name, mode=t.mode), multi.scalars(t.name, mode=t.mode)
            assert list(a.steps) == list(b.steps) and np.array_equal(a.values, b.values), t.name
            continue
        for col in COLUMNS:
            a, b = packed.series(t.name, col), multi.series(t.name, col)
            assert list(a.steps) == list(b.steps), (t.name, col)
            np.testing.assert_allclose(
                a.values, b.values, rtol=2e-5, atol=1e-7, equal_nan=True, err_msg=f"{t.name} {col}"
            )
    ids = {t.id: t.name for t in packed.tensors()}
    back = {t.name: t.id for t in multi.tensors()}
    for key in ("hists", "units"):
        got, want = tier1_rows(multi, key), tier1_rows(packed, key)
        assert len(got) == len(want) > 0
        for k, v in want.items():
            other = back[ids[k]] if isinstance(k, int) else (k[0], back[ids[k[1]]])
            np.testing.assert_allclose(got[other], v, rtol=1e-6, atol=1e-7, equal_nan=True, err_msg=str(k))


class _ScaledInPlace(nn.Module):
    """The GELU's output is doubled in place after its forward hook has seen it, from training forward `since` on:
    what a later read would see is no longer what the GELU returned (its backward needs its input only)."""

    def __init__(self, since: int) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc1, self.gelu, self.fc2 = nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 3)
        self.since, self.calls = since, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.gelu(self.fc1(x))
        if self.calls >= self.since:
            h.mul_(2.0)
        self.calls += 1
        return self.fc2(h)


@pytest.mark.parametrize(("since", "lost"), [(0, []), (5, [6])], ids=["from-the-start", "from-step-5"])
def test_an_activation_changed_in_place_after_its_hook_is_read_as_its_module_returned_it(
    file_uri: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    since: int,
    lost: list[int],
) -> None:
    # the multi-tensor path keeps a Tier-0 step's activations for one op at the forward's end only once a saved
    # step showed them unchanged there: one changed from the start is read in its hook at every step; one that
    # starts changing later loses that one saved step (logged) and is read in its hook from then on
    runs = {}
    for name, interpret in (("packed", False), ("multi", True)):
        monkeypatch.setenv("TRITON_INTERPRET", "1" if interpret else "0")
        uri = f"{file_uri}-{name}"
        with tg.Hook(
            uri, save_interval=2, tier1_interval=10**6, native_stats=False, stats_worker=False
        ) as hook:
            model = _ScaledInPlace(since)
            opt = torch.optim.SGD(model.parameters(), lr=0.05)
            hook.register_module(model)
            hook.register_optimizer(opt)
            g = torch.Generator().manual_seed(1)
            for _ in range(12):
                opt.zero_grad()
                loss = model(torch.randn(32, 8, generator=g)).square().mean()
                loss.backward()
                opt.step()
                hook.record_scalar("loss", loss)
        assert hook.errors == [] and hook.skipped_steps == 0
        runs[name] = trainguard.open_run(uri)
    assert type(hook._paths.current) is MultiPath
    packed, multi = runs["packed"], runs["multi"]
    for col in ("mean", "max", "l2"):
        want, got = packed.series("act/gelu", col), multi.series("act/gelu", col)
        assert list(want.steps) == list(range(0, 12, 2))
        assert list(got.steps) == [s for s in want.steps if s not in lost], col
        keep = [i for i, s in enumerate(want.steps) if s not in lost]
        np.testing.assert_allclose(got.values, want.values[keep], rtol=2e-5, atol=1e-7, err_msg=col)
    warned = [r.getMessage() for r in caplog.records if "changed in place" in r.getMessage()]
    assert len(warned) == len(lost) and all("act/gelu" in w for w in warned), warned
