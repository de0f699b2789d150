"""What `status.triggeredRule` names: for a Stopped DebugJob the stop rule, whatever notify rule found issues too.

A notify rule's finding may reach the operator before the stop rule's, or in the same decision (an operator
restarted mid-run sees both at once). Neither the order of the rules in the spec nor the order of the
findings, nor what the status already names, may make a Stopped DebugJob name a notify rule.
"""

from __future__ import annotations

import pytest

from tests.operator.conftest import debugjob_object
from trainguard.api import debugjob as api
from trainguard.api.enums import Action, Phase, RuleState
from trainguard.api.rules_config import RuleSpec
from trainguard.operator import status_decision

NOW = "2026-11-26T05:00:00Z"
STOP = RuleSpec(type="exploding_tensor", action=Action.STOP)
NOTIFY = RuleSpec(type="loss_not_decreasing", action=Action.NOTIFY)
SPEC_ORDERS = {"notify rule listed first": [NOTIFY, STOP], "stop rule listed first": [STOP, NOTIFY]}
NOTIFY_STEPS = {"notify finding before the stop's": 640, "notify finding after the stop's": 700}
STOP_STEP = 675


def _report(step: int, **findings: int) -> api.RankReport:
    return api.RankReport(
        last_step=step,
        rules=[
            api.RankRuleReport(name=name, state=RuleState.ISSUES_FOUND, step=at, message=f"{name} at {at}")
            for name, at in findings.items()
        ],
    )


def _applied(dj: api.DebugJob, decision: status_decision.Decision) -> api.DebugJob:
    """The DebugJob as the next event (or a restarted operator) reads it, with the decision written."""
    stored = dj.status.model_dump(mode="json", by_alias=True)
    return dj.model_copy(update={"status": api.DebugJobStatus.model_validate({**stored, **decision.status})})


def _conditions(dj: api.DebugJob) -> dict[str, api.Condition]:
    return {c.type.value: c for c in dj.status.conditions}


def _both_found(notify_step: int) -> dict[str, api.RankReport]:
    return {
        "rank-00000": _report(notify_step, loss_not_decreasing=notify_step),
        "rank-00001": _report(STOP_STEP, exploding_tensor=STOP_STEP),
    }


def _assert_stopped_by_the_stop_rule(dj: api.DebugJob, *, notify_step: int) -> None:
    assert dj.status.phase == Phase.STOPPED and dj.status.triggered_rule == "exploding_tensor"
    conditions = _conditions(dj)
    assert conditions["Running"].message == "stopped by rule exploding_tensor"
    assert conditions["Stopped"].message.startswith(
        "rule exploding_tensor found issues at step 675 on rank 1"
    )
    found = conditions["RuleTriggered"]
    assert found.status == "True" and found.message == (
        "exploding_tensor: exploding_tensor at 675; other rules with findings: "
        f"loss_not_decreasing at step {notify_step} on rank 0 (notify)"
    )


@pytest.mark.parametrize("notify_step", NOTIFY_STEPS.values(), ids=NOTIFY_STEPS.keys())
@pytest.mark.parametrize("rules", SPEC_ORDERS.values(), ids=SPEC_ORDERS.keys())
def test_a_notify_and_a_stop_finding_in_one_decision_stop_by_the_stop_rule_and_notify_the_other(
    rules: list[RuleSpec], notify_step: int
) -> None:
    dj = debugjob_object(rules, _both_found(notify_step), phase=Phase.RUNNING)
    decision = status_decision.decide(dj, now=NOW)
    assert decision.stop is not None and decision.stop.name == "exploding_tensor"
    assert [r.name for r in decision.notify] == ["loss_not_decreasing"]
    assert decision.triggered_rule == "exploding_tensor"
    stopped = _applied(dj, decision)
    _assert_stopped_by_the_stop_rule(stopped, notify_step=notify_step)
    earlier = "; earlier sign: rule loss_not_decreasing at step 640 on rank 0: loss_not_decreasing at 640"
    assert _conditions(stopped)["Stopped"].message.endswith(earlier) is (notify_step < STOP_STEP)

    # Deciding again, as the next event or a restarted operator does, changes nothing and acts on nothing.
    again = status_decision.decide(stopped, now="2026-11-26T06:00:00Z")
    assert again.status == {} and again.stop is None and again.notify == []


@pytest.mark.parametrize("notify_step", NOTIFY_STEPS.values(), ids=NOTIFY_STEPS.keys())
@pytest.mark.parametrize("rules", SPEC_ORDERS.values(), ids=SPEC_ORDERS.keys())
def test_a_stop_after_an_operator_restart_replaces_the_notify_rule_the_status_already_names(
    rules: list[RuleSpec], notify_step: int
) -> None:
    # Before the restart: the notify rule's finding was decided alone; the status names it.
    notified = debugjob_object(
        rules, {"rank-00000": _report(notify_step, loss_not_decreasing=notify_step)}, phase=Phase.RUNNING
    )
    first = status_decision.decide(notified, now=NOW)
    assert [r.name for r in first.notify] == ["loss_not_decreasing"] and first.stop is None
    running = _applied(notified, first)
    assert running.status.phase == Phase.RUNNING and running.status.triggered_rule == "loss_not_decreasing"

    # The restarted operator finds the stop rule's report beside it: one stop, no second notification.
    restarted = running.model_copy(
        update={"status": running.status.model_copy(update={"reports": _both_found(notify_step)})}
    )
    decision = status_decision.decide(restarted, now="2026-11-26T05:30:00Z")
    assert decision.stop is not None and decision.stop.name == "exploding_tensor" and decision.notify == []
    assert decision.status["triggeredRule"] == "exploding_tensor"
    _assert_stopped_by_the_stop_rule(_applied(restarted, decision), notify_step=notify_step)


def test_a_stopped_status_that_names_a_notify_rule_is_read_as_stopped_by_its_stop_rule() -> None:
    # Written before triggeredRule meant the stop rule: Stopped, yet naming the notify rule that found issues first.
    dj = debugjob_object([NOTIFY, STOP], _both_found(640), phase=Phase.RUNNING)
    stopped = _applied(dj, status_decision.decide(dj, now=NOW))
    stale = stopped.model_copy(
        update={"status": stopped.status.model_copy(update={"triggered_rule": "loss_not_decreasing"})}
    )
    decision = status_decision.decide(stale, now="2026-11-26T06:00:00Z")
    assert decision.stop is None and decision.notify == [], "nothing is acted on again"
    assert decision.status == {"triggeredRule": "exploding_tensor"}


def test_a_running_job_names_the_earliest_finding_whichever_reached_the_operator_first() -> None:
    rules = [NOTIFY, RuleSpec(type="loss_spike", action=Action.NOTIFY), STOP]
    early = {"rank-00001": _report(50, loss_spike=30)}
    late = {"rank-00000": _report(60, loss_not_decreasing=45)}
    for arrivals in ([early, late], [late, early]):
        dj = debugjob_object(rules, {}, phase=Phase.RUNNING)
        for reports in arrivals:
            dj = dj.model_copy(
                update={"status": dj.status.model_copy(update={"reports": {**dj.status.reports, **reports}})}
            )
            dj = _applied(dj, status_decision.decide(dj, now=NOW))
        assert dj.status.phase == Phase.RUNNING and dj.status.triggered_rule == "loss_spike"
        assert _conditions(dj)["RuleTriggered"].message == (
            "loss_spike: loss_spike at 30; other rules with findings: loss_not_decreasing at step 45 on rank 0 (notify)"
        )


def test_no_rule_is_named_while_none_found_issues() -> None:
    dj = debugjob_object([NOTIFY, STOP], {}, phase=Phase.RUNNING)
    decision = status_decision.decide(dj, now=NOW)
    assert decision.triggered_rule is None and decision.status.get("triggeredRule") is None
    assert _conditions(_applied(dj, decision))["RuleTriggered"].message == "no rule found issues"
