"""A restarted evaluator resumes from its checkpoint: no alert repeated, no step skipped, none read twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.sidecar.runs import RunBuilder, custom
from trainguard.api.enums import Action, RuleState
from trainguard.api.rules_config import RuleSpec
from trainguard.sidecar import checkpoint
from trainguard.sidecar.evaluator import Evaluator
from trainguard.store.backends import open_store

REPO = Path(__file__).resolve().parents[2]
RULES = [
    RuleSpec(type=custom("NonFinite"), name="nan-guard", action=Action.STOP),
    RuleSpec(type=custom("StepLedger"), name="ledger", params={"fire_at": [12, 37]}),
]
NAN_STEP = 31


def _write(b: RunBuilder, first: int, last: int) -> None:
    for start in range(first, last, 5):
        steps = range(start, start + 5)
        b.segment(steps, nan_at=[s for s in steps if s == NAN_STEP])


def _transitions(verdicts: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [(v["rule"], v["state"], v["step"], v["rank"], v["action"]) for v in verdicts]


def _uninterrupted(uri: str) -> list[tuple[object, ...]]:
    ev = Evaluator(uri, rules=RULES, checkpoint=False)
    return _transitions([v.to_dict() for v in ev.poll()])


def test_a_new_evaluator_resumes_where_the_checkpoint_left_off(run_uri: str) -> None:
    store = open_store(run_uri)
    b = RunBuilder(store)
    _write(b, 0, 25)
    first = Evaluator(run_uri, rules=RULES)
    before = [v.to_dict() for v in first.poll()]
    del first  # as if the process died right after its last checkpoint
    _write(b, 25, 50)
    b.end(last_step=49)
    second = Evaluator(run_uri, rules=RULES)
    assert second.rule_status["ledger"].state == RuleState.ISSUES_FOUND  # restored, so not emitted again
    after = [v.to_dict() for v in second.poll()]
    assert _transitions(before + after) == _uninterrupted(run_uri)
    assert second._tracks[0].rules[1].steps == list(range(50))  # type: ignore[attr-defined]
    assert second.segments_total == 5  # only the new segments were read
    assert [f.step for f in second.findings if f.rule == "ledger"] == [12, 37]


def test_a_stop_already_requested_is_not_requested_again_after_a_restart(
    file_uri: str, tmp_path: Path
) -> None:
    store = open_store(file_uri)
    b = RunBuilder(store)
    _write(b, 0, 35)
    stop_file = tmp_path / "stop"
    first = Evaluator(file_uri, rules=RULES, stop_file=str(stop_file))
    assert any(v.action == Action.STOP for v in first.poll())
    stop_file.unlink()
    _write(b, 35, 40)
    second = Evaluator(file_uri, rules=RULES, stop_file=str(stop_file))
    assert second.stop_requested and second.poll() == [] and not stop_file.exists()


def test_a_damaged_checkpoint_is_ignored_and_evaluation_starts_over(file_uri: str) -> None:
    store = open_store(file_uri)
    _write(RunBuilder(store), 0, 20)
    store.put(checkpoint.key_for(None), b"{not json")
    ev = Evaluator(file_uri, rules=RULES)
    assert [v.step for v in ev.poll()] == [12]


def _sidecar(config: Path, stdout: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with open(stdout, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "trainguard", "sidecar", "--config", str(config)],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO,
        )  # fmt: skip


def _wait_for(predicate, *, timeout_seconds: float, what: str, proc: subprocess.Popen[bytes], log: Path):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    pytest.fail(f"{what} did not happen (sidecar exit status {proc.poll()}):\n{log.read_text()[-3000:]}")


def _verdict_lines(path: Path) -> list[dict[str, object]]:
    out = []
    for line in path.read_text().splitlines():
        if line.startswith('{"verdict"'):
            out.append(json.loads(line)["verdict"])
    return out


@pytest.mark.slow
def test_killing_the_sidecar_mid_run_and_restarting_it_repeats_no_alert_and_skips_no_step(
    run_uri: str, tmp_path: Path
) -> None:
    store = open_store(run_uri)
    b = RunBuilder(store)
    config = tmp_path / "sidecar.yaml"
    stop_file = tmp_path / "stop"
    config.write_text(
        yaml.safe_dump(
            {
                "run_uri": run_uri,
                "rank": 0,
                "s3_endpoint": os.environ.get("AWS_ENDPOINT_URL"),
                "rules": [r.model_dump(mode="json", exclude_none=True) for r in RULES],
                "metrics_port": 0,
                "metrics_address": "127.0.0.1",
                "stop_file": str(stop_file),
                "poll_interval_seconds": 0.05,
                "idle_timeout_seconds": 120,
            }
        )
    )
    key = checkpoint.key_for(0)

    def checkpointed_step() -> int | None:
        state = checkpoint.load(store, key)
        return state.ranks["0"].last_step if state and "0" in state.ranks else None

    _write(b, 0, 25)
    log1 = tmp_path / "first.log"
    first = _sidecar(config, log1)
    try:
        _wait_for(
            lambda: checkpointed_step() == 24,
            timeout_seconds=60,
            what="checkpoint at step 24",
            proc=first,
            log=log1,
        )
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(10)
    assert first.returncode == -signal.SIGKILL
    assert not stop_file.exists()

    _write(b, 25, 50)
    b.end(last_step=49)
    log2 = tmp_path / "second.log"
    second = _sidecar(config, log2)
    try:
        second.wait(60)
    finally:
        if second.poll() is None:
            second.kill()
            second.wait(10)
    assert second.returncode == 0, log2.read_text()[-3000:]

    emitted = _verdict_lines(log1) + _verdict_lines(log2)
    assert _transitions(emitted) == _uninterrupted(run_uri)
    assert [v["step"] for v in _verdict_lines(log1)] == [
        12
    ]  # the first process did its share before the kill
    state = checkpoint.load(store, key)
    assert state is not None
    assert state.ranks["0"].rules["ledger"]["own"]["steps"] == list(range(50))
    assert state.ranks["0"].ended
    assert json.loads(stop_file.read_text())["rule"] == "nan-guard"


def test_a_rule_whose_state_is_not_json_is_left_out_of_checkpoints_and_the_others_are_kept(
    file_uri: str,
) -> None:
    store = open_store(file_uri)
    _write(RunBuilder(store), 0, 15)
    opaque = RuleSpec(type=custom("OpaqueState"), name="opaque")
    ev = Evaluator(file_uri, rules=[*RULES, opaque])
    assert [v.step for v in ev.poll()] == [12]
    state = checkpoint.load(store, checkpoint.key_for(None))
    assert state is not None and set(state.ranks["0"].rules) == {"nan-guard", "ledger"}
    assert state.ranks["0"].rules["ledger"]["own"]["steps"] == list(range(15))
