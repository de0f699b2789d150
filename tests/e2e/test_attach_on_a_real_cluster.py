"""Attach mode on the real cluster: DebugPolicies, the operator's pod webhook, and the real workload controllers.

The chart is upgraded with `attach.enabled=true` and every workload kind enabled; the operator runs as a
pod and serves the webhook through the chart's Service and MutatingWebhookConfiguration. The workloads are
`workloads.py`'s (an Indexed Job, a JobSet, a PyTorchJob, a TrainJob), each with the label
`trainguard.dev/watch: "true"` on its pod template and `attach_trainer.py` (real PyTorch, the hook configured
by nothing but the env the webhook injected) as its training container. A TrainJob's pod template is its
runtime's, so its pods are labelled by a ClusterTrainingRuntime of the test's (`torch-distributed` with the
label), as a platform team would do.

- healthy: every kind's pods are injected, the policy lists each workload with every rank seen and no
  rule, and each completes untouched;
- a NaN loss: each workload's top-level owner is suspended (the Indexed Job, admitted by Kueue, through its
  Kueue Workload instead), every pod goes, and 60 s later still none came back; the time from the first
  non-finite loss (written by the trainer) to the last pod gone is printed per kind;
- the operator scaled to zero: a new workload's pods start all the same, without the evaluator, and once the
  operator is back the policy reports the workload blind within one resync;
- a pod without the label never reaches the webhook (the operator's admission counter for its namespace
  stays absent, while a labelled pod there counts);
- an invalid policy is refused by the API server with the CRD's message.

The kinds of a test run side by side: one start and one hold serve them all.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SeaweedServer
from tests.e2e.cluster import IMAGE, OPERATOR_LABELS, ROOT, Cluster, Release, eventually
from tests.e2e.conftest import S3_SECRET
from tests.e2e.debugjobs import host_paths
from tests.e2e.workloads import (
    FLAGS,
    KINDS,
    START_SECONDS,
    TORCH_RUNTIME,
    Kind,
    Launched,
    hold,
    launch,
    wait_running,
)
from trainguard.api import debugpolicy
from trainguard.operator import actions, build
from trainguard.operator.workloads import batch_job, control, trainjob

POLICIES = "/apis/trainguard.dev/v1alpha1/namespaces/{namespace}/debugpolicies"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
SELECT = "trainguard-e2e/policy"
"""The workload label the test's policies select by."""
TRAINER = ROOT / "tests" / "e2e" / "attach_trainer.py"
WATCHED_RUNTIME = f"{TORCH_RUNTIME}-watched"
STOP_RULE = "exploding_tensor"
RESYNC_DEADLINE_SECONDS = 90
"""One resync (10 s, after the operator's start) with room for a loaded node."""
STOP_DEADLINE_SECONDS = START_SECONDS + 180
"""The pods start, reach the NaN, the evaluator reports it, the operator stops the workload and its pods go."""
ATTACH_VALUES = {
    "attach.enabled": "true",
    "workloads.jobSet.enabled": "true",
    "workloads.pyTorchJob.enabled": "true",
    "workloads.trainJob.enabled": "true",
}


@pytest.fixture(scope="module")
def attach_mode(release: Release, controllers: None, cluster: Cluster) -> Iterator[Release]:
    """The chart upgraded with attach mode and every workload kind; the runtime whose node pods carry the label.

    Afterwards the release goes back to the chart's defaults, as the other tests expect it."""
    cluster.apply(watched_runtime())
    release.upgrade(ATTACH_VALUES)
    try:
        yield release
    finally:
        release.upgrade({})
        cluster.kubectl(
            "delete", "clustertrainingruntime", WATCHED_RUNTIME, "--ignore-not-found", check=False
        )


def watched_runtime() -> dict[str, Any]:
    """Trainer's `torch-distributed` runtime with the webhook's label on its node pods (and root, for the host's
    Python the trainer runs with: see `debugjobs.py`)."""
    pod = {"metadata": {"labels": {debugpolicy.WATCH_LABEL: "true"}},
           "spec": {"securityContext": {"runAsUser": 0, "runAsGroup": 0},
                    "containers": [{"name": trainjob.NODE_STEP, "image": IMAGE}]}}  # fmt: skip
    return {
        "apiVersion": trainjob.KIND.api_version, "kind": "ClusterTrainingRuntime",
        "metadata": {"name": WATCHED_RUNTIME},
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
                 "template": {"spec": {"replicatedJobs": [{
                     "name": trainjob.NODE_STEP,
                     "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                  "spec": {"template": pod}}}]}}},
    }  # fmt: skip


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
    import sys

    return [str(Path(sys.prefix).resolve() / "bin" / "python"), str(TRAINER), mode, str(flag)]


def _writable_flags(mounts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The flag directory mounted read-write: the trainer writes the time of its first non-finite loss there."""
    return [{**m, "readOnly": False} if m["name"] == FLAGS else m for m in mounts]


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
        if (
            kind.adapter is trainjob.KIND
        ):  # the runtime labels the pods; the TrainJob names the command and mounts
            manifest["spec"]["runtimeRef"]["name"] = WATCHED_RUNTIME
            if mode is not None:
                manifest["spec"]["trainer"].update(command=trainer_command(mode, flag), env=trainer_env())
                override = manifest["spec"]["podSpecOverrides"][0]
                override["volumes"] = [*override["volumes"], *volumes]
                node = override["containers"][0]
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


# --- tests -------------------------------------------------------------------------------------------------


def test_healthy_workloads_are_injected_seen_and_complete_untouched(
    cluster: Cluster, attach_mode: Release, operator: Release, namespace: str, flag_dir: Path,
    bridge_s3: SeaweedServer,
) -> None:  # fmt: skip
    name = apply_policy(cluster, policy("healthy", namespace, s3=bridge_s3))
    runs = launch(cluster, namespace, flag_dir, suffix="ok", labels={SELECT: name},
                  transform=attached("healthy", flag_dir))  # fmt: skip
    pods = wait_running(cluster, runs)
    for run in runs:
        assert all(is_injected(p) for p in pods[run.name]), describe(cluster, [run])

    def all_seen() -> dict[tuple[str, str], dict[str, Any]] | None:
        entries = workload_entries(cluster, namespace, name)
        for run in runs:
            entry = entries.get((run.kind.adapter.kind, run.name))
            if entry is None or entry.get("ranksSeen") != run.kind.pods or entry.get("step") is None:
                return None
        return entries

    entries = eventually(all_seen, timeout_seconds=RESYNC_DEADLINE_SECONDS + 60, interval=2,
                         what=f"every rank of every workload seen by the policy "
                              f"({workload_entries(cluster, namespace, name)})")  # fmt: skip
    for run in runs:
        entry = entries[run.kind.adapter.kind, run.name]
        assert entry["phase"] == "Running" and not entry.get("blind") and entry.get("rule") is None, entry
    assert condition(cluster, namespace, name, "Blind") == "False"

    for run in runs:
        (flag_dir / run.name).touch()
    for run in runs:
        finished = eventually(
            lambda run=run: run.kind.adapter.state(run.get(cluster)).finished,  # type: ignore[misc]
            timeout_seconds=240, interval=2, what=f"{run.kind.id} {run.name} finished",
        )  # fmt: skip
        assert finished.succeeded, (run.kind.id, finished, describe(cluster, [run]))
        assert not run.kind.adapter.is_suspended(run.get(cluster)), run.kind.id

    def all_succeeded() -> dict[tuple[str, str], dict[str, Any]] | None:
        entries = workload_entries(cluster, namespace, name)
        done = all(entries.get((r.kind.adapter.kind, r.name), {}).get("phase") == "Succeeded" for r in runs)
        return entries if done else None

    entries = eventually(all_succeeded, timeout_seconds=RESYNC_DEADLINE_SECONDS, interval=2,
                         what=f"the policy showing every workload Succeeded ({workload_entries(cluster, namespace, name)})")  # fmt: skip
    assert all(e.get("rule") is None for e in entries.values()), entries
    acted = [e for e in cluster.events(namespace, name, kind=debugpolicy.KIND)
             if e.get("reason") in (actions.EVENT_REASON_STOPPED, actions.EVENT_REASON_RULE_TRIGGERED)]  # fmt: skip
    assert acted == [], [e.get("message") for e in acted]
    # The status the operator writes is the one the API server stores: no resync patches it again for nothing.
    assert "finished with inconsistencies" not in operator.operator_log()


def test_a_nan_loss_stops_each_workloads_top_level_owner_and_the_stop_holds(
    cluster: Cluster, attach_mode: Release, operator: Release, kueue: str, namespace: str, flag_dir: Path,
    bridge_s3: SeaweedServer,
) -> None:  # fmt: skip
    cluster.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"name": "team", "namespace": namespace}, "spec": {"clusterQueue": kueue}})  # fmt: skip
    name = apply_policy(cluster, policy("nan", namespace, s3=bridge_s3))
    transform = attached("nan", flag_dir)
    # The Indexed Job is queued: created suspended, as Kueue's webhook would make it; Kueue admits and resumes it.
    queued = launch(cluster, namespace, flag_dir, suffix="nan", suspend=True, transform=transform,
                    labels={SELECT: name, "kueue.x-k8s.io/queue-name": "team"},
                    kinds=tuple(k for k in KINDS if k.adapter is batch_job.KIND))  # fmt: skip
    runs = queued + launch(cluster, namespace, flag_dir, suffix="nan", labels={SELECT: name}, transform=transform,
                           kinds=tuple(k for k in KINDS if k.adapter is not batch_job.KIND))  # fmt: skip

    def first_nonfinite(run: Launched) -> float | None:
        times = [
            float(p.read_text()) for p in flag_dir.glob(f"{run.name}.nonfinite.*") if p.read_text().strip()
        ]
        return min(times) if times else None

    gone: dict[str, float] = {}
    deadline = time.monotonic() + STOP_DEADLINE_SECONDS
    while len(gone) < len(runs):
        for run in runs:
            if run.name in gone or first_nonfinite(run) is None:
                continue
            if run.kind.adapter.is_suspended(run.get(cluster)) and run.pods(cluster) == []:
                gone[run.name] = time.time()
        assert time.monotonic() < deadline, (
            f"not every workload stopped with its pods gone ({sorted(gone)} did):\n{describe(cluster, runs)}"
        )
        time.sleep(1)
    stopped_at = time.monotonic()
    for run in runs:
        start = first_nonfinite(run)
        assert start is not None
        print(f"\nattach stop latency: {run.kind.id}: {gone[run.name] - start:.1f} s from the first non-finite "
              f"loss to the last pod gone" + (" (Kueue)" if run in queued else ""))  # fmt: skip

    # Kueue: the operator deactivated the Job's Workload (found by the Job's uid); Kueue suspended the Job.
    job = queued[0].get(cluster)
    workloads = cluster.items(f"{KUEUE}/namespaces/{namespace}/workloads",
                              labels=f"{control.KUEUE_JOB_UID_LABEL}={job['metadata']['uid']}")  # fmt: skip
    assert len(workloads) == 1 and workloads[0]["spec"]["active"] is False, workloads
    hold(cluster, runs, stopped_at)
    workload = cluster.get(f"{KUEUE}/namespaces/{namespace}/workloads/{workloads[0]['metadata']['name']}")
    assert workload is not None and workload["spec"]["active"] is False, "the Workload was activated again"

    entries = workload_entries(cluster, namespace, name)
    for run in runs:
        entry = entries.get((run.kind.adapter.kind, run.name))
        assert entry is not None and entry["phase"] == "Suspended", (run.kind.id, entries)
    stops = [e for e in cluster.events(namespace, name, kind=debugpolicy.KIND)
             if e.get("reason") == actions.EVENT_REASON_STOPPED]  # fmt: skip
    for run in runs:
        mine = [e for e in stops if f" {run.name}" in e.get("message", "")]
        assert len(mine) == 1 and STOP_RULE in mine[0]["message"], (
            run.kind.id,
            [e["message"] for e in stops],
        )


def scale_operator(cluster: Cluster, release: Release, replicas: int) -> None:
    deployment = cluster.kubectl("get", "deployment", "-n", release.namespace, "-l", OPERATOR_LABELS,
                                 "-o", "name").stdout.split()  # fmt: skip
    assert len(deployment) == 1, deployment
    cluster.kubectl("scale", "-n", release.namespace, deployment[0], f"--replicas={replicas}")
    if replicas == 0:
        eventually(lambda: release.operator_pods() == [], timeout_seconds=120, what="the operator pod gone")
    else:
        cluster.kubectl("rollout", "status", "-n", release.namespace, deployment[0], "--timeout=180s",
                        timeout=200)  # fmt: skip


def test_with_the_operator_down_pods_still_start_and_the_workload_is_reported_blind(
    cluster: Cluster, attach_mode: Release, operator: Release, namespace: str, flag_dir: Path,
    bridge_s3: SeaweedServer,
) -> None:  # fmt: skip
    name = apply_policy(cluster, policy("blind", namespace, s3=bridge_s3))
    job = tuple(k for k in KINDS if k.adapter is batch_job.KIND)
    scale_operator(cluster, attach_mode, 0)
    try:
        # The loop of workloads.py (no PyTorch: nothing would check it anyway), with the label.
        runs = launch(cluster, namespace, flag_dir, suffix="blind", labels={SELECT: name}, kinds=job,
                      transform=attached(None, flag_dir))  # fmt: skip
        pods = wait_running(cluster, runs)[runs[0].name]
        assert not any(is_injected(p) for p in pods)
    finally:
        scale_operator(cluster, attach_mode, 1)
    back = time.monotonic()
    entry = eventually(
        lambda: workload_entries(cluster, namespace, name).get(("Job", runs[0].name), {}).get("blind") and
        workload_entries(cluster, namespace, name)[("Job", runs[0].name)],
        timeout_seconds=RESYNC_DEADLINE_SECONDS, interval=1,
        what=f"the Job reported blind ({policy_of(cluster, namespace, name).get('status')})",
    )  # fmt: skip
    print(f"\nblind reported {time.monotonic() - back:.0f} s after the operator was back")
    assert entry["ranksSeen"] == 0, entry
    assert condition(cluster, namespace, name, "Blind") == "True"
    status = policy_of(cluster, namespace, name)["status"]
    assert status["blindCount"] == 1 and runs[0].name in next(
        c["message"] for c in status["conditions"] if c["type"] == "Blind"
    ), status
    (
        flag_dir / runs[0].name
    ).touch()  # the loop ends (its python, pid 1, would sit out SIGTERM's grace period)
    eventually(lambda: runs[0].kind.adapter.state(runs[0].get(cluster)).finished, timeout_seconds=120,
               what=f"Job {runs[0].name} finished")  # fmt: skip


def admission_requests(release: Release, namespace: str) -> dict[str, float]:
    """The operator's admission counter for one namespace, by result ({} when no request came from it)."""
    counts = {}
    for line in release.metrics().splitlines():
        if (
            line.startswith("trainguard_operator_admission_requests_total{")
            and f'namespace="{namespace}"' in line
        ):
            labels, value = line.rsplit(" ", 1)
            result = labels.split('result="', 1)[1].split('"', 1)[0]
            counts[result] = float(value)
    return counts


def bare_pod(name: str, namespace: str, flag_dir: Path, labels: dict[str, str]) -> dict[str, Any]:
    from tests.e2e.workloads import container, flag_volume

    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"restartPolicy": "Never", "containers": [container("main", flag_dir, name)],
                     "volumes": [flag_volume(flag_dir)]}}  # fmt: skip


def test_a_pod_without_the_label_never_reaches_the_webhook(
    cluster: Cluster, attach_mode: Release, operator: Release, namespace: str, flag_dir: Path
) -> None:
    def phase(pod: str) -> str | None:
        obj = cluster.get(f"/api/v1/namespaces/{namespace}/pods/{pod}")
        return str((obj or {}).get("status", {}).get("phase")) if obj else None

    cluster.apply(bare_pod("unlabelled", namespace, flag_dir, {}))
    eventually(
        lambda: phase("unlabelled") == "Running",
        timeout_seconds=START_SECONDS,
        what="the unlabelled pod running",
    )
    assert admission_requests(attach_mode, namespace) == {}
    # The counter counts: a labelled pod of the same namespace reaches the webhook (no workload: left unchanged).
    cluster.apply(bare_pod("labelled", namespace, flag_dir, {debugpolicy.WATCH_LABEL: "true"}))
    eventually(
        lambda: phase("labelled") == "Running", timeout_seconds=START_SECONDS, what="the labelled pod running"
    )
    assert admission_requests(attach_mode, namespace) == {"unchanged": 1.0}
    for pod in ("unlabelled", "labelled"):
        (flag_dir / pod).touch()  # the loops end (their python, pid 1, would sit out SIGTERM's grace period)
    for pod in ("unlabelled", "labelled"):
        eventually(lambda pod=pod: phase(pod) == "Succeeded", timeout_seconds=120, what=f"pod {pod} ended")  # type: ignore[misc]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"targetRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "a"}, "selector": {"matchLabels": {"a": "b"}}},
         "give exactly one of spec.selector"),
        ({"selector": {}}, "selects every workload of the namespace"),
    ],
    ids=["selector-and-targetRef", "empty-selector"],
)  # fmt: skip
def test_an_invalid_policy_is_refused_with_a_clear_message(
    cluster: Cluster, attach_mode: Release, namespace: str, spec: dict[str, Any], message: str
) -> None:
    body = {"apiVersion": debugpolicy.API_VERSION, "kind": debugpolicy.KIND,
            "metadata": {"name": "invalid", "namespace": namespace},
            "spec": {"capture": {"uri": "s3://bucket/runs"}, **spec}}  # fmt: skip
    proc = cluster.apply(body, check=False)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert cluster.get(f"{POLICIES.format(namespace=namespace)}/invalid") is None
