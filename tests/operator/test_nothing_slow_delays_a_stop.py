"""Neither a webhook receiver nor a store that never answers holds up another DebugJob's stop.

The operator runs as `trainguard operator --workers=1`: one handler thread for every DebugJob, so a
webhook delivery or END markers written on that thread would block the stop below for the whole
retry budget or read timeout (a minute and more).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.kube import (
    DEBUGJOB_RESOURCE,
    KubeEnv,
    debugjob_manifest,
    eventually,
    operator_process,
)
from tests.operator.receivers import RawReceiver

pytestmark = pytest.mark.slow
JOBS = "batch/v1/jobs"
RULES = [{"type": "exploding_tensor", "action": "stop"}, {"type": "loss_spike", "action": "notify"}]


@pytest_asyncio.fixture
async def one_worker_operator(kube: KubeEnv, tmp_path: Path) -> AsyncIterator[None]:
    """`trainguard operator -A --workers=1` as a process."""
    async with operator_process(kube.kubeconfig, tmp_path / "operator.log", "--workers=1"):
        yield


async def _running(kube: KubeEnv, name: str, tmp_path: Path, **spec: Any) -> None:
    manifest = debugjob_manifest(name, rules=RULES, capture_uri=f"file://{tmp_path}/runs", **spec)
    await kube.create(DEBUGJOB_RESOURCE, manifest)
    await eventually(lambda: kube.get(JOBS, "default", name), timeout_seconds=30, what=f"the Job of {name}")
    await kube.patch(JOBS, "default", name, {"status": {"active": 1, "ready": 1}}, subresource="status")
    await eventually(lambda: _phase(kube, name) == "Running", timeout_seconds=30, what=f"{name} Running")


def _phase(kube: KubeEnv, name: str) -> str | None:
    return ((kube.get(DEBUGJOB_RESOURCE, "default", name) or {}).get("status") or {}).get("phase")


async def _secret(kube: KubeEnv, name: str, data: dict[str, str]) -> None:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    await kube.create("v1/secrets", {"apiVersion": "v1", "kind": "Secret",
                                     "metadata": {"name": name, "namespace": "default"}, "data": encoded})  # fmt: skip


async def _report(kube: KubeEnv, name: str, rule: str) -> None:
    report = {"lastStep": 10, "rules": [{"name": rule, "state": "IssuesFound", "step": 10, "message": "x"}]}
    await kube.patch(DEBUGJOB_RESOURCE, "default", name, {"status": {"reports": {"rank-00000": report}}},
                     subresource="status")  # fmt: skip


async def test_a_stop_goes_through_while_another_debugjobs_webhook_hangs(
    kube: KubeEnv, one_worker_operator: None, tmp_path: Path
) -> None:
    stuck = RawReceiver("hang")
    try:
        await _secret(kube, "hooks", {"url": stuck.url})
        hooks = {"notify": {"webhooks": [{"name": "team", "urlSecretRef": {"name": "hooks", "key": "url"}}]}}
        await _running(kube, "noisy", tmp_path, actions=hooks)
        await _running(kube, "victim", tmp_path)

        await _report(kube, "noisy", "loss_spike")
        await asyncio.to_thread(stuck.wait_connected)
        await _report(kube, "victim", "exploding_tensor")
        await eventually(
            lambda: _phase(kube, "victim") == "Stopped", timeout_seconds=30, what="victim Stopped"
        )
        job = kube.get(JOBS, "default", "victim")
        assert job is not None and job["spec"]["suspend"] is True

        # The hanging delivery is still in its first attempt (10 s deadline, 5 attempts): nothing was given up.
        failed = [e for e in kube.list("v1/events", "default") if e.get("reason") == "WebhookFailed"]
        assert failed == [], "the stop did not wait for the webhook to fail"
        noisy = [e for e in kube.list("v1/events", "default") if e.get("reason") == "RuleTriggered"]
        assert len(noisy) == 1 and noisy[0]["involvedObject"]["name"] == "noisy"
        assert _phase(kube, "noisy") == "Running", "notify never stops a job"
    finally:
        stuck.close()


async def test_a_stop_goes_through_while_another_debugjobs_end_markers_wait_for_a_store_that_hangs(
    kube: KubeEnv, one_worker_operator: None, tmp_path: Path
) -> None:
    store = RawReceiver(
        "hang"
    )  # an S3 endpoint that accepts connections and never answers (60 s read timeout)
    try:
        await _secret(kube, "s3", {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"})
        capture = {
            "uri": "s3://runs/x",
            "endpoint": f"http://127.0.0.1:{store.port}",
            "secretRef": {"name": "s3"},
        }
        await _running(kube, "stalled", tmp_path, capture=capture)
        await _running(kube, "victim", tmp_path)

        # `stalled` stops and its pods are gone: the operator writes its END markers, into the hanging store.
        await _report(kube, "stalled", "exploding_tensor")
        await eventually(
            lambda: _phase(kube, "stalled") == "Stopped", timeout_seconds=30, what="stalled Stopped"
        )
        await kube.patch(
            JOBS, "default", "stalled", {"status": {"active": 0, "ready": 0}}, subresource="status"
        )
        await asyncio.to_thread(store.wait_connected)

        await _report(kube, "victim", "exploding_tensor")
        await eventually(
            lambda: _phase(kube, "victim") == "Stopped", timeout_seconds=30, what="victim Stopped"
        )
        assert store.open_connections == 1, "the END markers are still waiting for the store"
    finally:
        store.close()
