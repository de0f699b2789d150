"""`Run.follow()`: new segments as they land, listing only after the last key, END, idle timeout.

Each test runs on file:// and on real S3. The writer is the real `RankWriter` (background
uploads), in another thread where the test needs segments to appear while following.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest

import trainguard
from trainguard.store import run_format
from trainguard.store.backends import open_store
from trainguard.store.backends.s3 import S3Store
from trainguard.store.writer import RankWriter, WriterConfig

K = len(run_format.STAT_COLUMNS)
FAST = {"poll_interval_seconds": 0.02}


def new_writer(store: Any) -> tuple[RankWriter, int]:
    w = RankWriter(
        store, run_id="follow", config=WriterConfig(flush_every_steps=1, flush_interval_seconds=60)
    )
    return w, w.define("w", collection="weights", shape=[3])


def write(w: RankWriter, tid: int, step: int) -> None:
    w.write_step(step, np.array([tid]), np.full((1, K), float(step), np.float32))


def test_follow_yields_segments_while_a_writer_in_another_thread_is_still_writing(run_uri: str) -> None:
    store = open_store(run_uri)
    run = trainguard.open_run(run_uri, wait=True)  # the follower starts before anything exists
    follower = run.follow(idle_timeout_seconds=30, **FAST)
    first_seen = threading.Event()
    writer_done = threading.Event()

    def train() -> None:
        w, tid = new_writer(store)
        write(w, tid, 0)
        first_seen.wait(30)  # the rest is written only once the follower had the first segment
        for step in range(1, 10):
            write(w, tid, step)
            time.sleep(0.01)
        w.close()
        writer_done.set()

    thread = threading.Thread(target=train)
    thread.start()
    steps: list[int] = []
    try:
        for seg in follower:
            if not steps:
                assert not writer_done.is_set()
                first_seen.set()
            steps += seg.steps.tolist()
    finally:
        first_seen.set()
        thread.join(30)
    assert steps == list(range(10))
    assert follower.ended and not follower.timed_out
    assert follower.end is not None and follower.end.status == "ok" and follower.end.last_step == 9


def test_follow_lists_only_after_the_last_key_seen_and_never_from_the_start(
    run_uri: str, recording_store: Any
) -> None:
    store = recording_store(open_store(run_uri))
    run = trainguard.open_run(run_uri, store=store, wait=True)
    follower = run.follow(idle_timeout_seconds=30, **FAST)

    def train() -> None:
        w, tid = new_writer(open_store(run_uri))
        for step in range(8):
            write(w, tid, step)
            time.sleep(0.03)
        w.close()

    thread = threading.Thread(target=train)
    thread.start()
    try:
        steps = [s for seg in follower for s in seg.steps.tolist()]
    finally:
        thread.join(30)
    assert steps == list(range(8))
    polls = [
        (call, result)
        for call, result in zip(store.list_calls, store.list_results)
        if call[0] == run_format.rank_prefix(0)
    ]
    assert len(polls) > 3, "the follower should have polled several times while the writer wrote"
    last_key = None
    listed: list[str] = []
    for (prefix, start_after, _), result in polls:
        # Each listing starts after the last segment key seen, or at the first possible segment key.
        assert start_after is not None, "a follower poll listed the rank's prefix from the start"
        assert start_after == (last_key or prefix + "seg-")
        listed += result
        last_key = result[-1] if result else last_key
    segment_keys = [k for k in listed if run_format.parse_segment_name(k)]
    assert len(segment_keys) == len(set(segment_keys)) == 8  # no key came back twice


def test_follow_yields_a_segment_that_lands_between_an_empty_poll_and_the_end_marker(
    run_uri: str, recording_store: Any
) -> None:
    store = recording_store(open_store(run_uri))
    w, tid = new_writer(open_store(run_uri))
    write(w, tid, 0)
    w.flush()
    deadline = time.monotonic() + 10
    while not store.inner.list(run_format.rank_prefix(0) + "seg-"):
        assert time.monotonic() < deadline
        time.sleep(0.01)

    def last_segment_then_end() -> None:
        # Runs just before the follower reads END.json for the first time, i.e. after a poll that
        # found nothing: the last segment and END land together in that gap.
        write(w, tid, 1)
        w.close()

    store.before_get(run_format.end_key(0), last_segment_then_end)
    follower = trainguard.open_run(run_uri, store=store).follow(idle_timeout_seconds=30, **FAST)
    steps = [s for seg in follower for s in seg.steps.tolist()]
    assert steps == [0, 1]
    assert follower.ended and follower.end is not None and follower.end.last_step == 1


def test_follow_gives_up_on_a_silent_writer_after_the_idle_timeout(run_uri: str) -> None:
    w, tid = new_writer(open_store(run_uri))
    write(w, tid, 0)
    w.flush()
    follower = trainguard.open_run(run_uri, wait=True).follow(idle_timeout_seconds=0.5, **FAST)
    started = time.monotonic()
    steps = [s for seg in follower for s in seg.steps.tolist()]
    elapsed = time.monotonic() - started
    assert steps == [0]
    assert follower.timed_out and not follower.ended
    assert 0.5 <= elapsed < 10
    w.close()


def test_follow_ends_when_stopped_from_another_thread(file_uri: str) -> None:
    follower = trainguard.open_run(file_uri, wait=True).follow(idle_timeout_seconds=60, **FAST)
    timer = threading.Timer(0.2, follower.stop)
    timer.start()
    started = time.monotonic()
    assert list(follower) == []
    assert time.monotonic() - started < 5
    assert not follower.timed_out and not follower.ended
    timer.join()


def test_follow_refuses_a_non_positive_poll_interval(file_uri: str) -> None:
    with pytest.raises(ValueError, match="poll_interval_seconds must be positive, got 0"):
        trainguard.open_run(file_uri, wait=True).follow(poll_interval_seconds=0)


def test_a_read_that_fails_mid_poll_hands_over_the_segments_before_it_and_is_retried_next_poll(
    fault_proxy: Any, s3_bucket: str, s3_env: dict[str, str]
) -> None:
    uri = f"s3://{s3_bucket}/run"
    w, tid = new_writer(open_store(uri))
    for step in range(3):
        write(w, tid, step)
    w.close()
    keys = open_store(uri).list("rank-00000/seg-")
    assert len(keys) == 3
    # Through the proxy, with no retries of its own: the GET of the second segment fails once.
    store = S3Store(uri, endpoint_url=fault_proxy.url, max_attempts=1)
    fault_proxy.fail_next(1, 503, "SlowDown", path_contains=keys[1].rsplit("/", 1)[1])
    follower = trainguard.open_run(uri, store=store).follow(idle_timeout_seconds=30, **FAST)
    steps = [s for seg in follower for s in seg.steps.tolist()]
    assert steps == [0, 1, 2]  # step 1 was read on the next poll, not skipped
    assert not fault_proxy.faults and follower.ended
