"""Operator scale: 500 DebugJobs created at once; time until every one has its Job, and the operator's peak memory.

One command: `.venv/bin/python benchmarks/operator_scale.py [--debugjobs 500] [--no-peer] [--server both]`.

The API server is KMock with the test suite's RealisticEmulator (in this process, on 127.0.0.1);
the operator runs as its own process (`trainguard operator -A`), so its peak RSS (VmHWM from
/proc) is its own. The clock starts when the first DebugJob is posted (all are posted
concurrently) and stops when the last Job exists. Each DebugJob renders 6 children (SA, Role,
RoleBinding, ConfigMap, Service, Job) and a status patch, so the API server takes ~4000 writes.
Peer, in the same run and against the same kind of server: the idiomatic minimal kopf operator
(an `on.create` handler that builds one Job and creates it with the typed `BatchV1Api`, as the
kopf docs and dask-kubernetes do), which renders one child instead of six.
With `--server real` (or `both`), the same against the real Kubernetes API server of `dev/k8s.sh`
(started unless it runs, stopped again if started here): the DebugJobs are suspended, so the Job
controller makes no pods; the operator runs on the host with the admin kubeconfig. There the API
server's own `apiserver_request_total` also gives the requests per DebugJob (every client's, the
Job controller's included).
Target: ours <= 60 s and <= 300 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import kmock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.kube import (  # after the sys.path line above
    DEBUGJOB_RESOURCE,
    RealisticEmulator,
    debugjob_manifest,
    free_port,
    register_resources,
    wait_http,
    write_kubeconfig,
)

PEER_OPERATOR = textwrap.dedent(
    '''
    """The idiomatic minimal kopf operator: one Job per DebugJob through the typed client."""
    import os
    import kopf
    import kubernetes

    @kopf.on.login()
    def login(**kwargs):
        return kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.startup()
    def startup(settings, memo, **_):
        settings.posting.level = 30
        config = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=os.environ["KUBECONFIG"], client_configuration=config)
        config.connection_pool_maxsize = 32
        memo["batch"] = kubernetes.client.BatchV1Api(kubernetes.client.ApiClient(config))

    @kopf.on.create("trainguard.dev", "v1alpha1", "debugjobs")
    def create(spec, name, namespace, memo, patch, **_):
        template = {**spec["template"], "spec": {"restartPolicy": "Never", **spec["template"]["spec"]}}
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
               "spec": {"completionMode": "Indexed", "completions": spec["workers"], "parallelism": spec["workers"],
                        "suspend": spec.get("suspend", False), "template": template}}
        kopf.adopt(job)
        memo["batch"].create_namespaced_job(namespace, job)
        patch.status["jobName"] = name
    '''
)


def _cpu_seconds(pid: int) -> float:
    """Return user + system CPU seconds the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_rss_mb(pid: int) -> float:
    """Return the process's peak resident set size (VmHWM) in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM in /proc/{pid}/status")


async def run_one(command: list[str], *, count: int, label: str, workdir: Path) -> tuple[float, float, float]:
    """Start an API server and `command` (an operator); create `count` DebugJobs; return (seconds, peak MB, CPU s)."""
    async with RealisticEmulator() as emulator, kmock.Server(emulator, host="127.0.0.1"):
        register_resources(emulator)
        emulator.keep_request_log = False  # KMock matches each request against its whole log: keep it short
        kubeconfig = write_kubeconfig(workdir / f"kubeconfig-{label}", server_url=str(emulator.url))
        liveness = free_port()
        log = (workdir / f"{label}.log").open("w")
        proc = await asyncio.create_subprocess_exec(
            *command,
            f"--liveness=http://127.0.0.1:{liveness}/healthz",
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            await wait_http(
                f"http://127.0.0.1:{liveness}/healthz",
                alive=lambda: proc.returncode is None,
                timeout_seconds=60,
            )

            jobs = kmock.resource("batch/v1/jobs")
            uri = f"file://{workdir}/runs-{label}"
            manifests = [debugjob_manifest(f"dj-{i:04d}", workers=2, capture_uri=uri) for i in range(count)]
            path = "/apis/trainguard.dev/v1alpha1/namespaces/default/debugjobs"

            async def post(body: dict[str, object]) -> None:
                async with emulator.post(path, json=body) as resp:
                    if resp.status >= 400:
                        raise RuntimeError(f"creating a DebugJob failed: HTTP {resp.status}")

            cpu_before = _cpu_seconds(proc.pid)
            started = time.monotonic()
            await asyncio.gather(*(post(m) for m in manifests))
            while True:
                have = sum(
                    1
                    for (res, _ns, _n), obj in list(emulator.objects.items())
                    if res == jobs and not obj.deleted
                )
                if have >= count:
                    break
                if time.monotonic() - started > 600 or proc.returncode is not None:
                    raise RuntimeError(
                        f"{label}: only {have} of {count} Jobs after {time.monotonic() - started:.0f} s"
                    )
                await asyncio.sleep(0.1)
            seconds = time.monotonic() - started
            peak = _peak_rss_mb(proc.pid)
            cpu = _cpu_seconds(proc.pid) - cpu_before
            created = len(
                [
                    o
                    for (res, _ns, _n), o in emulator.objects.items()
                    if res == kmock.resource(DEBUGJOB_RESOURCE)
                ]
            )
            assert created == count
            return seconds, peak, cpu
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 60)
            except TimeoutError:
                proc.kill()
                await proc.wait()
            log.close()


REAL_NAMESPACE = "operator-scale"


def _api_requests(cluster: Any) -> int:
    """Every request the API server has answered so far (its apiserver_request_total)."""
    total = 0
    for line in cluster.kubectl("get", "--raw", "/metrics").stdout.splitlines():
        if line.startswith("apiserver_request_total{"):
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def run_one_real(
    cluster: Any, command: list[str], *, count: int, label: str, workdir: Path
) -> tuple[float, float, float, float]:
    """As `run_one` on the real API server; also return the API requests per DebugJob."""
    from concurrent.futures import ThreadPoolExecutor

    cluster.kubectl("create", "namespace", REAL_NAMESPACE)
    liveness = free_port()
    with (workdir / f"{label}-real.log").open("w") as log:
        proc = subprocess.Popen(
            [*command, f"--liveness=http://127.0.0.1:{liveness}/healthz"],
            env={**os.environ, "KUBECONFIG": cluster.kubeconfig, "PYTHONPATH": str(ROOT)},
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        asyncio.run(wait_http(f"http://127.0.0.1:{liveness}/healthz", alive=lambda: proc.poll() is None,
                              timeout_seconds=60))  # fmt: skip
        manifests = []
        for i in range(count):
            body = debugjob_manifest(f"dj-{i:04d}", workers=2, capture_uri=f"file://{workdir}/runs-{label}")
            body["metadata"]["namespace"] = REAL_NAMESPACE
            body["spec"]["suspend"] = True  # the Job controller makes no pods
            manifests.append(body)
        path = f"/apis/trainguard.dev/v1alpha1/namespaces/{REAL_NAMESPACE}/debugjobs"
        jobs = f"/apis/batch/v1/namespaces/{REAL_NAMESPACE}/jobs"
        requests_before = _api_requests(cluster)
        cpu_before = _cpu_seconds(proc.pid)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(lambda body: cluster.request("POST", path, body), manifests))
        while True:
            have = len((cluster.request("GET", jobs + "?limit=100000") or {}).get("items") or [])
            if have >= count:
                break
            if time.monotonic() - started > 600 or proc.poll() is not None:
                tail = (workdir / f"{label}-real.log").read_text()[-3000:]
                raise RuntimeError(
                    f"{label}: only {have} of {count} Jobs after {time.monotonic() - started:.0f} s; "
                    f"the end of its log:\n{tail}"
                )
            time.sleep(0.5)
        seconds = time.monotonic() - started
        peak = _peak_rss_mb(proc.pid)
        cpu = _cpu_seconds(proc.pid) - cpu_before
        per_debugjob = (_api_requests(cluster) - requests_before) / count
        # Deleting runs the operator's cleanup of each DebugJob: delete while it still runs.
        cluster.kubectl("delete", "namespace", REAL_NAMESPACE, "--timeout", "600s", check=False, timeout=660)
        return seconds, peak, cpu, per_debugjob
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def real_rows(
    args: argparse.Namespace, commands: list[tuple[str, list[str]]], workdir: Path
) -> list[tuple[Any, ...]]:
    """Run each operator against the real API server of dev/k8s.sh, with the CRD installed."""
    from tests.e2e.cluster import Cluster

    cluster = Cluster.start(build_image=False)
    try:
        cluster.install_crd()
        rows = []
        for name, command in commands:
            label = "trainguard" if name.startswith("trainguard") else "peer"
            row = (f"{name}, real API server",
                   *run_one_real(cluster, command, count=args.debugjobs, label=label, workdir=workdir))  # fmt: skip
            print(
                f"  {row[0]}: {row[1]:.1f} s, peak {row[2]:.0f} MB, {row[4]:.1f} requests per DebugJob",
                flush=True,
            )
            rows.append(row)
        return rows
    finally:
        cluster.stop()


async def main_async(args: argparse.Namespace) -> int:
    rows: list[tuple[Any, ...]] = []
    with tempfile.TemporaryDirectory(prefix="trainguard-operator-scale-") as tmp:
        workdir = Path(tmp)
        ours = [
            sys.executable,
            "-m",
            "trainguard",
            "operator",
            "-A",
            "--metrics-port=0",
            "--metrics-address=127.0.0.1",
        ]
        peer_file = workdir / "peer_operator.py"
        peer_file.write_text(PEER_OPERATOR)
        peer = [sys.executable, "-m", "kopf", "run", "--standalone", "-A", str(peer_file)]
        commands = [("trainguard operator (6 children + status)", ours)]
        if args.peer:
            commands.append(("peer: minimal kopf operator (1 Job)", peer))
        if args.server in ("kmock", "both"):
            for name, command in commands:
                label = "trainguard" if command is ours else "peer"
                rows.append((f"{name}, KMock",
                             *await run_one(command, count=args.debugjobs, label=label, workdir=workdir), None))  # fmt: skip
        if args.server in ("real", "both"):
            rows += await asyncio.to_thread(real_rows, args, commands, workdir)
    print(f"\n{args.debugjobs} DebugJobs created at once, operator as a subprocess")
    print(f"{'operator, API server':<64} {'all Jobs exist (s)':>19} {'peak RSS (MB)':>14} {'op CPU (s)':>11} "
          f"{'requests/DJ':>12}")  # fmt: skip
    for name, seconds, peak, cpu, per in rows:
        per_text = "-" if per is None else f"{per:.1f}"
        print(f"{name:<64} {seconds:>19.1f} {peak:>14.0f} {cpu:>11.1f} {per_text:>12}")
    ours_rows = [r for r in rows if r[0].startswith("trainguard")]
    ok = all(r[1] <= 60 and r[2] <= 300 for r in ours_rows)
    print(f"target: <= 60 s and <= 300 MB -> {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--debugjobs", type=int, default=500, help="DebugJobs to create (default 500)")
    parser.add_argument("--no-peer", dest="peer", action="store_false", help="skip the minimal kopf operator")
    parser.add_argument("--server", choices=("kmock", "real", "both"), default="kmock",
                        help="KMock in this process (default), the real API server of dev/k8s.sh, or both")  # fmt: skip
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
