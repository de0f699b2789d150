"""What the operator does when a rule moves to IssuesFound: stop (suspend the Job) and notify.

Stop suspends the whole Job: the Job controller sends SIGTERM to every rank's pod and waits the
grace period; no single rank is ever killed, so collectives cannot hang. A Job that Kueue admitted
(`kueue.x-k8s.io/queue-name`) is Kueue's to suspend: Kueue resumes an admitted Job that anyone
else suspends, so the stop deactivates the Job's Workload (`spec.active: false`) instead, Kueue's
own way to stop it for good; Kueue then suspends the Job and releases its quota. Notify posts a
Kubernetes Event on the DebugJob and hands one delivery per webhook to the `delivery.Dispatcher`,
which sends them from its own thread: a receiver never holds up the handler. A stop is announced
the same way, after the Job is stopped. The handler decides which transitions need an action
(`status_decision.decide`) and calls these once per transition.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from trainguard.api import debugjob as api
from trainguard.api.enums import Action
from trainguard.operator import build, client, delivery, webhooks
from trainguard.operator.metrics import OperatorMetrics

log = logging.getLogger(__name__)

EVENT_REASON_RULE_TRIGGERED = "RuleTriggered"
EVENT_REASON_STOPPED = "Stopped"
EVENT_REASON_WEBHOOK_FAILED = "WebhookFailed"

EmitEvent = Callable[..., None]
"""`kopf.event`-shaped: emit(body, type=..., reason=..., message=...); must work from any thread."""


KUEUE_WORKLOAD_API_VERSION = "kueue.x-k8s.io/v1beta2"
KUEUE_JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
"""The label Kueue puts on the Workload of a Job: the Job's uid."""


def stop(kube: client.Kube, owner: build.Owner) -> bool:
    """Stop the DebugJob's Job (suspend it, or deactivate its Kueue Workload); False when there is no Job."""
    job = build.Names.of(owner.name).job
    if build.KUEUE_QUEUE_LABEL in owner.labels and _deactivate_workloads(kube, owner, job):
        return True
    result = kube.patch("batch/v1", "Job", owner.namespace, job, {"spec": {"suspend": True}})
    if result is None:
        log.warning("DebugJob %s/%s: Job %s is gone; nothing to suspend", owner.namespace, owner.name, job)
        return False
    log.info("DebugJob %s/%s: suspended Job %s", owner.namespace, owner.name, job)
    return True


def announce(
    kube: client.Kube,
    *,
    body: Any,
    event: webhooks.RuleEvent,
    hooks: list[api.Webhook],
    metrics: OperatorMetrics,
    emit: EmitEvent,
    dispatcher: delivery.Dispatcher,
) -> None:
    """Post one Event on the DebugJob and queue one delivery per webhook for one rule transition.

    A webhook that is not delivered in the end (refused, given up, dropped) gets a WebhookFailed
    Event from the dispatcher's thread; `emit` must allow that.
    """
    reason = EVENT_REASON_STOPPED if event.action == Action.STOP else EVENT_REASON_RULE_TRIGGERED
    emit(body, type="Warning", reason=reason, message=webhooks.summary(event))
    key = webhooks.idempotency_key(event)
    for hook in hooks:
        try:
            url = kube.secret_value(event.namespace, hook.url_secret_ref.name, hook.url_secret_ref.key)
        except client.KubeError as err:
            log.warning("DebugJob %s/%s: webhook %s: %s", event.namespace, event.debugjob, hook.name, err)
            emit(
                body,
                type="Warning",
                reason=EVENT_REASON_WEBHOOK_FAILED,
                message=f"webhook {hook.name}: {err}",
            )
            metrics.webhook_deliveries.labels(result="failure").inc()
            continue

        def failed(why: str, name: str = hook.name) -> None:
            emit(
                body,
                type="Warning",
                reason=EVENT_REASON_WEBHOOK_FAILED,
                message=f"webhook {name}: not delivered, {why}",
            )

        dispatcher.submit(
            delivery.Delivery(
                receiver=f"{event.namespace}/{event.debugjob}/{hook.name}",
                name=hook.name,
                url=url,
                body=json.dumps(webhooks.payload(event, hook.format)).encode(),
                key=key,
                failed=failed,
            )
        )


def _deactivate_workloads(kube: client.Kube, owner: build.Owner, job_name: str) -> bool:
    """Set `spec.active: false` on the Kueue Workloads of the Job; False when it has none (not queued yet)."""
    job = kube.get("batch/v1", "Job", owner.namespace, job_name)
    if job is None:
        return False
    uid = job["metadata"]["uid"]
    workloads = [
        w
        for w in kube.list(
            KUEUE_WORKLOAD_API_VERSION, "Workload", owner.namespace, labels={KUEUE_JOB_UID_LABEL: uid}
        )
        if (w.get("metadata") or {}).get("labels", {}).get(KUEUE_JOB_UID_LABEL) == uid
    ]
    for workload in workloads:
        name = workload["metadata"]["name"]
        kube.patch(KUEUE_WORKLOAD_API_VERSION, "Workload", owner.namespace, name, {"spec": {"active": False}})
        log.info(
            "DebugJob %s/%s: deactivated Kueue Workload %s of Job %s",
            owner.namespace,
            owner.name,
            name,
            job_name,
        )
    return bool(workloads)
