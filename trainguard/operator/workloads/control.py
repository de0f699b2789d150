"""The API calls of the workload seam: read, suspend, resume and stop a workload of any declared kind.

Thin over `client.Kube` and the adapters' pure answers (`declaration.WorkloadKind`). A stop suspends the
workload, unless Kueue admits it (`kueue.x-k8s.io/queue-name`): Kueue resumes an admitted workload
that anyone else suspends, so the stop deactivates its Kueue Workloads (`spec.active: false`, found
by the label `kueue.x-k8s.io/job-uid` that Kueue gives the Workload of every kind), Kueue's own way
to stop one for good; Kueue then suspends it and releases its quota.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from trainguard.operator import client
from trainguard.operator.workloads import declaration, owners

KUEUE_WORKLOAD_API_VERSION = "kueue.x-k8s.io/v1beta2"
KUEUE_JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
"""The label Kueue puts on the Workload of a job of any kind: the job's uid."""


@dataclasses.dataclass(frozen=True)
class Stop:
    """How a workload was stopped."""

    deactivated: tuple[str, ...] = ()
    """The Kueue Workloads set inactive; empty when the workload itself was suspended."""


def get(
    kube: client.Kube, adapter: declaration.WorkloadKind, namespace: str, name: str
) -> dict[str, Any] | None:
    """Return the workload, or None when it does not exist."""
    return kube.get(adapter.api_version, adapter.kind, namespace, name)


def set_suspended(
    kube: client.Kube, adapter: declaration.WorkloadKind, namespace: str, name: str, *, suspend: bool = True
) -> dict[str, Any] | None:
    """Suspend (or resume) the workload; return it, or None when it does not exist."""
    return kube.patch(adapter.api_version, adapter.kind, namespace, name, adapter.suspend_patch(suspend))


def deactivate_kueue_workloads(kube: client.Kube, namespace: str, uid: str) -> list[str]:
    """Set `spec.active: false` on the Kueue Workloads of the job with `uid`; return their names ([] for none)."""
    names = [
        w["metadata"]["name"]
        for w in kube.list(
            KUEUE_WORKLOAD_API_VERSION, "Workload", namespace, labels={KUEUE_JOB_UID_LABEL: uid}
        )
        # The label selector again, here: a server that ignores it must not deactivate other jobs' Workloads.
        if ((w.get("metadata") or {}).get("labels") or {}).get(KUEUE_JOB_UID_LABEL) == uid
    ]
    for name in names:
        kube.patch(KUEUE_WORKLOAD_API_VERSION, "Workload", namespace, name, {"spec": {"active": False}})
    return names


def stop(
    kube: client.Kube, adapter: declaration.WorkloadKind, namespace: str, name: str, *, queued: bool
) -> Stop | None:
    """Stop the workload: deactivate its Kueue Workloads when `queued` and it has some, else suspend it.

    `queued`: Kueue admits it (the caller knows from the queue label, `adapter.queue_name`). Returns None
    when the workload does not exist."""
    if queued:
        obj = get(kube, adapter, namespace, name)
        if obj is None:
            return None
        deactivated = deactivate_kueue_workloads(kube, namespace, str(obj["metadata"]["uid"]))
        if deactivated:
            return Stop(deactivated=tuple(deactivated))
    if set_suspended(kube, adapter, namespace, name) is None:
        return None
    return Stop()


def owner_chain(
    kube: client.Kube, pod: declaration.Object, *, readable: Iterable[declaration.WorkloadKind]
) -> owners.Chain:
    """Return the pod's controllers up to its top-level workload, each read from the API (`owners.walk`)."""
    return owners.walk(
        pod, get=lambda adapter, namespace, name: get(kube, adapter, namespace, name), readable=readable
    )
