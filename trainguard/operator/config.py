"""Operator settings: one pydantic model built by `trainguard operator` and handed to kopf as its memo.

Handlers read `memo.config`; when the operator runs under `kopf run` or `KopfRunner` (tests)
without one, the defaults below apply. Nothing here is read from the environment.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from trainguard.api import debugjob as api

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
        default=api.DEFAULT_EVALUATOR_IMAGE, description="Sidecar image when a DebugJob does not name one."
    )
    max_workers: int = Field(
        default=16,
        ge=1,
        description="Threads for the synchronous handlers; each holds one API request at a time, so 16 keeps "
        "500 DebugJobs well under a minute without flooding the API server.",
    )
    webhook_max_attempts: int = Field(
        default=5, ge=1, description="Tries per webhook delivery, the first included."
    )
    webhook_base_backoff_seconds: float = Field(
        default=0.5, ge=0, description="First pause between webhook tries; doubles per try up to 8 s."
    )
