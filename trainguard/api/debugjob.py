"""Pydantic models of a DebugJob: the spec users write and the status the operator and sidecars keep.

The CRD (`trainguard.api.crd`) is generated from these models, so each `Field(description=...)`
is what `kubectl explain debugjob.spec...` prints. Keys are camelCase in Kubernetes and
snake_case in Python (aliases). `spec.rules` reuses `rules_config.RuleSpec` so the rules file and
the DebugJob share one schema; rule parameters are only checked for shape here, because their
classes live in the evaluator, which the operator never imports.
"""

from __future__ import annotations

import enum
import re
from typing import TYPE_CHECKING, Annotated, Any, cast

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator
from pydantic.alias_generators import to_camel

from trainguard._version import __version__
from trainguard.api import store_settings
from trainguard.api.enums import Action, Collection, ConditionType, Phase, RuleState, Severity
from trainguard.api.rules_config import RulesConfig, RuleSpec

GROUP = "trainguard.dev"
VERSION = "v1alpha1"
KIND = "DebugJob"
PLURAL = "debugjobs"
SINGULAR = "debugjob"
SHORT_NAMES = ("dj",)
API_VERSION = f"{GROUP}/{VERSION}"

DEFAULT_EVALUATOR_IMAGE = f"localhost/trainguard:{__version__}"
"""The sidecar image when `spec.evaluator.image` is empty and the operator got no `--image`: what
`dev/build-image.sh` builds (no image is published). The chart always passes the operator's own image."""

POD_TEMPLATE_MARKER = "x-trainguard-pod-template"
"""Schema key on `spec.template`: the CRD generator puts the pinned core/v1 PodTemplateSpec there."""

MAX_NPROC_PER_NODE = 64
"""Processes per pod: one per accelerator, and no node has more than 64 of them."""
MAX_GRACE_PERIOD_SECONDS = 3600
"""Longest grace period of a stopped trainer: enough to write a checkpoint, short enough to free the GPUs."""
MAX_WEBHOOKS = 10
"""Webhooks per DebugJob; wider fan-out belongs in Alertmanager (docs/notifications.md)."""
MAX_RULES = 100
"""Rules per DebugJob (the built-in library has fewer than 40)."""

NAME_PATTERN = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
"""A DebugJob's name is a DNS-1035 label: it names the Job, the headless Service and (with `-<index>`) each pod's hostname."""
HOSTNAME_MAX_LENGTH = 63
"""Kubernetes' limit on a hostname (a DNS label); the Job names each rank's pod `<name>-<index>`."""
NAME_PATTERN_MESSAGE = (
    "metadata.name must consist of lowercase letters, digits and '-', start with a letter and end with a "
    "letter or digit (no dots): it names the DebugJob's Job, its headless Service and each rank's hostname"
)


NAME_LENGTH_MESSAGE = (
    f"metadata.name is too long for spec.workers: each rank's hostname is <name>-<index> and a hostname has at "
    f"most {HOSTNAME_MAX_LENGTH} characters, so the name may have at most 61 characters with up to 10 workers, "
    f"60 with up to 100, 59 with up to 1000 and 58 with more"
)


def max_name_length(workers: int) -> int:
    """Return the longest DebugJob name whose rank hostnames `<name>-<index>` fit in a DNS label."""
    return HOSTNAME_MAX_LENGTH - 1 - len(str(max(workers, 1) - 1))


def name_problem(name: str, workers: int) -> str | None:
    """Return why the Job, Service or pods of a DebugJob could not take `name`, or None when they can.

    The CRD carries the same checks as CEL rules (`crd.NAME_RULES`), so the API server refuses such
    a DebugJob up front; the operator checks again for a CRD installed without them.
    """
    if not re.match(NAME_PATTERN, name):
        return f"{NAME_PATTERN_MESSAGE}; {name!r} does not"
    limit = max_name_length(workers)
    if len(name) > limit:
        return name_length_message(len(name), workers, limit)
    return None


def name_length_message(length: int, workers: int, limit: int) -> str:
    """The message for a name too long for its rank hostnames (the CRD's rule says the same with a table)."""
    return (
        f"metadata.name has {length} characters; with {workers} workers it may have at most {limit}: "
        f"each rank's hostname is <name>-<index> and a hostname has at most {HOSTNAME_MAX_LENGTH} characters"
    )


class _Model(BaseModel):
    """camelCase on the wire, snake_case in Python, unknown keys refused."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class SecretKeyRef(_Model):
    """One key of a Secret in the DebugJob's namespace."""

    name: str = Field(min_length=1, description="Name of the Secret (same namespace as the DebugJob).")
    key: str = Field(min_length=1, description="Key inside the Secret whose value is used.")


SaveInterval = Annotated[int, Field(ge=1)]
"""Statistics are saved every this many training steps: the one definition, for the DebugJob's capture
settings and the hook's (`capture.config.CaptureConfig`)."""
DEFAULT_SAVE_INTERVAL = 10
"""10 keeps the hook's overhead near 1% and the detection latency low."""


if TYPE_CHECKING:
    _CaptureStore = _Model
else:  # uri, the backends' settings (s3: endpoint, region) and secretRef, as the backends declare them
    _CaptureStore = create_model("_CaptureStore", __base__=_Model, **store_settings.store_fields())


class CaptureSpec(_CaptureStore):
    """Where and how the training hook writes statistics."""

    if TYPE_CHECKING:  # fields of _CaptureStore that code reads by name
        uri: str
        secret_ref: store_settings.SecretRefBase | None

    save_interval: SaveInterval = Field(
        default=DEFAULT_SAVE_INTERVAL,
        description="Save statistics every N training steps (TRAINGUARD_SAVE_INTERVAL); 10 costs about 1%.",
    )
    collections: list[Collection] | None = Field(
        default=None,
        description="Collections to capture (TRAINGUARD_COLLECTIONS); empty means the hook's default set.",
    )

    @field_validator("uri")
    @classmethod
    def _uri(cls, v: str) -> str:
        return v.rstrip("/")

    def backend(self) -> store_settings.Backend:
        """Return the storage backend of `uri`."""
        return store_settings.backend_of(self.uri)

    def store_settings(self) -> dict[str, str]:
        """Return the settings of `uri`'s backend that are set, by setting name (`{"endpoint": ...}`)."""
        values = {s.name: getattr(self, s.name) for s in self.backend().settings}
        return {name: str(v) for name, v in values.items() if v}


class StopAction(_Model):
    """How a stop verdict ends the job."""

    grace_period_seconds: int = Field(
        default=30,
        ge=0,
        le=MAX_GRACE_PERIOD_SECONDS,
        description=(
            "Seconds the trainer gets between SIGTERM and SIGKILL when the Job is suspended "
            "(the pods' terminationGracePeriodSeconds); 30 is Kubernetes' default, at most one hour "
            "(enough to write a checkpoint; a stopped job should not hold its GPUs longer)."
        ),
    )
    cooperative_seconds: int = Field(
        default=30,
        ge=0,
        le=MAX_GRACE_PERIOD_SECONDS,
        description=(
            "Seconds between a stop verdict and the Job's suspension when the trainer polls the stop file "
            "(hook.should_stop(); the sidecar writes the file at once and reports that the trainer reads it): "
            "time to save a checkpoint and exit by itself. A trainer that does not poll it is suspended at "
            "once; 0 always suspends at once. Then SIGTERM, and SIGKILL after gracePeriodSeconds."
        ),
    )


class WebhookFormat(str, enum.Enum):
    """Payload shape a webhook receives."""

    GENERIC = "generic"
    SLACK = "slack"


class Webhook(_Model):
    """An HTTP endpoint told about rule transitions; its URL is a secret."""

    name: str = Field(
        min_length=1, max_length=63, description="Name of this webhook, used in events and metrics-free logs."
    )
    url_secret_ref: SecretKeyRef = Field(
        description="Secret key holding the URL (URLs often carry tokens, so they never appear in the spec)."
    )
    format: WebhookFormat = Field(
        default=WebhookFormat.GENERIC,
        description="generic: a JSON document with the DebugJob, rule and finding; slack: an incoming-webhook message.",
    )


class NotifyAction(_Model):
    """Who hears about a notify verdict besides the Kubernetes Event."""

    webhooks: list[Webhook] = Field(
        default_factory=list,
        max_length=MAX_WEBHOOKS,
        description="Webhooks called once per rule transition (at most 10; route wider fan-out through Alertmanager).",
    )


class ActionsSpec(_Model):
    """Settings of the actions that rules name (`rules[].action`)."""

    stop: StopAction = Field(default_factory=StopAction, description="Settings of the stop action.")
    notify: NotifyAction = Field(default_factory=NotifyAction, description="Settings of the notify action.")


def _default_evaluator_resources() -> dict[str, dict[str, int | str]]:
    return {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}


class EvaluatorSpec(_Model):
    """The rule-evaluator sidecar."""

    image: str | None = Field(
        default=None, description="Sidecar image; empty means the operator's own image."
    )
    image_pull_policy: str | None = Field(default=None, description="IfNotPresent, Always or Never.")
    resources: dict[str, dict[str, int | str]] = Field(
        default_factory=_default_evaluator_resources,
        json_schema_extra={
            "default": cast(Any, _default_evaluator_resources())
        },  # a factory is not in the schema
        description="Sidecar resource requests and limits (core/v1 ResourceRequirements); one core is plenty.",
    )


class RunPolicy(_Model):
    """Passed to the Job as is (same names as Kubeflow's runPolicy)."""

    backoff_limit: int | None = Field(
        default=0,
        ge=0,
        description="Job retries. 0: a collective job that lost a rank must not retry piecemeal.",
    )
    active_deadline_seconds: int | None = Field(default=None, ge=1, description="Longest the Job may run.")
    ttl_seconds_after_finished: int | None = Field(
        default=None, ge=0, description="Delete the Job (not the DebugJob) this long after it finished."
    )


class DebugJobSpec(_Model):
    """What to train, what to capture, which rules to run and what to do when they fire."""

    workers: int = Field(
        default=1, ge=1, le=4096, description="Number of pods (ranks); completions = parallelism."
    )
    nproc_per_node: int = Field(
        default=1,
        ge=1,
        le=MAX_NPROC_PER_NODE,
        description=(
            "Processes per pod (PET_NPROC_PER_NODE for torchrun); WORLD_SIZE = workers x this. "
            "At most 64: one process per accelerator, and no node has more."
        ),
    )
    container_name: str = Field(
        default="trainer", description="Name of the training container in the template."
    )
    master_port: int = Field(
        default=23456,
        ge=1,
        le=65535,
        description="Rendezvous port on rank 0 (MASTER_PORT); Kubeflow's default.",
    )
    template: dict[str, Any] = Field(
        json_schema_extra={POD_TEMPLATE_MARKER: True},
        description="Pod template of each rank (core/v1 PodTemplateSpec). GPU requests, nodeSelector and tolerations pass through.",
    )
    capture: CaptureSpec = Field(description="Where and how statistics are captured.")
    rules: list[RuleSpec] = Field(
        default_factory=list,
        max_length=MAX_RULES,
        description="Rules to evaluate (the rules-file schema); empty means the default set; at most 100.",
    )
    actions: ActionsSpec = Field(default_factory=ActionsSpec, description="Settings of stop and notify.")
    evaluator: EvaluatorSpec = Field(default_factory=EvaluatorSpec, description="The evaluator sidecar.")
    run_policy: RunPolicy = Field(
        default_factory=RunPolicy, description="Job retry, deadline and cleanup settings."
    )
    suspend: bool = Field(
        default=False, description="Create or keep the Job suspended (mirrored onto the Job)."
    )

    @model_validator(mode="after")
    def _check(self) -> DebugJobSpec:
        RulesConfig(rules=self.rules)  # unique, well-formed names
        return self


class KubeCondition(_Model):
    """A Kubernetes condition (metav1.Condition shape); each resource's subclass narrows `type` to its own types."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    type: str = Field(description="The condition's type.")
    status: str = Field(description="True, False or Unknown.")
    reason: str = Field(default="", description="CamelCase reason of the last transition.")
    message: str = Field(default="", description="Human-readable details.")
    last_transition_time: str | None = Field(default=None, description="When status last changed (RFC 3339).")
    observed_generation: int | None = Field(
        default=None, description="metadata.generation the condition reflects."
    )


class Condition(KubeCondition):
    """A Kubernetes condition (metav1.Condition shape)."""

    type: ConditionType = Field(description="Running, RuleTriggered, Stopped, Succeeded, Failed or Invalid.")


class RuleStatus(_Model):
    """Aggregated state of one rule over all ranks (the worst rank wins)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    name: str = Field(description="Rule name (rules[].name or its type).")
    state: RuleState = Field(description="InProgress, NoIssuesFound, IssuesFound or Error.")
    action: Action | None = Field(default=None, description="Action configured in the spec for this rule.")
    step: int | None = Field(default=None, description="Step of the finding (or last evaluated step).")
    rank: int | None = Field(default=None, description="Rank that reported this state.")
    severity: Severity | None = Field(default=None, description="Severity of the finding.")
    message: str = Field(default="", description="The finding, as a sentence.")
    time: str | None = Field(default=None, description="When the rank reported it (RFC 3339).")


class RankRuleReport(_Model):
    """One rule's state as one rank's sidecar reports it (any action it claims is ignored)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    name: str = Field(description="Rule name.")
    state: RuleState = Field(description="State on this rank.")
    step: int | None = Field(default=None, description="Step of the finding or of the last evaluation.")
    severity: Severity | None = Field(default=None, description="Severity of the finding.")
    message: str = Field(default="", description="The finding, as a sentence.")
    time: str | None = Field(default=None, description="When the sidecar saw it (RFC 3339).")


def report_key(rank: int) -> str:
    """Return the key of one rank's report in `status.reports`, e.g. `rank-00003`.

    The one home of that key: sidecars write it (`sidecar/report_status.py`), the operator reads it back
    with `rank_of_report_key`.
    """
    return f"rank-{rank:05d}"


def rank_of_report_key(key: str) -> int | None:
    """Return the rank a `status.reports` key names (`report_key`'s inverse), or None for any other key."""
    prefix, _, digits = key.partition("-")
    return int(digits) if prefix == "rank" and digits.isdigit() else None


class RankReport(_Model):
    """What one rank's sidecar reports (`status.reports["rank-00003"]`)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    last_step: int | None = Field(default=None, description="Last step the sidecar evaluated.")
    time: str | None = Field(default=None, description="When the report was written (RFC 3339).")
    ended: bool = Field(default=False, description="The rank wrote END and the sidecar evaluated everything.")
    stop_watched: bool = Field(
        default=False,
        description="The trainer polls the stop file (hook.should_stop()): after a stop verdict it can save its "
        "work and exit by itself, so the operator waits actions.stop.cooperativeSeconds before suspending.",
    )
    rules: list[RankRuleReport] = Field(default_factory=list, description="One entry per configured rule.")


class JobSummary(_Model):
    """The owned Job's state as the operator last saw it (written only by the Job watcher)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    active: int = Field(default=0, description="Pods running.")
    terminating: int = Field(
        default=0,
        description="Pods terminating (in their grace period): not active, not gone yet (Kubernetes 1.29+).",
    )
    ready: int = Field(default=0, description="Pods ready.")
    succeeded: int = Field(default=0, description="Indexes that succeeded.")
    failed: int = Field(default=0, description="Pods that failed.")
    suspended: bool = Field(default=False, description="The Job is suspended.")
    complete: bool = Field(
        default=False,
        description="The Job has condition Complete=True, or SuccessCriteriaMet=True (1.31+: it will complete "
        "once its pods are gone).",
    )
    failed_condition: bool = Field(
        default=False,
        description="The Job has condition Failed=True, or FailureTarget=True (1.31+: it will fail once its pods "
        "are gone).",
    )
    deleted: bool = Field(default=False, description="The Job was deleted before it finished.")
    reason: str = Field(default="", description="Reason of the Job's terminal condition.")
    message: str = Field(default="", description="Message of the Job's terminal condition.")
    start_time: str | None = Field(default=None, description="The Job's startTime.")
    completion_time: str | None = Field(default=None, description="The Job's completionTime.")


class DebugJobStatus(_Model):
    """Observed state, written by the operator (and `reports` by the sidecars)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    phase: Phase | None = Field(default=None, description="Pending, Running, Stopped, Succeeded or Failed.")
    conditions: list[Condition] = Field(default_factory=list, description="Conditions, one per type.")
    observed_generation: int | None = Field(default=None, description="metadata.generation last reconciled.")
    rules: list[RuleStatus] = Field(default_factory=list, description="Per-rule state over all ranks.")
    triggered_rule: str | None = Field(
        default=None,
        description="The rule to look at (printer column Rule). For a Stopped DebugJob the stop rule that stopped "
        "it, as in the Stopped condition, its Event and webhook, even when notify rules found issues before it or "
        "at the same time (the RuleTriggered condition lists those). Otherwise the rule whose finding came at the "
        "earliest step, whatever its action (ties: the first in rules); while the job runs, a later report of an "
        "earlier finding can change it. Unset while no rule found issues.",
    )
    last_step: int | None = Field(default=None, description="Highest step any rank's evaluator has seen.")
    job_name: str | None = Field(default=None, description="Name of the owned Job.")
    job: JobSummary | None = Field(default=None, description="The owned Job's state, as last observed.")
    start_time: str | None = Field(default=None, description="When the Job started (RFC 3339).")
    completion_time: str | None = Field(
        default=None, description="When the DebugJob reached a terminal phase."
    )
    reports: dict[str, RankReport] = Field(
        default_factory=dict,
        description=(
            "Sidecar reports, keyed rank-NNNNN; each pod writes only its own ranks' keys. Jobs of up to 32 ranks "
            "report every rank in full; larger ones only rank 0 in full (progress) and, per pod and rule with a "
            "finding, the rank that found it first, so the object stays small at any number of ranks."
        ),
    )


class DebugJob(_Model):
    """A whole DebugJob object as the API server returns it."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    api_version: str = Field(default=API_VERSION, description="trainguard.dev/v1alpha1")
    kind: str = Field(default=KIND, description="DebugJob")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Standard object metadata.")
    spec: DebugJobSpec = Field(description="Desired state.")
    status: DebugJobStatus = Field(default_factory=DebugJobStatus, description="Observed state.")
