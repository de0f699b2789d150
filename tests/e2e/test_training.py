"""Real training in the cluster: a healthy 2-worker DebugJob succeeds, a diverging one is stopped once.

Each rank is a pod of the node: the trainer container trains with PyTorch (DDP over gloo, the
rendezvous through the DebugJob's headless Service and the cluster DNS) and the hook writes to
SeaweedFS; the evaluator sidecar follows the run and reports to the DebugJob; the operator pod
decides. Nothing is simulated.
"""

from __future__ import annotations

from tests.conftest import SeaweedServer
from tests.e2e.cluster import Cluster, Release, eventually
from tests.e2e.conftest import WebhookReceiver
from tests.e2e.runs import (
    STOP_RULE,
    PhaseLog,
    check_stopped_once,
    delete_and_check_nothing_is_left,
    submit,
    submit_diverging,
)

RUN_TIMEOUT_SECONDS = 420
"""Pods start (image, Python and torch import), train and stop: about a minute on an idle machine."""


def test_a_healthy_two_worker_run_succeeds_with_every_rank_ended(
    cluster: Cluster, operator: Release, namespace: str, bridge_s3: SeaweedServer
) -> None:
    run = submit(cluster, namespace, "healthy", s3=bridge_s3, mode="healthy", steps=300)
    phases = PhaseLog.follow(cluster, namespace, "healthy")
    try:
        # The headless Service publishes both ranks, with the evaluator's metrics port.
        slices = eventually(
            lambda: [s for s in cluster.items(f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
                                              labels="kubernetes.io/service-name=healthy")
                     if len(s.get("endpoints") or []) == 2],
            timeout_seconds=RUN_TIMEOUT_SECONDS, what="an EndpointSlice with both ranks",
        )  # fmt: skip
        assert {p["name"]: p["port"] for p in slices[0]["ports"]} == {"rendezvous": 23456, "metrics": 9400}
        status = run.wait_phase("Succeeded", "Failed", "Stopped", timeout_seconds=RUN_TIMEOUT_SECONDS)
    except AssertionError as err:
        raise AssertionError(f"{err}\n{run.logs()}") from err
    finally:
        seen = phases.stop()
    assert status["phase"] == "Succeeded", (status, run.logs())
    # Pending until the pods run, Running, then Succeeded: never back to Pending while the Job winds down.
    assert (
        seen[-1] == "Succeeded"
        and seen.count("Running") == 1
        and "Pending" not in seen[seen.index("Running") :]
    ), seen

    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Succeeded"]["status"] == "True"
    assert conditions["RuleTriggered"]["status"] == "False"
    assert conditions["Running"]["status"] == "False"
    rules = {r["name"]: r for r in status["rules"]}
    assert (
        rules["exploding_tensor"]["state"] == "NoIssuesFound"
        and rules["exploding_tensor"]["action"] == "stop"
    )
    assert status["lastStep"] >= 290 and status.get("triggeredRule") is None
    assert status["job"]["succeeded"] == 2 and status["job"]["complete"] is True
    assert status["startTime"] and status["completionTime"]

    # Each rank's hook closed its run itself (END.json by the hook, status ok).
    for rank in (0, 1):
        end = eventually(lambda r=rank: run.end(r), timeout_seconds=30, what=f"END.json of rank {rank}")
        assert end["status"] == "ok" and end["written_by"] == "hook" and end["last_step"] >= 290, end

    metrics = operator.metrics()
    assert (
        f'trainguard_debugjob_phase{{debugjob="healthy",namespace="{namespace}",phase="Succeeded"}} 1.0'
        in metrics
    )
    delete_and_check_nothing_is_left(run)


def test_a_diverging_run_is_stopped_once_with_an_event_and_a_webhook_and_every_pod_ends(
    cluster: Cluster, operator: Release, namespace: str, bridge_s3: SeaweedServer, webhook: WebhookReceiver
) -> None:
    run = submit_diverging(cluster, namespace, "diverging", s3=bridge_s3, webhook_url=webhook.url,
                           grace_period_seconds=20)  # fmt: skip
    try:
        status = run.wait_phase("Stopped", "Succeeded", "Failed", timeout_seconds=RUN_TIMEOUT_SECONDS)
    except AssertionError as err:
        raise AssertionError(f"{err}\n{run.logs()}") from err
    assert status["phase"] == "Stopped", (status, run.logs())
    # Stopped by the stop rule, acted on once, whatever notify rule also fired; the kubelet ends every rank within
    # the grace period (the trainer may also stop on the hook's stop flag).
    check_stopped_once(run, webhook.received, pods_gone_seconds=20 + 60)

    # END for both ranks once the pods are gone: the hook's own on SIGTERM or the stop flag, else the operator's,
    # which names the stop rule.
    for rank in (0, 1):
        end = eventually(lambda r=rank: run.end(r), timeout_seconds=60, what=f"END.json of rank {rank}")
        assert end["status"] in ("ok", "stopped"), end
        assert end["written_by"] == "hook" or end["errors"] == [
            f"the operator wrote END: the DebugJob became Stopped (stopped by rule {STOP_RULE})"
        ], end
    assert run.status()["phase"] == "Stopped"
    delete_and_check_nothing_is_left(run)
