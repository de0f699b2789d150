"""A rank restarted on the same URI: a retried pod's sidecar follows its own trainer, and an evaluator that
reads several attempts of a rank starts the rules over at each.

The attempts are written as two pods' trainers write them (one `RunBuilder` each, later start times).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from tests.sidecar.runs import RunBuilder, custom
from trainguard.api.enums import Action, RuleState
from trainguard.api.rules_config import RuleSpec
from trainguard.commands.sidecar import pod_started_at
from trainguard.sidecar.evaluator import Evaluator
from trainguard.store.backends import Store, open_store

RULES = [
    RuleSpec(type=custom("NonFinite"), name="nan-guard", action=Action.STOP),
    RuleSpec(type=custom("StepLedger"), name="ledger", params={"fire_at": []}),
]
POD_1 = time.time() - 3600
POD_2 = POD_1 + 600


def drain(ev: Evaluator) -> list[tuple[str, RuleState, int | None]]:
    """Poll as the sidecar does until nothing new comes (END is taken on a poll that brings no segment)."""
    out = []
    for _ in range(3):
        out += [(v.rule, v.state, v.step) for v in ev.poll()]
    return out


def crashed_attempt(store: Store) -> RunBuilder:
    """Pod 1's trainer: NaN at step 8; it closes its run (END) before the pod fails."""
    b = RunBuilder(store, started=POD_1 + 1)
    b.segment(range(5))
    b.segment(range(5, 10), nan_at=[8])
    b.end(last_step=9)
    return b


def healthy_attempt(store: Store) -> RunBuilder:
    """Pod 2's trainer (the Job's retry): from step 0 again, healthy."""
    b = RunBuilder(store, started=POD_2 + 1)
    b.segment(range(5))
    b.segment(range(5, 10))
    b.end(last_step=9)
    return b


def test_the_sidecar_of_a_retried_pod_follows_its_own_trainer_and_not_the_earlier_pods(run_uri: str) -> None:
    store = open_store(run_uri)
    crashed_attempt(store)
    pod1 = Evaluator(run_uri, rules=RULES, rank=0, not_before=POD_1)
    drain(pod1)
    assert pod1.ended and pod1.rank_status(0)["nan-guard"].state == RuleState.ISSUES_FOUND

    # Pod 2's sidecar starts (before its trainer) and restores pod 1's checkpoint.
    pod2 = Evaluator(run_uri, rules=RULES, rank=0, not_before=POD_2)
    assert drain(pod2) == []
    assert not pod2.ended  # pod 1's END closes pod 1's attempt only
    assert pod2.segments_total == 0  # pod 1's segments are pod 1's evaluator's
    # The rank's rules start over: its report is InProgress again, but IssuesFound is final (the DebugJob
    # aggregates the ranks' reports and keeps what pod 1 found; the stop is not asked for twice).
    assert pod2.rank_status(0)["ledger"].state == RuleState.IN_PROGRESS
    assert pod2.rank_status(0)["nan-guard"].state == RuleState.ISSUES_FOUND
    assert pod2.rule_status["nan-guard"].state == RuleState.ISSUES_FOUND

    healthy_attempt(store)
    assert drain(pod2) == []  # nothing repeated: ledger's NoIssuesFound came from pod 1 already
    assert pod2.ended and pod2.segments_total == 2
    assert pod2.rank_status(0)["ledger"].state == RuleState.NO_ISSUES_FOUND
    assert pod2.rank_status(0)["ledger"].step == 9
    assert pod2._tracks[0].rules[1].steps == list(range(10))  # type: ignore[attr-defined]


def test_an_evaluator_reading_two_attempts_of_a_rank_starts_the_rules_over_at_the_second(
    run_uri: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store(run_uri)
    first, second = crashed_attempt(store), healthy_attempt(store)
    ev = Evaluator(run_uri, rules=RULES, checkpoint=False)
    with caplog.at_level(logging.WARNING, logger="trainguard.sidecar.evaluator"):
        verdicts = drain(ev)
    assert verdicts == [
        ("nan-guard", RuleState.ISSUES_FOUND, 8),
        ("ledger", RuleState.NO_ISSUES_FOUND, 9),
    ]
    assert f"rank 0 was restarted (writer attempt {second.attempt} after {first.attempt})" in caplog.text
    assert ev.ended and ev.segments_total == 4
    # Only the second attempt's steps reached the rules after the restart (step 0 again, not 10).
    assert ev._tracks[0].rules[1].steps == list(range(10))  # type: ignore[attr-defined]
    assert ev.rank_status(0)["nan-guard"].state == RuleState.ISSUES_FOUND  # final, whatever came after


def test_the_pod_start_outlives_a_restarted_sidecar(tmp_path: Path) -> None:
    marker = tmp_path / "pod-started-at"
    assert pod_started_at(str(marker), 100.0) == 100.0
    assert pod_started_at(str(marker), 250.0) == 100.0  # the container restarted: its pod did not
    # Without a writable volume the sidecar uses its own start (and says so in the log).
    assert pod_started_at(str(tmp_path / "missing" / "pod-started-at"), 250.0) == 250.0


def test_a_restarted_sidecar_keeps_its_checkpoint_on_a_format_1_run_without_attempts(
    run_uri: str, caplog: pytest.LogCaptureFixture
) -> None:
    # An older trainer writes format-1 keys (no attempt); the segment filter and END treat "no attempt" as
    # the current one, and so must the checkpoint: the sidecar's container restarts in the same pod.
    store = open_store(run_uri)
    b = RunBuilder(store, started=POD_1 + 1)
    for key in store.list("rank-00000/meta-"):
        store.put("rank-00000/meta-000000.json", store.get(key))
        store.delete(key)

    def old_segment(steps: range) -> None:
        key = b.segment(steps)
        store.put(f"rank-00000/seg-{steps[0]:012d}-{steps[-1]:012d}-{b.seq - 1:06d}.npz", store.get(key))
        store.delete(key)

    old_segment(range(5))
    first = Evaluator(run_uri, rules=RULES, rank=0, not_before=POD_1)
    assert drain(first) == [] and first.segments_total == 1

    old_segment(range(5, 10))
    restarted = Evaluator(run_uri, rules=RULES, rank=0, not_before=POD_1)
    with caplog.at_level(logging.INFO, logger="trainguard.sidecar.evaluator"):
        drain(restarted)
    assert "earlier pod" not in caplog.text
    assert restarted.segments_total == 1  # the new segment only
    assert restarted._tracks[0].rules[1].steps == list(range(10))  # type: ignore[attr-defined]
