"""DebugJob manifests of the end-to-end tests: real PyTorch training in the cluster's pods.

The project image holds TrainGuard but not PyTorch, so the trainer container runs the project
image with this machine's Python install, the repository's venv and the repository itself mounted
at the same paths (hostPath, read-only): the pod runs the same interpreter, torch and TrainGuard
code as the tests. That is a test arrangement only; users' images bring their own PyTorch. The
trainer runs as root so it can read those host paths (the sidecar keeps its non-root context).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.e2e.cluster import IMAGE, ROOT

TRAINER = ROOT / "tests" / "e2e" / "ddp_trainer.py"


def host_paths() -> list[Path]:
    """The host directories the trainer needs: the repository, its venv and the base Python install."""
    wanted = [ROOT, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()]
    paths: list[Path] = []
    for path in wanted:
        if path == Path("/usr"):
            continue  # a Debian python3 in /usr: the image has the same one
        if not any(path == p or p in path.parents for p in paths):
            paths = [p for p in paths if path not in p.parents] + [path]
    return paths


def trainer_template(mode: str, steps: int, diverge_from: int = 0) -> dict[str, Any]:
    """The pod template of a rank running `ddp_trainer.py MODE STEPS FROM`."""
    paths = host_paths()
    python = Path(sys.prefix).resolve() / "bin" / "python"
    return {
        "spec": {
            "containers": [
                {
                    "name": "trainer",
                    "image": IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "command": [str(python), str(TRAINER), mode, str(steps), str(diverge_from)],
                    "workingDir": str(ROOT),
                    "env": [{"name": "PYTHONPATH", "value": str(ROOT)}, {"name": "HOME", "value": "/tmp"}],
                    "securityContext": {"runAsUser": 0, "runAsGroup": 0},
                    "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
                    "volumeMounts": [
                        {"name": f"host-{i}", "mountPath": str(p), "readOnly": True}
                        for i, p in enumerate(paths)
                    ],
                }
            ],
            "volumes": [
                {"name": f"host-{i}", "hostPath": {"path": str(p), "type": "Directory"}}
                for i, p in enumerate(paths)
            ],
        }
    }


def training_debugjob(
    name: str,
    *,
    namespace: str,
    bucket: str,
    endpoint: str,
    mode: str = "healthy",
    steps: int = 200,
    diverge_from: int = 0,
    workers: int = 2,
    rules: list[dict[str, Any]] | None = None,
    webhook_secret: str | None = None,
    grace_period_seconds: int = 30,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A DebugJob that trains with DDP over `workers` pods and captures to `s3://bucket/runs` at `endpoint`."""
    spec: dict[str, Any] = {
        "workers": workers,
        "template": trainer_template(mode, steps, diverge_from),
        "capture": {
            "uri": f"s3://{bucket}/runs",
            "endpoint": endpoint,
            "region": "us-east-1",
            "secretRef": {"name": "s3-credentials"},
            "saveInterval": 5,
        },
        "rules": rules
        if rules is not None
        else [
            {"type": "exploding_tensor", "action": "stop"},
            {"type": "loss_not_decreasing", "action": "notify"},
        ],
        "actions": {"stop": {"gracePeriodSeconds": grace_period_seconds}},
        "evaluator": {
            "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "1Gi"}}
        },
    }
    if webhook_secret:
        spec["actions"]["notify"] = {
            "webhooks": [{"name": "test", "urlSecretRef": {"name": webhook_secret, "key": "url"}}]
        }
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "trainguard.dev/v1alpha1", "kind": "DebugJob", "metadata": metadata, "spec": spec}
