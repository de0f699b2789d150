"""A rank written again on the same URI (a retried pod, a run resumed from a checkpoint) and segments
flushed out of step order: nothing is overwritten and a follower misses nothing.

Each test runs on file:// and on real S3 with the real `RankWriter`; the attempts are told apart by
the writers' clocks, as two pods' writers would be.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

import numpy as np

import trainguard
from trainguard.store import run_format
from trainguard.store.backends import Store, open_store
from trainguard.store.source import RankSource
from trainguard.store.writer import RankWriter, WriterConfig

K = len(run_format.STAT_COLUMNS)
EVERY_STEP = WriterConfig(flush_every_steps=1, flush_interval_seconds=60)
T0 = 1_795_000_000.0


def clock_from(start: float) -> Callable[[], float]:
    ticks = itertools.count()
    return lambda: start + next(ticks) * 1e-3


def writer(store: Store, start: float, *, config: WriterConfig = EVERY_STEP) -> RankWriter:
    return RankWriter(store, run_id="restart", config=config, clock=clock_from(start))


def write(w: RankWriter, tid: int, step: int, value: float) -> None:
    w.write_step(step, np.array([tid]), np.full((1, K), value, np.float32))


def objects(store: Store) -> dict[str, bytes]:
    return {k: store.get(k) for k in store.list(run_format.rank_prefix(0))}


def test_a_rank_written_again_from_step_0_overwrites_nothing_and_reads_as_two_attempts(run_uri: str) -> None:
    store = open_store(run_uri)
    first = writer(store, T0)
    a = first.define("a", collection="weights", shape=[2])
    for step in range(3):
        write(first, a, step, 1.0)
    first.close()
    before = objects(store)
    # The retried pod defines its tensors in another order: id 0 is "b" now.
    second = writer(store, T0 + 600)
    b, a2 = (
        second.define("b", collection="weights", shape=[2]),
        second.define("a", collection="weights", shape=[2]),
    )
    assert (b, a2) == (0, 1)
    for step in range(2):
        second.write_step(
            step, np.array([b, a2]), np.stack([np.full(K, 5.0), np.full(K, 2.0)]).astype(np.float32)
        )
    second.close()

    after = objects(store)
    assert {k: v for k, v in after.items() if k in before and not k.endswith(run_format.END_KEY)} == {
        k: v for k, v in before.items() if not k.endswith(run_format.END_KEY)
    }  # every object of the first attempt is still there, byte for byte
    assert first.attempt < second.attempt
    run = trainguard.open_run(run_uri)
    assert run.attempts() == [first.attempt, second.attempt]
    # Each segment is read with its own attempt's catalogue: "a" is id 0, then id 1.
    np.testing.assert_array_equal(run.series("a", "mean"), ([0, 1, 2, 0, 1], [1, 1, 1, 2, 2]))
    np.testing.assert_array_equal(run.series("b", "mean"), ([0, 1], [5, 5]))
    # One attempt alone (what `trainguard report` shows: the newest), each with its own catalogue.
    np.testing.assert_array_equal(run.at_attempt(first.attempt).series("a", "mean"), ([0, 1, 2], [1, 1, 1]))
    assert run.at_attempt(first.attempt).collections() == {"weights": ["a"]}
    np.testing.assert_array_equal(run.at_attempt(second.attempt).steps(), [0, 1])
    end = run.ended()
    assert end is not None and end.attempt == second.attempt and end.last_step == 1


def test_a_follower_past_the_first_attempt_follows_a_run_resumed_from_an_earlier_step(run_uri: str) -> None:
    store = open_store(run_uri)
    first = writer(store, T0)
    a = first.define("a", collection="weights", shape=[2])
    for step in range(0, 100, 10):
        write(first, a, step, 1.0)
    first.close()
    source = RankSource(store, 0)
    assert [s.first_step for s in source.poll()] == list(range(0, 100, 10))
    assert source.ended() is not None  # the first attempt ended ...

    resumed = writer(store, T0 + 600)  # ... and the Job retries it from the checkpoint at step 50
    a = resumed.define("a", collection="weights", shape=[2])
    for step in (50, 60):
        write(resumed, a, step, 2.0)
    assert resumed.wait_idle(10)
    segs = source.poll()
    assert [(s.first_step, s.attempt) for s in segs] == [(50, resumed.attempt), (60, resumed.attempt)]
    assert source.ended() is None  # the first attempt's END is stale now: the rank writes again
    resumed.close()
    end = source.ended()
    assert end is not None and end.attempt == resumed.attempt and end.last_step == 60


def test_segments_flushed_out_of_step_order_are_all_followed(run_uri: str) -> None:
    # A scalar of step 12 leaves (the training thread) before the statistics of step 10 (a worker).
    store = open_store(run_uri)
    w = writer(store, T0, config=WriterConfig(flush_every_steps=100, flush_interval_seconds=60))
    a = w.define("a", collection="weights", shape=[2])
    loss = w.define("loss", collection="losses", mode="train")
    w.write_scalars(12, [loss], [0.5])
    w.flush()
    assert w.wait_idle(10)
    source = RankSource(store, 0)
    assert [s.first_step for s in source.poll()] == [12]
    write(w, a, 10, 1.0)
    w.flush()
    w.close()
    assert [s.first_step for s in source.poll()] == [10]  # sorted by step, its key came before the last read


def test_a_writer_whose_clock_is_behind_an_earlier_attempt_still_sorts_after_it(run_uri: str) -> None:
    store = open_store(run_uri)
    first = writer(store, T0 + 600)
    write(first, first.define("a", collection="weights", shape=[2]), 0, 1.0)
    first.close()
    source = RankSource(store, 0)
    assert len(source.poll()) == 1
    behind = writer(store, T0)  # another node whose clock is ten minutes behind
    write(behind, behind.define("a", collection="weights", shape=[2]), 0, 2.0)
    behind.close()
    assert behind.attempt > first.attempt
    assert [s.attempt for s in source.poll()] == [behind.attempt]


def test_a_format_1_run_without_attempts_still_reads(run_uri: str) -> None:
    store = open_store(run_uri)
    info = run_format.RunInfo(format_version="1.0", run_id="old", framework="numpy", start_time=T0)
    store.put(run_format.RUN_INFO_KEY, info.model_dump_json().encode())
    cat = run_format.Catalogue(
        format_version="1.0",
        rank=0,
        version=0,
        tensors=[run_format.TensorInfo(id=0, name="a", collection="weights")],
    )
    store.put("rank-00000/meta-000000.json", cat.model_dump_json().encode())
    for seq, first in enumerate((0, 5)):
        seg = run_format.Segment(
            steps=np.array([first, first + 1], np.int64),
            wall_time=np.array([T0, T0]),
            tensor_ids=np.array([0], np.int32),
            stats=np.full((2, 1, K), float(first), np.float32),
        )
        store.put(
            f"rank-00000/seg-{first:012d}-{first + 1:012d}-{seq:06d}.npz", run_format.encode_segment(seg)
        )
    store.put(
        "rank-00000/END.json", json.dumps({"format_version": "1.0", "status": "ok", "wall_time": T0}).encode()
    )
    run = trainguard.open_run(run_uri)
    assert run.attempts() == [""]
    np.testing.assert_array_equal(run.series("a", "mean"), ([0, 1, 5, 6], [0, 0, 5, 5]))
    assert run.ended() is not None
