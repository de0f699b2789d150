"""The workload seam: each kind's adapter over objects as their controllers write them, the owner walk, and the
stop through the API (KMock) for the kinds DebugJobs do not exercise.

The objects below carry what batch/v1, JobSet v0.10, training-operator v1.8 (PyTorchJob) and Trainer v2.0
(TrainJob) put on them: labels, owner references, conditions and the env the training-operator renders.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import kmock
import pytest

from tests.kube import KubeEnv
from trainguard.operator import client, workloads
from trainguard.operator.workloads import (
    batch_job,
    control,
    declaration,
    jobset,
    owners,
    pytorchjob,
    trainjob,
)

NS = "ml"


def _merge(target: Any, patch: Any) -> Any:
    """Apply a JSON merge patch (RFC 7386), as the API server does with the adapters' patches."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


def _meta(name: str, uid: str, *, owner: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": uid, **extra}
    if owner is not None:
        meta["ownerReferences"] = [{**owner, "controller": True, "blockOwnerDeletion": True}]
    return meta


def _ref(obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"]}  # fmt: skip


# A TrainJob of the torch-distributed runtime with 2 nodes: the JobSet Trainer renders (its name, controlled
# by it), with an initializer step before the `node` step, the Job of `node`, and its pod of node rank 1.
TRAINJOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": _meta("llama", "tj-uid", labels={"kueue.x-k8s.io/queue-name": "gpu"}),
    "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}, "suspend": False},
    "status": {},  # Trainer v2.0.0 writes no condition while it runs (tests/e2e/test_workload_controllers.py)
}  # fmt: skip
TRAINJOB_JOBSET = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
    "metadata": _meta("llama", "js-uid", owner=_ref(TRAINJOB)),
    "spec": {"suspend": False, "replicatedJobs": [
        {"name": "dataset-initializer", "replicas": 1, "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"}},
            "spec": {"parallelism": 1, "completions": 1}}},
        {"name": "node", "replicas": 1, "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"parallelism": 2, "completions": 2, "completionMode": "Indexed"}}},
    ]},
    "status": {"replicatedJobsStatus": [{"name": "dataset-initializer", "active": 0, "ready": 0, "succeeded": 1, "failed": 0, "suspended": 0},
                                        {"name": "node", "active": 1, "ready": 1, "succeeded": 0, "failed": 0, "suspended": 0}],
               "restarts": 0},
}  # fmt: skip
TRAINJOB_JOB = {
    "apiVersion": "batch/v1", "kind": "Job",
    "metadata": _meta("llama-node-0", "job-uid", owner=_ref(TRAINJOB_JOBSET),
                      labels={"jobset.sigs.k8s.io/jobset-name": "llama", "jobset.sigs.k8s.io/replicatedjob-name": "node",
                              "jobset.sigs.k8s.io/job-index": "0",
                              "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}),
    "spec": {"parallelism": 2, "completions": 2, "completionMode": "Indexed", "suspend": False},
}  # fmt: skip


def _jobset_pod(
    replicated: str,
    job_index: int,
    index: int,
    *,
    jobset_name: str = "llama",
    owner: dict[str, Any] | None = None,
) -> dict[str, Any]:
    labels = {
        "jobset.sigs.k8s.io/jobset-name": jobset_name, "jobset.sigs.k8s.io/replicatedjob-name": replicated,
        "jobset.sigs.k8s.io/job-index": str(job_index), "batch.kubernetes.io/job-completion-index": str(index),
        "batch.kubernetes.io/controller-uid": "job-uid", "batch.kubernetes.io/job-name": f"{jobset_name}-{replicated}-{job_index}",
    }  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(
        f"{jobset_name}-{replicated}-{job_index}-{index}-x7k2p", f"pod-{replicated}-{job_index}-{index}", owner=owner,
        labels=labels, annotations={"batch.kubernetes.io/job-completion-index": str(index)})}  # fmt: skip


TRAINJOB_POD = _jobset_pod("node", 0, 1, owner=_ref(TRAINJOB_JOB))


def _pytorchjob(*, master: bool) -> dict[str, Any]:
    replica = {"replicas": 3, "restartPolicy": "OnFailure",
               "template": {"spec": {"containers": [{"name": "pytorch", "image": "trainer:1"}]}}}  # fmt: skip
    specs = {"Worker": replica, **({"Master": {**replica, "replicas": 1}} if master else {})}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": _meta("resnet", "ptj-uid"),
        "spec": {"pytorchReplicaSpecs": specs, "runPolicy": {"cleanPodPolicy": "None"}},
        "status": {"replicaStatuses": {
            "Master": {"active": 1, "selector": "training.kubeflow.org/job-name=resnet,training.kubeflow.org/operator-name=pytorchjob-controller,training.kubeflow.org/replica-type=master"},
            "Worker": {"active": 2, "failed": 1, "selector": "training.kubeflow.org/job-name=resnet,training.kubeflow.org/operator-name=pytorchjob-controller,training.kubeflow.org/replica-type=worker"}}},
    }  # fmt: skip


def _pytorch_pod(job: dict[str, Any], replica_type: str, index: int) -> dict[str, Any]:
    """A pod as training-operator v1.8.1 creates it (seen in tests/e2e): its labels, and in the container the
    master address, WORLD_SIZE, RANK and PET_NODE_RANK only when the job has a Master; without one it gives
    no rank at all, and Worker 0 carries the master role label."""
    has_master = "Master" in job["spec"]["pytorchReplicaSpecs"]
    env = [{"name": "PYTHONUNBUFFERED", "value": "1"}]
    if has_master:
        rank = str(index + 1 if replica_type == "worker" else index)
        env += [{"name": "MASTER_PORT", "value": "23456"}, {"name": "PET_MASTER_PORT", "value": "23456"},
                {"name": "MASTER_ADDR", "value": "resnet-master-0"}, {"name": "PET_MASTER_ADDR", "value": "resnet-master-0"},
                {"name": "WORLD_SIZE", "value": "4"}, {"name": "RANK", "value": rank}, {"name": "PET_NODE_RANK", "value": rank}]  # fmt: skip
    env.append({"name": "PET_NNODES", "value": "4" if has_master else "3"})
    labels = {"training.kubeflow.org/job-name": "resnet", "training.kubeflow.org/operator-name": "pytorchjob-controller",
              "training.kubeflow.org/replica-type": replica_type, "training.kubeflow.org/replica-index": str(index)}  # fmt: skip
    if replica_type == "master" or (not has_master and index == 0):
        labels["training.kubeflow.org/job-role"] = "master"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": _meta(f"resnet-{replica_type}-{index}", f"pod-{replica_type}-{index}", owner=_ref(job), labels=labels),
            "spec": {"containers": [{"name": "pytorch", "image": "trainer:1", "env": env}]}}  # fmt: skip


def test_the_registry_finds_one_adapter_per_module_and_matches_owner_references_of_any_version() -> None:
    assert workloads.declared() == [batch_job.KIND, jobset.KIND, pytorchjob.KIND, trainjob.KIND]
    assert (
        workloads.find("jobset.x-k8s.io/v1alpha1", "JobSet") is jobset.KIND
    )  # an owner reference of an older version
    assert workloads.find("example.com/v1", "JobSet") is None
    with pytest.raises(workloads.UnknownKind, match="TrainGuard supervises no RayJob .*it knows: Job"):
        workloads.of("ray.io/v1", "RayJob")
    # The client reaches every declared kind, so a new adapter needs no edit there.
    for adapter in workloads.declared():
        assert client.path(adapter.api_version, adapter.kind, NS, "x").endswith(
            f"/namespaces/{NS}/{adapter.plural}/x"
        )


def test_only_the_batch_job_is_on_by_default_and_an_unknown_switch_names_the_known_ones() -> None:
    assert workloads.enabled([]) == [batch_job.KIND]
    assert workloads.enabled(["trainJob"]) == [batch_job.KIND, trainjob.KIND]
    with pytest.raises(workloads.UnknownKind, match="rayJob; use: jobSet, pyTorchJob, trainJob"):
        workloads.enabled(["rayJob"])
    # A TrainJob's pods are reached through its JobSet: enabling TrainJobs lets the operator read JobSets, not stop them.
    assert workloads.permissions(workloads.enabled(["trainJob"]))[("jobset.x-k8s.io", "jobsets")] == {"get"}
    assert workloads.readable(workloads.enabled(["trainJob"])) == [batch_job.KIND, jobset.KIND, trainjob.KIND]


@pytest.mark.parametrize(
    ("adapter", "obj", "expected_patch"),
    [
        (batch_job.KIND, TRAINJOB_JOB, {"spec": {"suspend": True}}),
        (jobset.KIND, TRAINJOB_JOBSET, {"spec": {"suspend": True}}),
        (pytorchjob.KIND, _pytorchjob(master=True), {"spec": {"runPolicy": {"suspend": True}}}),
        (trainjob.KIND, TRAINJOB, {"spec": {"suspend": True}}),
    ],
    ids=["Job", "JobSet", "PyTorchJob", "TrainJob"],
)
def test_each_kinds_suspend_patch_sets_the_flag_its_controller_reads_and_leaves_the_rest(
    adapter: declaration.WorkloadKind, obj: dict[str, Any], expected_patch: dict[str, Any]
) -> None:
    assert adapter.suspend_patch() == expected_patch
    assert not adapter.is_suspended(obj)
    suspended = _merge(obj, adapter.suspend_patch())
    assert adapter.is_suspended(suspended) and adapter.state(suspended).suspended
    # Nothing else of the spec changes (a PyTorchJob keeps its cleanPodPolicy next to the flag).
    assert _merge(suspended, adapter.suspend_patch(False))["spec"] == _merge(
        obj["spec"], adapter.suspend_patch(False)["spec"]
    )
    assert not adapter.is_suspended(_merge(suspended, adapter.suspend_patch(False)))
    assert adapter.queue_name(obj) == ("gpu" if obj is TRAINJOB else None)


def test_each_kind_reads_its_own_conditions_as_the_outcome() -> None:
    def with_condition(obj: dict[str, Any], kind: str, reason: str) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        out.setdefault("status", {})["conditions"] = [
            {"type": "Suspended", "status": "False", "reason": "Resumed"},
            {"type": kind, "status": "True", "reason": reason, "message": f"{reason} message"},
        ]
        return out

    cases = [
        (jobset.KIND, TRAINJOB_JOBSET, "Completed", "Failed"),
        (pytorchjob.KIND, _pytorchjob(master=True), "Succeeded", "Failed"),
        (trainjob.KIND, TRAINJOB, "Complete", "Failed"),
        (batch_job.KIND, TRAINJOB_JOB, "SuccessCriteriaMet", "FailureTarget"),
    ]
    for adapter, obj, done, failed in cases:
        assert adapter.state(obj).finished is None, f"{adapter!r}: a running one has no outcome"
        assert adapter.state(with_condition(obj, done, "AllDone")).finished == declaration.Outcome(
            succeeded=True, reason="AllDone", message="AllDone message"
        )
        outcome = adapter.state(with_condition(obj, failed, "BackoffLimitExceeded")).finished
        assert outcome is not None and not outcome.succeeded and outcome.reason == "BackoffLimitExceeded"
        # Another kind's success condition means nothing here (a TrainJob is never "Completed").
        other = {"Completed": "Complete", "Complete": "Completed", "Succeeded": "Complete",
                 "SuccessCriteriaMet": "Succeeded"}[done]  # fmt: skip
        assert adapter.state(with_condition(obj, other, "X")).finished is None, f"{adapter!r} read {other}"


def test_a_pytorchjob_counts_its_pods_from_its_replica_statuses() -> None:
    pods = pytorchjob.KIND.state(_pytorchjob(master=True)).pods
    assert pods == declaration.PodCounts(active=3, failed=1)
    assert jobset.KIND.state(TRAINJOB_JOBSET).pods is None, "a JobSet's status counts Jobs, not pods"


def test_a_pytorchjob_pods_rank_is_the_rank_its_operator_gives_it_with_or_without_a_master() -> None:
    job = _pytorchjob(master=True)
    pods = [_pytorch_pod(job, "master", 0)] + [_pytorch_pod(job, "worker", i) for i in range(3)]
    ranks = [pytorchjob.KIND.pod_rank(p, job) for p in pods]
    assert ranks == [0, 1, 2, 3]
    for pod, rank in zip(pods, ranks):  # the RANK env the training-operator rendered into the pod agrees
        env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        assert env["RANK"] == str(rank)
    # Workers only: the training-operator gives no RANK (torchrun's rendezvous numbers the nodes); the
    # adapter's rank is then the replica index, the pods' ordinal.
    elastic = _pytorchjob(master=False)
    assert all("RANK" not in str(_pytorch_pod(elastic, "worker", i)["spec"]) for i in range(3))
    assert [pytorchjob.KIND.pod_rank(_pytorch_pod(elastic, "worker", i), elastic) for i in range(3)] == [
        0,
        1,
        2,
    ]
    foreign = _pytorch_pod(job, "worker", 0)
    del foreign["metadata"]["labels"]["training.kubeflow.org/replica-index"]
    assert pytorchjob.KIND.pod_rank(foreign, job) is None


def test_a_jobset_pods_rank_counts_through_its_replicated_jobs_in_order() -> None:
    obj = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": _meta("mixed", "js2"),
           "spec": {"replicatedJobs": [
               {"name": "driver", "replicas": 1, "template": {"spec": {"parallelism": 1}}},
               {"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 4, "completions": 4}}},
               {"name": "tail", "replicas": 1, "template": {"spec": {"parallelism": 3, "completions": 2}}},
           ]}}  # fmt: skip
    pods = [_jobset_pod("driver", 0, 0, jobset_name="mixed")]
    pods += [_jobset_pod("workers", j, i, jobset_name="mixed") for j in range(2) for i in range(4)]
    pods += [_jobset_pod("tail", 0, i, jobset_name="mixed") for i in range(2)]
    ranks = [jobset.KIND.pod_rank(p, obj) for p in pods]
    assert ranks == list(range(11)), "each pod its own rank, none skipped"
    assert jobset.KIND.pod_rank(_jobset_pod("workers", 1, 2, jobset_name="mixed"), obj) == 1 + 1 * 4 + 2
    assert jobset.KIND.pod_rank(_jobset_pod("unknown", 0, 0, jobset_name="mixed"), obj) is None


def test_a_trainjob_ranks_its_node_pods_only() -> None:
    assert trainjob.KIND.pod_rank(TRAINJOB_POD, TRAINJOB) == 1
    assert trainjob.KIND.pod_rank(_jobset_pod("node", 0, 0), TRAINJOB) == 0
    assert trainjob.KIND.pod_rank(_jobset_pod("dataset-initializer", 0, 0), TRAINJOB) is None
    # As a plain JobSet the same pod counts after the initializer's.
    assert jobset.KIND.pod_rank(TRAINJOB_POD, TRAINJOB_JOBSET) == 2


def test_each_kinds_pod_selector_selects_the_pods_its_controllers_label() -> None:
    ptj = _pytorchjob(master=True)
    for adapter, obj, pod in (
        (trainjob.KIND, TRAINJOB, TRAINJOB_POD),
        (jobset.KIND, TRAINJOB_JOBSET, TRAINJOB_POD),
        (batch_job.KIND, TRAINJOB_JOB, TRAINJOB_POD),
        (pytorchjob.KIND, ptj, _pytorch_pod(ptj, "worker", 2)),
    ):
        selector = adapter.pod_selector(obj)
        assert selector and selector.items() <= pod["metadata"]["labels"].items(), f"{adapter!r}: {selector}"
    assert not pytorchjob.KIND.pod_selector(ptj).items() <= TRAINJOB_POD["metadata"]["labels"].items()


def _lookup(*objects: dict[str, Any]) -> owners.Get:
    store = {(o["kind"], o["metadata"]["name"]): o for o in objects}

    def get(adapter: declaration.WorkloadKind, namespace: str, name: str) -> dict[str, Any] | None:
        assert namespace == NS
        return store.get((adapter.kind, name))

    return get


def test_the_owner_walk_goes_from_a_trainjobs_pod_up_to_the_trainjob() -> None:
    kinds = workloads.enabled(["trainJob"])
    chain = owners.walk(TRAINJOB_POD, get=_lookup(TRAINJOB, TRAINJOB_JOBSET, TRAINJOB_JOB),
                        readable=workloads.readable(kinds))  # fmt: skip
    assert [link.obj["kind"] for link in chain.links] == ["Job", "JobSet", "TrainJob"]
    assert chain.beyond is None
    top = chain.top(kinds)
    assert top is not None and top.adapter is trainjob.KIND and top.obj is TRAINJOB
    assert top.adapter.pod_rank(TRAINJOB_POD, top.obj) == 1


def test_the_owner_walk_reports_a_controller_it_may_not_read_above_the_top() -> None:
    # JobSets enabled, TrainJobs not: the JobSet would be the top, but Trainer re-applies it; the caller must know.
    kinds = workloads.enabled(["jobSet"])
    chain = owners.walk(TRAINJOB_POD, get=_lookup(TRAINJOB, TRAINJOB_JOBSET, TRAINJOB_JOB),
                        readable=workloads.readable(kinds))  # fmt: skip
    top = chain.top(kinds)
    assert top is not None and top.adapter is jobset.KIND
    assert chain.beyond == declaration.Ref("trainer.kubeflow.org/v1alpha1", "TrainJob", "llama", "tj-uid")
    # Only plain Jobs (the default): the walk stops at the Job and names the JobSet above it.
    default = owners.walk(TRAINJOB_POD, get=_lookup(TRAINJOB, TRAINJOB_JOBSET, TRAINJOB_JOB),
                          readable=workloads.readable(workloads.enabled([])))  # fmt: skip
    assert [link.obj["kind"] for link in default.links] == ["Job"]
    assert default.beyond is not None and default.beyond.kind == "JobSet"


def test_the_owner_walk_never_takes_a_recreated_object_of_the_same_name_for_the_owner() -> None:
    recreated = {**TRAINJOB_JOBSET, "metadata": {**TRAINJOB_JOBSET["metadata"], "uid": "another-uid"}}
    kinds = workloads.enabled(["trainJob"])
    chain = owners.walk(
        TRAINJOB_POD, get=_lookup(TRAINJOB, recreated, TRAINJOB_JOB), readable=workloads.readable(kinds)
    )
    assert [link.obj["kind"] for link in chain.links] == ["Job"]
    assert chain.beyond is not None and chain.beyond.uid == "js-uid"
    gone = owners.walk(TRAINJOB_POD, get=_lookup(TRAINJOB_JOB), readable=workloads.readable(kinds))
    assert gone.beyond is not None and gone.beyond.kind == "JobSet"


def test_the_owner_walk_goes_from_a_pytorchjobs_pod_to_the_pytorchjob_directly() -> None:
    job = _pytorchjob(master=True)
    pod = _pytorch_pod(job, "worker", 1)
    kinds = workloads.enabled(["pyTorchJob"])
    chain = owners.walk(pod, get=_lookup(job), readable=workloads.readable(kinds))
    top = chain.top(kinds)
    assert top is not None and top.adapter is pytorchjob.KIND and chain.beyond is None
    assert top.adapter.pod_rank(pod, top.obj) == 2
    assert (
        owners.walk({"metadata": {"name": "bare", "namespace": NS}}, get=_lookup(), readable=kinds).links
        == ()
    )


def _register(kube: KubeEnv, adapter: declaration.WorkloadKind) -> None:
    kube.emulator.resources[f"{adapter.api_version}/{adapter.plural}"] = kmock.ResourceInfo(
        kind=adapter.kind, singular=adapter.kind.lower(), namespaced=True,
        verbs={"get", "list", "watch", "create", "patch", "delete"}, subresources={"status"},
    )  # fmt: skip


async def test_a_stop_suspends_the_top_level_workload_of_each_kind_through_the_api(kube: KubeEnv) -> None:
    for adapter, obj in ((trainjob.KIND, TRAINJOB), (pytorchjob.KIND, _pytorchjob(master=True))):
        _register(kube, adapter)
        body = copy.deepcopy(obj)
        body["metadata"] = {"name": obj["metadata"]["name"], "namespace": NS}
        await kube.create(f"{adapter.api_version}/{adapter.plural}", body)
    api = client.Kube.connect(pool_size=2)
    try:
        # The client is synchronous and the emulator serves on this loop: call it from a thread.
        done = await asyncio.to_thread(control.stop, api, trainjob.KIND, NS, "llama", queued=False)
        assert done == control.Stop()
        stored = kube.get("trainer.kubeflow.org/v1alpha1/trainjobs", NS, "llama")
        assert stored is not None and trainjob.KIND.is_suspended(stored)
        assert stored["spec"]["trainer"] == {"numNodes": 2}

        done = await asyncio.to_thread(control.stop, api, pytorchjob.KIND, NS, "resnet", queued=False)
        stored = kube.get("kubeflow.org/v1/pytorchjobs", NS, "resnet")
        assert done == control.Stop() and stored is not None
        assert stored["spec"]["runPolicy"] == {"cleanPodPolicy": "None", "suspend": True}

        resumed = await asyncio.to_thread(
            control.set_suspended, api, pytorchjob.KIND, NS, "resnet", suspend=False
        )
        assert resumed is not None and not pytorchjob.KIND.is_suspended(resumed)
        assert await asyncio.to_thread(control.stop, api, trainjob.KIND, NS, "gone", queued=False) is None
    finally:
        api.close()


async def test_a_stop_of_a_queued_workload_of_any_kind_deactivates_its_kueue_workload(kube: KubeEnv) -> None:
    _register(kube, trainjob.KIND)
    kube.emulator.resources["kueue.x-k8s.io/v1beta2/workloads"] = kmock.ResourceInfo(
        kind="Workload", singular="workload", namespaced=True,
        verbs={"get", "list", "watch", "create", "patch", "delete"}, subresources={"status"},
    )  # fmt: skip
    created = await kube.create("trainer.kubeflow.org/v1alpha1/trainjobs", {
        **copy.deepcopy(TRAINJOB), "metadata": {"name": "llama", "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "gpu"}},
    })  # fmt: skip
    for name, uid in (
        ("trainjob-llama-1a2b3", created["metadata"]["uid"]),
        ("trainjob-other-4c5d6", "other"),
    ):
        await kube.create("kueue.x-k8s.io/v1beta2/workloads", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": NS, "labels": {control.KUEUE_JOB_UID_LABEL: uid}},
            "spec": {"active": True, "queueName": "gpu"},
        })  # fmt: skip
    api = client.Kube.connect(pool_size=2)
    try:
        queued = trainjob.KIND.queue_name(created) is not None
        done = await asyncio.to_thread(control.stop, api, trainjob.KIND, NS, "llama", queued=queued)
    finally:
        api.close()
    assert done == control.Stop(deactivated=("trainjob-llama-1a2b3",))
    workloads_now = {
        w["metadata"]["name"]: w["spec"]["active"] for w in kube.list("kueue.x-k8s.io/v1beta2/workloads", NS)
    }
    assert workloads_now == {"trainjob-llama-1a2b3": False, "trainjob-other-4c5d6": True}
    stored = kube.get("trainer.kubeflow.org/v1alpha1/trainjobs", NS, "llama")
    assert stored is not None and not trainjob.KIND.is_suspended(stored), (
        "Kueue suspends it, not the operator"
    )
