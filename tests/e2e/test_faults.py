"""Faults mid-run on a real cluster: the operator pod deleted, a sidecar killed, the kubelet restarted.

In each case the run still ends as it should, the stop is the stop rule's and happens exactly once (one
suspension, one Stopped Event, one stop webhook call), and deleting the DebugJob leaves nothing behind.
"""

from __future__ import annotations

from typing import Any

from tests.conftest import SeaweedServer
from tests.e2e.cluster import Cluster, Release, eventually
from tests.e2e.conftest import WebhookReceiver
from tests.e2e.runs import Run, check_stopped_once, delete_and_check_nothing_is_left, submit, submit_diverging
from trainguard.operator.build import SIDECAR_NAME

RUN_TIMEOUT_SECONDS = 480
DIVERGE_FROM_STEP = 600
"""The trainer diverges this many steps in (10-30 s of training): time to inject the fault first."""


def _training(run: Run) -> dict[str, Any]:
    """Wait until both ranks train and the sidecars report steps; return the status."""
    try:
        return eventually(
            lambda: (s := run.status()).get("phase") == "Running" and (s.get("lastStep") or 0) >= 20 and s,
            timeout_seconds=RUN_TIMEOUT_SECONDS,
            what=f"{run.name} training (phase Running, lastStep >= 20)",
        )
    except AssertionError as err:
        raise AssertionError(f"{err}\n{run.logs()}") from err


def _stopped_once(run: Run, webhook: WebhookReceiver) -> None:
    """The run ends Stopped by exploding_tensor with one suspension, one Stopped Event and one stop webhook call
    (the notify rules the diverging trainer may also trip, before the NaN or with it, are no part of it)."""
    try:
        status = run.wait_phase("Stopped", "Succeeded", "Failed", timeout_seconds=RUN_TIMEOUT_SECONDS)
    except AssertionError as err:
        raise AssertionError(f"{err}\n{run.logs()}") from err
    assert status["phase"] == "Stopped", status
    check_stopped_once(run, webhook.received)


def test_deleting_the_operator_pod_mid_run_repeats_and_skips_nothing(
    cluster: Cluster, operator: Release, namespace: str, bridge_s3: SeaweedServer, webhook: WebhookReceiver
) -> None:
    run = submit_diverging(cluster, namespace, "operator-gone", s3=bridge_s3, webhook_url=webhook.url,
                           diverge_from=DIVERGE_FROM_STEP)  # fmt: skip
    _training(run)
    (old,) = [p["metadata"]["name"] for p in operator.operator_pods()]
    cluster.kubectl("delete", "pod", old, "-n", operator.namespace, "--wait=false")
    eventually(
        lambda: [p for p in operator.operator_pods()
                 if p["metadata"]["name"] != old and p["status"].get("phase") == "Running"],
        timeout_seconds=120, what="the operator's new pod running",
    )  # fmt: skip
    _stopped_once(run, webhook)
    delete_and_check_nothing_is_left(run)


def test_a_killed_sidecar_restarts_and_the_run_is_still_stopped_once(
    cluster: Cluster, operator: Release, namespace: str, bridge_s3: SeaweedServer, webhook: WebhookReceiver
) -> None:
    run = submit_diverging(cluster, namespace, "sidecar-killed", s3=bridge_s3, webhook_url=webhook.url,
                           diverge_from=DIVERGE_FROM_STEP)  # fmt: skip
    _training(run)
    pod = next(
        p
        for p in run.pods()
        if p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "1"
    )

    def sidecar(pod_name: str) -> dict[str, Any]:
        obj = cluster.get(f"/api/v1/namespaces/{namespace}/pods/{pod_name}") or {}
        statuses = (obj.get("status") or {}).get("initContainerStatuses") or []
        return next(s for s in statuses if s["name"] == SIDECAR_NAME)

    container_id = sidecar(pod["metadata"]["name"])["containerID"].split("://", 1)[1]
    cluster.crictl("stop", "--timeout", "0", container_id)  # SIGKILL, as an OOM kill would
    restarted = eventually(
        lambda: (s := sidecar(pod["metadata"]["name"]))["restartCount"] >= 1 and s.get("started") and s,
        timeout_seconds=120,
        what="the sidecar restarted by the kubelet",
    )
    assert restarted["restartCount"] == 1
    _stopped_once(run, webhook)
    delete_and_check_nothing_is_left(run)


def test_restarting_the_kubelet_mid_run_keeps_the_pods_and_the_run_succeeds(
    cluster: Cluster, operator: Release, namespace: str, bridge_s3: SeaweedServer
) -> None:
    run = submit(cluster, namespace, "kubelet-restart", s3=bridge_s3, mode="healthy", steps=900)
    _training(run)
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in run.pods()}
    cluster.restart_kubelet()
    try:
        status = run.wait_phase("Succeeded", "Failed", "Stopped", timeout_seconds=RUN_TIMEOUT_SECONDS)
    except AssertionError as err:
        raise AssertionError(f"{err}\n{run.logs()}") from err
    assert status["phase"] == "Succeeded", status
    assert status["job"]["succeeded"] == 2 and status["job"]["failed"] == 0
    after = {p["metadata"]["name"]: p for p in run.pods()}
    assert {n: p["metadata"]["uid"] for n, p in after.items()} == before, "the same pods ran to the end"
    for pod in after.values():
        for c in pod["status"]["containerStatuses"] + pod["status"]["initContainerStatuses"]:
            assert c["restartCount"] == 0, (pod["metadata"]["name"], c)
    delete_and_check_nothing_is_left(run)
