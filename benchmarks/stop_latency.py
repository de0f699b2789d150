"""Stop latency: from a sidecar's stop report to the Job suspended, with and without trickling webhook receivers.

One command: `.venv/bin/python benchmarks/stop_latency.py [--trials 10] [--receivers 20]`.

The API server is KMock with the test suite's RealisticEmulator (in this process, on 127.0.0.1);
the operator runs as its own process (`trainguard operator -A`, default 16 handler threads). Each
trial patches one running DebugJob's `status.reports` with a stop rule in IssuesFound, as a sidecar
does, and times until its Job has `spec.suspend: true`. In the loaded scenario, `--receivers`
other DebugJobs each fire a notify rule before every trial, and each one's webhook is a real
receiver on 127.0.0.1 that answers one byte every 2 s and never finishes. A trial starts once the
operator has acted on those notifies, so their deliveries are queued or in flight during every
measured stop ("receivers busy": how many held a connection when the stop was reported). The peer
is the same operator with no receiver at all.
Target: median <= 1 s in both scenarios (a notification must never delay a stop).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import kmock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.kube import (  # after the sys.path line above
    DEBUGJOB_RESOURCE,
    KubeEnv,
    RealisticEmulator,
    debugjob_manifest,
    operator_process,
    register_resources,
    write_kubeconfig,
)
from tests.operator.receivers import RawReceiver

JOBS = "batch/v1/jobs"
TARGET_MEDIAN_SECONDS = 1.0
TRICKLE_INTERVAL_SECONDS = 2.0


async def _until(predicate: Any, what: str, timeout_seconds: float = 120.0, interval: float = 0.005) -> None:
    deadline = time.monotonic() + timeout_seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout_seconds} s waiting for {what}")
        await asyncio.sleep(interval)


async def _running(kube: KubeEnv, manifest: dict[str, Any]) -> None:
    name = manifest["metadata"]["name"]
    await kube.create(DEBUGJOB_RESOURCE, manifest)
    await _until(lambda: kube.get(JOBS, "default", name), f"the Job of {name}")
    await kube.patch(JOBS, "default", name, {"status": {"active": 1, "ready": 1}}, subresource="status")


def _phase(kube: KubeEnv, name: str) -> Any:
    return ((kube.get(DEBUGJOB_RESOURCE, "default", name) or {}).get("status") or {}).get("phase")


def _fired(kube: KubeEnv, name: str, rule: str) -> bool:
    """Whether the operator has recorded `rule` of DebugJob `name` as IssuesFound (it acted on it)."""
    rules = ((kube.get(DEBUGJOB_RESOURCE, "default", name) or {}).get("status") or {}).get("rules") or []
    return any(r.get("name") == rule and r.get("state") == "IssuesFound" for r in rules)


def _suspended(kube: KubeEnv, name: str) -> bool:
    return ((kube.get(JOBS, "default", name) or {}).get("spec") or {}).get("suspend") is True


async def _report(kube: KubeEnv, name: str, rule: str) -> None:
    report = {
        "lastStep": 10,
        "rules": [{"name": rule, "state": "IssuesFound", "step": 10, "message": "bench"}],
    }
    await kube.patch(
        DEBUGJOB_RESOURCE,
        "default",
        name,
        {"status": {"reports": {"rank-00000": report}}},
        subresource="status",
    )


async def run_scenario(*, receivers: int, trials: int, workdir: Path) -> tuple[list[float], float]:
    """Return the stop latencies of `trials` DebugJobs and how many receivers held a connection, on average,
    when each stop was reported."""
    trickling = [RawReceiver("trickle", interval_seconds=TRICKLE_INTERVAL_SECONDS) for _ in range(receivers)]
    try:
        async with RealisticEmulator() as emulator, kmock.Server(emulator, host="127.0.0.1"):
            register_resources(emulator)
            emulator.keep_request_log = False
            url = str(emulator.url).rstrip("/")
            kubeconfig = write_kubeconfig(workdir / f"kubeconfig-{receivers}", server_url=url)
            kube = KubeEnv(emulator=emulator, url=url, kubeconfig=kubeconfig, kubectl_cache_dir=workdir)
            async with operator_process(kubeconfig, workdir / f"operator-{receivers}.log"):
                uri = f"file://{workdir}/runs-{receivers}"
                notify = [
                    {"type": "loss_spike", "name": f"spike-{t}", "action": "notify"} for t in range(trials)
                ]
                for i, receiver in enumerate(trickling):
                    data = {"url": base64.b64encode(receiver.url.encode()).decode()}
                    await kube.create("v1/secrets", {"apiVersion": "v1", "kind": "Secret",
                                                     "metadata": {"name": f"hook-{i}", "namespace": "default"},
                                                     "data": data})  # fmt: skip
                    hooks = {
                        "notify": {
                            "webhooks": [
                                {"name": "team", "urlSecretRef": {"name": f"hook-{i}", "key": "url"}}
                            ]
                        }
                    }
                    await _running(
                        kube, debugjob_manifest(f"noisy-{i}", rules=notify, capture_uri=uri, actions=hooks)
                    )
                for t in range(trials):
                    await _running(kube, debugjob_manifest(f"target-{t}", capture_uri=uri))
                await _until(
                    lambda: all(_phase(kube, f"target-{t}") == "Running" for t in range(trials)),
                    "targets Running",
                )

                latencies, busy = [], []
                for t in range(trials):
                    await asyncio.gather(
                        *(_report(kube, f"noisy-{i}", f"spike-{t}") for i in range(receivers))
                    )
                    # The operator has acted on every notify (the deliveries are queued or in flight) ...
                    await _until(lambda: all(_fired(kube, f"noisy-{i}", f"spike-{t}") for i in range(receivers)),  # noqa: B023
                                 "the notify transitions handled")  # fmt: skip
                    if t == 0:  # ... and every receiver holds a connection before the first measured stop.
                        await _until(lambda: all(r.open_connections for r in trickling), "receivers busy")
                    busy.append(sum(1 for r in trickling if r.open_connections))
                    name = f"target-{t}"
                    started = time.monotonic()
                    await _report(kube, name, "exploding_tensor")
                    await _until(lambda: _suspended(kube, name), f"{name} suspended")  # noqa: B023 - awaited here
                    latencies.append(time.monotonic() - started)
                return latencies, statistics.mean(busy) if busy else 0.0
    finally:
        for receiver in trickling:
            receiver.close()


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


async def main_async(args: argparse.Namespace) -> int:
    rows = []
    with tempfile.TemporaryDirectory(prefix="trainguard-stop-latency-") as tmp:
        for receivers in (0, args.receivers):
            latencies, connections = await run_scenario(
                receivers=receivers, trials=args.trials, workdir=Path(tmp)
            )
            rows.append((receivers, latencies, connections))
    print(f"\nStop latency: sidecar report -> Job suspended; {args.trials} DebugJobs per scenario, operator as a "
          "subprocess against KMock (RealisticEmulator)")  # fmt: skip
    print(f"{'scenario':<52} {'median (s)':>11} {'p90 (s)':>9} {'max (s)':>9} {'receivers busy':>15}")
    for receivers, latencies, busy in rows:
        label = (
            "no webhook receivers (peer)"
            if receivers == 0
            else f"{receivers} trickling receivers on other DebugJobs"
        )
        print(f"{label:<52} {statistics.median(latencies):>11.3f} {_p90(latencies):>9.3f} "
              f"{max(latencies):>9.3f} {busy:>15.1f}")  # fmt: skip
    base, loaded = (statistics.median(r[1]) for r in rows)
    print(f"ratio of medians (loaded / peer): {loaded / base:.2f}")
    ok = base <= TARGET_MEDIAN_SECONDS and loaded <= TARGET_MEDIAN_SECONDS
    print(f"target: median <= {TARGET_MEDIAN_SECONDS:g} s in both -> {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10, help="stops measured per scenario (default 10)")
    parser.add_argument(
        "--receivers", type=int, default=20, help="trickling receivers in the loaded scenario"
    )
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
