"""The statistics worker (CPU tensors on the torch path, `native_stats=False`): saved steps are
snapshotted on the training thread and reduced on a background thread. Same numbers as numpy and as the training-thread path, one
host copy per saved step, a bounded number of snapshots in flight (a slow worker makes the hook
skip saved steps, never makes training wait), and close waits for what is in flight. An error
inside the worker: test_torch_hook_fail_open.py."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch

import trainguard
import trainguard.torch as tg
from tests.capture.torch_loop import assert_same_steps, mlp, train
from trainguard.capture.torch import device_stats as torch_stats
from trainguard.store import run_format, stats
from trainguard.store.backends import open_store

PARAMS = ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]


def end_info(uri: str) -> dict[str, Any]:
    return json.loads(open_store(uri).get(run_format.end_key(0)))  # type: ignore[no-any-return]


def slow_reduce(monkeypatch: pytest.MonkeyPatch, seconds: float) -> list[str]:
    """Make every packed reduction take `seconds` longer; return the names of the threads that ran them."""
    real = torch_stats.Packed.reduce
    threads: list[str] = []

    def slow(self: torch_stats.Packed, *args: Any, **kwargs: Any) -> torch.Tensor:
        threads.append(threading.current_thread().name)
        time.sleep(seconds)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(torch_stats.Packed, "reduce", slow)
    return threads


@pytest.mark.parametrize(
    ("native_stats", "tier1_interval", "replace"),
    [(False, 1, False), (True, 1, False), (True, 3, False), (True, 3, True)],
    ids=["worker", "c-kernel", "c-kernel-planned", "c-kernel-replanned"],
)
def test_cpu_statistics_match_numpy_for_every_column_of_weights_and_gradients(
    file_uri: str, native_stats: bool, tier1_interval: int, replace: bool
) -> None:
    # the kernel reads the steps from the plan it keeps (`_stage_native`): with tier1_interval 3
    # saved steps 2, 4, 8 in one call for the gradients and one for the parameters, the Tier-1
    # steps 0 and 6 one call per tensor (with histograms and "moved" shares); with 1 all of them
    # so. `replace`: a weight gets new storage after step 2, so the plan's addresses are stale and
    # it is made again
    model = mlp()
    snapshots: dict[int, dict[str, np.ndarray]] = {}

    def snapshot(step: int) -> None:
        if replace and step == 3:
            model[2].weight.data = model[2].weight.data.clone()
        if step % 2 == 0:  # saved steps: weights after the step, the gradients it used
            named = dict(model.named_parameters())
            snap = {n: p.detach().numpy().copy() for n, p in named.items()}
            snap |= {f"grad/{n}": p.grad.numpy().copy() for n, p in named.items() if p.grad is not None}
            snapshots[step] = snap

    with tg.Hook(file_uri, save_interval=2, tier1_interval=tier1_interval, native_stats=native_stats) as hook:
        train(hook, model, steps=9, on_step=snapshot)
        # CPU tensors take the C kernel by default (on the training thread), else the worker
        assert (hook._worker is None) == native_stats
        plan = hook._native_plan
        assert (plan is not None and plan.spec is not None) == native_stats, "the plan served"
    assert hook.errors == [] and hook.skipped_steps == 0
    run = trainguard.open_run(file_uri)
    saved = sorted(snapshots)
    assert run.steps().tolist() == saved
    for name in PARAMS + [f"grad/{p}" for p in PARAMS]:
        got = np.stack([run.series(name, col).values for col in run_format.STAT_COLUMNS], 1)
        want = np.stack(
            [
                stats.tier0(
                    snapshots[s][name],
                    prev=None if name.startswith("grad/") or i == 0 else snapshots[saved[i - 1]][name],
                    first=None if name.startswith("grad/") else snapshots[saved[0]][name],
                )
                for i, s in enumerate(saved)
            ]
        )
        np.testing.assert_array_equal(got[:, :4], want[:, :4], err_msg=name)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, equal_nan=True, err_msg=name)
        tid = next(t.id for t in run.tensors() if t.name == name)
        tier1 = [int(s) for seg in run.segments() for s in seg.tier1_steps]
        assert tier1 == saved[::tier1_interval]
        got_h = np.concatenate([seg.hists[tid] for seg in run.segments() if len(seg.tier1_steps)])
        np.testing.assert_array_equal(got_h, np.stack([stats.log2_hist(snapshots[s][name]) for s in tier1]))


def test_worker_and_training_thread_write_identical_runs(file_uri: str) -> None:
    for uri, worker in ((file_uri + "-worker", True), (file_uri + "-inline", False)):
        with tg.Hook(uri, save_interval=3, tier1_interval=2, stats_worker=worker, native_stats=False) as hook:
            train(hook, mlp(), steps=14, eval_every=4)
        assert hook.errors == [] and (hook._worker is not None) == worker
    a, b = trainguard.open_run(file_uri + "-worker"), trainguard.open_run(file_uri + "-inline")
    assert_same_steps(a, b, [0, 3, 6, 9, 12])
    for key in ("units", "hists"):
        got = []
        for r in (a, b):
            per_key: dict[Any, list[np.ndarray]] = {}
            for seg in r.segments():
                for k, v in getattr(seg, key).items():
                    per_key.setdefault(k, []).append(v)
            got.append({k: np.concatenate(v) for k, v in per_key.items()})
        assert got[0].keys() == got[1].keys() and got[0]
        for k in got[0]:
            np.testing.assert_array_equal(got[0][k], got[1][k])


def test_the_worker_makes_one_host_copy_per_saved_step_and_the_training_thread_none(
    file_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    copies: list[str] = []
    real = torch_stats.to_host

    def counting(payload: torch.Tensor) -> np.ndarray:
        copies.append(threading.current_thread().name)
        return real(payload)

    monkeypatch.setattr(torch_stats, "to_host", counting)
    with tg.Hook(file_uri, save_interval=4, native_stats=False) as hook:
        train(hook, mlp(), steps=13)
        hook.flush()
        # steps 0, 4, 8, 12 (the losses recorded since the step before ride with each), and at flush the
        # losses of steps 12 and after
        assert len(copies) == 5
    assert set(copies) == {"trainguard-stats"}
    steps, _ = trainguard.open_run(file_uri).scalars("loss")
    assert steps.tolist() == list(range(13))  # every step's loss, in those five copies


@pytest.fixture
def one_intra_op_thread() -> Iterator[None]:
    """torch on one thread, as in benchmarks/hook_overhead.py. With two on a loaded 2-core machine, a
    backward pass was seen to take ~100 ms while the worker thread merely slept: torch's own thread
    pool contending for the cores, not the hook waiting (its bodies stayed under 1 ms)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.usefixtures("one_intra_op_thread")
def test_a_slow_worker_makes_the_hook_skip_saved_steps_instead_of_blocking_training(
    file_uri: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    threads = slow_reduce(monkeypatch, 0.15)
    step_seconds: list[float] = []
    last = [time.perf_counter()]

    def clock(step: int) -> None:
        now = time.perf_counter()
        step_seconds.append(now - last[0])
        last[0] = now

    model = mlp()
    with (
        caplog.at_level(logging.WARNING),
        tg.Hook(
            file_uri, save_interval=1, stats_in_flight=2, max_block_seconds=0.01, native_stats=False
        ) as hook,
    ):
        seen = train(hook, model, steps=12, on_step=clock)
        skipped = hook.skipped_steps
    assert set(threads) == {"trainguard-stats"}
    assert max(step_seconds[1:]) < 0.1, f"training waited for the worker: {step_seconds}"
    assert skipped >= 6 and hook.skipped_steps == skipped
    assert hook.errors == [], "a skip is not an error"
    warnings = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(warnings) == 1, "one warning, then only counted"
    run = trainguard.open_run(file_uri)
    written = run.steps().tolist()
    assert len(written) + skipped == 12 and written[:2] == [0, 1]  # two slots: the first two steps fit
    np.testing.assert_allclose(
        run.series("0.weight", "l2").values, [seen.weight_l2[s] for s in written], rtol=1e-5
    )
    end = end_info(file_uri)
    assert end["status"] == "ok" and end["skipped_steps"] == skipped


def test_close_waits_for_the_steps_in_flight(file_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    slow_reduce(monkeypatch, 0.1)
    hook = tg.Hook(file_uri, save_interval=1, stats_in_flight=3, native_stats=False)
    train(hook, mlp(), steps=3)
    assert hook._worker is not None and hook._worker.in_flight > 0
    hook.close()
    assert hook.skipped_steps == 0 and trainguard.open_run(file_uri).steps().tolist() == [0, 1, 2]


def test_wait_idle_returns_once_the_worker_and_uploader_are_done_and_writes_nothing_early(
    file_uri: str,
) -> None:
    with tg.Hook(
        file_uri, save_interval=1, flush_every_steps=2, flush_interval_seconds=60, native_stats=False
    ) as hook:
        train(hook, mlp(), steps=6)
        assert hook.wait_idle(10.0)
        assert hook._worker is not None and hook._worker.in_flight == 0
        store = open_store(file_uri)
        segments = [k for k in store.list(run_format.rank_prefix(0)) if "/seg-" in k]
        # step 0 fills a segment of its own (its tensor set also holds the initial-weights record), steps 1-4
        # two more; step 5 (and the loss recorded after it) waits in the buffer
        assert len(segments) == 3, segments
    assert trainguard.open_run(file_uri).steps().tolist() == [0, 1, 2, 3, 4, 5]
