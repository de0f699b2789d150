"""Webhook delivery: one JSON POST per rule transition, with bounded retries and backoff.

Owns the payload models (`generic`, `slack`) and `deliver()`. The URL comes from a Secret and
often carries a token, so it never reaches a log line, an exception message, an Event or the
status: failures name the webhook by its `name` only. Retryable: connection errors, timeouts,
HTTP 429 and 5xx; any other 4xx is final. Resolving the Secret is left to `actions`.
"""

from __future__ import annotations

import datetime
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trainguard._version import __version__
from trainguard.api import debugjob as api
from trainguard.api.enums import Action

log = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class EarlierSign(BaseModel):
    """For a stop: the first finding of another rule at an earlier step (often the cause of what stopped the job)."""

    model_config = ConfigDict(frozen=True)

    rule: str
    step: int | None = None
    rank: int | None = None
    message: str = ""


class RuleEvent(BaseModel):
    """What happened: one rule of one DebugJob moved to IssuesFound."""

    model_config = ConfigDict(frozen=True)

    namespace: str
    debugjob: str
    uid: str
    rule: str
    action: Action = Field(description="The spec's action for the rule: stop or notify.")
    severity: str | None = None
    step: int | None = None
    rank: int | None = None
    message: str = ""
    time: str = Field(description="When the operator saw the transition (RFC 3339).")
    earlier_sign: EarlierSign | None = Field(
        default=None, description="For a stop: another rule's finding at an earlier step, if any."
    )


class GenericPayload(BaseModel):
    """The `generic` format: a versioned JSON document a receiver can route on."""

    kind: str = "TrainGuardRuleEvent"
    version: str = "v1"
    source: str = f"trainguard-operator/{__version__}"
    event: RuleEvent
    summary: str


class SlackPayload(BaseModel):
    """The `slack` format: what a Slack incoming webhook accepts."""

    text: str


def summary(event: RuleEvent) -> str:
    """Return the one-line sentence used in Events and messages."""
    where = f"step {event.step}" if event.step is not None else "an unknown step"
    rank = f" on rank {event.rank}" if event.rank is not None else ""
    verb = "the Job was suspended" if event.action == Action.STOP else "the job keeps running"
    text = f"DebugJob {event.namespace}/{event.debugjob}: rule {event.rule} found issues at {where}{rank}"
    if event.message:
        text += f": {event.message}"
    text += f" ({verb})"
    if (sign := event.earlier_sign) is not None:
        text += f"; earlier sign: rule {sign.rule} at step {sign.step}" + (
            f" on rank {sign.rank}" if sign.rank is not None else ""
        )
    return text


def payload(event: RuleEvent, fmt: api.WebhookFormat) -> dict[str, Any]:
    """Return the JSON body for a webhook of format `fmt`."""
    if fmt == api.WebhookFormat.SLACK:
        severity = (event.severity or "").upper()
        return SlackPayload(text=f":rotating_light: *TrainGuard {severity}* {summary(event)}").model_dump()
    return GenericPayload(event=event, summary=summary(event)).model_dump(mode="json")


def deliver(
    url: str,
    body: dict[str, Any],
    *,
    name: str,
    max_attempts: int = 5,
    base_backoff_seconds: float = 0.5,
    max_backoff_seconds: float = 8.0,
    timeout_seconds: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """POST `body` as JSON to `url`; return whether a 2xx came back within `max_attempts`.

    Backoff doubles from `base_backoff_seconds` up to `max_backoff_seconds` (5 attempts wait at
    most 0.5+1+2+4 = 7.5 s, short enough not to hold up the DebugJob's other handlers for long).
    """
    data = json.dumps(body).encode()
    for attempt in range(1, max_attempts + 1):
        outcome = _post_once(url, data, timeout_seconds=timeout_seconds)
        if outcome is None:
            log.info("webhook %s: delivered (attempt %d of %d)", name, attempt, max_attempts)
            return True
        retry, reason = outcome
        if not retry:
            log.warning(
                "webhook %s: not delivered, %s; not retrying (fix the receiver or the URL)", name, reason
            )
            return False
        log.warning("webhook %s: attempt %d of %d failed: %s", name, attempt, max_attempts, reason)
        if attempt < max_attempts:
            sleep(min(max_backoff_seconds, base_backoff_seconds * 2 ** (attempt - 1)))
    log.error("webhook %s: gave up after %d attempts", name, max_attempts)
    return False


def _post_once(url: str, data: bytes, *, timeout_seconds: float) -> tuple[bool, str] | None:
    """Return None on success, else (retryable, reason); the reason never contains the URL."""
    request = urllib.request.Request(
        url,
        data=data,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "trainguard"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_seconds) as response:
            response.read()
            return None
    except urllib.error.HTTPError as err:
        return err.code in RETRYABLE_STATUS, f"HTTP {err.code}"
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as err:
        reason = getattr(err, "reason", err)
        return True, f"{type(err).__name__} ({_redact(str(reason), url)})"
    except ValueError as err:  # a malformed URL: say so without echoing it
        return False, f"invalid URL ({type(err).__name__})"


def _redact(text: str, url: str) -> str:
    return text.replace(url, "<webhook url>")


def now_rfc3339() -> str:
    """Return the current UTC time as Kubernetes writes it."""
    return datetime.datetime.now(tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
