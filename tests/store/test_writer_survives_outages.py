"""Store outages: capture goes on, nothing is lost while the pending memory lasts, an exact count beyond it.

A numpy training loop records through `trainguard.Recorder` to the real S3 server behind the fault
proxy, which the test turns "down" (every request answered 503) for a while; or to an endpoint
that accepts connections and never answers. Training is never held up; an outage the pending
segments' memory covers loses no step; a longer one drops the newest segments and says exactly
which steps are missing (END.json, `Recorder.lost_steps`, the segment after the gap); `close()`
on a dead endpoint returns within its deadline.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import trainguard
from trainguard.store import run_format
from trainguard.store.backends import open_store

MARGIN_SECONDS = 0.3
"""Room for a step's own work on a busy CI machine; an upload that blocked would take seconds."""


def train(
    rec: trainguard.Recorder,
    *,
    steps: int | None = None,
    until: Callable[[], bool] | None = None,
    first_step: int = 0,
    timeout_seconds: float = 60.0,
) -> list[float]:
    """Record one weight and the loss per step; return each step's duration in seconds."""
    durations: list[float] = []
    deadline = time.monotonic() + timeout_seconds
    step = first_step
    while (steps is None or step < first_step + steps) and not (until and until()):
        assert time.monotonic() < deadline, "the training loop did not finish in time"
        started = time.monotonic()
        rec.record_tensor("fc.weight", np.full((8, 4), float(step)), collection="weights")
        rec.record_scalar("loss", 1.0 / (step + 1))
        rec.step()
        durations.append(time.monotonic() - started)
        time.sleep(0.002)
        step += 1
    return durations


def back_and_idle(writer: Any) -> bool:
    """Whether the writer has stored an object since the outage and caught up (a segment at most waits)."""
    return not writer.uploads.in_outage and writer.uploads.pending_count <= 1


@pytest.fixture
def proxied_uri(s3_uri: str, fault_proxy: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """The run root, written through the fault proxy (reads in the test go straight to the server)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", fault_proxy.url)
    return s3_uri


def recorder(uri: str, **settings: Any) -> trainguard.Recorder:
    """Save every step, flush every 50 ms (some 20 steps a segment)."""
    return trainguard.Recorder(uri, save_interval=1, flush_interval_seconds=0.05, **settings)


def end_of(uri: str, direct_env: dict[str, str]) -> run_format.EndInfo:
    store = open_store(uri, endpoint_url=direct_env["AWS_ENDPOINT_URL"])
    return run_format.EndInfo.model_validate(json.loads(store.get(run_format.end_key(0))))


def stored_steps(uri: str, direct_env: dict[str, str]) -> list[int]:
    run = trainguard.open_run(uri, store=open_store(uri, endpoint_url=direct_env["AWS_ENDPOINT_URL"]))
    return run.steps().tolist()


def test_an_outage_the_pending_memory_covers_loses_nothing_and_never_holds_a_step_up(
    proxied_uri: str, fault_proxy: Any, s3_server: Any
) -> None:
    rec = recorder(proxied_uri)
    writer = rec._writer
    assert writer is not None
    durations = train(rec, steps=10)
    fault_proxy.down = True
    # train until the writer has retried and more than a few segments wait
    durations += train(
        rec, first_step=10, until=lambda: writer.uploads.in_outage and writer.uploads.pending_count >= 8
    )
    fault_proxy.down = False
    durations += train(rec, first_step=len(durations), until=lambda: back_and_idle(writer))
    durations += train(rec, first_step=len(durations), steps=10)
    rec.close()
    total = len(durations)
    assert max(durations) <= MARGIN_SECONDS, f"a step took {max(durations):.3f}s"
    assert stored_steps(proxied_uri, s3_server.env()) == list(range(total))
    end = end_of(proxied_uri, s3_server.env())
    assert (end.status, end.lost_steps, end.errors, rec.lost_steps) == ("ok", 0, [], 0)
    assert end.store_outage_seconds > 0


def test_an_outage_longer_than_the_pending_memory_loses_an_exact_count_of_steps(
    proxied_uri: str, fault_proxy: Any, s3_server: Any
) -> None:
    rec = recorder(proxied_uri, max_pending_bytes=6000)  # three segments of ~20 steps
    writer = rec._writer
    assert writer is not None
    train(rec, steps=10)
    assert writer.wait_idle(30)
    fault_proxy.down = True
    total = 10 + len(
        train(rec, first_step=10, until=lambda: writer.lost_steps >= 20 and writer.uploads.in_outage)
    )
    fault_proxy.down = False
    total += len(train(rec, first_step=total, until=lambda: back_and_idle(writer)))
    total += len(train(rec, first_step=total, steps=10))
    rec.close()
    stored = stored_steps(proxied_uri, s3_server.env())
    missing = sorted(set(range(total)) - set(stored))
    end = end_of(proxied_uri, s3_server.env())
    assert len(stored) + end.lost_steps == total and len(stored) == len(set(stored))
    assert end.lost_steps == len(missing) == rec.lost_steps >= 20
    assert missing == list(range(missing[0], missing[-1] + 1))  # the newest segments were dropped: one gap
    assert end.status == "error" and f"{len(missing)} steps lost" in end.errors[-1]
    store = open_store(proxied_uri, endpoint_url=s3_server.endpoint_url)
    after_gap = [
        seg for seg in trainguard.open_run(proxied_uri, store=store).segments() if seg.lost_before.size
    ]
    assert len(after_gap) == 1 and after_gap[0].first_step == missing[-1] + 1
    assert after_gap[0].lost_before.tolist() == [missing[0], missing[-1], len(missing)]
    assert after_gap[0].lost_steps_total == len(missing)
    shown = subprocess.run(
        [sys.executable, "-m", "trainguard", "inspect", proxied_uri],
        env={**os.environ, "AWS_ENDPOINT_URL": s3_server.endpoint_url},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (
        f"  data         {len(missing)} steps lost (never reached the store); the store failed for"
        in shown.stdout
    )


@pytest.fixture
def dead_endpoint() -> Iterator[str]:
    """An endpoint that accepts connections (the kernel completes them) and never answers a byte."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(128)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"
    # closing the socket resets the waiting connections: the hung uploads end


def test_close_on_an_endpoint_that_never_answers_returns_by_its_deadline(
    dead_endpoint: str, s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", dead_endpoint)
    rec = recorder("s3://some-bucket/run", close_timeout_seconds=2.0)
    durations = train(rec, steps=30)
    started = time.monotonic()
    rec.close()
    took = time.monotonic() - started
    assert max(durations) <= MARGIN_SECONDS, f"a step took {max(durations):.3f}s"
    assert took <= 2.0 + MARGIN_SECONDS, f"close() took {took:.1f}s"
    assert any("END.json not written" in e for e in rec.errors), rec.errors
    assert rec.lost_steps == 30  # nothing ever reached the store, and all of it is counted
