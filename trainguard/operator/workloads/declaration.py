"""What a kind of training workload is to the operator: `WorkloadKind`, the base of every adapter.

An adapter answers, from the object dicts alone (no API calls, no clock), what the operator needs
of a kind it supervises: how to suspend and resume it (a merge patch), whether it is suspended or
finished, which pods are its own and the rank of each, its GVK and the RBAC it needs. One module of
this package per kind holds its subclass and an instance, `KIND`; the registry (`__init__.py`)
finds them. The API calls built on these answers live in `control.py` alone. Kueue's
`jobframework.GenericJob` (one interface, one adapter per kind) is the model.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

Object = Mapping[str, Any]
"""A Kubernetes object as plain JSON data (a watch event's body, a GET's answer)."""

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
"""The Job controller's index of an Indexed Job's pod: a label (Kubernetes >= 1.28) and an annotation."""
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""On a workload of any kind that Kueue admits: it suspends and resumes it, so a stop goes through Kueue."""


@dataclasses.dataclass(frozen=True)
class Permission:
    """One rule of the operator's RBAC that an adapter needs: verbs on one resource, and why."""

    group: str
    """API group ("" for the core group)."""
    resource: str
    verbs: tuple[str, ...]
    why: str
    """Shown next to the rule in the chart: what the operator does with it."""


SUPERVISE_VERBS = ("get", "list", "watch", "patch")
"""What supervising a kind takes: read it (its state, a pod's owners), watch it, suspend and resume it (a merge patch)."""


def supervise(group: str, resource: str, why: str) -> Permission:
    """Return the permission to supervise one resource (`SUPERVISE_VERBS`), with the reason shown in the chart."""
    return Permission(group=group, resource=resource, verbs=SUPERVISE_VERBS, why=why)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How a finished workload ended, as its controller's condition says."""

    succeeded: bool
    reason: str = ""
    message: str = ""


@dataclasses.dataclass(frozen=True)
class PodCounts:
    """Pods of a workload as its controller counts them (kinds whose status counts Jobs, not pods, have none)."""

    active: int = 0
    ready: int = 0
    terminating: int = 0
    succeeded: int = 0
    failed: int = 0


@dataclasses.dataclass(frozen=True)
class WorkloadState:
    """What the operator reads of a workload's spec and status, the same for every kind."""

    suspended: bool
    finished: Outcome | None = None
    """None while it runs (or waits); set once its controller decided the outcome."""
    pods: PodCounts | None = None
    start_time: str | None = None
    completion_time: str | None = None


@dataclasses.dataclass(frozen=True)
class Ref:
    """A reference to an object, as an `ownerReferences` entry gives it."""

    api_version: str
    kind: str
    name: str
    uid: str = ""

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


def controller_ref(obj: Object) -> Ref | None:
    """Return the object's controller (the owner reference with `controller: true`), or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return Ref(
                api_version=str(ref.get("apiVersion", "")),
                kind=str(ref.get("kind", "")),
                name=str(ref.get("name", "")),
                uid=str(ref.get("uid", "")),
            )
    return None


def true_conditions(obj: Object) -> dict[str, Mapping[str, Any]]:
    """Return the status conditions whose status is "True", by type."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): c for c in conditions if c.get("status") == "True"}


def outcome_of(obj: Object, *, succeeded: tuple[str, ...], failed: tuple[str, ...]) -> Outcome | None:
    """Return the outcome the first true condition of `failed`, else of `succeeded`, names; None without one."""
    conditions = true_conditions(obj)
    for types, success in ((failed, False), (succeeded, True)):
        condition = next((conditions[t] for t in types if t in conditions), None)
        if condition is not None:
            return Outcome(
                succeeded=success,
                reason=str(condition.get("reason") or ""),
                message=str(condition.get("message") or ""),
            )
    return None


def labels_of(obj: Object) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def completion_index(pod: Object) -> int | None:
    """Return an Indexed Job pod's completion index (label, else annotation), or None."""
    meta = pod.get("metadata") or {}
    for source in (meta.get("labels") or {}, meta.get("annotations") or {}):
        value = source.get(COMPLETION_INDEX)
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return None


def int_label(obj: Object, key: str) -> int | None:
    value = labels_of(obj).get(key)
    return int(value) if isinstance(value, str) and value.isdigit() else None


class WorkloadKind(abc.ABC):
    """A kind of training workload the operator can supervise; subclasses hold no state (one instance, `KIND`)."""

    api_version: ClassVar[str]
    """`group/version` the operator reads and patches (`batch/v1`, `jobset.x-k8s.io/v1alpha2`)."""
    kind: ClassVar[str]
    plural: ClassVar[str]
    chart_key: ClassVar[str | None]
    """Its switch in the chart, `workloads.<chart_key>.enabled`; None for a kind that is always on (batch Job)."""
    permissions: ClassVar[tuple[Permission, ...]]
    """The RBAC the operator needs to supervise this kind; the chart grants it when the kind is enabled."""
    suspend_path: ClassVar[tuple[str, ...]]
    """Where the object's suspend flag is (`("spec", "suspend")`)."""

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def gvk(self) -> tuple[str, str, str]:
        return self.group, self.version, self.kind

    def __repr__(self) -> str:
        return f"{self.kind} ({self.api_version})"

    def matches(self, api_version: str, kind: str) -> bool:
        """Whether an object or owner reference of `api_version`/`kind` is of this kind (any version of the group)."""
        return kind == self.kind and api_version.rpartition("/")[0] == self.group

    def suspend_patch(self, suspend: bool = True) -> dict[str, Any]:
        """Return the merge patch that suspends (or, with False, resumes) an object of this kind."""
        patch: dict[str, Any] = {self.suspend_path[-1]: suspend}
        for key in reversed(self.suspend_path[:-1]):
            patch = {key: patch}
        return patch

    def is_suspended(self, obj: Object) -> bool:
        """Whether the object's suspend flag is set."""
        value: Any = obj
        for key in self.suspend_path:
            value = value.get(key) if isinstance(value, Mapping) else None
        return bool(value)

    def queue_name(self, obj: Object) -> str | None:
        """The Kueue queue that admits the object, if one does (then Kueue, not the operator, suspends it)."""
        return labels_of(obj).get(KUEUE_QUEUE_LABEL) or None

    @abc.abstractmethod
    def state(self, obj: Object) -> WorkloadState:
        """Return the object's suspension, outcome, pod counts and times."""

    @abc.abstractmethod
    def pod_selector(self, obj: Object) -> dict[str, str]:
        """Return the labels that select the object's pods (the ones its controllers put on every pod)."""

    @abc.abstractmethod
    def pod_rank(self, pod: Object, obj: Object) -> int | None:
        """Return the pod's rank among the object's training pods (its node rank: 0 .. pods-1), or None
        for a pod that runs no training rank (an initializer, a launcher). A pod runs ranks
        `rank * nproc_per_node + local_rank`."""
