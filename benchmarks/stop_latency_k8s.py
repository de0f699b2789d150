"""Stop latency on a real cluster: from the first NaN loss in a pod to the last pod of the stopped Job gone.

One command: `.venv/bin/python benchmarks/stop_latency_k8s.py [--runs 3] [--grace 30]`.

Uses the test cluster of `dev/k8s.sh` (started unless it runs, stopped again if started here), the
project image built and loaded into the node, and the chart installed as in the end-to-end tests.
Each run is a 2-worker DebugJob training with PyTorch DDP whose loss turns NaN about 35 steps in
(`tests/e2e/ddp_trainer.py diverging`). Times, all from the first "first non-finite loss" line of
either trainer (its container-runtime timestamp): the sidecar's finding (the rule's time in the
status), the Stopped condition, and the last pod gone (when the watch saw none). The trainer ends
on the hook's stop flag or on SIGTERM, within `--grace` seconds at most.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import start_seaweedfs  # after the sys.path line above
from tests.deploy.tooling import find_tool
from tests.e2e.cluster import Cluster, Release, eventually
from tests.e2e.runs import submit


def _ts(text: str) -> float:
    """Seconds since the epoch of an RFC 3339 time (the API server's and the runtime's)."""
    text = text.replace("Z", "+00:00")
    head, _, frac = text.partition(".")
    if frac:
        digits, offset = frac[: frac.index("+")], frac[frac.index("+") :]
        text = f"{head}.{digits[:6]}{offset}"
    return datetime.datetime.fromisoformat(text).timestamp()


def one_run(cluster: Cluster, namespace: str, s3: object, *, grace: int, index: int) -> dict[str, float]:
    run = submit(cluster, namespace, f"latency-{index}", s3=s3, mode="diverging", steps=5000,  # type: ignore[arg-type]
                 grace_period_seconds=grace)  # fmt: skip
    status = run.wait_phase("Stopped", "Succeeded", "Failed", timeout_seconds=600)
    if status["phase"] != "Stopped":
        raise RuntimeError(f"run {index} ended {status['phase']}, not Stopped:\n{run.logs()}")
    nan_at = None
    for pod in run.pods():
        log = cluster.kubectl("logs", "-n", namespace, pod["metadata"]["name"], "-c", "trainer", "--timestamps",
                              check=False).stdout  # fmt: skip
        for line in log.splitlines():
            if "first non-finite loss" in line:
                t = _ts(line.split(" ", 1)[0])
                nan_at = t if nan_at is None else min(nan_at, t)
    eventually(lambda: run.pods() == [] or None, timeout_seconds=grace + 120, what="every pod gone")
    gone = time.time()
    if nan_at is None:
        raise RuntimeError(f"run {index}: no trainer logged its first NaN (the pods went too fast?)")
    rule = next(r for r in status["rules"] if r["name"] == "exploding_tensor")
    stopped = next(c for c in status["conditions"] if c["type"] == "Stopped")
    return {
        "finding": _ts(rule["time"]) - nan_at,
        "stopped": _ts(stopped["lastTransitionTime"]) - nan_at,
        "gone": gone - nan_at,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=3, help="diverging DebugJobs, one after the other (default 3)"
    )
    parser.add_argument(
        "--grace", type=int, default=30, help="terminationGracePeriodSeconds of the pods (default 30)"
    )
    args = parser.parse_args()
    cluster = Cluster.start(build_image=True)
    s3 = start_seaweedfs(host=cluster.bridge_ip)
    release = None
    namespace = f"latency-{uuid.uuid4().hex[:6]}"
    rows = []
    try:
        release = Release.install(cluster, helm=find_tool("helm"))
        cluster.kubectl("create", "namespace", namespace)
        cluster.kubectl("create", "secret", "generic", "s3-credentials", "-n", namespace,
                        f"--from-literal=AWS_ACCESS_KEY_ID={s3.access_key}",
                        f"--from-literal=AWS_SECRET_ACCESS_KEY={s3.secret_key}")  # fmt: skip
        for i in range(args.runs):
            rows.append(one_run(cluster, namespace, s3, grace=args.grace, index=i))
    finally:
        cluster.kubectl(
            "delete", "debugjobs", "--all", "-n", namespace, "--timeout", "120s", check=False, timeout=150
        )
        cluster.kubectl("delete", "namespace", namespace, "--timeout", "180s", check=False, timeout=210)
        if release is not None:
            release.uninstall()
        s3.stop()
        cluster.stop()
    print(f"\nstop latency, 2-worker DDP DebugJob on Kubernetes {cluster.env.get('K8S_VERSION')} (one node), "
          f"grace period {args.grace} s, {args.runs} runs; seconds from the first NaN loss")  # fmt: skip
    print(f"{'':<22} {'min':>6} {'median':>7} {'max':>6}")
    for key, label in (
        ("finding", "sidecar's finding"),
        ("stopped", "phase Stopped"),
        ("gone", "last pod gone"),
    ):
        values = [r[key] for r in rows]
        print(f"{label:<22} {min(values):>6.1f} {statistics.median(values):>7.1f} {max(values):>6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
