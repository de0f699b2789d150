"""Operator scale: 500 DebugJobs created at once; time until every one has its Job, and the operator's peak memory.

One command: `.venv/bin/python benchmarks/operator_scale.py [--debugjobs 500] [--no-peer]`.

The API server is KMock with the test suite's RealisticEmulator (in this process, on 127.0.0.1);
the operator runs as its own process (`trainguard operator -A`), so its peak RSS (VmHWM from
/proc) is its own. The clock starts when the first DebugJob is posted (all are posted
concurrently) and stops when the last Job exists. Each DebugJob renders 6 children (SA, Role,
RoleBinding, ConfigMap, Service, Job) and a status patch, so the API server takes ~4000 writes.
Peer, in the same run and against the same kind of server: the idiomatic minimal kopf operator
(an `on.create` handler that builds one Job and creates it with the typed `BatchV1Api`, as the
kopf docs and dask-kubernetes do), which renders one child instead of six.
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
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
               "spec": {"completionMode": "Indexed", "completions": spec["workers"], "parallelism": spec["workers"],
                        "template": spec["template"]}}
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


async def main_async(args: argparse.Namespace) -> int:
    rows = []
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
        rows.append(("trainguard operator (6 children + status)",
                     *await run_one(ours, count=args.debugjobs, label="trainguard", workdir=workdir)))  # fmt: skip
        if args.peer:
            peer_file = workdir / "peer_operator.py"
            peer_file.write_text(PEER_OPERATOR)
            peer = [sys.executable, "-m", "kopf", "run", "--standalone", "-A", str(peer_file)]
            rows.append(("peer: minimal kopf operator (1 Job)",
                         *await run_one(peer, count=args.debugjobs, label="peer", workdir=workdir)))  # fmt: skip
    print(
        f"\n{args.debugjobs} DebugJobs created at once against KMock (RealisticEmulator), operator as a subprocess"
    )
    print(f"{'operator':<44} {'all Jobs exist (s)':>20} {'peak RSS (MB)':>15} {'operator CPU (s)':>17}")
    for name, seconds, peak, cpu in rows:
        print(f"{name:<44} {seconds:>20.1f} {peak:>15.0f} {cpu:>17.1f}")
    ours_seconds, ours_peak = rows[0][1], rows[0][2]
    ok = ours_seconds <= 60 and ours_peak <= 300
    print(f"target: <= 60 s and <= 300 MB -> {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--debugjobs", type=int, default=500, help="DebugJobs to create (default 500)")
    parser.add_argument("--no-peer", dest="peer", action="store_false", help="skip the minimal kopf operator")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
