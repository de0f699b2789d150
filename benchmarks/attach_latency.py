"""Pod admission latency with attach mode's webhook on, against the no-webhook baseline, on the real test cluster.

One command: `.venv/bin/python benchmarks/attach_latency.py [--requests 200]`.

Uses the test cluster of `dev/k8s.sh` (started unless it runs, stopped again if started here) and the chart
installed as in the end-to-end tests, upgraded with `attach.enabled=true` (set back to the defaults at the end;
`--build-image` builds and loads the project image first). Each request creates a pod with server-side dry
run (`dryRun=All`: admission runs in full, mutating webhooks included, and nothing is stored), timed from
the client, in three kinds taken in turn so that load on the machine falls on all of them alike:

- `no webhook`: a pod without the `trainguard.dev/watch` label (the webhook's objectSelector leaves it out);
- `webhook, unchanged`: a labelled pod of no workload (the webhook answers with no patch);
- `webhook, injected`: a labelled pod of a suspended Indexed Job that a DebugPolicy selects (the webhook walks
  to the Job in memory and answers with the patch that adds the evaluator; the test checks the sidecar is in
  the answer).

Prints p50, p99 and max per kind in milliseconds as a Markdown table. The stop latency per workload kind comes
from the end-to-end test (`tests/e2e/test_attach_on_a_real_cluster.py`, `-s` prints it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.deploy.tooling import find_tool  # after the sys.path line above
from tests.e2e.cluster import IMAGE, Cluster, Release, eventually
from trainguard.api import debugpolicy
from trainguard.operator import build

KINDS = ("no webhook", "webhook, unchanged", "webhook, injected")


def pod(namespace: str, kind: str, job: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"generateName": "bench-", "namespace": namespace, "labels": {}}
    if kind != "no webhook":
        meta["labels"][debugpolicy.WATCH_LABEL] = "true"
    if kind == "webhook, injected":
        meta["labels"]["batch.kubernetes.io/job-completion-index"] = "0"
        meta["annotations"] = {"batch.kubernetes.io/job-completion-index": "0"}
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"],
                                    "uid": job["metadata"]["uid"], "controller": True}]  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"restartPolicy": "Never", "containers": [{"name": "trainer", "image": IMAGE}]}}  # fmt: skip


def admit(cluster: Cluster, namespace: str, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """Create the pod with server-side dry run; return the seconds it took and the admitted pod."""
    started = time.perf_counter()
    answer = cluster.request("POST", f"/api/v1/namespaces/{namespace}/pods?dryRun=All", body)
    return time.perf_counter() - started, answer


def injected(answer: dict[str, Any]) -> bool:
    return any(c.get("name") == build.SIDECAR_NAME for c in answer["spec"].get("initContainers") or [])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--requests", type=int, default=200, help="dry-run pod creations per kind (default 200)"
    )
    parser.add_argument("--build-image", action="store_true", help="build and load the project image first")
    args = parser.parse_args()
    cluster = Cluster.start(build_image=args.build_image)
    release = Release.install(cluster, helm=find_tool("helm"))
    namespace = f"bench-{uuid.uuid4().hex[:6]}"
    try:
        release.upgrade({"attach.enabled": "true"})
        cluster.kubectl("create", "namespace", namespace)
        cluster.apply({"apiVersion": debugpolicy.API_VERSION, "kind": debugpolicy.KIND,
                       "metadata": {"name": "bench", "namespace": namespace},
                       "spec": {"selector": {"matchLabels": {"bench": "attach"}},
                                "capture": {"uri": "s3://bench-runs/attach"}}})  # fmt: skip
        cluster.apply({"apiVersion": "batch/v1", "kind": "Job",
                       "metadata": {"name": "bench", "namespace": namespace, "labels": {"bench": "attach"}},
                       "spec": {"suspend": True, "completionMode": "Indexed", "completions": 1,
                                "template": {"spec": {"restartPolicy": "Never",
                                                      "containers": [{"name": "trainer", "image": IMAGE}]}}}})  # fmt: skip
        job = cluster.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/bench")
        assert job is not None
        # Ready once the webhook injects (the policy and the Job are in the operator's memory).
        eventually(lambda: injected(admit(cluster, namespace, pod(namespace, KINDS[2], job))[1]),
                   timeout_seconds=180, interval=1, what="the webhook injecting")  # fmt: skip
        times: dict[str, list[float]] = {k: [] for k in KINDS}
        for _ in range(args.requests):
            for kind in KINDS:
                seconds, answer = admit(cluster, namespace, pod(namespace, kind, job))
                if injected(answer) != (kind == "webhook, injected"):
                    raise RuntimeError(
                        f"{kind}: the evaluator was {'' if injected(answer) else 'not '}injected"
                    )
                times[kind].append(seconds)
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        release.upgrade({})
        cluster.stop()
    print(f"\npod admission (server-side dry run), {args.requests} requests per kind, milliseconds\n")
    print("| kind | p50 | p99 | max | mean |")
    print("|---|---|---|---|---|")
    for kind, values in times.items():
        ms = [v * 1000 for v in values]
        print(f"| {kind} | {percentile(ms, 0.5):.1f} | {percentile(ms, 0.99):.1f} | {max(ms):.1f} | "
              f"{statistics.fmean(ms):.1f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
