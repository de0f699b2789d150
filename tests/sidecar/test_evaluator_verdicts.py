"""The evaluator reads each step once, isolates rule failures, and emits each verdict transition once."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import trainguard
from tests.sidecar.runs import RunBuilder, custom, write_run
from trainguard.api.enums import Action, RuleState, Severity
from trainguard.api.rules_config import RuleSpec
from trainguard.errors import ConfigError
from trainguard.sidecar.evaluator import Evaluator
from trainguard.store.backends import open_store
from trainguard.store.backends.local import FileStore
from trainguard.store.errors import StoreError

NAN_GUARD = RuleSpec(type=custom("NonFinite"), name="nan-guard", action=Action.STOP)


def ledger(name: str = "ledger", **params: object) -> RuleSpec:
    return RuleSpec(type=custom("StepLedger"), name=name, params=dict(params))


def test_each_transition_is_emitted_once_and_later_findings_only_count(run_uri: str) -> None:
    store = open_store(run_uri)
    b = RunBuilder(store)
    b.segment(range(5))
    ev = Evaluator(run_uri, rules=[NAN_GUARD, ledger(fire_at=[3])], checkpoint=False)
    first = ev.poll()
    assert [(v.rule, v.state, v.step, v.action) for v in first] == [
        ("ledger", RuleState.ISSUES_FOUND, 3, Action.NOTIFY)
    ]
    b.segment(range(5, 10), nan_at=[6, 7, 8])
    second = ev.poll()
    assert [(v.rule, v.state, v.step, v.action, v.severity) for v in second] == [
        ("nan-guard", RuleState.ISSUES_FOUND, 6, Action.STOP, Severity.CRITICAL)
    ]
    assert "fc2.weight" in second[0].message and second[0].finding is not None
    assert ev.poll() == []
    nan_findings = [f for f in ev.findings if f.rule == "nan-guard"]
    assert [f.step for f in nan_findings] == [6, 7, 8]
    assert ev.rule_status["nan-guard"].step == 6 and ev.rule_status["ledger"].state == RuleState.ISSUES_FOUND


def test_no_step_is_read_twice_and_every_step_is_evaluated_once(file_uri: str) -> None:
    store = open_store(file_uri)
    b = RunBuilder(store)
    ev = Evaluator(file_uri, rules=[ledger()], checkpoint=False)
    for start in range(0, 30, 5):
        b.segment(range(start, start + 5))
        ev.poll()
        ev.poll()
    read_after = ev.read_bytes_total
    assert ev.poll() == [] and ev.read_bytes_total == read_after
    (rule,) = ev._tracks[0].rules
    assert rule.steps == list(range(30))  # type: ignore[attr-defined]
    assert ev.segments_total == 6 and ev.last_step == 29


def test_a_failing_rule_goes_to_error_and_the_others_keep_running(file_uri: str) -> None:
    write_run(open_store(file_uri), segments=2, nan_at=[7])
    boom = RuleSpec(type=custom("Boom"), name="boom", params={"at_step": 2}, action=Action.STOP)
    ev = Evaluator(file_uri, rules=[boom, NAN_GUARD, ledger()], checkpoint=False)
    verdicts = ev.poll()
    states = [(v.rule, v.state, v.step) for v in verdicts]
    assert ("boom", RuleState.ERROR, 2) in states
    assert ("nan-guard", RuleState.ISSUES_FOUND, 7) in states
    assert [v.action for v in verdicts if v.rule == "boom"] == [Action.NONE]  # an error never stops a job
    status = ev.rule_status["boom"]
    assert status.state == RuleState.ERROR and "ZeroDivisionError" in status.message
    counters = dict(ev.counters())
    assert counters["boom"].errors == 8 and counters["ledger"].errors == 0
    assert ev._tracks[0].rules[2].steps == list(range(10))  # type: ignore[attr-defined]


def test_rules_still_in_progress_become_no_issues_found_when_every_rank_ended(file_uri: str) -> None:
    store = open_store(file_uri)
    b = RunBuilder(store)
    b.segment(range(5))
    ev = Evaluator(file_uri, rules=[NAN_GUARD, ledger(fire_at=[1])], checkpoint=False)
    ev.poll()
    assert not ev.ended and ev.rule_status["nan-guard"].state == RuleState.IN_PROGRESS
    b.end(last_step=4)
    final = ev.poll()
    assert ev.ended
    assert [(v.rule, v.state, v.action) for v in final] == [
        ("nan-guard", RuleState.NO_ISSUES_FOUND, Action.NONE)
    ]
    assert ev.finish() == [] and ev.poll() == []


def test_a_stop_verdict_creates_the_stop_file_once_with_the_rule_and_message(
    file_uri: str, tmp_path: Path
) -> None:
    store = open_store(file_uri)
    b = RunBuilder(store)
    b.segment(range(5), nan_at=[2])
    stop_file = tmp_path / "shared" / "stop"
    ev = Evaluator(file_uri, rules=[NAN_GUARD], checkpoint=False, stop_file=str(stop_file))
    (verdict,) = ev.poll()
    assert verdict.action == Action.STOP and ev.stop_requested
    doc = json.loads(stop_file.read_text())
    assert doc["rule"] == "nan-guard" and "fc2.weight" in doc["message"]
    stop_file.unlink()
    b.segment(range(5, 10), nan_at=[6])
    assert ev.poll() == [] and not stop_file.exists()


def test_all_ranks_are_followed_with_their_own_rule_state(file_uri: str) -> None:
    store = open_store(file_uri)
    r0 = RunBuilder(store, rank=0, world_size=2)
    r1 = RunBuilder(store, rank=1)
    r0.segment(range(5))
    r1.segment(range(5), nan_at=[4])
    ev = Evaluator(file_uri, rules=[NAN_GUARD, ledger()], checkpoint=False)
    (verdict,) = ev.poll()
    assert (verdict.rule, verdict.rank, verdict.step) == ("nan-guard", 1, 4)
    assert ev.ranks == [0, 1]
    assert [t.rules[1].steps for t in ev._tracks.values()] == [list(range(5))] * 2  # type: ignore[attr-defined]
    r0.end()
    ev.poll()
    assert not ev.ended  # rank 1 still writes
    r1.end()
    ev.poll()
    assert ev.ended


def test_a_rank_that_appears_later_is_picked_up(file_uri: str) -> None:
    store = open_store(file_uri)
    RunBuilder(store, rank=0, world_size=2).segment(range(3))
    ev = Evaluator(file_uri, rules=[ledger()], checkpoint=False)
    ev.poll()
    assert ev.ranks == [0]
    RunBuilder(store, rank=1).segment(range(3))
    ev.poll()
    assert ev.ranks == [0, 1] and ev._tracks[1].last_step == 2


def test_a_single_rank_evaluator_can_start_before_the_rank_writes(file_uri: str) -> None:
    ev = Evaluator(file_uri, rules=[ledger()], rank=3, checkpoint=False)
    assert ev.poll() == [] and ev.last_step is None
    RunBuilder(open_store(file_uri), rank=3).segment(range(4))
    ev.poll()
    assert ev.ranks == [3] and ev.last_step == 3


def test_invalid_rule_entries_fail_at_construction_naming_the_entry(file_uri: str) -> None:
    with pytest.raises(ConfigError, match=r"rules\[1\] .*duplicate rule name 'ledger'"):
        Evaluator(file_uri, rules=[ledger(), ledger()], checkpoint=False)
    with pytest.raises(ConfigError, match=r"rules\[0\].*parameter '?fire_at"):
        Evaluator(file_uri, rules=[ledger(fire_at="often")], checkpoint=False)


def test_the_evaluator_never_imports_torch() -> None:
    code = (
        "import sys; import trainguard.sidecar.evaluator, trainguard.sidecar.server, trainguard.sidecar.report_status; "
        "import trainguard.commands.sidecar, trainguard.commands.evaluate; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_while_a_rank_is_silent_heartbeats_let_stalled_training_fire_when_following_live(
    file_uri: str,
) -> None:
    now = {"t": 1_000.0}
    RunBuilder(open_store(file_uri)).segment(range(5), wall_time=1_000.0)
    stalled = RuleSpec(type="stalled_training", params={"threshold": 60})
    ev = Evaluator(file_uri, rules=[stalled, ledger()], checkpoint=False, clock=lambda: now["t"])
    assert ev.poll(heartbeat=True) == []
    now["t"] += 30
    assert ev.poll(heartbeat=True) == []
    now["t"] += 120
    assert ev.poll() == []  # offline polls send no heartbeat: an old stored run is not "stalled"
    (verdict,) = ev.poll(heartbeat=True)
    assert (verdict.rule, verdict.state, verdict.step) == ("stalled_training", RuleState.ISSUES_FOUND, 4)
    assert ev._tracks[0].rules[1].steps == list(range(5))  # type: ignore[attr-defined]  # others never see heartbeats


class FlakyFileStore(FileStore):
    """The real file backend, with one read failing once as a store outage would (fault injection)."""

    def __init__(self, uri: str, *, fail_key: str) -> None:
        super().__init__(uri)
        self.fail_key: str | None = fail_key

    def get(self, key: str) -> bytes:
        if key == self.fail_key:
            self.fail_key = None
            raise StoreError(f"cannot read {self.uri}/{key}: connection reset (injected)")
        return super().get(key)


def test_a_store_failure_in_the_middle_of_a_listing_skips_no_step(file_uri: str) -> None:
    b = RunBuilder(open_store(file_uri))
    keys = [b.segment(range(start, start + 5)) for start in (0, 5, 10)]
    store = FlakyFileStore(file_uri, fail_key=keys[1])
    ev = Evaluator(file_uri, rules=[ledger()], store=store, checkpoint=False)
    ev.poll()
    assert ev.last_step == 4  # the first segment is evaluated, the failing one is not skipped ...
    ev.poll()
    assert ev._tracks[0].rules[0].steps == list(range(15))  # type: ignore[attr-defined]  # ... but read next time
    store.fail_key = keys[0]
    ev2 = Evaluator(file_uri, rules=[ledger()], store=store, checkpoint=False)
    with pytest.raises(StoreError, match="injected"):
        ev2.poll()
    ev2.poll()
    assert ev2._tracks[0].rules[0].steps == list(range(15))  # type: ignore[attr-defined]


@pytest.mark.slow
def test_following_a_run_while_the_recorder_writes_it_delivers_every_saved_step_once(run_uri: str) -> None:
    seen = RuleSpec(type=custom("SeenData"), name="seen")
    ev = Evaluator(run_uri, rules=[seen, NAN_GUARD], checkpoint=False)
    done = threading.Event()
    follower = threading.Thread(
        target=ev.run, args=(done,), kwargs={"poll_interval_seconds": 0.02, "idle_timeout_seconds": 60}
    )
    follower.start()
    try:
        with trainguard.Recorder(
            run_uri, save_interval=2, flush_every_steps=7, flush_interval_seconds=0.01
        ) as rec:
            w = np.ones((8, 4))
            for step in range(300):
                w = w * 0.999
                if step == 250:
                    w[0, 0] = np.inf
                rec.record_tensor("fc.weight", w, collection="weights")
                rec.record_scalar("loss", 1.0 / (step + 1))
                rec.step()
        follower.join(60)
    finally:
        done.set()
        follower.join(10)
    assert ev.ended and not follower.is_alive()
    rule = ev._tracks[0].rules[0]
    assert rule.stats_steps == list(range(0, 300, 2))  # type: ignore[attr-defined]
    assert rule.loss_steps == list(range(0, 300, 2))  # type: ignore[attr-defined]
    assert (
        ev.rule_status["nan-guard"].state == RuleState.ISSUES_FOUND
        and ev.rule_status["nan-guard"].step == 250
    )
