"""Attach-mode stop latency on a real cluster: a DebugPolicy's stop against the workload controllers' own floor.

One command: `.venv/bin/python benchmarks/attach_stop_latency.py [--runs 3] [--build-image]`.

Uses the test cluster of `dev/k8s.sh` (started unless it runs, stopped again if started here), the chart
upgraded to attach mode as in the end-to-end tests, the real workload controllers (JobSet, training-operator,
Trainer) and Kueue. Each run starts, side by side, the workloads of `tests/e2e/attaching.py`: an Indexed Job,
a PyTorchJob and a TrainJob queued in Kueue, and a JobSet, a PyTorchJob and a TrainJob without Kueue, every
pod injected by the webhook and training `attach_trainer.py` (real PyTorch), whose loss turns NaN at step 30.

- attach: from the first non-finite loss (the trainer's own wall-clock time, written beside its flag file)
  to the last pod of the workload gone, the stop coming from the policy (the evaluator's verdict, the
  operator's resync, the suspension or the Kueue Workload's deactivation);
- baseline, measured in the same run: the same workloads, healthy, stopped by hand at a known instant the
  way the operator stops them (`control.stop`: the top-level owner suspended, or its Kueue Workload
  deactivated), until the last pod is gone: what the controllers, the kubelet and the trainer's exit take.

Times are polled every `--interval` seconds (0.5 by default): each figure is late by up to that much.
Prints the median per workload and the ratio attach / baseline as a Markdown table.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import SeaweedServer, start_seaweedfs  # after the sys.path line above
from tests.deploy.tooling import find_tool
from tests.e2e import attaching
from tests.e2e.cluster import K8S_SH, Cluster, Release, cluster_queue
from tests.e2e.workloads import Launched, wait_running
from trainguard.operator import client
from trainguard.operator.workloads import control

CLUSTER_QUEUE = "bench-cluster-queue"


@dataclass(frozen=True)
class Sample:
    """One workload's stop: which, how (attach or baseline), seconds from its start to its last pod gone."""

    workload: str
    how: str
    seconds: float


def workload_label(run: Launched) -> str:
    """The row a workload goes in: its kind, and whether Kueue admits it (`job-nan-kueue` -> `job (Kueue)`)."""
    return run.kind.id + (" (Kueue)" if run.name.endswith("-kueue") else "")


def table(samples: Iterable[Sample]) -> str:
    """The Markdown table: per workload, the attach and baseline medians (with every run) and their ratio."""
    by: dict[tuple[str, str], list[float]] = {}
    for s in samples:
        by.setdefault((s.workload, s.how), []).append(s.seconds)
    rows = [
        "| workload | attach: NaN to last pod gone, s | baseline: stop by hand to last pod gone, s | ratio |",
        "|---|---|---|---|",
    ]
    for workload in dict.fromkeys(w for w, _ in by):
        attach, base = by.get((workload, "attach"), []), by.get((workload, "baseline"), [])
        cells = []
        for values in (attach, base):
            runs = "/".join(f"{v:.1f}" for v in values)
            cells.append(f"{statistics.median(values):.1f} ({runs})" if values else "-")
        ratio = f"{statistics.median(attach) / statistics.median(base):.2f}x" if attach and base else "-"
        rows.append(f"| {workload} | {cells[0]} | {cells[1]} | {ratio} |")
    return "\n".join(rows)


def kueue() -> None:
    """The workload controllers, then Kueue (its integrations need their CRDs)."""
    for what in ("controllers", "kueue"):
        subprocess.run([str(K8S_SH), what], check=True, timeout=600)


def one_run(
    cluster: Cluster, kube: client.Kube, s3: SeaweedServer, index: int, interval: float
) -> list[Sample]:
    namespace = f"bench-stop-{uuid.uuid4().hex[:6]}"
    flag_dir = Path(tempfile.mkdtemp(prefix="tg-bench-flags-", dir="/tmp"))
    flag_dir.chmod(0o755)
    cluster.kubectl("create", "namespace", namespace)
    samples: list[Sample] = []
    try:
        cluster.kubectl("create", "secret", "generic", attaching.S3_SECRET, "-n", namespace,
                        f"--from-literal=AWS_ACCESS_KEY_ID={s3.access_key}",
                        f"--from-literal=AWS_SECRET_ACCESS_KEY={s3.secret_key}")  # fmt: skip
        attaching.local_queue(cluster, namespace, CLUSTER_QUEUE)
        name = attaching.apply_policy(cluster, attaching.policy("bench", namespace, s3=s3))
        # attach: the policy stops the diverging workloads
        _, runs = attaching.launch_attached(cluster, namespace, flag_dir, policy_name=name, mode="nan",
                                            suffix=f"nan{index}")  # fmt: skip
        gone = attaching.wait_stopped(cluster, runs, flag_dir=flag_dir, interval=interval)
        for run in runs:
            start = attaching.first_nonfinite(flag_dir, run)
            assert start is not None
            samples.append(Sample(workload_label(run), "attach", gone[run.name] - start))
        # baseline: the same workloads, healthy, stopped by hand as the operator stops them
        queued, runs = attaching.launch_attached(cluster, namespace, flag_dir, policy_name=name, mode="healthy",
                                                 suffix=f"ok{index}")  # fmt: skip
        wait_running(cluster, runs)
        since: dict[str, float] = {}
        for run in runs:
            since[run.name] = time.time()
            control.stop(kube, run.kind.adapter, namespace, run.name, queued=run in queued)
        gone = attaching.wait_stopped(cluster, runs, since=since, interval=interval)
        samples += [Sample(workload_label(r), "baseline", gone[r.name] - since[r.name]) for r in runs]
    finally:
        cluster.kubectl("delete", "debugpolicies", "--all", "-n", namespace, "--timeout", "120s",
                        check=False, timeout=150)  # fmt: skip
        cluster.kubectl("delete", "namespace", namespace, "--timeout", "180s", check=False, timeout=210)
        shutil.rmtree(flag_dir, ignore_errors=True)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs, one after the other (default 3)")
    parser.add_argument(
        "--interval", type=float, default=0.5, help="polling interval in seconds (default 0.5)"
    )
    parser.add_argument("--build-image", action="store_true", help="build and load the project image first")
    args = parser.parse_args()
    cluster = Cluster.start(build_image=args.build_image)
    s3 = start_seaweedfs(host=cluster.bridge_ip)
    release = None
    samples: list[Sample] = []
    try:
        kueue()
        release = Release.install(cluster, helm=find_tool("helm"))
        release.upgrade(attaching.ATTACH_VALUES)
        kube = client.Kube(cluster.api)
        with cluster_queue(cluster, CLUSTER_QUEUE, "bench-flavor"):
            for i in range(args.runs):
                samples += one_run(cluster, kube, s3, i, args.interval)
                print(f"run {i + 1}/{args.runs} done", file=sys.stderr)
    finally:
        if release is not None:
            release.uninstall()
        s3.stop()
        cluster.stop()
    print(f"\nattach-mode stop latency, {args.runs} runs, six workloads side by side on one node; seconds, "
          f"median (each run)\n")  # fmt: skip
    print(table(samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
