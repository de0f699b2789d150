"""Verdicts as text: one line per verdict while CMD runs, and the end-of-run table of every rule.

Used by `trainguard run` (through `supervise`) and `trainguard evaluate`; the rows come from
`Evaluator.rule_status` as `outcome.rule_status_dict` spells them. Pure functions of their input:
writing them to stderr is left to the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainguard.api.enums import RuleState, Severity
from trainguard.local.outcome import plain, rule_status_dict
from trainguard.local.progress import WIDTH, wrap
from trainguard.sidecar.verdicts import NOT_CHECKED, RuleStatus, Verdict


def describe_verdict(v: Verdict) -> str:
    """One line: `step 30 rank 0: exploding_tensor (critical, stop): <message>`."""
    return f"step {v.step} rank {v.rank}: {v.rule} ({plain(v.severity)}, {plain(v.action)}): {v.message}"


def _importance(status: Mapping[str, Any]) -> int:
    """Sort key of a verdict row: what needs attention first (critical, warning, error, still open, quiet)."""
    state, severity = status["state"], status["severity"]
    if state == RuleState.ISSUES_FOUND.value:
        return 0 if severity == Severity.CRITICAL.value else 1
    return {RuleState.ERROR.value: 2, RuleState.IN_PROGRESS.value: 3}.get(str(state), 4)


def verdict_table(rule_status: Mapping[str, RuleStatus], *, width: int = 120, quiet: bool = False) -> str:
    """Return the end-of-run table: one row per rule with state, action, severity, step, message.

    Rows that need attention come first: issues (critical, then warning), errors, rules still in progress,
    then the quiet ones in their configured order. With `quiet` the quiet rules are one closing line.
    """
    header = ("RULE", "STATE", "ACTION", "SEVERITY", "STEP", "MESSAGE")
    ordered = sorted(
        ((name, rule_status_dict(st)) for name, st in rule_status.items()),
        key=lambda item: _importance(item[1]),
    )  # sorted() keeps the configured order within each group
    quiet_names = [name for name, d in ordered if _importance(d) == 4]
    rows = []
    for name, d in ordered:
        if quiet and _importance(d) == 4:
            continue
        triggered = d["state"] == RuleState.ISSUES_FOUND.value
        rows.append(
            (
                name,
                "NotChecked" if not d["checked"] else str(d["state"] or "-"),  # not "no issues": no data
                str(d["action"] or "-"),
                str(d["severity"] or "-") if triggered else "-",
                "-" if d["step"] is None else str(d["step"]),
                str(d["message"] or ""),
            )
        )
    lines = []
    if rows:
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
        for r in [header, *rows]:
            left = "  ".join(
                c.ljust(w) if i != 4 else c.rjust(w) for i, (c, w) in enumerate(zip(r[:5], widths))
            )
            room = max(width - len(left) - 2, 20)
            msg = r[5] if len(r[5]) <= room else r[5][: room - 3] + "..."
            lines.append((left + "  " + msg).rstrip())
    if quiet and quiet_names:
        lines.append(quiet_line({name: rule_status[name] for name in quiet_names}))
    return "\n".join(lines)


def quiet_line(quiet: Mapping[str, RuleStatus]) -> str:
    """`14 rules checked, no issues; 2 not checked: overfit (no eval loss recorded), ...`: the rules that
    found nothing, told apart from those that never got what they read."""
    unchecked = {name: st.message for name, st in quiet.items() if not st.checked}
    checked = len(quiet) - len(unchecked)
    parts = []
    if checked:
        parts.append(f"{checked} rule{'s' if checked != 1 else ''} checked, no issues")
    if unchecked:
        what = ", ".join(
            f"{name} ({msg.removeprefix(NOT_CHECKED + ': ')})" for name, msg in unchecked.items()
        )
        parts.append(f"{len(unchecked)} not checked: {what}")
    return "; ".join(parts)


def rules_summary(rule_status: Mapping[str, RuleStatus], *, prefix: str = "", width: int = WIDTH) -> str:
    """The end of a run's rules in `width` columns: each rule that found something, erred or is still open in
    full (most important first), then one line for the quiet ones (`quiet_line`)."""
    ordered = sorted(rule_status.items(), key=lambda item: _importance(rule_status_dict(item[1])))
    lines = []
    quiet = {}
    for name, st in ordered:
        d = rule_status_dict(st)
        if _importance(d) == 4:
            quiet[name] = st
            continue
        what = (
            f"{d['severity']}, {d['action']}"
            if d["state"] == RuleState.ISSUES_FOUND.value
            else str(d["state"])
        )
        at = "" if d["step"] is None else f" at step {d['step']}"
        lines.append(wrap(f"{name} ({what}){at}: {d['message'] or ''}", prefix=prefix, width=width))
    if quiet:
        lines.append(wrap(quiet_line(quiet), prefix=prefix, width=width))
    return "\n".join(lines)
