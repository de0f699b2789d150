"""Attach mode's pure injection (`inject.admit`): for a pod of each kind of workload, the evaluator, the hook's
env, the stop flag's volume and the node rank from the pod's labels; idempotent; unrelated and malformed pods
allowed unchanged. The workloads and pods are those of `test_workloads`, as their controllers write them."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest
import yaml

from tests.operator.test_workloads import (
    NS,
    TRAINJOB,
    TRAINJOB_JOB,
    TRAINJOB_JOBSET,
    TRAINJOB_POD,
    _jobset_pod,
    _meta,
    _pytorch_pod,
    _pytorchjob,
    _ref,
)
from trainguard.api import debugpolicy
from trainguard.api.sidecar_config import SidecarConfig
from trainguard.operator import build, inject
from trainguard.operator.workloads import batch_job, declaration, jobset, pytorchjob, trainjob

SETTINGS = inject.Settings(
    default_image="localhost/trainguard:test",
    kinds=(batch_job.KIND, jobset.KIND, pytorchjob.KIND, trainjob.KIND),
)


def _policy(name: str = "watch", **spec: Any) -> inject.Policy:
    body = {
        "metadata": {"name": name, "namespace": NS, "uid": f"{name}-uid", "generation": 3},
        "spec": {"capture": {"uri": "s3://runs/tg", "endpoint": "http://seaweed:8333"}, **spec},
    }
    return inject.Policy.from_body(body)


def _getter(*objects: dict[str, Any]) -> Any:
    by_key = {(o["apiVersion"].rpartition("/")[0], o["kind"], o["metadata"]["name"]): o for o in objects}

    def get(adapter: declaration.WorkloadKind, namespace: str, name: str) -> dict[str, Any] | None:
        assert namespace == NS
        return by_key.get((adapter.group, adapter.kind, name))

    return get


def _with_containers(pod: dict[str, Any], *names: str) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod.setdefault("spec", {})["containers"] = [{"name": n, "image": "trainer:1"} for n in names]
    return pod


def _apply(pod: dict[str, Any], admission: inject.Admission) -> dict[str, Any]:
    out: dict[str, Any] = jsonpatch.apply_patch(pod, admission.patch)
    return out


def _check_injected(after: dict[str, Any], *, trainer: str, rank: int, run_uri: str) -> None:
    spec = after["spec"]
    sidecar = spec["initContainers"][-1]
    assert sidecar["name"] == build.SIDECAR_NAME and sidecar["restartPolicy"] == "Always"
    assert {"name": "RANK", "value": str(rank)} in sidecar["env"]
    train = next(c for c in spec["containers"] if c["name"] == trainer)
    env = {e["name"]: e.get("value") for e in train["env"]}
    assert env["TRAINGUARD_OUT"] == run_uri
    assert env["AWS_ENDPOINT_URL"] == "http://seaweed:8333"
    assert build.STOP_MOUNT in train["volumeMounts"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert {build.STOP_VOLUME, build.CONFIG_VOLUME, build.SIDECAR_TMP_VOLUME, build.TOKEN_VOLUME} <= set(
        volumes
    )
    assert "serviceAccountToken" in volumes[build.TOKEN_VOLUME]["projected"]["sources"][0]
    item = volumes[build.CONFIG_VOLUME]["downwardAPI"]["items"][0]
    assert inject.SIDECAR_CONFIG_ANNOTATION in item["fieldRef"]["fieldPath"]
    annotations = after["metadata"]["annotations"]
    assert annotations[debugpolicy.INJECTED_ANNOTATION] == "watch/3"
    config = SidecarConfig.model_validate(yaml.safe_load(annotations[inject.SIDECAR_CONFIG_ANNOTATION]))
    assert config.run_uri == run_uri and config.ranks_from_env and config.stop_file == build.STOP_FILE
    assert config.pod_ranks(rank) == [rank]


def test_a_trainjob_node_pod_gets_the_evaluator_with_its_node_rank() -> None:
    pod = _with_containers(TRAINJOB_POD, "node")
    policy = _policy(
        targetRef={"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llama"}
    )
    admission = inject.admit(
        pod, policies=[policy], get=_getter(TRAINJOB, TRAINJOB_JOBSET, TRAINJOB_JOB), settings=SETTINGS
    )
    assert admission.policy == "watch" and not admission.warnings
    _check_injected(
        _apply(pod, admission), trainer="node", rank=1, run_uri="s3://runs/tg/ml/watch/trainjob-llama/tj-uid/"
    )


def test_an_initializer_pod_of_a_trainjob_runs_no_rank_and_is_left_alone() -> None:
    pod = _with_containers(_jobset_pod("dataset-initializer", 0, 0, owner=_ref(TRAINJOB_JOB)), "node")
    policy = _policy(selector={"matchLabels": {"kueue.x-k8s.io/queue-name": "gpu"}})
    get = _getter(TRAINJOB, TRAINJOB_JOBSET, TRAINJOB_JOB)
    assert inject.admit(pod, policies=[policy], get=get, settings=SETTINGS).patch == []


@pytest.mark.parametrize(("master", "replica_type", "index", "rank"), [
    (True, "master", 0, 0), (True, "worker", 1, 2), (False, "worker", 1, 1),
])  # fmt: skip
def test_a_pytorchjob_pod_gets_the_rank_the_training_operator_gives_it(
    master: bool, replica_type: str, index: int, rank: int
) -> None:
    job = _pytorchjob(master=master)
    job["metadata"]["labels"] = {"team": "vision"}
    pod = _pytorch_pod(job, replica_type, index)
    # The template's RANK is the trainer's; the sidecar's own comes from the labels (a Master-less job has none).
    admission = inject.admit(
        pod,
        policies=[_policy(selector={"matchLabels": {"team": "vision"}})],
        get=_getter(job),
        settings=SETTINGS,
    )
    after = _apply(pod, admission)
    _check_injected(
        after, trainer="pytorch", rank=rank, run_uri="s3://runs/tg/ml/watch/pytorchjob-resnet/ptj-uid/"
    )
    trainer_env = {e["name"]: e.get("value") for e in after["spec"]["containers"][0]["env"]}
    assert trainer_env.get("RANK") == (str(rank) if master else None)  # the user's env is kept, none is added


def test_a_jobset_pod_counts_its_rank_through_the_replicated_jobs() -> None:
    js = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": _meta("llm", "js2-uid", labels={"team": "nlp"}),
        "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 4, "completions": 4}}}]},
    }  # fmt: skip
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta("llm-workers-1", "j2-uid", owner=_ref(js)),
        "spec": {},
    }
    pod = _with_containers(_jobset_pod("workers", 1, 2, jobset_name="llm", owner=_ref(job)), "main")
    admission = inject.admit(
        pod,
        policies=[_policy(selector={"matchLabels": {"team": "nlp"}})],
        get=_getter(js, job),
        settings=SETTINGS,
    )
    _check_injected(
        _apply(pod, admission), trainer="main", rank=6, run_uri="s3://runs/tg/ml/watch/jobset-llm/js2-uid/"
    )


def test_an_indexed_job_pod_gets_its_completion_index_and_the_named_container() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta("mnist", "j-uid", labels={"app": "mnist"}),
        "spec": {},
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(
        "mnist-3-abcde", "p-uid", owner=_ref(job), labels={"batch.kubernetes.io/job-completion-index": "3"}),
        "spec": {"containers": [{"name": "proxy"}, {"name": "train", "env": [{"name": "TRAINGUARD_SAVE_INTERVAL", "value": "1"}]}]}}  # fmt: skip
    policy = _policy(selector={"matchLabels": {"app": "mnist"}}, containerName="train")
    admission = inject.admit(pod, policies=[policy], get=_getter(job), settings=SETTINGS)
    after = _apply(pod, admission)
    _check_injected(after, trainer="train", rank=3, run_uri="s3://runs/tg/ml/watch/job-mnist/j-uid/")
    assert after["spec"]["containers"][0] == {"name": "proxy"}
    env = {e["name"]: e["value"] for e in after["spec"]["containers"][1]["env"] if "value" in e}
    assert env["TRAINGUARD_SAVE_INTERVAL"] == "1"  # the user's setting wins


def test_the_pods_grace_period_is_the_policys_only_when_it_gives_one() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("mnist", "j-uid", labels={"app": "mnist"}),
           "spec": {}}  # fmt: skip
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(
        "mnist-0-abcde", "p-uid", owner=_ref(job), labels={"batch.kubernetes.io/job-completion-index": "0"}),
        "spec": {"terminationGracePeriodSeconds": 600, "containers": [{"name": "train"}]}}  # fmt: skip
    kept = _apply(pod, inject.admit(pod, policies=[_policy(selector={"matchLabels": {"app": "mnist"}})],
                                    get=_getter(job), settings=SETTINGS))  # fmt: skip
    assert kept["spec"]["terminationGracePeriodSeconds"] == 600  # the user's workload keeps its own
    assert kept["metadata"]["annotations"][inject.WORKLOAD_ANNOTATION] == "Job/mnist"
    policy = _policy(selector={"matchLabels": {"app": "mnist"}}, actions={"stop": {"gracePeriodSeconds": 45}})
    after = _apply(pod, inject.admit(pod, policies=[policy], get=_getter(job), settings=SETTINGS))
    assert after["spec"]["terminationGracePeriodSeconds"] == 45


def test_reinvocation_returns_an_injected_pod_unchanged() -> None:
    pod = _with_containers(TRAINJOB_POD, "node")
    policy = _policy(
        targetRef={"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "llama"}
    )
    get = _getter(TRAINJOB, TRAINJOB_JOBSET, TRAINJOB_JOB)
    once = _apply(pod, inject.admit(pod, policies=[policy], get=get, settings=SETTINGS))
    again = inject.admit(once, policies=[policy], get=get, settings=SETTINGS)
    assert again == inject.Admission(patch=[])
    assert len(once["spec"]["initContainers"]) == 1


def test_pods_of_unselected_or_unknown_workloads_are_untouched() -> None:
    pod = _with_containers(TRAINJOB_POD, "node")
    get = _getter(TRAINJOB, TRAINJOB_JOBSET, TRAINJOB_JOB)
    other = _policy(
        targetRef={"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "other"}
    )
    assert inject.admit(pod, policies=[other], get=get, settings=SETTINGS) == inject.Admission(patch=[])
    assert inject.admit(pod, policies=[], get=get, settings=SETTINGS) == inject.Admission(patch=[])
    # An owner is not (yet) in the operator's memory: nothing is read from the API, the answer names the owner
    # the caller may wait for (the Job first, then, once the Job is there, its JobSet).
    assert inject.admit(pod, policies=[other], get=_getter(), settings=SETTINGS) == inject.Admission(
        patch=[], pending=f"Job {TRAINJOB_JOB['metadata']['name']}"
    )
    assert inject.admit(
        pod, policies=[other], get=_getter(TRAINJOB_JOB), settings=SETTINGS
    ) == inject.Admission(patch=[], pending=f"JobSet {TRAINJOB_JOBSET['metadata']['name']}")
    bare = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {"containers": [{"name": "nginx"}]},
    }
    assert inject.admit(bare, policies=[other], get=get, settings=SETTINGS) == inject.Admission(patch=[])


@pytest.mark.parametrize("mangle", [
    lambda p: p["metadata"].__setitem__("ownerReferences", "not-a-list"),
    lambda p: p["metadata"].__setitem__("labels", "not-a-map"),
    lambda p: p.__setitem__("spec", {"containers": "node"}),
    lambda p: p["spec"].__setitem__("containers", [{"name": "sidecar-only"}]),
])  # fmt: skip
def test_a_malformed_pod_is_allowed_unchanged_with_a_warning(mangle: Any) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta("mnist", "j-uid", labels={"app": "mnist"}),
        "spec": {},
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(
        "mnist-0", "p-uid", owner=_ref(job), labels={"batch.kubernetes.io/job-completion-index": "0"}),
        "spec": {"containers": [{"name": "train"}]}}  # fmt: skip
    mangle(pod)
    policy = _policy(selector={"matchLabels": {"app": "mnist"}}, containerName="train")
    admission = inject.admit(pod, policies=[policy], get=_getter(job), settings=SETTINGS)
    assert admission.patch == []
    assert len(admission.warnings) == 1 and admission.warnings[0].startswith("trainguard: not injected")
