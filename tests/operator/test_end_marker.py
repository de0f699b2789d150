"""The operator's END markers for ranks whose trainer died without one, when a rank was retried.

`write_missing` on a real store with runs written by the real `RankWriter`: an END that closes an
earlier attempt of a rank restarted since (a retried pod killed without writing its own) is stale
and is replaced; a current END written by the hook is never touched.
"""

from __future__ import annotations

import itertools

import numpy as np

import trainguard
from trainguard.api.enums import Phase
from trainguard.operator import end_marker
from trainguard.operator.end_marker import write_missing
from trainguard.store import run_format
from trainguard.store.backends import Store, open_store
from trainguard.store.writer import RankWriter, WriterConfig

T0 = 1_795_000_000.0


def attempt(store: Store, rank: int, start: float, *, close: bool) -> RankWriter:
    ticks = itertools.count()
    w = RankWriter(
        store, rank=rank, world_size=2, run_id="retried",
        config=WriterConfig(flush_every_steps=1), clock=lambda: start + next(ticks) * 1e-3,
    )  # fmt: skip
    tid = w.define("w", collection="weights", shape=[2])
    for step in range(3):
        w.write_step(step, np.array([tid]), np.zeros((1, len(run_format.STAT_COLUMNS)), np.float32))
    if close:
        w.close()
    else:
        assert w.wait_idle(10)  # then the pod is killed: no END
    return w


def test_a_stale_end_of_a_retried_rank_is_replaced_and_a_current_one_is_kept(file_uri: str) -> None:
    store = open_store(file_uri)
    attempt(store, 0, T0, close=True)  # rank 0: closed by its hook
    attempt(store, 1, T0, close=True)  # rank 1: its first pod closed its run, then failed ...
    retried = attempt(store, 1, T0 + 600, close=False)  # ... and the retried pod was killed
    hook_end = store.get(run_format.end_key(0))

    written = write_missing(
        store, workers=2, last_steps={1: 2}, status="crashed", reason="pod killed", wall_time=T0 + 900
    )
    assert written == [1]
    assert store.get(run_format.end_key(0)) == hook_end
    run = trainguard.open_run(file_uri)
    end = run.ended(rank=1)
    assert end is not None and end.written_by == "operator" and end.status == "crashed"
    assert run.attempts(rank=1)[-1] == retried.attempt
    # Written once: the operator's END (no attempt) closes whichever attempt is current.
    assert (
        write_missing(store, workers=2, last_steps={}, status="crashed", reason="again", wall_time=T0) == []
    )


def test_a_damaged_end_is_replaced(file_uri: str) -> None:
    store = open_store(file_uri)
    attempt(store, 0, T0, close=True)
    store.put(run_format.end_key(0), b"{not json")
    assert write_missing(
        store, workers=1, last_steps={0: 2}, status="crashed", reason="pod killed", wall_time=T0
    ) == [0]
    end = trainguard.open_run(file_uri).ended(rank=0)
    assert end is not None and end.written_by == "operator"


def test_a_stopped_debugjob_ends_its_ranks_stopped_not_crashed() -> None:
    assert end_marker.end_status(Phase.STOPPED) == "stopped"
    assert end_marker.end_status(Phase.SUCCEEDED) == "ok" and end_marker.end_status(Phase.FAILED) == "crashed"
