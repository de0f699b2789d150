"""Status logic: reports aggregate to the worst state per rule, actions come from the spec, phases stick."""

from __future__ import annotations

from typing import Any

from tests.operator.conftest import debugjob_object
from trainguard.api import debugjob as api
from trainguard.api.enums import Action, ConditionType, Phase, RuleState
from trainguard.api.rules_config import RuleSpec
from trainguard.operator import status_decision

NOW = "2026-11-22T05:00:00Z"
RULES = [
    RuleSpec(type="exploding_tensor", action=Action.STOP),
    RuleSpec(type="loss_spike", action=Action.NOTIFY),
]


def _report(step: int, **states: Any) -> api.RankReport:
    return api.RankReport(
        last_step=step,
        rules=[
            api.RankRuleReport(name=n, state=s[0], step=s[1], message=f"{n} at {s[1]}")
            for n, s in states.items()
        ],
    )


def _dj(
    reports: dict[str, api.RankReport], *, phase: Phase | None = Phase.RUNNING, **status_fields: Any
) -> api.DebugJob:
    return debugjob_object(RULES, reports, phase=phase, **status_fields)


def test_worst_state_wins_and_the_earliest_finding_is_kept() -> None:
    reports = {
        "rank-00000": _report(90, exploding_tensor=(RuleState.NO_ISSUES_FOUND, 90)),
        "rank-00001": _report(80, exploding_tensor=(RuleState.ISSUES_FOUND, 70)),
        "rank-00002": _report(85, exploding_tensor=(RuleState.ISSUES_FOUND, 60)),
    }
    (exploding, spike) = status_decision.aggregate_rules(reports, RULES)
    assert exploding.state == RuleState.ISSUES_FOUND and exploding.step == 60 and exploding.rank == 2
    assert exploding.action == Action.STOP
    assert spike.state == RuleState.IN_PROGRESS, "a configured rule nobody reported yet is in progress"
    assert status_decision.last_step(reports) == 90


def test_error_outranks_in_progress_and_no_issues() -> None:
    reports = {
        "rank-00000": _report(5, loss_spike=(RuleState.NO_ISSUES_FOUND, 5)),
        "rank-00001": _report(5, loss_spike=(RuleState.ERROR, 5)),
    }
    assert status_decision.aggregate_rules(reports, RULES)[1].state == RuleState.ERROR


def test_unconfigured_rules_only_notify_whatever_the_pod_claims() -> None:
    raw = {
        "lastStep": 3,
        "rules": [{"name": "dead_relu", "state": "IssuesFound", "action": "stop", "step": 3}],
    }
    reports = {"rank-00000": api.RankReport.model_validate(raw)}
    extra = status_decision.aggregate_rules(reports, RULES)[-1]
    assert extra.name == "dead_relu" and extra.action == Action.NOTIFY


def test_stop_rule_transition_stops_once_and_sets_conditions() -> None:
    dj = _dj({"rank-00001": _report(50, exploding_tensor=(RuleState.ISSUES_FOUND, 40))})
    decision = status_decision.decide(dj, now=NOW)
    assert decision.stop is not None and decision.stop.name == "exploding_tensor"
    assert decision.phase == Phase.STOPPED and decision.entered_terminal
    s = decision.status
    assert s["phase"] == "Stopped" and s["triggeredRule"] == "exploding_tensor" and s["lastStep"] == 50
    conditions = {c["type"]: c for c in s["conditions"]}
    assert conditions["Stopped"]["status"] == "True" and conditions["Stopped"]["reason"] == "RuleTriggered"
    assert conditions["RuleTriggered"]["status"] == "True" and conditions["Running"]["status"] == "False"
    assert all(c["observedGeneration"] == 2 for c in s["conditions"])
    assert s["completionTime"] == NOW

    # Applying what was decided and deciding again changes nothing and acts on nothing.
    again = api.DebugJob.model_validate({**dj.model_dump(by_alias=True), "status": {
        **dj.status.model_dump(by_alias=True), **s}})  # fmt: skip
    second = status_decision.decide(again, now="2026-11-22T06:00:00Z")
    assert second.stop is None and second.notify == [] and second.status == {}


def test_the_stopped_condition_names_the_earlier_sign_of_another_rule() -> None:
    reports = {
        "rank-00000": _report(50, loss_spike=(RuleState.ISSUES_FOUND, 25)),
        "rank-00001": _report(50, exploding_tensor=(RuleState.ISSUES_FOUND, 40)),
    }
    decision = status_decision.decide(_dj(reports), now=NOW)
    assert decision.earlier_sign is not None and decision.earlier_sign.name == "loss_spike"
    stopped = {c["type"]: c for c in decision.status["conditions"]}["Stopped"]
    assert stopped["message"] == (
        "rule exploding_tensor found issues at step 40 on rank 1; the Job was suspended; "
        "earlier sign: rule loss_spike at step 25 on rank 0: loss_spike at 25"
    )
    late = {
        "rank-00000": _report(
            50, loss_spike=(RuleState.ISSUES_FOUND, 45), exploding_tensor=(RuleState.ISSUES_FOUND, 40)
        )
    }
    stopped = {c["type"]: c for c in status_decision.decide(_dj(late), now=NOW).status["conditions"]}[
        "Stopped"
    ]
    assert "earlier sign" not in stopped["message"]  # a finding after the stop is no sign of it


def test_notify_rule_transition_notifies_and_keeps_running() -> None:
    dj = _dj({"rank-00000": _report(10, loss_spike=(RuleState.ISSUES_FOUND, 10))})
    decision = status_decision.decide(dj, now=NOW)
    assert decision.stop is None and [r.name for r in decision.notify] == ["loss_spike"]
    assert decision.phase == Phase.RUNNING


def test_terminal_phases_never_change() -> None:
    for phase in (Phase.STOPPED, Phase.SUCCEEDED, Phase.FAILED):
        dj = _dj({"rank-00000": _report(10, exploding_tensor=(RuleState.ISSUES_FOUND, 10))}, phase=phase)
        decision = status_decision.decide(dj, now=NOW)
        assert decision.phase == phase and decision.stop is None


def test_phase_follows_the_job() -> None:
    assert status_decision.job_phase(None) == Phase.PENDING
    assert status_decision.job_phase(api.JobSummary(active=0)) == Phase.PENDING
    assert status_decision.job_phase(api.JobSummary(active=3, ready=1)) == Phase.RUNNING
    assert status_decision.job_phase(api.JobSummary(active=3, ready=0)) == Phase.PENDING, (
        "pods waiting for a node or image"
    )
    assert status_decision.job_phase(api.JobSummary(active=3, ready=3, suspended=True)) == Phase.PENDING
    finishing = api.JobSummary(active=2, ready=0)
    assert status_decision.job_phase(finishing, current=Phase.RUNNING) == Phase.RUNNING, (
        "trainers done, sidecars stopping"
    )
    assert status_decision.job_phase(api.JobSummary(complete=True)) == Phase.SUCCEEDED
    assert status_decision.job_phase(api.JobSummary(failed_condition=True, complete=False)) == Phase.FAILED


def test_job_summary_reads_conditions_like_the_job_controller_writes_them() -> None:
    job = {
        "spec": {"suspend": False},
        "status": {
            "failed": 1,
            "conditions": [
                {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "m"}
            ],
        },
    }
    summary = status_decision.summarize_job(job)
    assert summary.failed_condition and not summary.complete and summary.reason == "BackoffLimitExceeded"
    assert status_decision.job_phase(summary) == Phase.FAILED


def test_the_interim_conditions_of_kubernetes_1_31_decide_the_phase_while_the_pods_wind_down() -> None:
    def job(kind: str, **counts: int) -> dict[str, Any]:
        condition = {"type": kind, "status": "True", "reason": "R", "message": "m"}
        return {"spec": {}, "status": {"conditions": [condition], **counts}}

    done = status_decision.summarize_job(job("SuccessCriteriaMet", succeeded=2, terminating=1))
    assert done.complete and done.terminating == 1 and status_decision.job_phase(done) == Phase.SUCCEEDED
    failing = status_decision.summarize_job(job("FailureTarget", failed=1, terminating=1))
    assert (
        failing.failed_condition
        and failing.reason == "R"
        and status_decision.job_phase(failing) == Phase.FAILED
    )
    assert not status_decision.summarize_job(job("SuccessCriteriaMet"), deleted=True).deleted


def test_condition_transition_time_moves_only_when_status_changes() -> None:
    first = status_decision.set_condition([], type=ConditionType.RUNNING, status=True, reason="Running", message="a",
                                 now="t1", generation=1)  # fmt: skip
    same = status_decision.set_condition(first, type=ConditionType.RUNNING, status=True, reason="Running", message="b",
                                now="t2", generation=2)  # fmt: skip
    flipped = status_decision.set_condition(same, type=ConditionType.RUNNING, status=False, reason="Succeeded", message="c",
                                   now="t3", generation=2)  # fmt: skip
    assert [c.last_transition_time for c in (first[0], same[0], flipped[0])] == ["t1", "t1", "t3"]
    assert same[0].message == "b" and same[0].observed_generation == 2


def test_a_job_deleted_before_it_finished_fails_but_a_finished_one_does_not() -> None:
    running = {"spec": {}, "status": {"active": 2}}
    gone = status_decision.summarize_job(running, deleted=True)
    assert gone.deleted and status_decision.job_phase(gone) == Phase.FAILED and gone.reason == "JobDeleted"
    done = {"spec": {}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    assert not status_decision.summarize_job(done, deleted=True).deleted


def _dj_without_rules(reports: dict[str, api.RankReport]) -> api.DebugJob:
    return debugjob_object([], reports, phase=Phase.RUNNING)


def test_without_spec_rules_the_default_set_acts_as_the_sidecar_runs_it() -> None:
    # The sidecar runs the default set when spec.rules is empty, and writes the stop file on
    # exploding_tensor; the operator must suspend the whole Job then, not only notify.
    dj = _dj_without_rules({"rank-00001": _report(50, exploding_tensor=(RuleState.ISSUES_FOUND, 40))})
    decision = status_decision.decide(dj, now=NOW)
    assert decision.stop is not None and decision.stop.name == "exploding_tensor"
    assert decision.phase == Phase.STOPPED and decision.notify == []
    listed = {r["name"]: (r["state"], r["action"]) for r in decision.status["rules"]}
    assert listed["exploding_tensor"] == ("IssuesFound", "stop")
    assert listed["loss_spike"] == ("InProgress", "notify"), "every default rule is listed before any report"


def test_without_spec_rules_a_notify_rule_of_the_default_set_only_notifies() -> None:
    dj = _dj_without_rules({"rank-00000": _report(9, dead_relu=(RuleState.ISSUES_FOUND, 9))})
    decision = status_decision.decide(dj, now=NOW)
    assert decision.stop is None and [r.name for r in decision.notify] == ["dead_relu"]
    assert decision.phase == Phase.RUNNING
