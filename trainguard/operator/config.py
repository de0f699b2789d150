"""Operator settings: one pydantic model built by `trainguard operator` and handed to kopf as its memo.

Handlers read `memo.config`; when the operator runs under `kopf run` or `KopfRunner` (tests)
without one, the defaults below apply. Nothing here is read from the environment.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from trainguard.api import debugjob
from trainguard.operator import addresses, delivery

DEFAULT_METRICS_PORT = 9401
DEFAULT_LIVENESS_PORT = 8080


class OperatorConfig(BaseModel):
    """What `trainguard operator` was told on its command line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metrics_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="Port of /metrics (9401 in the chart); None serves no metrics.",
    )
    metrics_address: str = Field(default="0.0.0.0", description="Address the metrics server binds.")
    default_image: str = Field(
        default=debugjob.DEFAULT_EVALUATOR_IMAGE,
        description="Sidecar image when a DebugJob does not name one.",
    )
    max_workers: int = Field(
        default=16,
        ge=1,
        description="Threads for the synchronous handlers; each holds one API request at a time, so 16 keeps "
        "500 DebugJobs well under a minute without flooding the API server.",
    )
    worker_limit: int = Field(
        default=128,
        ge=1,
        description="kopf workers (one per object with events to handle) running at once, per watched kind. "
        "Each may hold its own HTTPS connection to the API server, about 200 KB with its TLS buffers, so "
        "this bounds the operator's memory in a burst of new DebugJobs; 128 workers leaving after 1 s idle "
        "still handle over 100 objects a second.",
    )
    webhook_max_attempts: int = Field(
        default=5, ge=1, description="Tries per webhook delivery, the first included."
    )
    webhook_base_backoff_seconds: float = Field(
        default=0.5, ge=0, description="First pause between webhook tries; doubles per try up to 8 s."
    )
    webhook_attempt_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="Total deadline of one webhook try (connect, send, response headers); a trickling receiver "
        "is cut off too. 10 s is twice what chat services take on a bad day.",
    )
    webhook_queue_size: int = Field(
        default=32,
        ge=1,
        description="Deliveries waiting per webhook of a DebugJob; more are dropped and counted.",
    )
    webhook_refuse_internal: bool = Field(
        default=False,
        description="Refuse webhook addresses that are not globally routable: loopback, link-local (cloud "
        "metadata), private, shared and reserved ranges. Off by default so in-cluster receivers work.",
    )
    webhook_refused_cidrs: tuple[str, ...] = Field(
        default=(),
        description="Further networks webhooks may not reach, e.g. the cluster's pod and service CIDRs.",
    )

    @field_validator("webhook_refused_cidrs")
    @classmethod
    def _cidrs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        addresses.AddressPolicy.build(refuse_internal=False, refused_cidrs=value)  # raises naming a bad one
        return value

    def delivery_settings(self) -> delivery.Settings:
        """Return the webhook dispatcher's settings; a malformed CIDR raises ValueError naming it."""
        return delivery.Settings(
            max_attempts=self.webhook_max_attempts,
            base_backoff_seconds=self.webhook_base_backoff_seconds,
            attempt_timeout_seconds=self.webhook_attempt_timeout_seconds,
            queue_size=self.webhook_queue_size,
            policy=addresses.AddressPolicy.build(
                refuse_internal=self.webhook_refuse_internal, refused_cidrs=self.webhook_refused_cidrs
            ),
        )
