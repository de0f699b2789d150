"""What the operator does when a rule moves to IssuesFound: stop (suspend the workload) and notify.

Stop suspends the whole workload that runs the DebugJob's pods (its kind's adapter, `build.WORKLOAD`,
says how): its controller sends SIGTERM to every rank's pod and waits the grace period; no single
rank is ever killed, so collectives cannot hang. A workload that Kueue admitted
(`kueue.x-k8s.io/queue-name` on the DebugJob) is Kueue's to suspend, so the stop deactivates its
Kueue Workload instead (`workloads.control.stop`). Notify posts a
Kubernetes Event on the DebugJob and hands one delivery per webhook to the `delivery.Dispatcher`,
which sends them from its own thread: a receiver never holds up the handler. A stop is announced
the same way, after the Job is stopped. The handler decides which transitions need an action
(`status_decision.decide`) and calls these once per transition. Attach mode announces a DebugPolicy's
findings through the same `rule_event` and `announce` (`attach.resync_policy`), so its Events and webhooks
carry the same fields and get the same delivery.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Callable
from typing import Any

import kopf

from trainguard.api import debugjob
from trainguard.api.enums import Action, RuleCategory
from trainguard.operator import build, client, delivery, webhooks
from trainguard.operator.metrics import OperatorMetrics
from trainguard.operator.workloads import control

log = logging.getLogger(__name__)

EVENT_REASON_RULE_TRIGGERED = "RuleTriggered"
EVENT_REASON_STOPPED = "Stopped"
EVENT_REASON_WEBHOOK_FAILED = "WebhookFailed"

EmitEvent = Callable[..., None]
"""`kopf.event`-shaped: emit(body, type=..., reason=..., message=...); must work from any thread."""


def stop(kube: client.Kube, owner: build.Owner) -> bool:
    """Stop the DebugJob's workload (suspend it, or deactivate its Kueue Workload); False when it is gone."""
    kind, name = build.WORKLOAD, build.Names.of(owner.name).job
    queued = build.KUEUE_QUEUE_LABEL in owner.labels
    done = control.stop(kube, kind, owner.namespace, name, queued=queued)
    if done is None:
        log.warning(
            "DebugJob %s/%s: %s %s is gone; nothing to suspend", owner.namespace, owner.name, kind.kind, name
        )
        return False
    if done.deactivated:
        log.info(
            "DebugJob %s/%s: deactivated Kueue Workload %s of %s %s",
            owner.namespace, owner.name, ", ".join(done.deactivated), kind.kind, name,
        )  # fmt: skip
    else:
        log.info("DebugJob %s/%s: suspended %s %s", owner.namespace, owner.name, kind.kind, name)
    return True


def announce(
    kube: client.Kube,
    *,
    body: Any,
    event: webhooks.RuleEvent,
    hooks: list[debugjob.Webhook],
    metrics: OperatorMetrics,
    emit: EmitEvent,
    dispatcher: delivery.Dispatcher,
) -> None:
    """Post one Event on the DebugJob (or DebugPolicy: `body`) and queue one delivery per webhook for one rule
    transition.

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
            log.warning("%s: webhook %s: %s", event.subject, hook.name, err)
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
                receiver=f"{event.subject}/{hook.name}",
                name=hook.name,
                url=url,
                body=json.dumps(webhooks.payload(event, hook.format)).encode(),
                key=key,
                failed=failed,
            )
        )


def rule_event(
    rule: debugjob.RuleStatus,
    *,
    action: Action,
    namespace: str,
    uid: str,
    time: str,
    earlier: debugjob.RuleStatus | None = None,
    debugjob_name: str | None = None,
    debugpolicy: str | None = None,
    workload: webhooks.Workload | None = None,
    category: RuleCategory | None = None,
    suspend_in_seconds: int | None = None,
) -> webhooks.RuleEvent:
    """Return the transition to announce for one rule's finding, a DebugJob's or a DebugPolicy's workload's: its
    rule, step, rank, severity and message, and for a stop the earlier sign (`status_decision.earlier_sign`)."""
    return webhooks.RuleEvent(
        namespace=namespace, debugjob=debugjob_name, debugpolicy=debugpolicy, workload=workload, uid=uid,
        rule=rule.name, action=action, severity=rule.severity.value if rule.severity else None, category=category,
        step=rule.step, rank=rule.rank, message=rule.message, time=time, suspend_in_seconds=suspend_in_seconds,
        earlier_sign=None if earlier is None else webhooks.EarlierSign(
            rule=earlier.name, step=earlier.step, rank=earlier.rank, message=earlier.message),
    )  # fmt: skip


def emitter() -> EmitEvent:
    """Return `kopf.event` bound to this handler's context, so the dispatcher's thread can post Events too."""
    context = contextvars.copy_context()

    def emit(body: Any, **kwargs: Any) -> None:
        try:
            context.copy().run(kopf.event, body, **kwargs)
        except RuntimeError as err:  # kopf's loop has stopped (operator shutdown): the log line stays
            log.warning("could not post Event %s: %s", kwargs.get("reason"), err)

    return emit


def reference(data: dict[str, Any]) -> dict[str, Any]:
    """Return what an Event needs of a DebugJob or DebugPolicy (a plain copy: the dispatcher's thread may post it
    later)."""
    meta = data["metadata"]
    return {
        "apiVersion": data.get("apiVersion", debugjob.API_VERSION),
        "kind": data.get("kind", debugjob.KIND),
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]},
    }
