"""What happened to a supervised command: the `Outcome`, its exit status and its `--json` document.

Built once by `supervise.Supervisor` when CMD has exited, read by `trainguard run` (summary, report,
`--json`) and by `trainguard evaluate` (`finding_dict`, `rule_status_dict`). Holds no process or store
handles: the verdict table and the progress lines are printed by `verdict_table` and `progress`.
Invariant: `exit_code` is CMD's own status unless a rule stopped it (`EXIT_STOPPED`) or it ended well
but nothing was checked (`EXIT_NOTHING_CHECKED`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainguard.api.enums import RunEnd, Severity
from trainguard.local.process import signal_name
from trainguard.rules.base import Finding
from trainguard.rules.optimizer_not_stepping import OptimizerNotStepping
from trainguard.sidecar.verdicts import RuleStatus, Verdict
from trainguard.store import run_format

EXIT_STOPPED = 3
"""Exit status of `trainguard run` when a rule stopped the command (CMD's own status otherwise)."""
EXIT_NOTHING_CHECKED = 4
"""Exit status of `trainguard run` when the command exited 0 but nothing was evaluated: it wrote no
TrainGuard data (no hook or Recorder was created), or no saved step (no optimizer registered)."""


def exit_status(returncode: int) -> int:
    """Return a shell-style exit status: the code itself, or 128+N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def plain(x: object) -> object:
    """Return an enum member's value, anything else as it is (JSON and table cells)."""
    return getattr(x, "value", x)


def finding_dict(finding: Finding) -> dict[str, Any]:
    """Return a finding as JSON-able values: the contract's keys first, NaN/Inf numbers as None."""
    d = finding.to_dict()
    out: dict[str, Any] = {k: d.get(k) for k in ("rule", "severity", "step", "rank", "tensor", "message")}
    for k, v in d.items():
        if k not in out:
            out[k] = None if isinstance(v, float) and not math.isfinite(v) else v
    return out


def rule_status_dict(status: RuleStatus) -> dict[str, Any]:
    """Return one `Evaluator.rule_status` entry as plain JSON values; `checked` is False for a rule that never
    got what it reads (its state stays NoIssuesFound, as SageMaker's vocabulary has no other)."""
    d = {
        k: plain(getattr(status, k, None)) for k in ("state", "action", "severity", "step", "message", "time")
    }
    d["checked"] = bool(getattr(status, "checked", True))
    return d


@dataclass(frozen=True)
class Outcome:
    """What happened to a supervised command."""

    command: tuple[str, ...]
    run_id: str
    run_uri: str
    exit_code: int
    """`EXIT_STOPPED` when a rule stopped CMD, else CMD's own status (128+N when killed by signal N)."""
    returncode: int
    """Popen's view: CMD's code, or -N when a signal N ended it."""
    stopped: bool
    stop_verdict: Verdict | None
    killed: bool
    """True when CMD ignored SIGTERM for the grace period and got SIGKILL."""
    findings: list[Finding]
    rule_status: Mapping[str, RuleStatus]
    last_step: int | None
    duration_seconds: float
    stop_latency_seconds: float | None = None
    """From the stop verdict to CMD's exit."""
    evaluation_error: str | None = None
    interrupted_by: str | None = None
    """Name of the signal (SIGINT, ...) that `trainguard run` received and passed on, if any."""
    nothing_evaluated: str | None = None
    """Why no step was evaluated (`Evaluator.nothing_evaluated`), or None when some were."""
    recorded: bool = True
    """Whether CMD wrote any TrainGuard data at all."""
    sigterm_sent: bool = False
    """Whether CMD got SIGTERM; a cooperative stop (CMD ended by itself after the stop file) sends none."""
    ends: Mapping[int, run_format.EndInfo] = field(default_factory=dict)
    """Each rank's END.json after the supervisor completed them."""
    lost_steps: int = 0
    """Steps the ranks' hooks report lost (never stored)."""
    unchecked_steps: int = 0
    """Steps the ranks' hooks saw go by without counting them (blind: an optimizer they did not know)."""
    warnings: list[str] = field(default_factory=list)
    """Configuration warnings of the evaluation (a rule whose `tensors` match nothing)."""

    @property
    def stopped_by(self) -> str | None:
        return self.stop_verdict.rule if self.stop_verdict else None

    @property
    def severe_findings(self) -> list[Finding]:
        """The findings at warning or critical, in the order they were made."""
        return [
            f for f in self.findings if plain(f.severity) in (Severity.WARNING.value, Severity.CRITICAL.value)
        ]

    @property
    def earlier_sign(self) -> Finding | None:
        """The first warning or critical finding of another rule at a step before the stop's, if any: often
        the cause of which the stop is a consequence (an overshooting learning rate before the NaN)."""
        v = self.stop_verdict
        if v is None:
            return None
        earlier = (f for f in self.severe_findings if f.rule != v.rule and f.step < v.step)
        return min(earlier, key=lambda f: f.step, default=None)

    @property
    def end(self) -> RunEnd:
        """How the run ended: a stop rule's stop first, then a signal, a failed command, nothing checked, ok."""
        if self.stopped:
            return RunEnd.STOPPED
        if self.returncode < 0:
            return RunEnd.KILLED
        if self.returncode != 0:
            return RunEnd.CRASHED
        if not self.recorded or self.nothing_evaluated or self.unchecked_steps:
            return RunEnd.BLIND
        return RunEnd.OK

    @property
    def error(self) -> str | None:
        """The uncaught exception a rank's hook saw at exit (`Type: message`), the first rank's that has one."""
        return next((e.exception for _, e in sorted(self.ends.items()) if e.exception), None)

    @property
    def end_step(self) -> int | None:
        """The last step any rank reached: its hook's END.json, else the last step evaluated."""
        steps = [e.last_step for e in self.ends.values() if e.last_step is not None]
        return max(steps) if steps else self.last_step

    @property
    def signal(self) -> str | None:
        """The signal that ended the command (SIGKILL, ...), None when it exited."""
        if self.returncode >= 0:
            return None
        return signal_name(self.returncode) or f"signal {-self.returncode}"

    @property
    def stop_how(self) -> str | None:
        """How a stopped command left: `cooperative` (by itself after should_stop()), `SIGTERM` or `SIGKILL`."""
        if not self.stopped:
            return None
        return "SIGKILL" if self.killed else "SIGTERM" if self.sigterm_sent else "cooperative"

    def findings_count(self) -> str:
        """`no findings` or `3 findings (1 critical, 2 warning)`: the warning and critical ones."""
        severe = self.severe_findings
        if not severe:
            return "no findings"
        by = {s: sum(1 for f in severe if plain(f.severity) == s) for s in ("critical", "warning")}
        parts = ", ".join(f"{n} {s}" for s, n in by.items() if n)
        return f"{len(severe)} finding{'s' if len(severe) != 1 else ''} ({parts})"

    def headline(self) -> str:
        """One sentence on how the run ended, with its exit status and the findings counted."""
        end, step = self.end, self.end_step
        at = f" at step {step}" if step is not None else ""
        found = self.findings_count()
        status = f"exit status {self.exit_code}"
        if end is RunEnd.STOPPED:
            v = self.stop_verdict
            assert v is not None
            how = {
                "cooperative": "the command saved its work and left after should_stop()",
                "SIGTERM": "by SIGTERM",
                "SIGKILL": "by SIGKILL after the grace period",
            }[str(self.stop_how)]
            return f"STOPPED by rule {v.rule} at step {v.step} on rank {v.rank} ({how}); {status}; {found}"
        if end is RunEnd.KILLED:
            return f"KILLED by {self.signal}{at}; {status}; {found}"
        if end is RunEnd.CRASHED:
            why = self.error or "the command failed"  # its status follows: said once
            return f"CRASHED{at}: {why}; {status}; {found}"
        if end is RunEnd.BLIND:
            return f"NOT CHECKED{at}: {self.blind_reason()}; {status}; {found}"
        return f"ended ok{at}; {status}; {found}"

    def blind_reason(self) -> str:
        """Why a run that exited 0 was not (wholly) checked."""
        if not self.recorded:
            return "the command wrote no TrainGuard data"
        stalled = next((f for f in self.severe_findings if f.rule == OptimizerNotStepping.name), None)
        if stalled is not None:
            never = stalled.step == 0 and "since step 0," in stalled.message
            return (
                f"the optimizer {'never stepped' if never else f'stopped stepping after step {stalled.step}'} "
                f"while training went on ({OptimizerNotStepping.name}: {self.unchecked_steps} training iterations "
                "without an optimizer step)"
            )
        if self.nothing_evaluated:
            return f"nothing was evaluated: {self.nothing_evaluated}"
        return f"{self.unchecked_steps} training steps went by that the hook did not count"

    def not_checked(self) -> dict[str, str]:
        """The rules that never got what they read, with what was missing (their end message)."""
        return {name: st.message for name, st in self.rule_status.items() if not getattr(st, "checked", True)}

    def end_json(self) -> dict[str, Any]:
        """The `--json` document's `end`: state, the one-line summary and what it is made of."""
        severe = self.severe_findings
        return {
            "state": self.end.value,
            "summary": self.headline(),
            "step": self.end_step,
            "stopped_by": self.stopped_by,
            "stop_how": self.stop_how,
            "error": self.error,
            "signal": self.signal,
            "findings": {
                s: sum(1 for f in severe if plain(f.severity) == s) for s in ("critical", "warning")
            },
            "not_checked": self.not_checked(),
        }

    def to_json(self) -> dict[str, Any]:
        """Return the `--json` document: stopped, stopped_by, exit_code, findings, and context."""
        v = self.stop_verdict
        return {
            "end": self.end_json(),
            "stopped": self.stopped,
            "stopped_by": self.stopped_by,
            "exit_code": self.exit_code,
            "findings": [finding_dict(f) for f in self.findings],
            "command": list(self.command),
            "run_id": self.run_id,
            "run_uri": self.run_uri,
            "returncode": self.returncode,
            "killed": self.killed,
            "interrupted_by": self.interrupted_by,
            "last_step": self.last_step,
            "duration_seconds": round(self.duration_seconds, 3),
            "stop": None
            if v is None
            else {
                "rule": v.rule,
                "step": v.step,
                "rank": v.rank,
                "severity": plain(v.severity),
                "message": v.message,
                "time": v.time,
                "latency_to_exit_seconds": self.stop_latency_seconds,
                "earlier_sign": None if (e := self.earlier_sign) is None else finding_dict(e),
            },
            "rules": {name: rule_status_dict(st) for name, st in self.rule_status.items()},
            "evaluation_error": self.evaluation_error,
            "recorded": self.recorded,
            "nothing_evaluated": self.nothing_evaluated,
            "sigterm_sent": self.sigterm_sent,
            "lost_steps": self.lost_steps,
            "unchecked_steps": self.unchecked_steps,
            "ranks_ended": {str(r): end.outcome() for r, end in sorted(self.ends.items())},
            "warnings": list(self.warnings),
        }
