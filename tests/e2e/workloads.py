"""Workloads of the kinds TrainGuard attaches to, as their real controllers run them in the test cluster.

One `Kind` per workload kind (an Indexed Job, a JobSet, a PyTorchJob, a TrainJob on the
`torch-distributed` runtime): its manifest, its adapter (`trainguard.operator.workloads`), how many
training pods it runs and the env its controller gives each pod its rank in. Every pod runs the
project image with a short Python loop (`LOOP`) that prints the rank env once, then a step a second
until a flag file appears in a host directory the pod mounts: the test decides when a workload ends,
so no verdict depends on how fast a pod starts. A pod that must never end (a stopped workload's)
waits for a flag nobody writes.

`Kind.manifest` builds from one container (`container()`), so a variant with more in its pods (the
labels that select a workload for the admission webhook, a collector) can change the container or the
workload's labels without a second set of manifests: `launch` takes a `transform` of each manifest.
`launch`, `wait_running` and `hold` drive several workloads side by side: one start and one hold
serve every kind of a test.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.cluster import IMAGE, Cluster, eventually
from trainguard.operator.workloads import batch_job, declaration, jobset, pytorchjob, trainjob

RANK_LINE = re.compile(r"^trainguard-e2e-rank (?P<env>.*)$", re.MULTILINE)
RANK_ENV = ("RANK", "PET_NODE_RANK", "JOB_COMPLETION_INDEX", "JOB_GLOBAL_INDEX")
LOOP = """
import os, sys, time
print("trainguard-e2e-rank " + " ".join(f"{k}={os.environ.get(k, '')}" for k in sys.argv[2:]), flush=True)
step = 0
while not os.path.exists(sys.argv[1]):
    step += 1
    print(f"step {step} loss {1.0 / step:.4f}", flush=True)
    time.sleep(1)
"""
"""The training loop of every pod: `python3 -c LOOP FLAG ENV...`."""
FLAGS = "flags"
"""The name of the host-directory volume the loop's flag file is in."""


def container(name: str, flag_dir: Path, flag: str) -> dict[str, Any]:
    """The training container: the loop, ending when `flag_dir/flag` exists (mounted at the same path)."""
    return {
        "name": name,
        "image": IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-c", LOOP, str(flag_dir / flag), *RANK_ENV],
        "volumeMounts": [{"name": FLAGS, "mountPath": str(flag_dir), "readOnly": True}],
    }


def flag_volume(flag_dir: Path) -> dict[str, Any]:
    return {"name": FLAGS, "hostPath": {"path": str(flag_dir), "type": "Directory"}}


def pod_template(
    main: dict[str, Any], flag_dir: Path, *, env: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{**main, "env": [*main.get("env", []), *(env or [])]}],
            "volumes": [flag_volume(flag_dir)],
        }
    }


def _meta(name: str, namespace: str, labels: dict[str, str] | None) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(labels or {})}


def indexed_job(name: str, namespace: str, flag_dir: Path, *, labels: dict[str, str] | None = None,
                suspend: bool = False) -> dict[str, Any]:  # fmt: skip
    """A labelled Indexed Job of 2 pods (the Job controller gives each JOB_COMPLETION_INDEX)."""
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(name, namespace, {"team": "e2e", **(labels or {})}),
        "spec": {"completionMode": "Indexed", "completions": 2, "parallelism": 2, "backoffLimit": 0,
                 "suspend": suspend, "template": pod_template(container("trainer", flag_dir, name), flag_dir)},
    }  # fmt: skip


GLOBAL_INDEX_ENV = {"name": "JOB_GLOBAL_INDEX", "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{jobset.LABEL_PREFIX}/job-global-index']"}}}  # fmt: skip
"""JobSet gives a pod no rank env; its Job's global index (JobSet's own label) is the rank of a one-pod Job."""


def job_set(name: str, namespace: str, flag_dir: Path, *, labels: dict[str, str] | None = None,
            suspend: bool = False) -> dict[str, Any]:  # fmt: skip
    """A JobSet of two replicated Jobs, `driver` (1 Job) then `workers` (2 Jobs), one pod each: ranks 0, 1, 2.

    Completion mode, restart policy and DNS hostnames are left to JobSet's defaulting webhook."""
    template = {"spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
                         "template": pod_template(container("trainer", flag_dir, name), flag_dir, env=[GLOBAL_INDEX_ENV])}}  # fmt: skip
    del template["spec"]["template"]["spec"]["restartPolicy"]
    return {
        "apiVersion": jobset.KIND.api_version, "kind": "JobSet", "metadata": _meta(name, namespace, labels),
        "spec": {"suspend": suspend, "replicatedJobs": [{"name": "driver", "replicas": 1, "template": template},
                                                        {"name": "workers", "replicas": 2, "template": template}]},
    }  # fmt: skip


def pytorch_job(name: str, namespace: str, flag_dir: Path, *, labels: dict[str, str] | None = None,
                suspend: bool = False) -> dict[str, Any]:  # fmt: skip
    """A PyTorchJob of a Master and 2 Workers (the training-operator gives each RANK and PET_NODE_RANK:
    the Master 0, Worker i i + 1). Without a Master it gives none: torchrun's rendezvous numbers the nodes.

    The container must be named `pytorch`: the training-operator renders its env into that one."""

    def replicas(n: int) -> dict[str, Any]:
        return {"replicas": n, "restartPolicy": "Never",
                "template": pod_template(container("pytorch", flag_dir, name), flag_dir)}  # fmt: skip

    return {
        "apiVersion": pytorchjob.KIND.api_version, "kind": "PyTorchJob", "metadata": _meta(name, namespace, labels),
        "spec": {"runPolicy": {"suspend": suspend},
                 "pytorchReplicaSpecs": {pytorchjob.MASTER: replicas(1), pytorchjob.WORKER: replicas(2)}},
    }  # fmt: skip


TORCH_RUNTIME = "torch-distributed"
"""The ClusterTrainingRuntime Kubeflow Trainer ships for PyTorch (`dev/k8s.sh controllers` installs it)."""


def train_job(name: str, namespace: str, flag_dir: Path, *, labels: dict[str, str] | None = None,
              suspend: bool = False) -> dict[str, Any]:  # fmt: skip
    """A TrainJob of 2 nodes on the torch runtime (Trainer gives each node PET_NODE_RANK); image and command
    are the TrainJob's, the flag directory comes in through a runtime patch of the test's (`node_patch`).

    Queued (`kueue.x-k8s.io/queue-name` in `labels`), it also carries the empty patch Kueue's webhook would
    add (manager `kueue.x-k8s.io/manager`): Kueue writes the admitted pod sets' settings into it."""
    main = container("node", flag_dir, name)
    patches = [{"manager": TEST_PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": trainjob.NODE_STEP, "template": {"spec": {"template": {"spec": {
            "volumes": [flag_volume(flag_dir)],
            "containers": [{"name": "node", "volumeMounts": main["volumeMounts"]}]}}}}}]}}}}]  # fmt: skip
    if KUEUE_QUEUE_LABEL in (labels or {}):
        patches.append({"manager": KUEUE_PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {}}}})
    return {
        "apiVersion": trainjob.KIND.api_version, "kind": "TrainJob", "metadata": _meta(name, namespace, labels),
        "spec": {
            "suspend": suspend,
            "runtimeRef": {"name": TORCH_RUNTIME},
            "trainer": {"image": IMAGE, "command": main["command"], "numNodes": 2},
            "runtimePatches": patches,
        },
    }  # fmt: skip


TEST_PATCH_MANAGER = "trainguard.dev/e2e"
"""The manager of a TrainJob's runtime patch that the tests write."""
KUEUE_PATCH_MANAGER = "kueue.x-k8s.io/manager"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def node_patch(manifest: dict[str, Any]) -> dict[str, Any]:
    """The pod template patch of a `train_job` manifest's `node` Job (`metadata` and `spec`)."""
    patch = next(p for p in manifest["spec"]["runtimePatches"] if p["manager"] == TEST_PATCH_MANAGER)
    job = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    return job["template"]["spec"]["template"]  # type: ignore[no-any-return]


@dataclasses.dataclass(frozen=True)
class Kind:
    """A workload kind under test: how to make one, its adapter, its training pods and their rank env."""

    id: str
    adapter: declaration.WorkloadKind
    manifest: Callable[..., dict[str, Any]]
    """(name, namespace, flag_dir, *, labels=None, suspend=False) -> the object to apply."""
    pods: int
    rank_env: str
    """The env the controller (or, for a JobSet, the test's downward API) gives a pod its rank in."""

    def path(self, namespace: str, name: str = "") -> str:
        root = "/apis/" + self.adapter.api_version if "/" in self.adapter.api_version else "/api/v1"
        return f"{root}/namespaces/{namespace}/{self.adapter.plural}" + (f"/{name}" if name else "")

    def get(self, cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
        return cluster.get(self.path(namespace, name))

    def pods_of(self, cluster: Cluster, namespace: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
        """The pods the adapter's selector finds (terminating ones included)."""
        labels = ",".join(f"{k}={v}" for k, v in self.adapter.pod_selector(obj).items())
        return cluster.items(f"/api/v1/namespaces/{namespace}/pods", labels=labels)


KINDS = (
    Kind("job", batch_job.KIND, indexed_job, pods=2, rank_env="JOB_COMPLETION_INDEX"),
    Kind("jobset", jobset.KIND, job_set, pods=3, rank_env="JOB_GLOBAL_INDEX"),
    Kind("pytorchjob", pytorchjob.KIND, pytorch_job, pods=3, rank_env="RANK"),
    Kind("trainjob", trainjob.KIND, train_job, pods=2, rank_env="PET_NODE_RANK"),
)


def rank_env(cluster: Cluster, namespace: str, pod: str, container_name: str) -> dict[str, str]:
    """The rank env the pod's loop printed when it started ({} before it printed it)."""
    proc = cluster.kubectl("logs", "-n", namespace, pod, "-c", container_name, check=False)
    match = RANK_LINE.search(proc.stdout) if proc.returncode == 0 else None
    if match is None:
        return {}
    return dict(item.split("=", 1) for item in match.group("env").split())


HOLD_SECONDS = 60
"""How long a stopped workload must stay suspended with no pod: every controller involved reconciles far more often."""
START_SECONDS = 300
"""Pods of several workloads starting at once on the loaded 2-core node."""


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


Transform = Callable[[Kind, dict[str, Any]], dict[str, Any]]
"""Changes a kind's manifest before it is applied (the pod templates' labels and container, say)."""


def launch(cluster: Cluster, namespace: str, flag_dir: Path, *, suffix: str,
           labels: dict[str, str] | None = None, suspend: bool = False,
           kinds: tuple[Kind, ...] = KINDS, transform: Transform | None = None) -> list[Launched]:  # fmt: skip
    runs = [Launched(kind, namespace, f"{kind.id}-{suffix}") for kind in kinds]
    for run in runs:
        manifest = run.kind.manifest(run.name, namespace, flag_dir, labels=labels, suspend=suspend)
        cluster.apply(transform(run.kind, manifest) if transform else manifest)
    return runs


def running(cluster: Cluster, run: Launched) -> list[dict[str, Any]] | None:
    """The workload's pods once all of them run and printed their rank env, else None."""
    pods = run.pods(cluster)
    if len(pods) != run.kind.pods or any((p.get("status") or {}).get("phase") != "Running" for p in pods):
        return None
    if any(not rank_env(cluster, run.namespace, p["metadata"]["name"], main_container(p)) for p in pods):
        return None
    return pods


def main_container(pod: dict[str, Any]) -> str:
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
