"""In local mode `trainguard_run_ended` tells the end `trainguard run` tells (`Outcome.end`), also when the
script's Recorder closed cleanly before the command failed: the supervisor's completed END decides."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from trainguard.api.enums import RunEnd
from trainguard.local import supervise
from trainguard.sidecar import metrics

TRAIN = """
import sys, time
import numpy as np
import trainguard
with trainguard.Recorder(save_interval=1, flush_interval_seconds=0.1) as rec:
    for step in range(20):
        grad = np.full((4, 4), np.nan if step == {nan_at} else 0.1, np.float32)
        rec.record_tensor("fc.weight", np.full((4, 4), 0.5, np.float32), collection="weights")
        rec.record_tensor("grad/fc.weight", grad, collection="gradients")
        rec.record_scalar("loss", 1.0 / (step + 1))
        rec.step()
        if rec.should_stop():
            break
    rec.flush()
    deadline = time.monotonic() + 60
    while {nan_at} >= 0 and not rec.should_stop() and time.monotonic() < deadline:
        time.sleep(0.05)   # a stop is coming: leave after should_stop(), as a trainer should
sys.exit({status})   # after the Recorder closed: its END says ok, the supervisor's says how CMD ended
"""


@pytest.mark.parametrize(
    ("nan_at", "status", "expected"),
    [(-1, 0, RunEnd.OK), (-1, 3, RunEnd.CRASHED), (10, 0, RunEnd.STOPPED)],
    ids=["ok", "crashed", "stopped"],
)
def test_the_metric_tells_the_end_the_outcome_tells(
    tmp_path: Path, nan_at: int, status: int, expected: RunEnd
) -> None:
    (tmp_path / "train.py").write_text(TRAIN.format(nan_at=nan_at, status=status))
    sup = supervise.Supervisor(
        [sys.executable, "train.py"],
        run_uri=f"file://{tmp_path}/run",
        cwd=str(tmp_path),
        progress=supervise.Progress(io.StringIO(), tty=False),
    )
    outcome = sup.run()
    assert outcome.end is expected, outcome.headline()
    assert sup.evaluator is not None
    registry = CollectorRegistry()
    registry.register(metrics.EvaluatorCollector(sup.evaluator))
    ended = {s: registry.get_sample_value("trainguard_run_ended", {"state": s.value}) for s in RunEnd}
    assert ended == {s: 1.0 if s is expected else 0.0 for s in RunEnd}
