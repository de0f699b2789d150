"""Builds the evaluator's findings document (`api.findings`), which its HTTP server serves at `/findings`.

`trainguard sidecar` hands `document_bytes` to `server.MetricsServer`; the operator's policy timer reads it from
the evaluators the attach webhook injected (their pods cannot write to the policy). Read at request time under
the evaluator's lock, as the metrics collector reads it. Each rule in IssuesFound over the followed ranks (the
first transition wins, `verdicts.Verdicts.status`) with its message, severity, rank, step and category; the
evaluator's own checks too (`data_gap`, `same_data_on_ranks`), as a DebugJob's status reports carry them.
Nothing else: no configuration, URIs or credentials.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Protocol

from trainguard.api import findings
from trainguard.api.enums import RuleCategory, RuleState
from trainguard.sidecar.config import CompiledRule
from trainguard.sidecar.verdicts import RuleStatus


class FindingsSource(Protocol):
    """What the document reads of an evaluator (`Evaluator` is one)."""

    @property
    def compiled(self) -> list[CompiledRule]: ...
    @property
    def rule_status(self) -> Mapping[str, RuleStatus]: ...
    @property
    def last_step(self) -> int | None: ...
    @property
    def ranks(self) -> list[int]: ...
    @property
    def stop_watched(self) -> bool: ...


def document(source: FindingsSource) -> findings.FindingsDocument:
    """Return what `source` found so far: its rules in IssuesFound, by step, then rank, then name."""
    categories: dict[str, RuleCategory] = {c.name: c.category for c in source.compiled}
    found = []
    for name, status in source.rule_status.items():
        if status.state == RuleState.ISSUES_FOUND:
            found.append(
                findings.RuleFinding(
                    rule=name,
                    state=status.state,
                    step=status.step,
                    rank=status.rank,
                    severity=status.severity,
                    message=findings.cut(status.message),
                    category=categories.get(name),
                    time=status.time,
                )
            )
    found.sort(key=lambda f: (f.step if f.step is not None else 1 << 62, f.rank or 0, f.rule))
    return findings.FindingsDocument(
        last_step=source.last_step,
        ranks=list(source.ranks),
        stop_watched=source.stop_watched,
        findings=found[: findings.MAX_RULES],
    )


def document_bytes(source: FindingsSource) -> bytes:
    """Return the document as the server sends it (compact JSON, UTF-8)."""
    return json.dumps(document(source).model_dump(mode="json"), separators=(",", ":")).encode()
