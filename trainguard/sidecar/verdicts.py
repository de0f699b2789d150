"""The verdict state machine: rule findings in, per-rule state transitions out. No I/O.

Each configured rule has one state over every followed rank (`status`: the first rank to trigger
a rule emits its transition) and one on each rank (`rank_status`, which the sidecar reports under
that rank's key): InProgress -> IssuesFound (final) / Error / NoIssuesFound. `Verdicts` turns
findings and rule exceptions into those transitions, each emitted once, counts what the metrics
show, keeps the first findings, and restores itself from a checkpoint document. The clock is
passed in; reading the run, calling the rules, the stop file and saving checkpoints are left to
`evaluator.Evaluator`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from trainguard.api.enums import Action, RuleState, Severity
from trainguard.rules.base import Finding
from trainguard.rules.step_view import StepView
from trainguard.sidecar import checkpoint as ckpt
from trainguard.sidecar.config import CompiledRule
from trainguard.sidecar.same_data import CHECK as SAME_DATA

MAX_FINDINGS_PER_RULE = ckpt.MAX_FINDINGS_PER_RULE


DATA_GAP = "data_gap"
"""The evaluator's own check, shown beside the rules: steps the store never got (the hook's END.json
`lost_steps`, a gap before a segment), that could not be read (a damaged segment or END), or that the
hook saw go by without counting them (blind since a step: an optimizer it does not know steps the
captured parameters). A warning finding, so no verdict says "no issues" over data that was never
looked at."""

OWN_CHECKS = (DATA_GAP, SAME_DATA)
"""The evaluator's own checks, shown beside the rules with no action: `data_gap`, and `same_data_on_ranks`
(`same_data.py`: the followed ranks train on the same batches, which no rule of one rank can see)."""

STORE_HINT = (
    "check the store's health (capacity, errors) and the hook's log; raise max_pending_bytes to ride out longer "
    "outages"
)
"""What to try for steps the store never got or that could not be read."""
BLIND_HINT = (
    "call hook.register_optimizer(optimizer) for every optimizer the script creates (a new one over the same "
    "parameters replaces the old one; GAN generator and discriminator are both registered)"
)
"""What to try when the hook went blind."""


NOT_CHECKED = "not checked"
"""How a rule that never got its data is told at the end (message prefix; `RuleStatus.checked` is False)."""


def not_checked_message(missing: str) -> str:
    """`not checked: no eval loss recorded` for a rule that never got `missing`."""
    return f"{NOT_CHECKED}: no {missing} recorded"


class ChecksNothing(Exception):
    """A rule whose `tensors` match nothing on a rank, made an Error by `strict` (reported through `on_error`)."""


@dataclass(frozen=True)
class Verdict:
    """A rule's state transition. `action` is STOP/NOTIFY only on a transition to IssuesFound."""

    rule: str
    action: Action
    state: RuleState
    step: int
    rank: int
    severity: Severity
    message: str
    finding: Finding | None
    time: float

    def to_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "action": self.action.value,
            "state": self.state.value,
            "step": self.step,
            "rank": self.rank,
            "severity": self.severity.value,
            "message": self.message,
            "tensor": self.finding.tensor if self.finding else None,
            "time": self.time,
        }


@dataclass(frozen=True)
class RuleStatus:
    """A rule's current state and the transition that set it (step, rank, message, time)."""

    state: RuleState
    action: Action
    severity: Severity
    step: int | None = None
    rank: int | None = None
    message: str = ""
    time: float | None = None
    checked: bool = True
    """False for a rule that ended without ever getting what it reads (its message says what was missing):
    "not checked", never "no issues"."""


@dataclass
class RuleCounters:
    """What the metrics show of one rule: evaluations, errors, findings by severity, the last trigger."""

    evaluations: int = 0
    errors: int = 0
    findings: dict[Severity, int] = field(default_factory=dict)
    last_trigger_time: float | None = None
    kept_findings: list[Finding] = field(default_factory=list)


class Verdicts:
    """Every configured rule's state, over all followed ranks and on each rank, and the transitions between them."""

    def __init__(self, compiled: Sequence[CompiledRule], *, clock: Callable[[], float]) -> None:
        self.compiled = list(compiled)
        self.clock = clock
        self.status = self.fresh()
        """Each rule's state over every followed rank (the first transition wins)."""
        self.rank_status: dict[int, dict[str, RuleStatus]] = {}
        self.counters = [RuleCounters() for _ in self.compiled]
        self.own_findings: list[Finding] = []
        """Findings of the evaluator's own checks (`OWN_CHECKS`; kept apart from the rules' counters)."""
        self.checks_nothing: dict[str, str] = {}
        """Rules whose `tensors` match nothing on some rank, with the message saying so."""
        self.stop_emitted: set[str] = set()
        """Rules whose STOP verdict was acted on (once per rule, also across restarts)."""
        self.stop_requested = False

    def fresh(self) -> dict[str, RuleStatus]:
        """Every rule InProgress, with its configured action and severity."""
        return {
            c.name: RuleStatus(state=RuleState.IN_PROGRESS, action=c.spec.action, severity=c.severity)
            for c in self.compiled
        }

    def on_rank(self, rank: int) -> dict[str, RuleStatus]:
        """The rule states of one followed rank (fresh ones the first time)."""
        return self.rank_status.setdefault(rank, self.fresh())

    def findings(self) -> list[Finding]:
        """Every finding kept so far (the first MAX_FINDINGS_PER_RULE per rule), by step and rank."""
        out = [f for c in self.counters for f in c.kept_findings] + self.own_findings
        return sorted(out, key=lambda f: (f.step, f.rank))

    def data_gap(self, rank: int, step: int, message: str, *, hint: str = STORE_HINT) -> list[Verdict]:
        """Record a `data_gap` finding (a warning: data the rules never saw); return its verdict when `data_gap`
        first turns IssuesFound. It sits beside the rules in the statuses, with no action."""
        return self.own_check(
            Finding(
                rule=DATA_GAP, severity=Severity.WARNING, step=step, rank=rank, message=message, hint=hint
            )
        )

    def own_check(self, finding: Finding) -> list[Verdict]:
        """Record a finding of one of the evaluator's own checks (`OWN_CHECKS`: `data_gap`, `same_data_on_ranks`);
        return its verdict when the check first turns IssuesFound. It sits beside the rules in the statuses,
        with no action."""
        name, step, rank, message = finding.rule, finding.step, finding.rank, finding.message
        if sum(1 for f in self.own_findings if f.rule == name) < MAX_FINDINGS_PER_RULE:
            self.own_findings.append(finding)
        now = self.clock()
        status = RuleStatus(
            state=RuleState.ISSUES_FOUND, action=Action.NONE, severity=finding.severity, step=step, rank=rank,
            message=message, time=now,
        )  # fmt: skip
        self.on_rank(rank).setdefault(name, status)
        if name in self.status:
            return []
        self.status[name] = status
        return [
            Verdict(
                rule=name, action=Action.NONE, state=RuleState.ISSUES_FOUND, step=step, rank=rank,
                severity=finding.severity, message=message, finding=finding, time=now,
            )
        ]  # fmt: skip

    def all_decided(self) -> bool:
        """Whether no rule is InProgress any more."""
        return all(s.state != RuleState.IN_PROGRESS for s in self.status.values())

    def count_evaluations(self, views: int) -> None:
        for c in self.counters:
            c.evaluations += views

    def on_findings(self, i: int, rank: int, found: list[Finding]) -> list[Verdict]:
        """Count and keep findings of rule `i` on the followed rank `rank`; return the rule's transition, if any."""
        c = self.compiled[i]
        counters = self.counters[i]
        out: list[Verdict] = []
        for f in found:
            counters.findings[f.severity] = counters.findings.get(f.severity, 0) + 1
            if len(counters.kept_findings) < MAX_FINDINGS_PER_RULE:
                counters.kept_findings.append(f)
            if f.severity.rank < Severity.WARNING.rank:
                continue
            counters.last_trigger_time = self.clock()
            message = f.message + (f" {f.hint}" if f.hint and f.hint not in f.message else "")
            on_rank = self.on_rank(rank)
            if on_rank[c.name].state != RuleState.ISSUES_FOUND:
                on_rank[c.name] = RuleStatus(
                    state=RuleState.ISSUES_FOUND, action=c.spec.action, severity=f.severity, step=f.step,
                    rank=rank, message=message, time=self.clock(),
                )  # fmt: skip
            if self.status[c.name].state != RuleState.ISSUES_FOUND:
                out.append(
                    self._transition(
                        c,
                        RuleState.ISSUES_FOUND,
                        step=f.step,
                        rank=f.rank,
                        severity=f.severity,
                        message=message,
                        finding=f,
                        action=c.spec.action,
                    )
                )
        return out

    def on_error(self, i: int, rank: int, view: StepView, err: Exception) -> Verdict | None:
        """Rule `i` raised on `view`: it goes to Error (unless it found issues); return the transition, if any."""
        c = self.compiled[i]
        self.counters[i].errors += 1
        message = (
            str(err)
            if isinstance(err, ChecksNothing)
            else f"{c.name} failed at step {view.step} on rank {view.rank}: {type(err).__name__}: {err}"
        )
        on_rank = self.on_rank(rank)
        if on_rank[c.name].state == RuleState.ERROR:
            on_rank[c.name] = dataclasses.replace(on_rank[c.name], message=message)
        elif on_rank[c.name].state != RuleState.ISSUES_FOUND:
            on_rank[c.name] = RuleStatus(
                state=RuleState.ERROR, action=c.spec.action, severity=on_rank[c.name].severity, step=view.step,
                rank=rank, message=message, time=self.clock(),
            )  # fmt: skip
        status = self.status[c.name]
        if status.state == RuleState.ISSUES_FOUND:
            return None
        if status.state == RuleState.ERROR:
            self.status[c.name] = dataclasses.replace(status, message=message)
            return None
        return self._transition(
            c, RuleState.ERROR, step=view.step, rank=view.rank, severity=status.severity, message=message,
            finding=None, action=Action.NONE,
        )  # fmt: skip

    def finish_rank(self, rank: int, last_step: int | None, *, unchecked: Mapping[str, str]) -> None:
        """One rank ended: its rules still InProgress there become NoIssuesFound on that rank, or not checked
        (`unchecked`: rule name to what it never got)."""
        statuses = self.on_rank(rank)
        step = last_step if last_step is not None else 0
        for name, status in statuses.items():
            if status.state == RuleState.IN_PROGRESS:
                statuses[name] = dataclasses.replace(
                    status,
                    state=RuleState.NO_ISSUES_FOUND,
                    step=step,
                    rank=rank,
                    severity=Severity.INFO,
                    message=not_checked_message(unchecked[name])
                    if name in unchecked
                    else f"{name}: no issues found up to step {step}",
                    time=self.clock(),
                    checked=name not in unchecked,
                )

    def finish(self, *, step: int, rank: int, unchecked: Mapping[str, str]) -> list[Verdict]:
        """The evaluation ended at `step`: rules still InProgress become NoIssuesFound, or not checked
        (`unchecked`: rule name to what it never got on any rank); return those transitions."""
        out: list[Verdict] = []
        for c in self.compiled:
            if self.status[c.name].state == RuleState.IN_PROGRESS:
                missing = unchecked.get(c.name)
                out.append(
                    self._transition(
                        c,
                        RuleState.NO_ISSUES_FOUND,
                        step=step,
                        rank=rank,
                        severity=Severity.INFO,
                        message=self.checks_nothing.get(c.name)
                        or (not_checked_message(missing) if missing else "")
                        or f"{c.name}: no issues found up to step {step}",
                        finding=None,
                        action=Action.NONE,
                        checked=missing is None and c.name not in self.checks_nothing,
                    )
                )
        return out

    def reopen_rank(self, rank: int) -> None:
        """A new attempt of `rank` is evaluated: its statuses go back to InProgress, except IssuesFound, which
        is final (the DebugJob keeps what an earlier attempt found, and its action is not taken twice)."""
        old = self.rank_status.get(rank, {})
        self.rank_status[rank] = {
            name: old[name] if name in old and old[name].state == RuleState.ISSUES_FOUND else fresh
            for name, fresh in self.fresh().items()
        }

    def take_stop(self, verdict: Verdict) -> bool:
        """Whether `verdict` is the first STOP of its rule: then a stop is requested (act on it once)."""
        if verdict.action != Action.STOP or verdict.rule in self.stop_emitted:
            return False
        self.stop_emitted.add(verdict.rule)
        self.stop_requested = True
        return True

    def _transition(
        self, c: CompiledRule, state: RuleState, *, step: int, rank: int, severity: Severity, message: str,
        finding: Finding | None, action: Action, checked: bool = True,
    ) -> Verdict:  # fmt: skip
        now = self.clock()
        self.status[c.name] = RuleStatus(
            state=state,
            action=c.spec.action,
            severity=severity,
            step=step,
            rank=rank,
            message=message,
            time=now,
            checked=checked,
        )
        return Verdict(
            rule=c.name, action=action, state=state, step=step, rank=rank, severity=severity, message=message,
            finding=finding, time=now,
        )  # fmt: skip

    # --- checkpoints ------------------------------------------------------------------------------
    def restore(self, saved: ckpt.EvaluatorState) -> None:
        """Take the statuses, kept findings and stop state of a checkpoint (rules no longer configured are left out)."""
        index = {c.name: i for i, c in enumerate(self.compiled)}
        for r, position in saved.ranks.items():
            # A checkpoint written before per-rank statuses were kept followed one rank: its statuses are that rank's.
            statuses = self.fresh()
            for name, doc in (position.statuses or saved.statuses).items():
                if name in statuses:
                    statuses[name] = self._status_from_doc(name, doc)
            self.rank_status[int(r)] = statuses
        for name, doc in saved.statuses.items():
            if name in OWN_CHECKS:
                self.status[name] = RuleStatus(
                    state=RuleState(doc.state), action=Action.NONE, severity=Severity(doc.severity or "warning"),
                    step=doc.step, rank=doc.rank, message=doc.message, time=doc.time,
                )  # fmt: skip
                continue
            if name not in index:
                continue  # a rule no longer configured
            self.status[name] = self._status_from_doc(name, doc)
            if doc.stop_emitted:
                self.stop_emitted.add(name)
            if doc.state == RuleState.ISSUES_FOUND.value:
                self.counters[index[name]].last_trigger_time = doc.time
        for d in saved.findings:
            i = index.get(str(d.get("rule")))
            if i is not None:
                self.counters[i].kept_findings.append(_finding_from_dict(d))
            elif d.get("rule") in OWN_CHECKS:
                self.own_findings.append(_finding_from_dict(d))
        self.stop_requested = saved.stop_requested

    def rank_docs(self, rank: int) -> dict[str, ckpt.StatusDoc]:
        """One rank's statuses as the checkpoint stores them."""
        return {name: _status_doc(s) for name, s in self.rank_status.get(rank, {}).items()}

    def status_docs(self) -> dict[str, ckpt.StatusDoc]:
        """The statuses over every followed rank as the checkpoint stores them (with whether a stop was acted on)."""
        return {
            name: _status_doc(s, stop_emitted=name in self.stop_emitted) for name, s in self.status.items()
        }

    def finding_docs(self) -> list[dict[str, object]]:
        return [f.to_dict() for c in self.counters for f in c.kept_findings] + [
            f.to_dict() for f in self.own_findings
        ]

    def _status_from_doc(self, name: str, doc: ckpt.StatusDoc) -> RuleStatus:
        c = next(c for c in self.compiled if c.name == name)
        return RuleStatus(
            state=RuleState(doc.state), action=c.spec.action, severity=Severity(doc.severity or "info"),
            step=doc.step, rank=doc.rank, message=doc.message, time=doc.time, checked=doc.checked,
        )  # fmt: skip


def _status_doc(s: RuleStatus, *, stop_emitted: bool = False) -> ckpt.StatusDoc:
    return ckpt.StatusDoc(
        state=s.state.value, step=s.step, rank=s.rank, message=s.message, time=s.time,
        severity=s.severity.value, stop_emitted=stop_emitted, checked=s.checked,
    )  # fmt: skip


def _finding_from_dict(d: dict[str, object]) -> Finding:
    return Finding(
        rule=str(d["rule"]),
        severity=Severity(str(d["severity"])),
        step=int(d["step"]),  # type: ignore[call-overload]
        message=str(d.get("message", "")),
        rank=int(d.get("rank", 0)),  # type: ignore[call-overload]
        tensor=None if d.get("tensor") is None else str(d["tensor"]),
        hint=str(d.get("hint", "")),
        value=None if d.get("value") is None else float(d["value"]),  # type: ignore[arg-type]
        threshold=None if d.get("threshold") is None else float(d["threshold"]),  # type: ignore[arg-type]
    )
