"""`trainguard_run_ended`: how a run ended, told by the evaluator once every followed rank's END is read.

The runs are written by the real numpy `Recorder` into a file store; the decision is `store.listing`'s (the
one `trainguard ls` and the report use)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

import trainguard
from tests.sidecar.runs import registered
from trainguard.api.enums import Action, RunEnd
from trainguard.api.rules_config import RuleSpec
from trainguard.sidecar.evaluator import Evaluator
from trainguard.store import listing, run_format


def _train(uri: str, *, steps: int = 10, nan_at: int | None = None, crash_at: int | None = None) -> None:
    rng = np.random.default_rng(0)
    with trainguard.Recorder(uri, save_interval=2, flush_every_steps=2) as rec:
        for step in range(steps):
            if step == crash_at:
                raise RuntimeError(f"boom at step {step}")
            w = rng.standard_normal((4, 3))
            if step == nan_at:
                w[0, 0] = np.nan
            rec.record_tensor("fc1.weight", w, collection="weights")
            rec.record_tensor("grad/fc1.weight", rng.standard_normal((4, 3)), collection="gradients")
            rec.record_scalar("loss", 1.0 / (step + 1))
            rec.step()


def _ended(registry: CollectorRegistry) -> dict[str, float | None]:
    return {s.value: registry.get_sample_value("trainguard_run_ended", {"state": s.value}) for s in RunEnd}


def _one(state: RunEnd) -> dict[str, float | None]:
    return {s.value: 1.0 if s is state else 0.0 for s in RunEnd}


def _evaluated(uri: str, rules: list[RuleSpec] | None = None) -> tuple[Evaluator, CollectorRegistry]:
    registry = CollectorRegistry()
    ev = registered(Evaluator(uri, rules=rules, checkpoint=False), registry)
    ev.poll_until_idle()
    return ev, registry


def test_a_healthy_run_reads_ok_once_its_end_is_read(file_uri: str) -> None:
    _train(file_uri)
    ev, registry = _evaluated(file_uri)
    assert ev.run_end is RunEnd.OK
    assert _ended(registry) == _one(RunEnd.OK)


def test_a_crashed_run_reads_crashed(file_uri: str) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        _train(file_uri, crash_at=7)
    _, registry = _evaluated(file_uri)
    assert _ended(registry) == _one(RunEnd.CRASHED)


def test_a_run_a_stop_rule_stopped_reads_stopped_though_its_recorder_closed_ok(file_uri: str) -> None:
    # nothing polled should_stop(): the END says ok, the evaluator's stop says how the run ended
    _train(file_uri, nan_at=6)
    ev, registry = _evaluated(file_uri, [RuleSpec(type="exploding_tensor", action=Action.STOP)])
    assert ev.stop_requested
    assert _ended(registry) == _one(RunEnd.STOPPED)


def test_no_series_while_a_rank_has_no_end(file_uri: str) -> None:
    rec = trainguard.Recorder(file_uri, save_interval=2, flush_every_steps=2)
    for step in range(4):
        rec.record_tensor("fc1.weight", np.ones((4, 3)), collection="weights")
        rec.record_scalar("loss", 1.0)
        rec.step()
    rec.flush()
    ev, registry = _evaluated(file_uri)
    assert ev.run_end is None and _ended(registry) == {s.value: None for s in RunEnd}
    rec.close()
    ev.poll_until_idle()
    assert _ended(registry) == _one(RunEnd.OK)


def _end(status: str, **kw: Any) -> run_format.EndInfo:
    return run_format.EndInfo(status=status, wall_time=0.0, **kw)


def test_the_decision_is_ls_s_worst_first_and_blind_for_steps_lost_or_not_counted() -> None:
    run_end = listing.run_end
    assert run_end({0: _end("ok"), 1: _end("crashed", exit_code=1)}, stop_issued=True) is RunEnd.CRASHED
    assert run_end({0: _end("ok"), 1: _end("error", errors=["upload failed"])}) is RunEnd.BLIND
    assert run_end({0: _end("ok", unchecked_steps=40)}) is RunEnd.BLIND
    assert run_end({0: _end("ok"), 1: _end("killed", signal="SIGKILL")}) is RunEnd.KILLED
    assert run_end({0: _end("ok"), 1: _end("killed", signal="SIGKILL")}, stop_issued=True) is RunEnd.STOPPED
    assert run_end({0: _end("ok"), 1: None}) is None
    assert listing.end_state({0: _end("ok"), 1: None}) == "running or no END (1 of 2 ranks ended)"
