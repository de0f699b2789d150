"""The whole loop: the operator renders a DebugJob, the real sidecar follows the run and reports, the operator stops the Job."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.kube import DEBUGJOB_RESOURCE, KubeEnv, debugjob_manifest, eventually
from tests.operator.conftest import OperatorProcess
from tests.sidecar.runs import RunBuilder, start_pod
from trainguard.store.backend import open_store

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _status(kube: KubeEnv) -> dict[str, Any]:
    return dict((kube.get(DEBUGJOB_RESOURCE, "default", "train") or {}).get("status") or {})


async def test_sidecar_report_of_a_nan_stops_the_job_through_the_operator(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    rules = [{"type": "exploding_tensor", "action": "stop"}, {"type": "loss_spike", "action": "notify"}]
    await kube.create(
        DEBUGJOB_RESOURCE, debugjob_manifest("train", rules=rules, capture_uri=f"file://{tmp_path}/runs")
    )
    cm = await eventually(
        lambda: kube.get("v1/configmaps", "default", "train-trainguard"), what="the ConfigMap"
    )
    await kube.patch(
        "batch/v1/jobs", "default", "train", {"status": {"active": 1, "ready": 1}}, subresource="status"
    )
    await eventually(lambda: _status(kube).get("phase") == "Running", what="phase Running")

    # The pod's view: the operator's sidecar.yaml, with local ports and paths instead of the pod's.
    config = yaml.safe_load(cm["data"]["sidecar.yaml"])
    stop_file = start_pod(
        tmp_path / "shared"
    )  # the sidecar starts first (its startup probe holds the trainer)
    config.update(
        metrics_port=0, metrics_address="127.0.0.1", stop_file=str(stop_file), poll_interval_seconds=0.05
    )
    config_path = tmp_path / "sidecar.yaml"
    config_path.write_text(yaml.safe_dump(config))
    # The trainer's writes (rank 0): a NaN appears at step 8.
    run = RunBuilder(open_store(config["run_uri"]), rank=0)
    run.segment(range(5))
    run.segment(range(5, 10), nan_at=[8])

    env = dict(os.environ, PYTHONPATH=str(REPO), KUBECONFIG=str(kube.kubeconfig), JOB_COMPLETION_INDEX="0")
    env.pop("RANK", None)
    log = (tmp_path / "sidecar.log").open("w")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "trainguard", "sidecar", "--config", str(config_path),
        stdout=log, stderr=asyncio.subprocess.STDOUT, env=env, cwd=str(REPO),
    )  # fmt: skip
    try:
        await eventually(
            lambda: _status(kube).get("phase") == "Stopped", timeout_seconds=60, what="phase Stopped"
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        log.close()

    assert kube.get("batch/v1/jobs", "default", "train")["spec"]["suspend"] is True  # type: ignore[index]
    assert stop_file.exists(), "the sidecar also raises the stop flag for the hook"
    status = _status(kube)
    rule = next(r for r in status["rules"] if r["name"] == "exploding_tensor")
    assert (
        rule["state"] == "IssuesFound"
        and rule["step"] == 8
        and rule["rank"] == 0
        and rule["action"] == "stop"
    )
    assert status["triggeredRule"] == "exploding_tensor"
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Stopped"]["reason"] == "RuleTriggered"
