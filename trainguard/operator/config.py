"""Operator settings: one pydantic model built by `trainguard operator` and handed to kopf as its memo.

Handlers read `memo.config`; when the operator runs under `kopf run` or `KopfRunner` (tests)
without one, the defaults below apply. Nothing here is read from the environment.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from trainguard.api import debugjob
from trainguard.operator import addresses, delivery

DEFAULT_METRICS_PORT = 9401
DEFAULT_LIVENESS_PORT = 8080
DEFAULT_ATTACH_PORT = 9443
DEFAULT_ATTACH_CERT_DIR = "/etc/trainguard/webhook-tls"


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

    workload_kinds: tuple[str, ...] = Field(
        default=(),
        description="Workload kinds enabled besides batch Jobs, by chart key (jobSet, pyTorchJob, trainJob): the "
        "chart renders them from workloads.<kind>.enabled, the same switches that grant their RBAC.",
    )
    attach: bool = Field(
        default=False,
        description="Attach mode: serve the pod webhook that injects the evaluator into pods of workloads selected "
        "by DebugPolicies, and report their status (chart value attach.enabled).",
    )
    attach_port: int = Field(
        default=DEFAULT_ATTACH_PORT, ge=1, le=65535, description="Port of the pod webhook (HTTPS)."
    )
    attach_cert_dir: str = Field(
        default=DEFAULT_ATTACH_CERT_DIR,
        description="Directory with the webhook's tls.crt and tls.key (a Secret the chart mounts, or files the "
        "operator writes with attach_cert_secret); re-read when they change, so a renewed certificate is served "
        "without a restart.",
    )
    attach_cert_secret: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9][-a-z0-9]*/[a-z0-9][-a-z0-9.]*$",
        description="`<namespace>/<name>` of the Secret in which the operator keeps the webhook's self-signed "
        "certificate, issuing and renewing it itself (chart value attach.certificate=operator); empty: the "
        "certificate is mounted into attach_cert_dir by someone else (cert-manager).",
    )
    attach_service: str = Field(
        default="",
        description="Name of the webhook's Service (in the Secret's namespace): the certificate's host.",
    )
    attach_webhook_config: str = Field(
        default="",
        description="Name of the MutatingWebhookConfiguration whose caBundle the operator sets to its CA.",
    )
    attach_cert_days: int = Field(
        default=365,
        ge=1,
        le=3650,
        description="Validity of the self-signed certificate in days; renewed at two thirds of it.",
    )

    @model_validator(mode="after")
    def _self_signed(self) -> OperatorConfig:
        if self.attach_cert_secret and not (self.attach_service and self.attach_webhook_config):
            raise ValueError(
                "attach_cert_secret: the operator issues the certificate, so it also needs --attach-service and "
                "--attach-webhook-config (the chart passes all three)"
            )
        return self

    @field_validator("workload_kinds")
    @classmethod
    def _kinds(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from trainguard.operator import workloads

        try:
            workloads.enabled(value)
        except workloads.UnknownKind as err:
            raise ValueError(str(err)) from err
        return value

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
