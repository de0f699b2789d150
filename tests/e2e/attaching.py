"""Manifests and reads of the attach-mode end-to-end tests, shared with `benchmarks/attach_stop_latency.py`.

`attached` turns `workloads.py`'s manifests into watched ones (the webhook's label on the pod templates, or a
TrainJob's runtime patch, and `attach_trainer.py` as the training container); `policy` is a DebugPolicy
selecting them; `launch_nan` starts the NaN case (every kind, and the kinds Kueue admits a second time,
queued) and `wait_stopped` waits until each of those workloads is suspended with no pod left.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.conftest import SeaweedServer
from tests.e2e.cluster import ROOT, Cluster, eventually
from tests.e2e.conftest import S3_SECRET
from tests.e2e.debugjobs import host_paths
from tests.e2e.workloads import (
    FLAGS,
    KINDS,
    KUEUE_QUEUE_LABEL,
    START_SECONDS,
    Kind,
    Launched,
    launch,
    node_patch,
)
from trainguard.api import debugpolicy
from trainguard.operator import build
from trainguard.operator.workloads import batch_job, control, jobset, trainjob

POLICIES = "/apis/trainguard.dev/v1alpha1/namespaces/{namespace}/debugpolicies"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
SELECT = "trainguard-e2e/policy"
"""The workload label the test's policies select by."""
TRAINER = ROOT / "tests" / "e2e" / "attach_trainer.py"
STOP_RULE = "exploding_tensor"
STOP_DEADLINE_SECONDS = START_SECONDS + 180
"""The pods start, reach the NaN, the evaluator reports it, the operator stops the workload and its pods go."""
ATTACH_VALUES = {
    "attach.enabled": "true",
    "workloads.jobSet.enabled": "true",
    "workloads.pyTorchJob.enabled": "true",
    "workloads.trainJob.enabled": "true",
}
"""The chart values of attach mode with every workload kind."""
LOCAL_QUEUE = "team"


# --- manifests ---------------------------------------------------------------------------------------------


def trainer_env() -> list[dict[str, Any]]:
    return [{"name": "PYTHONPATH", "value": str(ROOT)}, {"name": "HOME", "value": "/tmp"}]


def host_mounts() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The host directories the trainer's Python needs (read-only): its volumes and their mounts."""
    paths = host_paths()
    volumes = [
        {"name": f"host-{i}", "hostPath": {"path": str(p), "type": "Directory"}} for i, p in enumerate(paths)
    ]
    mounts = [{"name": f"host-{i}", "mountPath": str(p), "readOnly": True} for i, p in enumerate(paths)]
    return volumes, mounts


def trainer_command(mode: str, flag: Path) -> list[str]:
    return [str(Path(sys.prefix).resolve() / "bin" / "python"), str(TRAINER), mode, str(flag)]


def _writable_flags(mounts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The flag directory mounted read-write: the trainer writes the time of its first non-finite loss there.

    `readOnly` is left out, not set false: Kueue rewrites a queued TrainJob whole through Go types, which drop
    a false `readOnly`, and Trainer refuses any change to a runtime patch's containers."""
    return [{k: v for k, v in m.items() if k != "readOnly"} if m["name"] == FLAGS else m for m in mounts]


def pod_templates(node: Any) -> Iterator[dict[str, Any]]:
    """Every pod template in a manifest (a mapping whose `spec` has `containers`)."""
    if isinstance(node, dict):
        if isinstance(node.get("spec"), dict) and "containers" in node["spec"]:
            yield node
            return
        for value in node.values():
            yield from pod_templates(value)
    elif isinstance(node, list):
        for value in node:
            yield from pod_templates(value)


def attached(mode: str | None, flag_dir: Path) -> Any:
    """A `launch` transform: the watch label on the pod templates and, unless `mode` is None, `attach_trainer.py
    MODE` as the training container (the flag file is the workload's name, as for the loop)."""

    def transform(kind: Kind, manifest: dict[str, Any]) -> dict[str, Any]:
        manifest = json.loads(json.dumps(manifest))  # a JobSet's replicated Jobs share one template object
        flag = flag_dir / manifest["metadata"]["name"]
        volumes, mounts = host_mounts()
        if kind.adapter is trainjob.KIND:  # the pods' label and mounts through the TrainJob's runtime patch
            template = node_patch(manifest)
            template["metadata"] = {"labels": {debugpolicy.WATCH_LABEL: "true"}}
            if mode is not None:
                manifest["spec"]["trainer"].update(command=trainer_command(mode, flag), env=trainer_env())
                spec = template["spec"]
                spec.update(
                    volumes=[*spec["volumes"], *volumes], securityContext={"runAsUser": 0, "runAsGroup": 0}
                )
                node = spec["containers"][0]
                node["volumeMounts"] = [*_writable_flags(node["volumeMounts"]), *mounts]
            return manifest
        for template in pod_templates(manifest):
            template.setdefault("metadata", {}).setdefault("labels", {})[debugpolicy.WATCH_LABEL] = "true"
            if mode is None:
                continue
            spec = template["spec"]
            main = spec["containers"][0]
            main.update(
                command=trainer_command(mode, flag), workingDir=str(ROOT),
                env=[*main.get("env", []), *trainer_env()],
                securityContext={"runAsUser": 0, "runAsGroup": 0},
                resources={"requests": {"cpu": "50m", "memory": "256Mi"}},
                volumeMounts=[*_writable_flags(main["volumeMounts"]), *mounts],
            )  # fmt: skip
            spec["volumes"] = [*spec["volumes"], *volumes]
        return manifest

    return transform


def policy(name: str, namespace: str, *, s3: SeaweedServer, **spec: Any) -> dict[str, Any]:
    """A DebugPolicy selecting the workloads labelled `SELECT=name`, capturing to a fresh bucket; stop on NaN."""
    body: dict[str, Any] = {
        "selector": {"matchLabels": {SELECT: name}},
        "capture": {"uri": f"s3://{s3.create_bucket()}/attach", "endpoint": s3.endpoint_url,
                    "region": "us-east-1", "secretRef": {"name": S3_SECRET}, "saveInterval": 5},
        "rules": [{"type": STOP_RULE, "action": "stop"}],
        "evaluator": {"resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "1Gi"}}},
        **spec,
    }  # fmt: skip
    return {"apiVersion": debugpolicy.API_VERSION, "kind": debugpolicy.KIND,
            "metadata": {"name": name, "namespace": namespace}, "spec": body}  # fmt: skip


def apply_policy(cluster: Cluster, body: dict[str, Any]) -> str:
    """Apply a policy and wait until the operator marks it Ready (it is then in the webhook's index)."""
    cluster.apply(body)
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    eventually(lambda: condition(cluster, namespace, name, "Ready") == "True", timeout_seconds=120,
               what=f"DebugPolicy {name} Ready (status: {policy_of(cluster, namespace, name).get('status')})")  # fmt: skip
    return name


def policy_of(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    obj = cluster.get(f"{POLICIES.format(namespace=namespace)}/{name}")
    assert obj is not None, f"DebugPolicy {namespace}/{name} is gone"
    return obj


def condition(cluster: Cluster, namespace: str, name: str, type_: str) -> str | None:
    for c in (policy_of(cluster, namespace, name).get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return str(c.get("status"))
    return None


def workload_entries(cluster: Cluster, namespace: str, name: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The policy's `status.workloads`, by (kind, name)."""
    status = policy_of(cluster, namespace, name).get("status") or {}
    return {(w["kind"], w["name"]): w for w in status.get("workloads") or []}


def is_injected(pod: dict[str, Any]) -> bool:
    sidecars = [c["name"] for c in pod["spec"].get("initContainers") or []]
    marked = debugpolicy.INJECTED_ANNOTATION in (pod["metadata"].get("annotations") or {})
    assert marked == (build.SIDECAR_NAME in sidecars), pod["metadata"]
    return marked


def training_pods(cluster: Cluster, run: Launched) -> list[dict[str, Any]]:
    """The workload's pods that run a rank (a PyTorchJob's, a TrainJob's all do; no initializer here)."""
    obj = run.get(cluster)
    return [p for p in run.pods(cluster) if run.kind.adapter.pod_rank(p, obj) is not None]


def describe(cluster: Cluster, runs: list[Launched]) -> str:
    lines = []
    for run in runs:
        obj = run.kind.get(cluster, run.namespace, run.name) or {}
        pods = run.kind.pods_of(cluster, run.namespace, obj) if obj else []
        lines.append(f"{run.kind.id} {run.name}: spec {json.dumps(obj.get('spec', {}))[:300]}")
        for p in pods:
            logs = cluster.kubectl("logs", "-n", run.namespace, p["metadata"]["name"], "--all-containers",
                                   "--tail=5", check=False)  # fmt: skip
            lines.append(f"  pod {p['metadata']['name']} {p.get('status', {}).get('phase')} "
                         f"injected={debugpolicy.INJECTED_ANNOTATION in (p['metadata'].get('annotations') or {})}\n"
                         f"{logs.stdout[-1500:]}")  # fmt: skip
    return "\n".join(lines)


QUEUED_KINDS = tuple(k for k in KINDS if k.adapter is not jobset.KIND)
"""The kinds the NaN test also runs under Kueue (a JobSet under Kueue: `test_workload_controllers.py`)."""


def kueue_workload(cluster: Cluster, run: Launched) -> dict[str, Any]:
    """The one Kueue Workload of a queued workload, found as the operator finds it (the job-uid label), and
    controlled by the workload itself."""
    obj = run.get(cluster)
    workloads = cluster.items(f"{KUEUE}/namespaces/{run.namespace}/workloads",
                              labels=f"{control.KUEUE_JOB_UID_LABEL}={obj['metadata']['uid']}")  # fmt: skip
    assert len(workloads) == 1, (run.kind.id, workloads)
    owner = next(o for o in workloads[0]["metadata"]["ownerReferences"] if o.get("controller"))
    assert (owner["kind"], owner["name"]) == (run.kind.adapter.kind, run.name), (run.kind.id, owner)
    return workloads[0]


def local_queue(cluster: Cluster, namespace: str, cluster_queue: str) -> None:
    cluster.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"name": LOCAL_QUEUE, "namespace": namespace}, "spec": {"clusterQueue": cluster_queue}})  # fmt: skip


def launch_attached(cluster: Cluster, namespace: str, flag_dir: Path, *, policy_name: str, mode: str,
                    suffix: str) -> tuple[list[Launched], list[Launched]]:  # fmt: skip
    """Every kind watched and running `attach_trainer.py MODE`, and the kinds of `QUEUED_KINDS` again, queued in
    `LOCAL_QUEUE` (created suspended, as Kueue's webhook would make them; Kueue admits and resumes them).
    Returns (queued, all)."""
    transform = attached(mode, flag_dir)
    queued = launch(cluster, namespace, flag_dir, suffix=f"{suffix}-kueue", suspend=True, transform=transform,
                    labels={SELECT: policy_name, KUEUE_QUEUE_LABEL: LOCAL_QUEUE}, kinds=QUEUED_KINDS)  # fmt: skip
    direct = launch(cluster, namespace, flag_dir, suffix=suffix, labels={SELECT: policy_name}, transform=transform,
                    kinds=tuple(k for k in KINDS if k.adapter is not batch_job.KIND))  # fmt: skip
    return queued, queued + direct


def first_nonfinite(flag_dir: Path, run: Launched) -> float | None:
    """The wall-clock time of the workload's first non-finite loss, any rank (written by `attach_trainer.py`)."""
    times = [float(text) for p in flag_dir.glob(f"{run.name}.nonfinite.*") if (text := p.read_text().strip())]
    return min(times) if times else None


def stopped_and_gone(cluster: Cluster, run: Launched) -> bool:
    """The workload's top-level owner is suspended and none of its pods is left (terminating ones count)."""
    return run.kind.adapter.is_suspended(run.get(cluster)) and run.pods(cluster) == []


def wait_stopped(cluster: Cluster, runs: list[Launched], *, since: dict[str, float] | None = None,
                 flag_dir: Path | None = None, timeout_seconds: float = STOP_DEADLINE_SECONDS,
                 interval: float = 1.0) -> dict[str, float]:  # fmt: skip
    """Poll until every workload is `stopped_and_gone`; return the wall-clock time each was first seen so.

    A workload counts only once it started to stop: after `since[name]` (a stop by hand), or once its trainer
    wrote its first non-finite loss into `flag_dir` (a stop by the policy)."""
    gone: dict[str, float] = {}
    deadline = time.monotonic() + timeout_seconds
    while len(gone) < len(runs):
        for run in runs:
            if run.name in gone:
                continue
            started = (since or {}).get(run.name) if flag_dir is None else first_nonfinite(flag_dir, run)
            if started is not None and stopped_and_gone(cluster, run):
                gone[run.name] = time.time()
        if len(gone) == len(runs):
            break
        assert time.monotonic() < deadline, (
            f"not every workload stopped with its pods gone ({sorted(gone)} did):\n{describe(cluster, runs)}"
        )
        time.sleep(interval)
    return gone
