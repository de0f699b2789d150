"""The workload adapters against the real controllers: JobSet, Kubeflow training-operator and Trainer, and Kueue.

The adapters (`trainguard.operator.workloads`) were written from the controllers' source; here the real
controllers (`dev/k8s.sh controllers`) run an Indexed Job, a JobSet, a PyTorchJob and a TrainJob on the
`torch-distributed` runtime, and the adapters must read what those controllers really write: the
state running, then finished by the controller's own success condition; the pods the selector finds,
exactly those whose owner walk ends at the workload; each pod's rank, the one its controller gave it
in its env. A stop (`control.stop` on the top of a pod's owner walk) suspends the top-level owner, every
pod goes, and 60 s later it is still suspended with no pod: no controller undid it. Under Kueue the stop
deactivates the JobSet's Workload (found by Kueue's `kueue.x-k8s.io/job-uid` label) and holds too.

The kinds of each test run at the same time, so the whole file costs one start and one 60 s hold per
test, not one per kind. The operator is not installed: the test process calls the adapters and
`control` itself with the admin credentials; what the chart grants per kind is checked elsewhere.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.e2e.cluster import Cluster, eventually
from tests.e2e.workloads import (
    KINDS,
    START_SECONDS,
    hold,
    launch,
    main_container,
    rank_env,
    wait_running,
)
from trainguard.operator import client, workloads
from trainguard.operator.workloads import control, declaration, jobset

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"


def top_of(kube: client.Kube, pod: dict[str, Any]) -> tuple[declaration.WorkloadKind, dict[str, Any]]:
    """The top-level workload of the pod's owner walk, read from the real API."""
    chain = control.owner_chain(kube, pod, readable=workloads.declared())
    assert chain.beyond is None, (
        f"{pod['metadata']['name']}: an owner the walk could not read: {chain.beyond}"
    )
    top = chain.top(workloads.declared())
    assert top is not None, f"{pod['metadata']['name']}: no supervised owner"
    return top.adapter, dict(top.obj)


def test_the_adapters_read_what_the_real_controllers_write(
    cluster: Cluster, controllers: None, namespace: str, flag_dir: Path, kube: client.Kube
) -> None:
    runs = launch(cluster, namespace, flag_dir, suffix="read")
    pods_by_run = wait_running(cluster, runs)
    everyone = cluster.items(f"/api/v1/namespaces/{namespace}/pods")
    for run in runs:
        obj, pods = run.get(cluster), pods_by_run[run.name]
        state = run.kind.adapter.state(obj)
        assert not state.suspended and state.finished is None, (run.kind.id, state)
        # the selector finds exactly the pods whose owner walk ends at this workload
        uid = obj["metadata"]["uid"]
        owned = {p["metadata"]["name"] for p in everyone if top_of(kube, p)[1]["metadata"]["uid"] == uid}
        assert {p["metadata"]["name"] for p in pods} == owned, run.kind.id
        for pod in pods:
            adapter, _ = top_of(kube, pod)
            assert adapter is run.kind.adapter, (run.kind.id, adapter)
        # each pod's rank is the one its controller put in its env, and the ranks are 0 .. pods-1
        ranks = {}
        for pod in pods:
            env = rank_env(cluster, namespace, pod["metadata"]["name"], main_container(pod))
            rank = run.kind.adapter.pod_rank(pod, obj)
            assert rank is not None and str(rank) == env.get(run.kind.rank_env), (
                f"{run.kind.id} {pod['metadata']['name']}: adapter rank {rank}, env {env}"
            )
            ranks[pod["metadata"]["name"]] = rank
        assert sorted(ranks.values()) == list(range(run.kind.pods)), (run.kind.id, ranks)

    for run in runs:
        (flag_dir / run.name).touch()  # every loop ends: the workloads succeed
    for run in runs:
        finished = eventually(
            lambda run=run: run.kind.adapter.state(run.get(cluster)).finished,  # type: ignore[misc]
            timeout_seconds=240, interval=2,
            what=f"{run.kind.id} {run.name} finished (conditions: {run.get(cluster).get('status', {}).get('conditions')})",
        )  # fmt: skip
        assert finished.succeeded, (run.kind.id, finished)


def test_a_stop_suspends_the_top_level_owner_every_pod_goes_and_the_stop_holds(
    cluster: Cluster, controllers: None, namespace: str, flag_dir: Path, kube: client.Kube
) -> None:
    runs = launch(cluster, namespace, flag_dir, suffix="stop")
    pods_by_run = wait_running(cluster, runs)
    for run in runs:
        # from a pod up its owners, as the operator goes: Pod -> Job -> JobSet -> TrainJob, Pod -> PyTorchJob
        adapter, top = top_of(kube, pods_by_run[run.name][0])
        assert adapter is run.kind.adapter and top["metadata"]["name"] == run.name, (run.kind.id, adapter)
        assert control.stop(kube, adapter, namespace, run.name, queued=False) == control.Stop()
    stopped_at = time.monotonic()
    for run in runs:
        eventually(lambda run=run: run.pods(cluster) == [] or None, timeout_seconds=120, interval=1,  # type: ignore[misc]
                   what=f"every pod of the stopped {run.kind.id} {run.name} gone")  # fmt: skip
    hold(cluster, runs, stopped_at)


def test_a_stop_under_kueue_deactivates_the_jobsets_workload_and_the_stop_holds(
    cluster: Cluster, controllers: None, kueue: str, namespace: str, flag_dir: Path, kube: client.Kube
) -> None:
    cluster.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"name": "team", "namespace": namespace}, "spec": {"clusterQueue": kueue}})  # fmt: skip
    # Created suspended, as Kueue's own webhook would make it; Kueue admits it and resumes it.
    (run,) = launch(cluster, namespace, flag_dir, suffix="queued", labels={"kueue.x-k8s.io/queue-name": "team"},
                    suspend=True, kinds=tuple(k for k in KINDS if k.adapter is jobset.KIND))  # fmt: skip
    pods = wait_running(cluster, [run], timeout_seconds=START_SECONDS + 120)[
        run.name
    ]  # Kueue may look for JobSet's API 2 min late
    adapter, top = top_of(kube, pods[0])
    assert adapter is jobset.KIND and adapter.queue_name(top) == "team"
    stop = control.stop(kube, adapter, namespace, run.name, queued=True)
    stopped_at = time.monotonic()
    assert stop is not None and len(stop.deactivated) == 1, stop
    workload = cluster.get(f"{KUEUE}/namespaces/{namespace}/workloads/{stop.deactivated[0]}")
    assert workload is not None and workload["spec"]["active"] is False
    assert workload["metadata"]["labels"][control.KUEUE_JOB_UID_LABEL] == top["metadata"]["uid"]
    # Kueue, not the operator, suspends the JobSet: wait for it, then for its pods to go
    eventually(
        lambda: adapter.is_suspended(run.get(cluster)), timeout_seconds=60, what="Kueue suspending the JobSet"
    )
    eventually(
        lambda: run.pods(cluster) == [] or None, timeout_seconds=120, what="every pod of the JobSet gone"
    )
    hold(cluster, [run], stopped_at)
    workload = cluster.get(f"{KUEUE}/namespaces/{namespace}/workloads/{stop.deactivated[0]}")
    assert workload is not None and workload["spec"]["active"] is False, "the Workload was activated again"
