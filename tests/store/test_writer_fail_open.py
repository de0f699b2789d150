"""Fail open: a store that dies, hangs or never existed never raises into training nor holds a step up.

A numpy training loop records through `trainguard.Recorder` into a separate, short-lived
SeaweedFS that the test kills (SIGKILL) or freezes (SIGSTOP) mid-run, or into a bucket that does
not exist. Capture must disable itself, log once, and record the error: in `Recorder.errors`,
and in END.json when the store is back by the time the run closes.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import trainguard
from trainguard.store import run_format
from trainguard.store.backends import open_store

MAX_BLOCK_SECONDS = 0.05
MARGIN_SECONDS = 0.25
"""Room for the step's own work and a busy CI machine; a blocking upload would take seconds."""


def new_recorder(uri: str) -> trainguard.Recorder:
    return trainguard.Recorder(
        uri,
        save_interval=1,
        flush_every_steps=1,
        flush_interval_seconds=0.05,
        max_block_seconds=MAX_BLOCK_SECONDS,
    )


def train(
    rec: trainguard.Recorder,
    *,
    steps: int | None = None,
    until: Callable[[], bool] | None = None,
    at_step: dict[int, Callable[[], None]] | None = None,
    timeout_seconds: float = 30.0,
) -> list[float]:
    """Run a small numpy training loop; return each step's duration in seconds."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((32, 16))
    durations: list[float] = []
    deadline = time.monotonic() + timeout_seconds
    step = 0
    while (steps is None or step < steps) and not (until and until()):
        assert time.monotonic() < deadline, "the training loop did not finish in time"
        (at_step or {}).get(step, lambda: None)()
        started = time.monotonic()
        w = w - 0.01 * rng.standard_normal(w.shape)
        rec.record_tensor("fc.weight", w, collection="weights")
        rec.record_scalar("loss", float(np.abs(w).mean()))
        rec.step()
        durations.append(time.monotonic() - started)
        time.sleep(0.002)
        step += 1
    return durations


def train_through_failure(
    rec: trainguard.Recorder, caplog: pytest.LogCaptureFixture, *, fail: Callable[[], None]
) -> None:
    """Make the store fail, train on until capture gives up and 20 steps more, and check the fail-open promises."""
    durations = train(rec, at_step={0: fail}, until=lambda: bool(rec.errors))
    durations += train(rec, steps=20)  # training goes on with capture off
    assert max(durations) <= MAX_BLOCK_SECONDS + MARGIN_SECONDS, f"a step took {max(durations):.3f}s"
    assert rec.errors and "capture disabled, training continues" in rec.errors[0]
    assert len(error_records(caplog)) == 1, [r.getMessage() for r in error_records(caplog)]


def wait_for(condition: Callable[[], Any], *, timeout_seconds: float = 10.0) -> Any:
    """Poll `condition` until it returns something true, and return that."""
    deadline = time.monotonic() + timeout_seconds
    while not (result := condition()):
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)
    return result


def error_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("trainguard") and r.levelno >= logging.ERROR]


@pytest.fixture
def own_server_uri(seaweedfs_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    """A separate SeaweedFS that the test may kill, with AWS_* pointing at it, and a run root on it."""
    server = seaweedfs_factory()
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    return server, f"s3://{server.create_bucket()}/run"


@pytest.mark.slow
def test_a_store_killed_mid_run_disables_capture_and_end_records_the_error_once_the_store_is_back(
    own_server_uri: tuple[Any, str], caplog: pytest.LogCaptureFixture
) -> None:
    server, uri = own_server_uri
    rec = new_recorder(uri)
    assert max(train(rec, steps=20)) <= MAX_BLOCK_SECONDS + MARGIN_SECONDS
    landed = wait_for(lambda: [k for k in [open_store(uri).list("rank-00000/seg-")] if len(k) >= 5])[0]
    train_through_failure(rec, caplog, fail=server.kill)

    server.restart()
    rec.close()
    store = open_store(uri)
    end = run_format.EndInfo.model_validate(json.loads(store.get(run_format.end_key(0))))
    assert end.status == "error" and end.errors and end.errors[0] == rec.errors[0]
    run = trainguard.open_run(uri)
    steps = run.series("fc.weight", "l2").steps
    assert len(steps) >= len(landed) and steps.tolist() == list(
        range(len(steps))
    )  # what landed before the kill is intact


@pytest.mark.slow
def test_a_frozen_store_holds_a_step_up_at_most_max_block_seconds(
    own_server_uri: tuple[Any, str], caplog: pytest.LogCaptureFixture
) -> None:
    server, uri = own_server_uri
    rec = new_recorder(uri)
    train(rec, steps=5)
    try:
        # Uploads now hang: connections open, no answer ever comes.
        train_through_failure(rec, caplog, fail=lambda: os.kill(server.pid, signal.SIGSTOP))
        assert rec._writer is not None and not rec._writer.wait_idle(0.2), "an upload hangs: not idle"
    finally:
        server.kill()  # SIGKILL also ends a stopped process; the hung upload then fails fast
    assert "upload queue full" in rec.errors[0] and "too slow" in rec.errors[0]
    rec.close()
    assert any("END.json" in e or "cannot upload" in e for e in rec.errors[1:])


def test_a_missing_bucket_disables_capture_without_raising_and_says_which_bucket(
    s3_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    rec = new_recorder("s3://no-such-bucket-for-trainguard/run")
    train_through_failure(rec, caplog, fail=lambda: None)
    rec.close()  # END.json cannot be written either; close must still return
    assert "bucket no-such-bucket-for-trainguard does not exist" in rec.errors[0]
    assert any(run_format.END_KEY in e for e in rec.errors[1:])
