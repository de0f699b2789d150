"""The test cluster of `dev/k8s.sh` seen from the tests: start it, read and change objects, run kubectl.

`Cluster.start()` brings the cluster up (or joins one a developer started) and loads the project
image into the node; `stop()` stops and forgets what it started. Objects are read as plain JSON
through the official client's REST layer (no typed models), and kubectl runs with the admin
kubeconfig and its own cache directory. `eventually` polls a condition with a deadline; nothing
here sleeps for a fixed time.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import kubernetes

ROOT = Path(__file__).resolve().parents[2]
K8S_SH = ROOT / "dev" / "k8s.sh"
IMAGE = "localhost/trainguard:e2e"
HOME = Path(os.environ.get("TRAINGUARD_K8S_HOME") or Path.home() / ".cache" / "trainguard" / "k8s")
BINARIES = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
    "coredns",
    "crictl",
    "kueue",
    "jobset",
    "training-operator",
    "trainer",
)
OPTIONAL = ("kueue", "jobset", "training-operator", "trainer")
"""Processes of `dev/k8s.sh status` that tests start when they need them (`kueue`, `controllers`): not the cluster."""
UP_TIMEOUT_SECONDS = 600
IMAGE_TIMEOUT_SECONDS = 1200
"""The image build (debootstrap base the first time, then pip in buildah) takes 2-6 minutes on a loaded machine."""

T = TypeVar("T")


def built() -> list[str]:
    """Return the cluster binaries that `dev/k8s.sh build` has not built yet."""
    return [b for b in BINARIES if not (HOME / "cache" / "bin" / b).exists()]


def eventually(
    predicate: Callable[[], T | None], *, timeout_seconds: float, what: str, interval: float = 0.5
) -> T:
    """Poll until `predicate()` returns something truthy and return it; fail naming `what` after the timeout."""
    deadline = time.monotonic() + timeout_seconds
    last: Any = None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout_seconds:.0f} s waiting for {what} (last: {last!r})"
            )
        time.sleep(interval)


def _k8s_sh(*args: str, timeout: float) -> str:
    proc = subprocess.run([str(K8S_SH), *args], capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"dev/k8s.sh {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return proc.stderr


@dataclass
class Cluster:
    """A running test cluster: its kubeconfig, the bridge address pods reach the host on, and API access."""

    env: dict[str, str]
    started_here: bool
    api: Any = None
    kubectl_cache: Path = field(default_factory=lambda: HOME / "run" / "kubectl-cache")

    @classmethod
    def start(cls, *, build_image: bool = True) -> Cluster:
        """Start the cluster unless one runs (then join it), and load the project image into the node."""
        status = subprocess.run([str(K8S_SH), "status"], capture_output=True, text=True, check=False).stdout
        core = [line for line in status.splitlines() if line and line.split()[0] not in OPTIONAL]
        running = bool(core) and all("running" in line for line in core)
        if not running:
            _k8s_sh("down", "--wipe", timeout=120)  # leftovers of an interrupted session
        started = time.monotonic()
        log = _k8s_sh("up", timeout=UP_TIMEOUT_SECONDS)
        print(f"cluster up in {time.monotonic() - started:.0f} s\n{log}", file=sys.stderr)
        env = dict(
            line.split("=", 1) for line in (HOME / "run" / "env").read_text().splitlines() if "=" in line
        )
        cluster = cls(env=env, started_here=not running)
        if build_image:
            started = time.monotonic()
            _k8s_sh("image", IMAGE, timeout=IMAGE_TIMEOUT_SECONDS)
            print(f"image {IMAGE} built and loaded in {time.monotonic() - started:.0f} s", file=sys.stderr)
        config = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=cluster.kubeconfig, client_configuration=config)
        cluster.api = kubernetes.client.ApiClient(config)
        return cluster

    def stop(self) -> None:
        """Stop the cluster and forget its state if this session started it; a joined one keeps running."""
        if self.api is not None:
            self.api.close()
        if self.started_here:
            _k8s_sh("down", "--wipe", timeout=300)

    @property
    def kubeconfig(self) -> str:
        return self.env["KUBECONFIG"]

    @property
    def bridge_ip(self) -> str:
        return self.env["TG_K8S_BRIDGE_IP"]

    @property
    def run_dir(self) -> Path:
        return Path(self.env["TG_K8S_RUN"])

    # --- kubectl -------------------------------------------------------------------------------------

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against the cluster; with `check`, a failure raises with both output streams."""
        cmd = ["kubectl", "--kubeconfig", self.kubeconfig, "--cache-dir", str(self.kubectl_cache), *args]
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{shlex.join(cmd)} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
            )
        return proc

    def apply(
        self, manifest: dict[str, Any] | str, *, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        return self.kubectl("apply", "-f", "-", stdin=text, check=check)

    def install_crd(self) -> None:
        """Apply the DebugJob CRD of this checkout (server-side: it is large) and wait until it is served."""
        self.kubectl(
            "apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "crds" / "debugjob.yaml")
        )
        eventually(
            lambda: self.kubectl("wait", "--for", "condition=Established", "--timeout", "5s",
                                 "crd/debugjobs.trainguard.dev", check=False).returncode == 0,
            timeout_seconds=60, what="the DebugJob CRD established",
        )  # fmt: skip

    # --- REST ----------------------------------------------------------------------------------------

    def request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json"
    ) -> Any:
        """Send one API request and return the JSON answer (None for 404)."""
        try:
            response = self.api.call_api(
                path, method, header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body, auth_settings=["BearerToken"], _preload_content=False,
                _return_http_data_only=True, _request_timeout=30,
            )  # fmt: skip
        except kubernetes.client.ApiException as err:
            if err.status == 404:
                return None
            raise
        data = response.data
        return json.loads(data) if data else None

    def get(self, path: str) -> dict[str, Any] | None:
        result: dict[str, Any] | None = self.request("GET", path)
        return result

    def items(self, path: str, *, labels: str = "") -> list[dict[str, Any]]:
        query = f"?labelSelector={labels}" if labels else ""
        return list((self.request("GET", path + query) or {}).get("items") or [])

    def patch(self, path: str, body: dict[str, Any]) -> Any:
        return self.request("PATCH", path, body, content_type="application/merge-patch+json")

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path, {"propagationPolicy": "Background"})

    def debugjob(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.get(f"/apis/trainguard.dev/v1alpha1/namespaces/{namespace}/debugjobs/{name}")

    def pods(self, namespace: str, debugjob: str) -> list[dict[str, Any]]:
        return self.items(
            f"/api/v1/namespaces/{namespace}/pods", labels=f"trainguard.dev/debugjob={debugjob}"
        )

    def events(self, namespace: str, name: str, kind: str = "DebugJob") -> list[dict[str, Any]]:
        """The Events about one object (the Job of a DebugJob has the same name: the kind tells them apart)."""
        return [
            e
            for e in self.items(f"/api/v1/namespaces/{namespace}/events")
            if (e.get("involvedObject") or {}).get("name") == name
            and (e.get("involvedObject") or {}).get("kind") == kind
        ]

    # --- the node ------------------------------------------------------------------------------------

    def crictl(self, *args: str) -> str:
        """Run crictl against the node's containerd."""
        cmd = [str(HOME / "cache" / "bin" / "crictl"), "--runtime-endpoint",
               f"unix://{self.env['TG_K8S_CONTAINERD_SOCKET']}", *args]  # fmt: skip
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout

    def restart_kubelet(self) -> None:
        """Stop the kubelet (SIGTERM, by its pid) and start it again through `dev/k8s.sh up`."""
        pid_file = self.run_dir / "kubelet.pid"
        pid = int(pid_file.read_text())
        os.kill(pid, 15)
        eventually(lambda: not _alive(pid), timeout_seconds=30, what=f"the kubelet (pid {pid}) to exit")
        _k8s_sh("up", timeout=UP_TIMEOUT_SECONDS)


RELEASE = "tg"
RELEASE_NAMESPACE = "trainguard-e2e"
OPERATOR_LABELS = "app.kubernetes.io/instance=tg,app.kubernetes.io/component=operator"


@dataclass
class Release:
    """TrainGuard installed by its chart with the project image: the operator runs as a pod."""

    cluster: Cluster
    helm: str
    namespace: str = RELEASE_NAMESPACE
    name: str = RELEASE

    @classmethod
    def install(cls, cluster: Cluster, *, helm: str) -> Release:
        """`helm upgrade --install` the chart of this checkout and wait until the operator runs."""
        release = cls(cluster, helm)
        release.upgrade({})
        return release

    def upgrade(self, values: Mapping[str, str]) -> None:
        """`helm upgrade --install` with the project image and `values` (`--set`; every other value the chart's
        default, so `upgrade({})` undoes an earlier upgrade's values), and wait until the operator runs."""
        repository, tag = IMAGE.rsplit(":", 1)
        sets = {"image.repository": repository, "image.tag": tag, "operator.verbose": "true", **values}
        args = [a for key, value in sets.items() for a in ("--set", f"{key}={value}")]
        proc = self._helm("upgrade", "--install", self.name, str(ROOT / "charts" / "trainguard"),
                          "--namespace", self.namespace, "--create-namespace", "--wait", "--timeout", "5m",
                          *args)  # fmt: skip
        if proc.returncode != 0:
            raise AssertionError(f"helm upgrade failed:\n{proc.stdout}\n{proc.stderr}")

    def uninstall(self) -> None:
        """Uninstall, then delete what the chart keeps on purpose (the CRD) and the namespace."""
        self._helm("uninstall", self.name, "--namespace", self.namespace, "--wait", "--timeout", "3m")
        # crds.keep leaves the CRD (and every DebugJob) on uninstall, as users want; the test cluster does not.
        self.cluster.kubectl(
            "delete", "crd", "debugjobs.trainguard.dev", "debugpolicies.trainguard.dev",
            "--ignore-not-found", "--wait", check=False,
        )  # fmt: skip
        self.cluster.kubectl(
            "delete", "namespace", self.namespace, "--ignore-not-found", "--wait", check=False
        )

    def _helm(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": self.cluster.kubeconfig,
               "HELM_CACHE_HOME": str(self.cluster.run_dir / "helm-cache")}  # fmt: skip
        return subprocess.run(
            [self.helm, *args], capture_output=True, text=True, timeout=400, env=env, check=False
        )

    def operator_pods(self) -> list[dict[str, Any]]:
        return self.cluster.items(f"/api/v1/namespaces/{self.namespace}/pods", labels=OPERATOR_LABELS)

    def operator_log(self) -> str:
        proc = self.cluster.kubectl(
            "logs", "-n", self.namespace, "-l", OPERATOR_LABELS, "--tail=-1", "--prefix", check=False
        )
        return proc.stdout + proc.stderr

    def metrics(self) -> str:
        """The operator's /metrics, read through the API server's pod proxy."""
        pod = next(p for p in self.operator_pods() if p["status"].get("phase") == "Running")
        name = pod["metadata"]["name"]
        return self.cluster.kubectl(
            "get", "--raw", f"/api/v1/namespaces/{self.namespace}/pods/{name}:9401/proxy/metrics"
        ).stdout


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie of a process this test did not start cannot be reaped here; its state says it is gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@contextlib.contextmanager
def cluster_queue(cluster: Cluster, name: str, flavor: str) -> Iterator[str]:
    """A Kueue ClusterQueue open to every namespace (4 CPUs, 8 GiB of one ResourceFlavor), deleted afterwards."""
    cluster.apply(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": flavor}}
    )
    cluster.apply({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{
            "coveredResources": ["cpu", "memory"],
            "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "4"},
                                                       {"name": "memory", "nominalQuota": "8Gi"}]}],
        }]},
    })  # fmt: skip
    try:
        yield name
    finally:
        cluster.kubectl("delete", "clusterqueue", name, "--ignore-not-found", "--timeout", "60s", check=False)
        cluster.kubectl(
            "delete", "resourceflavor", flavor, "--ignore-not-found", "--timeout", "60s", check=False
        )


def manifest_list(docs: Sequence[dict[str, Any]]) -> str:
    """Return objects as one kubectl-ready List."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(docs)})
