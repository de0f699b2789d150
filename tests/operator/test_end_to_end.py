"""The whole loop: the operator renders a DebugJob, the real sidecar follows the run and reports, the operator stops the Job."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.kube import DEBUGJOB_RESOURCE, KubeEnv, debugjob_manifest, eventually, terminate
from tests.operator.conftest import OperatorProcess
from tests.sidecar.runs import RunBuilder, start_pod
from trainguard.operator.actions import EVENT_REASON_RULE_TRIGGERED
from trainguard.store.backends import open_store

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _status(kube: KubeEnv) -> dict[str, Any]:
    return dict((kube.get(DEBUGJOB_RESOURCE, "default", "train") or {}).get("status") or {})


def _notified(kube: KubeEnv) -> list[dict[str, Any]]:
    """The Events of notify actions the operator posted."""
    return [e for e in kube.list("v1/events", "default") if e.get("reason") == EVENT_REASON_RULE_TRIGGERED]


def _rule(kube: KubeEnv, name: str) -> dict[str, Any]:
    return next(r for r in _status(kube)["rules"] if r["name"] == name)


async def _running_debugjob(kube: KubeEnv, tmp_path: Path, rules: list[dict[str, Any]]) -> dict[str, Any]:
    """Create the DebugJob `train`, mark its Job running, and return the sidecar config the operator rendered."""
    await kube.create(
        DEBUGJOB_RESOURCE, debugjob_manifest("train", rules=rules, capture_uri=f"file://{tmp_path}/runs")
    )
    cm = await eventually(
        lambda: kube.get("v1/configmaps", "default", "train-trainguard"), what="the ConfigMap"
    )
    await eventually(lambda: kube.get("batch/v1/jobs", "default", "train"), what="the Job")
    await kube.patch(
        "batch/v1/jobs", "default", "train", {"status": {"active": 1, "ready": 1}}, subresource="status"
    )
    await eventually(lambda: _status(kube).get("phase") == "Running", what="phase Running")
    return dict(yaml.safe_load(cm["data"]["sidecar.yaml"]))


@contextlib.asynccontextmanager
async def _pod(kube: KubeEnv, config: dict[str, Any], shared: Path) -> AsyncIterator[Path]:
    """Run one pod's sidecar (the operator's sidecar.yaml with local ports and paths) until the block ends.

    The pod starts (its shared volume) before the block writes the trainer's data, as the startup
    probe orders it; yields the stop file.
    """
    stop_file = start_pod(shared)
    config = dict(config, metrics_port=0, metrics_address="127.0.0.1", stop_file=str(stop_file))
    config_path = shared.parent / f"{shared.name}-sidecar.yaml"
    config_path.write_text(yaml.safe_dump({**config, "poll_interval_seconds": 0.05}))
    env = dict(os.environ, PYTHONPATH=str(REPO), KUBECONFIG=str(kube.kubeconfig), JOB_COMPLETION_INDEX="0")
    env.pop("RANK", None)
    with (shared.parent / f"{shared.name}-sidecar.log").open("w") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "trainguard", "sidecar", "--config", str(config_path),
            stdout=log, stderr=asyncio.subprocess.STDOUT, env=env, cwd=str(REPO),
        )  # fmt: skip
        try:
            yield stop_file
        finally:
            await terminate(proc)


async def test_sidecar_report_of_a_nan_stops_the_job_through_the_operator(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    rules = [{"type": "exploding_tensor", "action": "stop"}, {"type": "loss_spike", "action": "notify"}]
    config = await _running_debugjob(kube, tmp_path, rules)
    async with _pod(kube, config, tmp_path / "shared") as stop_file:
        # The trainer's writes (rank 0): a NaN appears at step 8.
        run = RunBuilder(open_store(config["run_uri"]), rank=0)
        run.segment(range(5))
        run.segment(range(5, 10), nan_at=[8])
        await eventually(
            lambda: _status(kube).get("phase") == "Stopped", timeout_seconds=60, what="phase Stopped"
        )

    assert kube.get("batch/v1/jobs", "default", "train")["spec"]["suspend"] is True  # type: ignore[index]
    assert stop_file.exists(), "the sidecar also raises the stop flag for the hook"
    status = _status(kube)
    rule = _rule(kube, "exploding_tensor")
    assert (
        rule["state"] == "IssuesFound"
        and rule["step"] == 8
        and rule["rank"] == 0
        and rule["action"] == "stop"
    )
    assert status["triggeredRule"] == "exploding_tensor"
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Stopped"]["reason"] == "RuleTriggered"


async def test_a_retried_pod_keeps_what_the_first_pod_found_on_the_debugjob(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    config = await _running_debugjob(kube, tmp_path, [{"type": "exploding_tensor", "action": "notify"}])
    store = open_store(config["run_uri"])

    def report(last_step: int) -> dict[str, Any] | None:
        rep = (_status(kube).get("reports") or {}).get("rank-00000") or {}
        return rep if rep.get("ended") and rep.get("lastStep") == last_step else None

    # Pod 1: the trainer hits NaN at step 8 and exits; the Job's backoffLimit makes a new pod.
    async with _pod(kube, config, tmp_path / "pod1"):
        first = RunBuilder(store, rank=0)
        first.segment(range(5))
        first.segment(range(5, 10), nan_at=[8])
        first.end(last_step=9)
        await eventually(lambda: report(9), timeout_seconds=60, what="pod 1's ended report")
    assert _rule(kube, "exploding_tensor")["state"] == "IssuesFound"
    assert len(_notified(kube)) == 1

    # Pod 2 (same rank, same run URI): a healthy attempt from step 0 to 19, followed by a new sidecar.
    async with _pod(kube, config, tmp_path / "pod2"):
        second = RunBuilder(store, rank=0)
        for start in range(0, 20, 5):
            second.segment(range(start, start + 5))
        second.end(last_step=19)
        rep = await eventually(lambda: report(19), timeout_seconds=60, what="pod 2's ended report")
    assert second.attempt > first.attempt
    # Pod 2's sidecar evaluated its own trainer only (steps 0-19, no NaN), yet the rank keeps pod 1's
    # finding: IssuesFound is final, so the DebugJob still shows it and notified once.
    states = {r["name"]: (r["state"], r.get("step")) for r in rep["rules"]}
    assert states["exploding_tensor"] == ("IssuesFound", 8)
    assert _rule(kube, "exploding_tensor")["state"] == "IssuesFound"
    conditions = {c["type"]: c for c in _status(kube)["conditions"]}
    assert conditions["RuleTriggered"]["status"] == "True"
    assert len(_notified(kube)) == 1
