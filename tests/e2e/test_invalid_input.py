"""Invalid DebugJobs on a real API server: refused up front with a message that says why, nothing half-created."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.e2e.cluster import Cluster, Release, eventually
from tests.e2e.debugjobs import training_debugjob

CHILD_KINDS = "jobs,services,configmaps,serviceaccounts,roles,rolebindings"


def _debugjob(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    body = training_debugjob(name, namespace=namespace, bucket="unused", endpoint="http://127.0.0.1:1")
    body["spec"].update(spec)
    return body


def _children(cluster: Cluster, namespace: str) -> list[str]:
    out = cluster.kubectl("get", CHILD_KINDS, "-n", namespace, "-l", "trainguard.dev/debugjob", "-o", "name")
    return out.stdout.split()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"workers": 0},
            "spec.workers: Invalid value: 0: spec.workers in body should be greater than or equal to 1",
        ),
        ({"capture": {"uri": "http://bucket/runs"}}, 'spec.capture.uri: Invalid value: "http://bucket/runs"'),
        ({"masterPort": 70000}, "spec.masterPort: Invalid value: 70000"),
        ({"rules": [{"type": "exploding_tensor", "action": "explode"}]}, 'Unsupported value: "explode"'),
        ({"workerz": 2}, 'unknown field "spec.workerz"'),
    ],
    ids=["workers-0", "uri-scheme", "port-range", "action-enum", "unknown-field"],
)
def test_schema_violations_are_refused_by_the_api_server(
    cluster: Cluster, operator: Release, namespace: str, change: dict[str, Any], message: str
) -> None:
    proc = cluster.apply(_debugjob("bad", namespace, **change), check=False)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert cluster.debugjob(namespace, "bad") is None


@pytest.mark.parametrize(
    ("name", "workers", "message"),
    [
        ("gpt2.small", 2, "must consist of lowercase letters, digits and '-', start with a letter"),
        ("2-layers", 1, "start with a letter"),
        ("a" * 60, 1000, "is too long for spec.workers: each rank's hostname is <name>-<index>"),
        (
            "b" * 62,
            2,
            "may have at most 61 characters with up to 10 workers, 60 with up to 100, 59 with up to",
        ),
    ],
    ids=["dot", "digit-first", "60-chars-1000-workers", "62-chars-2-workers"],
)
def test_names_the_children_cannot_take_are_refused_with_the_reason(
    cluster: Cluster, operator: Release, namespace: str, name: str, workers: int, message: str
) -> None:
    proc = cluster.apply(_debugjob(name, namespace, workers=workers), check=False)
    assert proc.returncode != 0, proc.stdout
    assert "metadata.name" in proc.stderr and message in proc.stderr, proc.stderr
    assert cluster.debugjob(namespace, name) is None
    assert _children(cluster, namespace) == []


def test_the_longest_name_the_hostnames_allow_gets_every_child(
    cluster: Cluster, operator: Release, namespace: str
) -> None:
    name = "c" * 61  # 2 workers: the last rank's hostname is <61 characters>-1, 63 in all
    body = _debugjob(name, namespace, workers=2, suspend=True)
    cluster.apply(body)
    expected = {f"job.batch/{name}", f"service/{name}", *(f"{k}/{name}-trainguard" for k in
                ("configmap", "serviceaccount", "role.rbac.authorization.k8s.io",
                 "rolebinding.rbac.authorization.k8s.io"))}  # fmt: skip
    eventually(
        lambda: set(_children(cluster, namespace)) == expected,
        timeout_seconds=60,
        what=f"children {expected}",
    )
    # Resumed, the Job's pods get their hostnames (the API server would refuse a pod whose hostname is too long).
    cluster.kubectl(
        "patch", "dj", name, "-n", namespace, "--type=merge", "-p", '{"spec": {"suspend": false}}'
    )
    pods = eventually(lambda: len(cluster.pods(namespace, name)) == 2 and cluster.pods(namespace, name),
                      timeout_seconds=60, what="both pods")  # fmt: skip
    assert sorted(p["spec"]["hostname"] for p in pods) == [f"{name}-0", f"{name}-1"]


def test_a_template_without_the_training_container_becomes_condition_invalid_and_creates_nothing(
    cluster: Cluster, operator: Release, namespace: str
) -> None:
    body = _debugjob("no-trainer", namespace, containerName="worker")
    cluster.apply(copy.deepcopy(body))

    def invalid() -> dict[str, Any] | None:
        status = (cluster.debugjob(namespace, "no-trainer") or {}).get("status") or {}
        return next((c for c in status.get("conditions") or [] if c["type"] == "Invalid"), None)

    condition = eventually(invalid, timeout_seconds=60, what="condition Invalid")
    assert (
        condition["status"] == "True"
        and "no container named 'worker' (found: trainer)" in condition["message"]
    )
    events = eventually(
        lambda: [e for e in cluster.events(namespace, "no-trainer") if e["reason"] == "InvalidSpec"],
        timeout_seconds=30,
        what="an InvalidSpec Event",
    )
    assert events[0]["type"] == "Warning"
    assert _children(cluster, namespace) == []
