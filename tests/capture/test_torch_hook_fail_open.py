"""The hook never raises into training: a store that dies mid-run keeps its steps pending until it is
back; a failure inside a hook body disables capture, is logged once, is recorded; either way
training goes on to the last step."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest

import trainguard
import trainguard.torch as tg
from tests.capture.torch_loop import mlp, train
from trainguard.capture.torch import c_kernel
from trainguard.capture.torch import device_stats as torch_stats
from trainguard.store import run_format
from trainguard.store.backends import open_store
from trainguard.store.errors import StoreError


def trainguard_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("trainguard") and r.levelno >= logging.ERROR
    ]


def wait_for_step(uri: str, step: int, *, timeout_seconds: float = 20.0) -> None:
    """Poll the store until a segment holding `step` has landed."""
    deadline = time.monotonic() + timeout_seconds
    while True:
        names = [run_format.parse_segment_name(k) for k in open_store(uri).list("rank-00000/seg-")]
        if any(n is not None and n.last_step >= step for n in names):
            return
        assert time.monotonic() < deadline, f"no segment with step {step} landed in {timeout_seconds}s"
        time.sleep(0.02)


def read_when_ready(read: Callable[[], Any], *, timeout_seconds: float = 30.0) -> Any:
    """Retry `read` while a restarted SeaweedFS still answers InternalError (its volumes load after S3 is up)."""
    deadline = time.monotonic() + timeout_seconds
    while True:
        try:
            return read()
        except StoreError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.slow
def test_a_store_killed_mid_run_does_not_break_training_and_gets_every_step_once_it_is_back(
    seaweedfs_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    server = seaweedfs_factory()
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    uri = f"s3://{server.create_bucket()}/run"
    hook = tg.Hook(
        uri, save_interval=1, flush_every_steps=1, flush_interval_seconds=0.05, max_block_seconds=0.05
    )

    def kill_at_10(step: int) -> None:
        if step == 10:
            hook.flush()
            wait_for_step(uri, 9)
            server.kill()

    seen = train(hook, mlp(), steps=60, on_step=kill_at_10)
    assert len(seen.losses) == 60  # every step ran
    assert hook.enabled and not hook.errors  # capture goes on: the steps since the kill wait in memory
    server.restart()
    assert hook.wait_idle(120), "the writer never caught up with the restarted store"  # it may load slowly
    hook.close()
    assert not trainguard_errors(caplog)
    end = read_when_ready(
        lambda: run_format.EndInfo.model_validate(json.loads(open_store(uri).get(run_format.end_key(0))))
    )
    # store_outage_seconds is not asserted: on a busy machine the 60 steps may end before the writer's
    # first attempt, so no attempt meets the dead store.
    assert (end.status, end.lost_steps, hook.lost_steps) == ("ok", 0, 0)
    steps = read_when_ready(lambda: trainguard.open_run(uri).series("0.weight", "l2").steps.tolist())
    assert steps == list(range(60))


PER_STEP = 5
"""Kernel calls per saved step of `mlp()` that is not a Tier-1 step: the input batch, each activation, then
the gradients and the parameters in one call each (`HostRows.add_read`)."""


@pytest.mark.parametrize(
    ("path", "where"),
    [
        ("training-thread", "optimizer step 4 (weights)"),
        ("worker", "statistics worker (step 4)"),
        ("c-kernel", "capturing the inputs"),
    ],
)
def test_a_failure_inside_a_hook_body_disables_capture_and_is_recorded_once(
    file_uri: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    path: str,
    where: str,
) -> None:
    # the third saved step's first reduction fails: the packed reduction of its step on the torch
    # path; on the C kernel's path its first read, the input batch's (step 0 is a Tier-1 step, read by `add`)
    if path == "c-kernel":
        target, name, fail_at = c_kernel.HostRows, "add_read", PER_STEP + 2
    else:
        target, name, fail_at = torch_stats.Packed, "reduce", 3
    real = getattr(target, name)
    calls = 0

    def fail_on_third(self: object, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == fail_at:
            raise RuntimeError("injected reduction failure")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(target, name, fail_on_third)
    stats_worker = path == "worker"
    model = mlp()
    hook = tg.Hook(file_uri, save_interval=2, stats_worker=stats_worker, native_stats=path == "c-kernel")
    seen = train(hook, model, steps=12)
    assert len(seen.losses) == 12
    if stats_worker:
        # the worker never touches the hook: the training thread takes its error up at its next
        # optimizer step, at the latest at flush
        hook.flush()
    assert not hook.enabled and calls == fail_at, "capture stops after the failure"
    assert not model._forward_pre_hooks and not model[1]._forward_hooks, "its hooks are gone"
    assert hook.errors == [
        f"{where} failed: RuntimeError: injected reduction failure; capture disabled, training continues"
    ]
    assert trainguard_errors(caplog) == [f"trainguard: {hook.errors[0]}"]
    hook.close()
    end = json.loads(open_store(file_uri).get(run_format.end_key(0)))
    assert end["status"] == "error" and end["errors"] == hook.errors
    assert trainguard.open_run(file_uri).steps().tolist() == [0, 2]
