"""Status at scale: a 2,048-rank DebugJob whose sidecars report, on the real API server of `dev/k8s.sh`.

One command: `.venv/bin/python benchmarks/status_scale.py [--workers 256] [--nproc 8] [--seconds 60]`.

The API server, the operator (`trainguard operator -A`, a host process with the admin kubeconfig)
and the sidecars' reporting code (`StatusReporter`, one per pod, each with its own API client) are
real; the pods are simulated: each reporter reads the rule states of its pod's ranks from a
stand-in for the evaluator whose steps advance by 10 a second (the default rule set, 16 rules).
The DebugJob is suspended, so no pod runs. Two phases: steady training (`--seconds`), then every
rank finds a NaN at the same step, as in a data-parallel job (20 s). Measured: the DebugJob's size
(its JSON from the API server), status writes per second (the API server's
`apiserver_request_total` for debugjobs/status PATCH), refused writes, the operator's CPU.
Peer, in the same run: the reports as they were before condensing, every pod reporting its ranks
in full (`pod_index=None`), which is still what jobs of up to 32 ranks get.
Targets: status <= 256 KiB at any rank count, <= 5 writes/s.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.cluster import Cluster, eventually  # after the sys.path line above
from trainguard.api import default_rules
from trainguard.api.enums import RuleState, Severity
from trainguard.api.sidecar_config import DebugJobRef
from trainguard.sidecar.evaluator import RuleStatus
from trainguard.sidecar.report_status import StatusReporter

STEPS_PER_SECOND = 10
NAN_PHASE_SECONDS = 20
NAMESPACE = "status-scale"


class SimulatedPod:
    """Stands in for one pod's evaluator: the rule states and progress of its ranks, as `StatusReporter` reads them."""

    def __init__(self, ranks: list[int], started: float) -> None:
        self.ranks = ranks
        self.started = started
        self.started_wall = time.time()
        self.nan_at: int | None = None
        self.nan_wall = 0.0
        self.specs = default_rules.default_specs()
        self.stop_file = None  # the stop flag an evaluator watches; none here (the report says so)

    @property
    def last_step(self) -> int:
        return int((time.monotonic() - self.started) * STEPS_PER_SECOND)

    @property
    def ended(self) -> bool:
        return False

    def rank_progress(self, rank: int) -> tuple[int | None, bool]:
        return self.last_step, False

    def rank_status(self, rank: int) -> dict[str, RuleStatus]:
        out = {}
        for spec in self.specs:
            if spec.key == "exploding_tensor" and self.nan_at is not None:
                out[spec.key] = RuleStatus(RuleState.ISSUES_FOUND, spec.action, Severity.CRITICAL, step=self.nan_at,
                                           rank=rank, message=f"loss is NaN at step {self.nan_at} on rank {rank}",
                                           time=self.nan_wall)  # fmt: skip
            else:
                # As the evaluator keeps it: the transition that set the state (the first evaluation), not the last.
                out[spec.key] = RuleStatus(RuleState.NO_ISSUES_FOUND, spec.action, Severity.WARNING,
                                           step=0, rank=rank, time=self.started_wall)  # fmt: skip
        return out

    @property
    def rule_status(self) -> dict[str, RuleStatus]:
        return self.rank_status(self.ranks[0])


REFUSED_CODES: set[str] = set()
"""HTTP codes of the refused status writes seen (printed with the table)."""


def _patches(cluster: Cluster) -> tuple[int, int]:
    """(successful, refused) debugjobs/status PATCHes the API server has answered so far."""
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    ok = refused = 0
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{") and 'resource="debugjobs"' in line and \
                'subresource="status"' in line and 'verb="PATCH"' in line:  # fmt: skip
            code = re.search(r'code="(\d+)"', line)
            count = int(float(line.rsplit(" ", 1)[1]))
            if code and code.group(1).startswith("2"):
                ok += count
            else:
                refused += count
                if code and count:
                    REFUSED_CODES.add(code.group(1))
    return ok, refused


def _size(cluster: Cluster, name: str) -> int:
    obj = cluster.debugjob(NAMESPACE, name)
    return len(json.dumps(obj)) if obj else 0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_one(
    cluster: Cluster, operator_pid: int, *, condensed: bool, args: argparse.Namespace
) -> dict[str, Any]:
    name = "condensed" if condensed else "per-rank"
    manifest = {
        "apiVersion": "trainguard.dev/v1alpha1", "kind": "DebugJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"workers": args.workers, "nprocPerNode": args.nproc, "suspend": True,
                 "capture": {"uri": "file:///tmp/status-scale"},
                 "template": {"spec": {"containers": [{"name": "trainer", "image": "unused"}]}}},
    }  # fmt: skip
    cluster.apply(manifest)
    uid = eventually(lambda: (cluster.debugjob(NAMESPACE, name) or {}).get("status", {}).get("jobName")
                     and cluster.debugjob(NAMESPACE, name)["metadata"]["uid"],  # type: ignore[index]
                     timeout_seconds=60, what=f"DebugJob {name} reconciled")  # fmt: skip
    ref = DebugJobRef(namespace=NAMESPACE, name=name, uid=uid)
    started = time.monotonic()
    pods = [
        SimulatedPod(list(range(i * args.nproc, (i + 1) * args.nproc)), started) for i in range(args.workers)
    ]
    reporters = [StatusReporter(ref, ranks=p.ranks, evaluator=p, pod_index=i if condensed else None)  # type: ignore[arg-type]
                 for i, p in enumerate(pods)]  # fmt: skip
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=16)
    result: dict[str, Any] = {"mode": name}

    def tick_for(seconds: float) -> int:
        """Let every reporter report as its loop would (once a second); return the largest size seen."""
        largest = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t0 = time.monotonic()
            list(pool.map(lambda r: r.report(), reporters))
            largest = max(largest, _size(cluster, name))
            time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
        return largest

    try:
        tick_for(5)  # first reports and the operator's first aggregation
        if not ((cluster.debugjob(NAMESPACE, name) or {}).get("status") or {}).get("reports"):
            errors = {r.last_error for r in reporters if r.last_error}
            raise RuntimeError(f"{name}: no report reached the DebugJob: {errors or 'no error either'}")
        ok0, bad0 = _patches(cluster)
        cpu0, t0 = _cpu_seconds(operator_pid), time.monotonic()
        largest = tick_for(args.seconds if condensed else args.peer_seconds)
        ok1, bad1 = _patches(cluster)
        elapsed = time.monotonic() - t0
        result.update(steady_writes=(ok1 - ok0) / elapsed, steady_refused=bad1 - bad0, steady_size=largest,
                      steady_cpu=(_cpu_seconds(operator_pid) - cpu0) / elapsed)  # fmt: skip
        nan_step = pods[0].last_step + 5
        for pod in pods:
            pod.nan_at, pod.nan_wall = nan_step, time.time()
        largest = tick_for(NAN_PHASE_SECONDS)
        ok2, bad2 = _patches(cluster)
        status = (cluster.debugjob(NAMESPACE, name) or {}).get("status") or {}
        result.update(nan_writes=ok2 - ok1, nan_refused=bad2 - bad1, nan_size=largest,
                      final_size=_size(cluster, name), phase=status.get("phase"),
                      reports=len(status.get("reports") or {}))  # fmt: skip
    finally:
        pool.shutdown()
        for r in reporters:
            if r._api is not None:
                r._api.api_client.close()
        cluster.kubectl(
            "delete", "debugjob", name, "-n", NAMESPACE, "--wait", "--timeout", "120s", check=False
        )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=256, help="pods (default 256)")
    parser.add_argument("--nproc", type=int, default=8, help="ranks per pod (default 8: 2,048 ranks)")
    parser.add_argument("--seconds", type=float, default=60, help="steady phase (default 60 s)")
    parser.add_argument("--no-peer", dest="peer", action="store_false", help="skip the per-rank reports")
    parser.add_argument(
        "--peer-seconds", type=float, default=20, help="steady phase of the per-rank reports (20 s)"
    )
    args = parser.parse_args()
    cluster = Cluster.start(build_image=False)
    os.environ["KUBECONFIG"] = (
        cluster.kubeconfig
    )  # the reporters configure their clients from it, as in a pod
    with (
        tempfile.TemporaryDirectory(prefix="trainguard-status-scale-") as tmp,
        Path(tmp, "operator.log").open("w") as log,
    ):
        operator = None
        try:
            cluster.install_crd()
            cluster.kubectl("create", "namespace", NAMESPACE, check=False)
            operator = subprocess.Popen(
                [sys.executable, "-m", "trainguard", "operator", "-A", "--metrics-port=0",
                 "--metrics-address=127.0.0.1", "--liveness=none"],
                env={**os.environ, "KUBECONFIG": cluster.kubeconfig, "PYTHONPATH": str(ROOT)},
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            rows = [run_one(cluster, operator.pid, condensed=True, args=args)]
            if args.peer:
                rows.append(run_one(cluster, operator.pid, condensed=False, args=args))
        finally:
            if operator is not None:
                operator.send_signal(signal.SIGTERM)
                operator.wait(60)
            cluster.kubectl("delete", "namespace", NAMESPACE, "--wait", "--timeout", "180s", check=False)
            cluster.stop()
    ranks = args.workers * args.nproc
    print(f"\n{ranks} ranks ({args.workers} pods x {args.nproc}), simulated sidecars reporting to the real API server "
          f"(Kubernetes {cluster.env.get('K8S_VERSION')}); steady {args.seconds:.0f} s, then a NaN on every rank")  # fmt: skip
    print(f"{'reports':<12} {'status KiB':>11} {'writes/s':>9} {'refused':>8} {'op CPU %':>9} "
          f"{'NaN: writes':>12} {'refused':>8} {'KiB':>7} {'final KiB':>10} {'phase':>9}")  # fmt: skip
    for r in rows:
        print(f"{r['mode']:<12} {r['steady_size'] / 1024:>11.1f} {r['steady_writes']:>9.2f} {r['steady_refused']:>8} "
              f"{100 * r['steady_cpu']:>9.1f} {r['nan_writes']:>12} {r['nan_refused']:>8} {r['nan_size'] / 1024:>7.1f} "
              f"{r['final_size'] / 1024:>10.1f} {r['phase']!s:>9}")  # fmt: skip
    if REFUSED_CODES:
        print(f"refused writes answered HTTP {', '.join(sorted(REFUSED_CODES))}")
    if len(rows) == 2:
        print(
            f"peer / condensed: status size x{rows[1]['steady_size'] / max(rows[0]['steady_size'], 1):.1f}, "
            f"writes/s x{rows[1]['steady_writes'] / max(rows[0]['steady_writes'], 1e-9):.1f}"
        )
    ours = rows[0]
    ok = max(ours["steady_size"], ours["nan_size"]) <= 256 * 1024 and ours["steady_writes"] <= 5
    print(f"target: status <= 256 KiB and <= 5 writes/s -> {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
