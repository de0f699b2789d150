"""Actions on sidecar reports: stop suspends the whole Job, notify posts an Event and calls each webhook once."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from tests.kube import DEBUGJOB_RESOURCE, KubeEnv, debugjob_manifest, eventually
from tests.operator.conftest import OperatorProcess, WebhookReceiver

JOBS = "batch/v1/jobs"
RULES = [
    {"type": "exploding_tensor", "action": "stop"},
    {"type": "loss_spike", "name": "loss-spike", "action": "notify"},
]


def _status(kube: KubeEnv) -> dict[str, Any]:
    return dict((kube.get(DEBUGJOB_RESOURCE, "default", "dj1") or {}).get("status") or {})


def _events(kube: KubeEnv, reason: str) -> list[dict[str, Any]]:
    return [e for e in kube.list("v1/events", "default") if e.get("reason") == reason]


async def _report(kube: KubeEnv, rank: int, step: int, **states: tuple[str, int]) -> None:
    """Patch status.reports as a sidecar does: one key per rank, a JSON merge patch on the status subresource."""
    rules = [{"name": n, "state": s, "step": st, "severity": "critical", "message": f"{n} fired at {st}",
              "action": "none"} for n, (s, st) in states.items()]  # fmt: skip
    report = {"lastStep": step, "time": "2026-11-22T05:10:00Z", "ended": False, "rules": rules}
    await kube.patch(DEBUGJOB_RESOURCE, "default", "dj1", {"status": {"reports": {f"rank-{rank:05d}": report}}},
                     subresource="status")  # fmt: skip


async def _running_debugjob(kube: KubeEnv, tmp_path: Path, **spec: Any) -> str:
    dj = await kube.create(DEBUGJOB_RESOURCE, debugjob_manifest(
        "dj1", workers=2, rules=RULES, capture_uri=f"file://{tmp_path}/runs", **spec))  # fmt: skip
    await eventually(lambda: kube.get(JOBS, "default", "dj1"), what="the Job")
    await kube.patch(JOBS, "default", "dj1", {"status": {"active": 2, "ready": 2}}, subresource="status")
    await eventually(lambda: _status(kube).get("phase") == "Running", what="phase Running")
    return str(dj["metadata"]["uid"])


async def test_stop_rule_suspends_the_job_and_marks_the_debugjob_stopped(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    uid = await _running_debugjob(kube, tmp_path)
    # Rank 0 closed its run cleanly before the stop; rank 1 will be killed without an END.
    run = tmp_path / "runs" / "default" / "dj1" / uid
    (run / "rank-00000").mkdir(parents=True)
    (run / "rank-00000" / "END.json").write_text(json.dumps(
        {"format_version": "1.0", "status": "ok", "last_step": 90, "wall_time": 1.0, "written_by": "hook"}))  # fmt: skip

    await _report(kube, 0, 90, exploding_tensor=("NoIssuesFound", 90))
    await _report(
        kube, 1, 120, exploding_tensor=("IssuesFound", 110), **{"loss-spike": ("NoIssuesFound", 120)}
    )
    await eventually(lambda: _status(kube).get("phase") == "Stopped", what="phase Stopped")

    job = kube.get(JOBS, "default", "dj1")
    assert job is not None and job["spec"]["suspend"] is True, "stop suspends the whole Job"
    status = _status(kube)
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Stopped"]["status"] == "True" and conditions["Stopped"]["reason"] == "RuleTriggered"
    assert conditions["RuleTriggered"]["status"] == "True"
    assert status["triggeredRule"] == "exploding_tensor" and status["lastStep"] == 120
    rules = {r["name"]: r for r in status["rules"]}
    assert rules["exploding_tensor"] == {
        "name": "exploding_tensor", "state": "IssuesFound", "action": "stop", "step": 110, "rank": 1,
        "severity": "critical", "message": "exploding_tensor fired at 110", "time": "2026-11-22T05:10:00Z",
    }  # fmt: skip
    assert rules["loss-spike"]["state"] == "NoIssuesFound"
    stopped = await eventually(lambda: _events(kube, "Stopped"), what="a Stopped event")
    assert "rule exploding_tensor found issues at step 110 on rank 1" in stopped[0]["message"]
    assert all(p["metadata"]["name"] != "dj1-0" for p in kube.list("v1/pods", "default")), "no pod is deleted"

    # The Job controller deletes the pods: they leave `active` for `terminating` during their grace period, when
    # a trainer may still close its run; only once they are gone does the operator write END, for rank 1 only.
    end1 = run / "rank-00001" / "END.json"
    await kube.patch(JOBS, "default", "dj1", {"status": {"active": 0, "ready": 0, "terminating": 2}},
                     subresource="status")  # fmt: skip
    await eventually(lambda: (_status(kube).get("job") or {}).get("terminating") == 2, what="terminating 2")
    assert not end1.exists(), "no END while the pods are still terminating"
    await kube.patch(JOBS, "default", "dj1", {"status": {"terminating": 0}}, subresource="status")
    await eventually(end1.exists, what="rank 1's END.json")
    end = json.loads(end1.read_text())
    assert end["status"] == "stopped" and end["last_step"] == 120  # a stop rule ended it: not a crash
    assert end["errors"] == [
        "the operator wrote END: the DebugJob became Stopped (stopped by rule exploding_tensor)"
    ]
    assert json.loads((run / "rank-00000" / "END.json").read_text())["written_by"] == "hook"

    # More reports after the stop change nothing: the phase stays Stopped, no second stop.
    await _report(kube, 0, 130, exploding_tensor=("IssuesFound", 125))
    await eventually(lambda: _status(kube).get("lastStep") == 130, what="lastStep 130")
    assert _status(kube)["phase"] == "Stopped" and len(_events(kube, "Stopped")) == 1


async def test_notify_rule_posts_one_event_and_calls_the_webhook_once(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path, webhook_receiver: WebhookReceiver
) -> None:
    await kube.create("v1/secrets", {"apiVersion": "v1", "kind": "Secret",
                                     "metadata": {"name": "hooks", "namespace": "default"},
                                     "data": {"url": base64.b64encode(webhook_receiver.url.encode()).decode()}})  # fmt: skip
    hooks = {
        "notify": {
            "webhooks": [
                {"name": "team", "format": "generic", "urlSecretRef": {"name": "hooks", "key": "url"}}
            ]
        }
    }
    await _running_debugjob(kube, tmp_path, actions=hooks)

    await _report(
        kube, 0, 40, **{"loss-spike": ("IssuesFound", 35), "exploding_tensor": ("NoIssuesFound", 40)}
    )
    await eventually(lambda: webhook_receiver.calls, what="the webhook call")
    event = await eventually(lambda: _events(kube, "RuleTriggered"), what="a RuleTriggered event")
    assert event[0]["type"] == "Warning" and event[0]["involvedObject"]["name"] == "dj1"
    (call,) = webhook_receiver.calls
    assert (
        call["event"]["rule"] == "loss-spike"
        and call["event"]["step"] == 35
        and call["event"]["action"] == "notify"
    )

    # Later reports of the same state, from either rank, and an operator restart: still exactly one of each.
    await _report(kube, 1, 60, **{"loss-spike": ("IssuesFound", 50)})
    await _report(kube, 0, 80, **{"loss-spike": ("IssuesFound", 35)})
    await eventually(lambda: _status(kube).get("lastStep") == 80, what="lastStep 80")
    await operator_runner.stop()
    await operator_runner.start()
    await _report(kube, 0, 90, **{"loss-spike": ("IssuesFound", 35)})
    await eventually(lambda: _status(kube).get("lastStep") == 90, what="lastStep 90 after the restart")
    assert len(webhook_receiver.calls) == 1 and len(_events(kube, "RuleTriggered")) == 1
    assert _status(kube)["phase"] == "Running", "notify never stops the job"
    assert _status(kube)["triggeredRule"] == "loss-spike", "a running job names its first finding"
    assert kube.get(JOBS, "default", "dj1")["spec"]["suspend"] is False  # type: ignore[index]
    text = json.dumps(kube.get(DEBUGJOB_RESOURCE, "default", "dj1")) + json.dumps(
        kube.list("v1/events", "default")
    )
    assert "secret-token-123" not in text, "the webhook URL must not leak into status or events"

    # A stop later on names the loss spike as its earlier sign: in the condition, the Event and the webhook.
    await _report(kube, 1, 100, exploding_tensor=("IssuesFound", 95))
    stopped = await eventually(lambda: _events(kube, "Stopped"), what="a Stopped event")
    assert (
        "(the Job was suspended); earlier sign: rule loss-spike at step 35 on rank 0" in stopped[0]["message"]
    )
    # The Event is posted from the handler; the status patch follows when the handler returns.
    await eventually(lambda: _status(kube).get("phase") == "Stopped", what="phase Stopped")
    status = _status(kube)
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Stopped"]["message"].endswith(
        "earlier sign: rule loss-spike at step 35 on rank 0: loss-spike fired at 35"
    )
    # The stop rule is the rule the DebugJob names, though the status named the notify rule until then.
    assert status["triggeredRule"] == "exploding_tensor"
    assert conditions["RuleTriggered"]["message"] == (
        "exploding_tensor: exploding_tensor fired at 95; other rules with findings: loss-spike at step 35 on rank 0 "
        "(notify)"
    )
    await eventually(lambda: len(webhook_receiver.calls) == 2, what="the stop's webhook call")
    assert webhook_receiver.calls[1]["event"]["earlier_sign"] == {
        "rule": "loss-spike",
        "step": 35,
        "rank": 0,
        "message": "loss-spike fired at 35",
    }


async def _watched_stop(kube: KubeEnv, tmp_path: Path, *, cooperative_seconds: int) -> None:
    """A running DebugJob whose rank 1 reports a stop verdict, and that its trainer polls the stop file."""
    await _running_debugjob(kube, tmp_path, actions={"stop": {"cooperativeSeconds": cooperative_seconds}})
    rules = [{"name": "exploding_tensor", "state": "IssuesFound", "step": 110, "severity": "critical",
              "message": "nan", "action": "none"}]  # fmt: skip
    report = {
        "lastStep": 110,
        "time": "2026-11-22T05:10:00Z",
        "ended": False,
        "stopWatched": True,
        "rules": rules,
    }
    await kube.patch(DEBUGJOB_RESOURCE, "default", "dj1", {"status": {"reports": {"rank-00001": report}}},
                     subresource="status")  # fmt: skip
    await eventually(lambda: _status(kube).get("phase") == "Stopped", what="phase Stopped")


async def test_a_trainer_that_polls_the_stop_file_gets_the_cooperative_seconds_before_the_suspension(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    # The sidecar wrote the stop file with the verdict and reports that its trainer reads it (stopWatched):
    # the trainer has cooperativeSeconds to save its work and exit before the Job is suspended.
    await _watched_stop(kube, tmp_path, cooperative_seconds=3600)
    condition = next(c for c in _status(kube)["conditions"] if c["type"] == "Stopped")
    assert (
        "the trainer polls the stop file: the Job is suspended in 3600 s unless it exits first"
        in condition["message"]
    )
    assert kube.get(JOBS, "default", "dj1")["spec"]["suspend"] is False  # type: ignore[index]


async def test_the_job_is_suspended_once_the_cooperative_seconds_are_over(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    await _watched_stop(kube, tmp_path, cooperative_seconds=1)
    await eventually(
        lambda: kube.get(JOBS, "default", "dj1")["spec"]["suspend"] is True,  # type: ignore[index]
        timeout_seconds=30, what="the suspension after the cooperative seconds",
    )  # fmt: skip


async def test_a_stop_under_kueue_deactivates_the_jobs_workload_instead_of_suspending_the_job(
    kube: KubeEnv, operator_runner: OperatorProcess, tmp_path: Path
) -> None:
    # Kueue resumes an admitted Job that anyone else suspends; its Workload's spec.active=false stops it for good.
    import kmock

    kube.emulator.resources["kueue.x-k8s.io/v1beta2/workloads"] = kmock.ResourceInfo(
        kind="Workload", singular="workload", namespaced=True,
        verbs={"get", "list", "watch", "create", "patch", "delete"}, subresources={"status"},
    )  # fmt: skip
    dj = debugjob_manifest("dj1", workers=2, rules=RULES, capture_uri=f"file://{tmp_path}/runs")
    dj["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-queue"}
    await kube.create(DEBUGJOB_RESOURCE, dj)
    job = await eventually(lambda: kube.get(JOBS, "default", "dj1"), what="the Job")
    assert job["spec"]["suspend"] is True, "a queued Job starts suspended"
    uid = job["metadata"]["uid"]
    for name, job_uid in (("job-dj1-abcde", uid), ("job-other-fghij", "another-uid")):
        await kube.create("kueue.x-k8s.io/v1beta2/workloads", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "default", "labels": {"kueue.x-k8s.io/job-uid": job_uid}},
            "spec": {"active": True, "queueName": "team-queue"},
        })  # fmt: skip
    # Kueue admits the Workload and starts the Job.
    await kube.patch(JOBS, "default", "dj1", {"spec": {"suspend": False}})
    await kube.patch(JOBS, "default", "dj1", {"status": {"active": 2, "ready": 2}}, subresource="status")
    await eventually(lambda: _status(kube).get("phase") == "Running", what="phase Running")

    await _report(kube, 1, 120, exploding_tensor=("IssuesFound", 110))
    await eventually(lambda: _status(kube).get("phase") == "Stopped", what="phase Stopped")
    await eventually(lambda: kube.get("kueue.x-k8s.io/v1beta2/workloads", "default", "job-dj1-abcde")["spec"]["active"]
                     is False, what="the Workload deactivated")  # type: ignore[index]  # fmt: skip
    workloads = {w["metadata"]["name"]: w for w in kube.list("kueue.x-k8s.io/v1beta2/workloads", "default")}
    assert workloads["job-other-fghij"]["spec"]["active"] is True, "another Job's Workload is left alone"
    assert kube.get(JOBS, "default", "dj1")["spec"]["suspend"] is False, "Kueue suspends it, not the operator"  # type: ignore[index]
    # kopf posts Events from its own task, after the handler's patches: the Workload can be deactivated first
    stopped = await eventually(lambda: _events(kube, "Stopped"), what="a Stopped event")
    assert len(stopped) == 1
