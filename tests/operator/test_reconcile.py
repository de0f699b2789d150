"""The operator against an emulated API server: children, status that follows the Job, restarts, invalid specs, deletion."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.kube import DEBUGJOB_RESOURCE, KubeEnv, debugjob_manifest, eventually
from tests.operator.conftest import OperatorProcess
from trainguard.operator import build

JOBS = "batch/v1/jobs"
CHILDREN = [
    ("v1/serviceaccounts", "dj1-trainguard"),
    ("rbac.authorization.k8s.io/v1/roles", "dj1-trainguard"),
    ("rbac.authorization.k8s.io/v1/rolebindings", "dj1-trainguard"),
    ("v1/configmaps", "dj1-trainguard"),
    ("v1/services", "dj1"),
    (JOBS, "dj1"),
]


def _gpu_manifest(tmp_path: Path, name: str = "dj1", **kw: Any) -> dict[str, Any]:
    body = debugjob_manifest(name, workers=2, capture_uri=f"file://{tmp_path}/runs", **kw)
    pod = body["spec"]["template"]["spec"]
    pod["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    pod["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
    pod["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    return body


def _status(kube: KubeEnv, name: str = "dj1") -> dict[str, Any]:
    obj = kube.get(DEBUGJOB_RESOURCE, "default", name) or {}
    return dict(obj.get("status") or {})


def _condition(kube: KubeEnv, kind: str, name: str = "dj1") -> dict[str, Any] | None:
    return next((c for c in _status(kube, name).get("conditions", []) if c["type"] == kind), None)


async def test_create_renders_owned_children_with_sidecar_and_gpu_pass_through(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    dj = await kube.create(DEBUGJOB_RESOURCE, _gpu_manifest(tmp_path))
    uid = dj["metadata"]["uid"]
    job = await eventually(lambda: kube.get(JOBS, "default", "dj1"), what="the Job")
    for resource, name in CHILDREN:
        child = await eventually(
            lambda r=resource, n=name: kube.get(r, "default", n), what=f"{resource} {name}"
        )
        assert child["metadata"]["ownerReferences"][0]["uid"] == uid, resource
        assert child["metadata"]["labels"][build.LABEL_DEBUGJOB] == "dj1"
    pod = job["spec"]["template"]["spec"]
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 2
    assert pod["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    assert (
        pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
        and pod["tolerations"][0]["key"] == "nvidia.com/gpu"
    )
    (sidecar,) = pod["initContainers"]
    assert sidecar["restartPolicy"] == "Always" and sidecar["startupProbe"]["httpGet"]["path"] == "/healthz"
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["TRAINGUARD_OUT"] == f"file://{tmp_path}/runs/default/dj1/{uid}/"
    status = await eventually(lambda: _status(kube).get("jobName") and _status(kube), what="status.jobName")
    assert status["phase"] == "Pending"


async def test_status_follows_the_job_to_success(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    await kube.create(DEBUGJOB_RESOURCE, _gpu_manifest(tmp_path))
    await eventually(lambda: kube.get(JOBS, "default", "dj1"), what="the Job")
    # As the Job controller would: pods start, then every index completes.
    await kube.patch(JOBS, "default", "dj1", {"status": {"active": 2, "ready": 2, "startTime": "2026-11-22T05:00:00Z"}},
                     subresource="status")  # fmt: skip
    await eventually(lambda: _status(kube).get("phase") == "Running", what="phase Running")
    assert _condition(kube, "Running")["status"] == "True"  # type: ignore[index]
    assert _status(kube)["startTime"] == "2026-11-22T05:00:00Z"
    await kube.patch(JOBS, "default", "dj1", {"status": {
        "active": 0, "ready": 0, "succeeded": 2, "completionTime": "2026-11-22T06:00:00Z",
        "conditions": [{"type": "Complete", "status": "True", "reason": "CompletionsReached"}]}}, subresource="status")  # fmt: skip
    await eventually(lambda: _status(kube).get("phase") == "Succeeded", what="phase Succeeded")
    assert _condition(kube, "Succeeded")["reason"] == "CompletionsReached"  # type: ignore[index]
    assert _condition(kube, "Running")["status"] == "False"  # type: ignore[index]
    assert _status(kube)["completionTime"]
    # Neither rank wrote END (no hook ran): the operator writes it, saying so.
    uid = kube.get(DEBUGJOB_RESOURCE, "default", "dj1")["metadata"]["uid"]  # type: ignore[index]
    ends = [tmp_path / "runs" / "default" / "dj1" / uid / f"rank-0000{r}" / "END.json" for r in (0, 1)]
    await eventually(lambda: all(p.exists() for p in ends), what="END.json of both ranks")
    end = json.loads(ends[1].read_text())
    assert end["status"] == "ok" and end["written_by"] == "operator"

    # The Job's TTL deletes it; a restarted operator must not run the finished training again.
    await kube.delete(JOBS, "default", "dj1")
    await operator_runner.stop()
    await operator_runner.start()
    await kube.create(DEBUGJOB_RESOURCE, _gpu_manifest(tmp_path, "later"))
    await eventually(lambda: kube.get(JOBS, "default", "later"), what="a later DebugJob's Job")
    assert kube.get(JOBS, "default", "dj1") is None
    assert _status(kube)["phase"] == "Succeeded"


async def test_restarting_the_operator_creates_nothing_twice(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    await kube.create(DEBUGJOB_RESOURCE, _gpu_manifest(tmp_path))
    await eventually(lambda: _status(kube).get("jobName"), what="status.jobName")
    before = {res: kube.get(res, "default", name)["metadata"]["uid"] for res, name in CHILDREN}  # type: ignore[index]
    posts_before = len(kube.requests("POST", "/jobs"))
    await operator_runner.stop()
    await operator_runner.start()
    # The resumed handler tries each child again and finds it there (HTTP 409), so it creates nothing.
    await eventually(lambda: len(kube.requests("POST", "/jobs")) > posts_before, what="the resumed reconcile")
    after = {res: kube.get(res, "default", name)["metadata"]["uid"] for res, name in CHILDREN}  # type: ignore[index]
    assert after == before
    for resource, _name in CHILDREN:
        assert len(kube.list(resource, "default")) == 1, resource


async def test_invalid_spec_becomes_condition_invalid_and_creates_nothing(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    await kube.create(DEBUGJOB_RESOURCE, _gpu_manifest(tmp_path, "broken", containerName="worker"))
    invalid = await eventually(lambda: _condition(kube, "Invalid", "broken"), what="condition Invalid")
    assert invalid["status"] == "True" and invalid["reason"] == "InvalidSpec"
    assert "no container named 'worker' (found: trainer)" in invalid["message"]
    assert kube.list(JOBS, "default") == [] and kube.list("v1/configmaps", "default") == []
    events = await eventually(lambda: [e for e in kube.list("v1/events", "default") if e.get("reason") == "InvalidSpec"],
                              what="an InvalidSpec event")  # fmt: skip
    assert events[0]["involvedObject"]["name"] == "broken"

    # The operator keeps running: a valid DebugJob still gets its Job ...
    await kube.create(DEBUGJOB_RESOURCE, _gpu_manifest(tmp_path, "fine"))
    await eventually(lambda: kube.get(JOBS, "default", "fine"), what="the valid DebugJob's Job")
    # ... and fixing the broken spec renders it.
    await kube.patch(DEBUGJOB_RESOURCE, "default", "broken", {"spec": {"containerName": "trainer"}})
    await eventually(lambda: kube.get(JOBS, "default", "broken"), what="the fixed DebugJob's Job")
    await eventually(
        lambda: (_condition(kube, "Invalid", "broken") or {}).get("status") == "False", what="Invalid=False"
    )


async def test_a_name_the_children_cannot_take_becomes_condition_invalid_and_creates_nothing(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    # A CRD without the CEL name rules (KMock validates nothing): the operator refuses such names itself.
    await kube.create(DEBUGJOB_RESOURCE, _gpu_manifest(tmp_path, "gpt2.small"))
    long_name = "a" * 61  # with 2 workers, at most 61: the hostname "<name>-1" must fit in 63 characters
    await kube.create(DEBUGJOB_RESOURCE, _gpu_manifest(tmp_path, long_name + "b"))
    dotted = await eventually(lambda: _condition(kube, "Invalid", "gpt2.small"), what="condition Invalid")
    assert dotted["status"] == "True" and "no dots" in dotted["message"]
    too_long = await eventually(
        lambda: _condition(kube, "Invalid", long_name + "b"), what="condition Invalid"
    )
    assert "has 62 characters; with 2 workers it may have at most 61" in too_long["message"]
    await kube.create(DEBUGJOB_RESOURCE, _gpu_manifest(tmp_path, long_name))
    await eventually(lambda: kube.get(JOBS, "default", long_name), what="the Job of the longest valid name")
    assert [j["metadata"]["name"] for j in kube.list(JOBS, "default")] == [long_name]
    assert all(s["metadata"]["name"] == long_name for s in kube.list("v1/services", "default"))


async def test_deleting_a_debugjob_removes_everything_it_owns(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    await kube.create(DEBUGJOB_RESOURCE, _gpu_manifest(tmp_path))
    await eventually(lambda: all(kube.get(r, "default", n) for r, n in CHILDREN), what="all children")
    await kube.delete(DEBUGJOB_RESOURCE, "default", "dj1")
    await eventually(lambda: kube.get(DEBUGJOB_RESOURCE, "default", "dj1") is None, what="the DebugJob gone")
    for resource, name in CHILDREN:
        assert kube.get(resource, "default", name) is None, f"{resource} {name} survived"


async def test_deleting_a_running_job_fails_the_debugjob(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    await kube.create(DEBUGJOB_RESOURCE, _gpu_manifest(tmp_path))
    await eventually(lambda: kube.get(JOBS, "default", "dj1"), what="the Job")
    await kube.patch(JOBS, "default", "dj1", {"status": {"active": 2, "ready": 2}}, subresource="status")
    await eventually(lambda: _status(kube).get("phase") == "Running", what="phase Running")
    await kube.delete(JOBS, "default", "dj1")
    await eventually(lambda: _status(kube).get("phase") == "Failed", what="phase Failed")
    failed = _condition(kube, "Failed")
    assert failed is not None and failed["reason"] == "JobDeleted"
