"""END.json's one staleness rule (`rank_end.current`), on a real store with runs written by the real `RankWriter`."""

from __future__ import annotations

import itertools

import numpy as np

from trainguard.store import rank_end, run_format
from trainguard.store.backends import Store, open_store
from trainguard.store.writer import RankWriter, WriterConfig

T0 = 1_795_000_000.0


def attempt(store: Store, start: float, *, close: bool) -> RankWriter:
    ticks = itertools.count()
    w = RankWriter(store, config=WriterConfig(flush_every_steps=1), clock=lambda: start + next(ticks) * 1e-3)
    tid = w.define("w", collection="weights", shape=[2])
    w.write_step(0, np.array([tid]), np.zeros((1, len(run_format.STAT_COLUMNS)), np.float32))
    if close:
        w.close()
    else:
        assert w.wait_idle(10)  # then the process is killed: no END
    return w


def test_the_end_of_the_newest_attempt_is_current_and_an_earlier_attempts_is_stale(file_uri: str) -> None:
    store = open_store(file_uri)
    first = attempt(store, T0, close=True)
    end = rank_end.current(store, 0)
    assert end is not None and end.attempt == first.attempt
    # a caller that started after that attempt (local mode's command) sees it as an earlier run's
    assert rank_end.current(store, 0, not_before=run_format.attempt_id(T0 + 60)) is None
    attempt(store, T0 + 600, close=False)  # the rank restarted and died without an END of its own
    assert rank_end.current(store, 0) is None


def test_an_end_without_an_attempt_closes_whichever_is_current(file_uri: str) -> None:
    store = open_store(file_uri)
    attempt(store, T0, close=False)
    rank_end.write(store, 0, run_format.EndInfo(status="crashed", wall_time=T0, written_by="operator"))
    attempt(store, T0 + 600, close=False)
    end = rank_end.current(store, 0)
    assert end is not None and end.written_by == "operator"


def test_a_damaged_end_counts_as_none(file_uri: str) -> None:
    store = open_store(file_uri)
    attempt(store, T0, close=True)
    store.put(run_format.end_key(0), b'{"status": "ok", "wall_ti')
    assert rank_end.current(store, 0) is None


def test_last_step_is_the_highest_step_written_when_a_saved_steps_rows_arrive_after_later_scalars(
    file_uri: str,
) -> None:
    # the hook's delivery thread writes a saved step's rows after the training thread has written the next steps'
    # loss; END.json's last_step is the highest step, not the last one written
    store = open_store(file_uri)
    w = RankWriter(store, config=WriterConfig(flush_every_steps=1))
    tid = w.define("w", collection="weights", shape=[2])
    loss = w.define("loss", collection="losses", shape=[])
    w.write_scalar(11, loss, 0.5)
    w.write_step(10, np.array([tid]), np.zeros((1, len(run_format.STAT_COLUMNS)), np.float32))
    assert w.last_step == 11
    w.close()
    end = rank_end.current(store, 0)
    assert end is not None and end.last_step == 11
