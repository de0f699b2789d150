"""The evaluator's findings document: what `GET /findings` on its HTTP server returns (JSON, versioned).

The wire model between an injected evaluator (`sidecar/findings.py` builds it, `sidecar/server.py` serves it)
and the operator's policy timer (`operator/attach.py` reads it): each rule that found issues with the message,
severity, rank, step and category of its first finding, beside the last step and whether a trainer polls the
stop file. /metrics carries the rule and the step only; this carries what a DebugJob's status reports carry.
Bounded (`MAX_RULES` entries, `MAX_MESSAGE_CHARS` per message, `MAX_BYTES` in all, which the reader enforces)
and free of secrets: no configuration, store settings, URIs or credentials, only findings. A reader accepts
`VERSION` and ignores fields it does not know (a later evaluator may add some); a document of another version
is refused, and the reader falls back to /metrics.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from trainguard.api.enums import RuleCategory, RuleState, Severity

PATH = "/findings"
"""Where the evaluator's HTTP server (port 9400 in a pod) serves the document."""
KIND = "TrainGuardFindings"
VERSION = "v1"
MAX_RULES = 128
"""Entries at most: a policy lists at most 100 rules, plus the evaluator's own checks (data_gap, same data)."""
MAX_MESSAGE_CHARS = 512
"""A finding's message is cut to this many characters (with an ellipsis): a sentence with numbers and a hint."""
MAX_BYTES = 1024 * 1024
"""Largest document a reader accepts. A full one of ASCII messages is about MAX_RULES x (MAX_MESSAGE_CHARS + 200)
= 90 KiB; with every character escaped as a JSON surrogate pair (12 bytes) about 820 KiB, still within."""


class RuleFinding(BaseModel):
    """One rule's first finding over the ranks the evaluator follows (IssuesFound is final)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    rule: str = Field(
        description="The rule's name (rules[].name or its type), or an evaluator check (data_gap)."
    )
    state: RuleState = Field(
        default=RuleState.ISSUES_FOUND, description="IssuesFound (the only state listed in v1)."
    )
    step: int | None = Field(default=None, description="Training step of the finding.")
    rank: int | None = Field(default=None, description="Global rank the finding came from.")
    severity: Severity | None = Field(default=None, description="Severity of the finding.")
    message: str = Field(
        default="",
        max_length=MAX_MESSAGE_CHARS,
        description="The finding as a sentence (what, where, what to try).",
    )
    category: RuleCategory | None = Field(
        default=None,
        description="The rule's category (loss, gradients, ...); empty for the evaluator's own checks.",
    )
    time: float | None = Field(default=None, description="When the evaluator saw it (Unix time).")


class FindingsDocument(BaseModel):
    """What one evaluator found so far, for a reader that has no other way to learn the details."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: str = Field(default=KIND, description="Always TrainGuardFindings.")
    version: str = Field(default=VERSION, description="The document's version; readers refuse another.")
    last_step: int | None = Field(default=None, description="Highest step evaluated on the followed ranks.")
    ranks: list[int] = Field(default_factory=list, description="The global ranks the evaluator follows.")
    stop_watched: bool = Field(
        default=False, description="A trainer polls the stop file (hook.should_stop())."
    )
    findings: list[RuleFinding] = Field(
        default_factory=list, max_length=MAX_RULES, description="Rules that found issues, by step, then rank."
    )


def cut(message: str) -> str:
    """Return `message` within `MAX_MESSAGE_CHARS` (cut with an ellipsis when longer)."""
    return message if len(message) <= MAX_MESSAGE_CHARS else message[: MAX_MESSAGE_CHARS - 1] + "…"
