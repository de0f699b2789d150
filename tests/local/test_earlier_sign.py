"""The earlier sign of a stop: the first warning or critical finding of another rule before it."""

from __future__ import annotations

from trainguard.api.enums import Action, RuleState, Severity
from trainguard.local.supervise import Outcome
from trainguard.rules.base import Finding
from trainguard.sidecar.verdicts import Verdict


def finding(rule: str, step: int, severity: Severity = Severity.WARNING) -> Finding:
    return Finding(rule=rule, severity=severity, step=step, message=f"{rule} at {step}")


def outcome(findings: list[Finding], stop: Finding | None) -> Outcome:
    verdict = (
        None
        if stop is None
        else Verdict(
            rule=stop.rule,
            action=Action.STOP,
            state=RuleState.ISSUES_FOUND,
            step=stop.step,
            rank=0,
            severity=stop.severity,
            message=stop.message,
            finding=stop,
            time=0.0,
        )
    )
    return Outcome(
        command=("train",),
        run_id="r",
        run_uri="file:///r",
        exit_code=3 if stop else 0,
        returncode=0,
        stopped=stop is not None,
        stop_verdict=verdict,
        killed=False,
        findings=findings,
        rule_status={},
        last_step=20,
        duration_seconds=1.0,
    )


def test_the_earlier_sign_is_the_first_warning_or_critical_of_another_rule_before_the_stop() -> None:
    stop = finding("exploding_tensor", 10, Severity.CRITICAL)
    found = [
        finding("loss_spike", 2, Severity.INFO),  # below warning: not a sign
        finding("exploding_tensor", 3),  # the stopping rule's own earlier finding
        finding("oscillating_loss", 7),
        finding("weight_update_ratio", 5, Severity.CRITICAL),
        finding("dead_relu", 12),  # after the stop
        stop,
    ]
    out = outcome(found, stop)
    assert out.earlier_sign is found[3]
    sign = out.to_json()["stop"]["earlier_sign"]
    assert (sign["rule"], sign["step"], sign["severity"]) == ("weight_update_ratio", 5, "critical")


def test_no_earlier_sign_without_a_stop_or_without_an_earlier_finding() -> None:
    stop = finding("exploding_tensor", 10, Severity.CRITICAL)
    assert outcome([stop, finding("dead_relu", 10)], stop).earlier_sign is None  # same step: not earlier
    assert outcome([finding("dead_relu", 4)], None).earlier_sign is None
    assert outcome([stop], stop).to_json()["stop"]["earlier_sign"] is None
