"""A DebugJob queued by Kueue: admitted under a ClusterQueue, stopped by a rule, and the stop holds.

Kueue owns `spec.suspend` of the Jobs it admitted and starts again any suspended Job whose Workload
is admitted, so a stop that only suspended the Job would be undone. The operator deactivates the
Job's Workload instead (`spec.active: false`); Kueue then evicts it, suspends the Job and keeps it so.
"""

from __future__ import annotations

import time
from typing import Any

from tests.conftest import SeaweedServer
from tests.e2e.cluster import Cluster, Release, eventually
from tests.e2e.conftest import WebhookReceiver
from tests.e2e.runs import check_stopped_once, delete_and_check_nothing_is_left, submit_diverging

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
HOLD_SECONDS = 20
"""How long the stopped Job is watched after the stop: Kueue's job reconciler would resume it within a second or two."""


def _workloads(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    return cluster.items(f"{KUEUE}/namespaces/{namespace}/workloads")


def test_a_stop_under_kueue_deactivates_the_workload_and_the_job_stays_suspended(
    cluster: Cluster,
    operator: Release,
    kueue: str,
    namespace: str,
    bridge_s3: SeaweedServer,
    webhook: WebhookReceiver,
) -> None:
    cluster.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"name": "team", "namespace": namespace}, "spec": {"clusterQueue": kueue}})  # fmt: skip
    run = submit_diverging(cluster, namespace, "queued", s3=bridge_s3, webhook_url=webhook.url, diverge_from=100,
                           labels={"kueue.x-k8s.io/queue-name": "team"})  # fmt: skip
    admitted = eventually(
        lambda: [w for w in _workloads(cluster, namespace)
                 if any(c["type"] == "Admitted" and c["status"] == "True" for c in w.get("status", {}).get("conditions", []))],
        timeout_seconds=120, what="Kueue admitting the Job's Workload",
    )  # fmt: skip
    try:
        status = run.wait_phase("Stopped", "Succeeded", "Failed", timeout_seconds=420)
    except AssertionError as err:
        raise AssertionError(f"{err}\n{run.logs()}") from err
    assert status["phase"] == "Stopped", status

    workload = eventually(
        lambda: next((w for w in _workloads(cluster, namespace) if w["metadata"]["name"] == admitted[0]["metadata"]["name"]
                      and w["spec"].get("active") is False), None),
        timeout_seconds=30, what="the Workload deactivated",
    )  # fmt: skip
    assert workload["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == (run.job() or {})["metadata"]["uid"]
    eventually(lambda: run.pods() == [] or None, timeout_seconds=90, what="every pod of the stopped Job gone")
    # The stop holds: Kueue keeps the Job suspended and starts no pod again.
    deadline = time.monotonic() + HOLD_SECONDS
    while time.monotonic() < deadline:
        job = run.job()
        assert job is not None and job["spec"]["suspend"] is True, "Kueue resumed the stopped Job"
        assert run.pods() == [], "a pod of the stopped Job came back"
        time.sleep(1)
    check_stopped_once(run, webhook.received)
    delete_and_check_nothing_is_left(run)
    eventually(
        lambda: _workloads(cluster, namespace) == [] or None, timeout_seconds=60, what="the Workload gone"
    )
