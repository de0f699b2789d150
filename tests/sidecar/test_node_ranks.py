"""nprocPerNode > 1: one sidecar per pod follows every global rank of its node, reports each rank
under its own key, and stops the node for a stop verdict on any of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.sidecar.runs import RunBuilder, custom
from trainguard.api.enums import Action, RuleState
from trainguard.api.rules_config import RuleSpec
from trainguard.api.sidecar_config import SidecarConfig
from trainguard.sidecar import checkpoint
from trainguard.sidecar.evaluator import Evaluator
from trainguard.sidecar.report_status import build_report, reports_patch
from trainguard.store import run_format
from trainguard.store.backends import open_store

RULES = [
    RuleSpec(type=custom("NonFinite"), name="nan-guard", action=Action.STOP),
    RuleSpec(type=custom("StepLedger"), name="ledger"),
]


def _four_ranks(file_uri: str, *, nan_on: int, end: bool = False) -> dict[int, RunBuilder]:
    store = open_store(file_uri)
    runs = {r: RunBuilder(store, rank=r, world_size=4) for r in range(4)}
    for r, b in runs.items():
        b.segment(range(5), nan_at=[3] if r == nan_on else [])
        if end:
            b.end(last_step=4)
    return runs


def test_the_pod_with_index_i_follows_ranks_i_times_n_to_the_next_node() -> None:
    config = SidecarConfig(run_uri="file:///x", ranks_per_pod=8)
    assert config.pod_ranks(0) == list(range(8)) and config.pod_ranks(3) == list(range(24, 32))
    assert SidecarConfig(run_uri="file:///x").pod_ranks(5) == [5]
    assert SidecarConfig(run_uri="file:///x", rank=6, ranks_per_pod=1).pod_ranks(2) == [6]
    with pytest.raises(ValidationError, match="ranks_per_pod"):
        SidecarConfig(run_uri="file:///x", rank=6, ranks_per_pod=2)


def test_a_node_evaluator_follows_exactly_its_ranks_and_stops_for_a_finding_on_any(
    file_uri: str, tmp_path: Path
) -> None:
    _four_ranks(file_uri, nan_on=3)
    stop_file = tmp_path / "stop"
    ev = Evaluator(file_uri, rules=RULES, ranks=[2, 3], checkpoint=False, stop_file=str(stop_file))
    verdicts = ev.poll()
    assert ev.ranks == [2, 3]
    assert [(v.rule, v.state, v.rank, v.action) for v in verdicts] == [
        ("nan-guard", RuleState.ISSUES_FOUND, 3, Action.STOP)
    ]
    assert json.loads(stop_file.read_text())["rule"] == "nan-guard"
    assert ev.rank_status(3)["nan-guard"].state == RuleState.ISSUES_FOUND
    assert ev.rank_status(2)["nan-guard"].state == RuleState.IN_PROGRESS

    other = Evaluator(file_uri, rules=RULES, ranks=[0, 1], checkpoint=False)
    assert other.poll() == [] and other.ranks == [0, 1], "rank 3's NaN belongs to the other node"


def test_each_followed_rank_keeps_its_own_report(file_uri: str) -> None:
    _four_ranks(file_uri, nan_on=2, end=True)
    ev = Evaluator(file_uri, rules=RULES, ranks=[2, 3], checkpoint=False)
    ev.poll()
    ev.poll()  # END is checked once a listing brings nothing new
    assert ev.ended
    reports = {r: build_report(ev, rank=r, now=1_795_300_000.0) for r in ev.ranks}
    states = {r: {x["name"]: (x["state"], x.get("step")) for x in rep["rules"]} for r, rep in reports.items()}
    assert states[2] == {"nan-guard": ("IssuesFound", 3), "ledger": ("NoIssuesFound", 4)}
    assert states[3] == {"nan-guard": ("NoIssuesFound", 4), "ledger": ("NoIssuesFound", 4)}
    assert all(rep["ended"] and rep["lastStep"] == 4 for rep in reports.values())
    patch = reports_patch(reports)
    assert set(patch["status"]["reports"]) == {"rank-00002", "rank-00003"}


def test_a_node_evaluator_checkpoints_per_node_and_resumes_each_rank(file_uri: str) -> None:
    runs = _four_ranks(file_uri, nan_on=3)
    first = Evaluator(file_uri, rules=RULES, ranks=[2, 3])
    assert len(first.poll()) == 1
    key = checkpoint.key_for([2, 3])
    assert key == run_format.evaluator_state_key([2, 3]) == "evaluator/ranks-00002_00003/state.json"
    assert checkpoint.key_for([3]) == checkpoint.key_for(3) == "evaluator/rank-00003/state.json"
    assert open_store(file_uri).exists(key)

    for r in (2, 3):
        runs[r].segment(range(5, 8))
        runs[r].end(last_step=7)
    second = Evaluator(file_uri, rules=RULES, ranks=[2, 3])
    assert second.rank_status(3)["nan-guard"].state == RuleState.ISSUES_FOUND
    assert second.rank_status(2)["nan-guard"].state == RuleState.IN_PROGRESS
    verdicts = second.poll() + second.poll()  # the second listing finds END
    # nan-guard found issues before the restart: no repeat; only ledger ends, once, for the node.
    assert [(v.rule, v.state) for v in verdicts] == [("ledger", RuleState.NO_ISSUES_FOUND)]
    assert second.rank_status(2)["nan-guard"].state == RuleState.NO_ISSUES_FOUND
    assert second.rank_status(3)["nan-guard"].state == RuleState.ISSUES_FOUND
    assert second.rank_status(2)["ledger"].step == 7


def test_a_one_rank_checkpoint_without_per_rank_statuses_still_restores_the_ranks_report(
    file_uri: str,
) -> None:
    _four_ranks(file_uri, nan_on=1)
    Evaluator(file_uri, rules=RULES, rank=1).poll()
    store = open_store(file_uri)
    key = checkpoint.key_for(1)
    doc = json.loads(store.get(key))
    for position in doc["ranks"].values():
        del position["statuses"]  # as written before ranks kept their own statuses
    store.put(key, json.dumps(doc).encode())
    restarted = Evaluator(file_uri, rules=RULES, rank=1)
    assert restarted.rank_status(1)["nan-guard"].state == RuleState.ISSUES_FOUND
    assert build_report(restarted, rank=1, now=1_795_300_000.0)["lastStep"] == 4
