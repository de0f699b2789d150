"""The sidecar reports each rank's rule statuses into the DebugJob's status, against an emulated API server (KMock)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from tests.kube import DEBUGJOB_RESOURCE, KubeEnv, debugjob_manifest, eventually
from tests.sidecar.runs import RunBuilder, custom
from trainguard.api.enums import Action
from trainguard.api.rules_config import RuleSpec
from trainguard.api.sidecar_config import DebugJobRef
from trainguard.sidecar import report_status
from trainguard.sidecar.evaluator import Evaluator
from trainguard.sidecar.report_status import StatusReporter
from trainguard.store.backends import open_store

RULES = [
    RuleSpec(type=custom("NonFinite"), name="nan-guard", action=Action.STOP),
    RuleSpec(type=custom("StepLedger"), name="ledger"),
]


class Clock:
    def __init__(self) -> None:
        self.now = 1_795_300_000.0

    def __call__(self) -> float:
        return self.now


async def _debugjob(kube: KubeEnv, name: str = "dj1") -> DebugJobRef:
    created = await kube.create(DEBUGJOB_RESOURCE, debugjob_manifest(name))
    return DebugJobRef(namespace="default", name=name, uid=created["metadata"]["uid"])


def _reports(kube: KubeEnv, name: str = "dj1") -> dict[str, Any]:
    obj = kube.get(DEBUGJOB_RESOURCE, "default", name) or {}
    return dict((obj.get("status") or {}).get("reports") or {})


async def test_each_rank_patches_only_its_own_report(kube: KubeEnv, file_uri: str) -> None:
    ref = await _debugjob(kube)
    store = open_store(file_uri)
    RunBuilder(store, rank=0, world_size=4).segment(range(5))
    RunBuilder(store, rank=3).segment(range(5), nan_at=[3])
    clock = Clock()
    reporters = []
    for rank in (3, 0):
        ev = Evaluator(file_uri, rules=RULES, rank=rank, checkpoint=False, clock=clock)
        ev.poll()
        reporters.append(StatusReporter(ref, rank=rank, evaluator=ev, clock=clock))
    try:
        assert await asyncio.to_thread(reporters[0].report)
        assert await asyncio.to_thread(reporters[1].report)
    finally:
        for r in reporters:
            await asyncio.to_thread(r.close)
    reports = _reports(kube)
    assert set(reports) == {"rank-00003", "rank-00000"}
    r3 = reports["rank-00003"]
    assert r3["lastStep"] == 4 and r3["ended"] is False and r3["time"].endswith("Z")
    nan3 = next(r for r in r3["rules"] if r["name"] == "nan-guard")
    assert nan3["state"] == "IssuesFound" and nan3["step"] == 3 and nan3["severity"] == "critical"
    assert "fc2.weight" in nan3["message"] and nan3["time"].endswith("Z")
    assert [r["state"] for r in reports["rank-00000"]["rules"]] == ["InProgress", "InProgress"]
    assert "action" not in nan3  # the operator takes actions from the DebugJob spec, never from a pod


async def test_reports_follow_transitions_at_once_and_the_step_only_at_the_heartbeat(
    kube: KubeEnv, file_uri: str
) -> None:
    ref = await _debugjob(kube)
    b = RunBuilder(open_store(file_uri), rank=1)
    clock = Clock()
    ev = Evaluator(file_uri, rules=RULES, rank=1, checkpoint=False, clock=clock)
    reporter = StatusReporter(ref, rank=1, evaluator=ev, interval_seconds=10.0, clock=clock)
    try:
        b.segment(range(5))
        ev.poll()
        assert await asyncio.to_thread(reporter.report)
        b.segment(range(5, 10))
        ev.poll()
        clock.now += 5
        assert not await asyncio.to_thread(reporter.report)  # nothing changed state; heartbeat not due
        assert _reports(kube)["rank-00001"]["lastStep"] == 4
        clock.now += 5
        assert await asyncio.to_thread(reporter.report)  # heartbeat: lastStep moved
        assert _reports(kube)["rank-00001"]["lastStep"] == 9
        clock.now += 60
        assert not await asyncio.to_thread(reporter.report)  # heartbeat due, but the step did not move
        b.segment(range(10, 12), nan_at=[11])
        ev.poll()
        assert await asyncio.to_thread(reporter.report)  # a transition goes out at once
        states = {r["name"]: r["state"] for r in _reports(kube)["rank-00001"]["rules"]}
        assert states == {"nan-guard": "IssuesFound", "ledger": "InProgress"}
        b.end()
        ev.poll()
        assert await asyncio.to_thread(reporter.report)
        final = _reports(kube)["rank-00001"]
        assert (
            final["ended"] is True
            and {r["name"]: r["state"] for r in final["rules"]}["ledger"] == "NoIssuesFound"
        )
    finally:
        await asyncio.to_thread(reporter.close)
    assert reporter.reports_sent == 4


async def test_the_reporter_thread_reports_a_verdict_without_waiting_for_the_heartbeat(
    kube: KubeEnv, file_uri: str
) -> None:
    ref = await _debugjob(kube)
    b = RunBuilder(open_store(file_uri), rank=0)
    ev = Evaluator(file_uri, rules=RULES, rank=0, checkpoint=False)
    reporter = StatusReporter(ref, rank=0, evaluator=ev, interval_seconds=3600.0).start()
    try:
        await eventually(lambda: "rank-00000" in _reports(kube), what="the first report")
        b.segment(range(3), nan_at=[2])
        for v in ev.poll():
            reporter.on_verdict(v)

        def nan_state() -> str | None:
            rules = _reports(kube).get("rank-00000", {}).get("rules", [])
            return next(
                (r["state"] for r in rules if r["name"] == "nan-guard" and r["state"] == "IssuesFound"), None
            )

        await eventually(nan_state, timeout_seconds=5, what="nan-guard IssuesFound in the status")
    finally:
        await asyncio.to_thread(reporter.close)


async def test_a_recreated_debugjob_with_another_uid_gets_no_reports(kube: KubeEnv, file_uri: str) -> None:
    await _debugjob(kube)
    RunBuilder(open_store(file_uri)).segment(range(3))
    ev = Evaluator(file_uri, rules=RULES, rank=0, checkpoint=False)
    ev.poll()
    stale = DebugJobRef(namespace="default", name="dj1", uid="00000000-0000-0000-0000-000000000000")
    reporter = StatusReporter(stale, rank=0, evaluator=ev)
    try:
        assert not await asyncio.to_thread(reporter.report, force=True)
    finally:
        await asyncio.to_thread(reporter.close)
    assert reporter.refused is not None and "deleted and created again" in reporter.refused
    assert _reports(kube) == {}


async def test_a_failed_report_is_retried_and_never_raises(kube: KubeEnv, file_uri: str) -> None:
    ref = await _debugjob(kube)
    RunBuilder(open_store(file_uri)).segment(range(3))
    ev = Evaluator(file_uri, rules=RULES, rank=0, checkpoint=False)
    ev.poll()
    missing = DebugJobRef(namespace="default", name="absent")
    reporter = StatusReporter(missing, rank=0, evaluator=ev)
    try:
        assert not await asyncio.to_thread(reporter.report)
        assert reporter.last_error is not None and "404" in reporter.last_error
        reporter.ref = ref
        assert await asyncio.to_thread(reporter.report)  # the next attempt goes through
    finally:
        await asyncio.to_thread(reporter.close)
    assert reporter.last_error is None


def test_on_a_cluster_the_client_reads_the_token_the_operator_mounted_into_the_sidecar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No automounted token in the pod: the client must take the projected one from its own mount.
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    (tmp_path / "token").write_text("pod-bound-token")  # the kubelet writes it without a newline
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    api = report_status.custom_objects_api(str(tmp_path))
    try:
        conf = api.api_client.configuration
        assert conf.host == "https://10.96.0.1:443"
        assert conf.api_key["BearerToken"] == "bearer pod-bound-token"
        assert conf.ssl_ca_cert == str(tmp_path / "ca.crt")
        assert conf.refresh_api_key_hook is not None, "the rotated token is read again"
    finally:
        api.api_client.close()
    (tmp_path / "token").unlink()
    with pytest.raises(kubernetes.config.ConfigException, match="token file does not exist"):
        report_status.custom_objects_api(str(tmp_path))
