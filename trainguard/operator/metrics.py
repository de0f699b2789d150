"""Operator metrics, kube-state-metrics style, on a registry passed in.

Per-DebugJob gauges (phase, condition, last step) and per-DebugPolicy gauges (workloads selected, blind
ones) come from a custom collector that reads the operator's in-memory view at scrape time, so a
deleted object's series vanish with `forget()` / `forget_policy()`.
Counters cover rule triggers, reconcile errors, webhook deliveries and drops, actions, and the pod
admission requests attach mode's webhook answered (per namespace: a namespace whose pods must never
reach it shows none); a gauge the webhook deliveries queued. Label values come from bounded sets
(phase, condition, status, result, reason, action, handler) plus object, namespace and rule names,
which are bounded by the objects in the cluster.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import GaugeMetricFamily, Metric

from trainguard.api.enums import ConditionType, Phase

CONDITION_STATUSES = ("True", "False", "Unknown")


@dataclasses.dataclass
class _Observed:
    phase: str | None = None
    conditions: dict[str, str] = dataclasses.field(default_factory=dict)
    last_step: int | None = None
    rules: set[str] = dataclasses.field(default_factory=set)


class OperatorMetrics:
    """All operator metrics; `observe()` after each status change, `forget()` when a DebugJob is deleted."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str], _Observed] = {}
        self.rules_triggered = Counter(
            "trainguard_debugjob_rules_triggered",
            "Rule transitions to IssuesFound, per DebugJob and rule.",
            ["namespace", "debugjob", "rule"],
            registry=registry,
        )
        self.reconcile_errors = Counter(
            "trainguard_operator_reconcile_errors",
            "Handler runs that raised, per handler.",
            ["handler"],
            registry=registry,
        )
        self.webhook_deliveries = Counter(
            "trainguard_operator_webhook_deliveries",
            "Webhook deliveries by outcome (success or failure, after retries).",
            ["result"],
            registry=registry,
        )
        self.webhook_dropped = Counter(
            "trainguard_operator_webhook_dropped",
            "Webhook deliveries dropped unsent: queue_full (the receiver's queue was full) or shutdown.",
            ["reason"],
            registry=registry,
        )
        self.webhook_queued = Gauge(
            "trainguard_operator_webhook_queued",
            "Webhook deliveries waiting or in progress.",
            registry=registry,
        )
        self.actions = Counter(
            "trainguard_operator_actions",
            "Actions taken on rule transitions (stop, notify).",
            ["action"],
            registry=registry,
        )
        self.admission_requests = Counter(
            "trainguard_operator_admission_requests",
            "Pod admission requests the attach webhook answered, per namespace and result (injected or unchanged).",
            ["namespace", "result"],
            registry=registry,
        )
        self.policy_stops = Counter(
            "trainguard_debugpolicy_stops",
            "Workloads a DebugPolicy's stop rules stopped (counted at the verdict), per DebugPolicy.",
            ["namespace", "debugpolicy"],
            registry=registry,
        )
        self._policies: dict[tuple[str, str], tuple[int, int]] = {}
        registry.register(_StateCollector(self))

    def observe(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        """Record a DebugJob's status (camelCase dict as stored) for the per-object gauges."""
        conditions = {str(c.get("type")): str(c.get("status")) for c in status.get("conditions") or []}
        with self._lock:
            obs = self._objects.setdefault((namespace, name), _Observed())
            obs.phase = status.get("phase") or obs.phase
            obs.conditions.update(conditions)
            if status.get("lastStep") is not None:
                obs.last_step = int(status["lastStep"])

    def rule_triggered(self, namespace: str, name: str, rule: str) -> None:
        """Count one transition of `rule` to IssuesFound."""
        with self._lock:
            self._objects.setdefault((namespace, name), _Observed()).rules.add(rule)
        self.rules_triggered.labels(namespace=namespace, debugjob=name, rule=rule).inc()

    def forget(self, namespace: str, name: str) -> None:
        """Drop every series of a deleted DebugJob."""
        with self._lock:
            obs = self._objects.pop((namespace, name), None)
        for rule in obs.rules if obs else ():
            self.rules_triggered.remove(namespace, name, rule)

    def observe_policy(self, namespace: str, name: str, *, workloads: int, blind: int) -> None:
        """Record a DebugPolicy's selected workloads and how many of them are blind (pods without the evaluator)."""
        with self._lock:
            self._policies[namespace, name] = (workloads, blind)

    def policy_stopped(self, namespace: str, name: str) -> None:
        """Count one workload stopped by the policy."""
        self.policy_stops.labels(namespace=namespace, debugpolicy=name).inc()

    def forget_policy(self, namespace: str, name: str) -> None:
        """Drop every series of a deleted DebugPolicy."""
        with self._lock:
            self._policies.pop((namespace, name), None)
        try:
            self.policy_stops.remove(namespace, name)
        except KeyError:
            pass  # it never stopped anything

    def policies(self) -> dict[tuple[str, str], tuple[int, int]]:
        with self._lock:
            return dict(self._policies)

    def snapshot(self) -> dict[tuple[str, str], _Observed]:
        with self._lock:
            return {
                k: dataclasses.replace(v, conditions=dict(v.conditions), rules=set(v.rules))
                for k, v in self._objects.items()
            }


class _StateCollector:
    """Builds the per-DebugJob gauges afresh on every scrape."""

    def __init__(self, metrics: OperatorMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        phase = GaugeMetricFamily(
            "trainguard_debugjob_phase", "1 for the DebugJob's current phase, 0 for the others.",
            labels=["namespace", "debugjob", "phase"],
        )  # fmt: skip
        condition = GaugeMetricFamily(
            "trainguard_debugjob_condition", "1 for the condition's current status, 0 for the others.",
            labels=["namespace", "debugjob", "condition", "status"],
        )  # fmt: skip
        step = GaugeMetricFamily(
            "trainguard_debugjob_last_step",
            "Highest step any rank's evaluator has seen.",
            labels=["namespace", "debugjob"],
        )
        for (namespace, name), obs in sorted(self._metrics.snapshot().items()):
            for p in Phase:
                phase.add_metric([namespace, name, p.value], 1.0 if obs.phase == p.value else 0.0)
            for c in ConditionType:
                if c.value not in obs.conditions:
                    continue
                for s in CONDITION_STATUSES:
                    condition.add_metric(
                        [namespace, name, c.value, s], 1.0 if obs.conditions[c.value] == s else 0.0
                    )
            if obs.last_step is not None:
                step.add_metric([namespace, name], float(obs.last_step))
        selected, blind = _policy_families()
        for (namespace, name), (count, blind_count) in sorted(self._metrics.policies().items()):
            selected.add_metric([namespace, name], float(count))
            blind.add_metric([namespace, name], float(blind_count))
        yield phase
        yield condition
        yield step
        yield selected
        yield blind

    def describe(self) -> Iterator[Metric]:
        # Names only, so registration checks for clashes without a scrape.
        yield GaugeMetricFamily("trainguard_debugjob_phase", "", labels=["namespace", "debugjob", "phase"])
        yield GaugeMetricFamily(
            "trainguard_debugjob_condition", "", labels=["namespace", "debugjob", "condition", "status"]
        )
        yield GaugeMetricFamily("trainguard_debugjob_last_step", "", labels=["namespace", "debugjob"])
        yield from _policy_families()


def _policy_families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
    labels = ["namespace", "debugpolicy"]
    return (
        GaugeMetricFamily(
            "trainguard_debugpolicy_workloads", "Top-level workloads the DebugPolicy selects.", labels=labels
        ),
        GaugeMetricFamily(
            "trainguard_debugpolicy_blind_workloads",
            "Selected workloads with a running training pod that has no evaluator (created while the pod webhook "
            "was unreachable): their training is not checked.",
            labels=labels,
        ),
    )
