"""Verdicts only from the sidecars, on a real API server: the pod token mount and the chart's admission policy.

Runs on the test cluster of `tests/e2e` (fixtures `cluster`, `release`, `namespace`, `bridge_s3`): the chart
is installed with its defaults, so the ValidatingAdmissionPolicy `<release>-sidecar-reports` is active
and the operator runs as the chart's ServiceAccount.

What is checked:

- `test_a_pod_token_may_write_only_its_own_ranks_reports`: a DebugJob with 2 workers x 2 processes,
  created suspended (the operator renders its ServiceAccount, Role and RoleBinding; no pod runs).
  The test creates two pods named as the Job controller names them (`<job>-<index>-<random>`,
  held back by a scheduling gate) and asks the API server for tokens bound to them, as the kubelet
  does for the projected volume. With those tokens, through the RBAC the operator granted:
  pod 0 may merge-patch `status.reports` rank-00000 and rank-00001 (allowed), but not rank-00002,
  not delete pod 1's rank-00002, and not set `status.phase`, `status.rules` or `status.lastStep`
  (denied, with the policy's message); pod 1 may write rank-00002 and rank-00003. A token of the
  same ServiceAccount that is bound to no pod may write nothing. The object afterwards holds
  exactly the allowed reports and an unchanged phase.
- `test_a_pod_of_another_debugjob_cannot_report_into_this_one`: two DebugJobs `team` and `team-1`
  whose template names one shared ServiceAccount, so RBAC lets both pods patch both DebugJobs. The
  pod `team-1-<random>` (index 1 of `team`) is refused on `team-1`, whose name it only resembles,
  and the pod of `team-1` is refused on `team`.
- `test_only_the_sidecar_has_a_token_and_its_reports_arrive`: a running DebugJob (one worker
  whose trainer only sleeps, capture on the session's S3): the pod has
  `automountServiceAccountToken: false`, only the `trainguard-evaluator` container mounts the
  projected token, the trainer finds no token at the standard path nor at the sidecar's, and the
  sidecar's report for rank-00000 reaches the status (so its client read the mounted token and
  the policy let it through).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import yaml

from tests.e2e import cluster as k8s

API = "trainguard.dev/v1alpha1"
SIDECAR = "trainguard-evaluator"
TOKEN_DIR = "/var/run/secrets/trainguard.dev/serviceaccount"
DENIED = "ValidatingAdmissionPolicy"


def _debugjob(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "workers": 2,
        "nprocPerNode": 2,
        "suspend": True,
        "template": {"spec": {"containers": [{"name": "trainer", "image": k8s.IMAGE, "command": ["true"]}]}},
        "capture": {"uri": "s3://unused/runs"},
        "rules": [{"type": "exploding_tensor", "action": "stop"}],
    }
    body.update(spec)
    return {
        "apiVersion": API,
        "kind": "DebugJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


def _gated_pod(name: str, namespace: str, service_account: str) -> dict[str, Any]:
    """A pod that is never scheduled (a scheduling gate): it exists only so a token can be bound to it."""
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
        "spec": {"serviceAccountName": service_account, "automountServiceAccountToken": False,
                 "schedulingGates": [{"name": "trainguard.dev/e2e-never"}],
                 "containers": [{"name": "c", "image": k8s.IMAGE, "command": ["true"]}]},
    }  # fmt: skip


def _token(cluster: Any, namespace: str, service_account: str, pod: str | None) -> str:
    bound = ["--bound-object-kind", "Pod", "--bound-object-name", pod] if pod else []
    out = cluster.kubectl("create", "token", service_account, "-n", namespace, "--duration", "10m", *bound)
    return str(out.stdout).strip()


def _as(cluster: Any, token: str, workdir: Path) -> Path:
    """Write a kubeconfig that reaches the cluster with `token` alone (no admin client certificate)."""
    admin = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    context = next(c for c in admin["contexts"] if c["name"] == admin["current-context"])["context"]
    server = next(c for c in admin["clusters"] if c["name"] == context["cluster"])
    path = workdir / f"token-{uuid.uuid4().hex[:8]}.kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": [server],
        "users": [{"name": "pod", "user": {"token": token}}],
        "contexts": [{"name": "pod", "context": {"cluster": server["name"], "user": "pod"}}],
        "current-context": "pod",
    }))  # fmt: skip
    return path


def _patch_status(
    kubeconfig: Path, namespace: str, name: str, status: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is needed"
    args = [kubectl, "--kubeconfig", str(kubeconfig), "-n", namespace, "patch", "debugjob", name,
            "--subresource=status", "--type=merge", "-p", json.dumps({"status": status})]  # fmt: skip
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)


def _allowed(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stderr


def _denied(proc: subprocess.CompletedProcess[str], *message: str) -> None:
    assert proc.returncode != 0, "the API server accepted a write the policy forbids"
    assert DENIED in proc.stderr, proc.stderr
    for part in message:
        assert part in proc.stderr, proc.stderr


def _report(step: int) -> dict[str, Any]:
    return {"lastStep": step, "rules": [{"name": "exploding_tensor", "state": "NoIssuesFound", "step": step}]}


def _wait_for_children(cluster: Any, namespace: str, name: str) -> str:
    """Wait until the operator rendered the DebugJob's ServiceAccount and RoleBinding; return the ServiceAccount."""
    account = f"{name}-trainguard"
    k8s.eventually(
        lambda: cluster.kubectl("get", "rolebinding", account, "-n", namespace, check=False).returncode == 0,
        timeout_seconds=60, what=f"the RoleBinding of {name}",
    )  # fmt: skip
    return account


def test_a_pod_token_may_write_only_its_own_ranks_reports(
    cluster: Any, release: Any, namespace: str, tmp_path: Path
) -> None:
    cluster.apply(_debugjob("dj", namespace))
    account = _wait_for_children(cluster, namespace, "dj")
    for pod in ("dj-0-abcde", "dj-1-fghij"):
        cluster.apply(_gated_pod(pod, namespace, account))
    pod0 = _as(cluster, _token(cluster, namespace, account, "dj-0-abcde"), tmp_path)
    pod1 = _as(cluster, _token(cluster, namespace, account, "dj-1-fghij"), tmp_path)
    unbound = _as(cluster, _token(cluster, namespace, account, None), tmp_path)
    phase = (cluster.debugjob(namespace, "dj").get("status") or {}).get("phase")

    _allowed(
        _patch_status(
            pod0, namespace, "dj", {"reports": {"rank-00000": _report(5), "rank-00001": _report(5)}}
        )
    )
    _allowed(
        _patch_status(
            pod1, namespace, "dj", {"reports": {"rank-00002": _report(6), "rank-00003": _report(6)}}
        )
    )
    _denied(_patch_status(pod0, namespace, "dj", {"reports": {"rank-00002": _report(9)}}), "rank-0 to rank-1")
    _denied(_patch_status(pod0, namespace, "dj", {"reports": {"rank-00003": None}}), "its own ranks")
    _denied(_patch_status(pod0, namespace, "dj", {"phase": "Succeeded"}), "may change only status.reports")
    _denied(_patch_status(pod0, namespace, "dj", {"lastStep": 10**9}), "may change only status.reports")
    _denied(
        _patch_status(
            pod0, namespace, "dj", {"rules": [{"name": "exploding_tensor", "state": "IssuesFound"}]}
        )
    )
    _denied(
        _patch_status(unbound, namespace, "dj", {"reports": {"rank-00000": _report(7)}}), "bound to one of"
    )

    status = cluster.debugjob(namespace, "dj")["status"]
    assert {k: v["lastStep"] for k, v in status["reports"].items()} == {
        "rank-00000": 5, "rank-00001": 5, "rank-00002": 6, "rank-00003": 6,
    }  # fmt: skip
    assert status.get("phase") == phase


def test_a_pod_of_another_debugjob_cannot_report_into_this_one(
    cluster: Any, release: Any, namespace: str, tmp_path: Path
) -> None:
    cluster.kubectl("create", "serviceaccount", "shared", "-n", namespace)
    template = {"spec": {"serviceAccountName": "shared",
                         "containers": [{"name": "trainer", "image": k8s.IMAGE, "command": ["true"]}]}}  # fmt: skip
    for name in ("team", "team-1"):
        cluster.apply(_debugjob(name, namespace, nprocPerNode=1, template=template))
        _wait_for_children(cluster, namespace, name)  # the operator binds `shared` to both DebugJobs' Roles
    cluster.apply(_gated_pod("team-1-abcde", namespace, "shared"))  # index 1 of `team`
    cluster.apply(_gated_pod("team-1-0-fghij", namespace, "shared"))  # index 0 of `team-1`
    of_team = _as(cluster, _token(cluster, namespace, "shared", "team-1-abcde"), tmp_path)
    of_team_1 = _as(cluster, _token(cluster, namespace, "shared", "team-1-0-fghij"), tmp_path)

    _allowed(_patch_status(of_team, namespace, "team", {"reports": {"rank-00001": _report(1)}}))
    _allowed(_patch_status(of_team_1, namespace, "team-1", {"reports": {"rank-00000": _report(1)}}))
    _denied(
        _patch_status(of_team, namespace, "team-1", {"reports": {"rank-00001": _report(2)}}), "not a pod of"
    )
    _denied(
        _patch_status(of_team_1, namespace, "team", {"reports": {"rank-00000": _report(2)}}), "not a pod of"
    )


def test_only_the_sidecar_has_a_token_and_its_reports_arrive(
    cluster: Any, release: Any, namespace: str, bridge_s3: Any
) -> None:
    import boto3

    bucket = f"tg-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=bridge_s3.endpoint_url, aws_access_key_id=bridge_s3.access_key,
                 aws_secret_access_key=bridge_s3.secret_key, region_name="us-east-1").create_bucket(Bucket=bucket)  # fmt: skip
    sleeper = {"spec": {"containers": [{"name": "trainer", "image": k8s.IMAGE, "imagePullPolicy": "IfNotPresent",
                                        "command": ["python3", "-c", "import time; time.sleep(600)"]}]}}  # fmt: skip
    capture = {"uri": f"s3://{bucket}/runs", "endpoint": bridge_s3.endpoint_url, "region": "us-east-1",
               "secretRef": {"name": "s3-credentials"}}  # fmt: skip
    cluster.apply(_debugjob("idle", namespace, workers=1, nprocPerNode=1, suspend=False, template=sleeper,
                            capture=capture))  # fmt: skip

    def running_pod() -> dict[str, Any] | None:
        pods = [p for p in cluster.pods(namespace, "idle") if p["status"].get("phase") == "Running"]
        return pods[0] if pods else None

    pod = k8s.eventually(running_pod, timeout_seconds=180, what="the DebugJob's pod running")
    spec = pod["spec"]
    assert spec["automountServiceAccountToken"] is False
    mounts = {c["name"]: {m["mountPath"] for m in c.get("volumeMounts") or []} for c in spec["containers"]}
    mounts.update(
        {c["name"]: {m["mountPath"] for m in c.get("volumeMounts") or []} for c in spec["initContainers"]}
    )
    assert TOKEN_DIR in mounts.pop(SIDECAR)
    assert all(TOKEN_DIR not in m and not any("serviceaccount" in p for p in m) for m in mounts.values()), (
        mounts
    )

    probe = "import os, sys; sys.exit(any(os.path.exists(p + '/token') for p in sys.argv[1:]))"
    name = pod["metadata"]["name"]
    proc = cluster.kubectl("exec", name, "-n", namespace, "-c", "trainer", "--", "python3", "-c", probe,
                           "/var/run/secrets/kubernetes.io/serviceaccount", TOKEN_DIR, check=False)  # fmt: skip
    assert proc.returncode == 0, f"the trainer can see a ServiceAccount token:\n{proc.stdout}{proc.stderr}"

    reports = k8s.eventually(
        lambda: (cluster.debugjob(namespace, "idle").get("status") or {}).get("reports"),
        timeout_seconds=120, what="the sidecar's first report",
    )  # fmt: skip
    assert set(reports) == {"rank-00000"}
