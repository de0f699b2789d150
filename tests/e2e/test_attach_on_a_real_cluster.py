"""Attach mode on the real cluster: DebugPolicies, the operator's pod webhook, and the real workload controllers.

The chart is upgraded with `attach.enabled=true` and every workload kind enabled; the operator runs as a
pod and serves the webhook through the chart's Service and MutatingWebhookConfiguration. The workloads are
`workloads.py`'s (an Indexed Job, a JobSet, a PyTorchJob, a TrainJob), each with the label
`trainguard.dev/watch: "true"` on its pod template and `attach_trainer.py` (real PyTorch, the hook configured
by nothing but the env the webhook injected) as its training container. A TrainJob's pod template is its
runtime's (`torch-distributed`, unchanged): the TrainJob labels its pods through its own runtime patch.

- healthy: every kind's pods are injected, the policy lists each workload with every rank seen and no
  rule, and each completes untouched;
- a NaN loss: each workload's top-level owner is suspended, every pod goes, and 60 s later still none came
  back; an Indexed Job, a PyTorchJob and a TrainJob admitted by Kueue run beside them, each stopped through
  its Kueue Workload instead (deactivated, and still inactive 60 s later). The time from the first non-finite
  loss (written by the trainer) to the last pod gone is printed per workload
  (`benchmarks/attach_stop_latency.py` measures it against the controllers' own floor);
- the operator scaled to zero: a new workload's pods start all the same, without the evaluator, and once the
  operator is back the policy reports the workload blind within one resync;
- a pod without the label never reaches the webhook (the operator's admission counter for its namespace
  stays absent, while a labelled pod there counts);
- an invalid policy is refused by the API server with the CRD's message.

The kinds of a test run side by side: one start and one hold serve them all.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SeaweedServer
from tests.e2e.attaching import (
    ATTACH_VALUES,
    KUEUE,
    POLICIES,
    SELECT,
    STOP_RULE,
    apply_policy,
    attached,
    condition,
    describe,
    first_nonfinite,
    is_injected,
    kueue_workload,
    launch_attached,
    local_queue,
    policy,
    policy_of,
    wait_stopped,
    workload_entries,
)
from tests.e2e.cluster import OPERATOR_LABELS, Cluster, Release, eventually
from tests.e2e.workloads import KINDS, START_SECONDS, hold, launch, wait_running
from trainguard.api import debugpolicy
from trainguard.operator import actions
from trainguard.operator.workloads import batch_job

RESYNC_DEADLINE_SECONDS = 90
"""One resync (10 s, after the operator's start) with room for a loaded node."""


@pytest.fixture(scope="module")
def attach_mode(release: Release, controllers: None) -> Iterator[Release]:
    """The chart upgraded with attach mode and every workload kind.

    Afterwards the release goes back to the chart's defaults, as the other tests expect it."""
    release.upgrade(ATTACH_VALUES)
    try:
        yield release
    finally:
        release.upgrade({})


# --- tests -------------------------------------------------------------------------------------------------


def test_healthy_workloads_are_injected_seen_and_complete_untouched(
    cluster: Cluster, attach_mode: Release, operator: Release, namespace: str, flag_dir: Path,
    bridge_s3: SeaweedServer,
) -> None:  # fmt: skip
    name = apply_policy(cluster, policy("healthy", namespace, s3=bridge_s3))
    runs = launch(cluster, namespace, flag_dir, suffix="ok", labels={SELECT: name},
                  transform=attached("healthy", flag_dir))  # fmt: skip
    pods = wait_running(cluster, runs)
    for run in runs:
        assert all(is_injected(p) for p in pods[run.name]), describe(cluster, [run])

    def all_seen() -> dict[tuple[str, str], dict[str, Any]] | None:
        entries = workload_entries(cluster, namespace, name)
        for run in runs:
            entry = entries.get((run.kind.adapter.kind, run.name))
            if entry is None or entry.get("ranksSeen") != run.kind.pods or entry.get("step") is None:
                return None
        return entries

    entries = eventually(all_seen, timeout_seconds=RESYNC_DEADLINE_SECONDS + 60, interval=2,
                         what=f"every rank of every workload seen by the policy "
                              f"({workload_entries(cluster, namespace, name)})")  # fmt: skip
    for run in runs:
        entry = entries[run.kind.adapter.kind, run.name]
        assert entry["phase"] == "Running" and not entry.get("blind") and entry.get("rule") is None, entry
    assert condition(cluster, namespace, name, "Blind") == "False"

    for run in runs:
        (flag_dir / run.name).touch()
    for run in runs:
        finished = eventually(
            lambda run=run: run.kind.adapter.state(run.get(cluster)).finished,  # type: ignore[misc]
            timeout_seconds=240, interval=2, what=f"{run.kind.id} {run.name} finished",
        )  # fmt: skip
        assert finished.succeeded, (run.kind.id, finished, describe(cluster, [run]))
        assert not run.kind.adapter.is_suspended(run.get(cluster)), run.kind.id

    def all_succeeded() -> dict[tuple[str, str], dict[str, Any]] | None:
        entries = workload_entries(cluster, namespace, name)
        done = all(entries.get((r.kind.adapter.kind, r.name), {}).get("phase") == "Succeeded" for r in runs)
        return entries if done else None

    entries = eventually(all_succeeded, timeout_seconds=RESYNC_DEADLINE_SECONDS, interval=2,
                         what=f"the policy showing every workload Succeeded ({workload_entries(cluster, namespace, name)})")  # fmt: skip
    assert all(e.get("rule") is None for e in entries.values()), entries
    acted = [e for e in cluster.events(namespace, name, kind=debugpolicy.KIND)
             if e.get("reason") in (actions.EVENT_REASON_STOPPED, actions.EVENT_REASON_RULE_TRIGGERED)]  # fmt: skip
    assert acted == [], [e.get("message") for e in acted]
    # The status the operator writes is the one the API server stores: no resync patches it again for nothing.
    assert "finished with inconsistencies" not in operator.operator_log()


def test_a_nan_loss_stops_each_workloads_top_level_owner_and_the_stop_holds(
    cluster: Cluster, attach_mode: Release, operator: Release, kueue: str, namespace: str, flag_dir: Path,
    bridge_s3: SeaweedServer,
) -> None:  # fmt: skip
    local_queue(cluster, namespace, kueue)
    name = apply_policy(cluster, policy("nan", namespace, s3=bridge_s3))
    queued, runs = launch_attached(cluster, namespace, flag_dir, policy_name=name, mode="nan", suffix="nan")
    gone = wait_stopped(cluster, runs, flag_dir=flag_dir)
    stopped_at = time.monotonic()
    for run in runs:
        start = first_nonfinite(flag_dir, run)
        assert start is not None
        print(f"\nattach stop latency: {run.name}: {gone[run.name] - start:.1f} s from the first non-finite "
              "loss to the last pod gone")  # fmt: skip

    # Kueue: the operator deactivated each queued workload's Kueue Workload (found by its uid); Kueue suspended it.
    deactivated = {run.name: kueue_workload(cluster, run) for run in queued}
    for run in queued:
        assert deactivated[run.name]["spec"]["active"] is False, (run.kind.id, deactivated[run.name])
    hold(cluster, runs, stopped_at)
    for run in queued:
        workload = cluster.get(
            f"{KUEUE}/namespaces/{namespace}/workloads/{deactivated[run.name]['metadata']['name']}"
        )
        assert workload is not None and workload["spec"]["active"] is False, (
            f"{run.kind.id}: the Workload was activated again"
        )

    entries = workload_entries(cluster, namespace, name)
    for run in runs:
        entry = entries.get((run.kind.adapter.kind, run.name))
        assert entry is not None and entry["phase"] == "Suspended", (run.kind.id, entries)
    stops = [e for e in cluster.events(namespace, name, kind=debugpolicy.KIND)
             if e.get("reason") == actions.EVENT_REASON_STOPPED]  # fmt: skip
    for run in runs:
        # the name whole: `pytorchjob-nan` is also the start of `pytorchjob-nan-kueue`
        mine = [e for e in stops if re.search(rf" {re.escape(run.name)}(?![\w-])", e.get("message", ""))]
        assert len(mine) == 1 and STOP_RULE in mine[0]["message"], (
            run.kind.id,
            [e["message"] for e in stops],
        )


def scale_operator(cluster: Cluster, release: Release, replicas: int) -> None:
    deployment = cluster.kubectl("get", "deployment", "-n", release.namespace, "-l", OPERATOR_LABELS,
                                 "-o", "name").stdout.split()  # fmt: skip
    assert len(deployment) == 1, deployment
    cluster.kubectl("scale", "-n", release.namespace, deployment[0], f"--replicas={replicas}")
    if replicas == 0:
        eventually(lambda: release.operator_pods() == [], timeout_seconds=120, what="the operator pod gone")
    else:
        cluster.kubectl("rollout", "status", "-n", release.namespace, deployment[0], "--timeout=180s",
                        timeout=200)  # fmt: skip


def test_with_the_operator_down_pods_still_start_and_the_workload_is_reported_blind(
    cluster: Cluster, attach_mode: Release, operator: Release, namespace: str, flag_dir: Path,
    bridge_s3: SeaweedServer,
) -> None:  # fmt: skip
    name = apply_policy(cluster, policy("blind", namespace, s3=bridge_s3))
    job = tuple(k for k in KINDS if k.adapter is batch_job.KIND)
    scale_operator(cluster, attach_mode, 0)
    try:
        # The loop of workloads.py (no PyTorch: nothing would check it anyway), with the label.
        runs = launch(cluster, namespace, flag_dir, suffix="blind", labels={SELECT: name}, kinds=job,
                      transform=attached(None, flag_dir))  # fmt: skip
        pods = wait_running(cluster, runs)[runs[0].name]
        assert not any(is_injected(p) for p in pods)
    finally:
        scale_operator(cluster, attach_mode, 1)
    back = time.monotonic()
    entry = eventually(
        lambda: workload_entries(cluster, namespace, name).get(("Job", runs[0].name), {}).get("blind") and
        workload_entries(cluster, namespace, name)[("Job", runs[0].name)],
        timeout_seconds=RESYNC_DEADLINE_SECONDS, interval=1,
        what=f"the Job reported blind ({policy_of(cluster, namespace, name).get('status')})",
    )  # fmt: skip
    print(f"\nblind reported {time.monotonic() - back:.0f} s after the operator was back")
    assert entry["ranksSeen"] == 0, entry
    assert condition(cluster, namespace, name, "Blind") == "True"
    status = policy_of(cluster, namespace, name)["status"]
    assert status["blindCount"] == 1 and runs[0].name in next(
        c["message"] for c in status["conditions"] if c["type"] == "Blind"
    ), status
    (
        flag_dir / runs[0].name
    ).touch()  # the loop ends (its python, pid 1, would sit out SIGTERM's grace period)
    eventually(lambda: runs[0].kind.adapter.state(runs[0].get(cluster)).finished, timeout_seconds=120,
               what=f"Job {runs[0].name} finished")  # fmt: skip


def admission_requests(release: Release, namespace: str) -> dict[str, float]:
    """The operator's admission counter for one namespace, by result ({} when no request came from it)."""
    counts = {}
    for line in release.metrics().splitlines():
        if (
            line.startswith("trainguard_operator_admission_requests_total{")
            and f'namespace="{namespace}"' in line
        ):
            labels, value = line.rsplit(" ", 1)
            result = labels.split('result="', 1)[1].split('"', 1)[0]
            counts[result] = float(value)
    return counts


def bare_pod(name: str, namespace: str, flag_dir: Path, labels: dict[str, str]) -> dict[str, Any]:
    from tests.e2e.workloads import container, flag_volume

    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"restartPolicy": "Never", "containers": [container("main", flag_dir, name)],
                     "volumes": [flag_volume(flag_dir)]}}  # fmt: skip


def test_a_pod_without_the_label_never_reaches_the_webhook(
    cluster: Cluster, attach_mode: Release, operator: Release, namespace: str, flag_dir: Path
) -> None:
    def phase(pod: str) -> str | None:
        obj = cluster.get(f"/api/v1/namespaces/{namespace}/pods/{pod}")
        return str((obj or {}).get("status", {}).get("phase")) if obj else None

    cluster.apply(bare_pod("unlabelled", namespace, flag_dir, {}))
    eventually(
        lambda: phase("unlabelled") == "Running",
        timeout_seconds=START_SECONDS,
        what="the unlabelled pod running",
    )
    assert admission_requests(attach_mode, namespace) == {}
    # The counter counts: a labelled pod of the same namespace reaches the webhook (no workload: left unchanged).
    cluster.apply(bare_pod("labelled", namespace, flag_dir, {debugpolicy.WATCH_LABEL: "true"}))
    eventually(
        lambda: phase("labelled") == "Running", timeout_seconds=START_SECONDS, what="the labelled pod running"
    )
    assert admission_requests(attach_mode, namespace) == {"unchanged": 1.0}
    for pod in ("unlabelled", "labelled"):
        (flag_dir / pod).touch()  # the loops end (their python, pid 1, would sit out SIGTERM's grace period)
    for pod in ("unlabelled", "labelled"):
        eventually(lambda pod=pod: phase(pod) == "Succeeded", timeout_seconds=120, what=f"pod {pod} ended")  # type: ignore[misc]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"targetRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "a"}, "selector": {"matchLabels": {"a": "b"}}},
         "give exactly one of spec.selector"),
        ({"selector": {}}, "selects every workload of the namespace"),
    ],
    ids=["selector-and-targetRef", "empty-selector"],
)  # fmt: skip
def test_an_invalid_policy_is_refused_with_a_clear_message(
    cluster: Cluster, attach_mode: Release, namespace: str, spec: dict[str, Any], message: str
) -> None:
    body = {"apiVersion": debugpolicy.API_VERSION, "kind": debugpolicy.KIND,
            "metadata": {"name": "invalid", "namespace": namespace},
            "spec": {"capture": {"uri": "s3://bucket/runs"}, **spec}}  # fmt: skip
    proc = cluster.apply(body, check=False)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert cluster.get(f"{POLICIES.format(namespace=namespace)}/invalid") is None
