"""The evaluator sidecar's configuration file, rendered by the operator and by `trainguard run`.

The operator writes it into the DebugJob's ConfigMap (mounted at `/etc/trainguard/sidecar.yaml`);
`trainguard sidecar --config FILE` reads it. Rules keep their raw `params` here: the sidecar
validates them against the rule classes, which the operator never imports.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from trainguard.api.rules_config import RuleSpec


class DebugJobRef(BaseModel):
    """The DebugJob whose status the sidecar reports into."""

    model_config = ConfigDict(extra="forbid")

    namespace: str
    name: str
    uid: str | None = None


class SidecarConfig(BaseModel):
    """Everything the evaluator needs; no secrets (credentials come from the pod's environment)."""

    model_config = ConfigDict(extra="forbid")

    run_uri: str = Field(description="Root URI of the run to follow (file:// or s3://).")
    rank: int | None = Field(
        default=None, ge=0, description="Rank to follow; None follows all ranks (local mode)."
    )
    s3_endpoint: str | None = Field(default=None, description="S3 endpoint URL for S3-compatible stores.")
    rules: list[RuleSpec] = Field(default_factory=list, description="Rules; empty means the default set.")
    metrics_port: int = Field(
        default=9400, ge=0, le=65535, description="Port of /metrics and /healthz; 0 picks a free one."
    )
    metrics_address: str = Field(default="0.0.0.0", description="Address to bind the HTTP server to.")
    stop_file: str | None = Field(
        default=None, description="File to create on a stop verdict; the hook polls it (shared emptyDir)."
    )
    poll_interval_seconds: float = Field(
        default=0.25, gt=0, description="Pause between listings when no data is new."
    )
    idle_timeout_seconds: float = Field(
        default=3600.0, gt=0, description="Give up following when the trainer writes nothing for this long."
    )
    checkpoint: bool = Field(
        default=True, description="Save position and rule state to the store after each segment."
    )
    debugjob: DebugJobRef | None = Field(
        default=None, description="Report verdicts into this DebugJob's status (Kubernetes only)."
    )
