"""The multi-tensor path (`_multi_path`, the GPU path) writes what the packed path writes, column by column.

On CUDA the hook reduces each group of tensors with one `trainguard::multi_stats` launch. Its
Triton kernel also runs on CPU under Triton's interpreter (TRITON_INTERPRET=1), which makes the
hook choose that path here: the same training run is captured once that way and once on the
packed path, and every column, histogram and per-unit vector must agree.
"""

from __future__ import annotations

import numpy as np
import pytest

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
