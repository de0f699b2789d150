"""A DebugPolicy's status and verdicts, worked out from what the operator read: the selected workloads, their
pods, and what each injected evaluator reports (its `/findings` document, `api.findings`; from an evaluator too
old to serve it, its /metrics: the rule and the step only, and the finding says so).

Pure (no API calls, no clock): `attach.resync_policy` lists the objects, reads the evaluators and passes
them here. A workload is blind when one of its training pods (a pod with a rank, `pod_rank`) that has
not finished runs without the injected evaluator: it was admitted while the webhook was down or the
operator was upgrading, so nothing checks its training. Only the top-level workload is listed (a
JobSet's Jobs, a TrainJob's JobSet are not workloads of their own), because that is what a stop
suspends. A rule that an evaluator reports in IssuesFound is acted on by the policy's action for it
(`status_decision.rule_actions`: the spec's, or the default set's). Each rule's finding is its first over
the workload's evaluators (earliest step, then rank), as a DebugJob's rule status is over its ranks' reports.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence

import pydantic
from prometheus_client.parser import text_string_to_metric_families

from trainguard.api import debugjob, debugpolicy, findings
from trainguard.api.enums import Action, RuleCategory, RuleState
from trainguard.operator import inject, status_decision
from trainguard.operator.workloads import declaration

FINISHED_POD_PHASES = frozenset({"Succeeded", "Failed"})
REASON_BLIND = "PodsWithoutEvaluator"
REASON_SEEN = "AllPodsInjected"
REASON_VALID = "Valid"
REASON_INVALID = "InvalidSpec"
REASON_ATTACH_DISABLED = "AttachDisabled"


STEP_METRIC = "trainguard_training_step"
TRIGGERED_METRIC = "trainguard_rule_triggered"
WATCHED_METRIC = "trainguard_sidecar_stop_watched"
"""The evaluator's metrics the operator reads (`sidecar/metrics.py` names them; a test keeps the two equal)."""


@dataclasses.dataclass(frozen=True)
class Scrape:
    """What one pod's evaluator reported: its findings document, or (an older evaluator) its /metrics."""

    step: int | None = None
    triggered: frozenset[str] = frozenset()
    """Rules that found issues (IssuesFound is final, so a rule stays here)."""
    stop_watched: bool = False
    """The pod's trainer polls the stop file (`hook.should_stop()`): a stop can give it `cooperativeSeconds`."""
    findings: tuple[findings.RuleFinding, ...] = ()
    """Each triggered rule's finding (message, severity, rank, step, category), from the findings document."""
    undetailed: str | None = None
    """Why this evaluator's findings carry no details (None when they came from its findings document): its
    /metrics gave the rule and the step it reached only."""


def from_document(doc: findings.FindingsDocument) -> Scrape:
    """Return what an evaluator's findings document says."""
    found = tuple(f for f in doc.findings if f.state == RuleState.ISSUES_FOUND)
    return Scrape(
        step=doc.last_step,
        triggered=frozenset(f.rule for f in found),
        stop_watched=doc.stop_watched,
        findings=found,
    )


def parse_findings(body: bytes) -> findings.FindingsDocument:
    """Return the findings document in an evaluator's answer to `GET /findings`.

    Raises ValueError saying what is wrong: larger than `findings.MAX_BYTES`, not JSON, not a findings
    document, a version this operator does not read, or a field out of its bounds."""
    if len(body) > findings.MAX_BYTES:
        raise ValueError(f"a document larger than {findings.MAX_BYTES} bytes")
    try:
        raw = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"a body that is not JSON ({err})") from None
    if not isinstance(raw, dict) or raw.get("kind") != findings.KIND:
        raise ValueError(f"JSON that is not a {findings.KIND} document")
    if raw.get("version") != findings.VERSION:
        raise ValueError(
            f"a {findings.KIND} document of version {raw.get('version')!r}; this operator reads {findings.VERSION}"
        )
    try:
        return findings.FindingsDocument.model_validate(raw)
    except pydantic.ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"an invalid {findings.KIND} document ({where}: {first['msg']})") from None


def parse_metrics(text: str) -> Scrape:
    """Return the last step, the triggered rules and whether the trainer polls the stop file, from an evaluator's
    /metrics page (Prometheus text format).

    Raises ValueError for a page that is not in that format."""
    step: int | None = None
    triggered: set[str] = set()
    watched = False
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == STEP_METRIC:
                step = int(sample.value) if step is None else max(step, int(sample.value))
            elif sample.name == TRIGGERED_METRIC and sample.value >= 1 and sample.labels.get("rule"):
                triggered.add(sample.labels["rule"])
            elif sample.name == WATCHED_METRIC and sample.value >= 1:
                watched = True
    return Scrape(step=step, triggered=frozenset(triggered), stop_watched=watched)


@dataclasses.dataclass(frozen=True)
class Observed:
    """One selected workload, the pods its adapter's selector found, and its evaluators' scrapes."""

    adapter: declaration.WorkloadKind
    obj: declaration.Object
    pods: Sequence[declaration.Object]
    scrapes: Sequence[Scrape] = ()

    @property
    def uid(self) -> str:
        return str((self.obj.get("metadata") or {}).get("uid", ""))

    @property
    def name(self) -> str:
        return str((self.obj.get("metadata") or {}).get("name", ""))

    def triggered(self) -> list[str]:
        """The rules any of its evaluators found issues with, sorted."""
        return sorted(set().union(*(s.triggered for s in self.scrapes)) if self.scrapes else set())

    def findings(self) -> list[debugjob.RuleStatus]:
        """Each rule any of its evaluators found issues with, as a DebugJob's rule status: its first finding over
        the evaluators (earliest step, then rank; a detailed one before one without details at the same step),
        sorted by name. A rule only older evaluators report has the step they reached and a message saying why
        there are no details."""
        best: dict[str, tuple[tuple[int, int, int], debugjob.RuleStatus]] = {}
        for scrape in self.scrapes:
            detailed = {f.rule: f for f in scrape.findings}
            for rule in scrape.triggered:
                f = detailed.get(rule)
                if f is not None:
                    status = debugjob.RuleStatus(
                        name=rule, state=RuleState.ISSUES_FOUND, step=f.step, rank=f.rank, severity=f.severity,
                        message=f.message,
                    )  # fmt: skip
                else:
                    status = debugjob.RuleStatus(
                        name=rule, state=RuleState.ISSUES_FOUND, step=scrape.step,
                        message=f"no details: {scrape.undetailed or 'the evaluator sent none'}",
                    )  # fmt: skip
                key = (status.step if status.step is not None else 1 << 62, f is None, status.rank or 0)
                if rule not in best or key < best[rule][0]:
                    best[rule] = (key, status)
        return [best[name][1] for name in sorted(best)]

    def category(self, rule: str) -> RuleCategory | None:
        """The rule's category, as its evaluators' findings documents give it (None: none did)."""
        return next((f.category for s in self.scrapes for f in s.findings if f.rule == rule), None)

    def step(self) -> int | None:
        steps = [s.step for s in self.scrapes if s.step is not None]
        return max(steps) if steps else None

    def stop_watched(self) -> bool:
        """Whether a trainer of the workload polls the stop file (it can end by itself after a stop verdict)."""
        return any(s.stop_watched for s in self.scrapes)

    def running(self) -> bool:
        """Whether the workload is neither suspended nor finished (a stop still has something to suspend)."""
        state = self.adapter.state(self.obj)
        return not state.suspended and state.finished is None


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What to do about one workload: the stop rule (the first by name) and the notify rules that found issues."""

    stop: str | None
    notify: tuple[str, ...]


def verdict(observed: Observed, actions: Mapping[str, Action]) -> Verdict:
    """Return the policy's verdict on a workload: a triggered rule's action is the policy's for it (a rule the
    policy does not list only notifies); a workload already suspended or finished is not stopped again."""
    triggered = observed.triggered()
    stops = [r for r in triggered if actions.get(r) == Action.STOP]
    stop = stops[0] if stops and observed.running() else None
    notify = tuple(r for r in triggered if actions.get(r, Action.NOTIFY) == Action.NOTIFY)
    return Verdict(stop=stop, notify=notify)


def is_top_level(obj: declaration.Object, kinds: Iterable[declaration.WorkloadKind]) -> bool:
    """Whether no controller of an enabled kind owns the object (a JobSet's Job is not a workload of its own)."""
    ref = declaration.controller_ref(obj)
    return ref is None or not any(k.matches(ref.api_version, ref.kind) for k in kinds)


def phase_of(state: declaration.WorkloadState) -> str:
    if state.finished is not None:
        return "Succeeded" if state.finished.succeeded else "Failed"
    return "Suspended" if state.suspended else "Running"


def workload_status(observed: Observed) -> debugpolicy.WorkloadStatus:
    """Return one workload's entry: its phase, its first finding (rule, step, rank, severity, message), the pods
    running the evaluator, and whether any run without it."""
    adapter, obj = observed.adapter, observed.obj
    training = [
        p
        for p in observed.pods
        if (p.get("status") or {}).get("phase") not in FINISHED_POD_PHASES
        and adapter.pod_rank(p, obj) is not None
    ]
    seen = sum(1 for p in training if inject.is_injected(p))
    first = status_decision.first_finding(observed.findings())
    return debugpolicy.WorkloadStatus(
        kind=adapter.kind,
        name=observed.name,
        phase=phase_of(adapter.state(obj)),
        rule=first.name if first else None,
        step=observed.step(),
        finding_step=first.step if first else None,
        rank=first.rank if first else None,
        severity=first.severity if first else None,
        message=findings.cut(first.message) or None if first else None,
        ranks_seen=seen,
        blind=seen < len(training),
    )


def set_condition(
    conditions: list[debugpolicy.PolicyCondition],
    *,
    type: debugpolicy.PolicyConditionType,
    status: bool,
    reason: str,
    message: str,
    now: str,
    generation: int | None,
) -> list[debugpolicy.PolicyCondition]:
    """Return `conditions` with one condition set; lastTransitionTime moves only when status changes."""
    value = "True" if status else "False"
    return status_decision.upsert_condition(
        conditions, type=type, value=value, now=now,
        make=lambda since: debugpolicy.PolicyCondition(
            type=type, status=value, reason=reason, message=message, last_transition_time=since,
            observed_generation=generation,
        ),
    )  # fmt: skip


def summarize(
    observed: Iterable[Observed],
    conditions: list[debugpolicy.PolicyCondition],
    *,
    now: str,
    generation: int | None,
) -> debugpolicy.DebugPolicyStatus:
    """Return the status of a valid policy: its workloads (blind ones first, then by kind and name), the counts,
    and conditions Ready and Blind."""
    entries = sorted((workload_status(o) for o in observed), key=lambda w: (not w.blind, w.kind, w.name))
    blind = [w for w in entries if w.blind]
    conditions = set_condition(
        conditions,
        type=debugpolicy.PolicyConditionType.INVALID,
        status=False,
        reason=REASON_VALID,
        message="the spec is valid",
        now=now,
        generation=generation,
    )
    conditions = set_condition(
        conditions,
        type=debugpolicy.PolicyConditionType.READY,
        status=True,
        reason=REASON_VALID,
        message="the webhook injects the evaluator into new pods of the selected workloads",
        now=now,
        generation=generation,
    )
    names = ", ".join(f"{w.kind} {w.name}" for w in blind[:5]) + (" and more" if len(blind) > 5 else "")
    conditions = set_condition(
        conditions,
        type=debugpolicy.PolicyConditionType.BLIND,
        status=bool(blind),
        reason=REASON_BLIND if blind else REASON_SEEN,
        message=(
            f"pods of {names} run without the evaluator (created while the webhook was unavailable): their training "
            "is not checked; recreate the pods (or the workload) to inject it"
            if blind
            else "every running training pod of the selected workloads runs the evaluator"
        ),
        now=now,
        generation=generation,
    )
    return debugpolicy.DebugPolicyStatus(
        conditions=conditions,
        observed_generation=generation,
        workload_count=len(entries),
        blind_count=len(blind),
        workloads=entries[: debugpolicy.MAX_WORKLOADS_LISTED],
    )


def invalid(
    conditions: list[debugpolicy.PolicyCondition], message: str, *, now: str, generation: int | None
) -> list[debugpolicy.PolicyCondition]:
    """Return the conditions of a policy whose spec is invalid: Invalid with the reason, not Ready."""
    conditions = set_condition(
        conditions,
        type=debugpolicy.PolicyConditionType.INVALID,
        status=True,
        reason=REASON_INVALID,
        message=message,
        now=now,
        generation=generation,
    )
    return set_condition(
        conditions,
        type=debugpolicy.PolicyConditionType.READY,
        status=False,
        reason=REASON_INVALID,
        message="the spec is invalid (see condition Invalid); nothing is injected",
        now=now,
        generation=generation,
    )
