"""Decides a DebugJob's status: sidecar reports -> per-rule statuses, Job summary -> phase, conditions.

The Job summary (`status.job`) is what the workload's adapter reads of it (`workloads.declaration.WorkloadState`).

Called by the handlers (`decide_and_act`, and `reconcile` for the first phase) with the object just
received; `decide` returns what to write and which rule transitions need an action. No API calls
and no clock (`now` comes in), so every rule of the status contract is tested without a cluster.
The action of a rule is always the one in the spec (or, when the spec lists no rules, the default
set's, which is what the sidecars then run): whatever a pod claims is ignored. Terminal phases
(Stopped, Succeeded, Failed) never change, and a Stopped DebugJob names its stop rule wherever it
names a rule, whatever notify rule found issues too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

from trainguard.api import debugjob, default_rules
from trainguard.api.enums import Action, ConditionType, Phase, RuleState
from trainguard.api.rules_config import RuleSpec
from trainguard.operator.workloads import batch_job, declaration

TERMINAL_PHASES = frozenset({Phase.STOPPED, Phase.SUCCEEDED, Phase.FAILED})

_STATE_ORDER = {
    RuleState.NO_ISSUES_FOUND: 0,
    RuleState.IN_PROGRESS: 1,
    RuleState.ERROR: 2,
    RuleState.ISSUES_FOUND: 3,
}
"""Worse states win when ranks disagree: one rank with issues makes the rule's state IssuesFound."""

REASON_RULE_TRIGGERED = "RuleTriggered"
REASON_NO_ISSUES = "NoIssuesFound"
REASON_INVALID_SPEC = "InvalidSpec"


def rule_actions(rules: Iterable[RuleSpec]) -> dict[str, Action]:
    """Return the action per rule name of the rules that run: the spec's, or the default set's when it lists none.

    An empty `spec.rules` makes every sidecar run the default set (`trainguard.api.default_rules`),
    so its actions are the ones to act on (`exploding_tensor` stops). A reported rule the spec
    does not list only notifies, whatever the pod claims.
    """
    return {r.key: r.action for r in default_rules.effective_specs(list(rules))}


def aggregate_rules(
    reports: Mapping[str, debugjob.RankReport], rules: list[RuleSpec]
) -> list[debugjob.RuleStatus]:
    """Return one status per rule: configured rules first (InProgress until reported), then reported extras."""
    actions = rule_actions(rules)
    best: dict[str, debugjob.RuleStatus] = {}
    for key in sorted(reports):
        rank = debugjob.rank_of_report_key(key)
        report = reports[key]
        for entry in report.rules:
            candidate = debugjob.RuleStatus(
                name=entry.name,
                state=entry.state,
                action=actions.get(entry.name, Action.NOTIFY),
                step=entry.step,
                rank=rank,
                severity=entry.severity,
                message=entry.message,
                time=entry.time or report.time,
            )
            current = best.get(entry.name)
            if current is None or _worse(candidate, current):
                best[entry.name] = candidate
    ordered = [
        best.get(name) or debugjob.RuleStatus(name=name, state=RuleState.IN_PROGRESS, action=action)
        for name, action in actions.items()
    ]
    ordered += [status for name, status in best.items() if name not in actions]
    return ordered


def _worse(a: debugjob.RuleStatus, b: debugjob.RuleStatus) -> bool:
    """Whether `a` should replace `b`: a worse state, or for the same state the earlier finding."""
    if _STATE_ORDER[a.state] != _STATE_ORDER[b.state]:
        return _STATE_ORDER[a.state] > _STATE_ORDER[b.state]
    if a.state == RuleState.ISSUES_FOUND:
        return _step_order(a) < _step_order(b)
    return (a.step or -1) > (b.step or -1)


def last_step(reports: Mapping[str, debugjob.RankReport]) -> int | None:
    """Return the highest step any rank has evaluated."""
    steps = [r.last_step for r in reports.values() if r.last_step is not None]
    return max(steps) if steps else None


def new_issues(old: list[debugjob.RuleStatus], new: list[debugjob.RuleStatus]) -> list[debugjob.RuleStatus]:
    """Return the rules that moved to IssuesFound since `old` (each transition once)."""
    before = {r.name: r.state for r in old}
    return [
        r for r in new if r.state == RuleState.ISSUES_FOUND and before.get(r.name) != RuleState.ISSUES_FOUND
    ]


REASON_JOB_DELETED = "JobDeleted"


def summarize_job(
    job: Mapping[str, Any], *, deleted: bool = False, workload: declaration.WorkloadKind = batch_job.KIND
) -> debugjob.JobSummary:
    """Return the parts of a workload's spec and status that drive the DebugJob's phase, as its adapter reads them.

    The outcome counts as soon as the workload's controller decided it (for a Job: FailureTarget or
    SuccessCriteriaMet, before Failed or Complete), else the phase would read Pending while the last
    pods wind down. A workload deleted before it finished counts as failed (reason JobDeleted)."""
    state = workload.state(job)
    outcome = state.finished
    if deleted and outcome is None:
        outcome = declaration.Outcome(
            succeeded=False,
            reason=REASON_JOB_DELETED,
            message=f"the {workload.kind} was deleted before it finished",
        )
    pods = state.pods or declaration.PodCounts()
    return debugjob.JobSummary(
        active=pods.active,
        terminating=pods.terminating,
        ready=pods.ready,
        succeeded=pods.succeeded,
        failed=pods.failed,
        suspended=state.suspended,
        complete=outcome is not None and outcome.succeeded,
        failed_condition=outcome is not None and not outcome.succeeded,
        deleted=deleted and state.finished is None,
        reason=outcome.reason if outcome else "",
        message=outcome.message if outcome else "",
        start_time=state.start_time,
        completion_time=state.completion_time,
    )


def job_phase(job: debugjob.JobSummary | None, *, current: Phase | None = None) -> Phase:
    """Return the phase the Job implies (never Stopped: only a rule stops a DebugJob).

    Running needs a ready pod, not only an active one: the Job counts pods that wait for a node or
    an image as active, and a DebugJob whose image cannot be pulled is not running. Once Running
    (`current`), active pods keep it Running: as the trainers finish, their pods are no longer
    ready but still active until their sidecars have stopped.
    """
    if job is None:
        return Phase.PENDING
    if job.failed_condition:
        return Phase.FAILED
    if job.complete:
        return Phase.SUCCEEDED
    if job.active > 0 and (job.ready > 0 or current == Phase.RUNNING) and not job.suspended:
        return Phase.RUNNING
    return Phase.PENDING


class Conditioned(Protocol):
    """A metav1.Condition-shaped model: a DebugJob's or a DebugPolicy's."""

    type: Any
    status: str
    last_transition_time: str | None


_C = TypeVar("_C", bound=Conditioned)


def upsert_condition(
    conditions: list[_C], *, type: Any, value: str, now: str, make: Callable[[str], _C]
) -> list[_C]:
    """Return `conditions` with the one of `type` replaced by (or appended as) `make(lastTransitionTime)`;
    lastTransitionTime moves only when the status changes to `value`."""
    previous = next((c for c in conditions if c.type == type), None)
    kept = previous.last_transition_time if previous is not None and previous.status == value else None
    condition = make(kept or now)
    if previous is None:
        return [*conditions, condition]
    return [condition if c.type == type else c for c in conditions]


def set_condition(
    conditions: list[debugjob.Condition],
    *,
    type: ConditionType,
    status: bool,
    reason: str,
    message: str,
    now: str,
    generation: int | None,
) -> list[debugjob.Condition]:
    """Return `conditions` with one condition set; lastTransitionTime moves only when status changes."""
    value = "True" if status else "False"
    return upsert_condition(
        conditions, type=type, value=value, now=now,
        make=lambda since: debugjob.Condition(
            type=type, status=value, reason=reason, message=message, last_transition_time=since,
            observed_generation=generation,
        ),
    )  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Decision:
    """What one reconciliation of a DebugJob's status decided."""

    status: dict[str, Any]
    """Status fields to merge-patch (camelCase, JSON-ready); empty when nothing changed."""
    notify: list[debugjob.RuleStatus]
    """Rules that just moved to IssuesFound and whose spec action is notify."""
    stop: debugjob.RuleStatus | None
    """The first rule that just moved to IssuesFound with spec action stop, if any (and not yet stopped)."""
    earlier_sign: debugjob.RuleStatus | None
    """For `stop`: the rule that found issues first, at an earlier step, if another did (`earlier_sign`)."""
    phase: Phase
    entered_terminal: bool
    """The phase became terminal in this decision (write END markers, record completion time)."""
    triggered_rule: str | None
    """The rule `status.triggeredRule` names after this decision (`triggered_rule`): a Stopped one's stop rule."""


def decide(dj: debugjob.DebugJob, *, now: str) -> Decision:
    """Compute the DebugJob's next status and the actions its reports call for."""
    spec, status = dj.spec, dj.status
    generation = dj.metadata.get("generation")
    rules = aggregate_rules(status.reports, list(spec.rules))
    transitions = new_issues(status.rules, rules)
    current = status.phase or Phase.PENDING
    stop = None
    if current not in TERMINAL_PHASES:
        # Level-based as well: a stop rule with issues stops the job even when the stored `rules` (which
        # a pod could have written) already claim IssuesFound and so hide the transition.
        stop = next((r for r in transitions if r.action == Action.STOP), None) or next(
            (r for r in rules if r.action == Action.STOP and r.state == RuleState.ISSUES_FOUND), None
        )
    notify = [r for r in transitions if r.action == Action.NOTIFY]

    if current in TERMINAL_PHASES:
        phase = current
    elif stop is not None:
        phase = Phase.STOPPED
    else:
        phase = job_phase(status.job, current=current)
    entered_terminal = phase in TERMINAL_PHASES and current not in TERMINAL_PHASES

    first = first_finding(rules)
    named = triggered_rule(rules, phase=phase, stop=stop, stored=status.triggered_rule)
    stopped_by = named if phase == Phase.STOPPED else None
    conditions = list(status.conditions)
    conditions = set_condition(
        conditions,
        type=ConditionType.RUNNING,
        status=phase == Phase.RUNNING,
        reason=phase.value,
        message=_phase_message(phase, status.job, stopped_by),
        now=now,
        generation=generation,
    )
    conditions = set_condition(
        conditions,
        type=ConditionType.RULE_TRIGGERED,
        status=first is not None,
        reason=REASON_RULE_TRIGGERED if first else REASON_NO_ISSUES,
        message=_findings_message(rules, named),
        now=now,
        generation=generation,
    )
    sign = earlier_sign(rules, stop) if stop is not None else None
    if stop is not None:
        wait = spec.actions.stop.cooperative_seconds
        if wait and any(r.stop_watched for r in status.reports.values()):
            how = f"the trainer polls the stop file: the Job is suspended in {wait} s unless it exits first"
        else:
            how = "the Job was suspended"
        message = f"rule {stop.name} found issues at step {stop.step} on rank {stop.rank}; {how}"
        if sign is not None:
            message += (
                f"; earlier sign: rule {sign.name} at step {sign.step} on rank {sign.rank}: {sign.message}"
            )
        conditions = set_condition(
            conditions,
            type=ConditionType.STOPPED,
            status=True,
            reason=REASON_RULE_TRIGGERED,
            message=message,
            now=now,
            generation=generation,
        )
    for cond_type, cond_phase in (
        (ConditionType.SUCCEEDED, Phase.SUCCEEDED),
        (ConditionType.FAILED, Phase.FAILED),
    ):
        if phase == cond_phase and entered_terminal:
            job = status.job or debugjob.JobSummary()
            conditions = set_condition(
                conditions,
                type=cond_type,
                status=True,
                reason=job.reason or cond_phase.value,
                message=job.message,
                now=now,
                generation=generation,
            )

    new_status: dict[str, Any] = {
        "phase": phase.value,
        "conditions": [c.model_dump(mode="json", by_alias=True) for c in conditions],
        "rules": [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in rules],
        "triggeredRule": named,
        "lastStep": last_step(status.reports),
        "observedGeneration": generation,
    }
    if status.job is not None and status.job.start_time and not status.start_time:
        new_status["startTime"] = status.job.start_time
    if entered_terminal:
        new_status["completionTime"] = now
    old_status = dj.status.model_dump(mode="json", by_alias=True)
    old_status["rules"] = [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in status.rules]
    patch = {k: v for k, v in new_status.items() if old_status.get(k) != v}
    return Decision(
        status=patch,
        notify=notify,
        stop=stop,
        earlier_sign=sign,
        phase=phase,
        entered_terminal=entered_terminal,
        triggered_rule=named,
    )


def first_finding(rules: list[debugjob.RuleStatus]) -> debugjob.RuleStatus | None:
    """Return the rule whose finding came at the earliest step (ties: the first in `rules`), or None without one."""
    return min((r for r in rules if r.state == RuleState.ISSUES_FOUND), key=_step_order, default=None)


def _step_order(rule: debugjob.RuleStatus) -> int:
    """Sort key of findings by step; one without a step comes last."""
    return rule.step if rule.step is not None else 1 << 62


def triggered_rule(
    rules: list[debugjob.RuleStatus], *, phase: Phase, stop: debugjob.RuleStatus | None, stored: str | None
) -> str | None:
    """Return the rule `status.triggeredRule` names: for a Stopped DebugJob the rule that stopped it, else the
    first finding (`first_finding`), whatever its action; None while no rule found issues.

    The stop rule is `stop` in the decision that stops the job, whatever notify rule found issues before
    or in the same decision; later it is the one `stored`, kept as long as it names a stop rule with issues
    (a status written when the name meant the first finding gets the first stop rule with issues instead).
    So the printer column, the Stopped condition, its Event and its webhook all name the same rule.
    """
    if stop is not None:
        return stop.name
    if phase != Phase.STOPPED:
        first = first_finding(rules)
        return first.name if first else None
    stoppers = [r.name for r in rules if r.action == Action.STOP and r.state == RuleState.ISSUES_FOUND]
    if stored in stoppers or not stoppers:
        return stored
    return stoppers[0]


def _findings_message(rules: list[debugjob.RuleStatus], named: str | None) -> str:
    """The RuleTriggered condition's message: the named rule's finding first, then the other rules with findings."""
    found = sorted((r for r in rules if r.state == RuleState.ISSUES_FOUND), key=_step_order)
    if not found:
        return "no rule found issues"
    head = next((r for r in found if r.name == named), found[0])
    message = f"{head.name}: {head.message}"
    others = [
        f"{r.name} at step {r.step} on rank {r.rank} ({(r.action or Action.NOTIFY).value})"
        for r in found
        if r is not head
    ]
    if others:
        message += "; other rules with findings: " + ", ".join(others)
    return message


def earlier_sign(rules: list[debugjob.RuleStatus], stop: debugjob.RuleStatus) -> debugjob.RuleStatus | None:
    """The rule that found issues first, at a step before the stopping rule's, if another did: often the cause
    of which the stop is a consequence (an overshooting learning rate before the NaN)."""
    if stop.step is None:
        return None
    step = stop.step
    return first_finding([r for r in rules if r.name != stop.name and r.step is not None and r.step < step])


def _phase_message(phase: Phase, job: debugjob.JobSummary | None, stopped_by: str | None) -> str:
    if stopped_by is not None:
        return f"stopped by rule {stopped_by}"
    if phase == Phase.RUNNING and job is not None:
        return f"{job.active} pods active, {job.ready} ready"
    if job is not None and job.message:
        return job.message
    return f"phase {phase.value}"
