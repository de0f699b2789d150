"""Kubernetes' size limits on a real API server: a DebugJob with a large spec is still handled.

All annotations of an object together may hold 256 KiB. `kubectl apply` keeps a copy of the object
in one; the operator's own record of the last handled spec must not need another copy.
"""

from __future__ import annotations

import json
import re

from tests.e2e.cluster import Cluster, Release, eventually
from tests.e2e.debugjobs import training_debugjob

SPEC_BYTES = 150_000
"""With kubectl's copy (150 KB) and a second full copy, the annotations would pass 256 KiB."""


def test_a_spec_of_150_kb_applied_with_kubectl_is_reconciled(
    cluster: Cluster, operator: Release, namespace: str
) -> None:
    body = training_debugjob("large", namespace=namespace, bucket="unused", endpoint="http://127.0.0.1:1")
    body["spec"]["suspend"] = True  # the Job and its children are made, no pod runs
    trainer = body["spec"]["template"]["spec"]["containers"][0]
    trainer["env"].append({"name": "LARGE_CONFIG", "value": "x" * SPEC_BYTES})
    cluster.apply(body)

    status = eventually(
        lambda: (
            (s := ((cluster.debugjob(namespace, "large") or {}).get("status") or {})).get("jobName") and s
        ),
        timeout_seconds=60,
        what="the large DebugJob reconciled (status.jobName)",
    )
    assert status["phase"] == "Pending"
    job = cluster.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/large")
    assert job is not None and job["spec"]["suspend"] is True
    annotations = (cluster.debugjob(namespace, "large") or {})["metadata"]["annotations"]
    ours = {k: v for k, v in annotations.items() if k.startswith("trainguard.dev/")}
    assert len(json.dumps(ours)) < 2_000, ours
    assert len(annotations["kubectl.kubernetes.io/last-applied-configuration"]) > SPEC_BYTES
    assert not re.search(r"HTTP 422|Too long|metadata.annotations", operator.operator_log())
