"""The evaluator sidecar's configuration file, rendered by the operator and by `trainguard run`.

The operator writes it into the DebugJob's ConfigMap (mounted at `/etc/trainguard/sidecar.yaml`);
`trainguard sidecar --config FILE` reads it. Rules keep their raw `params` here: the sidecar
validates them against the rule classes, which the operator never imports.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainguard.api import store_settings
from trainguard.api.rules_config import RuleSpec


class DebugJobRef(BaseModel):
    """The DebugJob whose status the sidecar reports into."""

    model_config = ConfigDict(extra="forbid")

    namespace: str
    name: str
    uid: str | None = None
    service_account_dir: str | None = Field(
        default=None,
        description=(
            "Directory holding the projected ServiceAccount token, ca.crt and namespace (the operator mounts it "
            "in the sidecar only; the pod gets no automounted token). None: KUBECONFIG, else the standard "
            "in-cluster path."
        ),
    )


class SidecarConfig(BaseModel):
    """Everything the evaluator needs; no secrets (credentials come from the pod's environment)."""

    model_config = ConfigDict(extra="forbid")

    run_uri: str = Field(description="Root URI of the run to follow (file:// or s3://).")
    rank: int | None = Field(
        default=None,
        ge=0,
        description=(
            "The one rank to follow; None: the ranks of this pod (pod index from RANK or "
            "JOB_COMPLETION_INDEX, see ranks_per_pod) when `debugjob` is set, else all ranks (local mode)."
        ),
    )
    ranks_per_pod: int = Field(
        default=1,
        ge=1,
        le=64,
        description=(
            "Training processes per pod (the DebugJob's nprocPerNode). torchrun gives them the global "
            "ranks node_rank * n + local_rank, so the pod with index i follows ranks [i*n, (i+1)*n)."
        ),
    )
    world_size: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Ranks of the whole job (the DebugJob's workers x nprocPerNode). Above 32 the pods' status reports "
            "are condensed: progress from the first pod only, findings from one rank per pod and rule."
        ),
    )
    store: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Settings of the run's storage backend, by the names it declares (s3: endpoint, region); "
            "credentials never appear here, they come from the pod's environment."
        ),
    )
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
    ranks_from_env: bool = Field(
        default=False,
        description=(
            "Follow this pod's ranks (pod index from RANK or JOB_COMPLETION_INDEX, see ranks_per_pod) without a "
            "DebugJob to report to: the pods the attach webhook injects into."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _older_names(cls, doc: Any) -> Any:
        """Read a setting under an older name its backend still declares (`s3_endpoint`) into `store`."""
        return store_settings.fold_older_names(doc, uri_key="run_uri", into="store")

    @model_validator(mode="after")
    def _one_way_to_pick_ranks(self) -> SidecarConfig:
        if self.rank is not None and self.ranks_per_pod != 1:
            raise ValueError(
                f"rank {self.rank} names one rank, ranks_per_pod {self.ranks_per_pod} a pod's ranks: set one of them"
            )
        return self

    def pod_ranks(self, pod_index: int) -> list[int]:
        """The global ranks the sidecar of pod `pod_index` follows: `rank` when set, else its node's ranks."""
        if self.rank is not None:
            return [self.rank]
        n = self.ranks_per_pod
        return list(range(pod_index * n, (pod_index + 1) * n))
