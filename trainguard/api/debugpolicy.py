"""Pydantic models of a DebugPolicy: supervise workloads users already run (attach mode).

A DebugPolicy selects training workloads in its namespace, by a label selector on the workload or by
`targetRef` to one of them, and carries the same capture, rules, notify and evaluator blocks as a
DebugJob (the models are DebugJob's own); its stop action leaves the pods' grace period alone unless
it is given (`PolicyStopAction`), since the workloads are the users'. The operator's pod admission
webhook injects the evaluator into the pods of the workloads it selects (`trainguard.operator.attach`);
its status lists each selected workload. The CRD is generated from these models (`trainguard.api.crd`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from trainguard.api.debugjob import (
    GROUP,
    MAX_GRACE_PERIOD_SECONDS,
    MAX_NPROC_PER_NODE,
    MAX_RULES,
    VERSION,
    CaptureSpec,
    EvaluatorSpec,
    KubeCondition,
    NotifyAction,
    _Model,
)
from trainguard.api.enums import Severity
from trainguard.api.findings import MAX_MESSAGE_CHARS
from trainguard.api.rules_config import RulesConfig, RuleSpec

KIND = "DebugPolicy"
PLURAL = "debugpolicies"
SINGULAR = "debugpolicy"
SHORT_NAMES = ("dp",)
API_VERSION = f"{GROUP}/{VERSION}"

WATCH_LABEL = f"{GROUP}/watch"
"""The label users put on the pod templates of workloads to supervise (value "true"): the webhook's
objectSelector, so pods without it never reach the webhook."""
INJECTED_ANNOTATION = f"{GROUP}/injected"
"""On every pod the webhook injected: `<policy>/<generation>` (the idempotence marker)."""
MAX_WORKLOADS_LISTED = 100
"""Workloads listed in a policy's status at most (the object stays small); `workloadCount` counts them all."""


class Operator(str, enum.Enum):
    """A label selector requirement's operator (metav1.LabelSelectorRequirement)."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


class Requirement(_Model):
    """One requirement of a label selector."""

    key: str = Field(min_length=1, description="The label key.")
    operator: Operator = Field(description="In, NotIn, Exists or DoesNotExist.")
    values: list[str] = Field(
        default_factory=list,
        description="Values for In and NotIn (non-empty); empty for Exists and DoesNotExist.",
    )

    @model_validator(mode="after")
    def _values(self) -> Requirement:
        needs = self.operator in (Operator.IN, Operator.NOT_IN)
        if needs and not self.values:
            raise ValueError(
                f"selector requirement on {self.key!r}: operator {self.operator.value} needs values"
            )
        if not needs and self.values:
            raise ValueError(
                f"selector requirement on {self.key!r}: operator {self.operator.value} takes no values; remove them"
            )
        return self

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator is Operator.EXISTS:
            return present
        if self.operator is Operator.DOES_NOT_EXIST:
            return not present
        if self.operator is Operator.IN:
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values


class LabelSelector(_Model):
    """A label selector on the workload object (metav1.LabelSelector); it must require something."""

    match_labels: dict[str, str] = Field(default_factory=dict, description="Labels the workload must carry.")
    match_expressions: list[Requirement] = Field(
        default_factory=list, description="Further requirements, all of which must hold."
    )

    @model_validator(mode="after")
    def _not_empty(self) -> LabelSelector:
        if not self.match_labels and not self.match_expressions:
            raise ValueError(
                "selector selects every workload of the namespace: give matchLabels or matchExpressions"
            )
        return self

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether an object with `labels` is selected."""
        return all(labels.get(k) == v for k, v in self.match_labels.items()) and all(
            r.matches(labels) for r in self.match_expressions
        )


class TargetRef(_Model):
    """One workload by kind and name, in the policy's namespace."""

    api_version: str = Field(
        min_length=1,
        description="apiVersion of the workload: batch/v1, jobset.x-k8s.io/v1alpha2, kubeflow.org/v1 or "
        "trainer.kubeflow.org/v1alpha1 (any version of the group matches).",
    )
    kind: str = Field(min_length=1, description="Job, JobSet, PyTorchJob or TrainJob.")
    name: str = Field(min_length=1, description="Name of the workload.")

    def matches(self, api_version: str, kind: str, name: str) -> bool:
        return (
            kind == self.kind
            and name == self.name
            and api_version.rpartition("/")[0] == self.api_version.rpartition("/")[0]
        )


class PolicyStopAction(_Model):
    """How a stop verdict ends a supervised workload (its top-level owner is suspended, or its Kueue Workload
    deactivated)."""

    grace_period_seconds: int | None = Field(
        default=None,
        ge=0,
        le=MAX_GRACE_PERIOD_SECONDS,
        description=(
            "Seconds the trainer gets between SIGTERM and SIGKILL when the workload is suspended: the webhook sets "
            "it as terminationGracePeriodSeconds of every pod it injects. Empty: the pods keep their own (the "
            "workload is the user's, and its template may ask for longer to write a checkpoint). At most one hour."
        ),
    )
    cooperative_seconds: int = Field(
        default=30,
        ge=0,
        le=MAX_GRACE_PERIOD_SECONDS,
        description=(
            "Seconds between a stop verdict and the workload's suspension when a trainer polls the stop file "
            "(hook.should_stop(); the injected evaluator writes the file at once and reports on its /metrics that "
            "the trainer reads it): time to save a checkpoint and exit by itself. A trainer that does not poll it "
            "is suspended at once; 0 always suspends at once. The operator checks every 10 s, so the suspension "
            "comes up to 10 s later. Then SIGTERM, and SIGKILL after the pods' grace period."
        ),
    )


class PolicyActionsSpec(_Model):
    """Settings of the actions that rules name (`rules[].action`), for workloads a policy supervises."""

    stop: PolicyStopAction = Field(
        default_factory=PolicyStopAction, description="Settings of the stop action."
    )
    notify: NotifyAction = Field(
        default_factory=NotifyAction,
        description="Settings of the notify action (as in a DebugJob; payloads name the policy and the workload).",
    )


class DebugPolicySpec(_Model):
    """Which workloads to supervise, and how: capture, rules and actions as in a DebugJob."""

    selector: LabelSelector | None = Field(
        default=None,
        description="Label selector on the workloads (not their pods); exactly one of selector and targetRef.",
    )
    target_ref: TargetRef | None = Field(
        default=None, description="One workload by kind and name; exactly one of selector and targetRef."
    )
    container_name: str | None = Field(
        default=None,
        description="The training container of the pods; empty: per kind, `node` (TrainJob), `pytorch` "
        "(PyTorchJob), else the first container.",
    )
    nproc_per_node: int = Field(
        default=1,
        ge=1,
        le=MAX_NPROC_PER_NODE,
        description="Training processes per pod: the evaluator of node rank i follows ranks i*n .. i*n+n-1.",
    )
    capture: CaptureSpec = Field(description="Where and how statistics are captured.")
    rules: list[RuleSpec] = Field(
        default_factory=list,
        max_length=MAX_RULES,
        description="Rules to evaluate (the rules-file schema); empty means the default set; at most 100.",
    )
    actions: PolicyActionsSpec = Field(
        default_factory=PolicyActionsSpec, description="Settings of stop and notify."
    )
    evaluator: EvaluatorSpec = Field(
        default_factory=EvaluatorSpec, description="The injected evaluator sidecar."
    )

    @model_validator(mode="after")
    def _check(self) -> DebugPolicySpec:
        if (self.selector is None) == (self.target_ref is None):
            raise ValueError(
                "give exactly one of spec.selector (a label selector on the workloads) and spec.targetRef "
                "(apiVersion, kind, name of one workload)"
            )
        RulesConfig(rules=self.rules)  # unique, well-formed names
        return self

    def selects(self, api_version: str, kind: str, name: str, labels: Mapping[str, str]) -> bool:
        """Whether the workload (its apiVersion, kind, name and labels) is one this policy supervises."""
        if self.target_ref is not None:
            return self.target_ref.matches(api_version, kind, name)
        assert self.selector is not None  # _check: exactly one
        return self.selector.matches(labels)


class PolicyConditionType(str, enum.Enum):
    """Condition types of a DebugPolicy."""

    READY = "Ready"
    """The policy is valid and the webhook injects into its workloads' new pods."""
    BLIND = "Blind"
    """Some pod of a selected workload runs without the evaluator (admitted while the webhook was down)."""
    INVALID = "Invalid"


class PolicyCondition(KubeCondition):
    """A Kubernetes condition (metav1.Condition shape) of a DebugPolicy."""

    type: PolicyConditionType = Field(description="Ready, Blind or Invalid.")


class WorkloadStatus(_Model):
    """One workload the policy selects, as the operator last saw it."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    kind: str = Field(
        description="Kind of the workload (its top-level owner: Job, JobSet, PyTorchJob, TrainJob)."
    )
    name: str = Field(description="Name of the workload.")
    phase: str = Field(
        default="", description="Running, Suspended, Succeeded or Failed (the workload's own state)."
    )
    rule: str | None = Field(
        default=None,
        description="The rule whose finding came first (earliest step over its evaluators; ties by name), if any.",
    )
    step: int | None = Field(default=None, description="Highest step its evaluators evaluated.")
    finding_step: int | None = Field(default=None, description="Step of the rule's finding.")
    rank: int | None = Field(default=None, description="Global rank of the rule's finding.")
    severity: Severity | None = Field(default=None, description="Severity of the rule's finding.")
    message: str | None = Field(
        default=None,
        max_length=MAX_MESSAGE_CHARS,
        description="The finding as a sentence (from the evaluator's /findings). From an evaluator too old to "
        "serve it: why there are no details (its /metrics give the rule and the step only).",
    )
    ranks_seen: int = Field(
        default=0, description="Pods of the workload running with the injected evaluator."
    )
    blind: bool = Field(
        default=False,
        description="A pod of the workload runs without the injected evaluator (webhook down or operator upgrading "
        "when it was created): its training is not checked.",
    )


class DebugPolicyStatus(_Model):
    """Observed state, written by the operator."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    conditions: list[PolicyCondition] = Field(default_factory=list, description="Conditions, one per type.")
    observed_generation: int | None = Field(default=None, description="metadata.generation last reconciled.")
    workload_count: int = Field(default=0, description="Workloads selected (printer column Workloads).")
    blind_count: int = Field(
        default=0, description="Selected workloads with pods running unchecked (column Blind)."
    )
    workloads: list[WorkloadStatus] = Field(
        default_factory=list, description="The selected workloads (at most 100 listed), blind ones first."
    )


class DebugPolicy(_Model):
    """A whole DebugPolicy object as the API server returns it."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    api_version: str = Field(default=API_VERSION, description="trainguard.dev/v1alpha1")
    kind: str = Field(default=KIND, description="DebugPolicy")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Standard object metadata.")
    spec: DebugPolicySpec = Field(description="Desired state.")
    status: DebugPolicyStatus = Field(default_factory=DebugPolicyStatus, description="Observed state.")
