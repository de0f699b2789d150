"""Fixtures of the end-to-end tests: a real cluster (`dev/k8s.sh`), TrainGuard installed by its chart, S3 for pods.

Session scope: `cluster` (started once, or joined when a developer already runs one; stopped and
wiped at the end only if this session started it), `bridge_s3` (a SeaweedFS serving on the node's
bridge address, which pods reach), `release` (`helm install` of the chart with the project image, `cluster.Release`;
the operator runs as a pod with the chart's ServiceAccount). Per test: `namespace` (with the S3
Secret; deleted afterwards, and nothing of it may be left), `webhook` (a receiver on the bridge),
`flag_dir` (a host directory the workloads' pods mount) and `kube` (the operator's API layer with the
admin credentials). Per module: `controllers` (JobSet, training-operator and Trainer running) and
`kueue` (Kueue with a ClusterQueue, started after the controllers).

Every test here is marked `k8s`. They run when TRAINGUARD_E2E=require, which `dev/test.sh` sets
unless told TRAINGUARD_E2E=skip (it builds the cluster first); then a missing cluster is a failure.
A plain `pytest` without it deselects them with a note.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SeaweedServer, start_seaweedfs
from tests.deploy.tooling import find_tool
from tests.e2e import cluster as k8s
from trainguard.operator import client

S3_SECRET = "s3-credentials"
TEST_TIMEOUT_SECONDS = 1800
FORBIDDEN = re.compile(r"HTTP 403|[Ff]orbidden")
"""How a refused request shows in the operator's log (the client's `HTTP 403 Forbidden: <reason>`, kopf's own)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    ours = [item for item in items if here in Path(str(item.fspath)).parents]
    for item in ours:
        item.add_marker(pytest.mark.k8s)
        item.add_marker(pytest.mark.slow)
        # The first test also waits for the cluster, the image build and helm; each polls with its own deadline.
        item.add_marker(pytest.mark.timeout(TEST_TIMEOUT_SECONDS))
    if not ours or os.environ.get("TRAINGUARD_E2E") == "require":
        return
    config.hook.pytest_deselected(items=ours)
    items[:] = [item for item in items if item not in ours]
    missing = k8s.built()
    why = f"the test cluster is not built ({', '.join(missing)} missing); " if missing else ""
    print(
        f"\ntests/e2e: {len(ours)} tests deselected: {why}dev/test.sh runs them "
        "(it builds the cluster first), as does TRAINGUARD_E2E=require",
        file=sys.stderr,
    )


@pytest.fixture(scope="session")
def cluster() -> Iterator[k8s.Cluster]:
    missing = k8s.built()
    if missing:
        pytest.fail(f"the test cluster is not built ({', '.join(missing)} missing): run dev/k8s.sh build")
    reuse = os.environ.get("TRAINGUARD_E2E_REUSE_IMAGE") == "1"
    c = k8s.Cluster.start(build_image=not reuse)
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="session")
def bridge_s3(cluster: k8s.Cluster) -> Iterator[SeaweedServer]:
    """SeaweedFS on the bridge address: the host and every pod reach it at the same URL."""
    server = start_seaweedfs(host=cluster.bridge_ip)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def release(cluster: k8s.Cluster) -> Iterator[k8s.Release]:
    rel = k8s.Release.install(cluster, helm=find_tool("helm"))
    try:
        yield rel
    finally:
        rel.uninstall()


@pytest.fixture
def operator(release: k8s.Release) -> Iterator[k8s.Release]:
    """The installed operator; after the test, its log must hold no 403 (a missing permission)."""
    yield release
    log = release.operator_log()
    forbidden = [line for line in log.splitlines() if FORBIDDEN.search(line)]
    assert not forbidden, "the operator was refused a request:\n" + "\n".join(forbidden[:20])


@pytest.fixture
def namespace(
    cluster: k8s.Cluster, bridge_s3: SeaweedServer, request: pytest.FixtureRequest
) -> Iterator[str]:
    """A fresh namespace with the S3 Secret; deleted after the test (its DebugJobs and DebugPolicies first, while
    the operator runs to remove its finalizer from them)."""
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    cluster.kubectl("create", "namespace", name)
    cluster.kubectl("create", "secret", "generic", S3_SECRET, "-n", name,
                    f"--from-literal=AWS_ACCESS_KEY_ID={bridge_s3.access_key}",
                    f"--from-literal=AWS_SECRET_ACCESS_KEY={bridge_s3.secret_key}")  # fmt: skip
    try:
        yield name
    finally:
        cluster.kubectl(
            "delete",
            "debugjobs,debugpolicies",
            "--all",
            "-n",
            name,
            "--timeout",
            "120s",
            check=False,
            timeout=150,
        )
        cluster.kubectl("delete", "namespace", name, "--timeout", "180s", check=False, timeout=210)


@dataclass
class WebhookReceiver:
    """An HTTP endpoint on the bridge address that records every POST the operator sends."""

    url: str
    received: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def webhook(cluster: k8s.Cluster) -> Iterator[WebhookReceiver]:
    received: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with contextlib.suppress(ValueError):
                received.append(json.loads(body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer((cluster.bridge_ip, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield WebhookReceiver(url=f"http://{cluster.bridge_ip}:{server.server_port}/hook", received=received)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


CLUSTER_QUEUE = "e2e-cluster-queue"


@pytest.fixture(scope="module")
def kueue(cluster: k8s.Cluster, controllers: None) -> Iterator[str]:
    """Kueue running, with one ResourceFlavor and a ClusterQueue open to every namespace; yields its name.

    Started after the workload controllers: Kueue sets up its JobSet, PyTorchJob and TrainJob integrations
    once their CRDs are served (a missing one only after a backoff of up to 2 minutes)."""
    proc = subprocess.run(
        [str(k8s.K8S_SH), "kueue"], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with k8s.cluster_queue(cluster, CLUSTER_QUEUE, "e2e-flavor") as name:
        yield name


@pytest.fixture(scope="module")
def controllers(cluster: k8s.Cluster) -> None:
    """JobSet, training-operator and Trainer running, with their CRDs, webhooks and the torch runtime."""
    proc = subprocess.run(
        [str(k8s.K8S_SH), "controllers"], capture_output=True, text=True, timeout=600, check=False
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
def kube(cluster: k8s.Cluster) -> client.Kube:
    """The operator's own API layer, with the admin credentials (not closed: it shares the cluster's client)."""
    return client.Kube(cluster.api)
