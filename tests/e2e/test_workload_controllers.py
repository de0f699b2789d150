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

import dataclasses
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cluster import K8S_SH, Cluster, eventually
from tests.e2e.workloads import KINDS, Kind, rank_env
from trainguard.operator import client, workloads
from trainguard.operator.workloads import control, declaration, jobset

HOLD_SECONDS = 60
"""How long a stopped workload must stay suspended with no pod: every controller involved reconciles far more often."""
START_SECONDS = 300
"""Pods of several workloads starting at once on the loaded 2-core node."""
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"


@pytest.fixture(scope="module")
def controllers(cluster: Cluster) -> None:
    """JobSet, training-operator and Trainer running, with their CRDs, webhooks and the torch runtime."""
    proc = subprocess.run(
        [str(K8S_SH), "controllers"], capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture
def flag_dir() -> Iterator[Path]:
    """A host directory every pod mounts: a workload's loop ends once its flag file is written here."""
    path = Path(tempfile.mkdtemp(prefix="tg-e2e-flags-", dir="/tmp"))
    path.chmod(0o755)  # the pods' non-root user must see into it
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def kube(cluster: Cluster) -> client.Kube:
    """The operator's own API layer, with the admin credentials (not closed: it shares the cluster's client)."""
    return client.Kube(cluster.api)


@dataclasses.dataclass
class Launched:
    """One workload the test applied."""

    kind: Kind
    namespace: str
    name: str

    def get(self, cluster: Cluster) -> dict[str, Any]:
        obj = self.kind.get(cluster, self.namespace, self.name)
        assert obj is not None, f"{self.kind.id} {self.name} is gone"
        return obj

    def pods(self, cluster: Cluster) -> list[dict[str, Any]]:
        return self.kind.pods_of(cluster, self.namespace, self.get(cluster))


def launch(cluster: Cluster, namespace: str, flag_dir: Path, *, suffix: str,
           labels: dict[str, str] | None = None, suspend: bool = False,
           kinds: tuple[Kind, ...] = KINDS) -> list[Launched]:  # fmt: skip
    runs = [Launched(kind, namespace, f"{kind.id}-{suffix}") for kind in kinds]
    for run in runs:
        cluster.apply(run.kind.manifest(run.name, namespace, flag_dir, labels=labels, suspend=suspend))
    return runs


def running(cluster: Cluster, run: Launched) -> list[dict[str, Any]] | None:
    """The workload's pods once all of them run and printed their rank env, else None."""
    pods = run.pods(cluster)
    if len(pods) != run.kind.pods or any((p.get("status") or {}).get("phase") != "Running" for p in pods):
        return None
    if any(not rank_env(cluster, run.namespace, p["metadata"]["name"], _container(p)) for p in pods):
        return None
    return pods


def _container(pod: dict[str, Any]) -> str:
    return str(pod["spec"]["containers"][0]["name"])


def wait_running(
    cluster: Cluster, runs: list[Launched], *, timeout_seconds: float = START_SECONDS
) -> dict[str, list[dict[str, Any]]]:
    pods: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        pods[run.name] = eventually(
            lambda run=run: running(cluster, run),  # type: ignore[misc]
            timeout_seconds=timeout_seconds, interval=2,
            what=f"the {run.kind.pods} pods of {run.kind.id} {run.name} running "
                 f"(pods: {[(p['metadata']['name'], p.get('status', {}).get('phase')) for p in run.pods(cluster)]})",
        )  # fmt: skip
    return pods


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
            env = rank_env(cluster, namespace, pod["metadata"]["name"], _container(pod))
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


def hold(cluster: Cluster, runs: list[Launched], stopped_at: float) -> None:
    """Until HOLD_SECONDS after the stop: each workload's top-level owner stays suspended, with no pod."""
    while True:
        for run in runs:
            obj = run.get(cluster)
            assert run.kind.adapter.is_suspended(obj), (
                f"{run.kind.id} {run.name} was resumed: {obj.get('spec')}"
            )
            assert run.pods(cluster) == [], f"a pod of the stopped {run.kind.id} {run.name} came back"
        if time.monotonic() - stopped_at >= HOLD_SECONDS:
            return
        time.sleep(2)


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
