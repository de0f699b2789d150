"""The first NaN/Inf of a run leaves the writer at once, not after the flush interval.

Divergence is the verdict that must come first, so the writer flushes its buffer on the first
saved step whose NaN/Inf counts are non-zero, or the first non-finite scalar. Later non-finite
steps batch as usual. Real `RankWriter` with its background uploader, on file:// and real S3.
"""

from __future__ import annotations

import time

import numpy as np

from trainguard.store import run_format
from trainguard.store.backends import Store, open_store
from trainguard.store.writer import RankWriter, WriterConfig

K = len(run_format.STAT_COLUMNS)
SLOW = WriterConfig(flush_every_steps=50, flush_interval_seconds=60)  # nothing would leave on its own


def segments(store: Store) -> list[tuple[int, int, int]]:
    """(first step, last step, upload sequence) of every segment, in key order."""
    keys = store.list(run_format.rank_prefix(0))
    return [
        (p.first_step, p.last_step, p.seq) for p in map(run_format.parse_segment_name, keys) if p is not None
    ]


def wait_for_segments(store: Store, n: int, timeout: float = 10.0) -> list[tuple[int, int, int]]:
    deadline = time.monotonic() + timeout
    while True:
        found = segments(store)
        if len(found) >= n or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def stats(nan: float = 0.0) -> np.ndarray:
    row = np.ones((1, K), np.float32)
    row[0, run_format.COLUMN["nan"]] = nan
    row[0, run_format.COLUMN["inf"]] = 0.0
    return row


def test_the_first_nan_step_is_flushed_at_once_and_later_ones_batch(run_uri: str) -> None:
    store = open_store(run_uri)
    w = RankWriter(store, run_id="r", config=SLOW)
    tid = w.define("fc.weight", collection="weights", shape=[4])
    for step in range(5):
        w.write_step(step, np.array([tid]), stats())
    time.sleep(0.3)
    assert segments(store) == []  # healthy steps wait for the interval or a full buffer
    w.write_step(5, np.array([tid]), stats(nan=4))
    assert wait_for_segments(store, 1) == [(0, 5, 0)]  # the NaN step and everything before it
    w.write_step(6, np.array([tid]), stats(nan=4))
    time.sleep(0.3)
    assert segments(store) == [(0, 5, 0)]  # only the first divergence jumps the queue
    w.close()
    assert segments(store) == [(0, 5, 0), (6, 6, 1)]


def test_a_non_finite_scalar_is_flushed_at_once(file_uri: str) -> None:
    store = open_store(file_uri)
    w = RankWriter(store, run_id="r", config=SLOW)
    loss = w.define("loss", collection="losses", mode="train")
    w.write_scalars(0, [loss], [2.3])
    w.write_scalars(1, [loss], [2.2])
    time.sleep(0.3)
    assert segments(store) == []
    w.write_scalars(2, [loss], [float("nan")])
    found = wait_for_segments(store, 1)
    assert len(found) == 1
    (key,) = store.list(run_format.rank_prefix(0) + "seg-")
    seg = run_format.decode_segment(store.get(key), key="seg")
    assert seg.scalar_steps.tolist() == [0, 1, 2] and np.isnan(seg.scalar_values[-1])
    w.close()


def test_a_caller_that_knows_a_step_holds_nan_says_so(file_uri: str) -> None:
    # the hook's C kernel tells which rows count NaN/Inf; the writer then looks no further
    store = open_store(file_uri)
    w = RankWriter(store, run_id="r", config=SLOW)
    tid = w.define("fc.weight", collection="weights", shape=[4])
    w.write_step(0, np.array([tid]), stats(), nonfinite=False)
    time.sleep(0.3)
    assert segments(store) == []
    w.write_step(1, np.array([tid]), stats(nan=1), nonfinite=True)
    assert wait_for_segments(store, 1) == [(0, 1, 0)]
    w.close()
