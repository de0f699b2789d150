"""Webhook payloads: what one rule transition looks like to a receiver, and its idempotency key.

Owns the payload models (`generic`, `slack`), the one-line summary used in Events and messages,
and `idempotency_key()`, which is derived from the DebugJob's (or the supervised workload's) uid,
the rule and the transition, so a retry, a handler run again by kopf or an operator restarted
mid-delivery sends the same key and a receiver can drop the duplicate. A transition comes from a
DebugJob or, in attach mode, from a workload a DebugPolicy supervises (`debugpolicy` and `workload`
set, `debugjob` empty). Sending is `delivery`'s; resolving the Secret is `actions`'.
"""

from __future__ import annotations

import datetime
import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trainguard._version import __version__
from trainguard.api import debugjob
from trainguard.api.enums import Action, RuleCategory


class EarlierSign(BaseModel):
    """For a stop: the first finding of another rule at an earlier step (often the cause of what stopped the job)."""

    model_config = ConfigDict(frozen=True)

    rule: str
    step: int | None = None
    rank: int | None = None
    message: str = ""


class Workload(BaseModel):
    """The workload a DebugPolicy supervises (its top-level owner), in the policy's namespace."""

    model_config = ConfigDict(frozen=True)

    kind: str = Field(description="Job, JobSet, PyTorchJob or TrainJob.")
    name: str


class RuleEvent(BaseModel):
    """What happened: one rule of one DebugJob, or of one workload a DebugPolicy supervises, moved to IssuesFound."""

    model_config = ConfigDict(frozen=True)

    namespace: str
    debugjob: str | None = Field(default=None, description="The DebugJob; empty for a DebugPolicy's finding.")
    debugpolicy: str | None = Field(
        default=None, description="The DebugPolicy (attach mode); empty for a DebugJob."
    )
    workload: Workload | None = Field(
        default=None, description="For a DebugPolicy: the workload the rule fired in."
    )
    uid: str = Field(description="uid of the DebugJob, or of the workload for a DebugPolicy.")
    rule: str
    action: Action = Field(description="The spec's action for the rule: stop or notify.")
    severity: str | None = None
    category: RuleCategory | None = Field(
        default=None,
        description="For a DebugPolicy: the rule's category, as the evaluator's findings document gives it; empty for "
        "a DebugJob (its sidecars' status reports do not carry it).",
    )
    step: int | None = None
    rank: int | None = None
    message: str = ""
    time: str = Field(description="When the operator saw the transition (RFC 3339).")
    earlier_sign: EarlierSign | None = Field(
        default=None, description="For a stop: another rule's finding at an earlier step, if any."
    )
    suspend_in_seconds: int | None = Field(
        default=None,
        description="For a stop that waits for a trainer polling the stop file (cooperativeSeconds): seconds until "
        "the workload is suspended unless it ends first; empty when it was suspended at once.",
    )

    @property
    def subject(self) -> str:
        """`DebugJob <ns>/<name>` or `DebugPolicy <ns>/<name>`: what logs and Events name."""
        if self.debugpolicy is not None:
            return f"DebugPolicy {self.namespace}/{self.debugpolicy}"
        return f"DebugJob {self.namespace}/{self.debugjob}"


class GenericPayload(BaseModel):
    """The `generic` format: a versioned JSON document a receiver can route on."""

    kind: str = "TrainGuardRuleEvent"
    version: str = "v1"
    source: str = f"trainguard-operator/{__version__}"
    idempotency_key: str = Field(
        description="The same for every delivery of this transition (also the Idempotency-Key header): drop repeats."
    )
    event: RuleEvent
    summary: str


class SlackPayload(BaseModel):
    """The `slack` format: what a Slack incoming webhook accepts."""

    text: str


def summary(event: RuleEvent) -> str:
    """Return the one-line sentence used in Events and messages."""
    where = f"step {event.step}" if event.step is not None else "an unknown step"
    rank = f" on rank {event.rank}" if event.rank is not None else ""
    what = "the workload" if event.workload is not None else "the Job"
    if event.action != Action.STOP:
        verb = f"{what} keeps running" if event.workload is not None else "the job keeps running"
    elif event.suspend_in_seconds:
        verb = f"the trainer polls the stop file: {what} is suspended in {event.suspend_in_seconds} s unless it ends first"
    else:
        verb = f"{what} was suspended"
    text = f"{event.subject}: rule {event.rule} found issues at {where}{rank}"
    if event.workload is not None:
        text += f" in {event.workload.kind} {event.workload.name}"
    if event.message:
        text += f": {event.message}"
    text += f" ({verb})"
    if (sign := event.earlier_sign) is not None:
        text += f"; earlier sign: rule {sign.rule} at step {sign.step}" + (
            f" on rank {sign.rank}" if sign.rank is not None else ""
        )
    return text


def idempotency_key(event: RuleEvent) -> str:
    """Return the transition's key: a digest of the DebugJob uid, the rule, its new state and the finding's step.

    Random keys would defeat the purpose: kopf may run a handler again, and an operator restarted
    before it recorded the transition sees it again; both must send the key of the first try. For a
    DebugPolicy the step is the evaluator's latest, not the finding's, so it is left out: the workload's
    uid, the rule (IssuesFound is final in an evaluator) and the policy's name identify the transition.
    """
    if event.debugpolicy is not None:
        identity = f"{event.uid}\n{event.rule}\nIssuesFound\nDebugPolicy\n{event.debugpolicy}"
    else:
        identity = "\n".join((event.uid, event.rule, "IssuesFound", str(event.step)))
    return "tg-" + hashlib.sha256(identity.encode()).hexdigest()[:32]


def payload(event: RuleEvent, fmt: debugjob.WebhookFormat) -> dict[str, Any]:
    """Return the JSON body for a webhook of format `fmt` (Slack's has no room for the key: the header carries it)."""
    if fmt == debugjob.WebhookFormat.SLACK:
        severity = (event.severity or "").upper()
        return SlackPayload(text=f":rotating_light: *TrainGuard {severity}* {summary(event)}").model_dump()
    return GenericPayload(
        idempotency_key=idempotency_key(event), event=event, summary=summary(event)
    ).model_dump(mode="json")


def now_rfc3339() -> str:
    """Return the current UTC time as Kubernetes writes it."""
    return datetime.datetime.now(tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339(unix_seconds: float) -> str:
    """Return a Unix time as Kubernetes writes times (UTC, whole seconds)."""
    return datetime.datetime.fromtimestamp(unix_seconds, tz=datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
