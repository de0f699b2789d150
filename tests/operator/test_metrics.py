"""Operator metrics: per-DebugJob gauges read at scrape time, counters by bounded labels."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from trainguard.operator.metrics import OperatorMetrics


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_phase_and_condition_gauges_follow_the_last_observed_status() -> None:
    registry = CollectorRegistry()
    metrics = OperatorMetrics(registry)
    metrics.observe("ml", "llm", {"phase": "Running", "lastStep": 40,
                                  "conditions": [{"type": "Running", "status": "True"}]})  # fmt: skip
    assert _value(registry, "trainguard_debugjob_phase", namespace="ml", debugjob="llm", phase="Running") == 1
    assert _value(registry, "trainguard_debugjob_phase", namespace="ml", debugjob="llm", phase="Stopped") == 0
    assert _value(registry, "trainguard_debugjob_condition", namespace="ml", debugjob="llm", condition="Running",
                  status="True") == 1  # fmt: skip
    assert _value(registry, "trainguard_debugjob_last_step", namespace="ml", debugjob="llm") == 40

    metrics.observe("ml", "llm", {"phase": "Stopped", "conditions": [{"type": "Running", "status": "False"}]})
    assert _value(registry, "trainguard_debugjob_phase", namespace="ml", debugjob="llm", phase="Stopped") == 1
    assert _value(registry, "trainguard_debugjob_condition", namespace="ml", debugjob="llm", condition="Running",
                  status="False") == 1  # fmt: skip
    assert _value(registry, "trainguard_debugjob_last_step", namespace="ml", debugjob="llm") == 40


def test_counters_and_forgetting_a_deleted_debugjob() -> None:
    registry = CollectorRegistry()
    metrics = OperatorMetrics(registry)
    metrics.observe("ml", "llm", {"phase": "Running"})
    metrics.rule_triggered("ml", "llm", "exploding_tensor")
    metrics.actions.labels(action="stop").inc()
    metrics.webhook_deliveries.labels(result="success").inc()
    metrics.reconcile_errors.labels(handler="reconcile").inc()
    assert _value(registry, "trainguard_debugjob_rules_triggered_total", namespace="ml", debugjob="llm",
                  rule="exploding_tensor") == 1  # fmt: skip
    assert _value(registry, "trainguard_operator_actions_total", action="stop") == 1
    assert _value(registry, "trainguard_operator_webhook_deliveries_total", result="success") == 1
    assert _value(registry, "trainguard_operator_reconcile_errors_total", handler="reconcile") == 1

    metrics.forget("ml", "llm")
    assert (
        _value(registry, "trainguard_debugjob_phase", namespace="ml", debugjob="llm", phase="Running") is None
    )
    assert _value(registry, "trainguard_debugjob_rules_triggered_total", namespace="ml", debugjob="llm",
                  rule="exploding_tensor") is None  # fmt: skip


def test_a_policys_workloads_blind_ones_and_stops_until_it_is_deleted() -> None:
    registry = CollectorRegistry()
    metrics = OperatorMetrics(registry)
    get = registry.get_sample_value
    labels = {"namespace": "ml", "debugpolicy": "watch"}
    assert get("trainguard_debugpolicy_blind_workloads", labels) is None
    metrics.observe_policy("ml", "watch", workloads=3, blind=1)
    metrics.policy_stopped("ml", "watch")
    assert get("trainguard_debugpolicy_workloads", labels) == 3.0
    assert get("trainguard_debugpolicy_blind_workloads", labels) == 1.0
    assert get("trainguard_debugpolicy_stops_total", labels) == 1.0
    metrics.observe_policy("ml", "watch", workloads=3, blind=0)  # the blind pods were recreated
    assert get("trainguard_debugpolicy_blind_workloads", labels) == 0.0
    metrics.forget_policy("ml", "watch")
    metrics.forget_policy("ml", "never-stopped")
    for name in ("trainguard_debugpolicy_workloads", "trainguard_debugpolicy_blind_workloads",
                 "trainguard_debugpolicy_stops_total"):  # fmt: skip
        assert get(name, labels) is None
