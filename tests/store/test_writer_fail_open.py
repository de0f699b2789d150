"""Fail open: a store that dies, hangs or never existed never raises into training nor holds a step up.

A numpy training loop records through `trainguard.Recorder` into a separate, short-lived
SeaweedFS that the test kills (SIGKILL) and restarts, or freezes (SIGSTOP) and thaws, mid-run;
or into a bucket that does not exist. A store that comes back gets every step (the writer keeps
segments pending and retries them); a bucket that never existed disables capture at once, logs
once, and records the error in `Recorder.errors`.
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


def error_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("trainguard") and r.levelno >= logging.ERROR]


@pytest.fixture
def own_server_uri(seaweedfs_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    """A separate SeaweedFS that the test may kill, with AWS_* pointing at it, and a run root on it."""
    server = seaweedfs_factory()
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    return server, f"s3://{server.create_bucket()}/run"


def train_until_pending(rec: trainguard.Recorder, *, segments: int) -> list[float]:
    """Train until the writer is in an outage with `segments` segments waiting; return the step durations."""
    w = rec._writer
    assert w is not None
    return train(rec, until=lambda: w.uploads.in_outage and w.uploads.pending_count >= segments)


def assert_every_step_landed(rec: trainguard.Recorder, uri: str) -> None:
    w = rec._writer
    assert w is not None
    total = w.last_step + 1 if w.last_step is not None else 0
    # a restarted SeaweedFS may take seconds before it stores objects again (its volumes load after S3
    # answers): the writer keeps retrying; close() once it caught up, so its deadline is not what is tested
    assert w.wait_idle(120), "the writer never caught up with the restarted store"
    rec.close()
    end = run_format.EndInfo.model_validate(json.loads(open_store(uri).get(run_format.end_key(0))))
    assert (end.status, end.lost_steps, end.errors) == ("ok", 0, [])
    assert end.store_outage_seconds > 0
    assert trainguard.open_run(uri).series("fc.weight", "l2").steps.tolist() == list(range(total))


@pytest.mark.slow
def test_a_store_killed_mid_run_and_restarted_gets_every_step(
    own_server_uri: tuple[Any, str], caplog: pytest.LogCaptureFixture
) -> None:
    server, uri = own_server_uri
    rec = new_recorder(uri)
    durations = train(rec, steps=20)
    assert rec._writer is not None and rec._writer.wait_idle(30)  # the store has taken objects: it works
    server.kill()
    durations += train_until_pending(rec, segments=20)
    server.restart()
    durations += train(rec, steps=20)
    assert max(durations) <= MAX_BLOCK_SECONDS + MARGIN_SECONDS, f"a step took {max(durations):.3f}s"
    assert not rec.errors and not error_records(caplog)
    assert_every_step_landed(rec, uri)


@pytest.mark.slow
def test_a_frozen_store_never_holds_a_step_up_and_gets_every_step_once_it_thaws(
    own_server_uri: tuple[Any, str], caplog: pytest.LogCaptureFixture
) -> None:
    server, uri = own_server_uri
    rec = new_recorder(uri)
    train(rec, steps=5)
    os.kill(server.pid, signal.SIGSTOP)  # uploads now hang: connections open, no answer comes
    try:
        w = rec._writer
        assert w is not None
        durations = train(rec, until=lambda: w.uploads.pending_count >= 20)
        assert not w.wait_idle(0.2), "an upload hangs: not idle"
    finally:
        os.kill(server.pid, signal.SIGCONT)
    durations += train(rec, steps=20)
    assert max(durations) <= MAX_BLOCK_SECONDS + MARGIN_SECONDS, f"a step took {max(durations):.3f}s"
    assert w.wait_idle(60)
    rec.close()
    end = run_format.EndInfo.model_validate(json.loads(open_store(uri).get(run_format.end_key(0))))
    assert (end.status, end.lost_steps) == ("ok", 0)
    total = w.last_step + 1 if w.last_step is not None else 0
    assert trainguard.open_run(uri).series("fc.weight", "l2").steps.tolist() == list(range(total))
    assert not error_records(caplog)


def test_a_missing_bucket_disables_capture_without_raising_and_says_which_bucket(
    s3_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    rec = new_recorder("s3://no-such-bucket-for-trainguard/run")
    train_through_failure(rec, caplog, fail=lambda: None)
    rec.close()  # END.json cannot be written either; close must still return
    assert "bucket no-such-bucket-for-trainguard does not exist" in rec.errors[0]
    assert any(run_format.END_KEY in e for e in rec.errors[1:])
